"""The range-tree plan as the interface every product implements: built from public parameters
only, its privacy loss (one measurement per measured level) equals the spend its statement
states, its expected error is the release's standard error, and plan + release is the
convenience function."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _edited_release import assert_edited_statement_refused, spent_with

import dptree
from dptree.errors import DPTreeError
from dptree.privacy.budget import discrete_gaussian_delta
from dptree.privacy.loss import Gaussian, Laplace
from dptree.privacy.statement import Neighbors

CASES: dict[str, dict[str, Any]] = {
    "laplace": dict(epsilon=1.0),
    "laplace-replace": dict(epsilon=0.7, neighbors="replace"),
    "laplace-k3": dict(epsilon=2.0, max_contributions=3, levels="prefix"),
    "gaussian-exact": dict(epsilon=1.0, delta=1e-6, noise="gaussian"),
    "gaussian-zcdp": dict(epsilon=1.0, delta=1e-6, noise="gaussian", gaussian_calibration="zcdp"),
    "gaussian-rho-replace-k3": dict(rho=0.4, noise="gaussian", neighbors="replace", max_contributions=3),
    "gaussian-k3-approx": dict(epsilon=0.5, delta=1e-7, noise="gaussian", max_contributions=3, levels="all_ranges"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_loss_lists_each_measured_level_and_equals_the_stated_spend(name: str) -> None:
    kw = CASES[name]
    plan = dptree.plan_range_tree(lower=0, upper=999, branching=4, **kw)  # no data anywhere
    loss = plan.privacy_loss()
    k = kw.get("max_contributions", 1)
    replace = kw.get("neighbors") == "replace"
    assert loss.neighbors == Neighbors("replace" if replace else "add_remove", k) and loss.parallel == 1
    measured = [j for j, p in enumerate(plan.noise_parameters) if p is not None]
    assert [m.label for m in loss.measurements] == [f"level {j}" for j in measured]
    if replace:  # the root is the exact public total: not a measurement
        assert 0 not in measured and plan.statement["root"] == "exact public total (bounded DP)"
    spent = plan.statement["budget_spent"]
    if kw.get("noise", "laplace") == "laplace":
        for j, m in zip(measured, loss.measurements):
            assert isinstance(m, Laplace) and m.scale == plan.noise_parameters[j]
            assert m.sensitivity == (2 * k if replace else k)
        assert loss.epsilon() == pytest.approx(spent["epsilon"], rel=1e-12)
        assert spent["epsilon"] <= kw["epsilon"] * (1 + 1e-12)
        assert plan.statement["l1_sensitivity"] == float(sum(m.sensitivity for m in loss.measurements))
        return
    for j, m in zip(measured, loss.measurements):
        assert isinstance(m, Gaussian) and m.sigma2 == plan.noise_parameters[j]
        want = math.sqrt(2) * k if replace else k
        assert float(m.sensitivity) == pytest.approx(want, rel=1e-15)
        assert m.sensitivity ** 2 >= (2 * k * k if replace else k * k)  # never below the true L2
    calibration = plan.statement["calibration"]
    if "implied_rho" in calibration:  # exact (epsilon, delta): the loss's rho is the implied one
        assert loss.rho() == pytest.approx(calibration["implied_rho"], rel=1e-12)
        (sigma2,) = {m.sigma2 for m in loss.measurements}
        units = int(sum(m.sensitivity ** 2 for m in loss.measurements))
        assert discrete_gaussian_delta(kw["epsilon"], float(sigma2), units) <= kw["delta"]
        assert spent == {"epsilon": kw["epsilon"], "delta": kw["delta"]}
    else:
        assert loss.rho() == pytest.approx(spent["rho"], rel=1e-12)
        if "delta" in spent:
            assert loss.delta_at(spent["epsilon"]) <= kw["delta"] * (1 + 1e-9)


def test_the_loss_of_a_grouped_release_is_one_tree_run_in_parallel() -> None:
    groups = ["a", "b", "c"]
    rng = np.random.default_rng(0)
    vals, by = rng.integers(0, 100, 300), rng.choice(groups, 300)
    plan = dptree.plan_range_tree(lower=0, upper=99, epsilon=0.8)
    rel = dptree.range_tree(vals, by=by, groups=groups, lower=0, upper=99, epsilon=0.8, rng=2)
    loss = plan.privacy_loss(parallel=len(groups))
    assert loss.parallel == 3 and loss.measurements == plan.privacy_loss().measurements
    assert loss.epsilon() == pytest.approx(rel.privacy["budget_spent"]["epsilon"], rel=1e-12)
    assert loss.to_dict()["parallel"] == 3


@pytest.mark.parametrize("kw", [dict(epsilon=1.0), dict(rho=0.2, noise="gaussian", neighbors="replace"),
                                dict(epsilon=0.5, levels="prefix", branching=3)])
def test_the_expected_error_is_the_release_standard_error(kw: dict[str, Any]) -> None:
    plan = dptree.plan_range_tree(lower=0, upper=1000, **kw)  # 1001 buckets: padded leaves
    lo, hi = np.array([0, 5, 17, 999, 1000]), np.array([1000, 5, 600, 1000, 1000])
    err = plan.expected_error(lo, hi)
    rel = plan.release(np.zeros(plan.domain.size, np.int64), rng=1)
    np.testing.assert_allclose(err, rel.stderr(lo, hi), rtol=1e-12)
    assert plan.expected_error(17, 600) == pytest.approx(float(rel.stderr(17, 600)), rel=1e-12)
    assert plan.expected_error(2000, 3000) == 0.0  # beyond the domain: an empty range
    assert len(set(np.round(err, 9))) == len(err)  # each range has its own error
    with pytest.raises(DPTreeError, match="lo <= hi"):
        plan.expected_error(5, 4)


def test_plan_and_release_is_range_tree() -> None:
    values = np.random.default_rng(3).integers(0, 50, 500)
    kw = dict(lower=0, upper=49, epsilon=1.0, noise="laplace", levels="prefix")
    direct = dptree.range_tree(values, rng=11, **kw)
    plan = dptree.plan_range_tree(**kw)
    made = plan.release(np.bincount(values, minlength=50), rng=11)
    assert made.privacy == direct.privacy and made.privacy == {**plan.statement, "private": False}
    for a, b in zip(made.measurements, direct.measurements):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kw", [dict(epsilon=1e-11, branching=2), dict(epsilon=1.0, max_contributions=2**60)])
def test_an_unrunnable_parameter_fails_when_the_plan_is_built(kw: dict[str, Any]) -> None:
    with pytest.raises(DPTreeError):
        dptree.plan_range_tree(lower=0, upper=2**20, **kw)


def test_a_file_whose_statement_is_edited_is_refused(tmp_path: Path) -> None:
    rel = dptree.range_tree(np.arange(100), lower=0, upper=99, epsilon=1.0, rng=4)
    assert_edited_statement_refused(rel, tmp_path, "budget_spent", spent_with(rel, epsilon=0.1), match="budget_spent")
