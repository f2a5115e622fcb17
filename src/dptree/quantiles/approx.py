"""ApproxQuantiles (Kaplan, Schnapp & Stemmer, ICML 2022, "Differentially Private Approximate
Quantiles", Algorithm 1) on dptree's tie-aware exponential mechanism.

Algorithm. For sorted levels q_1 <= ... <= q_m: estimate the middle level p = q_(ceil(m/2)) with
one exponential mechanism (:func:`~dptree.interior.selection.quantile_exponential_mechanism`,
exact, tie-aware) over the piece's domain [lo, hi], giving v; split the data at v (records
below v to the left piece, above v to the right one, each record equal to v to one side by a fair
coin) and the domain into [lo, v] and [v, hi]; recurse with the levels q_i / p on the left and
(q_i - p) / (1 - p) on the right. The recursion has ``layers(m)`` = floor(log2 m) + 1 layers (the
paper budgets ceil(log2 m) + 1, an upper bound: equal for powers of two), and every call of
layer l gets the same epsilon_l.

Privacy (add/remove-one). Fix the coins of every record. The output law factorises over the
calls: P(out | D) = prod over layers, prod over the layer's pieces, of the exponential
mechanism's P(piece output | piece data), where each layer's pieces are fixed by the outputs of
the layers above (public, given the output). The pieces of one layer partition the records, so
adding a record x changes the data of at most one piece per layer, by one added record; each call
is epsilon_l-DP for that change (:func:`em_call`, calibrated to the score's add/remove sensitivity
max(a, b - a), proof in :func:`~dptree.interior.selection.quantile_exponential_mechanism`), so the ratio of the two laws
is at most prod_l e^epsilon_l = e^(L epsilon_l). x's own coins only choose which piece it joins;
for each choice the bound holds, so it holds for the mixture over the choices (the other records'
coins have the same law on both datasets). With epsilon_l = epsilon / L: epsilon-DP.

Privacy (replace-one). Replacing x by x' removes x from one piece and adds x' to one piece per
layer; at the first layer both are in the one piece (a replacement inside one call: e^epsilon_0),
below it they can sit in two different pieces, and then two calls change, by one removal and one
addition: the layer costs up to 2 epsilon_l (every call calibrated to the replace sensitivity b,
which also covers the one-piece replacement and each removal or addition). The total is
epsilon_0 + 2 (L - 1) epsilon_l, so under ``neighbors="replace"`` every layer gets
epsilon / (2L - 1) (m = 1: epsilon, the single mechanism's replace guarantee).
tests/unit/quantiles/test_approx_privacy.py computes the exact
output law on tiny domains and checks both statements, and that replace-one exceeds e^epsilon
under the add/remove calibration.

Accuracy. Each call's output y has, with probability >= 1 - t, dist(p' n', [#{x < y}, #{x <= y}])
<= :func:`call_radius` in its piece. A
child piece's target (q / p) n_P differs from the global q n by (q / p) |n_P - p n|, at most the
parent's error when the split value has no ties, so on data without ties at the split values an
output's rank error is at most the sum of the radii along its path (:func:`path_radii`; a union
bound over the m calls). With ties at a split value the fair coins split the tie block in half,
which adds up to half the block's size.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal, Protocol

import numpy as np

from dptree.interior.selection import (
    effective_epsilon,
    exponential_base,
    quantile_level,
    sample_quantile_blocks,
)
from dptree.noise import RandomSource

__all__ = ["ArrayPiece", "Piece", "approx_quantiles", "run_approx", "call_radius", "call_sensitivity", "em_call", "layers", "layer_epsilon",
           "level_tree", "path_radii"]

Relation = Literal["add_remove", "replace"]


def call_sensitivity(q: float, neighbors: Relation) -> int:
    """The sensitivity of the integer tie-aware score at the level q ~ a/b: max(a, b - a) under
    add/remove-one, b under replace-one (both proved, and shown attained by brute force, for
    :func:`~dptree.interior.selection.quantile_exponential_mechanism`; that function calibrates
    with b so that one statement covers both relations, here the relation is stated)."""
    level = quantile_level(q)
    a, b = level.numerator, level.denominator
    return b if neighbors == "replace" else max(a, b - a, 1)


def em_call(vals: Sequence[int] | np.ndarray, cnt: Sequence[int] | np.ndarray, q: float, lo: int, hi: int,
            epsilon: float, src: RandomSource, neighbors: Relation) -> int:
    """One tie-aware exponential mechanism for the level q over [lo, hi], epsilon-DP under
    ``neighbors``: P(y) proportional to beta^score(y), beta <= exp(epsilon / (2 sensitivity)),
    sampled exactly block by block (the blocks and the sampler of
    :func:`~dptree.interior.selection.quantile_exponential_mechanism`)."""
    base = exponential_base(epsilon, call_sensitivity(q, neighbors))
    return sample_quantile_blocks(src, vals, cnt, lo, hi, quantile_level(q), base)


def call_radius(q: float, *, size: int, epsilon: float, tail: float, neighbors: Relation) -> float:
    """Rank radius of one :func:`em_call`: P(dist(q n, [#{x < y}, #{x <= y}]) > r) <= ``tail`` for
    r = (2 s / (b epsilon'))(ln |X| + ln(1 / tail)), s the sensitivity, b the level's denominator,
    epsilon' = 2 s ln beta (McSherry & Talwar's utility tail: P(y) ~ exp(epsilon' b u(y) / (2 s)))."""
    s = call_sensitivity(q, neighbors)
    eps_used = effective_epsilon(exponential_base(epsilon, s), s)
    return 2.0 * s / (quantile_level(q).denominator * eps_used) * (math.log(size) + math.log(1.0 / tail))


def layers(m: int) -> int:
    """The number of layers of the recursion for m levels: floor(log2 m) + 1."""
    return int(m).bit_length()


def layer_epsilon(epsilon: float, m: int, neighbors: Relation = "add_remove") -> float:
    """The budget of every call: epsilon / L under add/remove-one, epsilon / (2L - 1) under replace-one
    (a replaced record can sit in two pieces of a layer below the first; see the module docstring)."""
    L = layers(m)
    return float(epsilon) / (L if neighbors == "add_remove" else 2 * L - 1)


def _rescale(qs: Sequence[float], lo: int, hi: int, p: float, left: bool) -> list[float]:
    if left:
        out = [qs[i] / p if p > 0 else 0.0 for i in range(lo, hi)]
    else:
        out = [(qs[i] - p) / (1 - p) if p < 1 else 1.0 for i in range(lo, hi)]
    return [min(max(x, 0.0), 1.0) for x in out]  # [0, 1] up to rounding


def level_tree(qs: Sequence[float] | np.ndarray) -> list[tuple[int, float, int]]:
    """The calls of the recursion, from the public levels only: (index of the output, the level
    used in its piece, the index of the parent call or -1), depth first."""
    out: list[tuple[int, float, int]] = []

    def walk(levels: list[float], first: int, parent: int) -> None:
        if not levels:
            return
        mid = (len(levels) - 1) // 2
        p = levels[mid]
        me = len(out)
        out.append((first + mid, p, parent))
        walk(_rescale(levels, 0, mid, p, True), first, me)
        walk(_rescale(levels, mid + 1, len(levels), p, False), first + mid + 1, me)

    walk(list(map(float, qs)), 0, -1)
    return out


def path_radii(qs: Sequence[float] | np.ndarray, *, size: int, epsilon_call: float, tail: float,
               neighbors: Relation = "add_remove") -> np.ndarray:
    """For each level, the rank radius r with P(some output's rank error > its r) <= ``tail``, on data
    without ties at the split values: the sum over the calls on its path of :func:`call_radius` at
    tail / m (union bound over the m calls)."""
    calls = level_tree(qs)
    m = len(calls)
    own = [call_radius(p, size=size, epsilon=epsilon_call, tail=tail / m, neighbors=neighbors) for _, p, _ in calls]
    radius = np.zeros(m)
    total = [0.0] * m
    for k, (idx, _, parent) in enumerate(calls):
        total[k] = own[k] + (total[parent] if parent >= 0 else 0.0)
        radius[idx] = total[k]
    return radius


def _fair_coins(src: RandomSource, c: int) -> int:
    """How many of c fair coins come up heads (exact: c random bits)."""
    if c <= 0:
        return 0
    bits = np.unpackbits(np.frombuffer(src.random_bytes((c + 7) // 8), dtype=np.uint8))[:c]
    return int(bits.sum())


class Piece(Protocol):
    """One piece of ApproxQuantiles' recursion: its domain [lo, hi] and the records in it. In
    memory (:class:`ArrayPiece`) or as engine queries (:class:`dptree.quantiles.staged.StagedPiece`);
    both give the same law and, from the same random source, the same draws."""

    lo: int
    hi: int

    def sample(self, q: float, epsilon: float, src: RandomSource, neighbors: Relation) -> int:
        """:func:`em_call` on the piece's records over [lo, hi]."""

    def split(self, v: int, src: RandomSource) -> tuple[Piece, Piece]:
        """The pieces [lo, v] and [v, hi]: records below v left, above v right, each record equal
        to v to the left with probability 1/2 (:func:`_fair_coins`, drawn here)."""


class ArrayPiece:
    """A :class:`Piece` held in memory: numpy slices of the sorted distinct offsets and counts."""

    def __init__(self, vals: np.ndarray, cnt: np.ndarray, lo: int, hi: int) -> None:
        self.vals, self.cnt, self.lo, self.hi = vals, cnt, lo, hi

    def sample(self, q: float, epsilon: float, src: RandomSource, neighbors: Relation) -> int:
        return em_call(self.vals, self.cnt, q, self.lo, self.hi, epsilon, src, neighbors)

    def split(self, v: int, src: RandomSource) -> tuple[ArrayPiece, ArrayPiece]:
        vals, cnt = self.vals, self.cnt
        if vals.dtype.kind in "iu" and not np.iinfo(vals.dtype).min <= v <= np.iinfo(vals.dtype).max:
            i = j = 0 if v < 0 else vals.size  # a point of a domain wider than the offsets' type: no value ties it
        else:
            key = np.array([v], dtype=vals.dtype)
            i, j = int(np.searchsorted(vals, key, "left")[0]), int(np.searchsorted(vals, key, "right")[0])
        tie = int(cnt[i]) if j > i else 0
        k = _fair_coins(src, tie)
        lv, lc = (np.concatenate([vals[:i], key]), _with(cnt[:i], k, -1)) if k else (vals[:i], cnt[:i])
        rv, rc = (np.concatenate([key, vals[j:]]), _with(cnt[j:], tie - k, 0)) if tie - k else (vals[j:], cnt[j:])
        return ArrayPiece(lv, lc, self.lo, v), ArrayPiece(rv, rc, v, self.hi)


#: ``before_layer(calls)``: told the (piece, level) of every call of a layer before any of them runs
BeforeLayer = Callable[[list[tuple["Piece", float]]], None]


def run_approx(root: Piece, qs: Sequence[float] | np.ndarray, *, epsilon_call: float, rng: RandomSource,
               neighbors: Relation = "add_remove", before_layer: BeforeLayer | None = None) -> list[int]:
    """ApproxQuantiles' recursion (module docstring) from the piece holding every record: m sorted
    points of [root.lo, root.hi], one per sorted level of ``qs``, every call at ``epsilon_call``.
    The calls run layer by layer, left to right (the pieces of a layer are fixed by the layers
    above; the order of independent draws does not change the law), so that a staged caller can
    ask the engine for a whole layer's windows at once (``before_layer``)."""
    out = [0] * len(qs)
    layer: list[tuple[Piece, list[float], int]] = [(root, list(map(float, qs)), 0)] if len(qs) else []
    while layer:
        calls = [(piece, levels[(len(levels) - 1) // 2]) for piece, levels, _ in layer]
        if before_layer is not None:
            before_layer(calls)
        below: list[tuple[Piece, list[float], int]] = []
        for piece, levels, first in layer:
            mid = (len(levels) - 1) // 2
            p = levels[mid]
            v = piece.sample(p, epsilon_call, rng, neighbors)
            out[first + mid] = v
            left, right = piece.split(v, rng)
            below += [(left, _rescale(levels, 0, mid, p, True), first),
                      (right, _rescale(levels, mid + 1, len(levels), p, False), first + mid + 1)]
        layer = [call for call in below if call[1]]
    return out


def approx_quantiles(
    values: Sequence[int],
    counts: Sequence[int],
    qs: Sequence[float] | np.ndarray,
    *,
    lower: int,
    upper: int,
    epsilon_call: float,
    rng: RandomSource,
    neighbors: Relation = "add_remove",
) -> list[int]:
    """ApproxQuantiles (Kaplan, Schnapp & Stemmer 2022, Algorithm 1): m sorted points of
    [lower, upper], one per sorted level of ``qs``. ``values``/``counts``: the sorted distinct
    data offsets and their multiplicities; ``epsilon_call``: the budget of every exponential
    mechanism (:func:`layer_epsilon`; the privacy proof is the module docstring's).

    The pieces are numpy slices of the sorted arrays (uint64 offsets from
    :func:`dptree.interior.encoding.prepare`; object arrays of Python ints on domains beyond 2^64),
    so each call costs O(its piece) vectorised and no Python object is made per distinct value."""
    vals, cnt = _as_arrays(values, counts)
    return run_approx(ArrayPiece(vals, cnt, int(lower), int(upper)), qs, epsilon_call=epsilon_call, rng=rng,
                      neighbors=neighbors)


def _with(cnt: np.ndarray, c: int, at: int) -> np.ndarray:
    """``cnt`` with the count c added first (``at`` = 0) or last (-1), in cnt's dtype."""
    one = np.array([c], dtype=cnt.dtype)
    return np.concatenate([one, cnt] if at == 0 else [cnt, one])


def _as_arrays(values: Sequence[int], counts: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct offsets as a uint64 array and their multiplicities as int64; both as object
    arrays of Python ints for an object array (what :func:`~dptree.interior.encoding.prepare` gives
    on domains beyond 2^64: the representation follows the public domain, not the values) or a
    sequence with an offset that does not fit (negative offsets, from direct callers)."""
    cnt = np.asarray(counts, dtype=np.int64)
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu" and not (values.size and values.min() < 0):
        return values.astype(np.uint64, copy=False), cnt
    ints = [int(v) for v in values]
    if not isinstance(values, np.ndarray) and all(0 <= v < 1 << 64 for v in ints):
        return np.array(ints, dtype=np.uint64), cnt
    return np.array(ints, dtype=object), np.array([int(c) for c in counts], dtype=object)  # exact Python ints
