"""What a hierarchy release's plan derives from public inputs alone (the structure, the budget, the
method and its options): the calibration (:func:`dptree.hierarchy.measure.calibrate`), the privacy
statement, the privacy loss and the expected error of every node. A file's loader
(:mod:`dptree.hierarchy.document`) re-derives the statement through :class:`HierarchyPlanCore`;
:class:`dptree.hierarchy.api.HierarchyCountsPlan` adds the private step (``release``).

The measurements (Ghazi, Kamath, Kumar, Manurangsi & Wu 2023):

* Laplace/Gaussian: one vector of node counts per depth of the hierarchy (d depths, root
  included); one record changes one count per depth by 1, k records a depth's counts by at most
  k in L1 and L2 (Corollary 2.7), so each depth is one Laplace or Gaussian measurement of
  sensitivity k at the node noise.
* multiplicative (Theorem 4.1's algorithm at (eps', delta') = :meth:`NodeMechanism.run_budget`):
  Estimation (Algorithm 4) at (eps'/2, delta'/2), in two halves: the root's upper bound M by
  truncated discrete Laplace, (eps'/4, delta'/4), and the rounds of Reduction (Algorithm 2:
  sparse vector and truncated Laplace), (eps'/4, delta'/4) for any number of rounds (Theorem
  A.1); then one truncated-Laplace window per depth, (eps'/(2d), delta'/(2d)) each (Lemma 3.3).
  Each step is proven (epsilon, delta)-DP only. With k > 1 records per person each step's
  guarantee is lifted by group privacy (Fact 2.2: (k e, delta (e^(k e) - 1) / (e^e - 1))), which
  composes to at most the stated (epsilon, delta).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from dptree.estimation.least_squares import consistent_estimates, node_variances
from dptree.hierarchy.measure import Calibration, NodeMechanism
from dptree.hierarchy.structure import Hierarchy
from dptree.noise import truncated_laplace_bound
from dptree.privacy.budget import Budget
from dptree.privacy.loss import ApproxDP, Gaussian, Laplace, Measurement, PrivacyLoss
from dptree.privacy.unit import PerRecord

__all__ = ["HierarchyPlanCore"]


@dataclass(frozen=True, eq=False)
class HierarchyPlanCore:
    """A hierarchy release's public part: the structure, the calibrated noise and the
    post-processing options; everything here is a function of public inputs."""

    hierarchy: Hierarchy
    calibration: Calibration
    consistent: bool = True
    nonnegative: bool = False
    integer: bool = False

    @property
    def mechanism(self) -> NodeMechanism:
        return self.calibration.mechanism

    @property
    def method(self) -> str:
        return self.mechanism.method

    @property
    def budget(self) -> Budget:
        """The budget the release is charged: pure epsilon (Laplace) or (epsilon, delta)."""
        m = self.mechanism
        return Budget(epsilon=m.epsilon, delta=m.delta) if m.delta else Budget(epsilon=m.epsilon)

    @property
    def unit(self) -> PerRecord:
        """Add or remove one person with at most ``max_contributions`` records (bounded by the caller)."""
        return PerRecord(self.mechanism.max_contributions)

    @property
    def statement(self) -> dict[str, Any]:
        """The privacy statement a release of this plan carries."""
        return self.statement_for(private=True)

    def statement_for(self, private: bool) -> dict[str, Any]:
        """The privacy statement of a release (``private``: False for a test seed)."""
        return self.calibration.privacy(private=private)

    def privacy_loss(self) -> PrivacyLoss:
        """The noisy measurements of the release (module docstring). Laplace: its pure epsilon is
        at most the stated epsilon (the scale is rounded up to the sampler's); Gaussian: its rho is
        the stated ``rho``, and with the exact calibration the d unit shifts give the stated
        ``calibration.delta_at_epsilon``; multiplicative: basic composition gives at most the
        stated (epsilon, delta)."""
        mech, d = self.mechanism, self.hierarchy.depth
        k = mech.max_contributions
        who = mech.neighbors
        spec = self.calibration.spec
        if spec is not None:
            (p,) = spec.parameters
            assert p is not None
            if spec.family == "laplace":
                return PrivacyLoss(who, tuple(Laplace(p, Fraction(k), f"depth {j}") for j in range(d)))
            return PrivacyLoss(who, tuple(Gaussian(p, Fraction(k), f"depth {j}") for j in range(d)))
        eps, dlt = mech.run_budget()
        steps = [(eps / 4.0, dlt / 4.0, "Estimation: the root's upper bound M, truncated discrete Laplace of scale "
                  f"{4.0 / eps:.6g}, bound {truncated_laplace_bound(eps / 4.0, dlt / 4.0)} (Algorithm 4)"),
                 (eps / 4.0, dlt / 4.0, "Estimation: the rounds of Reduction, sparse vector and truncated Laplace "
                  "(Algorithm 2, Theorem A.1)")]
        steps += [(eps / (2.0 * d), dlt / (2.0 * d), f"depth {j}: window, truncated discrete Laplace of bound "
                   f"{self.calibration.window} (Lemma 3.3)") for j in range(d)]
        out: list[Measurement] = []
        for e, dl, label in steps:
            if k > 1:  # group privacy (Fact 2.2) for k records
                e, dl, label = k * e, dl * math.expm1(k * e) / math.expm1(e), f"{label}; group privacy, {k} records"
            out.append(ApproxDP(e, dl, label))
        return PrivacyLoss(who, tuple(out))

    def node_errors(self) -> np.ndarray:
        """The exact standard error of every node's estimate (node order of the hierarchy), as a
        release reports it (``stderr``): Laplace/Gaussian noise of the public variance through the
        least-squares estimate over the tree (Honaker 2015; consistent) or raw; NaN for the
        multiplicative method (its error is within the window, ``calibration.window``, always)."""
        h, var = self.hierarchy, self.calibration.noise_variance
        if var is None:
            return np.full(h.n_nodes, np.nan)
        if not self.consistent:
            return np.full(h.n_nodes, math.sqrt(var))
        vs = [np.full(s, var) for s in h.sizes]
        est = consistent_estimates([np.zeros(s) for s in h.sizes], vs, h.parents)
        return np.sqrt(np.concatenate(node_variances(vs, h.parents, est.V)))

    def expected_error(self, path: str | Sequence[Any] = "") -> float:
        """The exact standard error of the count of the node named by ``path`` (``""``: the total),
        before any ``nonnegative``/``integer`` post-processing (:meth:`node_errors`)."""
        return float(self.node_errors()[self.hierarchy.node_id(path)])

