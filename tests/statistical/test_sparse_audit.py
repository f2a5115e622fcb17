"""The sparse range tree under the statistical privacy audit: the registered mechanisms pass, and
planted bugs fail: the levels method's expansion reading true counts instead of noisy ones, and
privtree's shape grown without the bias (its cost then grows with the depth) or from true counts.

The planted bugs are built here: the library's own loops with one line changed."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from audit_registry.sparse_trees import sparse_plan, sparse_spec

from dptree import noise as _noise
from dptree.sparsetree.mechanism import (
    Level,
    Measurement,
    children,
    grow_structure,
    level_nodes,
    measure_count_tree,
    node_counts,
    realised_depths,
)
from dptree.testing import audit


def _expanding_on_true_counts(plan: Any, keys: np.ndarray, seed: int, roots: int) -> Measurement:
    source = _noise.make_source(seed)
    layout, dense_depth, thresholds = plan.layout, plan.dense_depth, [plan.threshold] * plan.layout.depth
    scales = [plan.count_scale(0)] * layout.depth
    out: list[Level] = []
    parents = np.arange(roots, dtype=np.uint64)
    for d in range(1, layout.depth + 1):
        idx = children(parents, layout.fanout(d - 1))
        c = node_counts(keys, idx, layout.shifts[d])
        y = c + _noise.discrete_laplace(source, scales[d - 1], idx.size).astype(np.int64)
        out.append(Level(idx, y))
        if d == layout.depth:
            break
        parents = idx if d < dense_depth else idx[c >= thresholds[d - 1]]  # BUG: true counts
    shape = [lv.index for lv in out]
    return Measurement(shape, level_nodes(layout, out), realised_depths(layout, shape, roots))


def _unbiased_shape(plan: Any, keys: np.ndarray, seed: int, roots: int) -> Measurement:
    source = _noise.make_source(seed)
    biased = dataclasses.replace(plan, delta=0)  # BUG: no bias per level
    shape = grow_structure(keys, plan.layout, biased.structure_scale, 0, plan.threshold, plan.dense_depth, source,
                           roots=roots)
    return measure_count_tree(keys, plan.layout, shape, plan.count_scale, source, roots=roots)


@pytest.mark.parametrize("name", ["sparse_range_tree/privtree/add_remove", "sparse_range_tree/levels/add_remove"])
def test_the_sparse_trees_pass_their_audits_tightly(name: str) -> None:
    report = audit.audit(audit.get(name), config=audit.FAST, seed=15)
    assert report.passed, report.summary()
    # the audit sees much of the claimed loss (privtree's bound 3 / lambda_1 for b = 2 is loose: about 2 / lambda_1)
    assert report.epsilon_lower_bound > (0.3 if "privtree" in name else 0.8), report.summary()


def test_audit_catches_expansion_on_true_counts_as_a_planted_bug() -> None:
    spec = sparse_spec("sparse_range_tree/planted/true_count_expansion", sparse_plan("levels"), epsilon=1.0,
                       measure=_expanding_on_true_counts)
    report = audit.audit(spec, config=audit.FAST, seed=15)
    assert not report.passed, report.summary()
    assert report.epsilon_lower_bound > 3.0, report.summary()


def test_audit_catches_privtree_without_its_bias_as_a_planted_bug() -> None:
    """On a deep path (keys 0..255, 8 levels) whose count sits at theta, every unbiased split
    decision costs about 1 / lambda_1, so the shape's loss grows with the depth."""
    plan = sparse_plan("privtree", upper=255, threshold=5, structure_share=0.9)
    pairs = [("five records at one key, plus one", [7] * 5, [7] * 6)]
    spec = sparse_spec("sparse_range_tree/planted/unbiased_shape", plan, epsilon=1.0, measure=_unbiased_shape,
                       pairs=pairs)
    report = audit.audit(spec, config=audit.FAST, seed=15)
    assert not report.passed, report.summary()


def _share_from_true_total(plan: Any, keys: np.ndarray, seed: int, roots: int) -> Measurement:
    source = _noise.make_source(seed)
    totals = plan.draw_totals(keys, source, roots)  # drawn and released, as the library does
    size = np.bincount((keys >> np.uint64(plan.layout.bits)).astype(np.int64), minlength=roots)
    m = plan.measure_by_share(keys, source, plan.shares_of(size))  # BUG: the true n
    m.totals = totals
    return m


def test_audit_catches_the_share_read_from_the_true_total_as_a_planted_bug() -> None:
    """``structure_share="auto"`` with the share picked from the true number of records instead of
    the noisy total: four records get the shape at 3/8, five at 3/16, and the counts the rest, so
    the noise scales themselves tell the neighbours apart."""
    plan = sparse_plan("privtree", structure_share="auto")
    pairs = [("four records vs five (the rule's step between them)", [1, 1, 2, 2], [1, 1, 2, 2, 7])]
    spec = sparse_spec("sparse_range_tree/planted/share_from_true_total", plan, epsilon=1.0, pairs=pairs,
                       measure=_share_from_true_total)
    report = audit.audit(spec, config=audit.FAST, seed=15)
    assert not report.passed, report.summary()
