"""Confidence intervals for the quantiles of a range-tree release: the pivot interval.

The q-quantile x* is the first bucket with F(x*) >= q n. The pivot
P(x) = F_hat(x) - q n_hat (both least-squares estimates from one release) has mean F(x) - q n and
the exact variance (1 - q) Var F_hat(x) + (q^2 - q) Var n_hat + q Var S_hat(x), S(x) = n - F(x) the
suffix count (from Cov(F_hat, n_hat) = (Var F_hat + Var n_hat - Var S_hat) / 2, three range
variances of the closed form). The interval runs from the first bucket where the pivot is
not significantly negative to the bucket after the last one where it is not significantly
positive, each test at the two-sided ``level`` multiplier of :mod:`dptree.estimation.intervals`:
the low end misses x* only if the test at x* errs, the high end only if the test at x* - 1 errs
(so one test per end, no multiple testing over the buckets near x*). It over-covers (an end fails
only when a run of correlated tests errs); :mod:`dptree.rangetree.quantile_calibration` chooses each level's
factor on the multiplier by simulating the release (``tree_intervals(..., scale=)``), and with it
where to read the high end (``high=``, :data:`HIGH_ENDS`): after the last bucket where the pivot
is not significantly positive, or at the first where it is (repeated tests, which only a
calibrated factor makes sound; far narrower in an empty tail); the maximum's (q = 1) at the
domain's end (:data:`MAX_END`). For
comparison the pivot can be read off the isotonic fit of F_hat on each level's grid
(``tree_pivot(..., monotone=True)``, calibrated the same way; the interval at factor 0 is then a
point; not the default, docs/notes/quantiles.md, "Coverage").
Both :meth:`dptree.rangetree.release.RangeTree.quantile_ci` and :func:`dptree.quantiles` give
these intervals (docs/notes/quantiles.md has their coverage).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

__all__ = ["TreePivot", "tree_pivot", "pivot_ends", "interval_ends", "tree_intervals", "scaled", "HIGH_ENDS",
           "MAX_END", "FINE_FACTOR", "FINE_POINTS"]


#: where an interval's high end is read (:func:`interval_ends`): after the last bucket where the pivot
#: is not significantly positive, or at the first where it is
HIGH_ENDS: tuple[str, ...] = ("last", "first")
#: the high end of the maximum's interval (q = 1): the domain's end, always. No release bounds the
#: maximum from above: one record may sit anywhere, and its count is within the noise
MAX_END = "end"
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
    at most :data:`FINE_POINTS` over all levels; ``refine=False``: the coarse grid alone,
    for comparison). ``monotone``: each level's pivot is read off the isotonic fit
    of F_hat on its grid (an alternative read-off, measured in docs/notes/quantiles.md, "Coverage")."""
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


def scaled(factor: float, half: np.ndarray) -> np.ndarray:
    """The half-widths at ``factor``: ``factor * half``, 0 where ``half`` is 0 (the last bucket at
    q = 1, where the pivot has no noise) even at an infinite factor (the calibration's factor when
    every simulated interval covers at any factor), so that no bucket's test is undefined."""
    with np.errstate(invalid="ignore"):
        return np.where(half > 0, factor * half, 0.0)


def pivot_ends(idx: np.ndarray, piv: np.ndarray, half: np.ndarray, size: int, high: str = "last"
               ) -> tuple[int, int]:
    """The interval's first and last bucket from one level's pivot values ``piv`` and half-widths
    ``half`` (multiplier x sd) on the grid ``idx`` (:func:`interval_ends` for one release)."""
    lo, hi = interval_ends(idx, np.asarray(piv)[None, :], half, size, high)
    return int(lo[0]), int(hi[0])


def interval_ends(idx: np.ndarray, piv: np.ndarray, half: np.ndarray, size: int, high: str = "last"
                  ) -> tuple[np.ndarray, np.ndarray]:
    """First and last bucket of the interval of each row of pivot values ``piv`` (releases x grid)
    with half-widths ``half`` on the grid ``idx``: from the first grid bucket where the pivot is
    not significantly negative (widened to the grid point before it) to, with ``high="last"``, the
    bucket after the last one where it is not significantly positive, or with ``high="first"``, the
    first bucket where it is significantly positive (:data:`HIGH_ENDS`), or with ``high="end"`` the
    domain's last bucket (:data:`MAX_END`); the whole domain where no
    bucket reaches the target. A reversed pair (only at a negative factor) is returned in order."""
    m = idx.size
    up = piv + half >= 0
    j = np.argmax(up, axis=1)
    low = np.where(j > 0, idx[np.maximum(j - 1, 0)] + 1, idx[0])
    if high == MAX_END:
        hi = np.full(piv.shape[0], size - 1)
    elif high == "first":
        above = piv - half >= 0  # buckets where F(x) >= q n is established
        hi = np.where(above.any(axis=1), idx[np.argmax(above, axis=1)], size - 1)
    else:
        below = piv - half < 0  # buckets where F(x) >= q n is not established
        k = np.where(below.any(axis=1), m - np.argmax(below[:, ::-1], axis=1), 0)
        hi = np.where(k < m, idx[np.minimum(k, m - 1)], size - 1)
    reached = up.any(axis=1)
    return (np.where(reached, np.minimum(low, hi), 0).astype(np.int64),
            np.where(reached, np.maximum(low, hi), size - 1).astype(np.int64))


def tree_intervals(tree: Any, qs: np.ndarray, level: float, *, grid: int = 4096,
                   scale: np.ndarray | None = None, pivot: TreePivot | None = None,
                   contain: np.ndarray | None = None, high: str | Sequence[str] = "last"
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The ``level`` interval of each q-quantile of a :class:`~dptree.rangetree.release.RangeTree`
    (bucket resolution, like its :meth:`quantile`), from the pivot F_hat(x) - q n_hat with its exact
    variance (module docstring). Read on the grid of :func:`tree_pivot` (every bucket near the ends
    where the domain has more than ``grid``), widened to the neighbouring grid points. ``scale[i]`` multiplies level i's multiplier (default 1: the pivot
    interval; :mod:`dptree.rangetree.quantile_calibration` chooses it by simulation). An estimated total
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
            low_leaf[i], high_leaf[i] = pivot_ends(g, piv, scaled(sc[i], half), pv.size,
                                                   high if isinstance(high, str) else high[i])
    if contain is not None:
        low_leaf, high_leaf = np.minimum(low_leaf, contain), np.maximum(high_leaf, contain)
    dom = tree.domain
    return np.asarray(dom.leaf_start(low_leaf)), np.asarray(dom.leaf_end(high_leaf))
