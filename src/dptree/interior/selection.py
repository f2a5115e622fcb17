"""Selection mechanisms for Kaplan, Ligett, Mansour, Naor, Stemmer (2020, "Privately Learning
Thresholds: Closing the Exponential Gap", ``002_2f350810784938f5.txt``).

* :func:`exponential_mechanism` -- McSherry & Talwar 2007 (Kaplan et al. 2020, Lemma 2.2) over a finite
  candidate set with integer scores, sampled exactly (see the exponential-mechanism section of
  :mod:`dptree.noise`).
* :func:`ordered_exponential_mechanism` -- the same mechanism over an ordered integer domain
  [lower, upper] of any size with the interior-point quality q(S, y) = min(#{x <= y}, #{x >= y})
  (Kaplan et al. 2020, Algorithm 1 step 1): q is constant between consecutive data points, so an interval is
  sampled with weight length * b^q and then a uniform point inside it. O(n log n).
* :func:`quantile_exponential_mechanism` -- the tie-aware exponential mechanism for one quantile
  over the same blocks: utility -dist(q n, [#{x < y}, #{x <= y}]), sensitivity 1 (proved in its
  docstring), used by every quantile and median path (:mod:`dptree.interior.quantiles`).
* :func:`choosing_mechanism` -- the Choosing Mechanism of Beimel, Nissim & Stemmer 2013 for
  k-bounded-growth qualities with the guarantee of Kaplan et al. 2020, Lemma 2.4.
* AboveThreshold (the sparse vector technique) lives in :mod:`dptree.interior.sparse_vector`.

All randomness comes from :mod:`dptree.noise`. Scores must be integers (every quality in Kaplan et al. 2020
is a count), which is what makes exact sampling possible.

Neighboring relations: each guarantee below holds for any relation under which the stated
sensitivity holds. The interior-point quality and the Choosing Mechanism's node weights have
sensitivity 1 under add/remove-one and under replace-one for the exponential mechanism; the
Choosing Mechanism's Lemma 2.4 (k-bounded growth) and AboveThreshold are stated here for
add/remove-one neighbors (the relation Lemma 3.6 and the HeavyPaths lemmas are proved for);
:mod:`dptree.interior.calibration` turns that into replace-one by group privacy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from numbers import Integral, Real
from typing import Any, Callable

import numpy as np

from dptree._validation import InstanceOf, Interval, check_param, validate_params
from dptree.errors import InvalidParameterError
from dptree.interior.blocks import Badness, as_lists, block_arrays, group_arrays, offsets_array, sample_windowed
from dptree.noise import (
    RandomSource,
    RngLike,
    discrete_laplace,
    exp_lower_rational,
    make_source,
    sample_exponential_index,
    uniform_int,
)

__all__ = [
    "BOTTOM",
    "choosing_error_bound",
    "choosing_mechanism",
    "choosing_threshold",
    "effective_epsilon",
    "exponential_base",
    "exponential_mechanism",
    "interior_badness",
    "interior_quality_intervals",
    "ordered_exponential_mechanism",
    "quantile_badness",
    "quantile_exponential_mechanism",
    "quantile_level",
    "quantile_score_intervals",
    "rank_blocks",
]

BOTTOM = None  # the symbol "bottom" (no answer) returned by the Choosing Mechanism


#: the declared constraints of this module (dptree._validation); integers may be of any size
_INTEGER = [InstanceOf(Integral, description="an integer")]
_EPSILON = [Interval(Real, 0, None, closed="neither", hint="pass e.g. epsilon=1.0")]
_POSITIVE = [Interval(Integral, 1, None)]


def _ints(values: Iterable[object], name: str) -> list[int]:
    """``values`` as Python ints, each checked to be an integer (scores and counts are integers,
    which is what makes exact sampling possible)."""
    out = []
    for x in values:
        if type(x) is not int:
            check_param(name, x, _INTEGER)
        out.append(int(x))  # type: ignore[call-overload]
    return out


@validate_params({"epsilon": _EPSILON, "sensitivity": _POSITIVE})
def exponential_base(epsilon: float, sensitivity: int = 1) -> tuple[int, int]:
    """Rational base (p, q) with 1 < p/q <= exp(epsilon / (2 * sensitivity)), used for the weights."""
    return exp_lower_rational(Fraction(float(epsilon)) / (2 * int(sensitivity)))


def effective_epsilon(base: tuple[int, int], sensitivity: int = 1) -> float:
    """The privacy parameter 2 * sensitivity * ln(p/q) actually spent (<= the requested epsilon)."""
    p, q = base
    return 2.0 * sensitivity * math.log1p((p - q) / q)


@validate_params({"epsilon": _EPSILON, "sensitivity": _POSITIVE})
def exponential_mechanism(
    scores: Sequence[int],
    *,
    epsilon: float,
    sensitivity: int = 1,
    weights: Sequence[int] | None = None,
    rng: RngLike | RandomSource = None,
) -> int:
    """Index i with probability proportional to weights[i] * exp(epsilon * scores[i] / (2 sensitivity)).

    Exponential mechanism (McSherry & Talwar 2007; Kaplan et al. 2020, Lemma 2.2): epsilon-DP when every
    score has sensitivity <= ``sensitivity`` and the (public) ``weights`` do not depend on data,
    for whichever neighboring relation (add/remove-one or replace-one) that sensitivity is for.
    With probability >= 1 - beta the chosen score is >= max - (2 sens / epsilon) ln(|F| / beta).
    Scores are integers; the weights are computed in log space (as exponents of an exact rational
    base <= e^(epsilon/(2 sens))) and the index is sampled exactly (:mod:`dptree.noise`).
    """
    base = exponential_base(epsilon, sensitivity)
    src = rng if hasattr(rng, "random_bytes") else make_source(rng)
    sc = _ints(scores, "score")
    if not sc:
        raise InvalidParameterError("the candidate set is empty")
    if weights is None:
        w = [1] * len(sc)
    else:
        w = _ints(weights, "weight")
        if len(w) != len(sc) or any(x < 0 for x in w) or not any(w):
            raise InvalidParameterError("weights must be non-negative integers, one per score, not all 0")
    top = max(s for s, x in zip(sc, w) if x > 0)
    return sample_exponential_index(src, w, [max(0, top - s) if x > 0 else 0 for s, x in zip(sc, w)], base)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- ordered domains


def _group(values: Any, counts: Any) -> tuple[Any, Any]:
    """Sorted distinct values and their multiplicities (numpy arrays for non-negative integer
    arrays below 2^64, vectorised; Python lists otherwise)."""
    arr = offsets_array(values)
    if arr is not None:
        return group_arrays(arr, counts)
    if counts is None:
        srt = sorted(values)
        vals: list[int] = []
        cnt: list[int] = []
        for v in srt:
            if vals and vals[-1] == v:
                cnt[-1] += 1
            else:
                vals.append(v)
                cnt.append(1)
        return vals, cnt
    pairs = sorted(zip(values, counts))
    vals, cnt = [], []
    for v, c in pairs:
        if c < 0:
            raise InvalidParameterError("counts must be non-negative")
        if c == 0:
            continue
        if vals and vals[-1] == v:
            cnt[-1] += c
        else:
            vals.append(v)
            cnt.append(c)
    return vals, cnt


def rank_blocks(
    vals: Sequence[int], cnt: Sequence[int], lower: int, upper: int
) -> list[tuple[int, int, int, int]]:
    """The partition of [lower, upper] on which both ranks of y are constant: (start, end, below, upto).

    below = #{x < y}, upto = #{x <= y} for every y in [start, end]. Each distinct data value v is
    its own block (start = end = v, upto - below its multiplicity, the whole tie block); the gaps
    between consecutive distinct values, below the smallest and above the largest are blocks with
    below = upto. ``vals`` sorted distinct values inside [lower, upper] with multiplicities
    ``cnt``; empty gaps are omitted. O(number of distinct values). The one partition every
    exponential mechanism over an ordered domain in dptree samples from (interior points,
    quantiles, medians, thresholds).
    """
    out: list[tuple[int, int, int, int]] = []
    prev_end = lower - 1
    below = 0  # #{x < current value}
    for v, c in zip(vals, cnt):
        if v - 1 > prev_end:  # the gap (prev_end, v): #{x < y} = #{x <= y} = below
            out.append((prev_end + 1, v - 1, below, below))
        out.append((v, v, below, below + c))
        below += c
        prev_end = v
    if upper > prev_end:
        out.append((prev_end + 1, upper, below, below))
    return out


def interior_quality_intervals(
    vals: Sequence[int], cnt: Sequence[int], lower: int, upper: int
) -> list[tuple[int, int, int]]:
    """Intervals (start, end, quality) partitioning [lower, upper], quality q(S, y) = min(#{x<=y}, #{x>=y}).

    ``vals`` sorted distinct values inside [lower, upper] with multiplicities ``cnt``. Empty
    intervals are omitted. O(number of distinct values); the blocks of :func:`rank_blocks`.
    """
    n = sum(cnt)
    return [(s, e, min(upto, n - below)) for s, e, below, upto in rank_blocks(vals, cnt, lower, upper)]


def interior_badness(n: int) -> tuple[Badness, Fraction, int]:
    """(badness, best rank, slope) of the interior-point quality on n records, for
    :func:`~dptree.interior.blocks.sample_windowed`: badness -min(#{x <= y}, n - #{x < y}),
    best at rank n/2, one unit per rank."""
    def badness(below: np.ndarray, upto: np.ndarray, out: np.ndarray) -> None:  # -min(upto, n - below)
        np.subtract(below, n, out=out)
        np.maximum(out, -upto, out=out)

    return badness, Fraction(n, 2), 1


def quantile_badness(level: Fraction, n: int) -> tuple[Badness, Fraction, int]:
    """(badness, best rank, slope) of the tie-aware quantile score at ``level`` = a/b on n
    records (b n < 2^62), for :func:`~dptree.interior.blocks.sample_windowed`: badness
    max(b #{x < y} - a n, 0, a n - b #{x <= y}), best at rank a n / b, b units per rank."""
    a, b = level.numerator, level.denominator
    t = a * n

    def badness(below: np.ndarray, upto: np.ndarray, out: np.ndarray) -> None:  # -score = max(bL-t, 0, t-bU)
        np.multiply(below, b, out=out)
        out -= t
        if upto is below:  # a gap: t - bU = -(bL - t)
            np.abs(out, out=out)
            return
        scratch = np.multiply(upto, -b)
        scratch += t
        np.maximum(out, scratch, out=out)
        np.maximum(out, 0, out=out)

    return badness, Fraction(t, b), b


@validate_params({"lower": _INTEGER, "upper": _INTEGER, "epsilon": _EPSILON})
def ordered_exponential_mechanism(
    values: Sequence[int] | np.ndarray,
    *,
    lower: int,
    upper: int,
    epsilon: float,
    counts: Sequence[int] | np.ndarray | None = None,
    rng: RngLike | RandomSource = None,
) -> int:
    """A point y of [lower, upper] with P(y) proportional to exp(epsilon * q(S, y) / 2).

    q(S, y) = min(#{x in S: x <= y}, #{x in S: x >= y}) has sensitivity 1 (add/remove or replace
    one record), so the release is epsilon-DP (Kaplan et al. 2020, Lemma 2.2 and Algorithm 1 step 1). The
    quality is constant on the O(n) intervals between data points: an interval is chosen with
    weight length * b^q (b <= e^(epsilon/2) rational, exact sampling) and then a uniform point
    inside it, so domains of any size (Python ints, e.g. 2^(2^20)) and ties are handled in
    O(n log n). ``values`` must already lie in [lower, upper]; ``counts`` optionally gives
    multiplicities (same semantics as repeating the values).
    """
    return sample_scored(values, counts, lower, upper, epsilon, rng, interior_badness,
                         lambda vals, cnt, lo, hi: interior_quality_intervals(vals, cnt, lo, hi))


def sample_scored(values: Any, counts: Any, lower: int, upper: int, epsilon: float, rng: Any,
                  badness: Callable[[int], Any], scored: Callable[[Any, Any, int, int], Any]) -> int:
    """The exact exponential mechanism of a sensitivity-1 score that is constant on rank blocks,
    over [lower, upper]: ``badness(n)`` gives the windowed sampler's badness for n records (array
    path), ``scored(vals, cnt, lo, hi)`` the (start, end, score) blocks (list path)."""
    lo, hi = int(lower), int(upper)
    if lo > hi:
        raise InvalidParameterError(f"lower must be <= upper, got {lo} > {hi}")
    base = exponential_base(epsilon, 1)
    src = rng if hasattr(rng, "random_bytes") else make_source(rng)
    vals, cnt = _in_domain(values, counts, lo, hi)
    blocks = block_arrays(vals, cnt, lo, hi)
    if blocks is not None:
        return sample_windowed(src, blocks, *badness(int(blocks.upto[-1])), base)  # type: ignore[arg-type, call-arg]
    vals, cnt = as_lists(vals), as_lists(cnt)
    return _sample_blocks(src, scored(vals, cnt, lo, hi), base)


def _in_domain(values: Any, counts: Any, lo: int, hi: int) -> tuple[Any, Any]:
    """:func:`_group` of the values, checked to lie in [lo, hi]."""
    vals, cnt = _group(values, counts)
    if len(vals) and (int(vals[0]) < lo or int(vals[-1]) > hi):
        raise InvalidParameterError("values must lie in [lower, upper] (clamp them first)")
    return vals, cnt


def _sample_blocks(src: RandomSource, blocks: Sequence[tuple[int, int, int]], base: tuple[int, int]) -> int:
    """A point of the union of ``blocks`` (start, end, score) with P(y) proportional to
    (p/q)^score(y), base = (p, q): a block with weight length * (p/q)^score, then a uniform point in
    it; both steps exact (:func:`dptree.noise.sample_exponential_index`, ``uniform_int``)."""
    top = max(sc for _, _, sc in blocks)
    idx = sample_exponential_index(src, [e - s + 1 for s, e, _ in blocks], [top - sc for _, _, sc in blocks], base)
    s, e, _ = blocks[idx]
    return uniform_int(src, s, e)


# --------------------------------------------------------------------------- quantiles

#: quantile levels q are used as the fraction a/b nearest to q with b <= this denominator
LEVEL_DENOMINATOR = 1000
_LEVEL = [Interval(Real, 0, 1, hint="the quantile level, e.g. q=0.9")]


def quantile_level(q: float) -> Fraction:
    """The rational level a/b (b <= 1000) used for the quantile level ``q``; b is the score's sensitivity."""
    return Fraction(float(q)).limit_denominator(LEVEL_DENOMINATOR)


def quantile_score_intervals(
    vals: Sequence[int], cnt: Sequence[int], lower: int, upper: int, level: Fraction
) -> list[tuple[int, int, int]]:
    """Blocks (start, end, score) partitioning [lower, upper] with the tie-aware quantile score.

    For the level q = a/b and n = sum(cnt): score(y) = -dist(a n, [b #{x < y}, b #{x <= y}]),
    i.e. b times -dist(q n, [#{x < y}, #{x <= y}]): 0 when the target rank q n falls inside y's
    tie block, otherwise b times the number of ranks between q n and the block. Constant on the
    blocks of :func:`rank_blocks` (each distinct data value alone, the gaps between them).
    """
    a, b = level.numerator, level.denominator
    t = a * sum(cnt)
    return [(s, e, -max(b * below - t, 0, t - b * upto)) for s, e, below, upto in rank_blocks(vals, cnt, lower, upper)]


@validate_params({"q": _LEVEL, "lower": _INTEGER, "upper": _INTEGER, "epsilon": _EPSILON})
def quantile_exponential_mechanism(
    values: Sequence[int],
    *,
    q: float,
    lower: int,
    upper: int,
    epsilon: float,
    counts: Sequence[int] | None = None,
    rng: RngLike | RandomSource = None,
) -> int:
    """The tie-aware exponential mechanism for the q-quantile: a point y of [lower, upper].

    Utility u(y) = -dist(q n, [#{x < y}, #{x <= y}]) with n = |S|: 0 for every y whose rank
    interval contains the target rank q n (a tied value whose block straddles q n included),
    otherwise minus the number of ranks to it. With q rounded to a/b (:func:`quantile_level`,
    b <= 1000) the integer score s(y) = b u(y) = -max(b L - a n, 0, a n - b U), L = #{x < y},
    U = #{x <= y}, is sampled with P(y) proportional to beta^s(y) for a rational
    beta <= exp(epsilon / (2 b)) (:func:`exponential_base` with sensitivity b): the exponential
    mechanism (McSherry & Talwar 2007) with the counting measure on [lower, upper] as base measure.

    Sensitivity b (proof). Add one record: n -> n + 1, so a n grows by a, and L, U each grow by
    b or 0. Then b L - a n moves by b [x < y] - a, in [-a, b - a], and a n - b U moves by
    a - b [x <= y], in [a - b, a]; as 0 <= a <= b both moves lie in [-b, b], and a maximum of
    terms (one of them the constant 0) moves by at most the largest move of a term: |ds| <= b.
    Removing a record is the same with the roles of the data sets swapped. Replace one record:
    n and a n fixed, L and U each move by -b, 0 or b, so again |ds| <= b (attained). Under
    add/remove alone the moves are at most max(a, b - a) (attained); the calibration uses b so
    that one statement covers both relations, the guarantee dptree has always stated. Hence the release is
    epsilon-DP (2 b ln beta <= epsilon, :func:`effective_epsilon`) under add/remove-one and under
    replace-one neighbors; `tests/unit/interior/test_quantile_ties.py` checks |ds| <= b (and that
    it is attained) over all neighboring pairs of small data sets.

    Base measure. It must not depend on the data (a data-dependent base measure is itself a
    release needing its own sensitivity argument); the counting measure of the domain gives every
    distinct data value an atom of weight 1 and every gap between consecutive distinct values
    (and below the minimum, above the maximum) weight = its length -- the candidate intervals of
    Smith 2011 and of JointExp (Gillenwater, Joseph & Kulesza 2021) for one quantile, each with
    its own weight length * beta^score, with the tie block as an interval of its own. Data values
    are preferred through the utility: a value's rank interval contains the ranks of both gaps
    next to it, so its utility is at least theirs, and strictly larger whenever q n lies inside
    its block. Sampling is exact: a block with weight length * beta^score, then a uniform point.
    With probability >= 1 - t the output's utility is >= -(2 / epsilon')(ln |X| + ln(1 / t)),
    epsilon' = :func:`effective_epsilon` (|X| = upper - lower + 1). O(n log n).
    """
    lo, hi = int(lower), int(upper)
    if lo > hi:
        raise InvalidParameterError(f"lower must be <= upper, got {lo} > {hi}")
    level = quantile_level(q)
    base = exponential_base(epsilon, level.denominator)
    src = rng if hasattr(rng, "random_bytes") else make_source(rng)
    return sample_quantile_blocks(src,  # type: ignore[arg-type]
                                  values, counts, lo, hi, level, base)


def sample_quantile_blocks(src: RandomSource, values: Any, counts: Any, lo: int, hi: int, level: Fraction,
                           base: tuple[int, int]) -> int:
    """The sampling step of :func:`quantile_exponential_mechanism` for a given base (p, q):
    P(y) proportional to (p/q)^score(y) over [lo, hi], exactly; the caller states the
    sensitivity the base was calibrated for (vectorised blocks when b n fits in int64)."""
    vals, cnt = _in_domain(values, counts, lo, hi)
    blocks = block_arrays(vals, cnt, lo, hi)
    a, b = level.numerator, level.denominator
    if blocks is not None and b * int(blocks.upto[-1]) < 1 << 62:  # b n in int64
        return sample_windowed(src, blocks, *quantile_badness(level, int(blocks.upto[-1])), base)
    vals, cnt = as_lists(vals), as_lists(cnt)
    return _sample_blocks(src, quantile_score_intervals(vals, cnt, lo, hi, level), base)


# --------------------------------------------------------------------------- Choosing Mechanism


def choosing_threshold(epsilon: float, delta: float, k: int = 1) -> float:
    """The bottom-threshold (8/epsilon) ln(4k/(epsilon delta)) of the Choosing Mechanism."""
    return 8.0 / epsilon * math.log(4.0 * k / (epsilon * delta))


def choosing_error_bound(epsilon: float, delta: float, beta: float, n: int, k: int = 1) -> float:
    """Kaplan et al. 2020, Lemma 2.4: with prob >= 1-beta, q(S, f) >= OPT - (16/eps) ln(4kn/(beta eps delta))."""
    return 16.0 / epsilon * math.log(4.0 * k * max(n, 1) / (beta * epsilon * delta))


@validate_params({
    "epsilon": [Interval(Real, 0, 2, closed="right", hint="the Choosing Mechanism needs epsilon <= 2 (Lemma 2.4)")],
    "delta": [Interval(Real, 0, math.exp(-1), closed="right", hint="the Choosing Mechanism needs 0 < delta <= 1/e")],
    "k": _POSITIVE,
})
def choosing_mechanism(
    qualities: Sequence[int] | np.ndarray,
    *,
    epsilon: float,
    delta: float,
    k: int = 1,
    rng: RngLike | RandomSource = None,
) -> int | None:
    """Choosing Mechanism (Beimel, Nissim & Stemmer 2013) for a k-bounded-growth quality.

    ``qualities`` lists q(S, f) >= 0 for the candidates f (candidates with quality 0 may be
    omitted: they are never chosen). Steps: best = max q + DLap(4/eps); if best < (8/eps)
    ln(4k/(eps delta)) return ``None`` (bottom); else the exponential mechanism with privacy eps/2
    (weights b^q, b <= e^(eps/4)) over G(S) = {f : q(S, f) >= 1}.

    Guarantee (Kaplan et al. 2020, Lemma 2.4, for 0 < eps <= 2, 0 < delta <= 1/e): (eps, delta)-DP for
    add/remove-one neighbors (k-bounded growth: one added record raises at most k qualities by at
    most 1; a replacement is two such changes, group privacy), and with
    probability >= 1 - beta the output has quality >= OPT - (16/eps) ln(4kn/(beta eps delta))
    (bottom counts as quality 0). The structure follows Beimel-Nissim-Stemmer (Theory of Computing
    12(1), 2016, "Private Learning and Sanitization: Pure vs. Approximate Differential Privacy",
    and Bun-Nissim-Stemmer-Vadhan FOCS 2015); the constants are re-proved for this exact variant
    (discrete Laplace, rational base) in docs/notes/heavypaths.md section 1.
    """
    eps, dlt, kk = float(epsilon), float(delta), int(k)
    src = rng if hasattr(rng, "random_bytes") else make_source(rng)
    too_large = InvalidParameterError("qualities count records: each must be below 2^63")
    if isinstance(qualities, np.ndarray) and qualities.dtype.kind in "iu":  # e.g. a level's node weights
        if qualities.dtype.kind == "u" and qualities.size and int(qualities.max()) >= 1 << 63:
            raise too_large
        qs = qualities.astype(np.int64, copy=False)
    else:
        try:
            qs = np.array(_ints(qualities, "quality"), dtype=np.int64)
        except OverflowError:
            raise too_large from None
    if qs.size and qs.min() < 0:
        raise InvalidParameterError("qualities must be non-negative")
    opt = int(qs.max()) if qs.size else 0
    best = opt + int(discrete_laplace(src, Fraction(4) / Fraction(eps), 1)[0])  # type: ignore[arg-type]
    if best < choosing_threshold(eps, dlt, kk):
        return BOTTOM
    good = np.flatnonzero(qs >= 1)
    if not good.size:  # cannot happen for OPT >= 1; bottom keeps the function total
        return BOTTOM
    base = exp_lower_rational(Fraction(eps) / 4)
    j = sample_exponential_index(src, np.ones(good.size, dtype=np.int64), opt - qs[good], base)  # type: ignore[arg-type]
    return int(good[j])
