"""The tie-aware exponential mechanism with a target rank counted from the top.

:func:`top_rank_mechanism` picks a point y of an integer domain [lower, upper] whose number of
data values above it is near a public target t: the score of y is

    s(y) = -dist(t, [#{x > y}, #{x >= y}]),

0 for every y whose tie block straddles the target (a tied value counts on both sides, as in the
quantile mechanism of :func:`dptree.interior.selection.quantile_exponential_mechanism`), otherwise
minus the number of ranks to it. It is that mechanism with the target rank n - t counted from the
bottom (n the number of data values, which never leaves the mechanism): the same blocks of
:func:`~dptree.interior.selection.rank_blocks`, the same exact sampler
(:func:`~dptree.interior.blocks.sample_windowed`), the counting measure of the domain as base
measure. Its use: the private contribution bound of :mod:`dptree.rangetree.contributions`, where
the values are users' (transformed) record counts and t is the number of users that may keep more
records than the bound.

Sensitivity 1 under add/remove-one value (proof). Write L = #{x < y}, U = #{x <= y} and the
bottom rank c = n - t, so that #{x > y} = n - U and #{x >= y} = n - L and the badness -s(y) =
max(c - U, 0, L - c). Adding a value v: n, and so c, grows by 1; L grows by [v < y] and U by
[v <= y], each 0 or 1. Then c - U moves by 1 - [v <= y], in [0, 1], and L - c by [v < y] - 1, in
[-1, 0]; a maximum of terms (one of them the constant 0) moves by at most the largest move of a
term: |ds| <= 1. Removing a value is the same with the data sets swapped. The mechanism samples y
with P(y) proportional to beta^s(y), beta <= exp(epsilon / 2) rational
(:func:`~dptree.interior.selection.exponential_base` with sensitivity 1), so it is epsilon-DP
(McSherry & Talwar 2007) under add/remove-one value; ``tests/unit/interior/test_top_rank.py``
checks the law against brute force over all neighbouring multisets of small domains.
"""

from __future__ import annotations

from fractions import Fraction
from numbers import Integral, Real
from typing import Any

import numpy as np

from dptree._validation import InstanceOf, Interval, validate_params
from dptree.interior.blocks import Badness, as_lists
from dptree.interior.selection import _in_domain, exponential_base, rank_blocks, sample_scored
from dptree.noise import RandomSource, RngLike

__all__ = ["rank_badness", "top_rank_mechanism", "top_rank_law"]

_INTEGER = [InstanceOf(Integral, description="an integer")]
_EPSILON = [Interval(Real, 0, None, closed="neither", hint="pass e.g. epsilon=0.1")]
_ABOVE = [Interval(Integral, 0, None, hint="the number of values to leave above the point, e.g. above=10")]


def rank_badness(rank: int) -> tuple[Badness, Fraction, int]:
    """(badness, best rank, slope) of the tie-aware score with the bottom target rank ``rank``,
    for :func:`~dptree.interior.blocks.sample_windowed`: badness max(#{x < y} - rank, 0,
    rank - #{x <= y}), best at ``rank``, one unit per rank."""

    def badness(below: np.ndarray, upto: np.ndarray, out: np.ndarray) -> None:
        np.subtract(below, rank, out=out)
        if upto is below:  # a gap: rank - U = -(L - rank)
            np.abs(out, out=out)
            return
        np.maximum(out, rank - upto, out=out)
        np.maximum(out, 0, out=out)

    return badness, Fraction(rank), 1


@validate_params({"above": _ABOVE, "lower": _INTEGER, "upper": _INTEGER, "epsilon": _EPSILON})
def top_rank_mechanism(values: Any, *, above: int, lower: int, upper: int, epsilon: float, counts: Any = None,
                       rng: RngLike | RandomSource = None) -> int:
    """A point y of [lower, upper] with P(y) proportional to beta^s(y), s(y) = -dist(``above``,
    [#{x > y}, #{x >= y}]), beta <= exp(epsilon / 2): epsilon-DP under add/remove-one value
    (module docstring). ``values`` must lie in [lower, upper]; ``counts`` optionally gives their
    multiplicities (the same as repeating them). Exact sampling, O(distinct values)."""
    def scored(vals: Any, cnt: Any, lo: int, hi: int) -> list[tuple[int, int, int]]:
        rank = sum(cnt) - int(above)
        return [(s, e, -max(below - rank, 0, rank - upto)) for s, e, below, upto in rank_blocks(vals, cnt, lo, hi)]

    return sample_scored(values, counts, lower, upper, epsilon, rng, lambda n: rank_badness(n - int(above)), scored)


def top_rank_law(values: Any, *, above: int, lower: int, upper: int, epsilon: float,
                 counts: Any = None) -> np.ndarray:
    """The exact law of :func:`top_rank_mechanism` over [lower, upper] (a small domain), as
    probabilities: P(y) = beta^s(y) / sum_z beta^s(z) with the mechanism's rational beta. For
    tests and audits (it reads the data: never part of a release)."""
    lo, hi = int(lower), int(upper)
    p, q = exponential_base(epsilon, 1)
    vals, cnt = _in_domain(values, counts, lo, hi)
    vals, cnt = [int(v) for v in as_lists(vals)], [int(c) for c in as_lists(cnt)]
    rank = sum(cnt) - int(above)
    bad = np.zeros(hi - lo + 1)
    for s, e, below, upto in rank_blocks(vals, cnt, lo, hi):
        bad[s - lo:e - lo + 1] = max(below - rank, 0, rank - upto)
    log_w = -(bad - bad.min()) * np.log(p / q)
    w = np.exp(log_w)
    return w / w.sum()
