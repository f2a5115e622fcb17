"""Range-tree sensitivities checked by brute force over all neighboring pairs on tiny domains.

For every dataset of up to two records (plus the neighbor's change) on small domains and trees,
compute every level's true counts and the largest change between neighbors; the claims of
``level_sensitivities`` (DESIGN section 3) must be upper bounds and tight.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dptree import range_tree
from dptree.rangetree.layout import build_layout
from dptree.rangetree.release import level_sensitivities


def level_vectors(layout, records) -> list[np.ndarray]:  # type: ignore[no-untyped-def]
    hist = (
        np.bincount(np.asarray(records, dtype=np.int64), minlength=layout.padded_size)
        if records
        else np.zeros(layout.padded_size, np.int64)
    )
    return layout.level_counts(hist)


def neighbor_pairs(domain: int, neighbors: str, k: int, base_size: int = 2):  # type: ignore[no-untyped-def]
    leaves = range(domain)
    for n in range(base_size + 1):
        for base in itertools.combinations_with_replacement(leaves, n):
            if neighbors == "add_remove":
                for user in itertools.combinations_with_replacement(leaves, k):
                    yield list(base), list(base) + list(user)
            else:
                # replace: one person's k records (part of the data) change to any other k records
                if n < k:
                    continue
                for removed in set(itertools.combinations(base, k)):
                    rest = list(base)
                    for r in removed:
                        rest.remove(r)
                    for user in itertools.combinations_with_replacement(leaves, k):
                        yield list(base), rest + list(user)


@pytest.mark.parametrize("domain,branching", [(4, 2), (5, 2), (6, 3), (7, 4)])
@pytest.mark.parametrize("neighbors", ["add_remove", "replace"])
@pytest.mark.parametrize("k", [1, 2])
def test_level_sensitivities_are_tight_upper_bounds(domain: int, branching: int, neighbors: str, k: int) -> None:
    layout = build_layout(domain, branching)
    l1_claim, l2sq_claim = level_sensitivities(neighbors, k, layout.depth)
    l1_max = np.zeros(layout.depth + 1)
    l2_max = np.zeros(layout.depth + 1)
    for a, b in neighbor_pairs(domain, neighbors, k, base_size=k + 1):
        for j, (u, v) in enumerate(zip(level_vectors(layout, a), level_vectors(layout, b))):
            d = (u - v).astype(float)
            l1_max[j] = max(l1_max[j], np.abs(d).sum())
            l2_max[j] = max(l2_max[j], (d * d).sum())
    np.testing.assert_array_equal(l1_max, l1_claim)  # upper bound and tight
    np.testing.assert_array_equal(l2_max, l2sq_claim)


@pytest.mark.parametrize("neighbors", ["add_remove", "replace"])
def test_statement_reports_whole_tree_sensitivity(neighbors: str) -> None:
    rel = range_tree(
        [1, 2, 3], lower=0, upper=15, epsilon=1.0, branching=2, neighbors=neighbors, max_contributions=2, rng=0
    )
    L = rel.layout.depth
    measured = L  # uniform levels: every level but the root
    per_level_l1 = 2 if neighbors == "add_remove" else 4
    per_level_l2sq = 4 if neighbors == "add_remove" else 8
    assert rel.privacy["l1_sensitivity"] == per_level_l1 * measured
    assert rel.privacy["l2_sensitivity"] == pytest.approx(np.sqrt(per_level_l2sq * measured))
    # each level spends its share: sum of per-level epsilons is at most the budget
    eps = sum(lv["epsilon"] for lv in rel.privacy["levels"])
    assert eps <= 1.0 + 1e-12 and eps > 1.0 - 1e-5
