"""The 2-D range tree's privacy: brute-forced sensitivities through the library's data step, the
statement against the privacy loss, and the public total refused where it would leak."""

from __future__ import annotations

import numpy as np
import pytest

import dptree
from dptree.spatial.counting import as_table, grid_histogram
from dptree.spatial.grid import unmorton
from dptree.testing.sensitivity import brute_force_sensitivity, neighboring_datasets

_SEEN: dict[tuple[int, bytes], list[np.ndarray]] = {}


def _levels(plan: dptree.RangeTree2DPlan, hist: np.ndarray) -> list[np.ndarray]:
    """Every level's counts of the points whose Morton cells ``hist`` holds, through grid_histogram
    (memoised per plan and dataset: each dataset is in many pairs)."""
    key = (id(plan), hist.tobytes())
    if key not in _SEEN:
        codes = np.repeat(np.arange(hist.size), hist)
        i, j = unmorton(codes)
        table, names = as_table(i, j, None)
        _SEEN[key] = plan.tree.layout.level_counts(grid_histogram(table, plan, names))
    return _SEEN[key]


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_one_record_moves_one_node_per_level(relation: str) -> None:
    plan = dptree.plan_range_tree_2d(lower=(0, 0), upper=(3, 3), epsilon=1.0, neighbors=relation, levels="geometric")
    pairs = list(neighboring_datasets(plan.grid.cells, 2, relation))
    stated = {lv["level"]: lv["l1_sensitivity"] for lv in plan.statement["levels"]}
    for lvl in range(plan.grid.depth + 1):
        l1, l2 = brute_force_sensitivity(lambda h, lvl=lvl: _levels(plan, h)[lvl], pairs)
        if relation == "add_remove":  # the point's node on the level: +1
            assert (l1, l2) == (1.0, 1.0)
        elif lvl == 0:  # the root is the public n
            assert (l1, l2) == (0.0, 0.0)
        else:  # the point leaves one node and enters another
            assert l1 == 2.0 and l2 == pytest.approx(np.sqrt(2.0))
        assert stated.get(lvl, l1) == l1  # the statement's sensitivity is the brute-forced maximum: tight
    l1_all, l2_all = brute_force_sensitivity(lambda h: np.concatenate(_levels(plan, h)), pairs)
    assert l1_all == plan.statement["l1_sensitivity"]
    assert l2_all == pytest.approx(plan.statement["l2_sensitivity"])


def test_max_contributions_scales_the_sensitivity() -> None:
    plan = dptree.plan_range_tree_2d(lower=(0, 0), upper=(3, 3), epsilon=1.0, max_contributions=2, levels="uniform")
    pairs = list(neighboring_datasets(plan.grid.cells, 1, "add_remove", k=2))
    l1, l2 = brute_force_sensitivity(lambda h: _levels(plan, h)[plan.grid.depth], pairs)
    assert l1 == 2.0 and l2 == 2.0
    assert all(lv["l1_sensitivity"] == 2.0 for lv in plan.statement["levels"])


@pytest.mark.parametrize("kw", [dict(epsilon=0.7), dict(epsilon=1.0, levels="uniform"),
                                dict(epsilon=2.0, neighbors="replace"),
                                dict(epsilon=1.0, delta=1e-6, noise="gaussian"), dict(rho=0.3, noise="gaussian")])
def test_the_statement_spends_what_the_privacy_loss_adds_up_to(kw: dict) -> None:
    plan = dptree.plan_range_tree_2d(lower=(0.0, -5.0), upper=(10.0, 5.0), width=0.5, **kw)
    loss, spent = plan.privacy_loss(), plan.statement["budget_spent"]
    if "rho" in spent:
        assert loss.rho() == pytest.approx(spent["rho"], rel=1e-12)
    else:
        assert loss.epsilon() == pytest.approx(spent["epsilon"], rel=1e-12)
        assert spent["epsilon"] <= kw["epsilon"]
    assert plan.statement["mechanism"].startswith("2-D range tree")


def test_replace_refuses_a_data_dependent_total() -> None:
    with pytest.raises(dptree.InvalidParameterError, match="replace"):
        dptree.range_tree_2d([1.0, np.nan], [1.0, 2.0], lower=(0, 0), upper=(3, 3), epsilon=1.0,
                             neighbors="replace", on_invalid="drop")
