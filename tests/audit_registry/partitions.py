"""Audit registrations of private partition selection (``groups="private"``): the set of groups
released, under add/remove one user, for the optimal policy (one group per user) and the Gaussian
one (several); and the whole releases (range trees and quantiles by groups found privately) for
the boundary test. The planted bugs that the audit must catch are built with :func:`selection_spec`
in tests/statistical/test_partition_audit.py."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from dptree.testing.audit import AuditConfig, repeat
from dptree.testing.registry import MechanismSpec, NeighborPair, register

#: one selection per output (about 0.3 ms each)
LITE = {"fast": AuditConfig(n_select=4_000, n_eval=12_000), "slow": AuditConfig(n_select=8_000, n_eval=24_000)}
#: the candidate groups of the datasets below: an output is the bitmask of those released
CANDIDATES = ("a", "b", "c", "d", "e", "f")


def _mask(keys: Sequence[Any]) -> int:
    return sum(1 << CANDIDATES.index(k) for k in keys)


def selection_spec(name: str, plan: Any, pairs: list[tuple[str, Any, Any]], *, epsilon: float, delta: float,
                   release: Callable[[Any, int], Any] | None = None, covers: tuple[str, ...] = ()) -> MechanismSpec:
    """The groups ``plan`` (a :class:`~dptree.partitions.selection.SelectionPlan`) releases from a
    dataset (groups, user ids), as a bitmask over :data:`CANDIDATES`; claimed (epsilon, delta)."""

    def run(data: Any, seed: int) -> int:
        groups, users = data
        return _mask(plan.select(None, by=np.asarray(groups, dtype=object), user_id=np.asarray(users), rng=seed))

    return MechanismSpec(
        name=name, covers=covers, neighbors=f"add_remove_user(max_groups={plan.max_groups})", epsilon=epsilon,
        delta=delta, sample=repeat(run), worst_cases=lambda: iter([NeighborPair(*p) for p in pairs]),
        description="private partition selection: the set of groups released", release=release,
        extra={"plan": plan, **LITE})


def register_partitions() -> None:
    """The selection alone at (1, 0.1) (its output, the released groups, is what the whole release's
    selection step outputs), with the whole releases of range trees and quantiles for the boundary
    test; and the Gaussian policy for four groups per user."""
    from dptree.partitions.policy import gaussian_policy
    from dptree.partitions.selection import SelectionPlan, plan_selection
    from dptree.quantiles import quantiles
    from dptree.rangetree.api import range_tree

    values = [1, 4, 2, 5, 3, 1, 2]
    groups = ["a", "a", "b", "b", "b", "c", "a"]
    users = [1, 2, 3, 4, 5, 6, 1]  # user 1 has two records of "a"

    def tree(data: Any, seed: int, max_groups: int = 1) -> Any:
        g, u = data
        v = [values[i % len(values)] for i in range(len(g))]
        return range_tree(v, by=g, groups="private", user_id=u, lower=0, upper=5, epsilon=2.0, delta=0.1,
                          branching=3, max_contributions=2, max_groups=max_groups, rng=seed)

    def q(data: Any, seed: int) -> Any:
        g, u = data[0], data[1]
        v = [values[i % len(values)] for i in range(len(g))]
        return quantiles(v, [0.5], by=g, groups="private", user_id=u, lower=0, upper=15, epsilon=2.0, delta=0.1,
                         method="approx", rng=seed)

    base = (groups, users)
    pairs = [
        ("add a user to a group of 2 users (kept with 0.37 vs 0.81)", base, (groups + ["a", "a"], users + [7, 7])),
        ("add a user with a new group (0 vs 0.1)", base, (groups + ["d"], users + [8])),
        ("add a user with records in two groups (one of them counted)", base, (groups + ["c", "d"], users + [9, 9])),
    ]
    plan = plan_selection(epsilon=1.0, delta=0.1, max_groups=1)
    register(selection_spec("partition_selection/optimal/user", plan, pairs, epsilon=1.0, delta=0.1, release=tree,
                            covers=("range_tree",)))
    register(selection_spec("partition_selection/optimal/user/quantiles", plan, pairs[:1], epsilon=1.0, delta=0.1,
                            release=q, covers=("quantiles",)))
    many = SelectionPlan(1.0, 0.1, 4, True, gaussian_policy(1.0, 0.1, 4))
    tau = many.policy.threshold
    g4 = [k for k in "abcd" for _ in range(tau - 1)]
    u4 = [i for i in range(len(g4))]
    pairs4 = [("add a user to four groups at the threshold", (g4, u4), (g4 + list("abcd"), u4 + [99] * 4)),
              ("add a user with four new groups", (g4[:tau], u4[:tau]), (g4[:tau] + list("cdef"), u4[:tau] + [99] * 4))]
    register(selection_spec("partition_selection/gaussian/user_m4", many, pairs4, epsilon=1.0, delta=0.1,
                            release=lambda data, seed: tree(data, seed, max_groups=4)))
