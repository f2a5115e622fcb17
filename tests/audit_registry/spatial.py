"""Audit registration of the 2-D range tree (``range_tree_2d``, ``plan_range_tree_2d``): batched
releases of the quadtree's noised levels on a 4 x 4 grid, through the library's data step
(:func:`dptree.spatial.counting.grid_histogram`) and noise step (the plan's tree,
:meth:`dptree.rangetree.plan.TreePlan.measure`, drawn as a forest of copies)."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator, Sequence

import numpy as np

from audit_registry.range_trees import _claimed_level_parameters, range_tree_batch, range_tree_noised_counts
from dptree.testing.registry import MechanismSpec, NeighborPair, register
from dptree.testing.statistics import gaussian_llr, laplace_llr


def grid_cells(plan: Any, points: Sequence[tuple[Any, Any]]) -> np.ndarray:
    """The Morton-ordered cell histogram ``range_tree_2d`` counts from the points (x, y)."""
    from dptree.spatial.counting import as_table, grid_histogram

    arr = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    table, names = as_table(arr[:, 0], arr[:, 1], None)
    return grid_histogram(table, plan, names)


def _forest_plan(plan: Any) -> Any:
    """The quadtree's 1-D tree plan as a RangeTreePlan (same fields), for the batched sampler."""
    from dptree.rangetree.plan import TreePlan
    from dptree.rangetree.release import RangeTreePlan

    return RangeTreePlan(**{f.name: getattr(plan.tree, f.name) for f in dataclasses.fields(TreePlan) if f.init})


def spatial_spec(name: str, *, plan: Any, epsilon: float, delta: float, pairs: Sequence[tuple[str, Any, Any]],
                 neighbors: str | None = None, covers: tuple[str, ...] = ("range_tree_2d", "plan_range_tree_2d"),
                 description: str = "") -> MechanismSpec:
    """A spec auditing the 2-D release of ``plan``; ``pairs``: (label, points0, points1). The
    statistic is the log-likelihood ratio of the claimed per-level noise on the nodes that differ."""
    tree = _forest_plan(plan)

    def sample(points: Any, n: int, seed: int) -> np.ndarray:
        return range_tree_batch(tree, grid_cells(plan, points), n, seed)

    def worst_cases() -> Iterator[NeighborPair]:
        claimed = _claimed_level_parameters(tree)
        per_node = np.concatenate([np.full(size, claimed.get(j, np.nan))
                                   for j, (size, p) in enumerate(zip(tree.layout.level_sizes, tree.noise_parameters))
                                   if p is not None])
        for label, p0, p1 in pairs:
            c0 = range_tree_noised_counts(tree, grid_cells(plan, p0))
            c1 = range_tree_noised_counts(tree, grid_cells(plan, p1))
            llr = laplace_llr if plan.noise == "laplace" else gaussian_llr
            yield NeighborPair(label, p0, p1, statistic=llr(c0, c1, per_node))

    return MechanismSpec(name=name, covers=covers, neighbors=neighbors or plan.neighbors, epsilon=epsilon,
                         delta=delta, sample=sample, worst_cases=worst_cases, description=description,
                         extra={"plan": plan},
                         release=lambda points, seed: plan.release(grid_cells(plan, points), seed))


BASE = [(0, 0), (1, 2), (3, 3), (2, 1)]


def register_spatial() -> None:
    """The 2-D configurations every test run audits: a 4 x 4 grid (3 levels), each split."""
    from dptree.spatial.release import plan_range_tree_2d

    for levels in ("all_rectangles", "geometric", "uniform"):
        p = plan_range_tree_2d(lower=(0, 0), upper=(3, 3), epsilon=1.0, levels=levels)
        register(spatial_spec(
            f"range_tree_2d/laplace/add_remove/{levels}", plan=p, epsilon=1.0, delta=0.0,
            pairs=[("add one point (changes every level)", BASE, BASE + [(2, 2)]),
                   ("add a point clamped into the corner cell", BASE, BASE + [(-50, 99)])],
            description=f"pure eps = 1, {levels} split"))
    p = plan_range_tree_2d(lower=(0, 0), upper=(3, 3), epsilon=1.0, neighbors="replace", levels="geometric")
    register(spatial_spec(
        "range_tree_2d/laplace/replace", plan=p, epsilon=1.0, delta=0.0,
        pairs=[("replace: a corner point -> the opposite corner", BASE + [(0, 0)], BASE + [(3, 3)])],
        description="pure eps = 1, n public (root exact)"))
    register_privtree_2d()
    p = plan_range_tree_2d(lower=(0, 0), upper=(3, 3), epsilon=1.0, delta=1e-6, noise="gaussian")
    register(spatial_spec(
        "range_tree_2d/gaussian/add_remove", plan=p, epsilon=1.0, delta=1e-6,
        pairs=[("add one point (changes every level)", BASE, BASE + [(2, 2)])],
        description="(1, 1e-6)-DP discrete Gaussian"))


def privtree_plan(structure_share: float | str = 0.5, threshold: int = -1) -> Any:
    """The audited 2-D PrivTree: a 4 x 4 grid (16 Morton codes, 2 levels, 4-ary), theta = -1 and
    half of epsilon for the shape, so that splits are frequent."""
    from dptree.spatial.privtree import plan_privtree_2d

    return plan_privtree_2d(lower=(0, 0), upper=(3, 3), epsilon=1.0, structure_share=structure_share,
                            threshold=threshold)


def morton_codes(plan: Any, points: Sequence[tuple[Any, Any]]) -> np.ndarray:
    """The Morton code of every point's cell, through the library's data step (one per record)."""
    hist = grid_cells(plan, points)
    return np.repeat(np.arange(hist.size), hist)


def privtree_spec(name: str, plan: Any, *, pairs: Sequence[tuple[str, Any, Any]], measure: Any = None,
                  covers: tuple[str, ...] = ("range_tree_2d",), description: str = "") -> MechanismSpec:
    """A spec auditing the 2-D PrivTree of ``plan``: the sparse tree's batched sampler and statistics
    (:mod:`audit_registry.sparse_trees`) on the points' Morton codes; ``measure``: a planted bug."""
    import dptree
    from audit_registry.sparse_trees import batch, llr_statistic

    tree = plan.tree

    def worst_cases() -> Iterator[NeighborPair]:
        for label, p0, p1 in pairs:
            yield NeighborPair(label, p0, p1, statistic=llr_statistic(tree, morton_codes(plan, p0),
                                                                      morton_codes(plan, p1)))

    def release(points: Any, seed: int) -> Any:
        arr = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        return dptree.range_tree_2d(arr[:, 0], arr[:, 1], lower=(0, 0), upper=(3, 3), epsilon=1.0, method="privtree",
                                    structure_share=plan.structure_share, threshold=plan.threshold, rng=seed)

    return MechanismSpec(name=name, covers=covers, neighbors="add_remove", epsilon=1.0, delta=0.0,
                         sample=lambda points, n, seed: batch(tree, morton_codes(plan, points), n, seed, measure),
                         worst_cases=worst_cases, description=description, extra={"plan": plan}, release=release)


PRIVTREE_PAIRS = [("add a point to an empty quadrant", BASE[:2], BASE[:2] + [(3, 3)]),
                  ("add a point at a busy cell", BASE + [(1, 2)], BASE + [(1, 2), (1, 2)]),
                  ("empty data vs one point clamped into the corner cell", [], [(-50, 99)])]


def register_privtree_2d() -> None:
    """The 2-D PrivTree at epsilon = 1 on a 4 x 4 grid."""
    register(privtree_spec("range_tree_2d/privtree/add_remove", privtree_plan(), pairs=PRIVTREE_PAIRS,
                           description="pure eps = 1, 4 x 4 grid, 4-ary; shape at 1/2 (theta = -1), counts at the rest"))
