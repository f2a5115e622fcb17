"""The 2-D range tree under the statistical privacy audit: every registered configuration passes,
and planted bugs fail (built here: the plan's tree with tampered noise parameters)."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest
from audit_registry.spatial import BASE, PRIVTREE_PAIRS, privtree_plan, privtree_spec, spatial_spec

import dptree
from dptree import noise as _noise
from dptree.sparsetree.mechanism import grow_structure, measure_count_tree
from dptree.testing import audit

NAMES = [s.name for s in audit.registered() if s.name.startswith("range_tree_2d/")]


def _with_scales(plan: dptree.RangeTree2DPlan, params: list) -> dptree.RangeTree2DPlan:
    return dataclasses.replace(plan, tree=dataclasses.replace(plan.tree, noise_parameters=params))


def _bug_one_level_short() -> audit.MechanismSpec:
    # the buggy code counts one level fewer than a point changes (L1 sensitivity 2 for the 3 noised
    # levels of the geometric split): every level's noise is 2/3 of what eps = 1 needs
    plan = dptree.plan_range_tree_2d(lower=(0, 0), upper=(3, 3), epsilon=1.0, levels="geometric")
    bug = _with_scales(plan, [p * Fraction(2, 3) for p in plan.tree.noise_parameters])
    return spatial_spec("bug/2d_one_level_short", plan=bug, epsilon=1.0, delta=0.0, covers=(),
                        pairs=[("add one point (changes every level)", BASE, BASE + [(2, 2)])])


def _bug_replace_as_add_remove() -> audit.MechanismSpec:
    # replace neighbours move one point between two cells: each level needs L1 sensitivity 2
    replace = dptree.plan_range_tree_2d(lower=(0, 0), upper=(3, 3), epsilon=1.0, neighbors="replace",
                                        levels="geometric")
    bug = _with_scales(replace, [None if p is None else p / 2 for p in replace.tree.noise_parameters])
    return spatial_spec("bug/2d_replace_as_add_remove", plan=bug, epsilon=1.0, delta=0.0, covers=(),
                        neighbors="replace",
                        pairs=[("replace: a corner point -> the opposite corner", BASE + [(0, 0)], BASE + [(3, 3)])])


def _privtree_counts_too_little_noise(tree, keys, seed, roots):  # type: ignore[no-untyped-def]
    # the buggy code noises the count tree at a quarter of the scale k H / eps_2 its statement claims
    source = _noise.make_source(seed)
    shape = grow_structure(keys, tree.layout, tree.structure_scale, tree.delta, tree.threshold, tree.dense_depth,
                           source, roots=roots)
    return measure_count_tree(keys, tree.layout, shape, lambda h: tree.count_scale(h) / 4, source, roots=roots)


def _privtree_shape_from_true_counts(tree, keys, seed, roots):  # type: ignore[no-untyped-def]
    # the buggy code decides the splits on the biased true counts, without PrivTree's noise
    source = _noise.make_source(seed)
    shape = grow_structure(keys, tree.layout, Fraction(1, 2**40), tree.delta, tree.threshold, tree.dense_depth,
                           source, roots=roots)
    return measure_count_tree(keys, tree.layout, shape, tree.count_scale, source, roots=roots)


def _bug_privtree_counts() -> audit.MechanismSpec:
    return privtree_spec("bug/2d_privtree_counts_quarter_noise", privtree_plan(), pairs=PRIVTREE_PAIRS, covers=(),
                         measure=_privtree_counts_too_little_noise)


def _bug_privtree_shape() -> audit.MechanismSpec:
    # a quadrant holding delta + theta points does not split on its biased true count, one more does
    plan = privtree_plan(threshold=0)
    c = plan.tree.delta + plan.tree.threshold
    return privtree_spec("bug/2d_privtree_noiseless_shape", plan, covers=(), measure=_privtree_shape_from_true_counts,
                         pairs=[("delta + theta points in a quadrant, plus one", [(0, 0)] * c, [(0, 0)] * (c + 1))])


PLANTED = {"one_level_short": _bug_one_level_short, "replace_as_add_remove": _bug_replace_as_add_remove,
           "privtree_counts_quarter_noise": _bug_privtree_counts, "privtree_noiseless_shape": _bug_privtree_shape}


@pytest.mark.parametrize("name", NAMES)
def test_the_2d_range_tree_passes_its_audit(name: str) -> None:
    report = audit.audit(audit.get(name), config=audit.FAST, seed=2027)
    assert report.passed, report.summary()


def test_the_audit_is_tight_for_the_geometric_split() -> None:
    report = audit.audit(audit.get("range_tree_2d/laplace/add_remove/geometric"), config=audit.FAST, seed=5)
    assert report.epsilon_lower_bound > 0.8, report.summary()


@pytest.mark.parametrize("bug", sorted(PLANTED))
@pytest.mark.parametrize("seed", [0, 1])
def test_audit_catches_planted_2d_bug(bug: str, seed: int) -> None:
    report = audit.audit(PLANTED[bug](), config=audit.FAST, seed=seed)
    assert not report.passed, report.summary()


def test_the_2d_privtree_audit_sees_much_of_its_loss() -> None:
    # PrivTree's bound 7 / (3 lambda_1) for b = 4 is loose, as the sparse tree's for b = 2: about half of it shows
    report = audit.audit(audit.get("range_tree_2d/privtree/add_remove"), config=audit.FAST, seed=2027)
    assert report.passed and report.epsilon_lower_bound > 0.3, report.summary()
