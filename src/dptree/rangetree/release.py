"""Range trees: one private release that answers every range count, CDF value, histogram and quantile.

The mechanism (Smith & Ullman 2021; Honaker 2015): build a b-ary tree over the leaf buckets of a public ordered
domain, add exact discrete noise to the count of every node of every measured level, and
estimate all counts by generalised least squares (Honaker 2015). Every answer
is post-processing of the noisy node counts and comes with its exact standard error.

The stages, one module each: :mod:`~dptree.rangetree.plan` (public parameters -> per-level noise,
privacy statement; the noise step), this module's :class:`RangeTreePlan` (that plan with its
release), :mod:`~dptree.rangetree.calibration` (sensitivities and the
budget per level, with the privacy argument), :mod:`~dptree.rangetree.estimates` (least squares
and exact errors), this module (:class:`RangeTree`: the queries), :mod:`~dptree.rangetree.results`
(multi-row results) and :mod:`~dptree.rangetree.document` (the release file).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from numbers import Integral
from typing import Any, ClassVar, Mapping

import numpy as np

from dptree._validation import Interval, Options, validate_params
from dptree.data.dates import NS_RANGE, date_query_array
from dptree.errors import InvalidParameterError
from dptree.estimation.intervals import LEVEL, symmetric_interval
from dptree.io.contract import CountRelease
from dptree.io.frames import result_frame
from dptree.io.release_file import creation_metadata
from dptree.noise import RngLike, make_source
from dptree.noise.sources import SIMULATION_RNG
from dptree.privacy.boundary import Boundary
from dptree.rangetree.calibration import level_sensitivities
from dptree.rangetree.document import range_tree_document, range_tree_parts
from dptree.rangetree.estimates import LeafEstimates
from dptree.rangetree.plan import TreePlan
from dptree.rangetree.quantile_calibration import INTERVALS, calibration_sims, released_intervals
from dptree.rangetree.results import FLAG, Answers, HistogramResult, QuantileResult, RangeQueries, quantile_levels

__all__ = [
    "RangeTree",
    "RangeTreePlan",
    "plan_range_tree",
    "PrivateBoundsRangeTree",
    "PrivateContributionsRangeTree",
    # defined in calibration.py and results.py; importable from here too
    "HistogramResult",
    "QuantileResult",
    "Answers",
    "level_sensitivities",
]

_FLAG = FLAG


def _scalar_or_array(x: np.ndarray, like: Any) -> Any:
    return float(x[0]) if np.ndim(like) == 0 else x


class RangeTree(RangeQueries, CountRelease):
    """A private range-tree release. All queries are post-processing and cost no budget.

    Counts are of records per bucket (bucket resolution for float and date domains: a query point
    selects the whole bucket that contains it). Intervals: :mod:`dptree.estimation.intervals`.
    """

    KIND: ClassVar[str] = "range_tree"
    PLOT: ClassVar[str | None] = "cdf"  # how plot() draws it (dptree.io.display)
    #: the privacy boundary (:mod:`dptree.privacy.boundary`): the noisy node counts are the only fields
    #: that depend on the data (under ``replace`` the root is the public n)
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "measurements.noise_parameters", "metadata", "metadata.*"),
        noisy=("measurements.levels",),
    )

    def __new__(cls, plan: RangeTreePlan, measurements: list[np.ndarray | None], statement: dict[str, Any],
                metadata: dict[str, Any] | None = None, estimates: LeafEstimates | None = None) -> RangeTree:
        """A tree whose statement records private bounds is a :class:`PrivateBoundsRangeTree`; one
        at a private contribution bound a :class:`PrivateContributionsRangeTree`."""
        if cls is RangeTree and "bounds" in statement:
            cls = PrivateBoundsRangeTree
        elif cls is RangeTree and "contributions" in statement:
            cls = PrivateContributionsRangeTree
        return super().__new__(cls)

    def __init__(
        self,
        plan: RangeTreePlan,
        measurements: list[np.ndarray | None],
        statement: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        estimates: LeafEstimates | None = None,
    ):
        """``estimates``: the least-squares estimates of ``measurements`` when already computed
        (one row of :class:`~dptree.rangetree.estimates.ForestEstimates`); default: computed here."""
        self.plan = plan
        self.domain = plan.domain
        self.layout = plan.layout
        self.measurements = measurements
        self.privacy = statement
        #: public: the caller's column name, input path and the creation time (and a ledger charge)
        self.metadata: dict[str, Any] = dict(metadata or {})
        if estimates is None:
            estimates = LeafEstimates(plan.layout, plan.domain.size, plan.noise, plan.level_variance, measurements)
        self._est = estimates
        self._intervals: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = {}  # quantile_ci's, per call

    @property
    def column(self) -> str | None:
        """The name of the released column, when the caller gave one (public)."""
        col = self.metadata.get("column")
        return None if col is None else str(col)

    @property
    def max_contributions(self) -> int:
        """The records kept per user (or declared per person): the bound the noise is calibrated
        to; chosen from the data with ``max_contributions="private"`` (a DP output)."""
        return int(self.plan.max_contributions)

    @property
    def leaf_estimates(self) -> np.ndarray:
        """Consistent (least-squares) estimates of the count in every bucket of the domain."""
        return self._est.leaf

    # ------------------------------------------------------------------ leaf ranges
    def _ordered_points(self, x: Any) -> np.ndarray:
        """Query points as numbers whose order is theirs: dates before the clamp to the domain's
        ends (two dates past the same end would compare equal), others as the domain reads them."""
        if self.domain.kind == "datetime":
            return date_query_array(x, *NS_RANGE)
        return self.domain._query_array(x)

    def _leaf_range(self, lo: Any, hi: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        qlo, qhi = self._ordered_points(lo), self._ordered_points(hi)
        try:
            qlo, qhi = np.broadcast_arrays(np.atleast_1d(qlo), np.atleast_1d(qhi))
        except ValueError:
            raise InvalidParameterError(
                "lo and hi must have the same length (or one of them be a single value)"
            ) from None
        if np.any(qlo > qhi):
            raise InvalidParameterError("count(lo, hi) needs lo <= hi")
        a = np.atleast_1d(self.domain.leaf_from(lo))
        b = np.atleast_1d(self.domain.leaf_of(hi))
        a, b = np.broadcast_arrays(a, b)
        D = self.domain.size
        a = np.clip(a, 0, D)
        b = np.clip(b, -1, D - 1)
        empty = a > b
        return np.where(empty, 0, a), np.where(empty, 0, b), empty

    def _prefix(self, x: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The leaf ranges [0, leaf of x] of threshold queries (empty below the domain)."""
        b = np.clip(np.atleast_1d(self.domain.leaf_of(x)), -1, self.domain.size - 1)
        empty = b < 0
        return np.zeros_like(b), np.where(empty, 0, b), empty

    def _domain_range(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return np.array([0]), np.array([self.domain.size - 1]), np.array([False])

    def _interval(self, a: np.ndarray, b: np.ndarray, empty: np.ndarray, level: float) -> tuple[Any, Any]:
        """The ``level`` interval of the leaf ranges [a, b] (:func:`symmetric_interval`)."""
        s, m = self._est.spread(a, b, empty, level)
        return symmetric_interval(self._est.counts(a, b, empty), s, m)

    # ------------------------------------------------------------------ ranges
    def count(self, lo: Any, hi: Any) -> Any:
        """Estimated number of records with lo <= value <= hi (vectorised over arrays)."""
        a, b, e = self._leaf_range(lo, hi)
        return _scalar_or_array(self._est.counts(a, b, e), lo if np.ndim(lo) else hi)

    def stderr(self, lo: Any, hi: Any) -> Any:
        """Exact standard error of :meth:`count` (closed form, DESIGN section 4)."""
        a, b, e = self._leaf_range(lo, hi)
        return _scalar_or_array(np.sqrt(self._est.variances(a, b, e)), lo if np.ndim(lo) else hi)

    @validate_params({"level": LEVEL})
    def ci(self, lo: Any, hi: Any, level: float = 0.95) -> tuple[Any, Any]:
        """Confidence interval count -+ m * stderr for :meth:`count` at the given ``level``.

        Gaussian noise: m is the normal quantile. Laplace noise: m comes from the variance-gamma
        law matched to the range's exact error moments (:mod:`dptree.estimation.intervals`), which widens
        intervals whose error is dominated by one node's Laplace noise.
        """
        a, b, e = self._leaf_range(lo, hi)
        low, high = self._interval(a, b, e, level)
        like = lo if np.ndim(lo) else hi
        return _scalar_or_array(low, like), _scalar_or_array(high, like)

    def total(self) -> float:
        """Estimated number of records: ``count(lower, upper)``, so totals, histograms and CDFs agree.

        Under ``neighbors='replace'`` n is public and this is exactly n when the domain fills the
        tree; when the tree has padding buckets beyond ``upper`` (which hold no data), their
        noisy estimates are excluded and this is an estimate of n.
        """
        return float(self._est.counts(*self._domain_range())[0])

    def total_stderr(self) -> float:
        """Exact standard error of :meth:`total`."""
        return float(np.sqrt(self._est.variances(*self._domain_range())[0]))

    @validate_params({"level": LEVEL})
    def total_ci(self, level: float = 0.95) -> tuple[float, float]:
        """Confidence interval of :meth:`total` (see :meth:`ci`)."""
        low, high = self._interval(*self._domain_range(), level)
        return float(low[0]), float(high[0])

    # ------------------------------------------------------------------ thresholds (CDF)
    @validate_params({"normalize": _FLAG, "monotone": _FLAG})
    def cdf(self, x: Any, *, normalize: bool = False, monotone: bool = False) -> Any:
        """Threshold count #{records <= x} (Phi(x) of Smith & Ullman 2021); a fraction when ``normalize``.

        ``monotone=True`` answers from the isotonic (non-decreasing) fit of the CDF over all
        buckets. Isotonic regression is a projection onto a convex set containing the true CDF, so
        its summed squared error over all thresholds never exceeds the unconstrained one; the
        pointwise ``stderr`` values describe the unconstrained estimate only.
        """
        idx = np.clip(np.atleast_1d(self.domain.leaf_of(x)), -1, self.domain.size - 1)
        F = np.concatenate([[0.0], self._est.monotone_cdf()]) if monotone else self._est.cum
        out = F[idx + 1]
        if normalize:
            n = F[-1]
            out = out / n if n > 0 else np.zeros_like(out)
        return _scalar_or_array(out, x)

    def cdf_stderr(self, x: Any) -> Any:
        """Exact standard error of the (unnormalised, non-monotone) :meth:`cdf`."""
        return _scalar_or_array(np.sqrt(self._est.variances(*self._prefix(x))), x)

    @validate_params({"level": LEVEL})
    def cdf_ci(self, x: Any, level: float = 0.95) -> tuple[Any, Any]:
        """Confidence interval of the (unnormalised, non-monotone) :meth:`cdf` (see :meth:`ci`)."""
        low, high = self._interval(*self._prefix(x), level)
        return _scalar_or_array(low, x), _scalar_or_array(high, x)

    # ------------------------------------------------------------------ quantiles
    def quantile(self, q: Any) -> Any:
        """The q-quantile(s): the smallest x with monotone CDF(x) >= q * n_hat, n_hat the
        least-squares total :meth:`total` (unbiased), vectorised.

        Read off the isotonic fit of the CDF, so negative noisy counts and a non-monotone raw CDF
        cannot send the search to a wrong bucket. Float domains interpolate inside the bucket;
        integer domains return the bucket's value. With an estimated total <= 0 (no data), every
        quantile is ``lower``.
        """
        idx, frac = self._quantile_position(quantile_levels(q))
        out = self.domain.interpolate(idx, frac)
        return out[0] if np.ndim(q) == 0 else out

    def quantile_bucket(self, q: Any) -> np.ndarray:
        """The bucket (leaf index, from 0) that holds each :meth:`quantile` estimate."""
        return self._quantile_position(quantile_levels(q))[0]

    def _quantile_position(self, qa: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`quantile`'s bucket and the fraction of the way through it, per level."""
        F = self._est.monotone_cdf()
        # the target rank uses the least-squares total, which is unbiased; the isotonic fit's
        # endpoint F[-1] is not (it overstates the total on data reaching the top of the domain)
        n = self.total()
        target = qa * n
        idx = np.searchsorted(F, target, side="left")
        idx = np.clip(idx, 0, self.domain.size - 1)
        prev = np.where(idx > 0, F[np.maximum(idx - 1, 0)], 0.0)
        step = F[idx] - prev
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(step > 0, (target - prev) / step, 0.0)
        frac = np.clip(frac, 0.0, 1.0)
        if n <= 0:
            idx = np.zeros_like(idx)
            frac = np.zeros_like(frac)
        return idx, frac

    @validate_params({"level": LEVEL, "interval": [Options(INTERVALS)],
                      "grid": [Interval(Integral, 2, None, hint="e.g. grid=4096")], "rng": SIMULATION_RNG})
    def quantile_ci(self, q: Any, level: float = 0.95, *, interval: str = "calibrated", grid: int = 4096,
                    rng: RngLike = None) -> tuple[Any, Any]:
        """A ``level`` confidence interval for each q-quantile (bucket resolution, like
        :meth:`quantile`), widened to hold the estimate.

        ``interval="calibrated"`` (default): the pivot interval F_hat(x) - q n_hat with its exact
        variance (:mod:`~dptree.rangetree.quantile_pivot`), its multiplier and the rule for its
        high end chosen per level by simulating this release's public noise with the release as
        plug-in truth (:mod:`~dptree.rangetree.quantile_calibration`); measured coverage 0.94-0.98
        on the data of docs/notes/quantiles.md ("`RangeTree.quantile_ci`"; the band inversion it replaced
        covered 0.71 at q = 0.95 of sparse log-normal data; the top levels of data that end well
        before the domain are calibrated on the worst of three tails past the data's end: q = 0.95
        and 1 of uniform data on a quarter of the domain 0.95 and 0.98, where they were 0.88 and
        0.65, docs/notes/quantiles.md, "Data that end before the domain"). The maximum's (q = 1)
        interval always ends at the domain's end: no release bounds the maximum from above. Past
        2^20 (padded) buckets the pivot interval is kept.
        ``"pivot"``: the uncalibrated pivot interval, deterministic, covering at least about the
        nominal rate at every level and wider. Both read the estimates and the public plan only
        (post-processing); ``rng`` is the simulation's random source (not privacy noise: a seed
        only makes the interval reproducible; default: a seed hashed from the release's noisy
        counts, so the same release gives the same interval in every process). The factor is a
        Monte Carlo estimate: another ``rng`` can move the ends by a few buckets, more where the
        read-off grid is coarse (docs/notes/quantiles.md). With an estimated total <= 0 the
        interval is the whole domain. Float domains give bucket edges, integers a bucket's first
        and last value, dates the first and the last bucket's start."""
        qa = quantile_levels(q)
        key = (tuple(qa.tolist()), float(level), interval, int(grid))
        kept = self._intervals.get(key) if rng is None else None
        if kept is None:
            sims = calibration_sims(self.layout.padded_size) if interval == "calibrated" else 0
            source = make_source(self._simulation_seed() if rng is None else rng)
            kept = released_intervals(self, qa, level, source=source, sims=sims, grid=grid)
            if rng is None:
                self._intervals[key] = kept
        low, high = kept
        if np.ndim(q) == 0:
            return low[0], high[0]
        return low, high

    def _simulation_seed(self) -> int:
        """The default seed of :meth:`quantile_ci`'s simulation: a hash of the released noisy counts
        and the public plan (post-processing), so that the same release gives the same intervals in
        every process (``dptree query`` run twice, a report beside a query)."""
        h = hashlib.sha256(repr((self.domain, self.layout.padded_size, self.plan.noise,
                                 np.asarray(self.plan.level_variance).tolist())).encode())
        for i, m in enumerate(self.measurements):
            if m is not None:
                h.update(f"|{i}:{m.dtype.str}:".encode())
                h.update(np.ascontiguousarray(m).tobytes())
        return int.from_bytes(h.digest()[:8], "big")

    # ------------------------------------------------------------------ several answers, tables
    def json_value(self, v: Any) -> Any:
        """A domain value as a JSON-ready number (dates: ISO text, as in the release file)."""
        dom = self.domain
        if dom.kind == "datetime":
            return dom.format_value(int(np.asarray(v).astype("datetime64[ns]").astype(np.int64)))
        return float(v) if dom.kind == "float" else int(v)

    @validate_params({"level": LEVEL})
    def to_frame(self, level: float = 0.95) -> Any:
        """One row per bucket of the domain: bucket_low, bucket_high, estimate, stderr, ci_low,
        ci_high. bucket_low is the bucket's smallest value; bucket_high its largest value for
        integers, its right edge (exclusive; the upper bound for the last bucket) for floats and dates."""
        dom = self.domain
        a = np.arange(dom.size)
        empty = np.zeros(dom.size, dtype=bool)
        est = self._est.counts(a, a, empty)
        s, m = self._est.spread(a, a, empty, level)
        low = dom.leaf_start(a)
        if dom.kind == "float":
            high: Any = np.minimum(low + dom.width, dom.upper)
        elif dom.kind == "datetime":
            end = np.minimum(np.int64(dom.lower) + (a + 1) * np.int64(dom.step), np.int64(dom.upper))
            high = end.astype("datetime64[ns]")
        else:
            high = np.minimum(np.int64(dom.lower) + (a + 1) * np.int64(dom.step) - 1, np.int64(dom.upper))
        return result_frame({"bucket_low": low, "bucket_high": high}, estimate=est, stderr=s,
                            ci=symmetric_interval(est, s, m), level=level)

    @validate_params({"level": LEVEL})
    def histogram(self, edges: Any, level: float = 0.95) -> HistogramResult:
        """Counts of the bins [edges[i], edges[i+1]) (last bin closed), at bucket resolution, with
        standard errors and ``level`` confidence intervals (as :meth:`ci`)."""
        e, a, b, empty = self._bins(edges)
        counts = self._est.counts(a, b, empty)
        s, m = self._est.spread(a, b, empty, level)
        low, high = symmetric_interval(counts, s, m)
        return HistogramResult(edges=e, counts=counts, stderr=s, ci_low=low, ci_high=high, level=level,
                               privacy=self.privacy, column=self.column)

    def _bins(self, edges: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(edges, a, b, empty): the checked edges and the leaf range of each bin of :meth:`histogram`."""
        if isinstance(edges, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in edges):
            raise InvalidParameterError("histogram edges must be values of the domain, not True/False")
        try:
            e = np.asarray(edges)
        except (TypeError, ValueError) as exc:
            raise InvalidParameterError(f"histogram edges must be a flat list of values: {exc}") from exc
        if e.ndim != 1 or e.size < 2:
            raise InvalidParameterError("histogram needs at least two edges")
        q = self._ordered_points(e)
        if np.any(np.diff(q) <= 0):
            raise InvalidParameterError("histogram edges must be strictly increasing")
        # a bin [e_i, e_i+1) starts where values >= e_i begin and ends before values >= e_i+1 do;
        # the last bin is closed: it ends at the bucket of its edge
        first = np.asarray(self.domain.leaf_from(e))
        D = self.domain.size
        starts = np.clip(first[:-1], 0, D)
        ends = np.clip(np.concatenate([first[1:-1] - 1, np.atleast_1d(self.domain.leaf_of(e[-1:]))]), -1, D - 1)
        empty = starts > ends
        return e, np.where(empty, 0, starts), np.where(empty, 0, ends), empty

    # ------------------------------------------------------------------ the release contract
    def to_document(self) -> dict[str, Any]:
        """The parts of the release file (:mod:`dptree.rangetree.document`)."""
        return range_tree_document(self.plan, self.measurements, self.privacy, self.metadata)

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> RangeTree:
        """Rebuild from a validated file document, re-planning from its parameters and checking its
        noise, layout and statement against the plan (:func:`~dptree.rangetree.document.range_tree_parts`)."""
        plan, measurements, statement, metadata = range_tree_parts(doc, RangeTreePlan)
        return cls(plan=plan, measurements=measurements, statement=statement, metadata=metadata)

    def summary(self) -> str:
        """One line: domain, tree, noise, neighboring relation and the budget spent."""
        dom = self.domain
        spent = self.privacy["budget_spent"]
        budget = ", ".join(f"{k}={v:g}" for k, v in spent.items())
        col = f"of {self.column!r} " if self.column else ""
        chosen = (f", max_contributions={self.max_contributions} (chosen privately)" if "contributions" in self.privacy
                  else "")
        return (
            f"RangeTree {col}over [{dom.format_value(dom.lower)}, {dom.format_value(dom.upper)}] ({dom.size} buckets), "
            f"{self.layout.branching}-ary, {self.plan.noise} noise, {self.plan.neighbors} neighbors{chosen}, "
            f"{budget}{'' if self.private else ', NOT PRIVATE (test seed)'}"
        )


class PrivateBoundsRangeTree(RangeTree):
    """A range tree over bounds found privately (``range_tree(bounds="private")``,
    :mod:`dptree.rangetree.bounds`); saved and loaded as a ``range_tree``.

    Its domain, and so its layout, per-level noise and sensitivities, are post-processing of the
    search's DP output (the found bounds): its boundary declares them noisy. The search's public
    description, the budget and its split stay public."""

    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "metadata", "metadata.*"),
        noisy=("measurements.*", "parameters.domain.*", "parameters.fanouts", "parameters.branching",
               "parameters.bounds.found", "privacy.bounds.found", "privacy.mechanism", "privacy.budget_spent.*",
               "privacy.l1_sensitivity", "privacy.l2_sensitivity", "privacy.levels"),
    )


class PrivateContributionsRangeTree(RangeTree):
    """A range tree at a contribution bound chosen privately (``range_tree(...,
    max_contributions="private")``, :mod:`dptree.rangetree.contributions`); saved and loaded as a
    ``range_tree``.

    The bound (``max_contributions``) is the choice's DP output, and so the per-level noise, the
    sensitivities and the budget the tree spent at it (post-processing of it): its boundary
    declares them noisy. The choice's public description, the budget and its split stay public."""

    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "metadata", "metadata.*"),
        noisy=("measurements.*", "parameters.max_contributions", "parameters.contributions.chosen",
               "privacy.contributions.chosen", "privacy.max_contributions", "privacy.budget_spent.*",
               "privacy.l1_sensitivity", "privacy.l2_sensitivity", "privacy.levels"),
    )


@dataclass
class RangeTreePlan(TreePlan):
    """The plan of a range-tree release (:class:`~dptree.rangetree.plan.TreePlan`: everything that
    depends only on public parameters), made by :func:`plan_range_tree` before any data is read;
    :meth:`release` is its one private step."""

    def release(self, leaf_counts: np.ndarray, rng: RngLike = None, *, column: Any = None, source: Any = None,
                created: str | None = None, statement: dict[str, Any] | None = None) -> RangeTree:
        """Add noise to the true counts derived from ``leaf_counts`` (:meth:`~TreePlan.measure`) and
        estimate them by least squares.

        ``column`` and ``source`` (the caller's column name and input path) are kept, with the
        creation time, in the release's public ``metadata``. ``created``: that time, read from the
        clock (``release_file.utc_now()``) before the data was read; default: now. ``statement``: the
        release's privacy statement when it is more than the plan's (a tree over private bounds,
        :mod:`dptree.rangetree.bounds`)."""
        src = make_source(rng)
        measurements = self.measure(leaf_counts, src)
        stated = dict(self.statement if statement is None else statement)
        stated["private"] = bool(src.private)
        meta = creation_metadata(column=column, source=source, created=created)
        return RangeTree(plan=self, measurements=measurements, statement=stated, metadata=meta)


#: validate public parameters and plan a range-tree release (:meth:`TreePlan.build`)
plan_range_tree = RangeTreePlan.build
