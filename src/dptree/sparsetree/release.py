"""``SparseRangeTree``: the release of a sparse range tree and its queries (all post-processing).

Counts, threshold counts (CDF), histograms and quantiles over a 64-bit key domain, read off the
least-squares estimates of the measured nodes (:mod:`dptree.sparsetree.estimates`). Error bars:
the standard error is exact for the least-squares combination; the interval adds, where a query
point cuts a cell (an unexpanded node), the spread bound of
:meth:`~dptree.sparsetree.estimates.MeasuredTree.spread_bound` (the estimate assumes the cell's
records are spread uniformly over its keys). Quantile values are at key resolution inside a cell.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any, ClassVar, Mapping

import numpy as np

from dptree._validation import Interval, validate_params
from dptree.data.values import whole_from
from dptree.errors import InvalidParameterError
from dptree.estimation.intervals import LEVEL, gamma_shape, multiplier
from dptree.io.contract import CountRelease
from dptree.io.frames import result_frame
from dptree.privacy.boundary import Boundary
from dptree.rangetree.results import FLAG, HistogramResult, RangeQueries, quantile_levels
from dptree.sparsetree.document import sparse_document, sparse_parts
from dptree.sparsetree.estimates import MeasuredTree
from dptree.sparsetree.mechanism import Measurement
from dptree.sparsetree.plan import SparsePlan

__all__ = ["SparseRangeTree"]

_FLAG = FLAG


def _out(x: np.ndarray, like: Any) -> Any:
    return x[0] if np.ndim(like) == 0 else x


class SparseRangeTree(RangeQueries, CountRelease):
    """A private sparse range tree over a 64-bit key domain; every query costs no budget."""

    KIND: ClassVar[str] = "sparse_range_tree"
    PLOT: ClassVar[str | None] = "cdf"  # how plot() draws it (dptree.io.display)
    #: the measured node sets with their noisy counts, and what the released shape determines (its
    #: number of levels and so the counts' noise scales), are the only data-dependent fields
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "metadata", "metadata.*"),
        noisy=("measurements.levels", "measurements.counts", "measurements.depth", "measurements.noise_parameters",
               "measurements.total"),
    )

    def __init__(self, plan: SparsePlan, measurement: Measurement, statement: dict[str, Any],
                 metadata: dict[str, Any] | None = None) -> None:
        self.plan, self.domain, self.layout = plan, plan.domain, plan.layout
        self._measurement = measurement
        #: the released shape (per level, its node indices) and the count tree's noisy counts
        self.shape, self.nodes = measurement.shape, measurement.nodes
        #: privtree: H, the count tree's number of depths (it sets the counts' scale); levels: the
        #: deepest measured level (both functions of the released shape)
        self.depth = int(measurement.heights[0])
        self.privacy = statement
        self.metadata: dict[str, Any] = dict(metadata or {})
        self._tree = MeasuredTree(self.nodes, plan.variances(self.depth), plan.domain.size)

    @property
    def column(self) -> str | None:
        col = self.metadata.get("column")
        return None if col is None else str(col)

    @property
    def measured_nodes(self) -> int:
        """How many ranges were counted (public: a function of the released shape)."""
        return int(sum(nd.noisy.size for nd in self.nodes))

    # ------------------------------------------------------------------ linear queries
    def _prefix(self, end: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(cut cell, fraction of its keys in, fraction out, empty) of prefixes given as (last
        offset, empty)."""
        i, f, g = self._tree.locate(end[0])
        return i, np.where(end[1], 1.0, f), np.where(end[1], 0.0, g), end[1]

    def _ends(self, x: Any, *, inclusive: bool) -> tuple[np.ndarray, np.ndarray]:
        """(last offset, empty) of the prefixes {value <= x} (``inclusive``) or {value < x} (on an
        integer domain {value < ceil(x)}: a fractional x is not floored like a threshold point)."""
        if not inclusive and self.domain.kind == "integer":
            x = whole_from(x)
        off, below, above = self.domain.query_positions(x)
        last = np.uint64(self.domain.size - 1)
        if inclusive:
            return np.where(above, last, off), below
        empty = below | ((off == 0) & ~above)
        return np.where(above, last, np.where(empty, np.uint64(0), off - np.uint64(1))), empty

    def _estimate(self, terms: list[tuple[tuple[np.ndarray, np.ndarray], int]]) -> np.ndarray:
        """The estimate of sums of sign * prefix, without its error (cheap)."""
        return self._sum_prefixes([(*self._prefix(end), sign) for end, sign in terms])

    def _sum_prefixes(self, ends: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]]) -> np.ndarray:
        """Sum of sign * prefix over (cell, f, g, empty, sign) terms: the cumulative counts first,
        then the shares of the cut cells (:meth:`MeasuredTree.prefix_parts`)."""
        parts = [(sign, empty, *self._tree.prefix_parts(i, f, g)) for i, f, g, empty, sign in ends]
        base = sum(sign * np.where(empty, 0.0, b) for sign, empty, b, _ in parts)
        share = sum(sign * np.where(empty, 0.0, s) for sign, empty, _, s in parts)
        return np.asarray(base + share, dtype=np.float64)

    def _answer(self, terms: list[tuple[tuple[np.ndarray, np.ndarray], int]], level: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(estimate, stderr, ci_low, ci_high) of sums of sign * prefix, each prefix given as
        (last offset, empty): exact moments of the least-squares part, then the spread bound of
        every cut cell. Each output in the (broadcast) shape of the query points."""
        t = self._tree
        shape = np.shape(terms[0][0][0])
        ends = [(*self._prefix((np.ravel(end[0]), np.ravel(end[1]))), sign) for end, sign in terms]
        est = self._sum_prefixes(ends)
        v1, v2 = t.prefix_moments([(i, f, empty, sign) for i, f, _, empty, sign in ends])
        se = np.sqrt(np.maximum(v1, 0.0))
        m = multiplier("laplace", level, gamma_shape(v1, v2))
        low, high = est - m * se, est + m * se
        mc = multiplier("laplace", level, np.ones(1))
        for i, f, g, _, sign in ends:
            below, above = t.spread_bound(i, f, g, mc)
            low, high = (low - below, high + above) if sign > 0 else (low - above, high + below)
        return (np.reshape(np.asarray(est, dtype=np.float64), shape), np.reshape(se, shape), np.reshape(low, shape),
                np.reshape(high, shape))

    def _range_terms(self, lo: Any, hi: Any) -> list[tuple[tuple[np.ndarray, np.ndarray], int]]:
        qlo, qhi = self.domain.query_keys(lo), self.domain.query_keys(hi)  # a bad point says so itself
        try:
            klo, khi = np.broadcast_arrays(qlo, qhi)
        except ValueError:
            raise InvalidParameterError("lo and hi must have the same length (or one of them be a single value)") \
                from None
        if np.any(klo > khi):
            raise InvalidParameterError("count(lo, hi) needs lo <= hi")
        b, eb = self._ends(hi, inclusive=True)
        a, ea = self._ends(lo, inclusive=False)
        b, eb, a, ea = np.broadcast_arrays(b, eb, a, ea)
        return [((b, eb), 1), ((a, ea), -1)]

    def count(self, lo: Any, hi: Any) -> Any:
        """Estimated number of records with lo <= value <= hi (vectorised)."""
        return _out(self._estimate(self._range_terms(lo, hi)), lo if np.ndim(lo) else hi)

    def stderr(self, lo: Any, hi: Any) -> Any:
        """Exact standard error of :meth:`count`'s least-squares estimate (noise only)."""
        return _out(self._answer(self._range_terms(lo, hi), 0.95)[1], lo if np.ndim(lo) else hi)

    @validate_params({"level": LEVEL})
    def ci(self, lo: Any, hi: Any, level: float = 0.95) -> tuple[Any, Any]:
        """Interval for :meth:`count`: the variance-gamma multiplier of the exact error moments
        (Laplace noise), widened by the spread bound of any cell a query end cuts."""
        _, _, low, high = self._answer(self._range_terms(lo, hi), level)
        like = lo if np.ndim(lo) else hi
        return _out(low, like), _out(high, like)

    def total(self) -> float:
        """Estimated number of records (the sum of every cell inside the domain)."""
        return self._tree.total()

    def total_stderr(self) -> float:
        """Exact standard error of :meth:`total`."""
        return float(self._total(0.95)[1][0])

    @validate_params({"level": LEVEL})
    def total_ci(self, level: float = 0.95) -> tuple[float, float]:
        """Interval of :meth:`total` (as :meth:`ci`)."""
        _, _, low, high = self._total(level)
        return float(low[0]), float(high[0])

    def _total(self, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        end = (np.array([self.domain.size - 1], dtype=np.uint64), np.zeros(1, dtype=bool))
        return self._answer([(end, 1)], level)

    def json_value(self, v: Any) -> Any:
        """A domain value as a JSON-ready number (timestamps: ISO text)."""
        if self.domain.kind == "datetime":
            return str(np.datetime64(v, "ns"))
        return float(v) if self.domain.kind == "float" else int(v)

    # ------------------------------------------------------------------ thresholds and quantiles
    @validate_params({"normalize": _FLAG, "monotone": _FLAG})
    def cdf(self, x: Any, *, normalize: bool = False, monotone: bool = False) -> Any:
        """Threshold count #{records <= x}; a fraction with ``normalize``. ``monotone=True`` reads
        the quantiles' CDF: the isotonic fit of the cumulative counts at cell ends after the last
        depth's smoothing (:meth:`~dptree.sparsetree.estimates.MeasuredTree.smoothed_cells`),
        interpolated inside a cell; its error bars are not those of :meth:`cdf_ci`."""
        off, below = self._ends(x, inclusive=True)
        t = self._tree
        if monotone:
            i, f, _ = t.locate(off)
            F = np.concatenate([[0.0], t.monotone_cdf()])
            out = F[i] + f * (F[i + 1] - F[i])
            n = F[-1]
        else:
            out = t.prefix(off)
            n = t.total()
        out = np.where(below, 0.0, out)
        if normalize:
            out = out / n if n > 0 else np.zeros_like(out)
        return _out(out, x)

    def cdf_stderr(self, x: Any) -> Any:
        """Exact standard error of the (unnormalised, non-monotone) :meth:`cdf`."""
        return _out(self._answer([(self._ends(x, inclusive=True), 1)], 0.95)[1], x)

    @validate_params({"level": LEVEL})
    def cdf_ci(self, x: Any, level: float = 0.95) -> tuple[Any, Any]:
        """Interval of the (unnormalised, non-monotone) :meth:`cdf` (see :meth:`ci`)."""
        _, _, low, high = self._answer([(self._ends(x, inclusive=True), 1)], level)
        return _out(low, x), _out(high, x)

    def quantile(self, q: Any) -> Any:
        """The q-quantile(s): the point where the isotonic CDF reaches q * total, interpolated over
        the keys of the cell it falls in (uniform spread). The CDF is read off the cells after the
        empirical-Bayes smoothing of the count tree's last depth
        (:func:`~dptree.sparsetree.estimates.smooth_last_depth`: post-processing of the noisy
        counts; parents' estimates and the total unchanged). ``lower`` when the total is <= 0."""
        qa = quantile_levels(q)
        t = self._tree
        F = t.monotone_cdf()
        n = t.total()
        target = qa * n
        i = np.clip(np.searchsorted(F, target, side="left"), 0, F.size - 1)
        prev = np.where(i > 0, F[np.maximum(i - 1, 0)], 0.0)
        step = F[i] - prev
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.clip(np.where(step > 0, (target - prev) / step, 0.0), 0.0, 1.0)
        within = np.floor(frac * t.cell_width[i])  # keys before the point, clipped to the cell exactly
        span = t.cell_last[i] - t.cell_start[i]
        fits = within < 2.0**64
        off = t.cell_start[i] + np.where(fits, np.minimum(np.where(fits, within, 0.0).astype(np.uint64), span), span)
        if n <= 0:
            off = np.zeros_like(off)
        out = self.domain.values_at(off)
        return out[0] if np.ndim(q) == 0 else out

    @validate_params({"level": LEVEL, "grid": [Interval(Integral, 2, None, hint="e.g. grid=256")]})
    def quantile_ci(self, q: Any, level: float = 0.95, *, grid: int = 256) -> tuple[Any, Any]:
        """An approximate interval for each q-quantile: the points where the upper and lower
        ``level`` bands of :meth:`cdf_ci` (at ``grid`` evenly spaced cell ends) reach q * total,
        widened to the neighbouring grid points (the total's own noise is ignored)."""
        qa = quantile_levels(q)
        t = self._tree
        C = t.cell_est.size
        ends = np.unique(np.linspace(0, C - 1, min(C, int(grid))).astype(np.int64))
        last = t.cell_last[ends]
        lo_band, hi_band = self.cdf_ci(self.domain.values_at(last), level)
        lo_band, hi_band = np.atleast_1d(lo_band), np.atleast_1d(hi_band)
        n = t.total()
        low = np.zeros(qa.size, dtype=np.uint64)
        high = np.full(qa.size, np.uint64(self.domain.size - 1))
        for k, target in enumerate(qa * n):
            first_hi = np.flatnonzero(hi_band >= target)
            if n <= 0 or not first_hi.size:
                continue
            j = int(first_hi[0])
            low[k] = last[j - 1] + np.uint64(1) if j > 0 else np.uint64(0)
            first_lo = np.flatnonzero(lo_band >= target)
            if first_lo.size:
                high[k] = last[int(first_lo[0])]
        lv, hv = self.domain.values_at(low), self.domain.values_at(high)
        return (lv[0], hv[0]) if np.ndim(q) == 0 else (lv, hv)

    @validate_params({"level": LEVEL})
    def histogram(self, edges: Any, level: float = 0.95) -> HistogramResult:
        """Counts of the bins [edges[i], edges[i+1]) (last bin closed), with standard errors and
        intervals (as :meth:`ci`)."""
        try:
            e = np.asarray(edges)
        except (TypeError, ValueError) as exc:
            raise InvalidParameterError(f"histogram edges must be a flat list of values: {exc}") from exc
        if e.ndim != 1 or e.size < 2 or e.dtype.kind == "b":
            raise InvalidParameterError("histogram needs at least two edges, values of the domain")
        keys = self.domain.query_keys(e)
        if np.any(keys[1:] <= keys[:-1]):
            raise InvalidParameterError("histogram edges must be strictly increasing")
        excl, empty = self._ends(e, inclusive=False)
        last, last_empty = self._ends(e[-1:], inclusive=True)
        hi = (np.concatenate([excl[1:-1], last]), np.concatenate([empty[1:-1], last_empty]))
        est, se, low, high = self._answer([(hi, 1), ((excl[:-1], empty[:-1]), -1)], level)
        return HistogramResult(edges=e, counts=est, stderr=se, ci_low=low, ci_high=high, level=level,
                               privacy=self.privacy, column=self.column)

    # ------------------------------------------------------------------ the release contract
    @validate_params({"level": LEVEL})
    def to_frame(self, level: float = 0.95) -> Any:
        """One row per cell (unexpanded measured node inside the domain): cell_low, cell_high (its
        first and last value), depth, estimate, stderr and ``level`` interval of its count."""
        t = self._tree
        last = t.cell_last
        est = t.cell_est
        idx = np.arange(est.size)
        sd = t.cell_sd(idx)
        m = multiplier("laplace", level, np.ones(est.size))
        return result_frame({"cell_low": self.domain.values_at(t.cell_start), "cell_high": self.domain.values_at(last),
                             "depth": t.cell_depth}, estimate=est, stderr=sd, ci=(est - m * sd, est + m * sd),
                            level=level)

    def to_document(self) -> dict[str, Any]:
        """The parts of the release file (:mod:`dptree.sparsetree.document`)."""
        return sparse_document(self.plan, self._measurement, self.privacy, self.metadata)

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> SparseRangeTree:
        """Rebuild from a validated file document, re-deriving and checking its noise and measured sets."""
        plan, measurement, privacy, metadata = sparse_parts(doc)
        return cls(plan=plan, measurement=measurement, statement=privacy, metadata=metadata)

    def summary(self) -> str:
        lo, hi = self.domain.bounds
        col = f"of {self.column!r} " if self.column else ""
        eps = self.privacy["budget_spent"]["epsilon"]
        return (f"SparseRangeTree {col}over [{lo}, {hi}] ({self.domain.key_kind}, 2^{self.domain.bits} keys), "
                f"{self.layout.branching}-ary, {self.plan.method}, {self.depth} levels, {self.measured_nodes} measured "
                f"nodes, add_remove neighbors, "
                f"epsilon={eps:g}{'' if self.private else ', NOT PRIVATE (test seed)'}")
