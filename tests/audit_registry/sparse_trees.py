"""Audit registration of the sparse range tree (``sparse_range_tree``): batched releases on a tiny
key domain, the shape and the counted ranges in a fixed-length output (ranges not counted as a
sentinel), and the worst cases of the expansion rule."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any, Callable, Iterator

import numpy as np

from dptree.testing.registry import MechanismSpec, NeighborPair, register

#: the value of a node that was not measured in the fixed-length output
UNMEASURED = -(10**6)

Expand = Callable[..., np.ndarray]


#: ``structure_share="auto"`` at audit size: the total at epsilon / 4, then half of the remaining
#: 3/4 for the shape up to four records (epsilon' T / k < 3.4) and a quarter from five
AUDIT_TOTAL_SCALE, AUDIT_SHARES = Fraction(4), ((3.4, 0.5), (math.inf, 0.25))


def sparse_plan(method: str = "levels", epsilon: float = 1.0, upper: int = 7, threshold: int | None = None,
                structure_share: float | str = 0.5) -> Any:
    """The audited tree: keys 0..7 (3 levels, binary), only the root expanded unconditionally;
    ``"levels"`` with threshold 1 and ``"privtree"`` with theta = -1 and half of epsilon for the
    shape, so that expansions are frequent; ``structure_share="auto"``: the rule at audit size
    (:data:`AUDIT_SHARES`), whose step lies between the two datasets of a worst-case pair."""
    from dptree.data.domain import key_domain
    from dptree.sparsetree.plan import plan_sparse_tree, statement_of

    if threshold is None:
        threshold = 1 if method == "levels" else -1
    plan = plan_sparse_tree(key_domain(0, upper, "i"), epsilon=epsilon, branching=2, dense_depth=1, method=method,
                            threshold=threshold, structure_share=structure_share)
    if structure_share == "auto":
        plan = dataclasses.replace(plan, total_scale=AUDIT_TOTAL_SCALE, auto_shares=AUDIT_SHARES)
        plan.statement = statement_of(plan)
    return plan


def sorted_offsets(plan: Any, values: Any) -> np.ndarray:
    return np.sort(plan.domain.read_positions(np.asarray(values, dtype=np.int64)))


def batch(plan: Any, values: Any, n: int, seed: int, measure: Callable[..., Any] | None = None) -> np.ndarray:
    """``n`` independent releases in one call of the library's mechanism (``plan.measure``; copy i
    under root i, its keys shifted by i * 2^bits; ``"auto"``: each copy at the share of its own
    noisy total, :meth:`~dptree.sparsetree.plan.SparsePlan.measure_by_share`). Row (a function of the release): per node of
    levels 1..L whether the shape split it; per depth of the count tree and key, the noisy count of
    the counted range starting there (UNMEASURED if none) and that range's last key; the count
    tree's height, preceded by the noisy total (``"auto"``; else 0). On domains with more than 1024 (depth, key) pairs the depths are folded into
    one (the deepest range starting at a key is kept): still a function of the release, so the
    audit stays sound, with less power.
    ``measure(plan, keys, seed, roots)``: a replacement mechanism (planted bugs)."""
    lay = plan.layout
    K = 1 << lay.bits
    keys = sorted_offsets(plan, values)
    shifted = (np.arange(n, dtype=np.uint64)[:, None] << np.uint64(lay.bits)) + keys[None, :]
    m = plan.measure(shifted.ravel(), seed, roots=n) if measure is None else measure(plan, shifted.ravel(), seed, n)
    split = []
    for d in range(1, lay.depth + 1):
        width = 1 << (lay.bits - lay.shifts[d])
        out = np.zeros((n, width), dtype=np.int64)
        if d < lay.depth:
            par = m.shape[d] >> np.uint64(lay.shifts[d] - lay.shifts[d + 1])
            out[(par >> np.uint64(lay.bits - lay.shifts[d])).astype(np.int64),
                (par & np.uint64(width - 1)).astype(np.int64)] = 1
        split.append(out)
    J = _depths(plan)
    count = np.full((n, J * K), UNMEASURED, dtype=np.int64)
    last = np.full((n, J * K), -1, dtype=np.int64)
    for j, nd in enumerate(m.nodes):  # the ranges of one copy and depth are disjoint: one per key
        copy = (nd.start >> np.uint64(lay.bits)).astype(np.int64)
        at = (nd.start & np.uint64(K - 1)).astype(np.int64) + min(j, J - 1) * K
        count[copy, at] = nd.noisy
        last[copy, at] = (nd.last & np.uint64(K - 1)).astype(np.int64)
    totals = m.totals if m.totals is not None else np.zeros(n, dtype=np.int64)
    return np.concatenate(split + [count, last, totals[:, None], m.heights[:, None]], axis=1)


def _depths(plan: Any) -> int:
    """How many count-tree depths :func:`batch` keeps apart (1: folded)."""
    L, K = plan.layout.depth, 1 << plan.layout.bits
    return L if L * K <= 1024 else 1


def llr_statistic(plan: Any, v0: Any, v1: Any) -> Callable[[np.ndarray], np.ndarray]:
    """Log-likelihood ratio of the claimed noise on the counted ranges of the row, plus a large
    weight on counted ranges and split nodes whose true counts differ (where a leak through the
    shape would show)."""
    lay = plan.layout
    K = 1 << lay.bits
    cum = [np.concatenate([[0], np.cumsum(np.bincount(sorted_offsets(plan, v).astype(np.int64), minlength=K))])
           for v in (v0, v1)]
    auto = plan.total_scale is not None
    shares = sorted({s for _, s in plan.auto_shares}) if auto else [plan.structure_share]
    lam = {s: np.array([float(plan.at_share(s).count_scale(h)) if auto else float(plan.count_scale(h))
                        for h in range(lay.depth + 1)]) for s in shares}
    n_split = sum(1 << (lay.bits - lay.shifts[d]) for d in range(1, lay.depth + 1))
    lo = np.concatenate([np.arange(1 << (lay.bits - lay.shifts[d])) << lay.shifts[d] for d in range(1, lay.depth + 1)])
    hi = np.concatenate([(np.arange(1 << (lay.bits - lay.shifts[d])) + 1) << lay.shifts[d]
                         for d in range(1, lay.depth + 1)])
    split_differs = (cum[0][hi] - cum[0][lo]) != (cum[1][hi] - cum[1][lo])  # nodes whose split can leak

    JK = _depths(plan) * K

    n0, n1 = len(v0), len(v1)

    def stat(y: np.ndarray) -> np.ndarray:
        count, last, h = y[:, n_split:n_split + JK], y[:, n_split + JK:n_split + 2 * JK], y[:, -1]
        measured = count != UNMEASURED
        start = np.tile(np.arange(K), JK // K)[None, :]
        end = np.where(measured, last, start) + 1
        c0, c1 = (c[end] - c[start] for c in cum)
        if auto:  # the counts' scale of the share the row's noisy total picked, and the total's own ratio
            total = y[:, -2]
            per_noise = float(plan.rest_epsilon) * total / plan.max_contributions
            scale = np.select([per_noise < bound for bound, _ in plan.auto_shares],
                              [lam[share][h] for _, share in plan.auto_shares])
            llr = np.where(measured, (np.abs(count - c0) - np.abs(count - c1)), 0.0).sum(axis=1) / scale
            llr = llr + (np.abs(total - n0) - np.abs(total - n1)) / float(plan.total_scale)
        else:
            llr = np.where(measured, (np.abs(count - c0) - np.abs(count - c1)), 0.0).sum(axis=1) / \
                lam[plan.structure_share][h]
        leaks = (measured & (c0 != c1)).sum(axis=1) + (y[:, :n_split] * split_differs[None, :]).sum(axis=1)
        return llr + 100.0 * leaks

    return stat


def magnitude_statistic(plan: Any, v0: Any) -> Callable[[np.ndarray], np.ndarray]:
    """The total distance of the counted ranges' noisy counts from ``v0``'s true counts: large
    where the counts' noise scale is large (a share that followed the data would show here)."""
    lay = plan.layout
    K = 1 << lay.bits
    cum = np.concatenate([[0], np.cumsum(np.bincount(sorted_offsets(plan, v0).astype(np.int64), minlength=K))])
    n_split = sum(1 << (lay.bits - lay.shifts[d]) for d in range(1, lay.depth + 1))
    JK = _depths(plan) * K

    def stat(y: np.ndarray) -> np.ndarray:
        count, last = y[:, n_split:n_split + JK], y[:, n_split + JK:n_split + 2 * JK]
        measured = count != UNMEASURED
        start = np.tile(np.arange(K), JK // K)[None, :]
        c0 = cum[np.where(measured, last, start) + 1] - cum[start]
        return np.where(measured, np.abs(count - c0), 0).sum(axis=1).astype(np.float64)

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

    upper = plan.domain.size - 1

    def worst_cases() -> Iterator[NeighborPair]:
        for label, v0, v1 in pairs:
            yield NeighborPair(label, v0, v1, statistic=llr_statistic(plan, v0, v1))
            if plan.total_scale is not None and plan.resolved(len(v0)).structure_share != \
                    plan.resolved(len(v1)).structure_share:  # the rule's step between them
                yield NeighborPair(label + ", noise magnitude", v0, v1, statistic=magnitude_statistic(plan, v0))

    def release(values: Any, seed: int) -> Any:
        return dptree.sparse_range_tree(np.asarray(values, dtype=np.int64), lower=0, upper=upper, epsilon=plan.epsilon,
                                        branching=2, dense_depth=1, threshold=plan.threshold, method=plan.method,
                                        structure_share="auto" if plan.total_scale is not None
                                        else plan.structure_share or 0.5, rng=seed)

    return MechanismSpec(
        name=name, covers=("sparse_range_tree", "plan_sparse_range_tree"), neighbors="add_remove", epsilon=epsilon, delta=0.0,
        sample=lambda values, n, seed: batch(plan, values, n, seed, measure),
        worst_cases=worst_cases, description=description, extra={"sparse_plan": plan}, release=release,
    )


def register_sparse_trees() -> None:
    """The sparse range tree at epsilon = 1, both methods."""
    register(sparse_spec("sparse_range_tree/privtree/add_remove", sparse_plan("privtree", structure_share="auto"),
                         epsilon=1.0, description="pure eps = 1, keys 0..7, binary; structure_share='auto' at audit "
                         "size: the total at 1/4, then the shape at 3/8 up to four records (theta = -1), else 3/16, "
                         "and the counts at the rest"))
    register(sparse_spec("sparse_range_tree/levels/add_remove", sparse_plan("levels"), epsilon=1.0,
                         description="pure eps = 1, keys 0..7, binary, three levels at 1/3, expansion at noisy count >= 1"))
