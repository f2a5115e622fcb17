"""Audit registrations of the range tree (``range_tree``, ``plan_range_tree``): batched releases,
the spec builder and the DESIGN section 3 worst cases."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator, Sequence

import numpy as np

from dptree.testing.registry import MechanismSpec, NeighborPair, register
from dptree.testing.statistics import gaussian_llr, laplace_llr


def range_tree_leaf_histogram(plan: Any, values: Any) -> np.ndarray:
    """The leaf histogram ``range_tree`` computes from ``values`` (same validation and clamping)."""
    from dptree.data.domain import coerce_values

    vals = coerce_values(values, plan.domain)
    leaves = plan.domain.to_leaves(vals)
    return np.bincount(leaves, minlength=plan.layout.padded_size)


def range_tree_noised_counts(plan: Any, hist: np.ndarray) -> np.ndarray:
    """True counts of the nodes a release noises (noised levels, root first, concatenated)."""
    levels = plan.layout.level_counts(np.asarray(hist, dtype=np.int64))
    return np.concatenate([c for c, p in zip(levels, plan.noise_parameters) if p is not None])


def range_tree_batch(plan: Any, hist: np.ndarray, n: int, seed: int) -> np.ndarray:
    """``n`` independent releases of ``plan`` on ``hist`` in one call of ``RangeTreePlan.release``.

    The ``n`` copies of the tree hang under a virtual super-root (not measured; exact under
    replace neighbors, like the root), so one call of the library's own release code draws the
    noise of all of them from ``rng=seed``. Returns the noisy counts of the noised levels, shape
    (n, nodes). With ``n = 1`` the draws happen in the same order as ``plan.release(hist, seed)``
    and the output is identical (tested).
    """
    from dptree.rangetree.layout import TreeLayout

    lay = plan.layout
    forest = TreeLayout(
        domain_size=n * lay.padded_size, branching=max(lay.branching, n), fanouts=(n,) + tuple(lay.fanouts)
    )
    var = np.asarray(plan.level_variance, dtype=np.float64).copy()
    if plan.root_exact:
        var[0] = np.inf  # the copies' roots are not measured; the super-root is exact
        top = 0.0
    else:
        top = np.inf
    forest_plan = dataclasses.replace(
        plan,
        layout=forest,
        noise_parameters=[None] + list(plan.noise_parameters),
        level_variance=np.concatenate([[top], var]),
        weights=np.concatenate([[0.0], np.asarray(plan.weights, dtype=np.float64)]),
    )
    tiled = np.tile(np.asarray(hist, dtype=np.int64), n)
    rel = forest_plan.release(tiled, rng=seed)
    cols = []
    for j, p in enumerate(plan.noise_parameters):
        if p is None:
            continue
        m = rel.measurements[j + 1]
        assert m is not None
        cols.append(m.reshape(n, lay.level_sizes[j]))
    return np.concatenate(cols, axis=1)


def _claimed_level_parameters(plan: Any) -> dict[int, float]:
    """Noise parameter of each noised level as stated in the privacy statement (the claim)."""
    key = "laplace_scale" if plan.noise == "laplace" else "gaussian_sigma2"
    return {int(lv["level"]): float(lv[key]) for lv in plan.statement["levels"]}


def range_tree_spec(
    name: str,
    *,
    plan: Any,
    epsilon: float,
    delta: float,
    pairs: Sequence[tuple[str, Any, Any]],
    neighbors: str | None = None,
    covers: tuple[str, ...] = ("range_tree", "plan_range_tree"),
    description: str = "",
) -> MechanismSpec:
    """A spec auditing the range-tree release made by ``plan`` (a :class:`RangeTreePlan`).

    ``pairs``: (label, values0, values1) of neighboring datasets, given as raw values (they go
    through the same validation, clamping and bucketing as :func:`dptree.range_tree`). The
    statistic of each pair is the log-likelihood ratio of the *claimed* noise (the scales in the
    plan's privacy statement) on the nodes whose counts differ.
    """

    def sample(values: Any, n: int, seed: int) -> np.ndarray:
        return range_tree_batch(plan, range_tree_leaf_histogram(plan, values), n, seed)

    def worst_cases() -> Iterator[NeighborPair]:
        claimed = _claimed_level_parameters(plan)
        per_node = np.concatenate(
            [
                np.full(size, claimed.get(j, np.nan))
                for j, (size, p) in enumerate(zip(plan.layout.level_sizes, plan.noise_parameters))
                if p is not None
            ]
        )
        for label, v0, v1 in pairs:
            c0 = range_tree_noised_counts(plan, range_tree_leaf_histogram(plan, v0))
            c1 = range_tree_noised_counts(plan, range_tree_leaf_histogram(plan, v1))
            llr = laplace_llr if plan.noise == "laplace" else gaussian_llr
            yield NeighborPair(label, v0, v1, statistic=llr(c0, c1, per_node))

    return MechanismSpec(
        name=name,
        covers=covers,
        neighbors=neighbors or plan.neighbors,
        epsilon=epsilon,
        delta=delta,
        sample=sample,
        worst_cases=worst_cases,
        description=description,
        extra={"plan": plan},
        release=lambda values, seed: plan.release(range_tree_leaf_histogram(plan, values), seed),
    )


def register_range_trees() -> None:
    """The range-tree configurations every test run audits (DESIGN section 3 worst cases).

    Small trees keep the audits fast: D = 6 leaves with b = 3 has fan-outs (3, 2), so the bottom
    fan-out differs from b, and 9 noised nodes (root not measured under the uniform rule).
    """
    from dptree.privacy.budget import zcdp_epsilon
    from dptree.rangetree.release import plan_range_tree

    base = [1, 2, 2, 4, 5, 5]  # records already present; the pairs differ by one person
    p = plan_range_tree(lower=0, upper=5, epsilon=1.0, branching=3)
    register(
        range_tree_spec(
            "range_tree/laplace/add_remove",
            plan=p,
            epsilon=1.0,
            delta=0.0,
            pairs=[
                ("add one record (changes every level)", base, base + [3]),
                ("add a record at the lower boundary leaf", base, base + [0]),
                ("add a record clamped into the upper boundary leaf", base, base + [10**9]),
            ],
            description="pure eps = 1, uniform levels",
        )
    )
    p = plan_range_tree(lower=0, upper=5, epsilon=1.0, branching=2, levels="optimal")
    register(
        range_tree_spec(
            "range_tree/laplace/add_remove/optimal_levels",
            plan=p,
            epsilon=1.0,
            delta=0.0,
            pairs=[
                ("add one record (changes every level)", base, base + [3]),
                ("empty dataset vs a record at the upper boundary leaf", [], [5]),
            ],
            description="pure eps = 1, per-level budgets from the closed form (unequal scales)",
        )
    )
    p = plan_range_tree(lower=0, upper=5, epsilon=1.0, branching=3, neighbors="replace")
    register(
        range_tree_spec(
            "range_tree/laplace/replace",
            plan=p,
            epsilon=1.0,
            delta=0.0,
            pairs=[
                ("replace: lowest leaf -> highest leaf", base + [0], base + [5]),
                ("replace: adjacent leaves in different subtrees", base + [1], base + [2]),
            ],
            description="pure eps = 1, n public (root exact)",
        )
    )
    p = plan_range_tree(lower=0, upper=5, epsilon=2.0, branching=3, max_contributions=3)
    register(
        range_tree_spec(
            "range_tree/laplace/user_k3",
            plan=p,
            epsilon=2.0,
            delta=0.0,
            neighbors="add_remove_user(k=3)",
            pairs=[
                ("user with 3 records in one leaf", base, base + [4, 4, 4]),
                ("user with 3 records in the boundary leaves", base, base + [0, 5, 5]),
            ],
            description="pure eps = 2, at most 3 records per person",
        )
    )
    p = plan_range_tree(lower=0.0, upper=1.0, width=0.25, epsilon=1.0, branching=2)
    register(
        range_tree_spec(
            "range_tree/laplace/float_domain",
            plan=p,
            epsilon=1.0,
            delta=0.0,
            pairs=[
                ("add a record at upper (closed last bucket)", [0.3, 0.5], [0.3, 0.5, 1.0]),
                ("add a record below lower (clamped)", [0.3, 0.5], [0.3, 0.5, -5.0]),
            ],
            description="pure eps = 1, float domain with 4 buckets",
        )
    )
    p = plan_range_tree(lower=0, upper=5, epsilon=1.0, delta=1e-6, branching=3, noise="gaussian")
    register(
        range_tree_spec(
            "range_tree/gaussian/add_remove",
            plan=p,
            epsilon=1.0,
            delta=1e-6,
            pairs=[
                ("add one record (changes every level)", base, base + [3]),
                ("add a record at the lower boundary leaf", base, base + [0]),
            ],
            description="(1, 1e-6)-DP by the exact discrete-Gaussian delta (issue 16)",
        )
    )
    p = plan_range_tree(lower=0, upper=5, rho=0.5, branching=3, noise="gaussian", neighbors="replace")
    register(
        range_tree_spec(
            "range_tree/gaussian/replace",
            plan=p,
            epsilon=zcdp_epsilon(0.5, 1e-6),
            delta=1e-6,
            pairs=[("replace: lowest leaf -> highest leaf", base + [0], base + [5])],
            description="rho = 0.5 zCDP, audited as the implied (eps, 1e-6)-DP",
        )
    )
