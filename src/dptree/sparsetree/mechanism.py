"""The sparse range tree's mechanisms: a b-ary tree over 2^bits keys, measured top-down, expanded
only where noise says there is mass. Two ways to decide where (docs/notes/privacy.md, "Sparse range
trees"; docs/notes/sparse_tree.md compares their accuracy).

**method="privtree"** (the default). Phase 1 grows the tree's shape with PrivTree's biased-count
rule (Zhang, Xiao, Xie, SIGMOD 2016, Algorithm 2 and Theorem 3.1): a node of decision depth i
is split when max(theta - delta, c_v - i delta) + DLap(lambda_1) > theta, with
delta >= lambda_1 ln(b). Along one record's root-to-leaf path the biased counts fall by delta per
level, so the privacy losses of the split decisions form a geometric series: the shape is
eps_1-DP with eps_1 = k (2b - 1) / ((b - 1) lambda_1), whatever its depth (checked numerically for
the discrete Laplace by :func:`privtree_path_loss`). Phase 2 measures every node of the released
shape, grouped into the H depths of its *count tree* (:func:`count_tree`: chains of single
splits collapsed into remainders, cut below the first depth as wide as all deeper ones,
remainders refined into their unsplit pieces down to depth H, runs of unsplit siblings counted
as one range above their nodes; all a function of the released shape): each depth gets
DLap(k H / eps_2), so the counts are eps_2-DP given the shape (each depth's ranges are disjoint:
one person's k records change its counts by at most k in L1). Sequential composition: eps_1 +
eps_2. Unlike a fixed per-level split
over all 64 / log2(b) levels, the count budget goes only to the levels the data fills.

**method="levels"** (in the spirit of Google's pruned quantile tree). Depth 0 is the root (all
keys; never measured). Level
d = 1..L holds nodes of 2^shift[d] keys. The measured set M_1 is every child of the root; for
d >= 1 a node of M_d is *expanded* when d < ``dense_depth`` (the top levels are noised in full),
or when d < L and its noisy count y_v >= theta_d; M_{d+1} is every child of every expanded node,
empty or not, and each gets y_v = c_v + Z_v with Z_v ~ DLap(lambda_d) (exact discrete Laplace,
:mod:`dptree.noise`). The expansion rule reads only the noisy counts of level d.

**Privacy** (add/remove one person with at most k records; docs/notes/privacy.md, "Sparse range trees").
Fix the outputs y_1..y_{d-1} of the levels above. They determine M_d (post-processing), the same
set for both neighbours. The nodes of M_d are disjoint key ranges, so adding or removing k records
changes the count vector (c_v)_{v in M_d} by at most k in L1: level d alone is (k/lambda_d)-DP
(Laplace mechanism). The release is the adaptive sequential composition of the L levels (each
chosen from the previous outputs only), so it is (sum_d k/lambda_d)-DP = epsilon-DP for
lambda_d = k L / epsilon (uniform split; every level is charged whether or not anything below the
top is expanded, so the budget does not depend on the data). The measured set is part of the
output, and it costs nothing beyond the counts it is computed from.

**Cost.** The counts of a level come from :mod:`dptree.sparsetree.counting` (a histogram of the
keys, or binary search in the keys sorted once), so time and memory grow with n (n log n where
the tree splits finer than the histogram's bins) and with the number of measured nodes (about
b n / theta at the deepest busy level), not with 2^bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np

from dptree import noise as _noise
from dptree.sparsetree.counting import Counts, as_counts, node_counts, range_counts
from dptree.sparsetree.layout import SparseLayout
from dptree.sparsetree.refine import group_runs, level_of, refine_remainders

__all__ = ["SparseLayout", "Level", "Nodes", "Measurement", "node_counts", "range_counts", "children", "expanded",
           "measure_levels", "default_threshold", "subcritical_threshold", "privtree_delta", "grow_structure",
           "realised_depths", "count_tree",
           "measure_count_tree", "level_nodes", "privtree_path_loss"]


@dataclass
class Level:
    """The measured nodes of one level: sorted node indices and their noisy counts."""

    index: np.ndarray  # uint64, sorted
    noisy: np.ndarray  # int64


@dataclass
class Nodes:
    """The counted key ranges of one depth of the count tree: [start, last] (offsets, uint64,
    sorted and disjoint), the position of each one's parent at the depth above (depth 1: the root,
    or the copy's root), and their noisy counts."""

    start: np.ndarray  # uint64
    last: np.ndarray  # uint64
    parent: np.ndarray  # int64
    noisy: np.ndarray  # int64


@dataclass
class Measurement:
    """What the mechanism releases: the tree's shape (per level 1..L, the sorted indices of its
    nodes), the count tree (per depth, :class:`Nodes` with noisy counts) and, per copy, the number
    of depths of its count tree (privtree: the h of the counts' scale; levels: its deepest level);
    with ``structure_share="auto"`` also every copy's noisy total, which chose its shape's share."""

    shape: list[np.ndarray]
    nodes: list[Nodes]
    heights: np.ndarray
    totals: np.ndarray | None = None


def default_threshold(scale: Fraction, branching: int) -> int:
    """theta = ceil(lambda ln(4 b)): an empty node is expanded with probability about 1/(8b), so
    the expected number of noise-only expansions shrinks by 8 per level (a subcritical branching
    process), while a node holding 2 theta records is expanded almost surely."""
    return max(1, math.ceil(float(scale) * math.log(4 * branching)))


def subcritical_threshold(scale: Fraction, branching: int) -> int:
    """The least theta at which noise alone keeps the levels method's tree finite: an empty node's
    noisy count reaches theta with probability p = e^(-theta/lambda) / (1 + e^(-1/lambda)) (exact for
    DLap(lambda), theta >= 1), and each expansion measures ``branching`` children, so the expected
    expansions from noise shrink per level while b p <= 1/2 (a subcritical branching process)."""
    lam = float(scale)
    return max(1, math.ceil(lam * (math.log(2 * branching) - math.log1p(math.exp(-1.0 / lam)))))


def children(parents: np.ndarray, fanout: int) -> np.ndarray:
    """Sorted indices of every child of the sorted node indices ``parents``."""
    f = np.uint64(fanout)
    return (parents[:, None] * f + np.arange(fanout, dtype=np.uint64)[None, :]).ravel()


def expanded(level: Level, d: int, layout: SparseLayout, dense_depth: int, threshold: int) -> np.ndarray:
    """The nodes of level d whose children are measured: all of them above ``dense_depth``, none
    at the last level, else those with noisy count >= ``threshold``. Reads only noisy counts."""
    if d >= layout.depth:
        return level.index[:0]
    if d < dense_depth:
        return level.index
    return level.index[level.noisy >= threshold]


def measure_levels(keys: Counts, layout: SparseLayout, scales: list[Fraction], thresholds: list[int],
                   dense_depth: int, source: _noise.RandomSource, *, roots: int = 1) -> list[Level]:
    """Run the mechanism on sorted uint64 offsets ``keys``: the measured levels 1..L.

    ``roots`` > 1 runs independent copies at once (the audit): copy i's keys are offset by
    i * 2^bits and its nodes hang under root i (bits + log2(roots) must fit 64 bits).
    """
    out: list[Level] = []
    counts = as_counts(keys)
    parents = np.arange(roots, dtype=np.uint64)
    for d in range(1, layout.depth + 1):
        idx = children(parents, layout.fanout(d - 1))
        c = counts.nodes(idx, layout.shifts[d])
        y = c + _noise.discrete_laplace(source, scales[d - 1], idx.size).astype(np.int64)
        lev = Level(idx, y)
        out.append(lev)
        parents = expanded(lev, d, layout, dense_depth, thresholds[d - 1])
    return out


# --------------------------------------------------------------------------- method="privtree"


def privtree_delta(lam: Fraction, branching: int) -> int:
    """The bias per level: delta = ceil(lambda ln(4 b)). PrivTree needs delta >= lambda ln(b); the
    factor 4 makes an empty node split with probability about 1/(8 b) instead of 1/(2 b), so that
    noise alone rarely grows deep chains of empty nodes (each would add a level to h)."""
    return math.ceil(float(lam) * math.log(4 * branching))


def grow_structure(keys: Counts, layout: SparseLayout, lam: Fraction, delta: int, theta: int, dense_depth: int,
                   source: _noise.RandomSource, *, roots: int = 1) -> list[np.ndarray]:
    """Phase 1: the measured node sets of levels 1..L. Levels 1 .. dense_depth - 1 split every
    node, the last level none; a node of level d >= dense_depth (decision depth i = d -
    dense_depth + 1) splits when max(theta - delta, c_v - i delta) + DLap(lambda) > theta. Only the
    decisions are kept, never the noisy biased counts."""
    out: list[np.ndarray] = []
    counts = as_counts(keys)
    parents = np.arange(roots, dtype=np.uint64)
    for d in range(1, layout.depth + 1):
        idx = children(parents, layout.fanout(d - 1))
        out.append(idx)
        if d == layout.depth:
            break
        if d < dense_depth:
            parents = idx
            continue
        c = counts.nodes(idx, layout.shifts[d])
        biased = np.maximum(theta - delta, c - (d - dense_depth + 1) * delta)
        parents = idx[biased + _noise.discrete_laplace(source, lam, idx.size).astype(np.int64) > theta]
    return out


def realised_depths(layout: SparseLayout, structure: list[np.ndarray], roots: int = 1) -> np.ndarray:
    """h of every tree (copy): its deepest level with a measured node."""
    depth = np.zeros(roots, dtype=np.int64)
    for d, idx in enumerate(structure, start=1):
        depth[np.unique(idx >> np.uint64(layout.bits - layout.shifts[d])).astype(np.int64)] = d
    return depth


def _node_ranges(index: np.ndarray, shift: int) -> tuple[np.ndarray, np.ndarray]:
    """[start, last] of the nodes ``index`` of 2^shift keys (shift <= 63, or the root of 2^64)."""
    start = index << np.uint64(shift) if shift < 64 else np.zeros(index.size, dtype=np.uint64)
    return start, start + np.uint64((1 << shift) - 1)


def count_tree(layout: SparseLayout, shape: list[np.ndarray], *, roots: int = 1, refine: bool = True
               ) -> tuple[list[tuple[np.ndarray, np.ndarray, np.ndarray]], np.ndarray]:
    """The ranges the count phase measures, a function of the released shape only: per depth
    1..H, (start, last, parent position), and the height H of every copy's count tree.

    *Branch nodes* (E): the nodes of the shape that were split. From the root down, a branch node v with 0 or >= 2 branch children has all its children
    counted; with exactly one, the chain of single-branch-child nodes below it is followed to its
    end w (the first branch node with 0 or >= 2 branch children), and v's counted children are w
    and the two remainders [v.start, w.start) and (w.last, v.last] (those not empty). Children of
    a counted node lie inside it and are disjoint, so the ranges of one depth are disjoint.
    Each copy's count tree is then cut below its first depth holding at least as many ranges as all
    deeper depths together: the depths below hold the few nodes that split on noise, and would raise
    H, and so every count's noise, for little resolution (their mass is spread inside the deepest
    counted range). Cutting reads the shape only, so it stays post-processing of the structure
    phase. Then (``refine``, the default) every kept remainder above its copy's last depth H is
    refined by :func:`~dptree.sparsetree.refine.refine_remainders` into its per-level pieces and
    their unsplit nodes, down to depth H and never below, and runs of two or more consecutive
    childless siblings above depth H are counted as one range with their nodes one depth below it
    (:func:`~dptree.sparsetree.refine.group_runs`): more disjoint ranges at depths already paid for,
    a function of the shape only, so neither H nor the budget changes. ``refine=False`` (tests,
    diagnostics) keeps the lumped remainders and the plain siblings.
    """
    L, sh = layout.depth, layout.shifts
    empty = np.zeros(0, dtype=np.uint64)
    E: list[np.ndarray] = [empty] * (L + 1)
    for d in range(1, L):
        E[d] = np.unique(shape[d] >> np.uint64(sh[d] - sh[d + 1]))
    E[0] = np.arange(roots, dtype=np.uint64)
    nx = [np.bincount(np.searchsorted(E[d], E[d + 1] >> np.uint64(sh[d] - sh[d + 1])), minlength=E[d].size)
          if d < L else np.zeros(E[d].size, dtype=np.int64) for d in range(L + 1)]
    # per branch node of the current level: its count-tree id (-1: inside a chain), and its anchor
    # (the counted node whose chain it continues, or itself): id, depth, range
    starts, lasts, parent_ids, depths = [], [], [], []
    remainders: list[tuple[np.ndarray, ...]] = []  # (id, side 0/1, the anchor's level, the chain end's level)
    next_id = roots
    root_start, root_last = _node_ranges(E[0], sh[0])
    cid = np.arange(roots, dtype=np.int64)
    anc = cid.copy()
    anc_depth = np.zeros(roots, dtype=np.int64)
    anc_start, anc_last = root_start, root_last

    def emit(start: np.ndarray, last: np.ndarray, parent: np.ndarray, depth: np.ndarray) -> np.ndarray:
        nonlocal next_id
        ids = np.arange(next_id, next_id + start.size, dtype=np.int64)
        next_id += start.size
        starts.append(start)
        lasts.append(last)
        parent_ids.append(parent)
        depths.append(depth)
        return ids

    for d in range(L):
        here, below = E[d], E[d + 1]
        f = layout.fanout(d)
        step = np.uint64(sh[d] - sh[d + 1])
        new_cid = np.full(below.size, -1, dtype=np.int64)
        new_anc = np.full(below.size, -1, dtype=np.int64)
        new_depth = np.zeros(below.size, dtype=np.int64)
        new_start = np.zeros(below.size, dtype=np.uint64)
        new_last = np.zeros(below.size, dtype=np.uint64)
        # counted nodes with 0 or >= 2 branch children: every child is counted
        full = (cid >= 0) & (nx[d] != 1)
        kids = children(here[full], f)
        ks, kl = _node_ranges(kids, sh[d + 1])
        ids = emit(ks, kl, np.repeat(cid[full], f), np.repeat(anc_depth[full] + 1, f))
        pos = np.minimum(np.searchsorted(below, kids), max(below.size - 1, 0))
        hit = below[pos] == kids if below.size else np.zeros(kids.size, dtype=bool)
        new_cid[pos[hit]] = ids[hit]
        new_anc[pos[hit]], new_depth[pos[hit]] = ids[hit], np.repeat(anc_depth[full] + 1, f)[hit]
        new_start[pos[hit]], new_last[pos[hit]] = ks[hit], kl[hit]
        # chain nodes (one branch child): the child continues the chain, or ends it and is counted
        chain = nx[d] == 1
        if chain.any():
            u = np.searchsorted(below >> step, here[chain])
            cont = nx[d + 1][u] == 1
            a, ad, ast, al = anc[chain], anc_depth[chain], anc_start[chain], anc_last[chain]
            new_anc[u[cont]], new_depth[u[cont]] = a[cont], ad[cont]
            new_start[u[cont]], new_last[u[cont]] = ast[cont], al[cont]
            end = ~cont
            us, ul = _node_ranges(below[u[end]], sh[d + 1])
            w = emit(us, ul, a[end], ad[end] + 1)
            new_cid[u[end]], new_anc[u[end]], new_depth[u[end]] = w, w, ad[end] + 1
            new_start[u[end]], new_last[u[end]] = us, ul
            left, right = us > ast[end], ul < al[end]
            anchor_level = level_of(layout, ast[end], al[end])
            for side, m, rs, rl in ((0, left, ast[end], us - np.uint64(1)), (1, right, ul + np.uint64(1), al[end])):
                rid = emit(rs[m], rl[m], a[end][m], ad[end][m] + 1)
                remainders.append((rid, np.full(rid.size, side), anchor_level[m], np.full(rid.size, d + 1)))
        cid, anc, anc_depth, anc_start, anc_last = new_cid, new_anc, new_depth, new_start, new_last
    start = np.concatenate(starts) if starts else empty
    last = np.concatenate(lasts) if lasts else empty
    parent = np.concatenate(parent_ids) if parent_ids else np.zeros(0, dtype=np.int64)
    depth = np.concatenate(depths) if depths else np.zeros(0, dtype=np.int64)
    # trim each copy's count tree below its first depth holding at least as many ranges as all
    # deeper depths together: the depths below it hold the few nodes that split on noise, and
    # counting them would raise H, and so the noise of every count, for little resolution
    # (docs/notes/sparse_tree.md, "Trimming"; the rule was "below the widest depth" before, which cut
    # a deep data subtree whenever noise splits made a shallower depth wider)
    copy_of = (start >> np.uint64(layout.bits)).astype(np.int64) if layout.bits < 64 else np.zeros(start.size, np.int64)
    kept_ids = np.arange(roots, next_id)  # the count-tree id of every range still kept
    height = np.zeros(roots, dtype=np.int64)  # every copy's H (no depth is empty above a used one)
    if depth.size:
        width = np.bincount(copy_of * (L + 2) + depth, minlength=roots * (L + 2)).reshape(roots, L + 2)
        below = np.cumsum(width[:, ::-1], axis=1)[:, ::-1] - width  # ranges deeper than each depth
        cut = np.argmax((width >= below) & (np.arange(L + 2) >= 1)[None, :], axis=1)  # the first such depth
        keep = depth <= cut[copy_of]
        start, last, parent, depth, copy_of = start[keep], last[keep], parent[keep], depth[keep], copy_of[keep]
        kept_ids = kept_ids[keep]
        height = np.where(width.sum(axis=1) > 0, cut, 0)
    if refine and remainders:
        rid, rside, lv, lw = (np.concatenate(col) for col in zip(*remainders))
        at = np.minimum(np.searchsorted(kept_ids, rid), max(kept_ids.size - 1, 0))  # kept_ids is sorted
        kept = kept_ids[at] == rid if kept_ids.size else np.zeros(rid.size, dtype=bool)  # remainders not cut
        rid, rside, lv, lw, at = rid[kept], rside[kept], lv[kept], lw[kept], at[kept]
        fine = refine_remainders(layout, rid, parent[at], rside, lv, lw, start[at], last[at], depth[at],
                                 height[copy_of[at]])
        ids = np.arange(next_id, next_id + fine[0].size, dtype=np.int64)
        next_id += fine[0].size
        # fine[2] is a count-tree id, or (fine[5]) the position of a new piece among the new ranges
        new_parent = fine[2].copy()
        new_parent[fine[5]] = ids[fine[2][fine[5]]]
        start, last = np.concatenate([start, fine[0]]), np.concatenate([last, fine[1]])
        parent, depth = np.concatenate([parent, new_parent]), np.concatenate([depth, fine[3]])
        copy_of = np.concatenate([copy_of, copy_of[at][fine[4]]])
        kept_ids = np.concatenate([kept_ids, ids])
        if fine[6].any():  # remainders at depth H replaced by their nodes
            keep = np.ones(start.size, dtype=bool)
            keep[at[fine[6]]] = False
            start, last, parent, depth, copy_of, kept_ids = (a[keep] for a in (start, last, parent, depth, copy_of,
                                                                               kept_ids))
    if refine and depth.size:
        run_start, run_last, run_parent, run_depth, member, run_of = group_runs(
            kept_ids, start, last, parent, depth, height[copy_of])
        ids = np.arange(next_id, next_id + run_start.size, dtype=np.int64)
        next_id += run_start.size
        depth[member] += 1  # the run's nodes move one depth down, under the run
        parent[member] = ids[run_of]
        start, last = np.concatenate([start, run_start]), np.concatenate([last, run_last])
        parent, depth = np.concatenate([parent, run_parent]), np.concatenate([depth, run_depth])
        run_copy = (run_start >> np.uint64(layout.bits)).astype(np.int64) if layout.bits < 64 \
            else np.zeros(run_start.size, np.int64)
        copy_of = np.concatenate([copy_of, run_copy])
        kept_ids = np.concatenate([kept_ids, ids])
    H = int(depth.max(initial=0))
    # group by depth, sorted by start; parents as positions at the depth above (depth 1: the copy)
    order = np.lexsort((start, depth))
    position = np.zeros(next_id, dtype=np.int64)
    position[:roots] = np.arange(roots)
    ids = kept_ids[order]
    depth_sorted = depth[order]
    bounds = np.searchsorted(depth_sorted, np.arange(1, H + 2))
    out = []
    for j in range(H):
        sel = order[bounds[j]:bounds[j + 1]]
        position[ids[bounds[j]:bounds[j + 1]]] = np.arange(sel.size)
        out.append((start[sel], last[sel], position[parent[sel]]))
    return out, height


def measure_count_tree(keys: Counts, layout: SparseLayout, shape: list[np.ndarray], scale_for: Callable[[int], Fraction], source: _noise.RandomSource, *, roots: int = 1
                       ) -> Measurement:
    """Phase 2: a noisy count of every range of the count tree of the released shape
    (:func:`count_tree`), at the scale ``scale_for(H)`` of its copy's count-tree height H (a
    function of the released shape only)."""
    ranges, heights = count_tree(layout, shape, roots=roots)
    counts = as_counts(keys)
    nodes: list[Nodes] = []
    for start, last, parent in ranges:
        c = counts.ranges(start, last)
        copy = (start >> np.uint64(layout.bits)).astype(np.int64) if roots > 1 else np.zeros(start.size, np.int64)
        h = heights[copy]
        for hv in np.unique(h).tolist():
            sel = h == hv
            c[sel] += _noise.discrete_laplace(source, scale_for(int(hv)), int(sel.sum())).astype(np.int64)
        nodes.append(Nodes(start, last, parent, c))
    return Measurement(shape, nodes, heights)


def level_nodes(layout: SparseLayout, levels: list[Level]) -> list[Nodes]:
    """The measured levels of a tree (every node counted, method="levels") as count-tree depths."""
    out: list[Nodes] = []
    prev: np.ndarray | None = None
    for d, lv in enumerate(levels, start=1):
        start, last = _node_ranges(lv.index, layout.shifts[d])
        if prev is None:
            parent = (lv.index >> np.uint64(layout.bits - layout.shifts[d])).astype(np.int64) \
                if layout.bits < 64 else np.zeros(lv.index.size, dtype=np.int64)
        else:
            parent = np.searchsorted(prev, lv.index >> np.uint64(layout.shifts[d - 1] - layout.shifts[d])).astype(np.int64)
        out.append(Nodes(start, last, parent, lv.noisy))
        prev = lv.index
    return out


def privtree_path_loss(lam: float, delta: int, theta: int, levels: int, max_count: int = 4000) -> float:
    """The largest privacy loss of the split decisions when one record is added, over every
    non-increasing sequence of counts c_1 >= c_2 >= ... along its path (0 .. max_count) and every
    stopping depth, with the exact discrete-Laplace probabilities: a numerical check of PrivTree's
    bound (2b - 1) / ((b - 1) lambda) for the discrete noise (dynamic programming over levels)."""
    p = math.exp(-1.0 / lam)

    def log_split(b: np.ndarray) -> np.ndarray:  # log P[b + Z > theta]
        t = (theta - b).astype(np.float64)
        hi = (t + 1) * math.log(p) - math.log1p(p)  # t >= 0: P[Z >= t + 1]
        below = np.log1p(-np.power(p, np.maximum(-t, 0.0)) / (1 + p))  # t < 0: 1 - P[Z >= -t]
        return np.where(t >= 0, hi, below)

    def log_stop(b: np.ndarray) -> np.ndarray:  # log P[b + Z <= theta]
        t = (theta - b).astype(np.float64)
        above = np.log1p(-np.power(p, np.maximum(t + 1, 0.0)) / (1 + p))  # t >= 0: 1 - P[Z >= t + 1]
        below = -t * math.log(p) - math.log1p(p)  # t < 0: P[Z >= -t]
        return np.where(t >= 0, above, below)

    c = np.arange(max_count + 1)
    best: np.ndarray | None = None
    for i in range(levels, 0, -1):  # i: decision depth; the last one (i = levels) cannot split
        b0 = np.maximum(theta - delta, c - i * delta)
        b1 = np.maximum(theta - delta, c + 1 - i * delta)
        split = np.abs(log_split(b1) - log_split(b0))
        stop = np.abs(log_stop(b1) - log_stop(b0)) if i < levels else np.zeros(c.size)
        best = stop if best is None else np.maximum(stop, split + np.maximum.accumulate(best))
    assert best is not None
    return float(best.max())
