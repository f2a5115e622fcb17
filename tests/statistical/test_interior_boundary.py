"""TreeLog's 3t / 3t + 1 boundary through the public API, by repetition: the size is never published nor branched on."""

from __future__ import annotations

import pytest
from audit_registry.interior_points import INTERIOR_TREE_AUDIT, interior_tree_pairs

from dptree.interior.api import interior_point
from dptree.testing import audit


@pytest.mark.slow
def test_treelog_boundary_through_the_public_api_slow():
    """3000 releases per side of the 3t / 3t + 1 boundary via interior_point (declared n_max)."""
    a = INTERIOR_TREE_AUDIT
    pair = interior_tree_pairs()["treelog/add_remove"][0]
    runs = 3000
    ks = []
    for d, base in ((pair.d0, 0), (pair.d1, 10**6)):
        vals, cnt = d
        ks.append(
            sum(
                interior_point(
                    vals,
                    counts=cnt,
                    lower=0,
                    upper=255,
                    epsilon=1.0,
                    delta=1e-6,
                    method="treelog",
                    n_max=a["n_treelog"],
                    rng=base + i,
                ).value
                != 85
                for i in range(runs)
            )
        )
    for ka, kb in ((ks[0], ks[1]), (ks[1], ks[0])):
        assert audit.epsilon_lower_bound(ka, kb, runs, 1e-6, 1e-6)[0] <= 1.0, ks
