"""Refinements of a sparse tree's count tree that cost no budget (:func:`dptree.sparsetree.mechanism.count_tree`).

They read only the count tree (a function of the released shape) and only add ranges at depths
whose budget is already charged (or replace a childless range by ranges that tile it), each
depth's ranges staying disjoint, so neither the height H nor the privacy accounting changes (docs/notes/privacy.md, "Sparse range trees"):

* :func:`refine_remainders`: a chain remainder (a union of unsplit nodes of several levels) is
  counted again as its per-level pieces, and each piece as its nodes, down to depth H; at depth
  H itself its nodes are counted instead of it;
* :func:`group_runs`: a run of consecutive childless siblings above depth H is counted as one
  range, its nodes one depth below it.
"""

from __future__ import annotations

import numpy as np

from dptree.sparsetree.layout import SparseLayout

__all__ = ["level_of", "pieces", "piece_nodes", "refine_remainders", "group_runs"]


def level_of(layout: SparseLayout, start: np.ndarray, last: np.ndarray) -> np.ndarray:
    """The level of nodes given as ranges [start, last] of 2^shift keys (shift = log2 of the width)."""
    shift = np.rint(np.log2((last - start).astype(np.float64) + 1.0)).astype(np.int64)
    sh = np.asarray(layout.shifts[::-1])  # increasing
    return (layout.depth - np.searchsorted(sh, shift)).astype(np.int64)


def pieces(layout: SparseLayout, side: np.ndarray, lv: np.ndarray, lw: np.ndarray, start: np.ndarray,
           last: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The non-empty pieces of the remainders [start, last] (``side`` 0: left of the chain's end w,
    1: right; v at level ``lv``, w at level ``lw``): (start, last, remainder index, level)."""
    sh = layout.shifts
    mask = [np.uint64((1 << v) - 1) for v in sh]
    w_start = last + np.uint64(1)  # left remainders end just before w
    w_last = start - np.uint64(1)  # right ones start just after it
    ps, pl = [np.zeros(0, np.uint64)], [np.zeros(0, np.uint64)]
    pr, pj = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
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
    p_start, p_last, p_rem, p_level = (np.concatenate(v) for v in (ps, pl, pr, pj))
    return p_start, p_last, p_rem, p_level


def piece_nodes(layout: SparseLayout, p_start: np.ndarray, p_last: np.ndarray, p_level: np.ndarray,
                which: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The nodes (of their level) of the pieces selected by ``which``: (piece index, start, last)."""
    sh = np.array(layout.shifts, dtype=np.uint64)
    count = ((p_last - p_start) >> sh[p_level]).astype(np.int64) + 1
    owner = np.repeat(np.flatnonzero(which), count[which])
    first = np.cumsum(count[which]) - count[which]  # each piece's first position in the output
    k = np.arange(owner.size) - np.repeat(first, count[which])  # the node's rank inside its piece
    width = np.uint64(1) << sh[p_level[owner]]
    n_start = p_start[owner] + k.astype(np.uint64) * width
    return owner, n_start, n_start + width - np.uint64(1)


def refine_remainders(layout: SparseLayout, rid: np.ndarray, rparent: np.ndarray, side: np.ndarray, lv: np.ndarray,
                      lw: np.ndarray, start: np.ndarray, last: np.ndarray, depth: np.ndarray, height: np.ndarray
                      ) -> tuple[np.ndarray, ...]:
    """The ranges that refine the chain remainders, down to (never below) their copy's height H.

    A remainder of the chain v > u_(lv+1) > ... > u_lw = w (v at level lv, w at level lw) is the
    union, over the chain's levels j, of the *piece* of level j: the siblings of u_j on that side,
    [floor(w.start, 2^sh[j-1]), floor(w.start, 2^sh[j])) on the left, (ceil(w.last, 2^sh[j]),
    ceil(w.last, 2^sh[j-1])] on the right; each piece is a run of nodes of level j that were not
    split. A remainder R of two or more nodes at depth d is counted as follows:

    * d + 1 < H and two or more pieces: the pieces at depth d + 1 under R, and the nodes of each
      piece of two or more nodes at depth d + 2 under their piece;
    * d < H otherwise: R's nodes at depth d + 1 under R;
    * d = H: R's nodes *instead of* R, at depth d under R's parent (R has no children there).

    The pieces tile their remainder and the nodes their piece (or the remainder they replace), so
    the ranges of every depth stay disjoint and H does not change; everything is read from the
    shape. Returns (start, last, parent, depth, remainder, parent_is_new, replaced): ``parent``
    is a count-tree id, or (where ``parent_is_new``) the position of the parent piece among the
    returned ranges; ``replaced`` marks the remainders whose nodes take their place.
    """
    p_start, p_last, p_rem, p_level = pieces(layout, side, lv, lw, start, last)
    sh = np.array(layout.shifts, dtype=np.uint64)
    count = ((p_last - p_start) >> sh[p_level]).astype(np.int64) + 1  # nodes per piece
    n_pieces = np.bincount(p_rem, minlength=rid.size)
    n_nodes = np.bincount(p_rem, weights=count, minlength=rid.size)
    flat = (depth == height) & (n_nodes >= 2)
    with_pieces = (depth + 1 < height) & (n_pieces >= 2)
    nodes_below = (depth < height) & ~with_pieces & (n_nodes >= 2)
    as_piece = with_pieces[p_rem]
    piece_pos = np.cumsum(as_piece) - 1
    which = flat[p_rem] | nodes_below[p_rem] | (as_piece & (count >= 2))
    owner, n_start, n_last = piece_nodes(layout, p_start, p_last, p_level, which)
    r = p_rem[owner]
    n_new = with_pieces[r]
    n_depth = np.where(flat[r], depth[r], np.where(n_new, depth[r] + 2, depth[r] + 1))
    n_parent = np.where(flat[r], rparent[r], np.where(n_new, piece_pos[owner], rid[r]))
    return (np.concatenate([p_start[as_piece], n_start]), np.concatenate([p_last[as_piece], n_last]),
            np.concatenate([rid[p_rem[as_piece]], n_parent]), np.concatenate([depth[p_rem[as_piece]] + 1, n_depth]),
            np.concatenate([p_rem[as_piece], r]), np.concatenate([np.zeros(int(as_piece.sum()), dtype=bool), n_new]),
            flat)


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
    above = np.flatnonzero(depth < height)  # siblings share their depth: only these can form runs
    sub = np.lexsort((start[above], parent[above]))
    order = above[sub]
    ok = ~has_child[ids[order]]
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
