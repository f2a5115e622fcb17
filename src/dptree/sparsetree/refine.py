"""Refinements of a sparse tree's count tree that cost no budget (:func:`dptree.sparsetree.mechanism.count_tree`).

Both read only the count tree (a function of the released shape) and only add ranges at depths
whose budget is already charged, each depth's ranges staying disjoint, so neither the height H
nor the privacy accounting changes (docs/privacy.md, "Sparse range trees"):

* :func:`refine_remainders`: a chain remainder (a union of unsplit nodes of several levels) is
  counted again as its per-level pieces, and each piece as its nodes, down to depth H;
* :func:`group_runs`: a run of consecutive childless siblings above depth H is counted as one
  range, its nodes one depth below it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from dptree.sparsetree.mechanism import SparseLayout

__all__ = ["level_of", "refine_remainders", "group_runs"]


def level_of(layout: SparseLayout, start: np.ndarray, last: np.ndarray) -> np.ndarray:
    """The level of nodes given as ranges [start, last] of 2^shift keys (shift = log2 of the width)."""
    shift = np.rint(np.log2((last - start).astype(np.float64) + 1.0)).astype(np.int64)
    sh = np.asarray(layout.shifts[::-1])  # increasing
    return (layout.depth - np.searchsorted(sh, shift)).astype(np.int64)


def refine_remainders(layout: SparseLayout, rid: np.ndarray, side: np.ndarray, lv: np.ndarray, lw: np.ndarray,
                       start: np.ndarray, last: np.ndarray, depth: np.ndarray, height: np.ndarray
                       ) -> tuple[np.ndarray, ...]:
    """The ranges that refine the chain remainders, down to (never below) their copy's height.

    A remainder of the chain v > u_(lv+1) > ... > u_lw = w (v at level lv, w at level lw) is the
    union, over the chain's levels j, of the *piece* of level j: the siblings of u_j on that side,
    [floor(w.start, 2^sh[j-1]), floor(w.start, 2^sh[j])) on the left, (ceil(w.last, 2^sh[j]),
    ceil(w.last, 2^sh[j-1])] on the right (nodes of the shape that were not split). When the
    remainder's depth is below its copy's height H, its pieces (if there are two or more) are
    counted one depth below it, and each piece's nodes (if two or more) one depth below that, as
    long as the depth stays <= H. The pieces tile their remainder and the nodes their piece, so the
    ranges of every depth stay disjoint; everything is read from the shape.

    Returns (start, last, parent, depth, remainder, parent_is_new): ``parent`` is the remainder's
    id, or (where ``parent_is_new``) the position of the parent piece among the returned ranges.
    """
    sh = layout.shifts
    mask = [np.uint64((1 << v) - 1) for v in sh]
    w_start = last + np.uint64(1)  # left remainders end just before w
    w_last = start - np.uint64(1)  # right ones start just after it
    ps, pl, pr, pj = [], [], [], []
    for j in range(1, layout.depth + 1):
        sel = np.flatnonzero((lv < j) & (j <= lw))
        if not sel.size:
            continue
        lft = side[sel] == 0
        lo_l, hi_l = w_start[sel] & ~mask[j - 1], w_start[sel] & ~mask[j]  # left: [lo_l, hi_l)
        lo_r, hi_r = w_last[sel] | mask[j], w_last[sel] | mask[j - 1]  # right: (lo_r, hi_r]
        keep = np.where(lft, lo_l < hi_l, lo_r < hi_r)
        lft, lo_l, hi_l, lo_r, hi_r = lft[keep], lo_l[keep], hi_l[keep], lo_r[keep], hi_r[keep]
        ps.append(np.where(lft, lo_l, lo_r + np.uint64(1)))
        pl.append(np.where(lft, hi_l - np.uint64(1), hi_r))
        pr.append(sel[keep])
        pj.append(np.full(int(keep.sum()), j))
    if not ps:
        e = np.zeros(0, dtype=np.int64)
        return np.zeros(0, np.uint64), np.zeros(0, np.uint64), e, e, e, np.zeros(0, bool)
    p_start, p_last, p_rem, p_level = (np.concatenate(v) for v in (ps, pl, pr, pj))
    n_pieces = np.bincount(p_rem, minlength=rid.size)
    # pieces of remainders with two or more of them, one depth below the remainder
    as_piece = (n_pieces[p_rem] >= 2) & (depth[p_rem] + 1 <= height[p_rem])
    piece_pos = np.full(p_rem.size, -1, dtype=np.int64)
    piece_pos[as_piece] = np.arange(int(as_piece.sum()))
    # the nodes of every piece with two or more: below the piece, or below the remainder itself
    nodes_depth = np.where(n_pieces[p_rem] >= 2, depth[p_rem] + 2, depth[p_rem] + 1)
    width = np.array([np.uint64(1) << np.uint64(sh[j]) for j in range(layout.depth + 1)], dtype=np.uint64)
    count = ((p_last - p_start) >> np.array(sh, dtype=np.uint64)[p_level]).astype(np.int64) + 1
    split = (count >= 2) & (nodes_depth <= height[p_rem]) & ((n_pieces[p_rem] == 1) | as_piece)
    k = np.concatenate([np.arange(c) for c in count[split]]) if split.any() else np.zeros(0, dtype=np.int64)
    owner = np.repeat(np.flatnonzero(split), count[split])
    n_start = p_start[owner] + k.astype(np.uint64) * width[p_level[owner]]
    n_last = n_start + width[p_level[owner]] - np.uint64(1)
    n_new = np.where(n_pieces[p_rem[owner]] >= 2, True, False)
    n_parent = np.where(n_new, piece_pos[owner], rid[p_rem[owner]])
    return (np.concatenate([p_start[as_piece], n_start]), np.concatenate([p_last[as_piece], n_last]),
            np.concatenate([rid[p_rem[as_piece]], n_parent]),
            np.concatenate([depth[p_rem[as_piece]] + 1, nodes_depth[owner]]),
            np.concatenate([p_rem[as_piece], p_rem[owner]]),
            np.concatenate([np.zeros(int(as_piece.sum()), dtype=bool), n_new]))


def group_runs(ids: np.ndarray, start: np.ndarray, last: np.ndarray, parent: np.ndarray, depth: np.ndarray,
                height: np.ndarray) -> tuple[np.ndarray, ...]:
    """Runs of two or more consecutive childless siblings (not all of their parent's children) at a
    depth c < H: each run becomes one range at depth c (the union of its nodes) and its nodes move
    to depth c + 1, under it. The run and its nodes tile the same keys as before, so each depth's
    ranges stay disjoint and H does not change; it reads the count tree (the shape) only.

    Returns (start, last, parent id, depth) of the runs, the positions of the moved nodes and, for
    each, the index of its run (runs in order of their first node)."""
    has_child = np.zeros(int(ids.max(initial=0)) + 1, dtype=bool)
    has_child[parent] = True  # parent ids below ids.min() are the roots
    childless = ~has_child[ids]
    order = np.lexsort((start, parent))
    ok = (childless & (depth < height))[order]
    par = parent[order]
    new_group = np.concatenate([[True], par[1:] != par[:-1]])
    run_begin = ok & (new_group | ~np.concatenate([[False], ok[:-1]]))
    label = np.cumsum(run_begin) - 1
    label = np.where(ok, label, -1)
    size = np.bincount(label[ok], minlength=int(run_begin.sum())) if ok.any() else np.zeros(0, dtype=np.int64)
    group = np.cumsum(new_group) - 1
    group_size = np.bincount(group)
    run_group = group[np.flatnonzero(run_begin)]
    good = (size >= 2) & (size < group_size[run_group])
    member_sorted = np.flatnonzero(ok & np.append(good, False)[label])  # label -1: not in a run
    runs = np.flatnonzero(good)
    renumber = np.full(size.size, -1, dtype=np.int64)
    renumber[runs] = np.arange(runs.size)
    member = order[member_sorted]
    run_of = renumber[label[member_sorted]]
    first = order[np.flatnonzero(run_begin)[runs]]
    end = order[np.flatnonzero(run_begin)[runs] + size[runs] - 1]
    return start[first], last[end], parent[first], depth[first], member, run_of
