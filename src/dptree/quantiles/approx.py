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
is epsilon_l-DP for that change (score sensitivity b, proof in
:func:`~dptree.interior.selection.quantile_exponential_mechanism`), so the ratio of the two laws
is at most prod_l e^epsilon_l = e^(L epsilon_l). x's own coins only choose which piece it joins;
for each choice the bound holds, so it holds for the mixture over the choices (the other records'
coins have the same law on both datasets). With epsilon_l = epsilon / L: epsilon-DP.

Privacy (replace-one). Replacing x by x' removes x from one piece and adds x' to one piece per
layer; at the first layer both are in the one piece (a replacement inside one call: e^epsilon_0),
below it they can sit in two different pieces, and then two calls change, by one removal and one
addition: the layer costs up to 2 epsilon_l. The total is epsilon_0 + 2 (L - 1) epsilon_l, so
under ``neighbors="replace"`` every layer gets epsilon / (2L - 1) (m = 1: epsilon, the single
mechanism's replace guarantee). tests/unit/quantiles/test_approx_privacy.py computes the exact
output law on tiny domains and checks both statements, and that the replace relation exceeds
e^epsilon under the add/remove calibration (the 2x is real).

Accuracy. Each call's output y has, with probability >= 1 - t, -dist(p' n', [#{x < y}, #{x <= y}])
>= -(2 / epsilon')(ln |X| + ln(1 / t)) in its piece (epsilon' the call's effective epsilon). A
child piece's target (q / p) n_P differs from the global q n by (q / p) |n_P - p n|, at most the
parent's error when the split value has no ties, so on data without ties at the split values an
output's rank error is at most the sum of the radii along its path (:func:`path_radii`; a union
bound over the m calls). With ties at a split value the fair coins split the tie block in half,
which adds up to half the block's size.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Literal

import numpy as np

from dptree.interior.selection import (
    effective_epsilon,
    exponential_base,
    quantile_exponential_mechanism,
    quantile_level,
)
from dptree.noise import RandomSource

__all__ = ["approx_quantiles", "layers", "layer_epsilon", "level_tree", "path_radii"]


def layers(m: int) -> int:
    """The number of layers of the recursion for m levels: floor(log2 m) + 1."""
    return int(m).bit_length()


def layer_epsilon(epsilon: float, m: int, neighbors: Literal["add_remove", "replace"] = "add_remove") -> float:
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


def level_tree(qs: Sequence[float]) -> list[tuple[int, float, int]]:
    """The calls of the recursion, from the public levels only: (index of the output, the level
    used in its piece, the index of the parent call or -1), in the order they run."""
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


def path_radii(qs: Sequence[float], *, size: int, epsilon_call: float, tail: float) -> np.ndarray:
    """For each level, the rank radius r with P(some output's rank error > its r) <= ``tail``, on data
    without ties at the split values: the sum over the calls on its path of
    (2 / epsilon')(ln |X| + ln(m / tail)) (utility tail of each call, union bound over the m calls)."""
    calls = level_tree(qs)
    m = len(calls)
    own = []
    for _, p, _ in calls:
        b = quantile_level(p).denominator
        eps_used = effective_epsilon(exponential_base(epsilon_call, b), b)
        own.append(2.0 / eps_used * (math.log(size) + math.log(m / tail)))
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


def approx_quantiles(
    values: Sequence[int],
    counts: Sequence[int],
    qs: Sequence[float],
    *,
    lower: int,
    upper: int,
    epsilon_call: float,
    rng: RandomSource,
) -> list[int]:
    """ApproxQuantiles (Kaplan, Schnapp & Stemmer 2022, Algorithm 1): m sorted points of
    [lower, upper], one per sorted level of ``qs``. ``values``/``counts``: the sorted distinct
    data offsets and their multiplicities; ``epsilon_call``: the budget of every exponential
    mechanism (:func:`layer_epsilon`; the privacy proof is the module docstring's)."""
    vals = [int(v) for v in values]
    cnt = [int(c) for c in counts]
    out = [0] * len(qs)

    def solve(vals: list[int], cnt: list[int], levels: list[float], first: int, lo: int, hi: int) -> None:
        if not levels:
            return
        mid = (len(levels) - 1) // 2
        p = levels[mid]
        v = quantile_exponential_mechanism(vals, counts=cnt, q=p, lower=lo, upper=hi, epsilon=epsilon_call, rng=rng)
        out[first + mid] = v
        i, j = bisect_left(vals, v), bisect_right(vals, v)
        tie = cnt[i] if j > i else 0
        k = _fair_coins(rng, tie)  # the records equal to v: each to the left with probability 1/2
        lv, lc = vals[:i] + ([v] if k else []), cnt[:i] + ([k] if k else [])
        rv, rc = ([v] if tie - k else []) + vals[j:], ([tie - k] if tie - k else []) + cnt[j:]
        solve(lv, lc, _rescale(levels, 0, mid, p, True), first, lo, v)
        solve(rv, rc, _rescale(levels, mid + 1, len(levels), p, False), first + mid + 1, v, hi)

    solve(vals, cnt, list(map(float, qs)), 0, int(lower), int(upper))
    return out
