"""``plan_sparse_range_tree``: the sparse tree's plan built from public parameters only; its
privacy loss (the noisy total, PrivTree's shape as a pure step, the count tree's Laplace depths,
or the levels' Laplace counts) equals the spend its statement states; plan + release is
``sparse_range_tree``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _edited_release import assert_edited_statement_refused, spent_with

import dptree
from dptree.errors import DPTreeError
from dptree.privacy.ledger import Ledger
from dptree.privacy.loss import Laplace, PureDP
from dptree.privacy.statement import Neighbors

CASES: dict[str, dict[str, Any]] = {
    "privtree-auto": dict(epsilon=1.0),
    "privtree-auto-bounded-k3": dict(epsilon=0.5, lower=0, upper=10**6, max_contributions=3, branching=4),
    "privtree-share": dict(epsilon=2.0, structure_share=0.3),
    "levels": dict(epsilon=1.0, method="levels"),
    "levels-bounded-k2": dict(epsilon=0.3, method="levels", lower=-500, upper=500, max_contributions=2),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_loss_equals_the_stated_spend(name: str) -> None:
    kw = CASES[name]
    plan = dptree.plan_sparse_range_tree(**kw)  # no data anywhere
    loss, k = plan.privacy_loss(), kw.get("max_contributions", 1)
    assert loss.neighbors == Neighbors("add_remove", k) and plan.unit == dptree.PerRecord(k)
    spent = plan.statement["budget_spent"]
    assert loss.epsilon() == pytest.approx(spent["epsilon"], rel=1e-12) and spent["epsilon"] <= kw["epsilon"]
    assert plan.budget == dptree.Budget(epsilon=kw["epsilon"])
    tree = plan.tree
    if kw.get("method") == "levels":
        assert len(loss.measurements) == tree.layout.depth
        assert all(isinstance(m, Laplace) and m.scale == tree.level_scale and m.sensitivity == k
                   for m in loss.measurements)
        return
    steps = list(loss.measurements)
    if "structure_share" not in kw:  # "auto": the noisy total first
        total = steps.pop(0)
        assert isinstance(total, Laplace) and total.scale == tree.total_scale and total.sensitivity == k
        assert float(k / total.scale) == plan.statement["total"]["epsilon"]
    shape, counts = steps[0], steps[1:]
    assert isinstance(shape, PureDP) and "PrivTree" in shape.label
    if "structure_share" in kw:
        assert shape.epsilon == pytest.approx(plan.statement["structure"]["epsilon"], rel=1e-15)
    (scale,) = {m.scale for m in counts}
    assert all(isinstance(m, Laplace) and m.sensitivity == k for m in counts)
    if "structure_share" in kw:
        assert scale == tree.count_scale(len(counts))
        return
    # "auto": the share (and count-tree depth) that costs the most, as the statement charges
    (part,) = [p for p in plan.statement["structure"]["by_bound"].values() if f"share {p['share']:g} " in shape.label]
    assert shape.epsilon == pytest.approx(part["epsilon"], rel=1e-15)
    assert scale == tree.at_share(part["share"]).count_scale(len(counts))
    assert part["counts_epsilon"] == pytest.approx(float(len(counts) * k / scale), rel=1e-15)


def test_plan_and_release_is_sparse_range_tree(tmp_path: Path) -> None:
    data = np.random.default_rng(5).integers(-10**9, 10**9, 2000)
    for kw in (dict(epsilon=1.0), dict(epsilon=1.0, method="levels", lower=-10**9, upper=10**9)):
        direct = dptree.sparse_range_tree(data, rng=9, **kw)
        made = dptree.plan_sparse_range_tree(**kw).release(data, rng=9)
        assert made.privacy == direct.privacy
        np.testing.assert_array_equal(made.quantile([0.1, 0.5, 0.9]), direct.quantile([0.1, 0.5, 0.9]))
        direct.save(tmp_path / "a.json", allow_nonprivate=True, force=True)
        made.save(tmp_path / "b.json", allow_nonprivate=True, force=True)
        a, b = (json.loads((tmp_path / f).read_text()) for f in ("a.json", "b.json"))
        assert a["measurements"] == b["measurements"] and a["privacy"] == b["privacy"]


def test_without_bounds_the_column_type_sets_the_domain_not_the_loss() -> None:
    plan = dptree.plan_sparse_range_tree(epsilon=1.0)
    floats = plan.release(np.linspace(-3.0, 3.0, 500), rng=1)
    assert floats.plan.domain.kind == "float" and plan.tree.domain.kind == "integer"
    assert floats.plan.privacy_loss().epsilon() == plan.privacy_loss().epsilon()
    assert {k: v for k, v in floats.privacy.items() if k != "private"} == \
        {k: v for k, v in plan.statement.items() if k != "private"}


@pytest.mark.parametrize("kw", [dict(epsilon=1e-300), dict(epsilon=1.0, max_contributions=2**62),
                                dict(epsilon=1.0, method="levels", threshold=0),
                                dict(epsilon=1.0, dense_depth=16, threshold=3)])
def test_an_unrunnable_parameter_fails_when_the_plan_is_built(kw: dict[str, Any]) -> None:
    with pytest.raises(DPTreeError):
        dptree.plan_sparse_range_tree(**kw)


def test_a_ledger_charges_the_plan(tmp_path: Path) -> None:
    plan = dptree.plan_sparse_range_tree(epsilon=0.5)
    with Ledger(tmp_path / "l.sqlite", total_epsilon=1.0) as ledger:
        charge = ledger.charge_for(plan)
    assert charge.epsilon == 0.5


def test_a_file_whose_statement_is_edited_is_refused(tmp_path: Path) -> None:
    rel = dptree.plan_sparse_range_tree(epsilon=1.0).release(np.arange(300), rng=2)
    assert_edited_statement_refused(rel, tmp_path, "budget_spent", spent_with(rel, epsilon=0.5), match="budget_spent")
