"""The plan of a range tree with sums: a count tree and a sum tree of weights, from public values only.

Beside the b-ary tree of counts (Smith & Ullman 2021; Honaker 2015), a second tree of the same
layout and level split measures, in every node, the sum of its records' weights read on a public
grid (:class:`~dptree.data.weights.WeightGrid`: a weight is rounded to the nearest multiple of
``weight_resolution``, halves up, and clamped to ``weight_bounds``; an exact integer number of
units). Privacy, with k = ``max_contributions`` records per person and M = max(|lower|, |upper|)
/ resolution: adding or removing one person moves one node per level of the count tree by at most
k and of the sum tree by at most k * M units (L1 and L2 per level). The count tree gets the share
1 - f of the budget and the sum tree f; both read the same records, so the release spends the sum
(sequential composition): epsilon-DP with Laplace noise, rho-zCDP with Gaussian noise (an
(epsilon, delta) budget is converted to rho, CKS 2020 Cor. 13, and split as rho). Add/remove
neighbors only (under ``replace`` the weights' total would not be public).

The split f (``sum_share=None``) minimises the variance of the mean of a typical range,
Var(S/N) ~ (Var S + m^2 Var N) / N^2 (delta method) with the mean m of a range taken at the
midpoint of the weight bounds (a public value) and both trees of the same layout: the sum tree's
variance goes as M^2 / f^2 (Laplace; M^2 / f for Gaussian noise) and the count tree's as
1 / (1 - f)^2 (1 / (1 - f)), so with r = |midpoint| / M the optimum is
f = 1 / (1 + r^(2/3)) for Laplace noise and f = 1 / (1 + r) for Gaussian noise, rounded to
three decimals and kept within [0.1, 0.9] so that the counts stay measured (bounds (0, B):
f = 0.614 Laplace, 0.667 Gaussian).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from numbers import Real
from typing import Any, TypeVar

from dptree._validation import Interval, Options, validate_params
from dptree.data.domain import Domain
from dptree.data.weights import WeightGrid
from dptree.errors import InvalidParameterError
from dptree.privacy.budget import Budget, zcdp_epsilon
from dptree.privacy.loss import PrivacyLoss
from dptree.privacy.statement import Neighbors, make_statement
from dptree.privacy.unit import PrivacyUnit, privacy_values
from dptree.rangetree.calibration import check_budget_range, resolve_budget
from dptree.rangetree.layout import TreeLayout
from dptree.rangetree.plan import TreePlan
from dptree.rangetree.release import RangeTreePlan, plan_range_tree

__all__ = ["SumTreePlan", "build_sum_plan", "sum_share_for", "MAX_SUM_CELLS"]

#: the most (bucket, weight unit) cells a release with sums counts: the engines count the records
#: of each cell (:class:`~dptree.data.engines.base.Units`), 8 bytes a cell
MAX_SUM_CELLS = 1 << 24


P = TypeVar("P", bound="SumTreePlan")


def sum_share_for(grid: WeightGrid, noise: str) -> Fraction:
    """The share f of the budget the sum tree gets (the rule of the module docstring), exact."""
    m = float(abs(grid.lower + grid.upper) / 2 / grid.resolution)
    r = m / grid.sensitivity
    f = 1.0 / (1.0 + r ** (2.0 / 3.0)) if noise == "laplace" else 1.0 / (1.0 + r)
    return Fraction(min(max(round(f, 3), 0.1), 0.9)).limit_denominator(1000)


def _split(budget: Budget, share: Fraction) -> tuple[float | None, float | None, Budget]:
    """(epsilon, rho) of the count tree and the sum tree's budget: share 1 - f and f of epsilon
    (Laplace) or of rho (Gaussian), the two never more than the whole."""
    pure = budget.kind == "pure"
    whole = Fraction(budget.epsilon if pure and budget.epsilon is not None else budget.as_rho())
    counts = float(whole * (1 - share))
    sums = float(whole - Fraction(counts))
    while Fraction(counts) + Fraction(sums) > whole:
        sums = math.nextafter(sums, 0.0)
    if pure:
        return counts, None, Budget.pure(sums)
    return None, counts, Budget.zcdp(sums)


@dataclass
class SumTreePlan:
    """The plan of a range tree with sums (module docstring): ``counts`` (the count tree's plan, at
    share 1 - f), ``sums`` (:meth:`TreePlan.sum_tree`, share f), the weight ``grid`` and ``share``
    f, the requested ``budget`` and the combined ``statement``. Made before any data is read;
    :meth:`privacy_loss` lists both trees' measurements, which a ledger charges. This module does
    not know the release class (:class:`~dptree.rangetree.sums_release.RangeSumsPlan` adds it)."""

    counts: RangeTreePlan
    sums: TreePlan
    grid: WeightGrid
    share: Fraction
    budget: Budget
    statement: dict[str, Any]

    # what the data stage reads of a plan (LeafPlan): the count tree's
    @property
    def domain(self) -> Domain:
        return self.counts.domain

    @property
    def layout(self) -> TreeLayout:
        return self.counts.layout

    @property
    def max_contributions(self) -> int:
        return self.counts.max_contributions

    @property
    def noise(self) -> str:
        return self.counts.noise

    def check_public_total(self, *, user_id: Any = None, on_invalid: str = "error", by: Any = None) -> None:
        self.counts.check_public_total(user_id=user_id, on_invalid=on_invalid, by=by)

    def privacy_loss(self, parallel: int = 1) -> PrivacyLoss:
        """Both trees' measurements (the count tree's levels, then the sum tree's), each with its
        exact noise parameter and sensitivity (k per count level, k * M units per sum level)."""
        c, s = self.counts.privacy_loss(parallel), self.sums.privacy_loss(parallel)
        return PrivacyLoss(c.neighbors, c.measurements + s.measurements, parallel)


def _statement(counts: TreePlan, sums: TreePlan, grid: WeightGrid, share: Fraction, budget: Budget,
               loss: PrivacyLoss) -> dict[str, Any]:
    """The statement of a release with sums (one schema, :mod:`dptree.privacy.statement`)."""
    name = "Laplace" if counts.noise == "laplace" else "Gaussian"
    if counts.noise == "laplace":
        guarantee, spent = "pure epsilon-DP", {"epsilon": loss.epsilon(), "delta": 0.0}
    else:
        guarantee, spent = "rho-zCDP", {"rho": loss.rho()}
        if budget.kind == "approx":
            guarantee += ", implies (epsilon, delta)-DP"
            spent.update(epsilon=zcdp_epsilon(loss.rho(), budget.delta), delta=budget.delta)
    k, w = counts.max_contributions, int(sums.record_weight or 1)

    def tree(plan: TreePlan) -> dict[str, Any]:
        return {key: plan.statement[key] for key in ("budget_spent", "l1_sensitivity", "l2_sensitivity", "levels")}

    return make_statement(
        mechanism=f"range tree of counts and of sums of weights on a public grid, {counts.layout.branching}-ary, "
                  f"discrete {name} noise per level of each (Smith & Ullman 2021; Honaker 2015)",
        neighbors=Neighbors(counts.neighbors, k),
        guarantee=guarantee,
        private=True,
        budget_requested={"epsilon": budget.epsilon, "delta": budget.delta, "rho": budget.rho},
        budget_spent=spent,
        budget_split=dict(counts.statement["budget_split"], sums=float(share)),
        weights={**grid.to_dict(), "rule": "round to the nearest multiple of the resolution (halves up), clamp to "
                 "the bounds; missing or infinite weights are invalid values",
                 "sensitivity_units": w, "sum_level_sensitivity_units": k * w},
        counts=tree(counts),
        sums=tree(sums),
        root="not measured" if counts.noise_parameters[0] is None else "noised",
    )


@privacy_values
@validate_params({
    "epsilon": [None, Interval(Real, 0, None, closed="neither", hint="e.g. epsilon=1.0")],
    "rho": [None, Interval(Real, 0, None, closed="neither", hint="e.g. rho=0.5 with noise='gaussian'")],
    "noise": [Options(("laplace", "gaussian"))],
    "sum_share": [None, Interval(Real, 0, 1, closed="neither", hint="e.g. sum_share=0.6 (the sum tree's share "
                                                                    "of the budget)")],
})
def build_sum_plan(plan_type: type[P], *, lower: Any, upper: Any, weight_bounds: Any, weight_resolution: Any = 1,
                    sum_share: float | None = None, epsilon: float | None = None, delta: float = 0.0,
                    rho: float | None = None, width: Any = None, branching: int | None = None,
                    noise: str = "laplace", neighbors: str = "add_remove", max_contributions: int = 1,
                    levels: str = "uniform", unit: PrivacyUnit | None = None,
                    budget: Budget | None = None) -> P:
    """Validate public parameters and plan a range tree with sums (module docstring): the count
    tree at share 1 - f, the sum tree at f (``sum_share``, default the rule of the module
    docstring). ``weight_bounds=(lower, upper)`` and ``weight_resolution`` make the public grid
    (:class:`~dptree.data.weights.WeightGrid`). No data is read. ``plan_type``: the class of the plan
    (:class:`~dptree.rangetree.sums_release.RangeSumsPlan`, public as :func:`dptree.plan_range_sums`,
    which adds the release)."""
    if neighbors == "replace":
        raise InvalidParameterError("sums of weights use add/remove neighbors: under 'replace' the total of the "
                                    "weights is not public; pass neighbors='add_remove'", parameter="neighbors")
    try:
        wlo, whi = weight_bounds
    except (TypeError, ValueError):
        raise InvalidParameterError("weight_bounds must be a pair (lower, upper), e.g. weight_bounds=(0, 100)",
                                    parameter="weight_bounds") from None
    grid = WeightGrid.of(wlo, whi, weight_resolution)
    check_budget_range(epsilon, rho)
    whole = resolve_budget(noise, epsilon, delta, rho)
    share = Fraction(sum_share).limit_denominator(10**6) if sum_share is not None else sum_share_for(grid, noise)
    count_epsilon, count_rho, sum_budget = _split(whole, share)
    counts = plan_range_tree(lower=lower, upper=upper, width=width, branching=branching, noise=noise,
                             neighbors=neighbors, max_contributions=max_contributions, levels=levels,
                             epsilon=count_epsilon, rho=count_rho)
    if counts.domain.size * grid.cells > MAX_SUM_CELLS:
        raise InvalidParameterError(
            f"buckets x weight units ({counts.domain.size} x {grid.cells}) exceed {MAX_SUM_CELLS}, the cells a "
            "release with sums counts: choose a coarser weight_resolution or a larger width",
            parameter="weight_resolution")
    sums = counts.sum_tree(sum_budget, grid.sensitivity, calibration="zcdp")
    plan = plan_type(counts, sums, grid, share, whole, {})
    plan.statement = _statement(counts, sums, grid, share, whole, plan.privacy_loss())
    return plan
