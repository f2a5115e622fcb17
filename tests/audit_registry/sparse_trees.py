"""Audit registration of the sparse range tree (``sparse_range_tree``): batched releases on a tiny
key domain, every node of the full tree in a fixed-length output (unmeasured nodes as a sentinel),
and the worst cases of the expansion rule."""

from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from dptree import noise as _noise
from dptree.testing.registry import MechanismSpec, NeighborPair, register

#: the value of a node that was not measured in the fixed-length output
UNMEASURED = -(10**6)

Expand = Callable[..., np.ndarray]


def sparse_plan(epsilon: float = 1.0, threshold: int = 1) -> Any:
    """The audited tree: keys 0..7 (3 levels, binary), only the root expanded unconditionally,
    and a low threshold so that expansions are frequent."""
    from dptree.sparsetree.keys import key_domain
    from dptree.sparsetree.plan import plan_sparse_tree

    return plan_sparse_tree(key_domain(0, 7, "i"), epsilon=epsilon, branching=2, dense_depth=1, threshold=threshold)


def sorted_offsets(plan: Any, values: Any) -> np.ndarray:
    return np.sort(plan.domain.offsets(np.asarray(values, dtype=np.int64)))


def batch(plan: Any, values: Any, n: int, seed: int, measure: Callable[..., Any] | None = None) -> np.ndarray:
    """``n`` independent releases in one call of the library's mechanism (copy i under root i, its
    keys shifted by i * 2^bits); rows: every node of levels 1..L, noisy count or UNMEASURED."""
    from dptree.sparsetree.mechanism import measure_levels

    run = measure or measure_levels
    lay = plan.layout
    keys = sorted_offsets(plan, values)
    shifted = (np.arange(n, dtype=np.uint64)[:, None] << np.uint64(lay.bits)) + keys[None, :]
    levels = run(shifted.ravel(), lay, plan.scales, plan.thresholds, plan.dense_depth,
                 _noise.make_source(seed), roots=n)
    cols = []
    for d, lv in enumerate(levels, start=1):
        width = 1 << (lay.bits - lay.shifts[d])
        out = np.full((n, width), UNMEASURED, dtype=np.int64)
        copy = (lv.index >> np.uint64(lay.bits - lay.shifts[d])).astype(np.int64)
        node = (lv.index & np.uint64(width - 1)).astype(np.int64)
        out[copy, node] = lv.noisy
        cols.append(out)
    return np.concatenate(cols, axis=1)


def true_counts(plan: Any, values: Any) -> np.ndarray:
    """The true count of every node of levels 1..L (the order of :func:`batch`'s columns)."""
    lay = plan.layout
    keys = sorted_offsets(plan, values).astype(np.int64)
    return np.concatenate([np.bincount(keys >> lay.shifts[d], minlength=1 << (lay.bits - lay.shifts[d]))
                           for d in range(1, lay.depth + 1)])


def llr_statistic(plan: Any, v0: Any, v1: Any) -> Callable[[np.ndarray], np.ndarray]:
    """Log-likelihood ratio of the claimed noise on the measured nodes, plus a large weight on
    measured nodes whose true counts differ (where a leak through the measured set would show)."""
    c0, c1 = true_counts(plan, v0), true_counts(plan, v1)
    lam = float(plan.scales[0])
    differs = c0 != c1

    def stat(y: np.ndarray) -> np.ndarray:
        measured = y != UNMEASURED
        llr = np.where(measured, (np.abs(y - c0) - np.abs(y - c1)) / lam, 0.0).sum(axis=1)
        return llr + 100.0 * (measured & differs[None, :]).sum(axis=1)

    return stat


PAIRS = [
    ("add a record to an empty subtree", [1, 1, 2, 2], [1, 1, 2, 2, 7]),
    ("add a record at a busy leaf", [1, 2, 2, 5, 5, 6], [1, 2, 2, 5, 5, 6, 2]),
    ("empty data vs one record at the lowest key", [], [0]),
]


def sparse_spec(name: str, plan: Any, *, epsilon: float, measure: Callable[..., Any] | None = None,
                description: str = "") -> MechanismSpec:
    """A spec auditing the sparse tree of ``plan`` (``measure``: the mechanism, for planted bugs)."""
    import dptree

    def worst_cases() -> Iterator[NeighborPair]:
        for label, v0, v1 in PAIRS:
            yield NeighborPair(label, v0, v1, statistic=llr_statistic(plan, v0, v1))

    def release(values: Any, seed: int) -> Any:
        return dptree.sparse_range_tree(np.asarray(values, dtype=np.int64), lower=0, upper=7, epsilon=plan.epsilon,
                                        branching=2, dense_depth=1, threshold=plan.thresholds[0], rng=seed)

    return MechanismSpec(
        name=name, covers=("sparse_range_tree",), neighbors="add_remove", epsilon=epsilon, delta=0.0,
        sample=lambda values, n, seed: batch(plan, values, n, seed, measure),
        worst_cases=worst_cases, description=description, extra={"plan": plan}, release=release,
    )


def register_sparse_trees() -> None:
    """The sparse range tree at epsilon = 1 (three levels at 1/3 each, threshold 1)."""
    plan = sparse_plan()
    register(sparse_spec("sparse_range_tree/laplace/add_remove", plan, epsilon=1.0,
                         description="pure eps = 1, keys 0..7, binary, expansion at noisy count >= 1"))
