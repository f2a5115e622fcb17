"""``plan_hierarchy_counts``: a hierarchy release planned from the public structure and parameters
only; its privacy loss (one Laplace or Gaussian per depth, or the multiplicative algorithm's
(epsilon, delta) steps) agrees with the statement; its expected errors are the release's standard
errors; plan + release is ``hierarchy_counts``; the loader re-derives the statement through it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _edited_release import assert_edited_statement_refused

import dptree
from dptree.errors import DPTreeError, InvalidParameterError
from dptree.privacy.budget import discrete_gaussian_delta
from dptree.privacy.loss import ApproxDP, Gaussian, Laplace
from dptree.privacy.statement import Neighbors

H = dptree.Hierarchy.from_paths(["US/CA/SF", "US/CA/LA", "US/NY/NYC", "FR/IDF/Paris", "FR/PACA"],
                                levels=["country", "state", "city"])
ROWS = ["US/CA/SF"] * 40 + ["US/NY/NYC"] * 25 + ["FR/PACA"] * 10 + ["FR/IDF/Paris"] * 7

CASES: dict[str, dict[str, Any]] = {
    "laplace": dict(epsilon=1.0),
    "laplace-k3": dict(epsilon=0.7, max_contributions=3),
    "gaussian-exact": dict(epsilon=1.0, delta=1e-6, method="gaussian"),
    "gaussian-zcdp": dict(epsilon=1.0, delta=1e-6, method="gaussian", gaussian_calibration="zcdp"),
    "gaussian-k2": dict(epsilon=0.5, delta=1e-7, method="gaussian", max_contributions=2),
    "multiplicative": dict(epsilon=1.0, delta=1e-6, method="multiplicative", alpha=0.3),
    "multiplicative-k3": dict(epsilon=2.0, delta=1e-5, method="multiplicative", alpha=0.5, max_contributions=3),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_loss_agrees_with_the_statement(name: str) -> None:
    kw = CASES[name]
    plan = dptree.plan_hierarchy_counts(H, **kw)  # no data anywhere
    loss, st, d = plan.privacy_loss(), plan.statement, H.depth
    k = kw.get("max_contributions", 1)
    assert loss.neighbors == Neighbors("add_remove", k) and plan.unit == dptree.PerRecord(k)
    assert plan.budget == dptree.Budget(epsilon=kw["epsilon"], delta=kw.get("delta", 0.0))
    method = kw.get("method", "laplace")
    if method == "laplace":
        assert [m.label for m in loss.measurements] == [f"depth {j}" for j in range(d)]
        assert all(isinstance(m, Laplace) and float(m.scale) == st["noise"]["scale"] and m.sensitivity == k
                   for m in loss.measurements)
        assert sum(m.sensitivity for m in loss.measurements) == st["sensitivity"]["l1"]
        assert loss.epsilon() == pytest.approx(k * d / st["noise"]["scale"], rel=1e-15)
        assert st["epsilon"] * (1 - 1e-5) <= loss.epsilon() <= st["epsilon"]  # the scale is rounded up
        return
    if method == "gaussian":
        assert len(loss.measurements) == d
        assert all(isinstance(m, Gaussian) and float(m.sigma2) == st["noise"]["sigma2"] and m.sensitivity == k
                   for m in loss.measurements)
        assert sum(m.sensitivity ** 2 for m in loss.measurements) == st["sensitivity"]["l2_squared"]
        assert loss.rho() == pytest.approx(st["rho"], rel=1e-12)
        if st["calibration"]["kind"] == "exact":  # the exact delta of the d unit shifts
            (s2,) = {m.sigma2 for m in loss.measurements}
            assert discrete_gaussian_delta(kw["epsilon"], float(s2), d) == st["calibration"]["delta_at_epsilon"]
            assert st["calibration"]["delta_at_epsilon"] <= kw["delta"]
        else:
            assert loss.delta_at(kw["epsilon"]) <= kw["delta"] * (1 + 1e-9)
        return
    assert all(isinstance(m, ApproxDP) for m in loss.measurements) and len(loss.measurements) == 2 + d
    assert loss.epsilon() == math.inf and loss.rho() == math.inf
    eps, dlt = loss.epsilon_delta()
    assert eps == pytest.approx(st["epsilon"], rel=1e-12) and dlt <= st["delta"] * (1 + 1e-12)
    if k == 1:
        assert dlt == pytest.approx(st["delta"], rel=1e-12)
        assert st["run_at"] == {"epsilon": kw["epsilon"], "delta": kw["delta"]}
    else:
        assert [m.epsilon for m in loss.measurements][-1] == pytest.approx(st["run_at"]["epsilon"] * k / (2 * d))
    assert f"bound {plan.calibration.window}" in loss.measurements[-1].label


@pytest.mark.parametrize("name", sorted(n for n in CASES if "gaussian_calibration" not in CASES[n]))
def test_plan_and_release_is_hierarchy_counts(name: str) -> None:
    kw = CASES[name]
    direct = dptree.hierarchy_counts(ROWS, H, rng=5, **kw)
    made = dptree.plan_hierarchy_counts(H, **kw).release(ROWS, rng=5)
    assert made.privacy == direct.privacy and made.parameters == direct.parameters
    np.testing.assert_array_equal(made.counts, direct.counts)
    assert made.privacy == {**dptree.plan_hierarchy_counts(H, **kw).statement, "private": False}


@pytest.mark.parametrize("kw", [dict(epsilon=1.0), dict(epsilon=1.0, consistent=False),
                                dict(epsilon=0.5, delta=1e-6, method="gaussian", nonnegative=True),
                                dict(epsilon=1.0, delta=1e-6, method="multiplicative", alpha=0.2)])
def test_the_expected_errors_are_the_release_standard_errors(kw: dict[str, Any]) -> None:
    plan = dptree.plan_hierarchy_counts(H, **kw)
    rel = plan.release(ROWS, rng=1)
    paths = H.all_paths()
    got = np.array([plan.expected_error(p) for p in paths])
    want = np.array([rel.stderr(p) for p in paths])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(plan.node_errors(), want, rtol=1e-12)
    if kw.get("method") != "multiplicative" and kw.get("consistent", True):
        assert plan.expected_error("") < plan.expected_error("US/CA/SF")  # the total borrows from every node


@pytest.mark.parametrize("kw, match", [
    (dict(epsilon=1.0, max_contributions=2**62), "max_contributions"),
    (dict(epsilon=1.0, delta=1e-6), "delta"),
    (dict(epsilon=1.0, delta=1e-6, method="multiplicative"), "alpha"),
    (dict(epsilon=1.0, gaussian_calibration="zcdp"), "gaussian_calibration"),
])
def test_an_unrunnable_parameter_fails_when_the_plan_is_built(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(DPTreeError, match=match):
        dptree.plan_hierarchy_counts(H, **kw)


def test_a_file_whose_statement_is_edited_is_refused(tmp_path: Path) -> None:
    rel = dptree.plan_hierarchy_counts(H, epsilon=1.0, delta=1e-6, method="gaussian").release(ROWS, rng=2)
    for field, value in (("rho", 0.001), ("epsilon", 3.0), ("guarantee", "pure epsilon-DP")):
        assert_edited_statement_refused(rel, tmp_path, field, value)


def test_the_release_declares_its_reading_options() -> None:
    plan = dptree.plan_hierarchy_counts(H, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="unknown"):
        plan.release(ROWS, unknown="keep")  # type: ignore[arg-type]


@pytest.mark.parametrize("kw, charged", [(dict(epsilon=0.5), (0.5, 0.0)),
                                         (dict(epsilon=0.5, delta=1e-7, method="gaussian"), (0.5, 1e-7))])
def test_a_ledger_charges_the_plan_its_budget(tmp_path: Path, kw: dict[str, Any], charged: tuple[float, float]) -> None:
    from dptree.privacy.ledger import Ledger

    with Ledger(tmp_path / "l.sqlite", total_epsilon=1.0, total_delta=1e-6) as ledger:
        charge = ledger.charge_for(dptree.plan_hierarchy_counts(H, **kw))
    assert (charge.epsilon, charge.delta) == charged
