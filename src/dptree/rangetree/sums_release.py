"""A range tree with sums: every range count, and every range's sum and mean of a weight.

:class:`RangeSums` is a :class:`~dptree.rangetree.release.RangeTree` (the count tree's answers,
unchanged) with a second tree of the same layout that measured the sums of the weights in units of
a public grid (:mod:`dptree.rangetree.sums`). Both trees are estimated by least squares (Honaker
2015) with exact variances. ``sum(lo, hi)`` is the sum tree's range estimate; its standard error
is the exact least-squares one and its interval that of a count (variance-gamma multiplier for
Laplace noise, :mod:`dptree.estimation.intervals`). ``mean(lo, hi)`` is S / N. Its interval is
Fieller's (Fieller 1954): the theta with |S - theta N| <= z sqrt(Var S + theta^2 Var N) (the two
trees' noises are independent, so S - theta N has that exact variance at the true mean), z the
multiplier of S - theta N's exact noise moments at theta = S / N; it is intersected with the
weight bounds, where every mean lies, and is the whole bounds when N is not significantly
positive. ``mean_stderr`` is the delta method's sqrt(Var S + m^2 Var N) / N. Everything is
post-processing of the two trees' noisy node values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

import numpy as np

from dptree import noise as _noise
from dptree._validation import validate_params
from dptree.errors import ReleaseFileError
from dptree.estimation.intervals import LEVEL, gamma_shape, multiplier, symmetric_interval
from dptree.estimation.least_squares import range_error_moments
from dptree.io.release_file import check_metadata, creation_metadata
from dptree.privacy.boundary import Boundary
from dptree.privacy.budget import Budget
from dptree.privacy.statement import check_statement
from dptree.privacy.unit import PrivacyUnit, privacy_values
from dptree.rangetree.document import checked_levels, domain_inputs, range_tree_document
from dptree.rangetree.estimates import LeafEstimates
from dptree.rangetree.release import HistogramResult, RangeTree
from dptree.rangetree.sums import SumTreePlan, build_sum_plan

__all__ = ["RangeSums", "RangeSumsPlan", "SumsHistogramResult", "plan_range_sums"]


def _scalar_or_array(x: np.ndarray, like: Any) -> Any:
    return float(x[0]) if np.ndim(like) == 0 else x


@dataclass(frozen=True)
class SumsHistogramResult(HistogramResult):
    """:class:`HistogramResult` of the counts, with each bin's sum and mean of the weights, their
    standard errors and ``level`` intervals (as :meth:`RangeSums.sum_ci` and :meth:`RangeSums.mean_ci`)."""

    sums: np.ndarray = field(kw_only=True)
    sum_stderr: np.ndarray = field(kw_only=True)
    sum_ci: tuple[np.ndarray, np.ndarray] = field(kw_only=True)
    means: np.ndarray = field(kw_only=True)
    mean_stderr: np.ndarray = field(kw_only=True)
    mean_ci: tuple[np.ndarray, np.ndarray] = field(kw_only=True)

    def to_frame(self) -> Any:
        """One row per bin: the counts' columns, then sum, sum_stderr, sum_ci_low, sum_ci_high,
        mean, mean_stderr, mean_ci_low, mean_ci_high."""
        frame = super().to_frame()
        for name, col in _columns(self.sums, self.sum_stderr, self.sum_ci, self.means, self.mean_stderr,
                                  self.mean_ci).items():
            frame[name] = col
        return frame


def _columns(s: Any, s_se: Any, s_ci: Any, m: Any, m_se: Any, m_ci: Any) -> dict[str, Any]:
    return {"sum": s, "sum_stderr": s_se, "sum_ci_low": s_ci[0], "sum_ci_high": s_ci[1], "mean": m,
            "mean_stderr": m_se, "mean_ci_low": m_ci[0], "mean_ci_high": m_ci[1]}


class RangeSums(RangeTree):
    """A private range tree with sums (module docstring). Counts, CDFs, quantiles and histograms
    come from the count tree as in :class:`RangeTree`; sums and means of the weights from both trees.
    All queries are post-processing and cost no budget. Sums and means are in the weight's unit,
    of the weights as read on the public grid (rounded to ``weight_resolution`` and clamped to
    ``weight_bounds``: ``release.weight_bounds``)."""

    KIND: ClassVar[str] = "range_sums"
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "measurements.noise_parameters", "measurements.sum_noise_parameters",
                "metadata", "metadata.*"),
        noisy=("measurements.levels", "measurements.sum_levels"),
    )

    def __new__(cls, *args: Any, **kwargs: Any) -> RangeSums:
        return object.__new__(cls)

    def __init__(self, plan: SumTreePlan, counts: list[np.ndarray | None], sums: list[np.ndarray | None],
                 statement: dict[str, Any], metadata: dict[str, Any] | None = None, *,
                 weights: str | None = None) -> None:
        super().__init__(plan.counts, counts, statement, metadata)
        #: the name of the weight column, when the caller gave one (public)
        self.weights = weights
        self.sum_plan, self.sum_measurements, self.grid = plan, sums, plan.grid
        p = plan.sums
        self._sum_est = LeafEstimates(p.layout, p.domain.size, p.noise, p.level_variance, sums)

    @property
    def weight_bounds(self) -> tuple[float, float]:
        """The public bounds every weight was clamped to."""
        return float(self.grid.lower), float(self.grid.upper)

    # ------------------------------------------------------------------ sums
    def sum(self, lo: Any, hi: Any) -> Any:
        """Estimated sum of the weights of the records with lo <= value <= hi (vectorised)."""
        a, b, e = self._leaf_range(lo, hi)
        return _scalar_or_array(self.grid.value(self._sum_est.counts(a, b, e)), lo if np.ndim(lo) else hi)

    def sum_stderr(self, lo: Any, hi: Any) -> Any:
        """Exact standard error of :meth:`sum` (least squares, Honaker 2015)."""
        a, b, e = self._leaf_range(lo, hi)
        return _scalar_or_array(self.grid.value(np.sqrt(self._sum_est.variances(a, b, e))), lo if np.ndim(lo) else hi)

    @validate_params({"level": LEVEL})
    def sum_ci(self, lo: Any, hi: Any, level: float = 0.95) -> tuple[Any, Any]:
        """``level`` interval of :meth:`sum`: sum -+ m * stderr, m as :meth:`RangeTree.ci`'s."""
        a, b, e = self._leaf_range(lo, hi)
        low, high = self._sum_interval(a, b, e, level)
        like = lo if np.ndim(lo) else hi
        return _scalar_or_array(low, like), _scalar_or_array(high, like)

    def _sum_interval(self, a: np.ndarray, b: np.ndarray, e: np.ndarray, level: float) -> tuple[Any, Any]:
        s, m = self._sum_est.spread(a, b, e, level)
        low, high = symmetric_interval(self._sum_est.counts(a, b, e), s, m)
        return self.grid.value(low), self.grid.value(high)

    # ------------------------------------------------------------------ means
    def _mean_parts(self, a: np.ndarray, b: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, ...]:
        """(S, N, Var S, Var N) of the leaf ranges, S and Var S in units."""
        return (self._sum_est.counts(a, b, e), self._est.counts(a, b, e), self._sum_est.variances(a, b, e),
                self._est.variances(a, b, e))

    def _mean_units(self, S: np.ndarray, N: np.ndarray) -> np.ndarray:
        """S / N clamped to the weight bounds (where every mean lies); the bounds' midpoint where
        N <= 0 (no estimate of the count)."""
        lo, hi = self.grid.lower_units, self.grid.upper_units
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(N > 0, S / np.where(N > 0, N, 1.0), (lo + hi) / 2)
        return np.clip(r, lo, hi)

    def mean(self, lo: Any, hi: Any) -> Any:
        """Estimated mean weight of the records with lo <= value <= hi: sum / count, clamped to the
        weight bounds; the bounds' midpoint where the estimated count is <= 0 (vectorised)."""
        a, b, e = self._leaf_range(lo, hi)
        S, N, _, _ = self._mean_parts(a, b, e)
        return _scalar_or_array(self.grid.value(self._mean_units(S, N)), lo if np.ndim(lo) else hi)

    def mean_stderr(self, lo: Any, hi: Any) -> Any:
        """Delta-method standard error of :meth:`mean`, sqrt(Var S + mean^2 Var N) / N from the
        exact variances (inf where the estimated count is <= 0)."""
        a, b, e = self._leaf_range(lo, hi)
        S, N, vS, vN = self._mean_parts(a, b, e)
        m = self._mean_units(S, N)
        with np.errstate(divide="ignore", invalid="ignore"):
            se = np.where(N > 0, np.sqrt(vS + m * m * vN) / np.where(N > 0, N, 1.0), np.inf)
        return _scalar_or_array(self.grid.value(se), lo if np.ndim(lo) else hi)

    @validate_params({"level": LEVEL})
    def mean_ci(self, lo: Any, hi: Any, level: float = 0.95) -> tuple[Any, Any]:
        """Fieller's ``level`` interval for the mean (module docstring), within the weight bounds."""
        a, b, e = self._leaf_range(lo, hi)
        low, high = self._mean_interval(a, b, e, level)
        like = lo if np.ndim(lo) else hi
        return _scalar_or_array(low, like), _scalar_or_array(high, like)

    def _mean_interval(self, a: np.ndarray, b: np.ndarray, e: np.ndarray, level: float) -> tuple[Any, Any]:
        S, N, vS, vN = self._mean_parts(a, b, e)
        theta = self._mean_units(S, N)
        if self.plan.noise == "gaussian":
            z = multiplier("gaussian", level, a)
        else:  # the matched gamma shape of S - theta N's noise (independent trees: moments add)
            s1, s2 = range_error_moments(self.layout.fanouts, self.sum_plan.sums.level_variance, a, b)
            c1, c2 = range_error_moments(self.layout.fanouts, self.plan.level_variance, a, b)
            t2 = theta * theta
            z = multiplier("laplace", level, gamma_shape(s1 + t2 * c1, s2 + t2 * t2 * c2))
        lo_u, hi_u = float(self.grid.lower_units), float(self.grid.upper_units)
        A = N * N - z * z * vN
        B = S * N
        C = S * S - z * z * vS
        disc = B * B - A * C
        bounded = (A > 0) & (disc >= 0) & ~e
        with np.errstate(divide="ignore", invalid="ignore"):
            root = np.sqrt(np.where(bounded, disc, 0.0))
            low = np.where(bounded, (B - root) / np.where(bounded, A, 1.0), lo_u)
            high = np.where(bounded, (B + root) / np.where(bounded, A, 1.0), hi_u)
        return self.grid.value(np.clip(low, lo_u, hi_u)), self.grid.value(np.clip(high, lo_u, hi_u))

    # ------------------------------------------------------------------ tables
    @validate_params({"level": LEVEL})
    def histogram(self, edges: Any, level: float = 0.95) -> SumsHistogramResult:
        """:meth:`RangeTree.histogram` with each bin's sum and mean (:class:`SumsHistogramResult`)."""
        counts = super().histogram(edges, level)
        _, a, b, e = self._bins(edges)
        return SumsHistogramResult(edges=counts.edges, counts=counts.counts, stderr=counts.stderr,
                                   ci_low=counts.ci_low, ci_high=counts.ci_high, level=level, privacy=self.privacy,
                                   column=self.column, **self._sum_mean(a, b, e, level))

    def _sum_mean(self, a: np.ndarray, b: np.ndarray, e: np.ndarray, level: float) -> dict[str, Any]:
        S, N, vS, vN = self._mean_parts(a, b, e)
        m = self._mean_units(S, N)
        with np.errstate(divide="ignore", invalid="ignore"):
            m_se = np.where(N > 0, np.sqrt(vS + m * m * vN) / np.where(N > 0, N, 1.0), np.inf)
        v = self.grid.value
        return {"sums": v(S), "sum_stderr": v(np.sqrt(vS)), "sum_ci": self._sum_interval(a, b, e, level),
                "means": v(m), "mean_stderr": v(m_se), "mean_ci": self._mean_interval(a, b, e, level)}

    @validate_params({"level": LEVEL})
    def to_frame(self, level: float = 0.95) -> Any:
        """:meth:`RangeTree.to_frame` (one row per bucket) with the columns of
        :meth:`SumsHistogramResult.to_frame`."""
        frame = super().to_frame(level)
        a = np.arange(self.domain.size)
        parts = self._sum_mean(a, a, np.zeros(a.size, dtype=bool), level)
        for name, col in _columns(parts["sums"], parts["sum_stderr"], parts["sum_ci"], parts["means"],
                                  parts["mean_stderr"], parts["mean_ci"]).items():
            frame[name] = col
        return frame

    # ------------------------------------------------------------------ the release contract
    def to_document(self) -> dict[str, Any]:
        """The count tree's file parts (:func:`~dptree.rangetree.document.range_tree_document`) with
        the whole budget, the weight grid and split, and the sum tree's noisy values and noise."""
        doc = range_tree_document(self.plan, self.measurements, self.privacy, self.metadata)
        b = self.sum_plan.budget
        doc["parameters"]["budget"] = {"epsilon": b.epsilon, "delta": b.delta, "rho": b.rho}
        doc["parameters"]["weights"] = {**self.grid.to_dict(), "sum_share": float(self.sum_plan.share),
                                        "column": self.weights}
        doc["parameters"].pop("gaussian_calibration", None)
        doc["measurements"]["sum_levels"] = [None if m is None else [int(v) for v in m] for m in self.sum_measurements]
        doc["measurements"]["sum_noise_parameters"] = [
            None if p is None else f"{p.numerator}/{p.denominator}" for p in self.sum_plan.sums.noise_parameters]
        return doc

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> RangeSums:
        """Re-plan from the file's parameters (:func:`~dptree.rangetree.sums.plan_range_sums`) and
        refuse a file whose noise, layout or statement differ from what the plan derives."""
        params, meas = doc["parameters"], doc["measurements"]
        lower, upper, width = domain_inputs(params)
        budget, weights = params["budget"], params["weights"]
        plan = plan_range_sums(lower=lower, upper=upper, width=width, branching=params["branching"],
                               epsilon=budget["epsilon"], delta=budget["delta"] or 0.0, rho=budget["rho"],
                               noise=params["noise"], neighbors=params["neighbors"],
                               max_contributions=params["max_contributions"], levels=params["levels"],
                               weight_bounds=tuple(weights["bounds"]), weight_resolution=weights["resolution"],
                               sum_share=weights["sum_share"])
        if plan.domain.size != params["domain"]["size"] or list(plan.layout.fanouts) != list(params["fanouts"]):
            raise ReleaseFileError("release file: domain or tree layout does not match its parameters")
        for key, tree in (("noise_parameters", plan.counts), ("sum_noise_parameters", plan.sums)):
            if meas[key] != [None if p is None else f"{p.numerator}/{p.denominator}" for p in tree.noise_parameters]:
                raise ReleaseFileError("release file: noise parameters do not match the stated budget (tampered?)")
        raw = doc["privacy"]
        if not isinstance(raw, Mapping) or not isinstance(raw.get("private"), bool):
            raise ReleaseFileError("release file: privacy statement lacks the 'private' flag")
        privacy = check_statement(raw, plan.statement, kind=cls.KIND)
        name = weights.get("column")
        if name is not None and not isinstance(name, str):
            raise ReleaseFileError("release file: the weight column's name must be text")
        return cls(plan, checked_levels(plan.counts, meas["levels"]), checked_levels(plan.sums, meas["sum_levels"]),
                   privacy, check_metadata(doc.get("metadata")), weights=name)

    def summary(self) -> str:
        """:meth:`RangeTree.summary` with the weights and their bounds."""
        lo, hi = self.weight_bounds
        what = repr(self.weights) if self.weights else "weights"
        return (super().summary().replace("RangeTree", "RangeSums", 1)
                + f"; sums of {what} clamped to [{lo:g}, {hi:g}], sum tree share {float(self.sum_plan.share):g}")


@dataclass
class RangeSumsPlan(SumTreePlan):
    """The plan of a range tree with sums (:class:`~dptree.rangetree.sums.SumTreePlan`) with its
    one private step, :meth:`release`."""

    def release(self, leaf_counts: np.ndarray, leaf_sums: np.ndarray, rng: _noise.RngLike = None, *,
                column: Any = None, weights: Any = None, source: Any = None, created: str | None = None) -> Any:
        """Measure both trees (:meth:`TreePlan.measure`, one random source) and estimate them: a
        :class:`RangeSums`. ``leaf_sums``: the exact sums in units
        (:func:`dptree.data.histograms.leaf_sums`). ``column`` and ``weights`` (names), ``source``
        and ``created`` go to the public metadata."""
        src = _noise.make_source(rng)
        counted = self.counts.measure(leaf_counts, src)
        summed = self.sums.measure(leaf_sums, src)
        stated = dict(self.statement)
        stated["private"] = bool(src.private)
        meta = creation_metadata(column=column, source=source, created=created)
        return RangeSums(self, counted, summed, stated, meta, weights=weights if isinstance(weights, str) else None)


@privacy_values
def plan_range_sums(*, lower: Any, upper: Any, weight_bounds: Any, weight_resolution: Any = 1,
                    sum_share: float | None = None, epsilon: float | None = None, delta: float = 0.0,
                    rho: float | None = None, width: Any = None, branching: int | None = None,
                    noise: str = "laplace", neighbors: str = "add_remove", max_contributions: int = 1,
                    levels: str = "uniform", unit: PrivacyUnit | None = None,
                    budget: Budget | None = None) -> RangeSumsPlan:
    """Validate public parameters and plan a range tree with sums
    (:func:`~dptree.rangetree.sums.build_sum_plan`: the parameters of :func:`dptree.plan_range_tree`
    with ``weight_bounds=(lower, upper)``, ``weight_resolution`` and ``sum_share``); no data is read.
    Its ``release(leaf_counts, leaf_sums, rng)`` takes :func:`dptree.data.histograms.leaf_sums`."""
    return build_sum_plan(RangeSumsPlan, lower=lower, upper=upper, weight_bounds=weight_bounds,
                          weight_resolution=weight_resolution, sum_share=sum_share, epsilon=epsilon, delta=delta,
                          rho=rho, width=width, branching=branching, noise=noise, neighbors=neighbors,
                          max_contributions=max_contributions, levels=levels)
