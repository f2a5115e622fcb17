"""Multisets on [0, 2^h) and the binary tree over them: the shared steps of TreeLog and HeavyPaths.

Seed 002 (``002_2f350810784938f5.txt``) runs every tree algorithm on the complete binary tree T
over the domain X = [0, 2^h): the weight of a node is the number of records below it. Here:

* :class:`MS` -- a multiset as sorted distinct values with multiplicities (trimming, the cap at a
  declared size, node weights per level);
* :func:`path_and_D` -- steps 4-5 of Algorithm 1 (shared by ConstructPaths and OneRandomPath): the
  path down T and the database D of fall-off levels;
* :func:`choose_node` / :func:`best_of_four` -- steps 7-9 of Algorithm 1 (Choosing Mechanism for
  a heavy node, then the exponential mechanism over its four candidate points).
"""

from __future__ import annotations

import bisect
from fractions import Fraction
from typing import Callable

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


class MS:
    """A multiset of non-negative ints as sorted distinct values with multiplicities."""

    def __init__(self, vals: list[int], cnt: list[int]) -> None:
        self.vals = vals
        self.cnt = cnt
        pre = [0]
        for c in cnt:
            pre.append(pre[-1] + c)
        self.pre = pre
        self.n = pre[-1]

    def quality(self, y: int) -> int:
        """The interior-point quality q(S, y) = min(#{x <= y}, #{x >= y}) (seed 002, Algorithm 1)."""
        le = self.pre[bisect.bisect_right(self.vals, y)]
        ge = self.n - self.pre[bisect.bisect_left(self.vals, y)]
        return min(le, ge)

    def _drop_ends(self, lo: int, hi: int) -> MS:
        """Remove the ``lo`` smallest and ``hi`` largest elements (lo + hi < n)."""
        vals, cnt = list(self.vals), list(self.cnt)
        for side, rem in ((0, lo), (1, hi)):
            while rem > 0:
                i = 0 if side == 0 else len(cnt) - 1
                take = min(rem, cnt[i])
                cnt[i] -= take
                rem -= take
                if cnt[i] == 0:
                    vals.pop(i)
                    cnt.pop(i)
        return MS(vals, cnt)

    def trim(self, t: int) -> MS:
        """Remove the t smallest and t largest elements."""
        if 2 * t >= self.n:
            return MS([], [])
        return self._drop_ends(t, t)

    def cap(self, size: int) -> MS:
        """At most ``size`` elements: drop ceil(k/2) smallest and floor(k/2) largest, k = n - size.

        A data-independent policy (the declared public size is the only input besides the data):
        for add/remove or replace neighbors S, S' the capped multisets are identical, add/remove
        neighbors, or differ by one replacement (docs/interior_point.md, "the cap")."""
        k = self.n - size
        if k <= 0:
            return self
        return self._drop_ends((k + 1) // 2, k // 2)

    def level_weights(self, h: int, level: int) -> tuple[list[int], list[int]]:
        """Nodes at ``level`` with positive weight: (node indices, weights)."""
        shift = h - level
        idx: list[int] = []
        w: list[int] = []
        for v, c in zip(self.vals, self.cnt):
            j = v >> shift
            if idx and idx[-1] == j:
                w[-1] += c
            else:
                idx.append(j)
                w.append(c)
        return idx, w


def path_and_D(ms_hat: MS, h: int, t: int, n: int, chooser: Chooser) -> MS:
    """Steps 4-5 of Algorithm 1 (and of ConstructPaths / OneRandomPath): the path and the database D.

    ``chooser(w0, w1)`` returns the child (0/1) to follow when both children have positive weight.
    D has exactly n - 3t elements: the fall-off counts per level, the last node's level filling up.
    The points of the current node are ``vals[i0:i1]`` (a child's are a part of its parent's, found
    by one bisection inside them), so a step costs one bisection over the node's points and one
    shift, whatever the height (values of 2^16 bits included).
    """
    total = n - 3 * t
    d_vals: list[int] = []
    d_cnt: list[int] = []
    size = 0
    level, j = 0, 0
    vals, pre = ms_hat.vals, ms_hat.pre
    i0 = bisect.bisect_left(vals, 0)
    i1 = bisect.bisect_left(vals, 1 << h, i0)
    while size < total:
        w = pre[i1] - pre[i0]  # the node's weight: #{x in ms_hat below it}
        if level == h or w <= t:
            d_vals.append(level)
            d_cnt.append(total - size)
            size = total
            break
        # levels where every point of the node lies in one child have fall-off 0 and a forced step
        # (Algorithm 1 step 4c, "if one of them has weight 0 proceed to the other child"): jump
        # straight to the level where the node's smallest and largest points separate (or the leaf)
        u_min, u_max = vals[i0], vals[i1 - 1]
        split = h if u_min == u_max else h - (u_min ^ u_max).bit_length()
        if split > level:
            level, j = split, u_min >> (h - split)
            continue
        mid = bisect.bisect_left(vals, (2 * j + 1) << (h - level - 1), i0, i1)  # the right child's first point
        w0 = pre[mid] - pre[i0]
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
    return None if c is None else idx[c]


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
