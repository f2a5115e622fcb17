"""The sparse tree's mechanism: layout, counting, the measured sets, and its privacy by brute force.

The brute force enumerates, on a tiny domain, every output (measured sets and noisy counts, the
noise restricted to a window) of every dataset of up to two records and of its add/remove
neighbours, and computes the exact probability of each output from the discrete Laplace law and
the library's own expansion rule: the privacy loss never exceeds the stated epsilon. The same
enumeration with an expansion rule that reads true counts finds outputs possible under one
neighbour only (infinite loss)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Callable

import numpy as np
import pytest

from dptree import noise as _noise
from dptree.sparsetree.keys import key_domain
from dptree.sparsetree.mechanism import (
    Level,
    SparseLayout,
    children,
    default_threshold,
    expanded,
    measure_levels,
    node_counts,
)
from dptree.sparsetree.plan import plan_sparse_tree


def test_layout_shifts_and_fanouts() -> None:
    lay = SparseLayout(64, 16)
    assert lay.depth == 16 and lay.shifts[:3] == (64, 60, 56) and lay.shifts[-1] == 0
    odd = SparseLayout(10, 8)  # 10 bits in steps of 3: the root takes the remainder bit
    assert odd.depth == 4 and odd.shifts == (10, 9, 6, 3, 0)
    assert [odd.fanout(d) for d in range(4)] == [2, 8, 8, 8]


@pytest.mark.parametrize("shift", [0, 3, 61, 63])
def test_node_counts_match_brute_force_including_the_last_node_of_2_64(shift: int) -> None:
    rng = np.random.default_rng(shift)
    top = (1 << (64 - shift)) - 1
    keys = np.sort(np.concatenate([rng.integers(0, 2**63, 300).astype(np.uint64) * np.uint64(2),
                                   np.array([2**64 - 1, 2**64 - 1, 0], dtype=np.uint64)]))
    nodes = np.unique(np.concatenate([(keys >> np.uint64(shift))[::7], np.array([0, top], dtype=np.uint64),
                                      rng.integers(0, top, 20, dtype=np.uint64, endpoint=True)]))
    got = node_counts(keys, nodes, shift)
    want = [int(np.sum((keys >> np.uint64(shift)) == v)) for v in nodes]
    assert got.tolist() == want


def test_measured_sets_are_all_children_of_expanded_nodes() -> None:
    lay = SparseLayout(12, 4)
    keys = np.sort(np.random.default_rng(1).integers(0, 300, 2000).astype(np.uint64))
    levels = measure_levels(keys, lay, [Fraction(2)] * lay.depth, [10] * lay.depth, 2, _noise.make_source(3))
    parents = np.zeros(1, dtype=np.uint64)
    for d, lv in enumerate(levels, start=1):
        assert np.array_equal(lv.index, children(parents, lay.fanout(d - 1)))  # empty children included
        parents = expanded(lv, d, lay, 2, 10)
    assert levels[0].index.size == 4 and levels[1].index.size == 16  # dense top: every node
    assert levels[-1].index.size < 1 << 12  # sparse below: only near the data
    assert sum(lv.noisy.size for lv in levels) == sum(lv.index.size for lv in levels)


def test_default_threshold_makes_noise_expansion_subcritical() -> None:
    for b in (2, 16, 256):
        lam = Fraction(16)
        theta = default_threshold(lam, b)
        p = math.exp(-theta / float(lam)) / (1 + math.exp(-1 / float(lam)))  # P(DLap >= theta)
        assert b * p <= 1 / 7


def test_statement_accounts_every_level() -> None:
    plan = plan_sparse_tree(key_domain(None, None, "i"), epsilon=1.0, branching=16, max_contributions=2)
    st = plan.statement
    assert st["neighbors"] == "add_remove" and st["max_contributions"] == 2
    assert len(st["levels"]) == 16 and st["budget_spent"]["epsilon"] <= 1.0
    assert math.isclose(sum(lv["epsilon"] for lv in st["levels"]), st["budget_spent"]["epsilon"])
    assert all(lv["laplace_scale"] >= 2 * 16 for lv in st["levels"])  # k L / epsilon


# --------------------------------------------------------------------------- brute-force privacy

Rule = Callable[[Level, int, np.ndarray], np.ndarray]


def _noisy_rule(plan) -> Rule:
    return lambda lv, d, true: expanded(lv, d, plan.layout, plan.dense_depth, plan.thresholds[d - 1])


def _true_count_rule(plan) -> Rule:  # the planted bug
    def rule(lv: Level, d: int, true: np.ndarray) -> np.ndarray:
        if d >= plan.layout.depth:
            return lv.index[:0]
        return lv.index if d < plan.dense_depth else lv.index[true >= plan.thresholds[d - 1]]
    return rule


def _log_pmf(z: np.ndarray, lam: float) -> np.ndarray:
    return -np.abs(z) / lam + math.log(math.tanh(1 / (2 * lam)))


def _outputs(plan, window: range) -> list[list[Level]]:
    """Every output whose noisy counts lie in ``window``, for every way the expansions can go."""
    lay = plan.layout
    found: list[list[Level]] = []

    def grow(prefix: list[Level], parents: np.ndarray, d: int) -> None:
        if d > lay.depth:
            found.append(prefix)
            return
        idx = children(parents, lay.fanout(d - 1))
        for ys in itertools.product(window, repeat=idx.size):
            lv = Level(idx, np.array(ys, dtype=np.int64))
            grow(prefix + [lv], expanded(lv, d, lay, plan.dense_depth, plan.thresholds[d - 1]), d + 1)
    grow([], np.zeros(1, dtype=np.uint64), 1)
    return found


def _log_prob(plan, out: list[Level], data: list[int], rule: Rule) -> float:
    """log P[M(data) = out] restricted to the window (exact discrete Laplace), -inf if impossible."""
    keys = np.sort(np.array(data, dtype=np.uint64))
    parents = np.zeros(1, dtype=np.uint64)
    total = 0.0
    for d, lv in enumerate(out, start=1):
        if not np.array_equal(lv.index, children(parents, plan.layout.fanout(d - 1))):
            return -math.inf
        c = node_counts(keys, lv.index, plan.layout.shifts[d])
        total += float(_log_pmf(lv.noisy - c, float(plan.scales[d - 1])).sum())
        parents = rule(lv, d, c)
    return total


def _max_loss(rule_of: Callable[..., Rule]) -> float:
    plan = plan_sparse_tree(key_domain(0, 3, "i"), epsilon=1.0, branching=2, dense_depth=1, threshold=1)
    rule = rule_of(plan)
    outs = _outputs(plan, range(-1, 2))
    datasets = [c for r in range(4) for c in itertools.combinations_with_replacement(range(4), r)]
    logp = {data: np.array([_log_prob(plan, out, list(data), rule) for out in outs]) for data in datasets}
    worst = 0.0
    for data in datasets:
        if len(data) == 3:
            continue
        for extra in range(4):
            a, b = logp[data], logp[tuple(sorted(data + (extra,)))]
            both = ~(np.isneginf(a) & np.isneginf(b))
            with np.errstate(invalid="ignore"):
                worst = max(worst, float(np.max(np.abs(a[both] - b[both]))))
    return worst


def test_brute_force_privacy_loss_is_at_most_the_stated_epsilon() -> None:
    plan = plan_sparse_tree(key_domain(0, 3, "i"), epsilon=1.0, branching=2, dense_depth=1, threshold=1)
    loss = _max_loss(_noisy_rule)
    assert loss <= plan.statement["budget_spent"]["epsilon"] + 1e-9
    assert loss > 0.9 * plan.statement["budget_spent"]["epsilon"]  # tight: one record moves one node per level


def test_brute_force_catches_expansion_on_true_counts() -> None:
    assert _max_loss(_true_count_rule) == math.inf
