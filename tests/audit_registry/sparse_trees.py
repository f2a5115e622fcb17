"""Audit registration of the sparse range tree (``sparse_range_tree``): batched releases on a tiny
key domain, every node of the full tree in a fixed-length output (unmeasured nodes as a sentinel),
and the worst cases of the expansion rule."""

from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from dptree.testing.registry import MechanismSpec, NeighborPair, register

#: the value of a node that was not measured in the fixed-length output
UNMEASURED = -(10**6)

Expand = Callable[..., np.ndarray]


def sparse_plan(method: str = "levels", epsilon: float = 1.0, upper: int = 7, threshold: int | None = None,
                structure_share: float = 0.5) -> Any:
    """The audited tree: keys 0..7 (3 levels, binary), only the root expanded unconditionally;
    ``"levels"`` with threshold 1 and ``"privtree"`` with theta = -1 and half of epsilon for the
    shape, so that expansions are frequent."""
    from dptree.sparsetree.keys import key_domain
    from dptree.sparsetree.plan import plan_sparse_tree

    if threshold is None:
        threshold = 1 if method == "levels" else -1
    return plan_sparse_tree(key_domain(0, upper, "i"), epsilon=epsilon, branching=2, dense_depth=1, method=method,
                            threshold=threshold, structure_share=structure_share)


def sorted_offsets(plan: Any, values: Any) -> np.ndarray:
    return np.sort(plan.domain.offsets(np.asarray(values, dtype=np.int64)))


def batch(plan: Any, values: Any, n: int, seed: int, measure: Callable[..., Any] | None = None) -> np.ndarray:
    """``n`` independent releases in one call of the library's mechanism (``plan.measure``; copy i
    under root i, its keys shifted by i * 2^bits); rows: every node of levels 1..L, noisy count or
    UNMEASURED. ``measure(plan, keys, seed, roots)``: a replacement mechanism (planted bugs)."""
    lay = plan.layout
    keys = sorted_offsets(plan, values)
    shifted = (np.arange(n, dtype=np.uint64)[:, None] << np.uint64(lay.bits)) + keys[None, :]
    if measure is None:
        levels, _ = plan.measure(shifted.ravel(), seed, roots=n)
    else:
        levels = measure(plan, shifted.ravel(), seed, n)
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
    differs = c0 != c1
    lay = plan.layout
    level_of = np.concatenate([np.full(1 << (lay.bits - lay.shifts[d]), d) for d in range(1, lay.depth + 1)])

    def stat(y: np.ndarray) -> np.ndarray:
        measured = y != UNMEASURED
        h = np.max(np.where(measured, level_of[None, :], 0), axis=1)  # each release's number of levels
        lam = np.array([float(plan.count_scale(int(v))) for v in range(lay.depth + 1)])[h][:, None]
        llr = np.where(measured, (np.abs(y - c0) - np.abs(y - c1)) / lam, 0.0).sum(axis=1)
        return llr + 100.0 * (measured & differs[None, :]).sum(axis=1)

    return stat


PAIRS = [
    ("add a record to an empty subtree", [1, 1, 2, 2], [1, 1, 2, 2, 7]),
    ("add a record at a busy leaf", [1, 2, 2, 5, 5, 6], [1, 2, 2, 5, 5, 6, 2]),
    ("empty data vs one record at the lowest key", [], [0]),
]


def sparse_spec(name: str, plan: Any, *, epsilon: float, measure: Callable[..., Any] | None = None,
                description: str = "", pairs: list[tuple[str, Any, Any]] = PAIRS) -> MechanismSpec:
    """A spec auditing the sparse tree of ``plan`` (``measure``: the mechanism, for planted bugs)."""
    import dptree

    upper = plan.domain.hi - plan.domain.lo

    def worst_cases() -> Iterator[NeighborPair]:
        for label, v0, v1 in pairs:
            yield NeighborPair(label, v0, v1, statistic=llr_statistic(plan, v0, v1))

    def release(values: Any, seed: int) -> Any:
        return dptree.sparse_range_tree(np.asarray(values, dtype=np.int64), lower=0, upper=upper, epsilon=plan.epsilon,
                                        branching=2, dense_depth=1, threshold=plan.threshold, method=plan.method,
                                        structure_share=plan.structure_share or 0.5, rng=seed)

    return MechanismSpec(
        name=name, covers=("sparse_range_tree",), neighbors="add_remove", epsilon=epsilon, delta=0.0,
        sample=lambda values, n, seed: batch(plan, values, n, seed, measure),
        worst_cases=worst_cases, description=description, extra={"sparse_plan": plan}, release=release,
    )


def register_sparse_trees() -> None:
    """The sparse range tree at epsilon = 1, both methods."""
    register(sparse_spec("sparse_range_tree/privtree/add_remove", sparse_plan("privtree"), epsilon=1.0,
                         description="pure eps = 1, keys 0..7, binary; shape at eps 1/2 (theta = -1), counts at 1/2"))
    register(sparse_spec("sparse_range_tree/levels/add_remove", sparse_plan("levels"), epsilon=1.0,
                         description="pure eps = 1, keys 0..7, binary, three levels at 1/3, expansion at noisy count >= 1"))
