"""Multisets on [0, 2^h) and the binary tree over them: the shared steps of TreeLog and HeavyPaths.

Kaplan et al. 2020 (``002_2f350810784938f5.txt``) run every tree algorithm on the complete binary tree T
over the domain X = [0, 2^h): the weight of a node is the number of records below it. Here:

* :class:`MS` -- a multiset as sorted distinct values with multiplicities (trimming, the cap at a
  declared size, node weights per level);
* :func:`path_and_D` -- steps 4-5 of Algorithm 1 (shared by ConstructPaths and OneRandomPath): the
  path down T and the database D of fall-off levels;
* :func:`choose_node` / :func:`best_of_four` -- steps 7-9 of Algorithm 1 (Choosing Mechanism for
  a heavy node, then the exponential mechanism over its four candidate points).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Literal

import numpy as np

from dptree.interior.selection import choosing_mechanism, exponential_mechanism
from dptree.noise import RandomSource, exp_lower_rational, sample_exponential_index

__all__ = [
    "BASE_DOMAIN",
    "BASE_H",
    "MS",
    "best_of_four",
    "choose_node",
    "height",
    "heavy_chooser",
    "log_star_levels",
    "path_and_D",
    "random_chooser",
]

BASE_DOMAIN = 16  # the "|X| = O(1)" of Algorithms 1 and 2
BASE_H = 4  # log2(BASE_DOMAIN): heights are compared, not sizes (|X| may be 2^(2^40))

#: ``chooser(w0, w1)``: the child (0/1) to follow when both children have positive weight
Chooser = Callable[[int, int], int]


def height(size: int) -> int:
    """The height h of the smallest complete binary tree with at least ``size`` leaves."""
    return (size - 1).bit_length()


def log_star_levels(h: int, base_height: int = BASE_H) -> list[int]:
    """Tree heights of the recursion: h, ceil(log2(h+1)), ... until h <= base_height (|X| <= 16)."""
    hs = [h]
    while hs[-1] > base_height:
        hs.append(height(hs[-1] + 1))
    return hs


_U64 = 1 << 64


def _as_values(vals: Any) -> np.ndarray:
    """Sorted distinct non-negative ints as a uint64 array where they fit in 64 bits, else as an
    object array of Python ints (domains up to 2^(2^k): values of any size)."""
    if isinstance(vals, np.ndarray) and vals.dtype.kind in "iu":
        return vals.astype(np.uint64, copy=False)
    seq = vals.tolist() if isinstance(vals, np.ndarray) else list(vals)
    if not seq or int(seq[-1]) < _U64:  # sorted: the last value is the largest
        return np.array(seq, dtype=np.uint64)
    out = np.empty(len(seq), dtype=object)
    out[:] = [int(v) for v in seq]
    return out


class MS:
    """A multiset of non-negative ints as sorted distinct values with multiplicities.

    Held as numpy arrays (``vals`` uint64, or Python ints in an object array past 2^64; ``cnt``
    and the prefix sums ``pre`` int64), so trimming, capping and a level's node weights cost a few
    vectorised passes and no Python object per distinct value."""

    def __init__(self, vals: Any, cnt: Any, pre: np.ndarray | None = None) -> None:
        self.vals = _as_values(vals)
        self.cnt = np.asarray(cnt, dtype=np.int64)
        if pre is None:  # ``pre`` (the prefix sums of ``cnt``) when the caller already has them
            pre = np.zeros(len(self.cnt) + 1, dtype=np.int64)
            np.cumsum(self.cnt, out=pre[1:])
        self.pre = pre
        self.n = int(pre[-1])

    def index(self, y: int, side: Literal["left", "right"] = "left", lo: int = 0, hi: int | None = None) -> int:
        """``bisect_left`` (``bisect_right`` for side="right") of the int ``y`` in ``vals[lo:hi]``."""
        v = self.vals
        hi = len(v) if hi is None else hi
        if v.dtype != object:
            if y < 0:
                return lo
            if y >= _U64:
                return hi
            return lo + int(np.searchsorted(v[lo:hi], np.uint64(y), side))
        return lo + int(np.searchsorted(v[lo:hi], y, side))

    def quality(self, y: int) -> int:
        """The interior-point quality q(S, y) = min(#{x <= y}, #{x >= y}) (Kaplan et al. 2020, Algorithm 1)."""
        le = int(self.pre[self.index(y, "right")])
        ge = self.n - int(self.pre[self.index(y)])
        return min(le, ge)

    def max_count(self) -> int:
        """The largest multiplicity (0 for the empty multiset)."""
        return int(self.cnt.max()) if len(self.cnt) else 0

    def _drop_ends(self, lo: int, hi: int) -> MS:
        """Remove the ``lo`` smallest and ``hi`` largest elements."""
        if lo + hi >= self.n:
            return MS([], [])
        pre, keep_end = self.pre, self.n - hi  # keep the elements of ranks lo .. keep_end - 1 (from 0)
        a = int(np.searchsorted(pre, lo, "right")) - 1  # the value holding rank lo
        b = int(np.searchsorted(pre, keep_end, "left"))  # one past the value holding rank keep_end - 1
        cnt = self.cnt[a:b].copy()
        cnt[0] -= lo - int(pre[a])
        cnt[-1] -= int(pre[b]) - keep_end
        kept = pre[a:b + 1] - lo  # the kept elements' prefix sums: ranks shift by lo, the ends cut
        kept[0], kept[-1] = 0, keep_end - lo
        return MS(self.vals[a:b], cnt, kept)

    def trim(self, t: int) -> MS:
        """Remove the t smallest and t largest elements."""
        if 2 * t >= self.n:
            return MS([], [])
        return self._drop_ends(t, t)

    def cap(self, size: int) -> MS:
        """At most ``size`` elements: drop ceil(k/2) smallest and floor(k/2) largest, k = n - size.

        A data-independent policy (the declared public size is the only input besides the data):
        for add/remove or replace neighbors S, S' the capped multisets are identical, add/remove
        neighbors, or differ by one replacement (docs/notes/interior_point.md, "the cap")."""
        k = self.n - size
        if k <= 0:
            return self
        return self._drop_ends((k + 1) // 2, k // 2)

    def level_weights(self, h: int, level: int) -> tuple[np.ndarray, np.ndarray]:
        """Nodes at ``level`` with positive weight: (node indices, weights), as arrays. Where the
        values span fewer nodes than an eighth of them (the shallow levels), each node's weight is a
        difference of prefix sums at its first value, found by binary search: no pass over the values."""
        shift, v = h - level, self.vals
        if len(v) and v.dtype != object and shift < 64:
            first, last = int(v[0]) >> shift, int(v[-1]) >> shift
            if last - first < len(v) // 8:
                nodes = np.arange(first, last + 1, dtype=np.uint64)
                cuts = np.searchsorted(v, nodes[1:] << np.uint64(shift))  # each later node's first value
                bounds = np.concatenate(([0], cuts, [len(v)]))
                w = self.pre[bounds[1:]] - self.pre[bounds[:-1]]
                return nodes[w > 0], w[w > 0]
        j: np.ndarray
        if v.dtype == object:
            j = v >> shift
        elif shift >= 64:
            j = np.zeros(len(v), dtype=np.uint64)
        else:
            j = v >> np.uint64(shift)
        if not len(j):
            return j, self.cnt
        starts = np.flatnonzero(np.concatenate(([True], j[1:] != j[:-1])))
        return j[starts], np.add.reduceat(self.cnt, starts)


def path_and_D(ms_hat: MS, h: int, t: int, n: int, chooser: Chooser) -> MS:
    """Steps 4-5 of Algorithm 1 (and of ConstructPaths / OneRandomPath): the path and the database D.

    ``chooser(w0, w1)`` returns the child (0/1) to follow when both children have positive weight.
    D has exactly n - 3t elements: the fall-off counts per level, the last node's level filling up.
    The points of the current node are ``vals[i0:i1]`` (a child's are a part of its parent's, found
    by one bisection inside them), so a step costs one bisection over the node's points and one
    shift, whatever the height (values of 2^16 bits included). D is a few levels: Python lists.
    """
    total = n - 3 * t
    d_vals: list[int] = []
    d_cnt: list[int] = []
    size = 0
    level, j = 0, 0
    vals, pre = ms_hat.vals, ms_hat.pre
    i0 = 0  # values are non-negative
    i1 = ms_hat.index(1 << h)
    while size < total:
        w = int(pre[i1] - pre[i0])  # the node's weight: #{x in ms_hat below it}
        if level == h or w <= t:
            d_vals.append(level)
            d_cnt.append(total - size)
            size = total
            break
        # levels where every point of the node lies in one child have fall-off 0 and a forced step
        # (Algorithm 1 step 4c, "if one of them has weight 0 proceed to the other child"): jump
        # straight to the level where the node's smallest and largest points separate (or the leaf)
        u_min, u_max = int(vals[i0]), int(vals[i1 - 1])
        split = h if u_min == u_max else h - (u_min ^ u_max).bit_length()
        if split > level:
            level, j = split, u_min >> (h - split)
            continue
        mid = ms_hat.index((2 * j + 1) << (h - level - 1), "left", i0, i1)  # the right child's first point
        w0 = int(pre[mid] - pre[i0])
        w1 = w - w0
        if w0 == 0:
            b = 1
        elif w1 == 0:
            b = 0
        else:
            b = chooser(w0, w1)
        other = w1 if b == 0 else w0
        add = min(other, total - size)
        if add > 0:
            d_vals.append(level)
            d_cnt.append(add)
            size += add
        level, j = level + 1, 2 * j + b
        i0, i1 = (i0, mid) if b == 0 else (mid, i1)
    return MS(d_vals, d_cnt)


def _four_candidates(h: int, level: int, j: int) -> list[int]:
    s = h - level
    left, right = j << s, ((j + 1) << s) - 1
    if s == 0:
        return [left]
    mid = (2 * j + 1) << (s - 1)
    return [left, right, mid - 1, mid]


def best_of_four(ms: MS, h: int, level: int, j: int, eps: float, src: RandomSource) -> int:
    """Steps 8-9 of Algorithm 1: the exponential mechanism with q(S, y) over v_left, v_right,
    v_inner-left and v_inner-right of node j at ``level`` (pure eps)."""
    cands = _four_candidates(h, level, j)
    k = exponential_mechanism([ms.quality(y) for y in cands], epsilon=eps, rng=src)
    return cands[k]


def choose_node(ms_hat: MS, h: int, level: int, eps: float, delta: float, src: RandomSource) -> int | None:
    """Step 7 of Algorithm 1: the Choosing Mechanism (k = 1) for a node at ``level`` of T with
    large weight; None is its bottom."""
    idx, w = ms_hat.level_weights(h, level)
    c = choosing_mechanism(w, epsilon=eps, delta=delta, k=1, rng=src)
    return None if c is None else int(idx[c])


def random_chooser(eps: float, src: RandomSource) -> Chooser:
    """Algorithm 1 step 4c: child b with probability proportional to b^(w_b), base <= e^eps."""
    base = exp_lower_rational(Fraction(eps))

    def choose(w0: int, w1: int) -> int:
        m = max(w0, w1)
        return sample_exponential_index(src, [1, 1], [m - w0, m - w1], base)

    return choose


def heavy_chooser(w0: int, w1: int) -> int:
    """ConstructPaths step 4c: the heavier child, ties to the left."""
    return 0 if w0 >= w1 else 1
