"""Calibrated tree intervals: the pivot interval's multiplier chosen by simulating the release.

The pivot interval (:func:`dptree.rangetree.quantile_pivot.tree_intervals`) makes one test per end, but
an end fails only when a whole run of strongly correlated tests errs, so it over-covers by an
amount that depends on the data's density near the quantile (docs/notes/quantiles.md, "Intervals").
This module picks, for each level, the factor on the multiplier at which simulated releases cover
at the nominal rate (a parametric bootstrap with the release as plug-in truth). Given a pivot read
off the isotonic fit of F_hat (:func:`~dptree.rangetree.quantile_pivot.tree_pivot` with
``monotone=True``; not the default: it under-covers uniform data with 0.001 records a bucket,
docs/notes/quantiles.md, "Coverage"), every simulated release is read off the same way. Steps:

1. plug-in truth: the released isotonic CDF G (:meth:`~dptree.rangetree.estimates.LeafEstimates.monotone_cdf`),
   total G(D - 1), made piecewise linear between the centres of its flat blocks
   (:func:`plug_in_cdf`). Past where the release says the data end (:func:`data_end`: the first
   bucket whose suffix count n_hat - F_hat(x) is within ``end_z`` standard deviations of 0, :class:`CalibrationRules`)
   the release cannot tell how the last ranks lie, so three tails are calibrated and the largest
   factor kept (:func:`tail_plug_ins`): the *abrupt* end (those ranks at the plug-in's density
   just below that bucket, then flat), the *spread* end (on a line up to the first bucket where
   the suffix estimate reaches 0) and the isotonic fit's own tail. The isotonic fit is capped at 0
   below but not above, so its tail spreads the last ranks up to the domain's end, and alone it
   under-covered the top levels of data that end well before the domain: 1000 uniform records on a
   quarter of 1024 buckets 0.88 at q = 0.95 and 0.65 at q = 1, log-normal records over 2^16
   buckets 0.57 at q = 1 (0.95, 0.98 and 0.97 with the three tails); the abrupt and spread tails
   without it are narrower there but cover 3-4 points less at q = 0.95 of sparse data over 2^20
   buckets (docs/notes/quantiles.md, "Data that end before the domain"). Then the plug-in is
   straight where it is within 3 pivot standard deviations of q G(D - 1)
   (:func:`straight_window`: the isotonic fit's steps are noise at that scale), as two straight
   lines meeting where G reaches q G(D - 1), one for each side's density (``split_everywhere``;
   one line averaged a long low block of pooled head noise with the data's start: q = 0.05 of
   uniform records on the last quarter of 1024 buckets had its plug-in quantile in the empty head,
   covering 0.88, now 0.925; docs/notes/quantiles.md, "Two lines at the target"). Where that window
   reaches G's first or last rank the split came first: there the
   isotonic fit spreads the last ranks over the empty tail, up to the domain's end, and one line
   would put the plug-in quantile there: 0.62 coverage at q = 0.95 on log-normal data, n = 1000
   over 2^20; the line on the data's side no flatter than the plug-in over the next window further
   inside the data, :func:`_steeper`, since a total overstated by noise puts q G(D - 1) itself in
   the tail: 0.88 -> 0.93-0.96 at that level, docs/notes/quantiles.md; since the three tails, at the
   first rank only, ``far_top``: at the last one a steeper line under-covered the top
   levels of sparse decreasing tails); its q-quantile x*_q
   is the first bucket where it reaches q G(D - 1). The release cannot resolve where q n falls
   inside x*_q's bucket (its phase), so the truth is shifted by a fraction of a bucket to put q n
   at the top of the bucket and then just above its bottom, the phases at which the low, resp. the
   high end is hardest to cover, and the larger of the two factors is kept: coverage at least
   nominal at every phase, hence above it on average where a bucket holds a pivot standard
   deviation of records or more. (``phase="uniform"``, each simulation drawing its phase uniformly,
   makes the coverage averaged over the phase nominal but lets it fall far below at the extreme
   phases: 0.60 at the median of a tied column whose q n sits at the edge of its tie block;
   docs/notes/quantiles.md, "Coverage". Not the default);
2. ``sims`` simulated releases: the plan's public noise (levels, per-level scales, branching) drawn
   afresh and passed through the same least-squares estimator
   (:meth:`~dptree.rangetree.estimates.LeafEstimates.simulated_cdf_errors`; the estimator is linear,
   so a simulated F_hat is G plus the simulated error);
3. for each simulated release and level (read off like the release's pivot), the smallest factor
   c at which the interval
   contains x*_q (coverage only grows with c: the low end moves left and the high end right; c may
   be negative, below), in
   closed form: the low end covers iff some grid bucket j at or before x*_q has P_j + c w_j >= 0,
   the high end iff some j from the grid point before x*_q on has P_j - c w_j < 0 (w_j the
   multiplier times the pivot's standard deviation);
4. the factor of level q is the ceil(level (sims + 1))-th smallest of those sims factors (were the
   plug-in the truth, the interval would cover with probability >= level, as a Monte Carlo test);
5. (:func:`calibrated_intervals`) steps 3-4 are run for both rules of reading the high end
   (:data:`~dptree.rangetree.quantile_pivot.HIGH_ENDS`: after the *last* bucket where the pivot is
   not significantly positive, or at the *first* where it is), and each level keeps "first" where
   its simulated intervals, at its own factor, are on average more than ``first_margin`` times
   narrower, else "last"; a level whose ranks above it are within a standard deviation of the
   suffix count (:func:`unresolved_levels`: the release cannot tell where those ranks lie, and
   the "first" rule's calibration would lean on the plug-in's shape there) keeps "last". Each
   rule is calibrated on its own, and the choice reads only the plug-in and the public noise
   law, like the factor. The
   "last" rule makes one test per end, but where the data end before the domain does (the tail
   level of skewed data) the pivot stays near (1 - q) n with the suffix count's noise all through
   the empty tail, so its last non-significant bucket sits near the domain's end; the "first"
   rule stops at the first significant bucket, and the calibration prices its repeated tests.
   Measured (docs/notes/quantiles.md, "The high end" and "`RangeTree.quantile_ci`"): q = 0.95 of 1000
   log-normal records over 2^16 buckets, 63,499 -> 1,524 buckets wide, covering 0.950 (0.965
   with "last"; 2,173 wide covering 0.99 since ``far_top``); elsewhere the two are close and "last" (with negative factors) is narrower on
   sparse uniform data. The maximum (q = 1) takes neither: its high end is the domain's end
   (:data:`~dptree.rangetree.quantile_pivot.MAX_END`; no release bounds the maximum from above,
   one record may sit anywhere) and only its low end is calibrated (the benchmark's 1000
   log-normal records over 2^20 buckets: 0.69 before, 1.00).

Factors may be negative (``negative``): at c < 0 the low end
is the first bucket where the pivot is significantly *positive* and the high end follows the last
where it is significantly negative, so the interval is narrower than the stretch over which the
pivot crosses 0. That matters where the records are sparse against the buckets (0.001-0.01 a bucket):
between records F is flat over hundreds of buckets, the pivot's noise crosses 0 many times there,
and the interval at factor 0 already covered 0.99-1.00 (uniform n = 10^3 and 10^4 over 2^20
buckets); with negative factors it covers 0.94-0.95 and is 25-40% narrower (docs/notes/quantiles.md,
"Negative factors"). Where some simulated interval needs a factor above 0 to cover, the order
statistic of step 4 is the same with or without the floor, so those intervals do not change. A
reversed pair of ends (possible only below 0) is returned in order; the simulation counts it as a
miss, so that only adds coverage. ``dptree.quantiles`` widens each interval to hold its point
estimate (:func:`~dptree.rangetree.quantile_pivot.tree_intervals`, ``contain``), which a narrowed interval
can otherwise miss (2-4% of the intervals in those cells); that too only adds coverage.

The factor is computed on the same read-off grid as the interval (:func:`tree_pivot`: refined
to single buckets near each level's ends); the
number of simulations is public (:func:`calibration_sims`: 199 up to 2^16 leaves, fewer above,
none past 2^20 leaves, where the pivot interval is kept).

Privacy: post-processing. Everything read is the release's estimates (the noisy CDF, its
isotonic fit, the estimated total) and its public plan; the simulation's noise is drawn through
:mod:`dptree.noise` (from the release's own source in ``dptree.quantiles``, from a fresh secure
source or ``rng=`` in ``RangeTree.quantile_ci``) but is not privacy noise and touches no data.
Cost: ``sims`` trees' worth of noise and two least-squares passes (docs/notes/quantiles.md has the
measured time per call).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dptree.noise import RandomSource
from dptree.noise.integers import uniform_below
from dptree.rangetree.quantile_pivot import (
    HIGH_ENDS,
    MAX_END,
    TreePivot,
    interval_ends,
    scaled,
    tree_intervals,
    tree_pivot,
)

__all__ = ["INTERVALS", "CALIBRATION_SIMS", "CalibrationRules", "RULES", "calibration_sims", "critical_scales", "plug_in_cdf", "data_end", "flat_tail",
           "tail_plug_ins",
           "straight_window", "shifted_truth", "unresolved_levels",
           "calibrated_scales", "calibrated_intervals", "released_intervals"]

#: the tree's quantile interval constructions: calibrated by simulation (default) or the pivot's own
INTERVALS: tuple[str, ...] = ("calibrated", "pivot")
#: simulated releases per call at most (ceil(0.95 * 200) = 190: the 95% factor is the 190th of 199)
CALIBRATION_SIMS = 199
#: ... and at least (the 95% factor is then the 38th of 39)
MIN_SIMS = 39
#: simulated leaves per call: the number of simulations is min(199, WORK_LEAVES // leaves), at least 39
WORK_LEAVES = 1 << 24
#: trees with more (padded) leaves than this keep the pivot interval (a call would take seconds)
MAX_LEAVES = 1 << 20
#: resolution of a simulation's phase (where q n falls inside its bucket)
PHASES = 1 << 52


@dataclass(frozen=True)
class CalibrationRules:
    """The choices of the calibration (module docstring), one frozen value: :data:`RULES` is what
    ``RangeTree.quantile_ci`` and ``dptree.quantiles`` release; the benchmarks and tests build the
    earlier rules with :func:`dataclasses.replace` to measure against them (never by changing a
    module's state)."""

    #: the plug-in is a straight line where it is within this many pivot standard deviations of q n
    window: float = 3.0
    #: ... split at the plug-in quantile where that window reaches the plug-in's first or last rank
    split: bool = True
    #: ... everywhere, not only where the window reaches the plug-in's first or last rank (False: one
    #: line elsewhere): where the plug-in's density differs on the two
    #: sides of the target one line averaged them (docs/notes/quantiles.md, "Two lines at the target")
    split_everywhere: bool = True
    #: ... and the split's line on the data's side no flatter than the plug-in further inside the data
    far: bool = True
    #: ... also where the window reaches the plug-in's *last* rank (False: at the first rank only; past
    #: the data's end the three tails of :func:`tail_plug_ins` take its place, and a steeper line there
    #: under-covered the top levels of sparse data: q = 0.99 of 1000 log-normal records over 2^20
    #: buckets 0.895 with it, 0.945 with the line off at both ranks; docs/notes/quantiles.md)
    far_top: bool = False
    #: a level whose remaining ranks (1 - q) n_hat are at most this many standard deviations of the
    #: suffix count above its estimate takes the "last" high end (step 5, :func:`unresolved_levels`;
    #: 0: never)
    unresolved_z: float = 1.0
    #: factors below 0 allowed with the "last" high end (the interval narrower than the stretch where
    #: the pivot crosses 0; with "first" the interval at factor 0 is already a point)
    negative: bool = True
    #: the high end is read at the first significant bucket only where that is more than this many
    #: times narrower in simulation (step 5): the "last" rule's one test per end does not lean on the
    #: plug-in, the "first" rule's repeated tests do (0.8 points less coverage without the margin)
    first_margin: float = 2.0
    #: the data's end (:func:`data_end`, step 1): the first bucket where the suffix count
    #: n_hat - F_hat(x) is no longer this many of its standard deviations above 0 ...
    end_z: float = 2.0
    #: ... above which the abrupt tail's ranks rise at the plug-in's density over this many standard
    #: deviations of n_hat below it (:func:`flat_tail`)
    tail_ranks: float = 6.0
    #: the three tails past the data's end (:func:`tail_plug_ins`); False: the isotonic fit's tail
    #: alone (for comparison)
    tail_plug_ins: bool = True
    #: "worst": the larger factor of the two extreme phases (step 1); "uniform": each simulation
    #: draws its phase uniformly (nominal only on average over the phase; for comparison)
    phase: Literal["worst", "uniform"] = "worst"


#: the released calibration
RULES = CalibrationRules()


def calibration_sims(leaves: int) -> int:
    """Simulated releases for a tree of ``leaves`` padded leaves (public), 0 past :data:`MAX_LEAVES`."""
    if leaves > MAX_LEAVES:
        return 0
    return int(min(CALIBRATION_SIMS, max(MIN_SIMS, WORK_LEAVES // leaves)))


def critical_scales(idx: np.ndarray, piv: np.ndarray, w: np.ndarray, true_bucket: np.ndarray,
                    floor: float = 0.0, high: str = "last") -> np.ndarray:
    """For pivot values ``piv`` (sims x grid) with half-widths ``w`` (grid) at factor 1, the smallest
    factor c >= ``floor`` at which the interval of row s contains ``true_bucket[s]`` (step 3 of the
    module docstring; ``floor=-inf``: negative factors too, which narrow the interval). One pass
    per end: the extremum of each row's ratios P / w before or after its true bucket."""
    sims, m = piv.shape
    k = np.searchsorted(idx, np.asarray(true_bucket), side="left")  # grid points before the bucket
    if (w > 0).all():
        r = piv / w
    else:  # a bucket without noise (w = 0) tests P >= 0 at every factor: r = +inf where P >= 0, -inf below
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(w > 0, piv / np.where(w > 0, w, 1.0), np.where(piv >= 0, np.inf, -np.inf))
    # the low end covers iff some grid bucket j <= k has P + c w >= 0: c >= min_{j <= k} -r_j
    low = np.maximum(-_row_extremum(np.maximum, r, 0, np.minimum(k, m - 1) + 1), floor)
    if high == MAX_END:  # the high end is the domain's end: only the low end can miss
        return low
    if high == "first":  # covers iff no grid bucket before the true one has P - c w >= 0
        before = _row_extremum(np.maximum, r, 0, np.maximum(k, 1))
        up = np.maximum(np.where(k > 0, before, -np.inf), floor)
        return np.maximum(low, up)
    # covers iff some grid bucket j >= k - 1 has P - c w < 0: c > min_{j >= k - 1} r_j
    hi = np.maximum(_row_extremum(np.minimum, r, np.clip(k - 1, 0, m - 1), m), floor)
    return np.where(k == 0, low, np.maximum(low, hi))


def shifted_truth(idx: np.ndarray, shift: np.ndarray, kp: np.ndarray, kv: np.ndarray) -> np.ndarray:
    """The plug-in's knots (kp, kv) read at the grid ``idx`` moved by each simulation's ``shift``:
    (sims x grid), or one row (1 x grid, broadcast) where every simulation has the same shift (the
    worst-phase rule's two phases): the same values, without sims identical interpolations."""
    if shift.min() == shift.max():
        return np.interp(idx + shift[0], kp, kv)[None, :]
    return np.interp(idx[None, :] + shift[:, None], kp, kv)


def _row_extremum(ufunc: np.ufunc, a: np.ndarray, start: Any, stop: Any) -> np.ndarray:
    """``ufunc.reduce(a[s, start[s]:stop[s]])`` for every row s of the 2-d C-contiguous ``a``
    (non-empty ranges), in one ``reduceat`` over the flat array; NaN propagates as in ``reduce``."""
    rows, m = a.shape
    base = np.arange(rows, dtype=np.int64) * m
    bounds = np.empty(2 * rows, dtype=np.int64)
    bounds[0::2] = base + start
    bounds[1::2] = base + stop
    flat = a.reshape(-1)
    if bounds[-1] == flat.size:  # the last range runs to the end: reduceat's last index does that
        return ufunc.reduceat(flat, bounds[:-1])[0::2]
    return ufunc.reduceat(flat, bounds)[0::2]


def plug_in_cdf(iso: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The plug-in truth as knots (position, value) of a piecewise-linear CDF: the isotonic CDF's
    flat blocks at their centres, so each of its jumps is spread over the buckets between two
    block centres (strictly increasing values; constant before the first knot and after the last)."""
    start = np.flatnonzero(np.diff(iso, prepend=np.nan) != 0)  # first bucket of each flat block
    end = np.append(start[1:], iso.size) - 1
    return (start + end) / 2.0, iso[start]


def data_end(est: Any, n_hat: float, size: int, z: float = RULES.end_z, grid: int = 4096) -> int:
    """Where the release says the data end: the first bucket x whose suffix count n_hat - F_hat(x)
    is at most ``z`` of its standard deviations (no longer significantly above 0). Estimates and
    closed-form variances only. Exact on domains of at most ``grid`` buckets; on larger ones the
    test runs on ``grid`` evenly spaced buckets, then bucket by bucket in the cell before the first
    grid bucket that passes (a bucket passing by noise in an earlier cell is not seen)."""
    def ended(idx: np.ndarray) -> np.ndarray:
        F = est.counts(np.zeros_like(idx), idx, np.zeros(idx.shape, dtype=bool))
        empty = idx + 1 > size - 1
        vS = est.variances(np.where(empty, 0, idx + 1), np.full(idx.shape, size - 1), empty)
        return n_hat - F <= z * np.sqrt(np.maximum(vS, 0.0))

    coarse = np.unique(np.linspace(0, size - 1, min(size, grid)).astype(np.int64))
    hit = ended(coarse)
    k = int(np.argmax(hit)) if hit.any() else coarse.size - 1
    if k == 0:
        return int(coarse[0])
    cell = np.arange(coarse[k - 1] + 1, coarse[k] + 1)
    inside = ended(cell)
    return int(cell[int(np.argmax(inside))]) if inside.any() else int(coarse[k])


def flat_tail(pos: np.ndarray, val: np.ndarray, end: int, ranks: float, last: int | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """The plug-in knots flat from the data's end on (step 1): up to ``end`` as they are, then a
    straight line at the plug-in's density over the ``ranks`` ranks below ``end`` up to its last
    value, reached no earlier than bucket ``last`` when given, and flat after, instead of the
    isotonic fit's last ranks spread over the empty tail up to the domain's end."""
    g_end = float(np.interp(end, pos, val))
    if not (val[0] < g_end < val[-1]) or not ranks > 0:
        return pos, val
    r = min(ranks, g_end - float(val[0]))
    dens = r / max(end - float(np.interp(g_end - r, val, pos)), 1.0)
    keep = pos < end
    top = end + (float(val[-1]) - g_end) / dens
    if last is not None:
        top = max(top, float(last))
    return (np.concatenate([pos[keep], [end, top]]),
            np.concatenate([val[keep], [g_end, val[-1]]]))


def tail_plug_ins(pos: np.ndarray, val: np.ndarray, est: Any, n_hat: float, size: int, v_total: float,
                  rules: CalibrationRules = RULES) -> list[tuple[np.ndarray, np.ndarray]]:
    """The plug-in truths of step 1, which differ only past the data's end (:func:`data_end` at
    ``rules.end_z``): the *abrupt* end (the ranks above it at the density just below, then flat,
    :func:`flat_tail`), the *spread* end (the same ranks on a line up to the first bucket where the
    suffix estimate reaches 0, where that is later) and the isotonic fit's own tail (its last ranks
    spread up to where it reaches its top); each distinct one once (data reaching the domain's end
    give one)."""
    end, ranks = data_end(est, n_hat, size, rules.end_z), rules.tail_ranks * math.sqrt(v_total)
    out: list[tuple[np.ndarray, np.ndarray]] = []
    for plug in (flat_tail(pos, val, end, ranks), flat_tail(pos, val, end, ranks, data_end(est, n_hat, size, 0.0)),
                 (pos, val)):
        if not any(np.array_equal(plug[0], p) and np.array_equal(plug[1], v) for p, v in out):
            out.append(plug)
    return out


def straight_window(pos: np.ndarray, val: np.ndarray, target: float, half: float,
                    rules: CalibrationRules = RULES) -> tuple[np.ndarray, np.ndarray]:
    """The knots straight where the plug-in is within ``half`` ranks of ``target``: the local density
    at the interval's scale, not the isotonic fit's steps inside it. ``rules.split``: two straight
    lines meeting where the plug-in reaches ``target``, one for each side's density (everywhere with
    ``rules.split_everywhere``, else only where the window reaches the plug-in's first or last rank,
    the isotonic fit's unsupported tail: module docstring, step 1); ``rules.far``: where the window
    reaches such a rank, the line on the data's side no flatter than the plug-in further inside the
    data (:func:`_steeper`), at the last rank only with ``rules.far_top``."""
    lo_t, hi_t = max(target - half, val[0]), min(target + half, val[-1])
    a, b = np.interp(lo_t, val, pos), np.interp(hi_t, val, pos)
    if not b > a:
        return pos, val
    left, right = pos < a, pos > b
    clipped = target - half < val[0] or target + half > val[-1]
    mid_p, mid_v = (([float(np.interp(target, val, pos))], [target])
                    if rules.split and (clipped or rules.split_everywhere) and lo_t < target < hi_t else ([], []))
    top = target + half > val[-1]
    if mid_p and clipped and rules.far and (rules.far_top or not top):
        mid_p = [_steeper(pos, val, target, half, a, b, float(mid_p[0]), top=top)]
    return (np.concatenate([pos[left], [a], mid_p, [b], pos[right]]),
            np.concatenate([val[left], [lo_t], mid_v, [hi_t], val[right]]))


def _steeper(pos: np.ndarray, val: np.ndarray, target: float, half: float, a: float, b: float, mid: float,
             top: bool) -> float:
    """Where the split plug-in reaches ``target`` when the line on the data's side takes the
    steeper of its own slope and the plug-in's slope over the next ``half`` ranks further into the
    data (``CalibrationRules.far``): where the window reaches the last rank, the isotonic fit's last ranks are
    spread over the empty tail, and with a total overstated by noise the target itself lies there
    (the line then has a density 100x too low); the density further inside the data is the
    plug-in's better guess, and the higher density is the harder case for the interval's end on
    that side (the calibrated factor grows with it)."""
    if top:  # the left line, from (a, target - half) to (mid, target)
        ranks = target - max(target - half, val[0])
        far_lo = max(target - 2 * half, val[0])
        a2 = float(np.interp(far_lo, val, pos))
        if a - a2 > 0 and ranks > 0 and (target - half - far_lo) > 0:
            dens = max(ranks / (mid - a), (target - half - far_lo) / (a - a2))
            return min(mid, a + ranks / dens)
        return mid
    ranks = min(target + half, val[-1]) - target  # the right line, from (mid, target) to (b, target + half)
    far_hi = min(target + 2 * half, val[-1])
    b2 = float(np.interp(far_hi, val, pos))
    if b2 - b > 0 and ranks > 0 and (far_hi - target - half) > 0:
        dens = max(ranks / (b - mid), (far_hi - target - half) / (b2 - b))
        return max(mid, b - ranks / dens)
    return mid


def calibrated_scales(tree: Any, qs: np.ndarray, level: float, *, source: RandomSource,
                      sims: int = CALIBRATION_SIMS, grid: int = 4096, pivot: TreePivot | None = None,
                      rules: CalibrationRules = RULES, high: str = "last") -> np.ndarray:
    """The factor on each level's pivot multiplier at which ``sims`` simulated releases of ``tree``'s
    plan, with the release's isotonic CDF as the truth, cover at ``level`` whatever the quantile's
    phase inside its bucket (``rules.phase="worst"``: the larger factor of the two extreme phases;
    ``"uniform"``: averaged over a uniform phase, for comparison) (module docstring), for the
    interval whose high end is read by the rule ``high`` (:data:`~dptree.rangetree.quantile_pivot.HIGH_ENDS`). The simulated
    releases are read off like ``pivot`` (``pivot.monotone``: the isotonic fit on each level's grid).
    ``rules``: the calibration's choices (:class:`CalibrationRules`; ``negative`` applies to
    ``high="last"`` and ``"end"``). Reads only the release (its estimates and public plan);
    ``source`` draws the simulation's noise and phases. ``pivot``: :func:`tree_pivot`'s result for
    these arguments, if already computed."""
    scales, _ = _calibrate(tree, qs, level, source, sims, grid, pivot, rules, (high,))
    return scales[high]


def calibrated_intervals(tree: Any, qs: np.ndarray, level: float, *, source: RandomSource,
                         sims: int = CALIBRATION_SIMS, grid: int = 4096, pivot: TreePivot | None = None,
                         rules: CalibrationRules = RULES) -> tuple[np.ndarray, tuple[str, ...]]:
    """Each level's factor and high-end rule: both rules of
    :data:`~dptree.rangetree.quantile_pivot.HIGH_ENDS` calibrated on the same simulated releases
    (:func:`calibrated_scales`), and per level ``"first"`` where its simulated intervals are on
    average more than ``rules.first_margin`` times narrower than ``"last"``'s and the level's last
    ranks are resolved (:func:`unresolved_levels` at ``rules.unresolved_z``), else ``"last"`` (a
    function of the plug-in and the public noise law, not of the release's own noise beyond the
    plug-in; step 5 of the module docstring)."""
    top = np.asarray(qs) >= 1.0
    highs = HIGH_ENDS + ((MAX_END,) if top.any() else ())
    pv = tree_pivot(tree, qs, level, grid=grid) if pivot is None else pivot
    scales, widths = _calibrate(tree, qs, level, source, sims, grid, pv, rules, highs)
    free = ~unresolved_levels(tree, qs, pv.n_hat, rules.unresolved_z)
    pick = tuple(MAX_END if top[i] else "first" if widths["first"][i] * rules.first_margin < widths["last"][i]
                 and free[i] else "last" for i in range(len(qs)))
    return np.array([scales[h][i] for i, h in enumerate(pick)]), pick


def unresolved_levels(tree: Any, qs: np.ndarray, n_hat: float, z: float = RULES.unresolved_z) -> np.ndarray:
    """Per level, whether the release cannot tell where its last ranks lie: the ranks above it,
    (1 - q) ``n_hat``, are at most ``z`` (``CalibrationRules.unresolved_z``) standard deviations of the
    suffix count above its estimate's bucket. Such a level takes the "last" high end (step 5: one
    test per end, no shape assumed), because the "first" rule's calibration leans on the plug-in's
    shape there, which the release does not resolve: q = 0.99 of 1000 log-normal records over 2^16
    buckets covered 0.76 before this rule and ``far_top = False``, 0.99 with them (docs/notes/quantiles.md,
    "Ranks the release cannot place"). Estimates and closed-form variances only."""
    x = np.asarray(tree.quantile_bucket(qs), dtype=np.int64)
    size = int(tree.domain.size)
    empty = x + 1 > size - 1
    v = tree._est.variances(np.where(empty, 0, x + 1), np.full(x.shape, size - 1), empty)
    return (1.0 - np.asarray(qs, dtype=float)) * n_hat <= z * np.sqrt(np.maximum(v, 0.0))


def released_intervals(tree: Any, qs: np.ndarray, level: float, *, source: RandomSource, sims: int,
                       grid: int = 4096, pivot: TreePivot | None = None, rules: CalibrationRules = RULES
                       ) -> tuple[np.ndarray, np.ndarray]:
    """The interval ``RangeTree.quantile_ci`` and ``dptree.quantiles`` release for each level (first
    and last value): calibrated (:func:`calibrated_intervals`) when ``sims`` > 0, else the pivot
    interval with the high end after the last non-significant bucket; the maximum's (q = 1) high
    end at the domain's end either way (:data:`~dptree.rangetree.quantile_pivot.MAX_END`); widened
    to hold the point estimate's bucket."""
    pv = tree_pivot(tree, qs, level, grid=grid) if pivot is None else pivot
    if sims:
        scale, ends = calibrated_intervals(tree, qs, level, source=source, sims=sims, grid=grid, pivot=pv, rules=rules)
    else:
        scale, ends = None, tuple(MAX_END if q >= 1.0 else "last" for q in np.asarray(qs))
    return tree_intervals(tree, qs, level, grid=grid, scale=scale, pivot=pv, high=ends,
                          contain=tree.quantile_bucket(qs))


def _calibrate(tree: Any, qs: np.ndarray, level: float, source: RandomSource, sims: int, grid: int,
               pivot: TreePivot | None, rules: CalibrationRules, highs: tuple[str, ...]
               ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """{rule: factor per level} and {rule: mean simulated width per level at that factor}."""
    pv = tree_pivot(tree, qs, level, grid=grid) if pivot is None else pivot
    est, plan, D = tree._est, tree.plan, pv.size
    pos, val = plug_in_cdf(est.monotone_cdf())
    n_plug = float(val[-1])
    ones = {h: np.ones(len(qs)) for h in highs}
    if not n_plug > 0 or not pv.n_hat > 0:
        return ones, ones  # the released interval is the whole domain or the plug-in has no data
    plugs = tail_plug_ins(pos, val, est, pv.n_hat, D, pv.vN, rules) if rules.tail_plug_ins else [(pos, val)]
    err = est.simulated_cdf_errors(plan.noise_spec, plan.root_exact, sims, source, np.append(pv.idx + 1, D))
    n_sim = n_plug + err[:, -1]
    order = min(sims, math.ceil(level * (sims + 1))) - 1
    if rules.phase == "uniform":  # each simulation's phase, uniform on (0, 1]
        phases = [(uniform_below(source, PHASES, sims) + 1.0) / PHASES]
    else:  # the top of the bucket and just above its bottom, the larger factor kept
        phases = [np.ones(sims), np.full(sims, 1e-9)]
    floor = {h: -np.inf if rules.negative and h in ("last", MAX_END) else 0.0 for h in highs}
    out = {h: np.full(len(qs), floor[h]) for h in highs}
    width = {h: np.zeros(len(qs)) for h in highs}
    for i, q in enumerate(qs):
        g, _, half = pv.level(i)
        e = np.take(err, pv.cols[i], axis=1)  # C-ordered (err[:, cols] is not: every row scan would stride)
        t = q * n_plug
        simulated = []
        for (pos, val), u in ((plug, u) for plug in plugs for u in phases):
            s_i = float(np.interp(np.interp(t, val, pos), g, pv.sd(i)))  # the pivot's sd near the plug-in quantile
            kp, kv = straight_window(pos, val, t, rules.window * s_i, rules)
            y = float(np.interp(t, kv, kp)) if t > kv[0] else 0.0  # where the plug-in reaches q n
            # the truth shifted so that q n falls at fraction u of its bucket (u = 1: at the top, where
            # the low end is hardest to cover; u near 0: just above the bottom, the high end's hardest)
            shift = y - math.floor(y) - 1.0 + u
            truth = shifted_truth(g, shift, kp, kv)
            true_bucket = np.clip(np.ceil(y - shift), 0, D - 1).astype(np.int64)
            piv = pv.read_off(i, truth + e) - q * n_sim[:, None]  # the simulated releases read off like the release
            simulated.append(piv)
            for h in highs:
                c = critical_scales(g, piv, half, true_bucket, floor[h], h)
                c[n_sim <= 0] = 0.0
                out[h][i] = max(out[h][i], float(np.partition(c, order)[order]))
        if len(highs) > 1:
            for h in highs:
                ends = [interval_ends(g, piv, scaled(out[h][i], half), D, h) for piv in simulated]
                width[h][i] = float(np.mean([np.mean(b - a + 1) for a, b in ends]))
    return out, width
