"""ApproxQuantiles (Kaplan, Schnapp & Stemmer, ICML 2022, "Differentially Private Approximate
Quantiles", Algorithm 1) on dptree's tie-aware exponential mechanism, with dithered ties.

Algorithm. For sorted levels q_1 <= ... <= q_m: estimate the middle level p = q_(ceil(m/2)) with
one exponential mechanism over the piece's domain [lo, hi], split the piece's records and its
domain at the output v into [lo, v] and [v, hi], and recurse with the levels q_i / p on the left
and (q_i - p) / (1 - p) on the right. The recursion has ``layers(m)`` = floor(log2 m) + 1 layers
(the paper budgets ceil(log2 m) + 1, an upper bound: equal for powers of two), and every call of
layer l gets the same epsilon_l.

One call with dithered ties (:func:`dithered_call`; K public, :func:`~dptree.quantiles.dither.approx_dither_factor`).
Each record x of the piece gets the key x K + u, u uniform on [0, K) drawn for this record and this
call; the exponential mechanism (:func:`em_call`: exact, tie-aware, the counting measure) runs over
the keys [lo K, hi K + K - 1] of the piece's records and chooses a key z; the call outputs
v = floor(z / K). The split sends the records whose key is below z left, those above z right, and
each record whose key is z left with probability 1/2 (a fair coin, :func:`_fair_coins`): records
below v go left and records above v right, as in the paper, and a tie block at v is divided where
the mechanism put z inside it, i.e. near the rank it aimed for. (Kaplan, Schnapp & Stemmer's code
adds tiny Gaussian noise to the data for the same purpose; its continuous outputs never hit a
data point.) K = 1 is the undithered mechanism: every key is its value, and each record equal to
v goes to one side by a fair coin, which on a large tie block splits it near its middle whatever
the target. Only the draws a call's sampler looks at are made (its window's values, and a value a
proposal lands on, :class:`~dptree.quantiles.dither.CallDithers`); drawing on first use is drawing
everything in advance, the draws being independent of each other and of the data.

Privacy (add/remove-one). Fix the auxiliary draws omega: for every record and every possible call
(a position in the recursion together with the keys chosen above it) its u and its coin; omega
does not depend on the data. Given omega the key outputs' law factorises over the calls:
P(z | D, omega) = prod over layers, prod over the layer's pieces, of the exponential mechanism's
P(piece's key | keys of the piece's records), where each layer's pieces are fixed by the keys
chosen above and omega. Let D' = D + {x}, the records of D using the same entries of omega in both.
By induction over the layers, given the same keys above, every record of D sits in the same piece
under D and D' (at each split its side depends only on its own key, z and its own coin) and x in
exactly one piece. So in each layer one call sees the keys of D plus x's key and the others see
the same keys: each call is epsilon_l-DP for one added key (:func:`em_call`, calibrated to the
score's add/remove sensitivity max(a, b - a), proof in
:func:`~dptree.interior.selection.quantile_exponential_mechanism`), so the ratio of the two laws is
at most prod_l e^epsilon_l = e^(L epsilon_l), in both directions. Averaging over omega keeps both
inequalities (x's entries have the same law whether used or not), and the values floor(z / K) are
post-processing of the keys. With epsilon_l = epsilon / L: epsilon-DP. The draws must depend on
nothing but K and the public call: a split at the target rank computed from the piece's data
would change the records of both children when a record is added, and the changes would double
with every layer.

Privacy (replace-one). Replacing x by x' (x' using x's entries of omega) removes x's key from one
piece and adds x''s key to one piece per layer; at the first layer both are in the one piece (a
replacement inside one call: e^epsilon_0), below it they can sit in two different pieces, and then
two calls change, by one removal and one addition: the layer costs up to 2 epsilon_l (every call
calibrated to the replace sensitivity b, which also covers the one-piece replacement and each
removal or addition). The total is epsilon_0 + 2 (L - 1) epsilon_l, so under
``neighbors="replace"`` every layer gets epsilon / (2L - 1) (m = 1: epsilon, the single
mechanism's replace guarantee). tests/unit/quantiles/test_approx_privacy.py computes the exact
output law on tiny domains (every dither and coin outcome, K = 1, 2, 3) and checks both
statements; that replace-one exceeds e^epsilon under the add/remove calibration; and that a split
of the tie block at the piece's target rank (deterministic, from the data) breaks the statement.

Accuracy. Each call's key z has, with probability >= 1 - t, dist(p' n', [#{keys < z}, #{keys <= z}])
<= :func:`call_radius` for |X| K points in its piece, and v's rank interval contains z's. A child
piece holds the records with keys below z (and the coin-split ones at z), so its target
(q / p) n_P differs from the global q n by (q / p) |n_P - p n|, at most the parent's error when no
two keys meet at z; an output's rank error is then at most the sum of the radii along its path
(:func:`path_radii` on |X| K points; a union bound over the m calls). Records whose keys meet at z
(about c / K of a tie block of c records) are split by the coins, which adds up to half their
number.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Literal, NamedTuple, Protocol

import numpy as np

from dptree.errors import InvalidParameterError
from dptree.interior.blocks import Blocks, Ranks, sample_windowed, window_indices, window_ranks
from dptree.interior.selection import (
    effective_epsilon,
    exponential_base,
    quantile_badness,
    quantile_level,
    sample_quantile_blocks,
)
from dptree.noise import RandomSource
from dptree.quantiles.dither import CallDithers

__all__ = ["ArrayPiece", "Cut", "Piece", "approx_quantiles", "run_approx", "call_radius", "call_sensitivity",
           "dithered_call", "em_call", "layers", "layer_epsilon", "level_tree", "path_radii"]

Relation = Literal["add_remove", "replace"]

#: scaled ranks b n from here on leave the windowed sampler's int64 arithmetic
_INT64_RANKS = 1 << 62


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


class Cut(NamedTuple):
    """Where a call splits its piece: the released point ``value``; of the piece's records equal to
    it, ``below`` go left and ``above`` go right (their keys lie below / above the chosen key), and
    each of the others goes left with probability 1/2 (their key is the chosen key; without
    dithering, every record equal to ``value``)."""

    value: int
    below: int = 0
    above: int = 0


def dithered_call(src: RandomSource, offs: np.ndarray, cnt: np.ndarray, upto: np.ndarray, *, n: int, lo: int,
                  hi: int, level: Fraction, base: tuple[int, int], k: int, ranks: Ranks) -> Cut:
    """One call with dithered ties (module docstring): the exponential mechanism of :func:`em_call`
    (level, base) over the keys [lo K, hi K + K - 1] of the piece's n > 0 records, each record's key
    x K + u drawn for this call (:class:`~dptree.quantiles.dither.CallDithers`), and the
    :class:`Cut` of the chosen key. ``offs``/``cnt``/``upto``: the piece's distinct values whose rank
    interval meets the call's window (:func:`~dptree.interior.blocks.window_ranks`; uint64 offsets,
    counts, piece #{x <= v}); ``ranks(y)``: (#{x < y}, #{x <= y}) in the piece of any value y of
    [lo, hi]. The keys of the window's values are drawn first, as one run; a value outside it gets
    its keys when the sampler proposes a point in it (:func:`~dptree.interior.blocks.sample_windowed`
    over the window's keys, with the key ranks of any other point from ``ranks`` and those keys). The
    in-memory and the staged pieces pass the same window and ranks, so they make the same draws."""
    dith = CallDithers(src, k)
    keys, kcnt = dith.window(offs, cnt)
    kupto = np.cumsum(kcnt) + (int(upto[0]) - int(cnt[0]))

    def key_ranks(y: int) -> tuple[int, int]:
        value, u = divmod(y, k)
        below, above_or_at = ranks(value)
        if above_or_at == below:
            return below, below
        drawn, per = dith.at(value, above_or_at - below)
        i, j = int(np.searchsorted(drawn, u, "left")), int(np.searchsorted(drawn, u, "right"))
        lo_rank = below + int(per[:i].sum())
        return lo_rank, lo_rank + int(per[i:j].sum())

    blocks = Blocks(keys, kupto, kcnt, int(keys[0]), int(keys[-1]))
    z = sample_windowed(src, blocks, *quantile_badness(level, n), base, n=n, domain=(lo * k, hi * k + k - 1),
                        ranks=key_ranks)
    return _cut(z, k, dith)


def _cut(z: int, k: int, dith: CallDithers) -> Cut:
    """The cut of the chosen key z: its value's records split by their keys (none drawn: no record
    there, since every value with records that z can lie in was drawn while sampling z)."""
    value, u = divmod(z, k)
    got = dith.known(value)
    if got is None:
        return Cut(value)
    drawn, per = got
    i, j = int(np.searchsorted(drawn, u, "left")), int(np.searchsorted(drawn, u, "right"))
    return Cut(value, int(per[:i].sum()), int(per[j:].sum()))


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

    def sample(self, q: float, epsilon: float, src: RandomSource, neighbors: Relation) -> Cut:
        """:func:`em_call` on the piece's records over [lo, hi] (:func:`dithered_call` when the
        piece dithers), and where it cuts the records equal to its output."""

    def split(self, cut: Cut, src: RandomSource) -> tuple[Piece, Piece]:
        """The pieces [lo, v] and [v, hi], v = cut.value: records below v left, above v right, of
        those equal to v ``cut.below`` left, ``cut.above`` right and each other one to the left
        with probability 1/2 (:func:`_fair_coins`, drawn here)."""


class ArrayPiece:
    """A :class:`Piece` held in memory: numpy slices of the sorted distinct offsets and counts;
    ``k``: the dither factor K of its calls (1: none)."""

    def __init__(self, vals: np.ndarray, cnt: np.ndarray, lo: int, hi: int, k: int = 1) -> None:
        self.vals, self.cnt, self.lo, self.hi, self.k = vals, cnt, lo, hi, k

    def sample(self, q: float, epsilon: float, src: RandomSource, neighbors: Relation) -> Cut:
        upto = np.cumsum(self.cnt) if self.k > 1 else self.cnt[:0]
        n = int(upto[-1]) if upto.size else 0
        if n == 0:  # undithered, or no record (every key alike: a uniform value)
            return Cut(em_call(self.vals, self.cnt, q, self.lo, self.hi, epsilon, src, neighbors))
        level = quantile_level(q)
        base = exponential_base(epsilon, call_sensitivity(q, neighbors))
        if level.denominator * n >= _INT64_RANKS:  # b n beyond int64: every record's key, in Python ints
            return _every_key_call(src, self.vals, self.cnt, self.lo, self.hi, level, base, self.k)
        _, center, slope = quantile_badness(level, n)
        i0, i1 = window_indices(upto, *window_ranks(center, slope, base))
        vals = self.vals

        def ranks(y: int) -> tuple[int, int]:
            at = np.uint64(y)
            i, j = int(np.searchsorted(vals, at, "left")), int(np.searchsorted(vals, at, "right"))
            return (int(upto[i - 1]) if i else 0), (int(upto[j - 1]) if j else 0)

        return dithered_call(src, vals[i0:i1], self.cnt[i0:i1], upto[i0:i1], n=n, lo=self.lo, hi=self.hi,
                             level=level, base=base, k=self.k, ranks=ranks)

    def split(self, cut: Cut, src: RandomSource) -> tuple[ArrayPiece, ArrayPiece]:
        v = cut.value
        vals, cnt = self.vals, self.cnt
        if vals.dtype.kind in "iu" and not np.iinfo(vals.dtype).min <= v <= np.iinfo(vals.dtype).max:
            i = j = 0 if v < 0 else vals.size  # a point of a domain wider than the offsets' type: no value ties it
        else:
            key = np.array([v], dtype=vals.dtype)
            i, j = int(np.searchsorted(vals, key, "left")[0]), int(np.searchsorted(vals, key, "right")[0])
        tie = int(cnt[i]) if j > i else 0
        k = cut.below + _fair_coins(src, tie - cut.below - cut.above) if tie else 0
        lv, lc = (np.concatenate([vals[:i], key]), _with(cnt[:i], k, -1)) if k else (vals[:i], cnt[:i])
        rv, rc = (np.concatenate([key, vals[j:]]), _with(cnt[j:], tie - k, 0)) if tie - k else (vals[j:], cnt[j:])
        return ArrayPiece(lv, lc, self.lo, v, self.k), ArrayPiece(rv, rc, v, self.hi, self.k)


def _every_key_call(src: RandomSource, vals: np.ndarray, cnt: np.ndarray, lo: int, hi: int, level: Fraction,
                    base: tuple[int, int], k: int) -> Cut:
    """:func:`dithered_call`'s law with every record's key drawn and the mechanism sampled over all
    key blocks in Python integers (:func:`~dptree.interior.selection.sample_quantile_blocks`' list
    path): for pieces whose scaled ranks b n leave int64."""
    dith = CallDithers(src, k)
    keys: list[int] = []
    counts: list[int] = []
    for v, c in zip(vals.tolist(), cnt.tolist()):
        drawn, per = dith.at(int(v), int(c))
        keys += [int(v) * k + u for u in drawn.tolist()]
        counts += per.tolist()
    return _cut(sample_quantile_blocks(src, keys, counts, lo * k, hi * k + k - 1, level, base), k, dith)


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
            cut = piece.sample(p, epsilon_call, rng, neighbors)
            out[first + mid] = cut.value
            left, right = piece.split(cut, rng)
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
    dither: int = 1,
) -> list[int]:
    """ApproxQuantiles (Kaplan, Schnapp & Stemmer 2022, Algorithm 1): m sorted points of
    [lower, upper], one per sorted level of ``qs``. ``values``/``counts``: the sorted distinct
    data offsets and their multiplicities; ``epsilon_call``: the budget of every exponential
    mechanism (:func:`layer_epsilon`; the privacy proof is the module docstring's); ``dither``: K of
    the dithered ties (:func:`~dptree.quantiles.dither.approx_dither_factor`; public, with
    (upper - lower + 1) K <= 2^64), 1 for fair coins at the split values.

    The pieces are numpy slices of the sorted arrays (uint64 offsets from
    :func:`dptree.interior.encoding.prepare`; object arrays of Python ints on domains beyond 2^64),
    so each call costs O(its piece) vectorised and no Python object is made per distinct value."""
    lo, hi, k = int(lower), int(upper), int(dither)
    if k < 1 or (k > 1 and (hi - lo + 1) * k > 1 << 64):
        raise InvalidParameterError("dither must be an integer K >= 1 with (upper - lower + 1) K <= 2^64: use "
                                    "approx_dither_factor(upper - lower + 1)")
    if k == 1:
        vals, cnt = _as_arrays(values, counts)
        return run_approx(ArrayPiece(vals, cnt, lo, hi), qs, epsilon_call=epsilon_call, rng=rng, neighbors=neighbors)
    # dithered: uint64 offsets from lower (a domain of at most 2^64 / K points)
    if isinstance(values, np.ndarray) and values.dtype == np.uint64 and lo == 0:
        offs = values  # what dptree.interior.encoding.prepare gives
    else:
        ints = [int(v) - lo for v in values]
        if ints and min(ints) < 0:
            raise InvalidParameterError("values must lie in [lower, upper] (clamp them first)")
        offs = np.array(ints, dtype=np.uint64)
    if offs.size and int(offs.max()) > hi - lo:
        raise InvalidParameterError("values must lie in [lower, upper] (clamp them first)")
    vals, cnt = offs, np.asarray(counts, dtype=np.int64)
    out = run_approx(ArrayPiece(vals, cnt, 0, hi - lo, k), qs, epsilon_call=epsilon_call, rng=rng, neighbors=neighbors)
    return [lo + o for o in out]


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
