"""The release of a factorised CDF (``range_tree(..., noise="gaussian", levels="factorization")``).

A :class:`FactorizedCDF` answers what a :class:`~dptree.rangetree.release.RangeTree` answers
(``count``, ``stderr``, ``ci``, ``cdf``, ``quantile``, ``quantile_ci``, ``histogram``, ``to_frame``,
``answer``, ``plot``) from the prefixes of :mod:`dptree.rangetree.factorization`, each with its
exact standard error: the queries are the range tree's, over the factorisation's estimator. It is
saved as kind ``"factorized_cdf"``: the file holds the noisy lattice measurement y = q + w (the
only field computed from the data) and the public parameters; loading re-plans from them and
compares the noise parameter and the privacy statement whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, ClassVar, Mapping

import numpy as np

from dptree._validation import Interval, Options, validate_params
from dptree.errors import ReleaseFileError
from dptree.io.release_file import check_metadata
from dptree.privacy.boundary import Boundary
from dptree.privacy.budget import Budget
from dptree.privacy.statement import check_statement
from dptree.privacy.unit import PrivacyUnit, privacy_values
from dptree.rangetree.document import domain_inputs
from dptree.io.release_file import creation_metadata
from dptree.noise import RngLike, make_source
from dptree.rangetree.factorization import FactorizationPlan, FactorizedEstimates, build_factorization, measurement_seed
from dptree.rangetree.release import RangeTree

__all__ = ["FactorizedCDF", "FactorizedCDFPlan", "plan_factorized_cdf"]


class FactorizedCDF(RangeTree):
    """Prefix counts released through the square-root factorisation (Henzinger, Upadhyay &
    Upadhyay 2023; Fichtenberger, Henzinger & Upadhyay 2023): every range count, CDF value,
    histogram and quantile as post-processing, with exact standard errors."""

    KIND: ClassVar[str] = "factorized_cdf"
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "measurements.noise_parameter", "metadata", "metadata.*"),
        noisy=("measurements.lattice",),
    )

    def __init__(self, plan: FactorizationPlan, measurements: np.ndarray, statement: dict[str, Any],
                 metadata: dict[str, Any] | None = None) -> None:
        self.plan = plan  # type: ignore[assignment]
        self.domain = plan.domain
        self.layout = plan.layout  # type: ignore[assignment]
        #: the noisy lattice vector y = q + w (the one block of the measurement core)
        self.lattice = np.asarray(measurements, dtype=np.int64)
        self.measurements = [self.lattice]
        self.privacy = statement
        self.metadata = dict(metadata or {})
        self._est = FactorizedEstimates(plan, self.lattice)
        self._intervals = {}

    def _simulation_seed(self) -> int:
        """quantile_ci's default seed: a hash of the plan and the noisy measurement (post-processing)."""
        return measurement_seed(self.plan, self.lattice)  # type: ignore[arg-type]

    def to_document(self) -> dict[str, Any]:
        dom = self.domain
        if dom.kind == "datetime":
            lower: Any = str(np.datetime64(int(dom.lower), "ns"))
            upper: Any = str(np.datetime64(int(dom.upper), "ns"))
        else:
            lower, upper = dom.lower, dom.upper
        params = {"domain": {"kind": dom.kind, "lower": lower, "upper": upper, "width": dom.width, "size": dom.size},
                  **self.plan.parameters()}  # type: ignore[attr-defined]
        s = self.plan.sigma2  # type: ignore[attr-defined]
        meas = {"lattice": [int(v) for v in self.lattice], "noise_parameter": f"{s.numerator}/{s.denominator}"}
        return {"privacy": dict(self.privacy), "parameters": params, "measurements": meas,
                "metadata": dict(self.metadata)}

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> FactorizedCDF:
        p, m = doc["parameters"], doc["measurements"]
        lower, upper, width = domain_inputs(p)
        b = p["budget"]
        plan = plan_factorized_cdf(lower=lower, upper=upper, width=width, epsilon=b["epsilon"],
                                   delta=b["delta"] or 0.0, rho=b["rho"], noise=p["noise"], neighbors=p["neighbors"],
                                   max_contributions=p["max_contributions"])
        if plan.domain.size != p["domain"]["size"] or p.get("levels") != "factorization":
            raise ReleaseFileError("factorized_cdf release: domain or method does not match its parameters")
        s = plan.sigma2
        if m.get("noise_parameter") != f"{s.numerator}/{s.denominator}":
            raise ReleaseFileError("factorized_cdf release: noise parameter does not match the stated budget (tampered?)")
        y = m.get("lattice")
        if (not isinstance(y, list) or len(y) != plan.domain.size
                or not all(isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2**62 for v in y)):
            raise ReleaseFileError(f"factorized_cdf release: the lattice measurement must hold {plan.domain.size} "
                                   "integers")
        privacy = check_statement(doc["privacy"], plan.statement, kind=cls.KIND)
        return cls(plan, np.asarray(y, dtype=np.int64), privacy, check_metadata(doc.get("metadata")))

    def summary(self) -> str:
        dom = self.domain
        budget = ", ".join(f"{k}={v:g}" for k, v in self.privacy["budget_spent"].items())
        col = f"of {self.column!r} " if self.column else ""
        return (f"FactorizedCDF {col}over [{dom.format_value(dom.lower)}, {dom.format_value(dom.upper)}] "
                f"({dom.size} buckets), square-root factorisation, gaussian noise, {self.plan.neighbors} neighbors, "
                f"{budget}{'' if self.private else ', NOT PRIVATE (test seed)'}")


@dataclass
class FactorizedCDFPlan(FactorizationPlan):
    """The plan of a factorised CDF (:class:`~dptree.rangetree.factorization.FactorizationPlan`,
    public parameters only) with its one private step, :meth:`release`."""

    def release(self, leaf_counts: np.ndarray, rng: RngLike = None, *, column: Any = None, source: Any = None,
                created: str | None = None) -> FactorizedCDF:
        """Measure ``leaf_counts`` (:meth:`~FactorizationPlan.measure`) and wrap the noisy lattice
        vector in a :class:`FactorizedCDF`; public ``metadata`` as a range tree's."""
        src = make_source(rng)
        y = self.measure(leaf_counts, src)
        stated = dict(self.statement)
        stated["private"] = bool(src.private)
        return FactorizedCDF(self, y, stated, creation_metadata(column=column, source=source, created=created))


@privacy_values
@validate_params({
    "epsilon": [None, Interval(Real, 0, None, closed="neither", hint="e.g. epsilon=1.0 with delta=1e-6")],
    "delta": [Interval(Real, 0, 1, closed="left", hint="e.g. delta=1e-6")],
    "rho": [None, Interval(Real, 0, None, closed="neither", hint="e.g. rho=0.5")],
    "noise": [Options(("gaussian",), hint="the factorised CDF adds discrete Gaussian noise: noise='gaussian'")],
    "neighbors": [Options(("add_remove", "replace"))],
    "max_contributions": [Interval(Integral, 1, None, hint="how many records one person may contribute, e.g. 1")],
})
def plan_factorized_cdf(*, lower: Any, upper: Any, epsilon: float | None = None, delta: float = 0.0,
                        rho: float | None = None, width: Any = None, noise: str = "gaussian",
                        neighbors: str = "add_remove", max_contributions: int = 1, unit: PrivacyUnit | None = None,
                        budget: Budget | None = None) -> FactorizedCDFPlan:
    """Plan a factorised CDF from public parameters only (:func:`~dptree.rangetree.factorization.build_factorization`):
    a ledger charges it (``charge_for``) before ``plan.release(dptree.leaf_histogram(values, plan))``."""
    return build_factorization(FactorizedCDFPlan, lower=lower, upper=upper, epsilon=epsilon, delta=delta, rho=rho,
                               width=width, noise=noise, neighbors=neighbors, max_contributions=max_contributions)
