"""The b-ary layout of a range tree over D leaves.

Levels are numbered from the root (level 0) to the leaves (level L). Every node of level j
covers ``block_sizes[j]`` consecutive leaves. When D is not a power of b the remainder fan-out
goes to the bottom (the parents of the leaves have r <= b children) instead of padding the top:
D is padded to r * b^k >= D with the smallest such k, and the padding leaves (which never hold
data) are measured like the others. DESIGN section 4 measured this layout to beat top padding.

The binary tree mechanism uses b = 2; Smith & Ullman 2021, footnote 2, note that a larger branching factor is better
in practice.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

import numpy as np

from dptree._validation import Interval, validate_params
from dptree.errors import DomainError, InvalidParameterError
from dptree.estimation.least_squares import block_sums

__all__ = ["TreeLayout", "build_layout"]


@dataclass(frozen=True)
class TreeLayout:
    """Shape of a b-ary tree: ``fanouts[j]`` children per node of level j (j = 0 .. L-1)."""

    domain_size: int
    branching: int
    fanouts: tuple[int, ...]

    @property
    def depth(self) -> int:
        """L: the number of edges on a root-to-leaf path (levels are 0 .. L)."""
        return len(self.fanouts)

    @property
    def padded_size(self) -> int:
        return int(np.prod(self.fanouts, dtype=np.int64))

    @property
    def block_sizes(self) -> tuple[int, ...]:
        """s_j, the number of leaves under one node of level j (s_L = 1)."""
        sizes = [1]
        for f in reversed(self.fanouts):
            sizes.append(sizes[-1] * f)
        return tuple(reversed(sizes))

    @property
    def level_sizes(self) -> tuple[int, ...]:
        """Number of nodes on each level (1 at the root, padded_size at the leaves)."""
        p = self.padded_size
        return tuple(p // s for s in self.block_sizes)

    @property
    def num_nodes(self) -> int:
        return int(sum(self.level_sizes))

    def level_counts(self, leaf_counts: np.ndarray) -> list[np.ndarray]:
        """True counts of every node, level by level (root first), from the leaf histogram.

        A 2-D ``leaf_counts`` of shape (trees, padded_size) holds one histogram per tree (a forest
        of trees of this layout, e.g. one per group): level j then has shape (trees, nodes of j)."""
        if leaf_counts.ndim not in (1, 2) or leaf_counts.shape[-1] != self.padded_size:
            raise InvalidParameterError("leaf histogram has the wrong length for this layout")
        lead = leaf_counts.shape[:-1]
        leaves = leaf_counts.astype(np.int64, copy=False)
        levels = [leaves]
        flat = leaves.reshape(-1)  # a block of fanout children never crosses two trees
        for f in reversed(self.fanouts):
            flat = block_sums(flat, f, np.int64)
            levels.append(flat.reshape(lead + (-1,)))
        return list(reversed(levels))

    def describe(self) -> dict[str, object]:
        return {"branching": self.branching, "fanouts": list(self.fanouts), "domain_size": self.domain_size}


@validate_params({"branching": [Interval(Integral, 2, None)]})
def build_layout(domain_size: int, branching: int) -> TreeLayout:
    """Layout with fan-out ``branching`` on every level but the lowest, which takes the remainder."""
    b = int(branching)
    d = int(domain_size)
    if d < 2:
        raise DomainError("a range tree needs at least two leaves")
    k = 0
    while b ** (k + 1) < d:
        k += 1
    full = b**k
    r = -(-d // full)  # ceil(d / b^k), in 2..b
    fanouts = tuple([b] * k + [r]) if r > 1 else tuple([b] * k)
    return TreeLayout(domain_size=d, branching=b, fanouts=fanouts)
