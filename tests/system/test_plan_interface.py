"""Every product plugs into one core: a plan built from public inputs with a budget, a statement,
a privacy loss within the budget, a release step, and a ledger charge."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pytest

import dptree
from dptree import Budget, PrivacyLoss
from dptree.rangetree.private_groups import plan_private_groups
from dptree.rangetree.api import plan_private_contributions

H = dptree.Hierarchy.from_paths([("a", "x"), ("a", "y"), ("b", "z")])

PLANS = {
    "range_tree laplace": lambda: dptree.plan_range_tree(lower=0, upper=1023, epsilon=1.0),
    "range_tree gaussian rho": lambda: dptree.plan_range_tree(lower=0, upper=1023, rho=0.5, noise="gaussian"),
    "range_tree gaussian (eps, delta)": lambda: dptree.plan_range_tree(lower=0, upper=1023, epsilon=1.0, delta=1e-6,
                                                                       noise="gaussian"),
    "range_tree replace k=3": lambda: dptree.plan_range_tree(lower=0, upper=1023, epsilon=1.0, neighbors="replace",
                                                             max_contributions=3),
    "range_tree private max_contributions": lambda: plan_private_contributions(lower=0, upper=1023, epsilon=1.0,
                                                                               user_id="u"),
    "range_tree private max_contributions gaussian": lambda: plan_private_contributions(
        lower=0, upper=1023, epsilon=1.0, delta=1e-6, noise="gaussian", user_id="u"),
    "factorized_cdf rho": lambda: dptree.plan_factorized_cdf(lower=0, upper=1023, rho=0.5),
    "factorized_cdf (eps, delta) k=2": lambda: dptree.plan_factorized_cdf(lower=0, upper=1023, epsilon=1.0,
                                                                          delta=1e-6, max_contributions=2),
    "sparse_range_tree": lambda: dptree.plan_sparse_range_tree(epsilon=1.0, lower=0, upper=2**20),
    "hierarchy laplace": lambda: dptree.plan_hierarchy_counts(H, epsilon=1.0),
    "hierarchy gaussian": lambda: dptree.plan_hierarchy_counts(H, epsilon=1.0, delta=1e-6, method="gaussian"),
    "hierarchy multiplicative": lambda: dptree.plan_hierarchy_counts(H, epsilon=1.0, delta=1e-6,
                                                                     method="multiplicative", alpha=0.5),
    "interior_point exponential": lambda: dptree.plan_interior_point(lower=0, upper=1023, epsilon=1.0),
    "interior_point treelog": lambda: dptree.plan_interior_point(lower=0, upper=2**30, epsilon=1.0, delta=1e-6,
                                                                 method="treelog", n=10**6),
    "quantile": lambda: dptree.plan_quantile(0.9, lower=0, upper=1023, epsilon=0.5),
    "learn_threshold": lambda: dptree.plan_learn_threshold(lower=0, upper=1023, epsilon=1.0),
    "quantiles auto": lambda: dptree.plan_quantiles([0.1, 0.5, 0.9], lower=0, upper=1023, epsilon=1.0),
    "quantiles joint": lambda: dptree.plan_quantiles([0.1, 0.5, 0.9], lower=0, upper=1023, epsilon=1.0,
                                                     method="joint", n=1000),
    "quantiles private max_contributions": lambda: dptree.plan_quantiles(
        [0.1, 0.5, 0.9], lower=0, upper=1023, epsilon=1.0, user_id="u", max_contributions="private"),
    "quantiles by group": lambda: dptree.plan_quantiles([0.5], lower=0, upper=1023, epsilon=1.0, groups=["a", "b"]),
    "range_tree private groups": lambda: plan_private_groups(lower=0, upper=1023, epsilon=1.0, delta=1e-6),
    "range_tree private groups, 4 per user": lambda: plan_private_groups(lower=0, upper=1023, epsilon=1.0, delta=1e-6,
                                                                         max_groups=4),
    "quantiles private groups": lambda: dptree.plan_quantiles([0.5], lower=0, upper=1023, epsilon=1.0, delta=1e-6,
                                                              groups="private", user_id="u", max_contributions=2),
}


@pytest.mark.parametrize("name", sorted(PLANS))
def test_every_plan_has_the_core_interface(name):
    plan = PLANS[name]()
    assert isinstance(plan.budget, Budget)
    assert isinstance(plan.statement, Mapping) and plan.statement["private"] is True
    assert callable(plan.release)
    loss = plan.privacy_loss()
    assert isinstance(loss, PrivacyLoss) and loss.measurements
    assert PrivacyLoss.from_dict(loss.to_dict()) == loss


@pytest.mark.parametrize("name", sorted(PLANS))
def test_the_loss_stays_within_the_budget(name):
    """Whatever accountant reads the loss, the release spends no more than it was given: pure
    budgets by basic composition, zCDP budgets by exact rho, (epsilon, delta) budgets by basic
    composition of the approximate steps or the zCDP conversion."""
    plan = PLANS[name]()
    loss, b = plan.privacy_loss(), plan.budget
    if b.kind == "pure":
        assert loss.epsilon() <= b.epsilon * (1 + 1e-9)
    elif b.kind == "zcdp":
        assert loss.rho() <= b.rho * (1 + 1e-9)
    else:
        eps, dlt = loss.epsilon_delta()
        if math.isfinite(eps) and any(m.family == "approx" for m in loss.measurements):
            assert eps <= b.epsilon * (1 + 1e-9) and dlt <= b.delta * (1 + 1e-9)
        else:  # Gaussian noise: the (epsilon, delta) its exact rho implies, or a tighter exact calibration
            assert loss.rho() < math.inf


@pytest.mark.parametrize("accountant", ["basic", "renyi"])
@pytest.mark.parametrize("name", sorted(PLANS))
def test_every_plan_can_be_charged(name, accountant, tmp_path):
    """Every plan fits a basic ledger; a renyi ledger charges every plan whose loss has a Rényi
    curve, and one with an (epsilon, delta) step only when it sets delta aside for such steps
    (approx_delta): otherwise it refuses, naming approx_delta and the basic accountant."""
    plan = PLANS[name]()
    totals = {"total_rho": 10.0} if plan.budget.kind == "zcdp" else {"total_epsilon": 10.0, "total_delta": 1e-3}
    if accountant == "renyi" and "total_epsilon" not in totals:  # a rho total has no (epsilon, delta) to filter
        with pytest.raises(dptree.errors.InvalidParameterError, match="renyi accountant needs total_epsilon"):
            dptree.Ledger(tmp_path / "b.ledger", accountant=accountant, **totals)
        return
    with dptree.Ledger(tmp_path / "b.ledger", accountant=accountant, **totals) as ledger:
        approx = any(m.family == "approx" for m in plan.privacy_loss().measurements)
        if accountant == "renyi" and approx:
            assert not ledger.can_afford(plan)
            with pytest.raises(dptree.errors.InvalidParameterError, match="approx_delta.*basic accountant"):
                ledger.charge_for(plan, label=name)
            assert ledger.spent().charges == 0
            with dptree.Ledger(tmp_path / "c.ledger", approx_delta=5e-4, **totals) as hybrid:
                assert hybrid.can_afford(plan)
                hybrid.charge_for(plan, label=name)
                assert hybrid.spent().charges == 1
            return
        assert ledger.can_afford(plan)
        with ledger.charge_for(plan, label=name) as charge:
            assert charge.epsilon > 0 or charge.rho > 0


@pytest.mark.parametrize("name", ["quantile", "interior_point exponential", "quantiles auto", "learn_threshold",
                                  "hierarchy laplace", "range_tree laplace", "range_tree private max_contributions"])
def test_two_halves_fit_a_whole(name, tmp_path):
    """A pure plan is charged the epsilon it was given (its spend is never more), so two releases
    at half a total fit it exactly: a rounded-up spend would refuse the second."""
    plan = PLANS[name]()
    half = plan.budget.epsilon
    with dptree.Ledger(tmp_path / "b.ledger", total_epsilon=2 * half) as ledger:
        for label in ("first", "second"):
            with ledger.charge_for(plan, label=label) as charge:
                assert charge.epsilon == half
