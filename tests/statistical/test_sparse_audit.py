"""The sparse range tree under the statistical privacy audit: the registered mechanism passes, and
a planted bug (the expansion rule reading true counts instead of noisy ones) fails.

The planted bug is built here: the library's own loop with one line changed."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from audit_registry.sparse_trees import sparse_plan, sparse_spec

from dptree import noise as _noise
from dptree.sparsetree.mechanism import Level, SparseLayout, children, node_counts
from dptree.testing import audit


def _expanding_on_true_counts(keys: np.ndarray, layout: SparseLayout, scales: list[Fraction], thresholds: list[int],
                              dense_depth: int, source: _noise.RandomSource, *, roots: int = 1) -> list[Level]:
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
    return out


def test_the_sparse_tree_passes_its_audit_tightly() -> None:
    report = audit.audit(audit.get("sparse_range_tree/laplace/add_remove"), config=audit.FAST, seed=15)
    assert report.passed, report.summary()
    assert report.epsilon_lower_bound > 0.5, report.summary()  # the audit sees most of the claimed loss


def test_audit_catches_expansion_on_true_counts_as_a_planted_bug() -> None:
    spec = sparse_spec("sparse_range_tree/planted/true_count_expansion", sparse_plan(), epsilon=1.0,
                       measure=_expanding_on_true_counts)
    report = audit.audit(spec, config=audit.FAST, seed=15)
    assert not report.passed, report.summary()
    assert report.epsilon_lower_bound > 3.0, report.summary()
