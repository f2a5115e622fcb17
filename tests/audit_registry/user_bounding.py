"""Audit registration of user-level contribution bounding (``range_tree(values, user_id=...)``)
and the spec builder the planted-bug tests reuse."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from dptree.testing.audit import AuditConfig, repeat
from dptree.testing.registry import MechanismSpec, NeighborPair, register


def user_bounded_spec(name: str, *, plan: Any, pairs: Sequence[tuple[str, Any, Any]], epsilon: float,
                      release: Callable[[Any, int], Any] | None = None) -> MechanismSpec:
    """``range_tree(values, user_id=...)`` with ``plan``'s parameters: at most k records per user
    kept (uniformly at random, :mod:`dptree.data.bounding`), then the noise of ``plan``. A dataset is a
    pair (values, user ids); neighbors add or remove one *user* with any number of records."""
    def release_default(data: Any, seed: int) -> Any:
        from dptree.rangetree.api import range_tree

        values, users = data
        budget = plan.statement["budget_requested"]
        return range_tree(values, user_id=users, lower=plan.domain.lower, upper=plan.domain.upper,
                          branching=plan.layout.branching, max_contributions=plan.max_contributions,
                          neighbors=plan.neighbors, levels=plan.levels, noise=plan.noise, rng=seed, **budget)

    rel = release or release_default

    def run(data: Any, seed: int) -> np.ndarray:
        out = rel(data, seed)
        return np.concatenate([m for m in out.measurements if m is not None])

    return MechanismSpec(
        name=name,
        covers=("range_tree",),
        neighbors=f"{plan.neighbors}_user(k={plan.max_contributions}, bounded)",
        epsilon=epsilon,
        delta=0.0,
        sample=repeat(run),
        worst_cases=lambda: iter([NeighborPair(label, d0, d1) for label, d0, d1 in pairs]),
        description="user-level contribution bounding before the tree",
        release=rel,
        extra={
            "bounded_plan": plan,
            "fast": AuditConfig(n_select=1_000, n_eval=3_000),
            "slow": AuditConfig(n_select=3_000, n_eval=9_000),
        },
    )


#: neighboring datasets (values, user ids) for user bounding with k = 2
USER_BOUNDING_PAIRS: list[tuple[str, Any, Any]] = [
    ("add a user with 5 records in one leaf (bounded to 2)",
     ([1, 2, 4], [10, 11, 12]), ([1, 2, 4, 3, 3, 3, 3, 3], [10, 11, 12, 99, 99, 99, 99, 99])),
    ("remove a user with 2 records", ([1, 1, 1, 5, 5], [7, 7, 7, 8, 8]), ([1, 1, 1], [7, 7, 7])),
]


def register_user_bounding() -> None:
    """``range_tree(values, user_id=..., max_contributions=2)`` under user-level add/remove. (Under
    ``replace`` the combination is refused: the exact total would depend on the data.)"""
    from dptree.rangetree.release import plan_range_tree

    plan = plan_range_tree(lower=0, upper=5, epsilon=1.0, branching=3, max_contributions=2)
    register(user_bounded_spec("range_tree/laplace/user_bounding_k2", plan=plan, pairs=USER_BOUNDING_PAIRS,
                               epsilon=1.0))
