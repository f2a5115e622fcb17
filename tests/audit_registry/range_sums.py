"""Audit registration of range trees with sums (``range_tree(values, weights=..., weight_bounds=...)``,
``plan_range_sums``): a count tree and a sum tree of the same layout, the budget split between them."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator, Sequence

import numpy as np

from audit_registry.range_trees import forest_copies, forest_plan
from dptree.testing.registry import MechanismSpec, NeighborPair, register
from dptree.testing.statistics import gaussian_llr, laplace_llr


def _exact(plan: Any, data: Any) -> tuple[np.ndarray, np.ndarray]:
    """(leaf counts, leaf sums in units) of a dataset (values, weights), through the data path."""
    from dptree.data.histograms import leaf_sums

    values, weights = data
    return leaf_sums(np.asarray(values), plan, plan.grid, weights=np.asarray(weights, dtype=np.float64))


def _noised(tree: Any, hist: np.ndarray) -> np.ndarray:
    levels = tree.layout.level_counts(np.asarray(hist, dtype=np.int64))
    return np.concatenate([c for c, p in zip(levels, tree.noise_parameters) if p is not None])


def range_sums_batch(plan: Any, data: Any, n: int, seed: int) -> np.ndarray:
    """``n`` independent releases of ``plan`` on ``data`` by one call of its ``release`` over a forest
    of ``n`` copies of both trees: the noisy count nodes, then the noisy sum nodes, of each copy."""
    hist, sums = _exact(plan, data)
    batch = dataclasses.replace(plan, counts=forest_plan(plan.counts, n), sums=forest_plan(plan.sums, n))
    rel = batch.release(np.tile(hist, n), np.tile(sums, n), rng=seed)
    return np.concatenate([forest_copies(plan.counts, rel.measurements, n),
                           forest_copies(plan.sums, rel.sum_measurements, n)], axis=1)


def range_sums_spec(name: str, *, plan: Any, claimed: Any, pairs: Sequence[tuple[str, Any, Any]],
                    epsilon: float, delta: float = 0.0, covers: tuple[str, ...] = ("range_tree", "plan_range_sums"),
                    description: str = "") -> MechanismSpec:
    """A spec auditing the release of ``plan`` (a :class:`~dptree.RangeSumsPlan`) against the noise
    ``claimed`` states (a plan whose statement is the claim: the plan itself, or the correct plan
    of a planted bug). A dataset is (values, weights); the statistic of a pair is the
    log-likelihood ratio of the claimed noise on the nodes of both trees whose values differ."""
    key = "laplace_scale" if claimed.noise == "laplace" else "gaussian_sigma2"

    def per_node(tree: Any, stated: dict[str, Any]) -> np.ndarray:
        scale = {int(lv["level"]): float(lv[key]) for lv in stated["levels"]}
        return np.concatenate([np.full(size, scale[j]) for j, (size, p) in
                               enumerate(zip(tree.layout.level_sizes, tree.noise_parameters)) if p is not None])

    def worst_cases() -> Iterator[NeighborPair]:
        scales = np.concatenate([per_node(claimed.counts, claimed.statement["counts"]),
                                 per_node(claimed.sums, claimed.statement["sums"])])
        llr = laplace_llr if claimed.noise == "laplace" else gaussian_llr
        for label, d0, d1 in pairs:
            c0 = np.concatenate([_noised(claimed.counts, _exact(claimed, d0)[0]),
                                 _noised(claimed.sums, _exact(claimed, d0)[1])])
            c1 = np.concatenate([_noised(claimed.counts, _exact(claimed, d1)[0]),
                                 _noised(claimed.sums, _exact(claimed, d1)[1])])
            yield NeighborPair(label, d0, d1, statistic=llr(c0, c1, scales))

    return MechanismSpec(
        name=name, covers=covers, neighbors="add_remove", epsilon=epsilon, delta=delta,
        sample=lambda data, n, seed: range_sums_batch(plan, data, n, seed), worst_cases=worst_cases,
        description=description, extra={"sums_plan": plan},
        release=lambda data, seed: plan.release(*_exact(plan, data), seed),
    )


#: datasets (values, weights) on [0, 5] with weights in [0, 10]; the pairs differ by one record
SUM_PAIRS: list[tuple[str, Any, Any]] = [
    ("add a record of the largest weight", ([1, 2, 4], [10.0, 0.0, 5.0]), ([1, 2, 4, 3], [10.0, 0.0, 5.0, 10.0])),
    ("add a record of a weight far above the bound (clamped)", ([0, 5], [1.0, 2.0]), ([0, 5, 5], [1.0, 2.0, 1e9])),
]


def register_range_sums() -> None:
    """``range_tree(values, weights=..., weight_bounds=(0, 10))`` with Laplace noise (epsilon = 1)
    and with Gaussian noise (rho = 0.5, audited at the epsilon it implies at delta = 1e-6)."""
    from dptree.privacy.budget import zcdp_epsilon
    from dptree.rangetree.sums_release import plan_range_sums

    plan = plan_range_sums(lower=0, upper=5, epsilon=1.0, branching=3, weight_bounds=(0, 10))
    register(range_sums_spec("range_sums/laplace/add_remove", plan=plan, claimed=plan, pairs=SUM_PAIRS, epsilon=1.0,
                             description="count tree and sum tree of weights clamped to [0, 10]"))
    g = plan_range_sums(lower=0, upper=5, rho=0.5, noise="gaussian", branching=3, weight_bounds=(0, 10))
    register(range_sums_spec("range_sums/gaussian/add_remove", plan=g, claimed=g, pairs=SUM_PAIRS,
                             epsilon=zcdp_epsilon(0.5, 1e-6), delta=1e-6,
                             description="count tree and sum tree, rho = 0.5 (its (epsilon, 1e-6))"))
