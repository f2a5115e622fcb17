"""Audit registrations of ``hierarchy_counts`` (seed 001): the Laplace and Gaussian baselines
(batched through the library's own measurement code) and the multiplicative-error algorithm."""

from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from dptree.testing.audit import AuditConfig, repeat
from dptree.testing.registry import MechanismSpec, NeighborPair, register
from dptree.testing.statistics import gaussian_llr, laplace_llr


def hierarchy_batch(
    hierarchy: Any,
    rows: Any,
    method: str,
    epsilon: float,
    delta: float,
    n: int,
    seed: int,
    weight: str | None = None,
) -> np.ndarray:
    """``n`` independent measurement vectors of ``hierarchy_counts`` from one integer ``seed``
    (``dptree.hierarchy.measurement_copies``; n = 1 reproduces ``hierarchy_counts(..., rng=seed)``)."""
    from dptree.hierarchy import measurement_copies

    return measurement_copies(
        rows, hierarchy, method=method, epsilon=epsilon, delta=delta, copies=n, rng=seed, weight=weight
    )


#: The weight column of the audit's weighted datasets (pandas DataFrames with the level columns).
HIERARCHY_WEIGHT = "weight"


def hierarchy_weighted_pair(hierarchy: Any) -> tuple[Any, Any]:
    """Weights [2^52, 2^52, 1] on one leaf vs the same plus one record. Summed
    in float64 (np.bincount(weights=...)), 2^53 + 1 rounds to 2^53 while 2^53 + 2 is exact, so
    every count on the leaf's path moves by 2 instead of 1 (twice the claimed epsilon)."""
    import pandas as pd

    leaf = hierarchy.leaf_paths()[0].split("/")
    lv = list(hierarchy.levels)

    def frame(ws: list[int]) -> Any:
        cols: dict[str, Any] = {c: [leaf[j]] * len(ws) for j, c in enumerate(lv)}
        cols[HIERARCHY_WEIGHT] = np.asarray(ws, dtype=np.int64)
        return pd.DataFrame(cols)

    return frame([2**52, 2**52, 1]), frame([2**52, 2**52, 1, 1])


def _centred(llr: Callable[..., Any], c0: np.ndarray, c1: np.ndarray, param: np.ndarray) -> Callable[..., Any]:
    """The log-likelihood-ratio statistic computed on y - c0 in exact int64, so counts near 2^53
    are not rounded by the float64 arithmetic of :func:`laplace_llr` / :func:`gaussian_llr`."""
    base = np.asarray(c0, dtype=np.int64)
    inner = llr(np.zeros(base.size), np.asarray(c1, dtype=np.int64) - base, param)
    return lambda y: inner(np.asarray(y, dtype=np.int64) - base)


def register_hierarchies() -> None:
    """Laplace and Gaussian baselines (Corollary 2.7) on a depth-3 tree; worst cases: one record
    at a leaf (changes d counts by one), and a weighted pair whose totals straddle 2^53 (the
    weights must be summed exactly)."""
    from dptree.hierarchy import Hierarchy, hierarchy_counts, leaf_counts, node_weights

    h = Hierarchy.from_paths([("a", "x"), ("a", "y"), ("b", "z")])
    base = [("a", "x"), ("a", "y"), ("b", "z"), ("b", "z")]
    heavy0, heavy1 = hierarchy_weighted_pair(h)
    for method, eps, dlt in (("laplace", 1.0, 0.0), ("gaussian", 1.0, 1e-6)):
        probe = hierarchy_counts(base, h, epsilon=eps, delta=dlt, method=method, rng=0)  # type: ignore[arg-type]
        noise = probe.privacy["noise"]
        param = float(noise["scale"] if method == "laplace" else noise["sigma2"])

        def sample(
            rows: Any, n: int, seed: int, method: str = method, eps: float = eps, dlt: float = dlt
        ) -> np.ndarray:
            weight = HIERARCHY_WEIGHT if hasattr(rows, "columns") else None
            return hierarchy_batch(h, rows, method, eps, dlt, n, seed, weight=weight)

        def worst_cases(method: str = method, param: float = param) -> Iterator[NeighborPair]:
            for label, r0, r1 in (
                ("add a record at a leaf", base, base + [("a", "x")]),
                ("remove the only record of a subtree", [("a", "y")], []),
                ("weights [2^52, 2^52, 1] at a leaf, add one record", heavy0, heavy1),
            ):
                weight = HIERARCHY_WEIGHT if hasattr(r0, "columns") else None
                c0 = np.concatenate(node_weights(leaf_counts(r0, h, weight=weight), h.parents))
                c1 = np.concatenate(node_weights(leaf_counts(r1, h, weight=weight), h.parents))
                per_node = np.full(h.n_nodes, param)
                llr = laplace_llr if method == "laplace" else gaussian_llr
                yield NeighborPair(label, r0, r1, statistic=_centred(llr, c0, c1, per_node))

        def release(rows: Any, seed: int, method: str = method, eps: float = eps, dlt: float = dlt) -> Any:
            weight = HIERARCHY_WEIGHT if hasattr(rows, "columns") else None
            return hierarchy_counts(rows, h, epsilon=eps, delta=dlt, method=method, weight=weight,  # type: ignore[arg-type]
                                    rng=seed)

        claimed_eps = eps
        register(
            MechanismSpec(
                name=f"hierarchy_counts/{method}/add_remove",
                covers=("hierarchy_counts", "plan_hierarchy_counts"),
                neighbors="add_remove",
                epsilon=claimed_eps,
                delta=dlt,
                sample=sample,
                worst_cases=worst_cases,
                description=f"{method} baseline on every node, depth {h.depth}",
                release=release,
                extra={"hierarchy": h, "method": method},
            )
        )


def register_multiplicative() -> None:
    """The multiplicative-error algorithm of seed 001 (Theorem 4.1) at (1, 1e-6): one release per
    output, audited on its noisy released counts (the estimates of every node)."""
    from dptree.hierarchy import Hierarchy, hierarchy_counts

    h = Hierarchy.from_paths([("a", "x"), ("a", "y"), ("b", "z")])
    base = [("a", "x")] * 30 + [("b", "z")] * 12

    def release(rows: Any, seed: int) -> Any:
        return hierarchy_counts(rows, h, epsilon=1.0, delta=1e-6, method="multiplicative", alpha=0.5,
                                tau_min=20.0, rng=seed)

    def run(rows: Any, seed: int) -> np.ndarray:
        return np.asarray(release(rows, seed).estimates, dtype=np.float64)

    register(
        MechanismSpec(
            name="hierarchy_counts/multiplicative/add_remove",
            covers=("hierarchy_counts", "plan_hierarchy_counts"),
            neighbors="add_remove",
            epsilon=1.0,
            delta=1e-6,
            sample=repeat(run),
            worst_cases=lambda: iter([
                NeighborPair("add a record at a leaf", base, base + [("a", "x")]),
                NeighborPair("remove the only record of a subtree", [("a", "y")], []),
            ]),
            description="Ghazi et al. Algorithms 1-4 with the Lemma 3.3 window, alpha = 0.5",
            release=release,
            extra={
                "fast": AuditConfig(n_select=200, n_eval=600),
                "slow": AuditConfig(n_select=600, n_eval=1_800),
            },
        )
    )


#: the node paths a found tree of the datasets below can hold: an output is the bitmask of those found
FOUND_CANDIDATES = (("a",), ("b",), ("c",), ("a", "x"), ("a", "y"), ("b", "z"), ("c", "w"))


def found_spec(name: str, plan: Any, pairs: list[tuple[str, Any, Any]], *, epsilon: float, delta: float,
               release: Callable[[Any, int], Any] | None = None) -> MechanismSpec:
    """The tree ``plan`` (a :class:`~dptree.hierarchy.api.FoundStructurePlan`) finds from a list of
    (level 1, level 2) paths, as a bitmask over :data:`FOUND_CANDIDATES`; claimed (epsilon, delta):
    the discovery's part of the budget."""
    from dptree.hierarchy.counting import coded_path_counts

    coded: dict[tuple[Any, ...], Any] = {}  # the exact counts of each dataset, read once

    def run(rows: Any, seed: int) -> int:
        key = tuple(rows)
        if key not in coded:
            coded[key] = coded_path_counts(rows, list(plan.levels))
        found, _, _ = plan.discover(coded[key], seed)
        return sum(1 << FOUND_CANDIDATES.index(p) for level in found.paths[1:] for p in level)

    return MechanismSpec(
        name=name, covers=("hierarchy_counts",), neighbors="add_remove", epsilon=epsilon, delta=delta,
        sample=repeat(run), worst_cases=lambda: iter([NeighborPair(*p) for p in pairs]),
        description="a hierarchy found from the data: the nodes found, level by level", release=release,
        extra={"plan": plan, "fast": AuditConfig(n_select=2_000, n_eval=6_000),
               "slow": AuditConfig(n_select=4_000, n_eval=12_000)})


#: a small dataset of two levels, and its neighbours (one record added)
FOUND_BASE = [("a", "x")] * 2 + [("a", "y")] * 3 + [("b", "z")]
FOUND_PAIRS = [
    ("add a record to a leaf of 2 records", FOUND_BASE, FOUND_BASE + [("a", "x")]),
    ("add a record on a new branch", FOUND_BASE, FOUND_BASE + [("c", "w")]),
    ("remove the only record of a branch", FOUND_BASE, FOUND_BASE[:-1]),
]


def register_found_structure() -> None:
    """``hierarchy_counts(rows, "private")`` at (2, 0.2), half finding the tree: the discovery's
    output (the tree, its part (1, 0.2) over two levels: Laplace counts need no delta) audited; the whole release for the
    boundary test."""
    from dptree.hierarchy.api import FoundStructurePlan, hierarchy_counts
    from dptree.hierarchy.discovery import plan_found_structure

    plan = plan_found_structure(["l1", "l2"], epsilon=2.0, delta=0.2, plan_type=FoundStructurePlan)

    def release(rows: Any, seed: int) -> Any:
        return hierarchy_counts(rows, "private", levels=["l1", "l2"], epsilon=2.0, delta=0.2, rng=seed)

    register(found_spec("hierarchy_counts/found_structure", plan, FOUND_PAIRS, epsilon=1.0, delta=0.2,
                        release=release))
