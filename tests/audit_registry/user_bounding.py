"""Audit registration of user-level contribution bounding (``range_tree(values, user_id=...)``),
of the private choice of the bound (``max_contributions="private"``), and the spec builders the
planted-bug tests reuse."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

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


def _users(counts: Sequence[int], first: int = 0) -> tuple[list[int], list[int]]:
    """(values, user ids) of users with these record counts (values spread over 0..9)."""
    users = [first + i for i, c in enumerate(counts) for _ in range(c)]
    return [(3 * j + u) % 10 for j, u in enumerate(users)], users


def choice_law(plan: Any, data: Any) -> dict[int, float]:
    """The exact law of the bound ``plan`` (a private-contributions plan) chooses on ``data``
    (values, user ids): the top-rank mechanism's law over the candidate bounds."""
    from dptree.data.histograms import records_per_user
    from dptree.interior.top_rank import top_rank_law
    from dptree.rangetree.contributions import candidate_bounds

    values, users = data
    x, counts = plan.choice_values(records_per_user(np.asarray(values), plan.tree_at(1), user_id=np.asarray(users),
                                                    cap=plan.cap))
    grid = candidate_bounds(plan.cap)
    law = top_rank_law(x, counts=counts, above=plan.above, lower=0, upper=grid.size - 1, epsilon=plan.choice_epsilon)
    return {int(k): float(p) for k, p in zip(grid, law)}


def private_contributions_spec(name: str, *, plan: Any, pairs: Sequence[tuple[str, Any, Any]],
                               choose: Callable[[Any, np.ndarray, Any], int] | None = None,
                               exact_statistic: bool = True, description: str = "",
                               release: Callable[[Any, int], Any] | None = None,
                               covers: tuple[str, ...] = ("range_tree",)) -> MechanismSpec:
    """The choice of the bound of ``range_tree(values, user_id=..., max_contributions="private")``
    with ``plan``'s parameters (a dataset is (values, user ids); neighbors add or remove one user
    with any number of records). ``choose(plan, per_user, seed)``: the choice audited (default:
    the plan's own; run ``i`` of a batch gets the seed ``derive_seed(seed, i)``); the claim is the plan's choice epsilon (the tree at the chosen bound is
    audited by the user-bounding spec above). The statistic of a pair is the log-likelihood ratio
    of the claimed exact law (``exact_statistic``), else the chosen bound itself. ``release``:
    the whole release (the boundary test; default: the range tree at the chosen bound)."""
    from dptree.data.histograms import records_per_user

    pick = choose or (lambda p, per_user, src: p.choose(per_user, src))

    def sample(data: Any, n: int, seed: int) -> np.ndarray:
        from dptree.testing.audit import derive_seed

        values, users = data
        per_user = records_per_user(np.asarray(values), plan.tree_at(1), user_id=np.asarray(users), cap=plan.cap)
        return np.array([pick(plan, per_user, derive_seed(seed, i)) for i in range(n)], dtype=np.int64)

    def worst_cases() -> Iterator[NeighborPair]:
        for label, d0, d1 in pairs:
            statistic = None
            if exact_statistic:
                l0, l1 = choice_law(plan, d0), choice_law(plan, d1)
                table = np.zeros(plan.cap + 1)
                for k in l0:
                    table[k] = np.log(l0[k]) - np.log(l1[k])

                def statistic(y: np.ndarray, table: np.ndarray = table) -> np.ndarray:
                    return table[np.asarray(y, dtype=np.int64)]

            yield NeighborPair(label, d0, d1, statistic=statistic)

    def tree_release(data: Any, seed: int) -> Any:
        from dptree.rangetree.api import range_tree

        values, users = data
        total = plan.budget
        return range_tree(np.asarray(values), user_id=np.asarray(users), lower=plan.lower, upper=plan.upper,
                          branching=plan.branching, levels=plan.levels, noise=plan.noise, epsilon=total.epsilon,
                          max_contributions="private", contributions_share=plan.share, contributions_cap=plan.cap,
                          rng=seed)

    return MechanismSpec(
        name=name,
        covers=covers,
        neighbors=f"add_remove_user(any records, choice over 1..{plan.cap})",
        epsilon=plan.choice_epsilon,
        delta=0.0,
        sample=sample,
        worst_cases=worst_cases,
        description=description or "the private choice of max_contributions (top-rank exponential mechanism)",
        release=release or tree_release,
        extra={"contributions_plan": plan,
               "fast": AuditConfig(n_select=1_000, n_eval=3_000),
               "slow": AuditConfig(n_select=4_000, n_eval=12_000)},
    )


#: neighboring datasets (values, user ids) for the private bound: m = 3 users above it
PRIVATE_CONTRIBUTIONS_PAIRS: list[tuple[str, Any, Any]] = [
    ("add a user with 8 records (the cap): the level moves from 2 to 3",
     _users([1, 1, 2, 3, 5, 8]), _users([1, 1, 2, 3, 5, 8, 8])),
    ("remove a user with 2 records", _users([1, 2, 2, 2, 4, 9]), _users([1, 2, 2, 4, 9])),
    ("add a user with 1 record to no one", _users([]), _users([1])),
]


def private_contributions_plan() -> Any:
    """The plan the registration audits: epsilon 4 with share 0.25 (the choice at epsilon 1), cap 8."""
    from dptree.rangetree.api import plan_private_contributions

    return plan_private_contributions(lower=0, upper=9, epsilon=4.0, share=0.25, cap=8, branching=3, user_id="u")


def register_private_contributions() -> None:
    """``range_tree(values, user_id=..., max_contributions="private")`` and ``quantiles(...,
    max_contributions="private")``: the choice of the bound (the tree at it is the user-bounded
    tree audited above, the quantiles at it the per-person quantiles of audit_registry/quantiles.py)."""
    register(private_contributions_spec("range_tree/private_max_contributions", plan=private_contributions_plan(),
                                        pairs=PRIVATE_CONTRIBUTIONS_PAIRS))
    from dptree.quantiles.release import choice_plan

    quantiles_plan = choice_plan("exponential", 4.0, 0, 9, None, 0.25, 8)

    def quantiles_release(data: Any, seed: int) -> Any:
        from dptree.quantiles.api import quantiles

        values, users = data
        return quantiles(np.asarray(values), [0.25, 0.5, 0.9], lower=0, upper=9, epsilon=4.0, method="exponential",
                         user_id=np.asarray(users), max_contributions="private", contributions_share=0.25,
                         contributions_cap=8, rng=seed)

    register(private_contributions_spec("quantiles/private_max_contributions", plan=quantiles_plan,
                                        pairs=PRIVATE_CONTRIBUTIONS_PAIRS[:1], release=quantiles_release,
                                        covers=("quantiles",),
                                        description="quantiles(max_contributions='private'): the choice of the bound"))
