"""Rectangle estimates on a 2-D PrivTree shape (``range_tree_2d(method="privtree")``): post-processing.

The released shape is a quadtree grown by PrivTree's rule over the Morton-ordered cells; its count
tree (:func:`dptree.sparsetree.mechanism.count_tree`) partitions the Morton keys into *leaves*,
ranges of keys [s, l], each a union of quadtree squares. Honaker's (2015) least squares on that
irregular tree (:class:`dptree.sparsetree.estimates.MeasuredTree`) estimates every leaf's count.

A rectangle R takes, from each leaf c, the fraction |R cap c| / |c cap D| of its estimate (D: the
cells of the domain; padding cells are public and hold no records): the records of a leaf are
assumed spread uniformly over its cells. That assumption is the only bias of an answer: where R
cuts a leaf, the true count of R cap c lies anywhere in [0, c's count], so the interval
(:meth:`ShapeEstimates.answer`) widens by the fraction of the leaf's count R may miss or take,
with the count bounded by the upper interval end of the leaf's estimate (as the 1-D sparse tree,
:meth:`~dptree.sparsetree.estimates.MeasuredTree.spread_bound`). The standard error is the exact
one of the least-squares part: the estimate is linear in the noisy counts with weights W[c] =
|R cap c| / |c cap D| on the leaves, and :meth:`~dptree.sparsetree.estimates.MeasuredTree.moments`
runs the adjoint of the two passes on W.

|R cap [s, l]| is P_R(l + 1) - P_R(s) with P_R(m) = the cells of R whose Morton code is below m,
read digit by digit from the top of the quadtree: at each level the quadrants before m's digit
are whole squares, whose overlap with R is the product of the two sides' overlaps (O(L) per
range and rectangle).
"""

from __future__ import annotations

import numpy as np

from dptree.estimation.intervals import gamma_shape, multiplier
from dptree.sparsetree.estimates import MeasuredTree
from dptree.spatial.grid import Grid, morton

__all__ = ["ShapeEstimates", "morton_below"]

_CHUNK = 2_000_000  # leaves x queries per block of weights


def _overlap(start: np.ndarray, side: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum(np.minimum(start + side - 1, b) - np.maximum(start, a) + 1, 0)


def morton_below(depth: int, m: np.ndarray, ax: np.ndarray, bx: np.ndarray, ay: np.ndarray, by: np.ndarray
                 ) -> np.ndarray:
    """The number of cells of the rectangles [ax, bx] x [ay, by] whose Morton code is below ``m``
    (0 <= m <= 4^depth; all arguments broadcast), as int64."""
    m = np.asarray(m, dtype=np.int64)
    full = m >= (1 << (2 * depth))
    mm = np.where(full, 0, m)
    ox = np.zeros(np.broadcast(mm, ax).shape, dtype=np.int64)
    oy = np.zeros_like(ox)
    out = np.zeros_like(ox)
    for t in range(depth - 1, -1, -1):
        half = 1 << t
        d = (mm >> (2 * t)) & 3
        for q in range(3):  # quadrant q = x bit + 2 y bit, before the digit d
            qx, qy = ox + (q & 1) * half, oy + (q >> 1) * half
            out += np.where(q < d, _overlap(qx, half, ax, bx) * _overlap(qy, half, ay, by), 0)
        ox, oy = ox + (d & 1) * half, oy + (d >> 1) * half
    whole = (bx - ax + 1) * (by - ay + 1)
    return np.where(full, whole, out)


class ShapeEstimates:
    """The least-squares estimates of a shape's leaves (``tree``) as cell densities, and the exact
    error of any rectangle of cells (module docstring)."""

    def __init__(self, grid: Grid, tree: MeasuredTree) -> None:
        self.grid, self.tree = grid, tree
        L, t = grid.depth, tree
        self.start = t.cell_start.astype(np.int64)
        self.last = t.cell_last.astype(np.int64)
        z = np.zeros(1, dtype=np.int64)
        dom = (z, z + grid.x.size - 1, z, z + grid.y.size - 1)
        #: the cells of the domain in each leaf (the leaf's records are spread over them)
        self.inside = (morton_below(L, self.last + 1, *dom) - morton_below(L, self.start, *dom)).astype(np.float64)
        est = t.cell_est
        with np.errstate(divide="ignore", invalid="ignore"):
            self.density = np.where(self.inside > 0, est / self.inside, 0.0)
        self.leaf_sd = t.cell_sd(np.arange(est.size))
        self._leaf_moments: dict[int, tuple[float, float]] = {}
        # every Morton code's leaf (the leaves partition the 4^L codes), then the cells in row-major order
        per_code = np.repeat(self.density, self.last - self.start + 1)
        cells = np.empty(grid.cells)
        cells[grid.morton_order()] = per_code
        #: cum[i, j] = the estimated records in x buckets < i and y buckets < j (padding excluded)
        self.cum = np.zeros((grid.x.size + 1, grid.y.size + 1))
        np.cumsum(np.cumsum(cells.reshape(grid.side, grid.side)[: grid.x.size, : grid.y.size], axis=0), axis=1,
                  out=self.cum[1:, 1:])

    @property
    def cells(self) -> np.ndarray:
        """The estimate of every cell of the domain, shape (x buckets, y buckets)."""
        return np.diff(np.diff(self.cum, axis=0), axis=1)

    def counts(self, ax: np.ndarray, bx: np.ndarray, ay: np.ndarray, by: np.ndarray, empty: np.ndarray) -> np.ndarray:
        """Estimated counts of the cell rectangles [ax, bx] x [ay, by] (0 where ``empty``)."""
        c = self.cum
        return np.where(empty, 0.0, c[bx + 1, by + 1] - c[ax, by + 1] - c[bx + 1, ay] + c[ax, ay])

    def _weights(self, ax: np.ndarray, bx: np.ndarray, ay: np.ndarray, by: np.ndarray) -> np.ndarray:
        """W[c, q]: the fraction of leaf c's cells inside rectangle q."""
        L = self.grid.depth
        r = [v[None, :] for v in (ax, bx, ay, by)]
        hit = morton_below(L, self.last[:, None] + 1, *r) - morton_below(L, self.start[:, None], *r)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.inside[:, None] > 0, hit / self.inside[:, None], 0.0)

    def _moments_of_leaves(self, leaves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The error moments of the estimates of ``leaves`` (each computed once, by the adjoint)."""
        todo = np.array(sorted(set(int(c) for c in np.unique(leaves)) - set(self._leaf_moments)), dtype=np.int64)
        step = max(1, _CHUNK // max(self.start.size, 1))
        for k0 in range(0, todo.size, step):
            part = todo[k0:k0 + step]
            W = np.zeros((self.start.size, part.size))
            W[part, np.arange(part.size)] = 1.0
            m1, m2 = self.tree.moments(W)
            self._leaf_moments.update({int(c): (float(a), float(b)) for c, a, b in zip(part, m1, m2)})
        got = np.array([self._leaf_moments[int(c)] for c in leaves]).reshape(-1, 2)
        return got[:, 0], got[:, 1]

    def answer(self, ax: np.ndarray, bx: np.ndarray, ay: np.ndarray, by: np.ndarray, empty: np.ndarray,
               level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(estimate, standard error, ci_low, ci_high) of the rectangles (flat arrays): exact moments
        of the least-squares part, the variance-gamma multiplier at ``level``, then the interval
        widened by the uniform-spread bound of every leaf a rectangle cuts (module docstring).

        A rectangle inside one leaf c (Morton codes grow along each axis, so its lowest and highest
        codes are its two corners') is the fraction w of that leaf: moments w^2 v_1(c) and w^4 v_2(c)
        of the leaf's own; any other takes the weights of every leaf."""
        est = self.counts(ax, bx, ay, by, empty)
        Q, C = est.size, self.start.size
        v1, v2, below, above = (np.zeros(Q) for _ in range(4))
        # an upper bound on each leaf's count: the upper end of its estimate's interval at ``level``, >= 0
        bound = np.maximum(self.tree.cell_est + multiplier("laplace", level, np.ones(1)) * self.leaf_sd, 0.0)
        first = np.searchsorted(self.start, morton(ax, ay), side="right") - 1
        one = (first == np.searchsorted(self.start, morton(bx, by), side="right") - 1) & ~empty
        if one.any():
            c = first[one]
            w = (bx[one] - ax[one] + 1) * (by[one] - ay[one] + 1) / self.inside[c]
            m1, m2 = self._moments_of_leaves(c)
            v1[one], v2[one] = w**2 * m1, w**4 * m2
            cut = w < 1.0
            below[one], above[one] = np.where(cut, w * bound[c], 0.0), np.where(cut, (1.0 - w) * bound[c], 0.0)
        rest = np.flatnonzero(~one & ~empty)
        step = max(1, _CHUNK // max(C, 1))
        for q0 in range(0, rest.size, step):
            sl = rest[q0:q0 + step]
            W = self._weights(ax[sl], bx[sl], ay[sl], by[sl])
            v1[sl], v2[sl] = self.tree.moments(W)
            cut = (W > 0) & (W < 1)
            below[sl] = ((cut * W) * bound[:, None]).sum(axis=0)
            above[sl] = ((cut * (1.0 - W)) * bound[:, None]).sum(axis=0)
        se = np.sqrt(np.maximum(v1, 0.0))
        m = multiplier("laplace", level, gamma_shape(v1, v2))
        return est, se, est - m * se - below, est + m * se + above
