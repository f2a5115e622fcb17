"""The plan of a 2-D range tree (a quadtree over a public grid): everything decided before any data.

The mechanism is the 1-D range tree's (:mod:`dptree.rangetree.plan`) on the quadtree's leaves in
Morton order (:mod:`dptree.spatial.grid`): a regular 4-ary tree over 4^L cells, one noisy count
per node of every measured level, and Honaker's (2015) least squares. Under add/remove of one
record, the record's cell and its ancestors (one node per level) change by one: level l's
vector of counts has L1 and L2 sensitivity k (k = ``max_contributions``), as in the 1-D tree
(:func:`dptree.rangetree.calibration.level_sensitivities`; under ``replace`` 2k, the root the
public n); level l gets the budget share w_l and basic composition over the levels gives
epsilon-DP (Laplace) or rho-zCDP (Gaussian).

The budget split over the levels (``levels=``):

* ``"all_rectangles"`` (default): the shares that minimise the exact average variance of the
  least-squares estimate over all rectangles of the padded grid
  (:data:`dptree.rangetree.allocation.GRID_WORKLOAD`: the closed form of the 1-D all-range split
  with each level's a_j the product of the two sides');
* ``"geometric"``: the geometric budget of Cormode, Procopiuc, Srivastava, Shen & Yu (2012),
  Section 4.2: every level measured, the share growing by 2^(1/3) per level towards the leaves;
* ``"uniform"``: equal shares on every level below the root (Honaker 2015, Algorithm 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Self, cast

import numpy as np

from dptree import noise as _noise
from dptree._validation import Options, validate_params
from dptree.data.domain import make_domain
from dptree.privacy.budget import Budget
from dptree.privacy.loss import PrivacyLoss
from dptree.privacy.statement import Neighbors, Relation
from dptree.privacy.unit import PrivacyUnit, privacy_values
from dptree.rangetree.allocation import GRID_WORKLOAD, level_weights
from dptree.rangetree.calibration import (
    NoiseKind,
    calibrate_gaussian,
    calibrate_laplace,
    check_budget_range,
    check_noise_range,
    exact_shares,
    level_sensitivities,
    resolve_budget,
)
from dptree.rangetree.layout import build_layout
from dptree.rangetree.plan import TREE_CONSTRAINTS, TreePlan, _statement, check_memory
from dptree.spatial.grid import Grid, make_grid

__all__ = ["QuadtreePlan", "SPLITS", "grid_weights", "noise_fractions"]

#: the accepted budget splits (module docstring)
SPLITS = (GRID_WORKLOAD, "geometric", "uniform")

_WORKLOADS = {
    GRID_WORKLOAD: "all rectangles of the padded grid: shares minimise their exact average variance",
    "geometric": "the geometric budget of Cormode et al. (2012): shares grow by 2^(1/3) per level towards the leaves",
    "uniform": "none: equal shares on the levels below the root",
}


def grid_weights(depth: int, levels: str, noise: NoiseKind, root_exact: bool) -> np.ndarray:
    """The budget share of each level of the quadtree of ``depth`` (root first; 0: not measured),
    from public parameters only."""
    layout = build_layout(4**depth, 4)
    if levels == "geometric":
        w = 2.0 ** (np.arange(depth + 1) / 3.0)
        if root_exact:
            w[0] = 0.0
        return w / w.sum()
    w = level_weights(layout, strategy=levels, noise=noise, root_exact=root_exact)
    if root_exact:
        w[0] = 0.0
    return w


@dataclass
class QuadtreePlan:
    """The public part of a 2-D range-tree release: the grid and the 1-D tree plan of its Morton-ordered
    leaves (``tree``: layout, per-level noise, privacy statement; its ``measure`` is the one private
    step). Built by :meth:`build` (public as :func:`dptree.plan_range_tree_2d`) before any data is read."""

    grid: Grid
    tree: TreePlan
    statement: dict[str, Any]

    @property
    def levels(self) -> str:
        return self.tree.levels

    @property
    def noise(self) -> str:
        return self.tree.noise

    @property
    def neighbors(self) -> str:
        return self.tree.neighbors

    @property
    def max_contributions(self) -> int:
        return self.tree.max_contributions

    @property
    def budget(self) -> Budget:
        return self.tree.budget

    def privacy_loss(self) -> PrivacyLoss:
        """The noisy measurements: one per measured level (:meth:`TreePlan.privacy_loss`)."""
        return self.tree.privacy_loss()

    def check_public_total(self, *, on_invalid: str = "error") -> None:
        """Under ``replace`` the exact root must be the public number of input records."""
        self.tree.check_public_total(on_invalid=on_invalid)

    def expected_error(self, x: tuple[Any, Any], y: tuple[Any, Any]) -> Any:
        """The exact standard error of the count of the rectangle ``x`` x ``y`` a release of this
        plan will answer (its ``stderr``), from public parameters alone."""
        from dptree.spatial.estimates import GridEstimates

        return GridEstimates(self.grid, self.noise, self.tree.level_variance, None).stderr_of(self.grid, x, y)

    @classmethod
    @privacy_values
    @validate_params({**TREE_CONSTRAINTS, "levels": [Options(SPLITS)]})
    def build(
        cls,
        *,
        lower: Any,
        upper: Any,
        epsilon: float | None = None,
        delta: float = 0.0,
        rho: float | None = None,
        width: Any = None,
        noise: str = "laplace",
        neighbors: str = "add_remove",
        max_contributions: int = 1,
        levels: str = GRID_WORKLOAD,
        gaussian_calibration: str = "exact",
        unit: PrivacyUnit | None = None,
        budget: Budget | None = None,
    ) -> Self:
        """Validate the public parameters of a 2-D range tree and calibrate its noise (no data involved).

        ``lower`` = (x0, y0), ``upper`` = (x1, y1): the public grid's corners; ``width``: the bucket
        width of both axes, or a pair (floats need one). ``levels``: the budget split (module
        docstring). The other parameters are those of :func:`dptree.plan_range_tree`.

        Example::

            >>> import dptree
            >>> plan = dptree.plan_range_tree_2d(lower=(0, 0), upper=(63, 63), epsilon=1.0)
            >>> plan.grid.side, plan.tree.layout.depth
            (64, 6)
        """
        check_budget_range(epsilon, rho)
        k = int(max_contributions)
        kind = cast(NoiseKind, noise)
        who = Neighbors(cast(Relation, neighbors), k)
        spent_budget = resolve_budget(noise, epsilon, delta, rho)
        grid = make_grid(lower, upper, width)
        check_memory(grid.cells)
        root_exact = who.relation == "replace"
        layout = build_layout(grid.cells, 4)
        weights = grid_weights(grid.depth, levels, kind, root_exact)
        shares = exact_shares(weights)
        l1, l2sq = level_sensitivities(who.relation, k, layout.depth)
        with _noise.noise_scale_of("max_contributions", k, 1 if noise == "laplace" else 2):
            if noise == "laplace":
                level_noise = calibrate_laplace(spent_budget, shares, l1, root_exact)
            else:
                level_noise = calibrate_gaussian(spent_budget, shares, l2sq, root_exact,
                                                 calibration=gaussian_calibration, max_contributions=k)
        check_noise_range(noise, level_noise.parameters)
        statement = _statement(layout, budget=spent_budget, noise_kind=noise, who=who, noise=level_noise, l1=l1,
                               l2sq=l2sq, budget_split={"levels": levels, "workload": _WORKLOADS[levels]})
        name = "Laplace" if noise == "laplace" else "Gaussian"
        statement["mechanism"] = (f"2-D range tree (quadtree over a {grid.side}x{grid.side} grid in Morton order), "
                                  f"discrete {name} noise per level")
        tree = TreePlan(domain=make_domain(0, grid.cells - 1), layout=layout, budget=spent_budget, noise=kind,
                        neighbors=who.relation, max_contributions=k, levels=levels,
                        weights=np.asarray(weights, dtype=np.float64), noise_parameters=level_noise.parameters,
                        level_variance=level_noise.variances, statement=statement)
        return cls(grid=grid, tree=tree, statement=statement)


def noise_fractions(plan: QuadtreePlan) -> list[str | None]:
    """The exact per-level noise parameters as fractions (the release file's form)."""
    return [None if p is None else f"{Fraction(p).numerator}/{Fraction(p).denominator}"
            for p in plan.tree.noise_parameters]
