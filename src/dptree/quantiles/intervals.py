"""Intervals for quantiles: the range tree's from its exact CDF band, the exponential-mechanism
methods' from the mechanism's utility tail (a stated bound, no data involved).

Tree (:func:`tree_intervals`). The q-quantile x* is the first bucket with F(x*) >= q n. The pivot
P(x) = F_hat(x) - q n_hat (both least-squares estimates from one release) has mean F(x) - q n and
the exact variance (1 - q) Var F_hat(x) + (q^2 - q) Var n_hat + q Var S_hat(x), S(x) = n - F(x) the
suffix count (from Cov(F_hat, n_hat) = (Var F_hat + Var n_hat - Var S_hat) / 2, three range
variances of the closed form). The interval runs from the first bucket where the pivot is
not significantly negative to the bucket after the last one where it is not significantly
positive, each test at the two-sided ``level`` multiplier of :mod:`dptree.estimation.intervals`:
the low end misses x* only if the test at x* errs, the high end only if the test at x* - 1 errs
(so one test per end, no multiple testing over the buckets near x*). It over-covers (an end fails
only when a run of correlated tests errs); :mod:`dptree.quantiles.calibration` chooses each level's
factor on the multiplier by simulating the release (``tree_intervals(..., scale=)``). For
comparison the pivot can be read off the isotonic fit of F_hat on each level's grid
(``tree_pivot(..., monotone=True)``, calibrated the same way; the interval at factor 0 is then a
point; not the default, docs/quantiles.md, "Coverage").
:meth:`dptree.rangetree.release.RangeTree.quantile_ci` inverts the band of F_hat alone at the
estimated total, ignoring n_hat's noise and its correlation with F_hat (docs/quantiles.md has the
coverage of both).

Exponential mechanism (:func:`~dptree.quantiles.approx.call_radius`). With probability >= 1 - t
one call returns a y with dist(q n, [#{x < y}, #{x <= y}]) <= (2 s / (b epsilon'))(ln |X| + ln(1 / t))
(McSherry & Talwar 2007's utility tail for P(y) ~ exp(epsilon' b u(y) / (2 s)), s the score's
sensitivity). A union bound over the m calls
(t = (1 - level) / m) gives a rank radius holding for all levels at once. Turned into values with
no extra budget (:func:`value_intervals`): on that event, when n is declared, an estimate y_j with
q_j n + r_j <= q_i n is below the true q_i-quantile and one with q_j n - r_j >= q_i n is above it.

JointExp (:func:`joint_radius`). One exponential mechanism over the C(|X| + m - 1, m) sorted
m-tuples, P(o) ~ exp(a u(o)), a = epsilon' / 4 (:mod:`dptree.quantiles.joint`): with probability
>= 1 - t, -u(o) <= -OPT + (ln C(|X| + m - 1, m) + ln(1 / t) + slack) / a, where slack = 4 m (rho + eta)
covers the sampler's float64 deviation from the exact law (its probabilities are within
exp(+-slack / 2) of the mechanism's). On data whose values are distinct, -OPT <= 2 m: the tuple
o_j = the (floor(q_j n) + 1)-th smallest record (the largest when q_j = 1) has |e_j| <= 1 for every
j, so the m + 1 terms sum to at most 1 + 2 (m - 1) + 1. Where the bound U = 2 m + (...) / a is within
psi's linear range C, every term is its distance, so sum_j |e_j - e_{j-1}| <= U and, the walk e
starting and ending at 0, |e_j| <= U / 2; the tie-aware rank error of o_j is at most |e_j| (its
rank r_j lies in [#{x < o_j}, #{x <= o_j}]). The radius U / 2 holds for all levels at once; past C,
or on data with ties (where -OPT has no public bound), it is not established.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dptree.quantiles.approx import Relation, call_radius, layer_epsilon, path_radii

__all__ = ["TreePivot", "tree_pivot", "pivot_ends", "tree_intervals", "value_intervals", "em_radii", "joint_radius",
           "release_radii"]


#: the read-off grid is refined to single buckets where the interval at up to this factor on the
#: multiplier can end (:func:`tree_pivot`): factors above it end on the coarse grid (widened, so wider)
FINE_FACTOR = 2.0
#: refined read-off points of all levels together at most (at least 64 per level)
FINE_POINTS = 1 << 16


@dataclass(frozen=True)
class TreePivot:
    """The pivot P(x) = F_hat(x) - q n_hat of every level on its read-off grid (module docstring):
    ``idx`` every read-off bucket (the coarse grid and each level's refined window), ``F`` F_hat
    there, ``n_hat``, ``vF``/``vS``/``vN`` the closed-form variances of F_hat(x), of the suffix
    count from x + 1 and of n_hat, ``mult`` the two-sided ``level`` multiplier at each bucket, and
    ``cols[i]`` the positions in ``idx`` of level i's grid."""

    idx: np.ndarray
    F: np.ndarray
    n_hat: float
    vF: np.ndarray
    vS: np.ndarray
    vN: float
    mult: np.ndarray
    size: int
    q: np.ndarray
    cols: tuple[np.ndarray, ...]
    #: read the pivot off the isotonic fit of F_hat on each level's grid (:func:`tree_pivot`)
    monotone: bool = False

    def sd(self, i: int) -> np.ndarray:
        """Level i's pivot standard deviation on its grid (positions ``cols[i]``)."""
        c, q = self.cols[i], float(self.q[i])
        return np.sqrt(np.maximum((1 - q) * self.vF[c] + (q * q - q) * self.vN + q * self.vS[c], 0.0))

    def level(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Level i's grid buckets, pivot values and half-widths at factor 1 (multiplier x sd)."""
        c = self.cols[i]
        F = self.read_off(i, self.F[c])
        return self.idx[c], F - float(self.q[i]) * self.n_hat, self.mult[c] * self.sd(i)

    def read_off(self, i: int, F: np.ndarray) -> np.ndarray:
        """CDF values ``F`` on level i's grid (a row, or one row per simulated release) as the pivot
        reads them: as they are, or (``monotone``) their isotonic fit, each grid point weighted by
        the buckets it stands for (so the fit does not depend on where the grid is refined)."""
        if not self.monotone:
            return F
        from scipy.optimize import isotonic_regression

        g = self.idx[self.cols[i]].astype(np.float64)
        w = np.gradient(g) if g.size > 1 else None
        if F.ndim == 1:
            return isotonic_regression(F, weights=w).x
        return np.array([isotonic_regression(r, weights=w).x for r in F]).reshape(F.shape)



def _pivot_parts(est: Any, idx: np.ndarray, D: int, level: float) -> tuple[np.ndarray, ...]:
    """F_hat, Var F_hat, Var of the suffix count and the multiplier at the buckets ``idx``."""
    zeros, none = np.zeros_like(idx), np.zeros(idx.shape, dtype=bool)
    F = est.counts(zeros, idx, none)
    vF = est.variances(zeros, idx, none)
    _, mult = est.spread(zeros, idx, none, level)
    suf_empty = idx + 1 > D - 1
    vS = est.variances(np.where(suf_empty, 0, idx + 1), np.full(idx.shape, D - 1), suf_empty)
    return F, vF, vS, np.broadcast_to(np.asarray(mult, dtype=np.float64), idx.shape)


def tree_pivot(tree: Any, qs: np.ndarray, level: float, *, grid: int = 4096, refine: bool = True,
               monotone: bool = False) -> TreePivot:
    """The pivot of each level of a :class:`~dptree.rangetree.release.RangeTree` (release estimates
    and closed-form variances only) on at most ``grid`` evenly spaced buckets, refined where the
    level's interval can end: the buckets between the ends of its pivot interval at
    :data:`FINE_FACTOR` times the multiplier on the coarse grid (where, at any factor up to that,
    its ends lie), every one of them when there are at most ``grid`` (else ``grid`` evenly spaced;
    at most :data:`FINE_POINTS` over all levels; ``refine=False``: the coarse grid alone, as before
    the refinement, for comparison). ``monotone``: each level's pivot is read off the isotonic fit
    of F_hat on its grid (an alternative read-off, measured in docs/quantiles.md, "Coverage")."""
    est, D = tree._est, tree.domain.size
    coarse = np.unique(np.linspace(0, D - 1, min(D, int(grid))).astype(np.int64))
    F, vF, vS, mult = _pivot_parts(est, coarse, D, level)
    whole = (np.array([0]), np.array([D - 1]), np.array([False]))
    n_hat, vN = float(est.counts(*whole)[0]), float(est.variances(*whole)[0])
    q = np.asarray(qs, dtype=np.float64)
    pv = TreePivot(coarse, F, n_hat, vF, vS, vN, mult, D, q, tuple(np.arange(coarse.size) for _ in q), monotone)
    if coarse.size == D or not n_hat > 0 or not refine:
        return pv  # every bucket is on the grid already, or the interval is the whole domain
    per = max(64, min(int(grid), FINE_POINTS // max(1, q.size)))
    grids = []
    for i in range(q.size):
        g, piv, half = pv.level(i)
        a, b = pivot_ends(g, piv, FINE_FACTOR * half, D)
        fine = np.arange(a, b + 1) if b - a + 1 <= per else np.linspace(a, b, per).astype(np.int64)
        grids.append(np.union1d(coarse[(coarse < a) | (coarse > b)], fine))
    idx = np.unique(np.concatenate(grids))
    F, vF, vS, mult = _pivot_parts(est, idx, D, level)
    return TreePivot(idx, F, n_hat, vF, vS, vN, mult, D, q, tuple(np.searchsorted(idx, g) for g in grids), monotone)


def pivot_ends(idx: np.ndarray, piv: np.ndarray, half: np.ndarray, size: int) -> tuple[int, int]:
    """The interval's first and last bucket from one level's pivot values ``piv`` and half-widths
    ``half`` (multiplier x sd) on the grid ``idx``: from the first grid bucket where the pivot is
    not significantly negative (widened to the grid point before it) to the bucket after the last
    one where it is not significantly positive; the whole domain where no bucket reaches the target."""
    up = np.flatnonzero(piv + half >= 0)
    if not up.size:
        return 0, size - 1
    j = int(up[0])
    low = int(idx[j - 1]) + 1 if j > 0 else int(idx[0])
    below = np.flatnonzero(piv - half < 0)  # buckets where F(x) >= q n is not established
    k = int(below[-1]) + 1 if below.size else 0
    high = int(idx[k]) if k < idx.size else size - 1
    return min(low, high), max(low, high)  # reversed only at a negative factor: the band's crossing


def tree_intervals(tree: Any, qs: np.ndarray, level: float, *, grid: int = 4096,
                   scale: np.ndarray | None = None, pivot: TreePivot | None = None,
                   contain: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The ``level`` interval of each q-quantile of a :class:`~dptree.rangetree.release.RangeTree`
    (bucket resolution, like its :meth:`quantile`), from the pivot F_hat(x) - q n_hat with its exact
    variance (module docstring). Read on the grid of :func:`tree_pivot` (every bucket near the ends
    where the domain has more than ``grid``), widened to the neighbouring grid points. ``scale[i]`` multiplies level i's multiplier (default 1: the pivot
    interval; :mod:`dptree.quantiles.calibration` chooses it by simulation). An estimated total
    <= 0 gives the whole domain. ``pivot``: :func:`tree_pivot`'s result for these arguments, if
    already computed. ``contain``: buckets each interval is widened to hold (the point estimates':
    :meth:`~dptree.rangetree.release.RangeTree.quantile_bucket`; at a negative factor the interval
    can otherwise miss its own estimate)."""
    pv = tree_pivot(tree, qs, level, grid=grid) if pivot is None else pivot
    sc = np.ones(len(qs)) if scale is None else np.asarray(scale, dtype=np.float64)
    low_leaf = np.zeros(len(qs), dtype=np.int64)
    high_leaf = np.full(len(qs), pv.size - 1, dtype=np.int64)
    if pv.n_hat > 0:
        for i in range(len(qs)):
            g, piv, half = pv.level(i)
            low_leaf[i], high_leaf[i] = pivot_ends(g, piv, sc[i] * half, pv.size)
    if contain is not None:
        low_leaf, high_leaf = np.minimum(low_leaf, contain), np.maximum(high_leaf, contain)
    dom = tree.domain
    return np.asarray(dom.leaf_start(low_leaf)), np.asarray(dom.leaf_end(high_leaf))


def value_intervals(qs: np.ndarray, estimates: list[Any], radii: np.ndarray, n: int | None,
                    lower: Any, upper: Any) -> tuple[list[Any], list[Any]]:
    """Value bounds from the other estimates, at no extra budget (module docstring): the largest
    estimate certainly below the q_i-quantile and the smallest certainly above it, on the event
    that every rank error is within its radius; the domain's ends otherwise (and without a
    declared ``n``)."""
    low, high = [lower] * len(qs), [upper] * len(qs)
    if n is None:
        return low, high
    for i, qi in enumerate(qs):
        for j, qj in enumerate(qs):
            if qj * n + radii[j] < qi * n:
                low[i] = max(low[i], estimates[j])
            if qj * n - radii[j] >= qi * n:
                high[i] = min(high[i], estimates[j])
    return low, high


def em_radii(method: str, qs: np.ndarray, *, size: int, epsilon: float, neighbors: str, level: float,
             dither: int = 1) -> np.ndarray:
    """The rank radius of each level's interval for an exponential-mechanism method (public: a
    function of the parameters only; :mod:`dptree.quantiles.intervals`). ``dither``: JointExp's
    dither factor K (:func:`dptree.quantiles.joint.dither_factor`): its mechanism runs on |X| K
    keys, and an output mapped back to floor(o / K) has a tie-aware rank error at most its key's
    (the value's rank interval contains the key's), so the radius is the one for |X| K points."""
    m, tail = qs.size, 1.0 - level
    rel: Relation = "replace" if neighbors == "replace" else "add_remove"
    if method == "approx":
        return path_radii(qs, size=size, epsilon_call=layer_epsilon(epsilon, m, rel), tail=tail, neighbors=rel)
    if method == "exponential":
        return np.array([call_radius(float(q), size=size, epsilon=epsilon / m, tail=tail / m, neighbors=rel)
                         for q in qs])
    if method == "joint":
        return np.full(m, joint_radius(m, size=size * dither, epsilon=epsilon, level=level))
    raise ValueError(f"no rank radius is derived for method {method!r}")


def release_radii(method: str, qs: np.ndarray, **kw: Any) -> list[float] | None:
    """The ``rank_radius`` a release carries: :func:`em_radii` as floats, None for the tree and where
    a radius is not established (JointExp past psi's linear range)."""
    if method == "tree":
        return None
    r = em_radii(method, qs, **kw)
    return [float(x) for x in r] if np.all(np.isfinite(r)) else None


def joint_radius(m: int, *, size: int, epsilon: float, level: float) -> float:
    """JointExp's rank radius for all m levels at once (module docstring; data with distinct
    values), or inf where the bound leaves psi's linear range. Public: parameters only."""
    from dptree.quantiles.joint import clamp_nats, float_slack

    slack, _ = float_slack(m, size, epsilon)
    a = (epsilon - slack) / 4.0
    log_tuples = math.lgamma(size + m) - math.lgamma(m + 1) - math.lgamma(size)
    bound = 2.0 * m + (log_tuples + math.log(1.0 / (1.0 - level)) + slack) / a
    return bound / 2.0 if bound <= clamp_nats(size) / a - 1.0 else math.inf
