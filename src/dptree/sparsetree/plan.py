"""The plan of a sparse range tree: everything decided from public parameters, before any data.

The domain (:mod:`dptree.sparsetree.keys`), the layout, the noise of each phase or level, and the
privacy statement (:func:`dptree.privacy.statement.make_statement`). The accounting of both
methods is in :mod:`dptree.sparsetree.mechanism`; every scale is rounded up to the sampler's
dyadic value, so the spend is at most the budget.

* ``"privtree"``: the shape costs eps_1 = ``structure_share`` * epsilon, lambda_1 =
  k (2b - 1) / ((b - 1) eps_1), delta = ceil(lambda_1 ln(4b)), theta = ``threshold`` (default 0);
  the counts cost eps_2 = epsilon - eps_1, at scale k H / eps_2 on each of the H depths of the
  count tree of the released shape (:func:`~dptree.sparsetree.mechanism.count_tree`; H is in the
  release's measurements: it is a function of the released shape).
* ``"levels"``: each of the L levels costs epsilon / L (scale k L / epsilon); a node is expanded
  from the noisy count ``threshold`` (default ceil(lambda ln(4b))).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Integral, Real
from typing import Any, cast

import numpy as np

from dptree import noise as _noise
from dptree._validation import Interval, Options, validate_params
from dptree.errors import InvalidParameterError
from dptree.privacy.budget import RANGE_TREE_BUDGET_RANGE, check_release_budget
from dptree.privacy.statement import Neighbors, make_statement
from dptree.sparsetree.keys import KeyDomain
from dptree.sparsetree.mechanism import (
    Measurement,
    SparseLayout,
    default_threshold,
    grow_structure,
    level_nodes,
    measure_count_tree,
    measure_levels,
    privtree_delta,
    realised_depths,
)

__all__ = ["SparsePlan", "plan_sparse_tree", "BRANCHINGS", "METHODS"]

#: branching factors: powers of two, so that every node is a range of keys sharing a bit prefix
BRANCHINGS = (2, 4, 8, 16, 32, 64, 128, 256)
METHODS = ("privtree", "levels")


@dataclass
class SparsePlan:
    """The public parameters of a sparse range tree and what follows from them."""

    domain: KeyDomain
    layout: SparseLayout
    method: str
    epsilon: float
    max_contributions: int
    dense_depth: int
    threshold: int
    structure_share: float | None = None
    structure_scale: Fraction | None = None  # privtree: lambda_1
    delta: int | None = None  # privtree: the bias per level
    level_scale: Fraction | None = None  # levels: the scale of every level
    statement: dict[str, Any] = field(default_factory=dict)

    @property
    def counts_epsilon(self) -> Fraction:
        """privtree: eps_2, the budget of the counts."""
        assert self.structure_share is not None
        return Fraction(self.epsilon) * (1 - Fraction(self.structure_share))

    def count_scale(self, h: int) -> Fraction:
        """The discrete-Laplace scale of the counts when the released tree has h levels."""
        if self.method == "levels":
            assert self.level_scale is not None
            return self.level_scale
        return _noise.laplace_scale_used(Fraction(self.max_contributions * max(h, 1)) / self.counts_epsilon)

    def measure(self, keys: np.ndarray, source: _noise.RandomSource | _noise.RngLike, *, roots: int = 1
                ) -> Measurement:
        """The private step: run the method on sorted uint64 offsets ``keys`` (``roots`` > 1:
        independent copies, copy i's keys offset by i * 2^bits, for the audit). ``source``: a
        RandomSource, or what :func:`dptree.noise.make_source` takes (the audit passes integer seeds)."""
        if not hasattr(source, "random_bytes"):
            source = _noise.make_source(source)
        src = cast(_noise.RandomSource, source)
        lay = self.layout
        if self.method == "levels":
            assert self.level_scale is not None
            levels = measure_levels(keys, lay, [self.level_scale] * lay.depth, [self.threshold] * lay.depth,
                                    self.dense_depth, src, roots=roots)
            shape = [lv.index for lv in levels]
            return Measurement(shape, level_nodes(lay, levels), realised_depths(lay, shape, roots))
        assert self.structure_scale is not None and self.delta is not None
        shape = grow_structure(keys, lay, self.structure_scale, self.delta, self.threshold, self.dense_depth, src,
                               roots=roots)
        return measure_count_tree(keys, lay, shape, self.count_scale, src, roots=roots)

    def variances(self, height: int) -> list[float]:
        """The exact noise variance of the counts of each depth of the count tree (``height``:
        privtree: its number of depths H; levels: ignored, every level 1..L)."""
        depths = self.layout.depth if self.method == "levels" else height
        return [_noise.discrete_laplace_variance(self.count_scale(height))] * depths


def _check_branching(branching: Any) -> int:
    if isinstance(branching, bool) or not isinstance(branching, Integral) or int(branching) not in BRANCHINGS:
        raise InvalidParameterError(f"branching must be a power of two among {list(BRANCHINGS)}, got {branching!r}")
    return int(branching)


def _statement(plan: SparsePlan) -> dict[str, Any]:
    dom, lay, k = plan.domain, plan.layout, plan.max_contributions
    L, b = lay.depth, lay.branching
    common = {"budget_requested": {"epsilon": plan.epsilon, "delta": 0.0}, "root": "not measured",
              "dense_depth": plan.dense_depth}
    tree = f"sparse range tree over 2^{dom.bits} keys, {b}-ary, up to {L} levels"
    if plan.method == "levels":
        assert plan.level_scale is not None
        eps_level = Fraction(k) / plan.level_scale
        return make_statement(
            mechanism=f"{tree}; every level noised (discrete Laplace), children measured under nodes whose "
                      "noisy count reaches the threshold; adaptive composition over levels",
            neighbors=Neighbors("add_remove", k), guarantee="pure epsilon-DP", private=True,
            budget_spent={"epsilon": float(eps_level * L), "delta": 0.0}, method="levels",
            levels={"count": L, "epsilon_each": float(eps_level), "laplace_scale": float(plan.level_scale),
                    "l1_sensitivity": float(k), "threshold": plan.threshold}, **common)
    assert plan.structure_scale is not None and plan.delta is not None
    eps1 = Fraction(k * (2 * b - 1), b - 1) / plan.structure_scale
    eps2 = max(Fraction(k * h) / plan.count_scale(h) for h in range(1, L + 1))
    return make_statement(
        mechanism=f"{tree}; shape by PrivTree's biased-count splits (Zhang, Xiao, Xie 2016, Thm 3.1), then "
                  "the ranges of its count tree (branching nodes, chain remainders) noised (discrete Laplace), "
                  "sequential composition",
        neighbors=Neighbors("add_remove", k), guarantee="pure epsilon-DP", private=True,
        budget_spent={"epsilon": float(eps1 + eps2), "delta": 0.0}, method="privtree",
        structure={"epsilon": float(eps1), "laplace_scale": float(plan.structure_scale), "bias_delta": plan.delta,
                   "threshold": plan.threshold, "share": plan.structure_share},
        counts={"epsilon": float(eps2), "laplace_scale": f"{k} H / {float(plan.counts_epsilon):.17g}, rounded up; "
                "H = the depth of the count tree of the released shape (in the measurements)", "l1_sensitivity_per_level": float(k)},
        **common)


@validate_params({
    "epsilon": [Interval(Real, 0, None, closed="neither", hint="e.g. epsilon=1.0")],
    "max_contributions": [Interval(Integral, 1, None, hint="records one person may contribute, e.g. 1")],
    "dense_depth": [None, Interval(Integral, 1, None, hint="e.g. dense_depth=3")],
    "threshold": [None, Interval(Integral, None, None, hint="an integer count, e.g. threshold=50")],
    "method": [Options(METHODS)],
    "structure_share": [Interval(Real, 0, 1, closed="neither", hint="a fraction of epsilon, e.g. 0.2")],
})
def plan_sparse_tree(domain: KeyDomain, *, epsilon: float, branching: int = 16, max_contributions: int = 1,
                     dense_depth: int | None = None, threshold: int | None = None, method: str = "privtree",
                     structure_share: float = 0.2) -> SparsePlan:
    """Validate the public parameters and calibrate the noise (no data involved).

    ``dense_depth``: levels 1 .. dense_depth - 1 expand every node (default: levels, while a level
    holds at most 4096 nodes; privtree, 1: a forced split would be a branch of the count tree). ``threshold``: privtree's theta (default 0) or the levels method's noisy count
    from which a node is expanded (default ceil(lambda ln(4 b))). ``structure_share``: privtree's
    share of epsilon for the shape.
    """
    check_release_budget(float(epsilon), "epsilon", RANGE_TREE_BUDGET_RANGE)
    b = _check_branching(branching)
    layout = SparseLayout(domain.bits, b)
    L, k = layout.depth, int(max_contributions)
    if dense_depth is None:  # privtree: no forced splits (every split is a branch of the count tree)
        dense_depth = 1
        while method == "levels" and dense_depth < L and (1 << (domain.bits - layout.shifts[dense_depth + 1])) <= 4096:
            dense_depth += 1
    dense_depth = min(int(dense_depth), L)
    if method == "levels":
        scale = _noise.laplace_scale_used(Fraction(k * L) / Fraction(float(epsilon)))
        theta = default_threshold(scale, b) if threshold is None else int(threshold)
        if theta < 1:
            raise InvalidParameterError("the levels method expands from a noisy count of at least 1: threshold >= 1")
        plan = SparsePlan(domain, layout, method, float(epsilon), k, dense_depth, theta, level_scale=scale)
    else:
        eps1 = Fraction(float(epsilon)) * Fraction(float(structure_share))
        lam1 = _noise.laplace_scale_used(Fraction(k * (2 * b - 1), b - 1) / eps1)
        plan = SparsePlan(domain, layout, method, float(epsilon), k, dense_depth, 0 if threshold is None else
                          int(threshold), structure_share=float(structure_share), structure_scale=lam1,
                          delta=privtree_delta(lam1, b))
    plan.statement = _statement(plan)
    return plan
