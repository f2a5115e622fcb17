"""The plan of a sparse range tree: everything decided from public parameters, before any data.

The domain (:mod:`dptree.sparsetree.keys`), the layout, each level's discrete-Laplace scale and
expansion threshold, and the privacy statement (:func:`dptree.privacy.statement.make_statement`).
Accounting (:mod:`dptree.sparsetree.mechanism`): level d has L1 sensitivity k (one person's k
records lie in at most k of its disjoint nodes, whichever nodes the levels above chose), scale
lambda = k L / epsilon rounded up to the sampler's dyadic value, so level d spends k / lambda and
the L levels compose (adaptively) to at most epsilon.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Integral, Real
from typing import Any

from dptree import noise as _noise
from dptree._validation import Interval, validate_params
from dptree.errors import InvalidParameterError
from dptree.privacy.budget import RANGE_TREE_BUDGET_RANGE, check_release_budget
from dptree.privacy.statement import Neighbors, make_statement
from dptree.sparsetree.keys import KeyDomain
from dptree.sparsetree.mechanism import SparseLayout, default_threshold

__all__ = ["SparsePlan", "plan_sparse_tree", "BRANCHINGS"]

#: branching factors: powers of two, so that every node is a range of keys sharing a bit prefix
BRANCHINGS = (2, 4, 8, 16, 32, 64, 128, 256)


@dataclass
class SparsePlan:
    """The public parameters of a sparse range tree and what follows from them."""

    domain: KeyDomain
    layout: SparseLayout
    epsilon: float
    max_contributions: int
    dense_depth: int
    scales: list[Fraction]  # per level 1..L
    thresholds: list[int]  # per level 1..L
    statement: dict[str, Any] = field(default_factory=dict)

    @property
    def variances(self) -> list[float]:
        """The exact noise variance of each level 1..L."""
        return [_noise.discrete_laplace_variance(s) for s in self.scales]


def _check_branching(branching: Any) -> int:
    if isinstance(branching, bool) or not isinstance(branching, Integral) or int(branching) not in BRANCHINGS:
        raise InvalidParameterError(f"branching must be a power of two among {list(BRANCHINGS)}, got {branching!r}")
    return int(branching)


@validate_params({
    "epsilon": [Interval(Real, 0, None, closed="neither", hint="e.g. epsilon=1.0")],
    "max_contributions": [Interval(Integral, 1, None, hint="records one person may contribute, e.g. 1")],
    "dense_depth": [None, Interval(Integral, 1, None, hint="e.g. dense_depth=3")],
    "threshold": [None, Interval(Integral, 1, None, hint="a noisy count, e.g. threshold=50")],
})
def plan_sparse_tree(domain: KeyDomain, *, epsilon: float, branching: int = 16, max_contributions: int = 1,
                     dense_depth: int | None = None, threshold: int | None = None) -> SparsePlan:
    """Validate the public parameters and calibrate every level (no data involved).

    ``dense_depth``: levels 1 .. dense_depth - 1 expand every node (default: while a level holds
    at most 4096 nodes). ``threshold``: the noisy count from which a node is expanded (default
    ceil(lambda ln(4 b)), :func:`~dptree.sparsetree.mechanism.default_threshold`).
    """
    check_release_budget(float(epsilon), "epsilon", RANGE_TREE_BUDGET_RANGE)
    b = _check_branching(branching)
    layout = SparseLayout(domain.bits, b)
    L, k = layout.depth, int(max_contributions)
    if dense_depth is None:
        dense_depth = 1
        while dense_depth < L and (1 << (domain.bits - layout.shifts[dense_depth + 1])) <= 4096:
            dense_depth += 1
    dense_depth = min(int(dense_depth), L)
    scale = _noise.laplace_scale_used(Fraction(k * L) / Fraction(float(epsilon)))
    scales = [scale] * L
    theta = default_threshold(scale, b) if threshold is None else int(threshold)
    thresholds = [theta] * L
    eps_level = Fraction(k) / scale
    levels = [{"level": d, "epsilon": float(eps_level), "l1_sensitivity": float(k), "laplace_scale": float(scale),
               "noise_variance": _noise.discrete_laplace_variance(scale),
               "expansion": "every node" if d < dense_depth else ("none (single keys)" if d == L else
                                                                   f"noisy count >= {theta}")}
              for d in range(1, L + 1)]
    statement = make_statement(
        mechanism=(f"sparse range tree over 2^{domain.bits} keys, {b}-ary, {L} levels, discrete Laplace noise "
                   "per measured node; children measured only under nodes whose noisy count reaches the "
                   "threshold (adaptive composition over levels)"),
        neighbors=Neighbors("add_remove", k),
        guarantee="pure epsilon-DP",
        private=True,
        budget_requested={"epsilon": float(epsilon), "delta": 0.0},
        budget_spent={"epsilon": float(eps_level * L), "delta": 0.0},
        l1_sensitivity_per_level=float(k),
        levels=levels,
        root="not measured",
    )
    return SparsePlan(domain, layout, float(epsilon), k, dense_depth, scales, thresholds, statement)
