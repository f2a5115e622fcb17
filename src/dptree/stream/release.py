"""The public release of a continual counter: its running totals so far and their error bars.

A :class:`StreamRelease` is what a counter may publish (:meth:`dptree.stream.Counter.release`):
the noisy running totals of steps 1..t, post-processing of the counter's noise, with their exact
standard errors (a function of t and of the public plan). It is saved and loaded like every
release (kind ``"stream_counter"``); the loader re-plans the counter from the file's parameters
and compares the statement whole.
"""

from __future__ import annotations

from typing import Any, ClassVar, Mapping

import numpy as np

from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.estimation.intervals import normal_multiplier, symmetric_interval
from dptree.io.contract import CountRelease
from dptree.io.release_file import check_metadata
from dptree.privacy.boundary import Boundary
from dptree.privacy.statement import check_statement
from dptree.stream.plan import StreamPlan, plan_counter

__all__ = ["StreamRelease"]


class StreamRelease(CountRelease):
    """The running totals of a continual counter, steps 1..t, with exact standard errors.

    ``count(t)`` is the released total after step t (1-based), ``stderr(t)`` its exact standard
    error, ``ci(t, level)`` a normal interval (exact for the Gaussian counters; for the Laplace
    tree the estimate sums many independent Laplace terms of comparable weight)."""

    KIND = "stream_counter"
    PLOT = "running"
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "metadata", "metadata.*", "measurements.steps"),
        noisy=("measurements.estimates",),
    )

    def __init__(self, plan: StreamPlan, estimates: np.ndarray, privacy: dict[str, Any],
                 metadata: dict[str, Any] | None = None) -> None:
        self.plan = plan
        self.estimates = np.asarray(estimates, dtype=np.float64)
        self.stderrs = plan.stderrs(len(self.estimates))
        self.privacy = privacy
        self.metadata = metadata or {}

    @property
    def steps(self) -> int:
        return len(self.estimates)

    def _index(self, t: Any) -> Any:
        tt = np.asarray(t)
        if not np.issubdtype(tt.dtype, np.integer) or np.any(tt < 1) or np.any(tt > self.steps):
            raise InvalidParameterError(f"a step is an integer from 1 to {self.steps} (the steps released so far)",
                                        parameter="t")
        return tt - 1

    def count(self, t: Any) -> Any:
        """The released running total after step ``t`` (1-based; an array of steps too)."""
        return self.estimates[self._index(t)]

    def stderr(self, t: Any) -> Any:
        """Its exact standard error (noise only)."""
        return self.stderrs[self._index(t)]

    def ci(self, t: Any, level: float = 0.95) -> tuple[Any, Any]:
        """A normal confidence interval at ``level`` for the running total after step ``t``."""
        i = self._index(t)
        return symmetric_interval(self.estimates[i], self.stderrs[i], normal_multiplier(level))

    def summary(self) -> str:
        kind = "binary-tree" if self.plan.mechanism == "tree" else "square-root Toeplitz"
        spent = ", ".join(f"{k}={v:g}" for k, v in self.privacy["budget_spent"].items() if v)
        return (f"StreamRelease: {kind} continual counter, {self.steps} of {self.plan.horizon} steps, {spent}"
                f"{'' if self.private else ', NOT PRIVATE (test seed)'}")

    def to_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame({"step": np.arange(1, self.steps + 1), "estimate": self.estimates,
                             "stderr": self.stderrs})

    def to_document(self) -> dict[str, Any]:
        return {"privacy": dict(self.privacy), "parameters": self.plan.parameters(),
                "measurements": {"steps": self.steps, "estimates": self.estimates.tolist()},
                "metadata": dict(self.metadata)}

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> StreamRelease:
        p, m = doc["parameters"], doc["measurements"]
        plan = plan_counter(horizon=p["horizon"], epsilon=p["epsilon"], delta=p["delta"], rho=p["rho"],
                            noise=p["noise"], mechanism=p["mechanism"], max_participations=p["max_participations"])
        privacy = check_statement(doc["privacy"], plan.statement, kind=cls.KIND)
        est = m.get("estimates")
        if not isinstance(est, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in est):
            raise ReleaseFileError("stream_counter release: estimates must be a list of numbers")
        if m.get("steps") != len(est) or len(est) > plan.horizon:
            raise ReleaseFileError("stream_counter release: one estimate per step, at most the horizon")
        return cls(plan, np.asarray(est, dtype=np.float64), privacy, check_metadata(doc.get("metadata")))

