"""The sparse tree's mechanism: layout, counting, the measured sets, and its privacy by brute force.

The brute force enumerates, on a tiny domain, every output (measured sets and noisy counts, the
noise restricted to a window) of every dataset of up to two records and of its add/remove
neighbours, and computes the exact probability of each output from the discrete Laplace law and
the library's own expansion rule: the privacy loss never exceeds the stated epsilon. The same
enumeration with an expansion rule that reads true counts finds outputs possible under one
neighbour only (infinite loss)."""

from __future__ import annotations

import dataclasses
import itertools
import math
from fractions import Fraction
from typing import Callable

import numpy as np
import pytest

from dptree import noise as _noise
from dptree.data.domain import key_domain
from dptree.sparsetree.mechanism import (
    Level,
    SparseLayout,
    children,
    count_tree,
    default_threshold,
    expanded,
    measure_levels,
    node_counts,
    privtree_path_loss,
    range_counts,
    subcritical_threshold,
)
import dptree
from dptree.errors import InvalidParameterError
from dptree.sparsetree.plan import AUTO_SHARES, TOTAL_SHARE, plan_sparse_tree, statement_of


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


def test_statements_account_every_phase_and_level() -> None:
    dom = key_domain(None, None, "i")
    plan = plan_sparse_tree(dom, epsilon=1.0, branching=16, max_contributions=2, method="levels")
    st = plan.statement
    assert st["neighbors"] == "add_remove" and st["max_contributions"] == 2
    assert st["levels"]["count"] == 16 and st["budget_spent"]["epsilon"] <= 1.0
    assert math.isclose(16 * st["levels"]["epsilon_each"], st["budget_spent"]["epsilon"])
    assert st["levels"]["laplace_scale"] >= 2 * 16  # k L / epsilon
    pt = plan_sparse_tree(dom, epsilon=1.0, branching=16, max_contributions=2, structure_share=0.25)
    st = pt.statement
    assert st["method"] == "privtree" and st["budget_spent"]["epsilon"] <= 1.0
    assert st["structure"]["epsilon"] <= 0.25 and st["counts"]["epsilon"] <= 0.75
    assert math.isclose(st["structure"]["epsilon"] + st["counts"]["epsilon"], st["budget_spent"]["epsilon"])
    assert float(pt.structure_scale) >= 2 * 31 / 15 / 0.25  # k (2b - 1) / ((b - 1) eps_1)
    assert all(float(pt.count_scale(h)) >= 2 * h / 0.75 for h in range(1, 17))  # k h / eps_2


def test_auto_statement_bounds_every_share_the_total_can_pick() -> None:
    dom = key_domain(None, None, "i")
    plan = plan_sparse_tree(dom, epsilon=0.5, branching=16, max_contributions=2)  # structure_share="auto"
    st = plan.statement
    assert st["structure"]["share"] == "auto" and st["total"]["l1_sensitivity"] == 2
    assert st["total"]["epsilon"] <= 0.5 * TOTAL_SHARE and st["budget_spent"]["epsilon"] <= 0.5
    parts = st["structure"]["by_bound"]
    assert [p["share"] for p in parts.values()] == [share for _, share in AUTO_SHARES]
    for p in parts.values():
        assert st["total"]["epsilon"] + p["epsilon"] + p["counts_epsilon"] <= 0.5
        assert p["epsilon"] <= p["share"] * (0.5 - st["total"]["epsilon"]) + 1e-12
    # the noisy total picks the share: epsilon' T / k against the steps
    rest = float(plan.rest_epsilon)
    for bound, share in AUTO_SHARES[:-1]:
        below, above = plan.resolved(int(bound * 2 / rest) - 1), plan.resolved(int(bound * 2 / rest) + 1)
        assert below.structure_share == share and above.structure_share != share
        assert below.statement == above.statement == st  # the statement does not depend on the total
        assert float(above.count_scale(4)) < float(below.count_scale(4))  # a smaller share: finer counts



def test_auto_batched_copies_each_run_at_their_own_share() -> None:
    """The audit's batches: copies whose noisy totals fall on both sides of a step run at their
    own shares, and the merged count tree is a tree (depth 1 under each copy's root, every deeper
    range inside its parent)."""
    base = plan_sparse_tree(key_domain(0, 7, "i"), epsilon=4.0, branching=2, dense_depth=1, threshold=-1)
    plan = dataclasses.replace(base, total_scale=Fraction(1), auto_shares=((16.5, 0.5), (math.inf, 0.25)))
    sizes = [0, 9, 1, 12, 2, 10]
    keys = np.concatenate([np.full(c, 3, dtype=np.uint64) + np.uint64(i << 3) for i, c in enumerate(sizes)])
    m = plan.measure(keys, 4, roots=len(sizes))
    shares = plan.shares_of(m.totals)
    assert shares == [plan.resolved(int(t)).structure_share for t in m.totals]
    assert shares == [0.5, 0.25, 0.5, 0.25, 0.5, 0.25]  # eps' T < 16.5: T <= 5 (noise DLap(1))
    assert np.array_equal(m.nodes[0].parent, (m.nodes[0].start >> np.uint64(3)).astype(np.int64))
    for up, nd in zip(m.nodes, m.nodes[1:]):
        assert np.all(up.start[nd.parent] <= nd.start) and np.all(nd.last <= up.last[nd.parent])
    assert all(np.all(np.diff(nd.start.astype(np.int64)) > 0) for nd in m.nodes)


def test_auto_release_draws_the_total_first_and_keeps_it() -> None:
    rng = np.random.default_rng(3)
    small, large = rng.integers(0, 1000, 2000), rng.integers(0, 2**40, 300_000)
    r_small = dptree.sparse_range_tree(small, epsilon=1.0, rng=1)
    r_large = dptree.sparse_range_tree(large, epsilon=1.0, rng=1)
    assert r_small.plan.structure_share == 0.2 and r_large.plan.structure_share == 0.1
    assert abs(r_small.plan.noisy_total - 2000) < 2000 and r_small.privacy == r_large.privacy
    # the same draws as the plan at the picked share after one total draw
    src = _noise.make_source(1)
    total = int(r_large.plan.draw_totals(np.zeros(300_000, dtype=np.uint64), src)[0])
    assert total == r_large.plan.noisy_total


# --------------------------------------------------------------------------- brute-force privacy

Rule = Callable[[Level, int, np.ndarray], np.ndarray]


def _noisy_rule(plan) -> Rule:
    return lambda lv, d, true: expanded(lv, d, plan.layout, plan.dense_depth, plan.threshold)


def _true_count_rule(plan) -> Rule:  # the planted bug
    def rule(lv: Level, d: int, true: np.ndarray) -> np.ndarray:
        if d >= plan.layout.depth:
            return lv.index[:0]
        return lv.index if d < plan.dense_depth else lv.index[true >= plan.threshold]
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
            grow(prefix + [lv], expanded(lv, d, lay, plan.dense_depth, plan.threshold), d + 1)
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
        total += float(_log_pmf(lv.noisy - c, float(plan.count_scale(0))).sum())
        parents = rule(lv, d, c)
    return total


def _max_loss(rule_of: Callable[..., Rule]) -> float:
    plan = plan_sparse_tree(key_domain(0, 3, "i"), epsilon=1.0, branching=2, dense_depth=1, threshold=1,
                            method="levels")
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
    plan = plan_sparse_tree(key_domain(0, 3, "i"), epsilon=1.0, branching=2, dense_depth=1, threshold=1,
                            method="levels")
    loss = _max_loss(_noisy_rule)
    assert loss <= plan.statement["budget_spent"]["epsilon"] + 1e-9
    assert loss > 0.9 * plan.statement["budget_spent"]["epsilon"]  # tight: one record moves one node per level


def test_brute_force_catches_expansion_on_true_counts() -> None:
    assert _max_loss(_true_count_rule) == math.inf


# --------------------------------------------------------------------------- method="privtree"


@pytest.mark.parametrize("b, lam", [(2, 2.0), (2, 25.0), (16, 3.0), (16, 40.0), (256, 10.0)])
def test_privtree_bound_holds_for_the_discrete_laplace(b: int, lam: float) -> None:
    """PrivTree's Theorem 3.1 bound (2b - 1) / ((b - 1) lambda), for the exact discrete-Laplace
    split probabilities, over every count sequence along the record's path (up to 4000)."""
    for delta in (math.ceil(lam * math.log(b)), math.ceil(lam * math.log(4 * b))):
        loss = privtree_path_loss(lam, delta, 0, 16)
        assert loss <= (2 * b - 1) / ((b - 1) * lam)
        assert loss >= 1.9 / lam  # near the threshold one split and one stop cost about 1/lambda each
    assert privtree_path_loss(lam, 0, 0, 16) > 10 / lam  # no bias: the loss grows with the depth


def _privtree_law(plan, shape: list[np.ndarray], data: tuple, bug: bool, window: np.ndarray, refine: bool = True
                  ) -> tuple[float, list[np.ndarray]]:
    """The law of the output (shape, counts) under ``data``: log P[shape] from the split decisions'
    exact probabilities, and for every range of the shape's count tree (:func:`count_tree`) the log
    probabilities of its noisy count taking each value of ``window`` (independent given the shape,
    at the scale of the count tree's height)."""
    lay, p = plan.layout, math.exp(-1 / float(plan.structure_scale))
    keys = np.sort(np.array(data, dtype=np.uint64))
    ranges, heights = count_tree(lay, shape, refine=refine)
    lam = float(plan.count_scale(int(heights[0])))
    counts = [_log_pmf(window[None, :] - range_counts(keys, start, last)[:, None], lam)
              for start, last, _ in ranges]
    total = 0.0
    for d in range(1, lay.depth):
        idx = shape[d - 1]
        c = node_counts(keys, idx, lay.shifts[d])
        split = np.isin(idx, shape[d] >> np.uint64(lay.shifts[d] - lay.shifts[d + 1]))
        if bug:  # planted: the shape follows the true counts
            if not np.array_equal(split, c > 0):
                return -math.inf, counts
            continue
        biased = np.maximum(plan.threshold - plan.delta, c - (d - plan.dense_depth + 1) * plan.delta)
        t = plan.threshold - biased  # split iff Z > t
        p_split = np.where(t >= 0, p ** (t + 1) / (1 + p), 1 - p ** np.maximum(-t, 0) / (1 + p))
        total += float(np.log(np.where(split, p_split, 1 - p_split)).sum())
    return total, counts


def _worst_loss(law_a: tuple[float, list[np.ndarray]], law_b: tuple[float, list[np.ndarray]]) -> float:
    """max over the counts in the window of |log P_a - log P_b| for one shape: the counts are
    independent given the shape, so the extremes are the sums of the per-range extremes."""
    (sa, ca), (sb, cb) = law_a, law_b
    if np.isneginf(sa) and np.isneginf(sb):
        return 0.0
    if np.isneginf(sa) or np.isneginf(sb):
        return math.inf
    diff = [a - b for a, b in zip(ca, cb)]
    hi = sa - sb + sum(float(d.max(axis=1).sum()) for d in diff)
    lo = sa - sb + sum(float(d.min(axis=1).sum()) for d in diff)
    return max(hi, -lo)


def _shapes(lay, d: int, level: np.ndarray) -> list[list[np.ndarray]]:
    """Every shape below ``level`` (the nodes of level d): each subset of it split."""
    if d == lay.depth:
        return [[level]]
    out = []
    for r in range(level.size + 1):
        for split in itertools.combinations(level.tolist(), r):
            kids = children(np.array(split, dtype=np.uint64), lay.fanout(d))
            out += [[level] + rest for rest in _shapes(lay, d + 1, kids)]
    return out


@pytest.mark.parametrize("bug,refine", [(False, True), (False, False), (True, True)])
def test_privtree_brute_force_privacy_loss(bug: bool, refine: bool) -> None:
    """Every shape of an 8-key binary tree and every count in {0, 1} of its count tree (chains
    with remainders included; refined or not), for every dataset of up to two records and its
    neighbours: the loss is at most the stated epsilon (and infinite when the shape follows the
    true counts)."""
    plan = plan_sparse_tree(key_domain(0, 7, "i"), epsilon=1.0, branching=2, dense_depth=1, structure_share=0.5)
    lay = plan.layout
    shapes = _shapes(lay, 1, children(np.zeros(1, dtype=np.uint64), 2))
    trees = [count_tree(lay, shape, refine=refine)[0] for shape in shapes]
    if refine:  # some remainders are replaced by their nodes, or refined below
        assert any(len(t) != len(u) or any(a[0].size != b[0].size for a, b in zip(t, u))
                   for t, u in zip(trees, (count_tree(lay, shape, refine=False)[0] for shape in shapes)))
    else:
        assert any(((r[1] - r[0]) & (r[1] - r[0] + np.uint64(1))).any()  # a remainder of more than one node
                   for t in trees for r in t)
    window = np.arange(0, 2)
    datasets = [c for r in range(3) for c in itertools.combinations_with_replacement(range(8), r)]
    laws = {data: [_privtree_law(plan, shape, data, bug, window, refine) for shape in shapes] for data in datasets}
    worst = 0.0
    for data in datasets:
        for extra in range(8) if len(data) < 2 else ():
            bigger = tuple(sorted(data + (extra,)))
            worst = max([worst] + [_worst_loss(a, b) for a, b in zip(laws[data], laws[bigger])])
    assert lay.depth == 3
    if bug:
        assert worst == math.inf
    else:
        assert worst <= plan.statement["budget_spent"]["epsilon"] + 1e-9
        assert worst > 0.6 * plan.statement["budget_spent"]["epsilon"]


def test_auto_share_brute_force_privacy_loss() -> None:
    """``structure_share="auto"``: the noisy total T (exact discrete Laplace) picks the share, then
    PrivTree and the counts run at that share. On the 8-key binary tree with a rule whose step
    lies between one and two records (so neighbours straddle it), every T in a window, every shape,
    every count in {0, 1}, every dataset of up to two records and its neighbours: the loss of the
    whole output (T, shape, counts) is at most the stated epsilon. Picking the share from the true
    number of records instead (the planted bug) exceeds it."""
    base = plan_sparse_tree(key_domain(0, 7, "i"), epsilon=1.0, branching=2, dense_depth=1, structure_share="auto")
    plan = dataclasses.replace(base, total_scale=Fraction(4), auto_shares=((1.2, 0.5), (math.inf, 0.25)))
    stated = statement_of(plan)["budget_spent"]["epsilon"]
    assert stated <= 1.0
    lay = plan.layout
    shapes = _shapes(lay, 1, children(np.zeros(1, dtype=np.uint64), 2))
    window, totals = np.arange(0, 2), range(-3, 7)
    by_share = {share: plan.resolved(t) for t in totals for share in [plan.resolved(t).structure_share]}
    assert sorted(by_share) == [0.25, 0.5]  # the window of T reaches both shares
    datasets = [c for r in range(4) for c in itertools.combinations_with_replacement(range(8), r)]
    laws = {(data, share): [_privtree_law(p, shape, data, False, window) for shape in shapes]
            for data in datasets for share, p in by_share.items()}
    lam0 = float(plan.total_scale)
    worst = {False: 0.0, True: 0.0}
    for data, bug in itertools.product(datasets, (False, True)):
        for extra in range(8) if len(data) < 3 else ():
            bigger = tuple(sorted(data + (extra,)))
            for t in totals:
                share = plan.resolved(t).structure_share
                sa, sb = (plan.resolved(len(data)).structure_share, plan.resolved(len(bigger)).structure_share) \
                    if bug else (share, share)
                ta, tb = (float(_log_pmf(np.array(t - len(d)), lam0)) for d in (data, bigger))
                worst[bug] = max([worst[bug]] + [_worst_loss((a[0] + ta, a[1]), (b[0] + tb, b[1]))
                                       for a, b in zip(laws[data, sa], laws[bigger, sb])])
    assert 0.6 * stated < worst[False] <= stated + 1e-9
    assert worst[True] > stated


def _levels(*levels: list[int]) -> list[np.ndarray]:
    return [np.array(v, dtype=np.uint64) for v in levels]


def test_count_tree_is_trimmed_below_its_widest_depth() -> None:
    """A 16-key binary tree split everywhere down to level 3 and, below, only at the first node of
    level 3 (as a noisy split would): the count tree's widths are 2, 4, 8, 2, so its last depth
    (2 ranges, under the widest depth's 8) is not counted and H is 3, not 4; split everywhere,
    the deepest depth is the widest and is kept (H = 4, every key counted)."""
    lay = plan_sparse_tree(key_domain(0, 15, "i"), epsilon=1.0, branching=2).layout
    assert lay.depth == 4
    ranges, heights = count_tree(lay, _levels([0, 1], [0, 1, 2, 3], list(range(8)), [0, 1]))
    assert [r[0].size for r in ranges] == [2, 4, 8] and heights.tolist() == [3]
    assert ranges[2][0].tolist() == list(range(0, 16, 2)) and ranges[2][1].tolist() == list(range(1, 16, 2))
    ranges, heights = count_tree(lay, _levels([0, 1], [0, 1, 2, 3], list(range(8)), list(range(16))))
    assert [r[0].size for r in ranges] == [2, 4, 8, 16] and heights.tolist() == [4]
    assert ranges[3][0].tolist() == ranges[3][1].tolist() == list(range(16))


def test_count_tree_is_trimmed_per_copy() -> None:
    """Two independent copies (the audit's batching): each copy keeps down to its own widest depth."""
    lay = plan_sparse_tree(key_domain(0, 15, "i"), epsilon=1.0, branching=2).layout
    deep = _levels([0, 1], [0, 1, 2, 3], list(range(8)), list(range(16)))
    short = _levels([0, 1], [0, 1, 2, 3], list(range(8)), [0, 1])
    both = [np.concatenate([a, b + np.uint64(2 ** (d + 1))]) for d, (a, b) in enumerate(zip(deep, short))]
    ranges, heights = count_tree(lay, both, roots=2)
    assert heights.tolist() == [4, 3]
    assert ranges[3][0].tolist() == list(range(16))  # depth 4: the first copy's keys only


def _random_shape(lay: SparseLayout, rng: np.random.Generator, p: float) -> list[np.ndarray]:
    """A shape grown by splitting each node of levels 1 .. L-1 with probability p (any shape is a
    possible release, so the count tree must be right for every one)."""
    out, parents = [], np.zeros(1, dtype=np.uint64)
    for d in range(1, lay.depth + 1):
        idx = children(parents, lay.fanout(d - 1))
        out.append(idx)
        parents = idx[rng.random(idx.size) < p] if d < lay.depth else idx[:0]
    return out


@pytest.mark.parametrize("branching", [2, 4])
def test_count_tree_ranges_partition_their_parents(branching: int) -> None:
    """On random shapes (trimmed or not, chains or not): the counted children of every counted range
    are disjoint and cover it exactly, and depth 1 covers the domain, so that each range's parent
    (the LS tree) is the range that contains it. A trimmed count tree whose kept ranges were
    renumbered as if nothing had been cut fails this (parents pointing at unrelated ranges)."""
    lay = plan_sparse_tree(key_domain(0, 2 ** 12 - 1, "i"), epsilon=1.0, branching=branching).layout
    rng = np.random.default_rng(5)
    for trial in range(150):
        ranges, heights = count_tree(lay, _random_shape(lay, rng, float(rng.uniform(0.1, 0.7))))
        assert heights.tolist() == [len(ranges)]
        s0, l0, p0 = ranges[0]
        assert s0[0] == 0 and l0[-1] == 2 ** 12 - 1 and (p0 == 0).all()
        assert (s0[1:] == l0[:-1] + np.uint64(1)).all()
        for d in range(1, len(ranges)):
            (ps, pl, _), (s, l, par) = ranges[d - 1], ranges[d]
            assert (ps[par] <= s).all() and (l <= pl[par]).all(), (trial, d)
            for j in np.unique(par):  # the children of one range tile it
                cs, cl = s[par == j], l[par == j]
                assert cs[0] == ps[j] and cl[-1] == pl[j] and (cs[1:] == cl[:-1] + np.uint64(1)).all(), (trial, d)


def test_chain_remainders_are_refined_down_to_the_height() -> None:
    """A 256-key 4-ary tree whose data sits under the chain root > node 2 (keys 128-191) > node 10
    (keys 160-175), split down to single keys: the count tree is w = [160, 175] with the remainders
    [0, 159] and [176, 255] at depth 1, w's children at 2 and its keys at 3 (H = 3). The remainders
    are unions of unsplit nodes of two levels: their pieces per level go to depth 2 and the nodes
    of pieces of two or more nodes to depth 3, so the estimate no longer spreads the left
    remainder's mass uniformly over 160 keys; H stays 3 (refine=False: the lumped remainders).
    With H = 2 the nodes go right under the remainders; at the last depth they replace them."""
    lay = plan_sparse_tree(key_domain(0, 255, "i"), epsilon=1.0, branching=4).layout
    assert lay.shifts == (8, 6, 4, 2, 0)
    shape = _levels([0, 1, 2, 3], [8, 9, 10, 11], [40, 41, 42, 43], list(range(160, 176)))
    lumped, h0 = count_tree(lay, shape, refine=False)
    ranges, heights = count_tree(lay, shape)
    assert heights.tolist() == h0.tolist() == [3]
    span = lambda r: list(zip(r[0].tolist(), r[1].tolist()))  # noqa: E731
    assert span(lumped[0]) == span(ranges[0]) == [(0, 159), (160, 175), (176, 255)]
    assert span(lumped[1]) == [(160 + 4 * i, 163 + 4 * i) for i in range(4)]
    assert span(ranges[1]) == [(0, 127), (128, 159)] + span(lumped[1]) + [(176, 191), (192, 255)]
    assert ranges[1][2].tolist() == [0, 0, 1, 1, 1, 1, 2, 2]
    assert span(ranges[2]) == [(0, 63), (64, 127), (128, 143), (144, 159)] + [(k, k) for k in range(160, 176)]
    assert ranges[2][2].tolist() == [0, 0, 1, 1] + [2 + i // 4 for i in range(16)]
    # never below the height: with w's children the last depth (H = 2), the remainders' nodes are
    # counted at depth 2, right under them (no pieces: they would be the last depth)
    r2, h2 = count_tree(lay, _levels([0, 1, 2, 3], [8, 9, 10, 11], [40, 41, 42, 43], []))
    assert h2.tolist() == [2] and len(r2) == 2 and span(r2[0]) == span(lumped[0])
    assert span(r2[1]) == [(0, 63), (64, 127), (128, 143), (144, 159)] + span(lumped[1]) + [(176, 191), (192, 255)]
    assert r2[1][2].tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    # at the last depth itself (here the cut's: a 64-key binary tree whose chains end at [0, 7] and
    # [32, 39], their children cut), a remainder is replaced by its nodes, under its own parent
    binary = plan_sparse_tree(key_domain(0, 63, "i"), epsilon=1.0, branching=2).layout
    cut_shape = _levels([0, 1], [0, 1, 2, 3], [0, 1, 4, 5], [0, 1, 8, 9], [], [])
    r3_plain, _ = count_tree(binary, cut_shape, refine=False)
    r3, h3 = count_tree(binary, cut_shape)
    assert h3.tolist() == [2] and span(r3_plain[1]) == [(0, 7), (8, 31), (32, 39), (40, 63)]
    assert span(r3[1]) == [(0, 7), (8, 15), (16, 31), (32, 39), (40, 47), (48, 63)]
    assert r3[1][2].tolist() == [0, 0, 0, 1, 1, 1]


def test_runs_of_unsplit_siblings_are_counted_as_one_range_above_their_nodes() -> None:
    """A 256-key 4-ary tree split at level-1 nodes 1 and 2 and, below them, at level-2 nodes 4, 5,
    8 and 9: the count tree has depths of 4, 8 and 16 ranges (H = 3). The unsplit siblings 6, 7
    (keys 96-127) and 10, 11 (keys 160-191) are each counted as one run at depth 2, their nodes
    moving to depth 3 under it; a prefix through a run then reads one count (plus the least-squares
    correction from its nodes) instead of summing its nodes' noise. Single unsplit siblings and
    nodes already at the last depth are left alone; H stays 3."""
    lay = plan_sparse_tree(key_domain(0, 255, "i"), epsilon=1.0, branching=4).layout
    shape = _levels([0, 1, 2, 3], list(range(4, 12)), list(range(16, 24)) + list(range(32, 40)), [])
    plain, h0 = count_tree(lay, shape, refine=False)
    ranges, heights = count_tree(lay, shape)
    assert heights.tolist() == h0.tolist() == [3]
    span = lambda r: list(zip(r[0].tolist(), r[1].tolist()))  # noqa: E731
    assert span(ranges[0]) == span(plain[0]) == [(64 * i, 64 * i + 63) for i in range(4)]
    assert span(plain[1]) == [(16 * i, 16 * i + 15) for i in range(4, 12)]
    assert span(ranges[1]) == [(64, 79), (80, 95), (96, 127), (128, 143), (144, 159), (160, 191)]
    assert ranges[1][2].tolist() == [1, 1, 1, 2, 2, 2]
    moved = [(96, 111), (112, 127), (160, 175), (176, 191)]
    assert span(ranges[2]) == sorted(span(plain[2]) + moved)
    parents = dict(zip(span(ranges[2]), ranges[2][2].tolist()))
    assert [parents[m] for m in moved] == [2, 2, 5, 5]


def test_count_tree_is_not_cut_above_a_deep_subtree_by_a_wide_noisy_depth() -> None:
    """A 1024-key 4-ary tree: level-1 node 1 splits into four nodes that all split once (as noise
    splits of empty nodes do: 16 ranges at depth 3), while the data under level-2 node 0 splits
    two and then four nodes deeper (8 and 16 ranges at depths 4 and 5). Depth 3 is the widest (20
    ranges) but the 24 ranges below it are the data's: the count tree keeps all five depths, and
    the data's keys stay counted one by one (the rule "cut below the widest depth" kept three)."""
    lay = plan_sparse_tree(key_domain(0, 1023, "i"), epsilon=1.0, branching=4).layout
    assert lay.shifts == (10, 8, 6, 4, 2, 0)
    shape = _levels([0, 1, 2, 3], list(range(8)), [0, 1, 2, 3] + list(range(16, 32)), list(range(8)),
                    list(range(16)))
    ranges, heights = count_tree(lay, shape)
    widths = [r[0].size for r in ranges]
    assert heights.tolist() == [5] and widths[2] > max(widths[3:]) and sum(widths[3:]) > widths[2]
    assert ranges[4][0].tolist() == ranges[4][1].tolist() == list(range(16))


def test_parameters_that_would_exhaust_memory_or_overflow_are_refused() -> None:
    """dense_depth expands every node of its levels: dense_depth=7 over 64-bit keys asked for
    2^28 x 16 keys (32 GiB, a MemoryError or the process killed); a threshold past the integers
    the counts hold overflowed. Both are refused before any data is read, naming what to pass."""
    from dptree.errors import InvalidParameterError

    dom = key_domain(None, None, "f")
    with pytest.raises(InvalidParameterError, match=r"dense_depth=7 expands .* choose dense_depth <= 6"):
        plan_sparse_tree(dom, epsilon=1.0, dense_depth=7)
    assert plan_sparse_tree(dom, epsilon=1.0, dense_depth=6).dense_depth == 6
    with pytest.raises(InvalidParameterError, match="threshold must be"):
        plan_sparse_tree(dom, epsilon=1.0, threshold=10**30)


def test_a_threshold_that_lets_noise_grow_the_tree_without_end_is_refused_before_the_data() -> None:
    """A levels threshold below the subcritical one (b p > 1/2 for an empty node) or a negative
    privtree threshold expands empty nodes level after level: over 64-bit keys that outgrew memory
    after the budget was spent. Refused at planning; tiny domains, measured in full anyway, keep them."""
    wide = key_domain(0, 2**40, "i")
    plan = plan_sparse_tree(wide, epsilon=1.0, method="levels")
    least = subcritical_threshold(plan.level_scale, plan.layout.branching)
    assert 1 < least <= plan.threshold == default_threshold(plan.level_scale, plan.layout.branching)
    with pytest.raises(InvalidParameterError, match=f"use threshold >= {least}"):
        plan_sparse_tree(wide, epsilon=1.0, method="levels", threshold=least - 1)
    assert plan_sparse_tree(wide, epsilon=1.0, method="levels", threshold=least).threshold == least
    with pytest.raises(InvalidParameterError, match="use threshold >= 0"):
        plan_sparse_tree(wide, epsilon=1.0, threshold=-1)
    tiny = key_domain(0, 3, "i")
    assert plan_sparse_tree(tiny, epsilon=1.0, method="levels", branching=2, threshold=1).threshold == 1
    assert plan_sparse_tree(tiny, epsilon=1.0, threshold=-1).threshold == -1


@pytest.mark.parametrize("branching", [2, 16])
def test_the_subcritical_threshold_is_where_an_empty_node_expands_with_probability_1_over_2b(branching: int) -> None:
    lam = Fraction(37, 3)
    theta = subcritical_threshold(lam, branching)
    q = math.exp(-1 / float(lam))

    def p(t: int) -> float:  # P(DLap(lam) >= t), t >= 1, summed from the law
        ks = np.arange(t, t + 4000)
        return float(((1 - q) / (1 + q) * q ** ks).sum())

    assert branching * p(theta) <= 0.5 < branching * p(theta - 1)
