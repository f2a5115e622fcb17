"""The sparse range tree's mechanism: a b-ary tree over 2^bits keys, measured top-down, expanded
only where a noisy count says there is mass.

**Algorithm** (in the spirit of Google's pruned quantile tree and of the adaptive trees of
PrivTree, Zhang, Xiao, Xie, SIGMOD 2016). Depth 0 is the root (all keys; never measured). Level
d = 1..L holds nodes of 2^shift[d] keys. The measured set M_1 is every child of the root; for
d >= 1 a node of M_d is *expanded* when d < ``dense_depth`` (the top levels are noised in full),
or when d < L and its noisy count y_v >= theta_d; M_{d+1} is every child of every expanded node,
empty or not, and each gets y_v = c_v + Z_v with Z_v ~ DLap(lambda_d) (exact discrete Laplace,
:mod:`dptree.noise`). The expansion rule reads only the noisy counts of level d.

**Privacy** (add/remove one person with at most k records; docs/privacy.md, "Sparse range trees").
Fix the outputs y_1..y_{d-1} of the levels above. They determine M_d (post-processing), the same
set for both neighbours. The nodes of M_d are disjoint key ranges, so adding or removing k records
changes the count vector (c_v)_{v in M_d} by at most k in L1: level d alone is (k/lambda_d)-DP
(Laplace mechanism). The release is the adaptive sequential composition of the L levels (each
chosen from the previous outputs only), so it is (sum_d k/lambda_d)-DP = epsilon-DP for
lambda_d = k L / epsilon (uniform split; every level is charged whether or not anything below the
top is expanded, so the budget does not depend on the data). The measured set is part of the
output, and it costs nothing beyond the counts it is computed from.

**Cost.** The keys are sorted once; the counts of a level are found by binary search of its node
boundaries, so time and memory grow with n log n and with the number of measured nodes (about
b n / theta at the deepest busy level), not with 2^bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dptree import noise as _noise

__all__ = ["SparseLayout", "Level", "node_counts", "children", "expanded", "measure_levels", "default_threshold"]


@dataclass(frozen=True)
class SparseLayout:
    """The public shape of the tree: 2^bits leaves (single keys), ``branching`` = 2^s children per
    node (the root may have fewer: its fan-out takes the remainder bits), levels 1..depth."""

    bits: int
    branching: int

    @property
    def step(self) -> int:
        return self.branching.bit_length() - 1

    @property
    def depth(self) -> int:
        """L, the number of levels below the root (the last one holds single keys)."""
        return -(-self.bits // self.step)

    @property
    def shifts(self) -> tuple[int, ...]:
        """shift[d]: a node of level d covers 2^shift[d] keys (d = 0 .. L; shift[L] = 0)."""
        L, s = self.depth, self.step
        return (self.bits,) + tuple(s * (L - d) for d in range(1, L + 1))

    def fanout(self, d: int) -> int:
        """Children of a node of level d."""
        sh = self.shifts
        return 1 << (sh[d] - sh[d + 1])


@dataclass
class Level:
    """The measured nodes of one level: sorted node indices and their noisy counts."""

    index: np.ndarray  # uint64, sorted
    noisy: np.ndarray  # int64


def default_threshold(scale: Fraction, branching: int) -> int:
    """theta = ceil(lambda ln(4 b)): an empty node is expanded with probability about 1/(8b), so
    the expected number of noise-only expansions shrinks by 8 per level (a subcritical branching
    process), while a node holding 2 theta records is expanded almost surely."""
    return max(1, math.ceil(float(scale) * math.log(4 * branching)))


def node_counts(keys: np.ndarray, index: np.ndarray, shift: int) -> np.ndarray:
    """Exact number of ``keys`` (sorted uint64) in each node ``index`` (sorted) of 2^shift keys."""
    n = keys.size
    if index.size == 0:
        return np.zeros(0, dtype=np.int64)
    sh = np.uint64(shift)
    left = np.searchsorted(keys, index << sh, side="left")
    right = np.empty_like(left)
    nxt = index[:-1] + np.uint64(1)
    consecutive = index[1:] == nxt
    right[:-1] = left[1:]
    ends = np.flatnonzero(~consecutive).tolist() + [index.size - 1]
    last = index[ends]
    wraps = last == np.uint64((1 << (64 - shift)) - 1)  # the last node of 2^64 keys: its end would wrap
    stop = np.where(wraps, np.uint64(0), last + np.uint64(1)) << sh
    right[ends] = np.where(wraps, n, np.searchsorted(keys, stop, side="left"))
    return (right - left).astype(np.int64)


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


def measure_levels(keys: np.ndarray, layout: SparseLayout, scales: list[Fraction], thresholds: list[int],
                   dense_depth: int, source: _noise.RandomSource, *, roots: int = 1) -> list[Level]:
    """Run the mechanism on sorted uint64 offsets ``keys``: the measured levels 1..L.

    ``roots`` > 1 runs independent copies at once (the audit): copy i's keys are offset by
    i * 2^bits and its nodes hang under root i (bits + log2(roots) must fit 64 bits).
    """
    out: list[Level] = []
    parents = np.arange(roots, dtype=np.uint64)
    for d in range(1, layout.depth + 1):
        idx = children(parents, layout.fanout(d - 1))
        c = node_counts(keys, idx, layout.shifts[d])
        y = c + _noise.discrete_laplace(source, scales[d - 1], idx.size).astype(np.int64)
        lev = Level(idx, y)
        out.append(lev)
        parents = expanded(lev, d, layout, dense_depth, thresholds[d - 1])
    return out
