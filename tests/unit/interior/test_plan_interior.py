"""The plans of interior points, single quantiles and threshold learning: built from public
parameters only, their privacy loss is the statement's spend, plan + release is the convenience
function, unrunnable parameters fail at plan time, and a loaded file's statement is re-derived."""

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
from dptree.errors import DomainError, InsufficientDataError, InvalidParameterError
from dptree.interior.calibration import swap_budget
from dptree.privacy.ledger import Ledger
from dptree.privacy.loss import ApproxDP, Exponential, Laplace, PureDP

X = np.concatenate([np.arange(200, 800), np.full(400, 500)])  # 1000 records over [0, 1023]
TREE = {"lower": 0, "upper": 1023, "epsilon": 1.0, "delta": 1e-6, "n": 10**6}


def _same(a: Any, b: Any) -> None:
    da, db = a.to_document(), b.to_document()
    da.pop("metadata"), db.pop("metadata")
    assert json.dumps(da, sort_keys=True, default=str) == json.dumps(db, sort_keys=True, default=str)


# ------------------------------------------------------------------ interior points


def test_interior_point_plan_reads_no_data_and_states_its_calibration():
    plan = dptree.plan_interior_point(lower=0, upper=1023, epsilon=1.0, delta=1e-6, n=5000)
    # auto at a declared size: the method with the smallest requirement, from public inputs only
    reqs = dptree.method_requirements(1024, epsilon=1.0, delta=1e-6)
    assert plan.method == min((r, m) for m, r in reqs.items() if r is not None)[1]
    assert plan.n_required == reqs[plan.method] and plan.guarantee_applies == (5000 >= plan.n_required)
    assert plan.statement["private"] is True and plan.statement["mechanism"].startswith("interior point")
    assert isinstance(plan, dptree.InteriorPointPlan)


def test_exponential_loss_is_one_exponential_mechanism_at_epsilon():
    plan = dptree.plan_interior_point(lower=0, upper=1023, epsilon=0.7)
    loss = plan.privacy_loss()
    assert loss.measurements == (Exponential(0.7, loss.measurements[0].label),)
    assert loss.epsilon() == plan.statement["budget_spent"]["epsilon"] == 0.7
    assert plan.budget == dptree.Budget(epsilon=0.7) and plan.statement["budget_spent"]["delta"] == 0.0


@pytest.mark.parametrize("method", ["treelog", "heavypaths"])
@pytest.mark.parametrize("eps,delta", [(1.0, 1e-6), (0.3, 1e-9), (4.0, 1e-4)])
def test_tree_method_loss_composes_to_the_stated_spend(method, eps, delta):
    plan = dptree.plan_interior_point(lower=0, upper=2**20, epsilon=eps, delta=delta, method=method, n=10**5)
    loss = plan.privacy_loss()
    spent = plan.statement["budget_spent"]
    e, d = loss.epsilon_delta()
    assert math.isclose(e, spent["epsilon"], rel_tol=1e-12) and math.isclose(d, spent["delta"], rel_tol=1e-12)
    assert plan.budget == dptree.Budget(epsilon=eps, delta=delta)
    assert loss.epsilon() == math.inf and loss.rho() == math.inf  # (epsilon, delta) only
    # the lemma's proven (epsilon, delta) per change is within the share each change is listed at
    e_in, d_in = swap_budget(eps, delta)
    proven_e, proven_d = plan.calibration["privacy"]
    assert proven_e <= e_in * (1 + 1e-12) and proven_d <= d_in * (1 + 1e-12)  # up to float rounding
    first = [m for m in loss.measurements if m.label.endswith("first change")]
    assert math.isclose(math.fsum(m.epsilon for m in first), e_in, rel_tol=1e-12)
    assert math.isclose(math.fsum(getattr(m, "delta", 0.0) for m in first), d_in, rel_tol=1e-12)
    if method == "heavypaths":  # the sparse vector stage is pure, at StoppingPoint's epsilon1
        assert [m for m in first if isinstance(m, PureDP)] == [PureDP(plan.calibration["eps1"], first[0].label)]
    else:
        assert all(isinstance(m, ApproxDP) for m in loss.measurements)


@pytest.mark.parametrize("kw", [{"method": "exponential"}, {"method": "treelog", **TREE}, {"method": "heavypaths", **TREE},
                                {"method": "auto", "delta": 1e-6, "n": 1000, "run_anyway": True}])
def test_plan_then_release_is_interior_point(kw):
    args = {"lower": 0, "upper": 1023, "epsilon": 1.0, **kw}
    direct = dptree.interior_point(X, rng=11, **args)
    planned = dptree.plan_interior_point(**args).release(X, rng=11)
    _same(direct, planned)
    assert planned.privacy == direct.privacy and planned.private is False


def test_a_plan_releases_files_and_tables_like_arrays(tmp_path: Path):
    path = tmp_path / "x.csv"
    path.write_text("x\n" + "\n".join(map(str, X)) + "\n")
    plan = dptree.plan_interior_point(lower=0, upper=1023, epsilon=1.0)
    _same(plan.release(str(path), column="x", rng=3), dptree.interior_point(str(path), column="x", lower=0,
                                                                           upper=1023, epsilon=1.0, rng=3))


@pytest.mark.parametrize("kw,error", [
    ({"method": "treelog", "delta": 1e-6}, InvalidParameterError),  # no declared size
    ({"method": "heavypaths", "n": 1000}, InvalidParameterError),  # no delta
    ({"epsilon": 1e-12}, InvalidParameterError),  # outside the supported range
    ({"width": 2}, InvalidParameterError),  # a numeric domain has no resolution
    ({"n": 5, "n_max": 6}, InvalidParameterError),
    ({"delta": 1e-6, "n": 3}, InsufficientDataError),  # auto: no guarantee at the declared size
    ({"upper": -1}, DomainError),
])
def test_unrunnable_parameters_fail_when_planning(kw, error):
    args = {"lower": 0, "upper": 1023, "epsilon": 1.0, **kw}
    with pytest.raises(error):
        dptree.plan_interior_point(**args)


def test_a_ledger_charges_an_interior_point_plan(tmp_path: Path):
    plan = dptree.plan_interior_point(lower=0, upper=1023, epsilon=0.5, delta=1e-6, method="treelog", n=10**5)
    # TreeLog has (epsilon, delta) steps, which only the basic accountant charges
    with Ledger(tmp_path / "l.db", total_epsilon=2.0, total_delta=1e-5, accountant="basic") as ledger:
        with ledger.charge_for(plan, label="ip"):
            plan.release(X, rng=1)
        assert ledger.spent().epsilon == pytest.approx(0.5) and ledger.spent().delta == pytest.approx(1e-6)


@pytest.mark.parametrize("make", [
    lambda: dptree.plan_interior_point(lower=0, upper=1023, epsilon=1.0, **{k: v for k, v in TREE.items()
                                                                           if k not in ("lower", "upper", "epsilon")},
                                       method="heavypaths").release(X, rng=2),
    lambda: dptree.plan_quantile(0.25, lower=0, upper=1023, epsilon=1.0).release(X, rng=2),
    lambda: dptree.plan_learn_threshold(lower=0, upper=1023, epsilon=1.0, delta=1e-6, method="treelog")
    .release(X, (X < 500).astype(int), rng=2),
])
def test_an_edited_statement_is_refused_on_load(make, tmp_path: Path):
    rel = make()
    half = spent_with(rel, epsilon=rel.privacy["budget_spent"]["epsilon"] / 2)
    assert_edited_statement_refused(rel, tmp_path, "budget_spent", half, match="budget_spent")
    assert_edited_statement_refused(rel, tmp_path, "mechanism", "something else", match="mechanism")


# ------------------------------------------------------------------ single quantiles


def test_quantile_plan_is_one_exponential_mechanism():
    plan = dptree.plan_quantile(0.9, lower=0, upper=100, epsilon=0.25, n_max=50)
    assert plan.q_used == plan.q_used.limit_denominator(1000) and float(plan.q_used) == 0.9
    loss = plan.privacy_loss()
    assert [m.family for m in loss.measurements] == ["exponential"]
    assert loss.epsilon() == plan.statement["budget_spent"]["epsilon"] == 0.25 and plan.budget.kind == "pure"


@pytest.mark.parametrize("q", [0.5, 0.1, 1.0])
def test_plan_then_release_is_quantile_and_median(q):
    direct = dptree.quantile(X, q, lower=0, upper=1023, epsilon=1.0, rng=4, n=1000)
    planned = dptree.plan_quantile(q, lower=0, upper=1023, epsilon=1.0, n=1000).release(X, rng=4)
    _same(direct, planned)
    if q == 0.5:
        _same(dptree.median(X, lower=0, upper=1023, epsilon=1.0, rng=4, n=1000), planned)


@pytest.mark.parametrize("kw", [{"q": 1.5}, {"epsilon": 0}, {"epsilon": 1e3}, {"width": 1}, {"n": 0}])
def test_quantile_plan_refuses_unrunnable_parameters(kw):
    args = {"q": 0.5, "lower": 0, "upper": 10, "epsilon": 1.0, **kw}
    with pytest.raises(InvalidParameterError):
        dptree.plan_quantile(args.pop("q"), **args)


# ------------------------------------------------------------------ thresholds


Y = (X <= 600).astype(int)


@pytest.mark.parametrize("kw", [{}, {"delta": 1e-6, "method": "treelog"}, {"delta": 1e-6, "method": "heavypaths"},
                                {"delta": 1e-6, "method": "auto"}, {"n": 1000}])
def test_threshold_loss_is_the_stated_spend(kw):
    plan = dptree.plan_learn_threshold(lower=0, upper=1023, epsilon=0.8, **kw)
    loss, spent = plan.privacy_loss(), plan.statement["budget_spent"]
    counts = loss.measurements[0]
    assert isinstance(counts, Laplace) and counts.scale == Fraction(4) / Fraction(0.8) and counts.sensitivity == 2  # two counts
    e, d = loss.epsilon_delta()
    assert math.isclose(e, spent["epsilon"], rel_tol=1e-12) and math.isclose(d, spent["delta"], rel_tol=1e-12)
    if spent["delta"] == 0:
        assert loss.epsilon() == 0.8 and plan.budget == dptree.Budget(epsilon=0.8)
        assert loss.measurements[1] == Exponential(0.4, loss.measurements[1].label)  # eps/4, two replacements
    else:
        assert plan.budget == dptree.Budget(epsilon=0.8, delta=1e-6)


@pytest.mark.parametrize("kw", [{}, {"delta": 1e-6, "method": "treelog", "n": 1000}, {"n_max": 900, "fraction": 0.2}])
def test_plan_then_release_is_learn_threshold(kw):
    direct = dptree.learn_threshold(X, Y, lower=0, upper=1023, epsilon=2.0, rng=9, **kw)
    planned = dptree.plan_learn_threshold(lower=0, upper=1023, epsilon=2.0, **kw).release(X, Y, rng=9)
    _same(direct, planned)


@pytest.mark.parametrize("kw,error", [
    ({"method": "treelog"}, InvalidParameterError),  # no delta
    ({"epsilon": 2e-9}, InvalidParameterError),  # epsilon / 4 below the supported range
    ({"lower": "2024-01-01", "upper": "2024-12-31"}, DomainError),  # numeric domains only
    ({"fraction": 0.7}, InvalidParameterError),
])
def test_threshold_plan_refuses_unrunnable_parameters(kw, error):
    args = {"lower": 0, "upper": 1023, "epsilon": 1.0, **kw}
    with pytest.raises(error):
        dptree.plan_learn_threshold(**args)
