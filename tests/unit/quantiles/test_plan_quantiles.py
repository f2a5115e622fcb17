"""The plan of dptree.quantiles: built from public parameters only (auto's choice included), its
privacy loss is the statement's spend for every method, plan + release is ``quantiles``, unrunnable
parameters fail at plan time, and a loaded file's statement is re-derived through the plan."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _edited_release import assert_edited_statement_refused, spent_with

import dptree
from dptree.errors import InvalidParameterError
from dptree.privacy.ledger import Ledger
from dptree.privacy.loss import Exponential, Laplace
from dptree.quantiles.approx import layer_epsilon, layers
from dptree.quantiles.auto import choose_method

X = np.random.default_rng(0).integers(0, 1024, 2000)
QS = [0.1, 0.25, 0.5, 0.75, 0.9]
BASE = {"lower": 0, "upper": 1023, "epsilon": 1.0}


def test_joint_is_planned_for_add_remove_only():
    with pytest.raises(dptree.InvalidParameterError, match="add/remove-one"):
        dptree.plan_quantiles(QS, method="joint", n=2000, neighbors="replace", **BASE)


def _same(a: Any, b: Any) -> None:
    da, db = a.to_document(), b.to_document()
    da.pop("metadata"), db.pop("metadata")
    assert json.dumps(da, sort_keys=True, default=str) == json.dumps(db, sort_keys=True, default=str)


@pytest.mark.parametrize(("method", "neighbors"), [
    (m, r) for m in ("tree", "approx", "joint", "exponential", "auto") for r in ("add_remove", "replace")
    if (m, r) != ("joint", "replace")  # refused when planned: test_joint_is_planned_for_add_remove_only
])
def test_loss_is_the_stated_spend(method, neighbors):
    plan = dptree.plan_quantiles(QS, method=method, n=2000, neighbors=neighbors, **BASE)
    loss = plan.privacy_loss()
    assert math.isclose(loss.epsilon(), plan.statement["budget_spent"]["epsilon"], rel_tol=1e-12)
    assert loss.neighbors.relation == neighbors and plan.budget == dptree.Budget(epsilon=1.0)
    fams = set(loss.families)
    assert fams == ({"laplace"} if plan.method == "tree" else {"exponential", "laplace"})  # + the interval counts
    if method == "tree":
        return
    bound = dptree.plan_quantiles(QS, method=method, n=2000, neighbors=neighbors, interval="bound", **BASE)
    if bound.method == "tree":  # auto's pick over these 1024 points: no interval share to give back
        assert set(bound.privacy_loss().families) == {"laplace"}
        assert math.isclose(bound.privacy_loss().epsilon(), bound.statement["budget_spent"]["epsilon"], rel_tol=1e-12)
        return
    assert math.isclose(bound.privacy_loss().epsilon(), 1.0, rel_tol=1e-12)
    assert set(bound.privacy_loss().families) == {"exponential"}


def test_each_method_lists_its_measurements():
    m = len(QS)
    BASE = {**globals()["BASE"], "interval": "bound"}  # the stated bound: the whole budget to the mechanisms
    approx = dptree.plan_quantiles(QS, method="approx", **BASE).privacy_loss()
    assert [x.epsilon for x in approx.measurements] == [layer_epsilon(1.0, m)] * layers(m)
    # replace-one: below the first layer a replaced record can sit in two pieces (two calls change)
    rep = dptree.plan_quantiles(QS, method="approx", neighbors="replace", **BASE).privacy_loss()
    assert len(rep.measurements) == 2 * layers(m) - 1
    assert all(x.epsilon == layer_epsilon(1.0, m, "replace") for x in rep.measurements)
    exp = dptree.plan_quantiles(QS, method="exponential", **BASE).privacy_loss()
    assert [x.epsilon for x in exp.measurements] == [1.0 / m] * m
    joint = dptree.plan_quantiles(QS, method="joint", n=2000, **BASE).privacy_loss()
    assert joint.measurements == (Exponential(1.0, joint.measurements[0].label),)
    tree = dptree.plan_quantiles(QS, method="tree", **globals()["BASE"])
    lap = tree.privacy_loss().measurements
    assert all(isinstance(x, Laplace) for x in lap)
    assert [x.scale for x in lap] == [s for s in tree.tree.noise_parameters if s is not None]
    assert tree.privacy_loss().epsilon() == pytest.approx(tree.tree.statement["budget_spent"]["epsilon"], rel=1e-12)


def test_interval_counts_are_listed_beside_the_mechanisms():
    """interval="counts" (the default of the mechanism methods): one discrete Laplace histogram at the
    share (scale 1 / (share epsilon) at sensitivity 1; 2 under replace; k per person of k records)
    and the mechanisms at the rest, adding up to epsilon exactly."""
    m = len(QS)
    for method, neighbors, k, sens in (("approx", "add_remove", 1, 1), ("exponential", "replace", 1, 2),
                                       ("approx", "add_remove", 4, 4), ("joint", "add_remove", 1, 1)):
        kw = {"user_id": "uid", "max_contributions": k} if k > 1 else {"n": 2000} if method == "joint" else {}
        plan = dptree.plan_quantiles(QS, method=method, neighbors=neighbors, interval_share=0.2, **BASE, **kw)
        loss = plan.privacy_loss()
        lap = [x for x in loss.measurements if isinstance(x, Laplace)]
        assert len(lap) == 1 and lap[0].sensitivity == sens and lap[0].epsilon == pytest.approx(0.2)
        assert lap[0].scale == Fraction(sens) / (Fraction(0.2) * Fraction(1.0)) or lap[0].scale > Fraction(sens) / (
            Fraction(0.2) * Fraction(1.0))  # rounded up by the sampler, never down
        assert loss.epsilon() == pytest.approx(1.0, rel=1e-12) and plan.mechanism_epsilon == pytest.approx(0.8)
        assert plan.statement["interval_share"] == 0.2 and plan.statement["epsilon_mechanism"] == plan.mechanism_epsilon
    exp = dptree.plan_quantiles(QS, method="exponential", **BASE).privacy_loss()
    assert [x.epsilon for x in exp.measurements[:m]] == pytest.approx([0.9 / m] * m)


def test_per_person_calls_are_listed_at_their_share():
    plan = dptree.plan_quantiles(QS, method="exponential", user_id="uid", max_contributions=4, interval="bound",
                                 **BASE)
    assert plan.per_call == 1.0 / len(QS) / 4  # per record
    assert plan.privacy_loss().epsilon() == pytest.approx(1.0)  # 4 records: group privacy
    assert plan.unit == dptree.PerUser("uid", 4)
    same = dptree.plan_quantiles(QS, method="exponential", unit=dptree.PerUser("uid", 4), interval="bound", **BASE)
    assert same.member_statement == plan.member_statement


def test_groups_are_parallel():
    plan = dptree.plan_quantiles(QS, method="approx", groups=["a", "b", "c"], **BASE)
    loss = plan.privacy_loss()
    assert loss.parallel == 3 and loss.epsilon() == pytest.approx(1.0)
    assert plan.statement["groups"] == ["a", "b", "c"] and "composition" in plan.statement


def test_auto_choice_is_held_by_the_plan():
    from dptree.quantiles.plan import INTERVAL_SHARE, interval_budget

    mech = interval_budget(1.0, INTERVAL_SHARE, "add_remove", 1)[0]
    for m, n in ((3, None), (3, 10_000), (40, 10_000)):
        qs = list(np.linspace(0.05, 0.95, m))
        plan = dptree.plan_quantiles(qs, n=n, **BASE)
        assert plan.method == choose_method(m, lower=0, upper=1023, epsilon=1.0, width=None, neighbors="add_remove",
                                            n=n, mechanism_epsilon=mech)


@pytest.mark.parametrize(("kw", "share"), [({}, 0.1), ({"interval": "bound"}, 0.0), ({"interval_share": 0.25}, 0.25),
                                           ({"interval": "pivot"}, 0.1), ({"max_contributions": 2, "n_max": 4000}, 0.1)])
def test_auto_predicts_the_mechanisms_at_the_epsilon_they_run_at(monkeypatch, kw, share):
    """auto predicts approx and joint at what is left of epsilon after their interval counts' share
    (none with interval="bound"; the tree's intervals named beside auto give way to the counts if a
    mechanism is picked), per record with max_contributions, and the tree at epsilon itself."""
    import importlib

    from dptree.quantiles.plan import INTERVAL_SHARE, interval_budget

    plan_module = importlib.import_module("dptree.quantiles.plan")
    assert INTERVAL_SHARE == 0.1
    seen: dict[str, Any] = {}

    def spy(m: int, **args: Any) -> str:
        seen.update(args)
        return choose_method(m, **args)

    monkeypatch.setattr(plan_module, "choose_method", spy)
    dptree.plan_quantiles(QS, **BASE, **kw)
    k = kw.get("max_contributions", 1)
    mech = interval_budget(1.0, share, "add_remove", k)[0] if share else 1.0
    assert seen["epsilon"] == pytest.approx(1.0 / k) and seen["mechanism_epsilon"] == pytest.approx(mech / k)
    assert (seen["mechanism_epsilon"] < seen["epsilon"]) == bool(share)


@pytest.mark.parametrize("kw", [{"method": "tree"}, {"method": "approx"}, {"method": "exponential"},
                                {"method": "joint", "n": 2000}, {"method": "auto", "n": 2000},
                                {"method": "approx", "n_min": 1500, "neighbors": "replace"}])
def test_plan_then_release_is_quantiles(kw):
    direct = dptree.quantiles(X, QS, rng=5, **BASE, **kw)
    planned = dptree.plan_quantiles(QS, **BASE, **kw).release(X, rng=5)
    _same(direct, planned)
    assert planned.privacy == direct.privacy and planned.private is False


def test_plan_then_release_by_group_and_per_person():
    g = np.where(X < 300, "a", "b")
    users = np.arange(X.size) // 2
    direct = dptree.quantiles(X, QS, by=g, groups=["a", "b"], user_id=users, max_contributions=2, method="approx",
                              rng=6, **BASE)
    plan = dptree.plan_quantiles(QS, groups=["a", "b"], user_id=users, max_contributions=2, method="approx", **BASE)
    _same(direct, plan.release(X, by=g, rng=6))
    with pytest.raises(InvalidParameterError, match="by and groups"):
        plan.release(X, rng=6)  # a plan for groups needs each record's group


@pytest.mark.parametrize("kw", [
    {"method": "joint"},  # no declared size
    {"method": "joint", "n": 100, "neighbors": "replace"},
    {"method": "approx", "width": 4},  # the tree's bucket width
    {"method": "approx", "interval": "pivot"},  # the tree's intervals
    {"user_id": "u", "n": 100},  # an exact size cannot be declared per person
    {"user_id": "u", "neighbors": "replace"},
    {"groups": ["a"], "neighbors": "replace"},
    {"n_min": 10, "n": 100},
    {"epsilon": 0.0},
    {"max_contributions": 10**10, "epsilon": 1.0},
])
def test_unrunnable_parameters_fail_when_planning(kw):
    with pytest.raises(InvalidParameterError):
        dptree.plan_quantiles(QS, **{**BASE, **kw})


def test_a_ledger_charges_a_quantiles_plan(tmp_path: Path):
    plan = dptree.plan_quantiles(QS, method="tree", **BASE)
    with Ledger(tmp_path / "l.db", total_epsilon=3.0) as ledger:
        with ledger.charge_for(plan, label="q"):
            plan.release(X, rng=1)
        assert ledger.spent().epsilon == pytest.approx(1.0)


@pytest.mark.parametrize("method", ["tree", "approx", "joint", "exponential"])
def test_an_edited_statement_is_refused_on_load(method, tmp_path: Path):
    rel = dptree.plan_quantiles(QS, method=method, n=2000, **BASE).release(X, rng=2)
    assert_edited_statement_refused(rel, tmp_path, "budget_spent", spent_with(rel, epsilon=0.5), match="budget_spent")
