"""What a range tree's queries return when they answer several things at once: histograms,
quantiles with intervals, and a batch of answers. Each is post-processing of one release and
becomes a table with ``to_frame()`` (:func:`dptree.io.frames.result_frame`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dptree.errors import InvalidParameterError
from dptree.io.frames import result_frame

__all__ = ["HistogramResult", "QuantileResult", "Answers", "quantile_levels"]


@dataclass(frozen=True)
class HistogramResult:
    """Counts of the bins [edges[i], edges[i+1]) (the last bin closed), their standard errors and
    ``level`` confidence intervals (see :meth:`RangeTree.ci`)."""

    edges: np.ndarray
    counts: np.ndarray
    stderr: np.ndarray
    ci_low: np.ndarray | None = None
    ci_high: np.ndarray | None = None
    level: float = 0.95

    def to_frame(self) -> Any:
        """One row per bin: bin_low, bin_high, estimate, stderr, ci_low, ci_high."""
        ci = None if self.ci_low is None or self.ci_high is None else (self.ci_low, self.ci_high)
        return result_frame(
            {"bin_low": self.edges[:-1], "bin_high": self.edges[1:]},
            estimate=self.counts, stderr=self.stderr, ci=ci, level=self.level,
        )


@dataclass(frozen=True)
class QuantileResult:
    """Quantiles read off the monotone CDF, with ``level`` intervals (a range tree's are calibrated
    by simulation, :meth:`RangeTree.quantile_ci`; a sparse range tree's come from its pointwise CDF
    band, ``SparseRangeTree.quantile_ci``)."""

    q: np.ndarray
    values: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    level: float = 0.95

    def to_frame(self) -> Any:
        """One row per level: q, estimate, ci_low, ci_high (quantiles have no standard error)."""
        return result_frame({"q": self.q}, estimate=self.values, ci=(self.ci_low, self.ci_high), level=self.level)


@dataclass(frozen=True)
class Answers:
    """Answers to several queries of one release (:meth:`RangeTree.answer`), one row each:
    ``query`` (its text), ``estimate``, ``stderr`` (None for quantiles), ``ci_low``, ``ci_high``.
    Numbers stay numbers (dates: ISO text); :meth:`rows` is what ``dptree query --format json``
    prints."""

    rows: list[dict[str, Any]]
    level: float = 0.95

    def to_frame(self) -> Any:
        """One row per query: query, estimate, stderr, ci_low, ci_high."""
        col = {k: [r[k] for r in self.rows] for k in ("query", "estimate", "stderr", "ci_low", "ci_high")}
        col["stderr"] = [np.nan if v is None else v for v in col["stderr"]]  # quantiles have none
        return result_frame({"query": col["query"]}, estimate=col["estimate"], stderr=col["stderr"],
                            ci=(col["ci_low"], col["ci_high"]), level=self.level)


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
        raise InvalidParameterError("quantile levels q must be numbers in [0, 1]")
    return qa
