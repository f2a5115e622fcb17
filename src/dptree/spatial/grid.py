"""The public grid of a 2-D range tree: two ordered domains, padded to 2^L x 2^L cells in Morton order.

Cell (i, j) (bucket i of x, bucket j of y) is leaf ``morton(i, j)`` of a 4-ary tree: the bits of
i and j interleaved (Morton 1966; the Z-order curve), so the 4^(L-l) leaves under a node of level
l are one square of side 2^(L-l) and the quadtree of Finkel & Bentley (1974) over the grid is the
regular 4-ary tree over the Morton-ordered leaves (:func:`dptree.rangetree.layout.build_layout`
with branching 4). Each axis is padded on its high side to 2^L buckets; the padding cells hold no
records. Everything here is public.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from dptree.data.domain import Domain, make_domain
from dptree.errors import DomainError, InvalidParameterError

__all__ = ["Grid", "make_grid", "morton", "unmorton", "MAX_SIDE"]

#: the largest side of the padded grid (4^13 = 2^26 cells, the 1-D tree's largest domain)
MAX_SIDE = 1 << 13


def _spread(v: np.ndarray) -> np.ndarray:
    """The bits of ``v`` (< 2^16) moved to the even positions (bit k to bit 2k)."""
    v = np.asarray(v, dtype=np.uint64) & np.uint64(0xFFFF)
    v = (v | (v << np.uint64(8))) & np.uint64(0x00FF00FF)
    v = (v | (v << np.uint64(4))) & np.uint64(0x0F0F0F0F)
    v = (v | (v << np.uint64(2))) & np.uint64(0x33333333)
    return (v | (v << np.uint64(1))) & np.uint64(0x55555555)


def _compact(v: np.ndarray) -> np.ndarray:
    """The inverse of :func:`_spread`: the even bits of ``v`` packed down."""
    v = np.asarray(v, dtype=np.uint64) & np.uint64(0x55555555)
    v = (v | (v >> np.uint64(1))) & np.uint64(0x33333333)
    v = (v | (v >> np.uint64(2))) & np.uint64(0x0F0F0F0F)
    v = (v | (v >> np.uint64(4))) & np.uint64(0x00FF00FF)
    return (v | (v >> np.uint64(8))) & np.uint64(0xFFFF)


def morton(i: Any, j: Any) -> np.ndarray:
    """The Morton code of cells (i, j): y's bits in the odd positions, x's in the even (int64)."""
    return (_spread(i) | (_spread(j) << np.uint64(1))).astype(np.int64)


def unmorton(code: Any) -> tuple[np.ndarray, np.ndarray]:
    """(i, j) of Morton codes (:func:`morton`'s inverse)."""
    c = np.asarray(code, dtype=np.uint64)
    return _compact(c).astype(np.int64), _compact(c >> np.uint64(1)).astype(np.int64)


@lru_cache(maxsize=4)
def _morton_order(depth: int) -> np.ndarray:
    side = 1 << depth
    i, j = unmorton(np.arange(side * side))
    order = i * side + j
    order.setflags(write=False)
    return order


@dataclass(frozen=True)
class Grid:
    """The x and y domains and the depth L of the quadtree over their 2^L x 2^L padded grid."""

    x: Domain
    y: Domain
    depth: int

    @property
    def side(self) -> int:
        return 1 << self.depth

    @property
    def cells(self) -> int:
        """Leaves of the quadtree, padding included: 4^L."""
        return self.side * self.side

    @property
    def sides(self) -> tuple[int, ...]:
        """The side, in buckets, of a node of level l = 0 (root) .. L (one cell)."""
        return tuple(1 << (self.depth - lvl) for lvl in range(self.depth + 1))

    def morton_order(self) -> np.ndarray:
        """``order[m]`` = the row-major index i * side + j of the cell with Morton code m (read-only,
        computed once per depth)."""
        return _morton_order(self.depth)

    def cell_ranges(self, domain: Domain, lo: Any, hi: Any, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The buckets [a, b] of ``domain`` whose values the query [lo, hi] selects (bucket
        resolution, as a 1-D range tree), clipped to the domain; ``empty`` where none."""
        qlo, qhi = domain._query_array(lo), domain._query_array(hi)
        try:
            qlo, qhi = np.broadcast_arrays(np.atleast_1d(qlo), np.atleast_1d(qhi))
        except ValueError:
            raise InvalidParameterError(f"the {what} ends must have the same length (or be single values)") from None
        if np.any(qlo > qhi):
            raise InvalidParameterError(f"count needs {what}_lo <= {what}_hi")
        a, b = np.broadcast_arrays(np.atleast_1d(domain.leaf_from(lo)), np.atleast_1d(domain.leaf_of(hi)))
        a, b = np.clip(a, 0, domain.size), np.clip(b, -1, domain.size - 1)
        empty = a > b
        return np.where(empty, 0, a), np.where(empty, 0, b), empty

    def rectangles(self, x: Any, y: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The cells [ax, bx] x [ay, by] that the rectangles ``x`` = (x_lo, x_hi), ``y`` = (y_lo,
        y_hi) select (ends single values or arrays of one length), and whether each is empty."""
        for name, v in (("x", x), ("y", y)):
            if not isinstance(v, (tuple, list)) or len(v) != 2:
                raise InvalidParameterError(f"{name} must be a pair ({name}_lo, {name}_hi), e.g. {name}=(0, 10)",
                                            parameter=name)
        ax, bx, ex = self.cell_ranges(self.x, x[0], x[1], "x")
        ay, by, ey = self.cell_ranges(self.y, y[0], y[1], "y")
        try:
            ax, bx, ex, ay, by, ey = np.broadcast_arrays(ax, bx, ex, ay, by, ey)
        except ValueError:
            raise InvalidParameterError("the x and y ends must have the same length (or be single values)") from None
        return ax, bx, ay, by, ex | ey

    def describe(self) -> dict[str, Any]:
        return {"depth": self.depth, "side": self.side, "x_size": self.x.size, "y_size": self.y.size}


def make_grid(lower: Any, upper: Any, width: Any = None) -> Grid:
    """The grid of ``lower`` = (x0, y0), ``upper`` = (x1, y1) and ``width`` (one width for both
    axes, or a pair), checked before any data is read."""
    pairs = {}
    for name, v in (("lower", lower), ("upper", upper)):
        if not isinstance(v, (tuple, list)) or len(v) != 2:
            raise InvalidParameterError(f"{name} must be a pair (x, y), e.g. {name}=(0, 0)", parameter=name)
        pairs[name] = tuple(v)
    widths = tuple(width) if isinstance(width, (tuple, list)) else (width, width)
    if len(widths) != 2:
        raise InvalidParameterError("width must be one number or a pair (x, y)", parameter="width")
    doms = [make_domain(pairs["lower"][k], pairs["upper"][k], widths[k]) for k in range(2)]
    for axis, dom in zip("xy", doms):
        if dom.kind == "datetime":
            raise DomainError(f"the {axis} axis of a 2-D range tree must be numbers, not dates", parameter="lower")
        if dom.size > MAX_SIDE:
            raise DomainError(f"the {axis} axis has {dom.size} buckets, more than {MAX_SIDE}: choose a larger "
                              "width (a float axis needs a width)", parameter="width")
    depth = max(1, max(d.size for d in doms) - 1).bit_length()
    return Grid(doms[0], doms[1], depth)
