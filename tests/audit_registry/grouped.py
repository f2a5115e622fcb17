"""Audit registration of ``range_tree_by`` (one range tree per public group, parallel composition)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dptree.testing.audit import AuditConfig, repeat
from dptree.testing.registry import MechanismSpec, NeighborPair, register


def register_grouped() -> None:
    """``range_tree_by`` (parallel composition): one record added to one group; every group's
    noisy counts are the output. One release per output, so smaller samples."""
    from dptree.rangetree.api import range_tree_by

    groups = ["a", "b"]
    base_v, base_g = [1, 2, 4, 5], ["a", "b", "a", "b"]

    def release(data: Any, seed: int) -> Any:
        v, g = data
        return range_tree_by(v, by=g, groups=groups, lower=0, upper=5, epsilon=1.0, branching=3, rng=seed)

    def run(data: Any, seed: int) -> np.ndarray:
        rel = release(data, seed)
        return np.concatenate([m for k in groups for m in rel[k].measurements if m is not None])

    register(
        MechanismSpec(
            name="range_tree_by/laplace/add_remove",
            covers=("range_tree_by",),
            neighbors="add_remove",
            epsilon=1.0,
            delta=0.0,
            sample=repeat(run),
            worst_cases=lambda: iter(
                [NeighborPair("add a record to group a", (base_v, base_g), (base_v + [3], base_g + ["a"]))]
            ),
            description="one range tree per public group, eps = 1 for the whole set",
            release=release,
            extra={
                "fast": AuditConfig(n_select=3_000, n_eval=9_000),
                "slow": AuditConfig(n_select=5_000, n_eval=15_000),
            },
        )
    )
