"""A hierarchy found from the data (``hierarchy_counts(rows, "private", levels=...)``): the exact
privacy of the discovery by brute force, where every record is counted, the plan's loss and
statement, the file, the engines agreeing, and the refusals."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dptree
from dptree import noise
from dptree.errors import DPTreeError, InvalidParameterError, ReleaseFileError
from dptree.hierarchy.api import FoundStructurePlan
from dptree.hierarchy.counting import coded_path_counts
from dptree.hierarchy.discovery import other_label, plan_found_structure
from dptree.hierarchy.release import FoundHierarchyRelease, HierarchyRelease

LEVELS = ["continent", "country"]


def _rows() -> pd.DataFrame:
    paths = [("EU", "FR")] * 400 + [("EU", "DE")] * 300 + [("EU", "LU")] * 1 + [("AS", "JP")] * 250 + [("OC", "NZ")]
    return pd.DataFrame(paths, columns=LEVELS)


def _found(rows: Any, plan: Any, seed: int) -> frozenset[tuple[str, ...]]:
    found, _, _ = plan.discover(coded_path_counts(rows, LEVELS), noise.make_source(seed))
    return frozenset(p for level in found.paths[1:] for p in level)


# ------------------------------------------------------------------ privacy, exactly


def _tree_law(paths: list[tuple[str, str]], plan: Any) -> dict[frozenset[tuple[str, ...]], Fraction]:
    """The exact probability of every tree the discovery can find in ``paths`` (two levels): each
    candidate kept independently with the policy's pi_n, level 2 over the kept level-1 nodes."""
    pol = plan.selection.policy
    top: dict[str, int] = {}
    below: dict[tuple[str, str], int] = {}
    for a, b in paths:
        top[a] = top.get(a, 0) + 1
        below[(a, b)] = below.get((a, b), 0) + 1
    law: dict[frozenset[tuple[str, ...]], Fraction] = {}
    names = sorted(top)
    for keep1 in itertools.product((False, True), repeat=len(names)):
        p1 = Fraction(1)
        for name, k in zip(names, keep1):
            q = pol.keep_probability(top[name])
            p1 *= q if k else 1 - q
        kept = [n for n, k in zip(names, keep1) if k]
        kids = sorted(key for key in below if key[0] in kept)
        for keep2 in itertools.product((False, True), repeat=len(kids)):
            p = p1
            for key, k in zip(kids, keep2):
                q = pol.keep_probability(below[key])
                p *= q if k else 1 - q
            tree = frozenset([(n,) for n in kept] + [key for key, k in zip(kids, keep2) if k])
            law[tree] = law.get(tree, Fraction(0)) + p
    return law


def _delta_at(law0: dict[Any, Fraction], law1: dict[Any, Fraction], epsilon: float) -> float:
    """The smallest delta of the pair at ``epsilon``, both directions (the hockey-stick divergence)."""
    e = math.exp(epsilon)
    out = 0.0
    for a, b in ((law0, law1), (law1, law0)):
        out = max(out, sum(max(0.0, float(p) - e * float(b.get(o, 0))) for o, p in a.items()))
    return out


@pytest.mark.parametrize("pair", [
    ("add a record to a small leaf", [("a", "x")] * 2 + [("a", "y")], [("a", "x")] * 3 + [("a", "y")]),
    ("add a record on a new branch", [("a", "x")] * 2, [("a", "x")] * 2 + [("b", "z")]),
    ("add a second record to a node", [("a", "x")], [("a", "x"), ("a", "y")]),
    ("remove the only record", [("a", "x")], []),
])
def test_the_discovery_is_as_private_as_its_share_of_the_budget_exactly(pair: Any) -> None:
    """Brute force on tiny datasets: the exact law of the trees found on neighbouring datasets is
    (epsilon_s, delta_s)-close, with epsilon_s, delta_s the discovery's share; and the bound is
    nearly met (the per-level budgets are not wasted)."""
    _, d0, d1 = pair
    plan = plan_found_structure(LEVELS, epsilon=2.0, delta=0.2, plan_type=FoundStructurePlan)
    sel = plan.selection
    eps_s, delta_s = 2 * sel.epsilon, 2 * sel.delta
    assert eps_s <= 1.0 and delta_s <= 0.2  # Laplace counts need no delta: all of it finds the tree
    law0, law1 = _tree_law(d0, plan), _tree_law(d1, plan)
    assert sum(law0.values()) == 1 and sum(law1.values()) == 1
    assert _delta_at(law0, law1, eps_s) <= delta_s + 1e-12
    # one level's selection alone is already at its bound: half of the budget would not do
    assert _delta_at(law0, law1, eps_s / 4) > delta_s / 4


def test_the_sampled_trees_follow_the_exact_law() -> None:
    """The trees ``discover`` draws have the frequencies of the exact law (a chi-square check)."""
    rows = [("a", "x")] * 2 + [("a", "y")] * 3 + [("b", "z")]
    frame = pd.DataFrame(rows, columns=LEVELS)
    plan = plan_found_structure(LEVELS, epsilon=2.0, delta=0.2, plan_type=FoundStructurePlan)
    law = _tree_law(rows, plan)
    n = 3000
    seen: dict[Any, int] = {}
    coded = coded_path_counts(frame, LEVELS)
    src = noise.make_source(11)
    for _ in range(n):
        found, _, _ = plan.discover(coded, src)
        tree = frozenset(p for level in found.paths[1:] for p in level)
        seen[tree] = seen.get(tree, 0) + 1
    assert set(seen) <= set(law)
    common = [t for t in law if float(law[t]) * n >= 20]
    chi2 = sum((seen.get(t, 0) - float(law[t]) * n) ** 2 / (float(law[t]) * n) for t in common)
    assert chi2 < 3 * len(common) + 30, (chi2, len(common))


# ------------------------------------------------------------------ what is released


def test_large_nodes_are_found_and_single_records_are_not() -> None:
    """At epsilon = 1, delta = 1e-6: nodes of hundreds of records are found (kept with probability
    1 from about 2 ln(1/delta) / epsilon_level records), a node of one record never is (its keep
    probability is delta_level)."""
    rows = _rows()
    plan = plan_hierarchy = dptree.plan_hierarchy_counts("private", levels=LEVELS, epsilon=1.0, delta=1e-6)
    assert isinstance(plan_hierarchy, FoundStructurePlan)
    assert plan.selection.policy.always_kept < 250
    for seed in range(20):
        tree = _found(rows, plan, seed)
        assert {("EU",), ("AS",), ("EU", "FR"), ("EU", "DE"), ("AS", "JP")} <= tree
        assert ("EU", "LU") not in tree and ("OC",) not in tree and ("OC", "NZ") not in tree


def test_every_record_is_counted_at_its_deepest_node_found() -> None:
    """The counts' input: the records of the nodes not found are in the 'other' leaf of their
    deepest node found, so the true counts of the found tree add up to the data (checked on the
    exact counts the release measures)."""
    from dptree.hierarchy.api import _counted_paths

    rows = _rows()
    plan = plan_found_structure(LEVELS, epsilon=1.0, delta=1e-6, plan_type=FoundStructurePlan)
    coded = coded_path_counts(rows, LEVELS)
    found, depth, node = plan.discover(coded, noise.make_source(3))
    counted = _counted_paths(found, depth, node, coded[2], "(other)")
    assert counted == {("EU", "FR"): 400, ("EU", "DE"): 300, ("EU", "(other)"): 1, ("AS", "JP"): 250,
                       ("(other)",): 1}


def test_the_release_is_consistent_and_unbiased_at_the_top() -> None:
    rows = _rows()
    rel = dptree.hierarchy_counts(rows, "private", levels=LEVELS, epsilon=1.0, delta=1e-6, rng=5)
    assert isinstance(rel, FoundHierarchyRelease) and not rel.private
    h = rel.hierarchy
    assert h.other == "(other)" and set(h.all_paths()) >= {"EU/FR", "EU/(other)", "(other)", "AS/JP"}
    assert rel.count("EU") == pytest.approx(rel.count("EU/FR") + rel.count("EU/DE") + rel.count("EU/(other)"))
    assert abs(rel.count("") - len(rows)) < 6 * rel.stderr("")
    # the noise is calibrated for the planned depth (3), whatever depth is found
    assert rel.privacy["release"]["sensitivity"]["depth"] == 3
    assert "tree found from the data" in rel.summary()


def test_the_plan_states_and_charges_both_steps() -> None:
    plan = dptree.plan_hierarchy_counts("private", levels=["a", "b", "c"], epsilon=1.0, delta=1e-6, method="gaussian",
                                        structure_share=0.25)
    loss = plan.privacy_loss()
    kinds = [type(m).__name__ for m in loss.measurements]
    assert kinds == ["ApproxDP"] * 3 + ["Gaussian"] * 4
    sel = plan.selection
    assert 3 * sel.epsilon <= 0.25 and 3 * sel.delta <= 0.25e-6
    assert plan.mechanism.epsilon + 3 * sel.epsilon <= 1.0
    assert plan.mechanism.delta + 3 * sel.delta <= 1e-6
    st = plan.statement
    assert st["budget_requested"] == {"epsilon": 1.0, "delta": 1e-6}
    assert st["budget_split"]["levels"] == 3 and "Desfontaines" in st["selection"]["source"]


def test_a_ledger_charges_the_whole_budget_before_reading(tmp_path: Any) -> None:
    plan = dptree.plan_hierarchy_counts("private", levels=LEVELS, epsilon=1.0, delta=1e-6)
    with dptree.Ledger(tmp_path / "l.sqlite", total_epsilon=1.5, total_delta=1e-5, accountant="basic") as ledger:
        ledger.charge_for(plan)
        assert ledger.spent().epsilon == pytest.approx(1.0, rel=1e-6)
        assert ledger.spent().delta == pytest.approx(1e-6, rel=1e-6)
        with pytest.raises(dptree.BudgetExceededError):
            ledger.charge_for(plan)


def test_the_file_round_trips_and_an_edited_split_is_refused(tmp_path: Any) -> None:
    rel = dptree.hierarchy_counts(_rows(), "private", levels=LEVELS, epsilon=1.0, delta=1e-6, method="gaussian",
                                  rng=2)
    path = tmp_path / "h.json"
    rel.save(path, allow_nonprivate=True)
    back = dptree.load(path)
    assert isinstance(back, FoundHierarchyRelease)
    assert back.hierarchy.all_paths() == rel.hierarchy.all_paths()
    assert back.count("EU/FR") == rel.count("EU/FR") and back.stderr("AS") == rel.stderr("AS")
    doc = json.loads(path.read_text())
    doc.pop("checksum")
    for edit in (("structure_share", 0.4), ("epsilon", 2.0), ("levels", ["continent"])):
        bad = json.loads(json.dumps(doc))
        bad["parameters"]["structure"][edit[0]] = edit[1]
        with pytest.raises(ReleaseFileError):
            HierarchyRelease.from_dict(bad)
    bad = json.loads(json.dumps(doc))
    bad["parameters"]["epsilon"] = 1.0  # the counts claim the whole budget
    with pytest.raises(ReleaseFileError):
        HierarchyRelease.from_dict(bad)


def test_numpy_and_duckdb_find_the_same_tree(tmp_path: Any) -> None:
    rows = _rows()
    path = tmp_path / "rows.csv"
    rows.to_csv(path, index=False)
    a = dptree.hierarchy_counts(rows, "private", levels=LEVELS, epsilon=1.0, delta=1e-6, rng=9)
    b = dptree.hierarchy_counts(str(path), "private", levels=LEVELS, epsilon=1.0, delta=1e-6, rng=9)
    assert a.hierarchy.all_paths() == b.hierarchy.all_paths()
    assert np.array_equal(a.measurements["y"], b.measurements["y"])


def test_spark_finds_the_same_tree() -> None:
    from _spark import spark_frame

    rows = _rows()
    frame = spark_frame({c: rows[c].tolist() for c in LEVELS})
    a = dptree.hierarchy_counts(rows, "private", levels=LEVELS, epsilon=1.0, delta=1e-6, rng=9)
    b = dptree.hierarchy_counts(frame, "private", levels=LEVELS, epsilon=1.0, delta=1e-6, rng=9)
    assert a.hierarchy.all_paths() == b.hierarchy.all_paths()
    assert np.array_equal(a.measurements["y"], b.measurements["y"])


def test_weights_count_as_records() -> None:
    rows = pd.DataFrame({"continent": ["EU", "EU", "AS"], "country": ["FR", "DE", "JP"], "n": [400, 300, 250]})
    a = dptree.hierarchy_counts(rows, "private", levels=LEVELS, weight="n", epsilon=1.0, delta=1e-6, rng=4)
    assert {"EU/FR", "EU/DE", "AS/JP"} <= set(a.hierarchy.all_paths())


def test_nothing_found_leaves_the_total_in_the_other_leaf() -> None:
    rel = dptree.hierarchy_counts(pd.DataFrame({"continent": ["EU"], "country": ["FR"]}), "private", levels=LEVELS,
                                  epsilon=1.0, delta=1e-6, rng=1)
    assert rel.hierarchy.all_paths() == ["", "(other)"]
    assert rel.count("") == pytest.approx(rel.count("(other)"))


def test_the_other_label_avoids_the_labels_found() -> None:
    from dptree.hierarchy.discovery import Found

    found = Found([[()], [("(other)",), ("b",)]], [np.zeros(0, np.int64), np.zeros(2, np.int64)])
    assert other_label(found) == "(other 2)"


@pytest.mark.parametrize("kwargs, parameter", [
    ({}, "levels"),
    ({"levels": LEVELS, "method": "multiplicative", "alpha": 0.5}, "method"),
    ({"levels": LEVELS, "max_contributions": 2}, "max_contributions"),
    ({"levels": LEVELS, "delta": 0.0}, "delta"),
    ({"levels": LEVELS, "structure_share": 1.0}, "structure_share"),
])
def test_bad_parameters_are_refused_before_the_data_is_read(kwargs: dict[str, Any], parameter: str) -> None:
    args = {"epsilon": 1.0, "delta": 1e-6, **kwargs}
    with pytest.raises(InvalidParameterError) as info:
        dptree.hierarchy_counts(object(), "private", **args)
    assert info.value.parameter == parameter, str(info.value)


def test_levels_and_share_belong_to_a_found_tree() -> None:
    h = dptree.Hierarchy.from_paths([("a", "x")])
    with pytest.raises(InvalidParameterError, match="hierarchy='private'"):
        dptree.plan_hierarchy_counts(h, epsilon=1.0, structure_share=0.3)
    with pytest.raises(InvalidParameterError, match="unknown applies to a public hierarchy"):
        dptree.hierarchy_counts(_rows(), "private", levels=LEVELS, epsilon=1.0, delta=1e-6, unknown="drop")
    with pytest.raises(DPTreeError):
        dptree.hierarchy_counts(_rows(), "public", levels=LEVELS, epsilon=1.0, delta=1e-6)
