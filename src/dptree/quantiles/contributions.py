"""``quantiles(..., user_id=..., max_contributions="private")``: the contribution bound chosen
privately, then the quantiles at it.

The choice is :class:`dptree.rangetree.contributions.PrivateContributionsPlan`'s, over the range
tree the quantiles are read off (the tree method's tree; for the exponential-mechanism methods,
which bound users on an integer domain of points, the tree over those points), at its prefix
workload (the CDF values the quantiles are read off). Every method's noise grows with k (the
tree's levels at sensitivity k; the exponential mechanisms at epsilon / k per record, so their rank
error grows as k), and dropping records biases the ranks where the users with many records hold
other values than the rest: the trade-off of the range tree's level. ``contributions_share`` of
epsilon chooses k; the quantiles (the method resolved before any data, from public quantities) run
at k with the rest: epsilon-DP in all under adding or removing one user. The chosen k is
``release.max_contributions`` (a DP output, declared noisy with what depends on it); the file
records the choice (``parameters.contributions``) and its loader re-derives the statement.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from dptree.errors import InvalidParameterError
from dptree.noise import RngLike, make_source
from dptree.privacy.budget import BUDGET_RANGE, Budget
from dptree.privacy.loss import PrivacyLoss
from dptree.privacy.statement import Neighbors
from dptree.quantiles.plan import QuantilesPlanCore, make_plan
from dptree.quantiles.release import PrivateContributionsQuantiles, QuantilesRelease, choice_plan
from dptree.rangetree.contributions import PrivateContributionsPlan, with_private_contributions

__all__ = ["PrivateQuantilesPlan", "plan_private_quantiles"]


@dataclass(frozen=True, eq=False)
class PrivateQuantilesPlan:
    """A quantiles release at a privately chosen bound: everything public, before any data. ``core``
    is the quantiles' plan at k = 1 with the quantiles' share of epsilon (the method, the domain,
    the declared sizes; at the chosen k the same method runs); ``choice`` chooses k."""

    core: QuantilesPlanCore
    choice: PrivateContributionsPlan
    epsilon: float
    user_id: Any
    n_max: int | None
    #: the quantiles' plan class at the chosen k (:class:`dptree.quantiles.api.QuantilesPlan`: it releases)
    plan_cls: Any = QuantilesPlanCore

    @property
    def method(self) -> str:
        return self.core.method

    @property
    def budget(self) -> Budget:
        return Budget.pure(self.epsilon)

    @property
    def statement(self) -> dict[str, Any]:
        """The budget charged before the data is read (with :meth:`privacy_loss`)."""
        return {"budget_requested": {"epsilon": self.epsilon, "delta": 0.0, "rho": None},
                "budget_spent": {"epsilon": self.epsilon, "delta": 0.0}, "contributions": self.choice.describe(),
                "private": True}

    def privacy_loss(self) -> PrivacyLoss:
        """Both steps: the choice's exponential mechanism, then the quantiles' measurements at the
        rest of epsilon, the same for every k (each exponential mechanism listed at its share: at
        epsilon / k per record, k records cost its share) or, for the tree, its levels at the cap
        (:meth:`PrivateContributionsPlan.privacy_loss`). Under add/remove one user."""
        first, *tree = self.choice.privacy_loss().measurements
        rest = tree if self.method == "tree" else list(self.core.privacy_loss().measurements)
        return PrivacyLoss(Neighbors("add_remove", self.choice.cap), (first, *rest))

    def release(self, data: Any, *, column: str | None = None, on_invalid: str = "error", rng: RngLike = None,
                by: Any = None, unknown: str = "error") -> QuantilesRelease:
        """Read the records per user, choose k, then the quantiles at k by the planned method (one
        random source for all)."""
        from dptree.data.histograms import records_per_user

        if by is not None:
            raise InvalidParameterError("max_contributions='private' releases one set of quantiles: for a release by "
                                        "group declare max_contributions=k", parameter="by")
        src = make_source(rng)
        per_user = records_per_user(data, self.choice.tree_at(1), user_id=self.user_id, cap=self.choice.cap,
                                    column=column, on_invalid=on_invalid)  # type: ignore[arg-type]
        k = self.choice.choose(per_user, src)
        c = self.core
        plan = make_plan(c.q, c.lower, c.upper, self.choice.tree_budget, c.method, c.input_width, "add_remove", None,
                         self.n_max, k, self.user_id, c.n_min, level=c.level, interval=c.interval, grid=c.grid,
                         cls=self.plan_cls)
        rel = plan.release(data, column=column, on_invalid=on_invalid, rng=src)
        assert isinstance(rel, QuantilesRelease)
        privacy = with_private_contributions(rel.privacy, self.choice.record(k), self.choice, rest="quantiles")
        privacy["private"] = rel.privacy["private"]
        fields = {f.name: getattr(rel, f.name) for f in dataclasses.fields(rel)}
        return PrivateContributionsQuantiles(**{**fields, "privacy": privacy, "epsilon": self.epsilon})


def plan_private_quantiles(qa: np.ndarray, *, lower: Any, upper: Any, epsilon: float, method: str, level: float,
                           n: int | None, n_max: int | None, n_min: int | None, width: Any, neighbors: str, grid: int,
                           interval: str, groups: Any, user_id: Any, share: float, cap: int,
                           plan_cls: Any = QuantilesPlanCore) -> PrivateQuantilesPlan:
    """Every public check of quantiles at a private bound, before any data is read: the method
    resolved at the quantiles' share of epsilon, the choice, and that every k up to the cap runs.
    ``plan_cls``: the quantiles' plan class (:func:`dptree.quantiles.api.plan_quantiles` passes the
    one that releases)."""
    if user_id is None:
        raise InvalidParameterError("max_contributions='private' chooses how many records to keep per user: pass "
                                    "user_id= (the column, or array, of each record's user)", parameter="user_id")
    if groups is not None:
        raise InvalidParameterError("max_contributions='private' releases one set of quantiles: for a release by "
                                    "group declare max_contributions=k", parameter="groups")
    if neighbors != "add_remove":
        raise InvalidParameterError("max_contributions='private' is stated under add/remove one user: use "
                                    "neighbors='add_remove'", parameter="neighbors")
    probe = choice_plan("tree", epsilon, 0, 1, None, share, cap)  # the split, checked on a placeholder domain
    rest = probe.tree_budget
    core = make_plan(qa, lower, upper, rest, method, width, "add_remove", n, n_max, 1, user_id, n_min, level=level,
                     interval=interval, grid=grid, cls=plan_cls)
    if rest / cap < BUDGET_RANGE[0]:  # every k up to the cap must run: epsilon / k per record
        raise InvalidParameterError(f"epsilon={epsilon:g} leaves {rest / cap:.3g} per record at the largest bound "
                                    f"contributions_cap={cap}, below the supported {BUDGET_RANGE[0]:g}: lower "
                                    "contributions_cap or raise epsilon", parameter="contributions_cap")
    choice = choice_plan(core.method, epsilon, core.lo, core.hi, core.width, share, cap)
    return PrivateQuantilesPlan(core, choice, float(epsilon), user_id, n_max, plan_cls)
