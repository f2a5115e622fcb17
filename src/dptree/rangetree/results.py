"""What a range tree's queries return when they answer several things at once: histograms,
quantiles with intervals, and a batch of answers. Each is post-processing of one release and
becomes a table with ``to_frame()`` (:func:`dptree.io.frames.result_frame`), shows itself in a
notebook and draws itself with ``plot()`` (:class:`~dptree.io.display.Displayed`; it carries its
release's privacy statement and column for that). :class:`RangeQueries`
is the one batch of answers that dense and sparse range trees share (``dptree query`` prints it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from dptree._validation import InstanceOf, validate_params
from dptree.data.values import whole_from
from dptree.errors import InvalidParameterError
from dptree.estimation.intervals import LEVEL
from dptree.io.display import Displayed
from dptree.io.frames import result_frame

__all__ = ["HistogramResult", "QuantileResult", "Answers", "RangeQueries", "quantile_levels"]

FLAG = [InstanceOf(bool, np.bool_, description="True or False")]


@dataclass(frozen=True)
class HistogramResult(Displayed):
    """Counts of the bins [edges[i], edges[i+1]) (the last bin closed), their standard errors and
    ``level`` confidence intervals (see :meth:`RangeTree.ci`). ``privacy`` and ``column``: the
    statement and column of the release it was read from (None when built by hand)."""

    PLOT: ClassVar[str | None] = "histogram"

    edges: np.ndarray
    counts: np.ndarray
    stderr: np.ndarray
    ci_low: np.ndarray | None = None
    ci_high: np.ndarray | None = None
    level: float = 0.95
    privacy: Mapping[str, Any] | None = field(default=None, kw_only=True, repr=False, compare=False)
    column: str | None = field(default=None, kw_only=True, compare=False)

    def summary(self) -> str:
        """One line: the bins, the interval level; post-processing of a release."""
        return (f"HistogramResult of {len(self.counts)} bins, {self.level:g} intervals "
                "(post-processing of a release: no further privacy cost)")

    def to_frame(self) -> Any:
        """One row per bin: bin_low, bin_high, estimate, stderr, ci_low, ci_high."""
        ci = None if self.ci_low is None or self.ci_high is None else (self.ci_low, self.ci_high)
        return result_frame(
            {"bin_low": self.edges[:-1], "bin_high": self.edges[1:]},
            estimate=self.counts, stderr=self.stderr, ci=ci, level=self.level,
        )


@dataclass(frozen=True)
class QuantileResult(Displayed):
    """Quantiles read off the monotone CDF, with ``level`` intervals (a range tree's are calibrated
    by simulation, :meth:`RangeTree.quantile_ci`; a sparse range tree's come from its pointwise CDF
    band, ``SparseRangeTree.quantile_ci``). ``privacy`` and ``column``: as :class:`HistogramResult`."""

    PLOT: ClassVar[str | None] = "quantiles"

    q: np.ndarray
    values: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    level: float = 0.95
    privacy: Mapping[str, Any] | None = field(default=None, kw_only=True, repr=False, compare=False)
    column: str | None = field(default=None, kw_only=True, compare=False)

    def summary(self) -> str:
        """One line: the levels, the interval level; post-processing of a release."""
        return (f"QuantileResult of {len(self.q)} levels, {self.level:g} intervals "
                "(post-processing of a release: no further privacy cost)")

    def to_frame(self) -> Any:
        """One row per level: q, estimate, ci_low, ci_high (quantiles have no standard error)."""
        return result_frame({"q": self.q}, estimate=self.values, ci=(self.ci_low, self.ci_high), level=self.level)


@dataclass(frozen=True)
class Answers(Displayed):
    """Answers to several queries of one release (:meth:`RangeTree.answer`), one row each:
    ``query`` (its text), ``estimate``, ``stderr`` (None for quantiles), ``ci_low``, ``ci_high``.
    Numbers stay numbers (dates: ISO text); :meth:`rows` is what ``dptree query --format json``
    prints."""

    rows: list[dict[str, Any]]
    level: float = 0.95
    privacy: Mapping[str, Any] | None = field(default=None, kw_only=True, repr=False, compare=False)
    column: str | None = field(default=None, kw_only=True, compare=False)

    def summary(self) -> str:
        """One line: the queries, the interval level; post-processing of a release."""
        return (f"Answers to {len(self.rows)} queries, {self.level:g} intervals "
                "(post-processing of a release: no further privacy cost)")

    def to_frame(self) -> Any:
        """One row per query: query, estimate, stderr, ci_low, ci_high."""
        col = {k: [r[k] for r in self.rows] for k in ("query", "estimate", "stderr", "ci_low", "ci_high")}
        col["stderr"] = [np.nan if v is None else v for v in col["stderr"]]  # quantiles have none
        return result_frame({"query": col["query"]}, estimate=col["estimate"], stderr=col["stderr"],
                            ci=(col["ci_low"], col["ci_high"]), level=self.level)


class RangeQueries:
    """:meth:`answer` and :meth:`quantiles` for a release of range counts over an ordered domain
    (a dense or a sparse range tree): they ask the release's own ``count``/``stderr``/``ci``,
    ``cdf``/``cdf_stderr``/``cdf_ci``, ``quantile``/``quantile_ci``, ``total``/``total_stderr``/
    ``total_ci`` and ``json_value``."""

    @validate_params({"level": LEVEL})
    def quantiles(self: Any, q: Any, level: float = 0.95) -> QuantileResult:
        """:meth:`quantile` with :meth:`quantile_ci` intervals, as a result with ``to_frame()``."""
        qa = quantile_levels(q)
        low, high = self.quantile_ci(qa, level)
        return QuantileResult(q=qa, values=np.atleast_1d(self.quantile(qa)), ci_low=low, ci_high=high, level=level,
                              privacy=self.privacy, column=self.column)

    @validate_params({"level": LEVEL, "total": FLAG})
    def answer(
        self: Any,
        *,
        count: Sequence[tuple[Any, Any]] = (),
        cdf: Sequence[Any] = (),
        quantile: Sequence[float] = (),
        total: bool = False,
        level: float = 0.95,
    ) -> Answers:
        """Several queries at once, one row each (``dptree query`` prints these): range counts
        ``(lo, hi)``, threshold counts, quantiles (with :meth:`quantile_ci` intervals) and the
        total; with no query at all, the total."""
        rows: list[dict[str, Any]] = []
        show = self.json_value

        def label(v: Any) -> Any:  # a query point as the label shows it: huge integers in short form
            out = show(v)
            return f"{float(v):g}" if isinstance(out, int) and abs(out) >= 10**15 else out

        for lo, hi in count:
            low, high = self.ci(lo, hi, level=level)
            first = whole_from(lo) if self.domain.kind in ("integer", "int", "uint") else lo  # lo <= value
            rows.append({"query": f"count[{label(first)}, {label(hi)}]", "estimate": float(self.count(lo, hi)),
                         "stderr": float(self.stderr(lo, hi)), "ci_low": float(low), "ci_high": float(high)})
        for x in cdf:
            low, high = self.cdf_ci(x, level=level)
            rows.append({"query": f"cdf({label(x)})", "estimate": float(self.cdf(x)),
                         "stderr": float(self.cdf_stderr(x)), "ci_low": float(low), "ci_high": float(high)})
        if len(quantile):
            res = self.quantiles(np.asarray(quantile, dtype=np.float64), level)
            for qv, v, a, b in zip(res.q, res.values, res.ci_low, res.ci_high):
                rows.append({"query": f"quantile({qv:g})", "estimate": show(v), "stderr": None,
                             "ci_low": show(a), "ci_high": show(b)})
        if total or not rows:
            low, high = self.total_ci(level=level)
            rows.append({"query": "total", "estimate": self.total(), "stderr": self.total_stderr(),
                         "ci_low": low, "ci_high": high})
        return Answers(rows=rows, level=level, privacy=self.privacy, column=self.column)


def quantile_levels(q: Any) -> np.ndarray:
    """Quantile levels as a 1-D float array in [0, 1], or an InvalidParameterError (an array
    parameter, so checked here rather than by a declared constraint)."""
    try:
        raw = np.atleast_1d(np.asarray(q))
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(f"quantile levels q must be numbers in [0, 1]: {exc}") from exc
    if raw.dtype.kind not in "iuf" or raw.ndim != 1:
        raise InvalidParameterError(f"quantile levels q must be numbers in [0, 1], got {raw.dtype}")
    qa = raw.astype(np.float64)
    if qa.size == 0 or not np.all(np.isfinite(qa)) or np.any((qa < 0) | (qa > 1)):
        hint = ""
        if qa.size and np.all(np.isfinite(qa)) and np.all((qa >= 0) & (qa <= 100)):  # percentiles
            shown = ", ".join(f"{v:g}" for v in qa[:5]) + (", ..." if qa.size > 5 else "")
            hint = (f"; percentiles are fractions: for {shown} give "
                    + ", ".join(f"{v / 100:g}" for v in qa[:5]) + (", ..." if qa.size > 5 else ""))
        raise InvalidParameterError("quantile levels q must be numbers in [0, 1]" + hint)
    return qa
