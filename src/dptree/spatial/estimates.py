"""The estimates behind every 2-D range-tree answer: least-squares cell counts and exact rectangle errors.

The cells' least-squares estimates are Honaker's (2015) two passes on the regular 4-ary tree of
the Morton-ordered cells (:func:`dptree.estimation.least_squares.regular_passes`); a rectangle's
count is then four lookups in their 2-D prefix sums. The padding cells beyond the domain are
measured like the others and estimated, never counted in an answer; the estimator does not
condition on their being empty (the 1-D tree does, :mod:`dptree.rangetree.estimates`), so it is
the least-squares estimate of the measured tree, unbiased, with the variance computed here.

A rectangle R is a set of leaves, and the covariance of two leaf estimates of a regular tree
with one noise variance per level depends only on the level of their lowest common ancestor, so
Var(R) = sum_j (a_j - a_{j-1}) / Lambda_j with a_j = sum over level-j nodes B of |R cap B|^2 / s_j
(:func:`~dptree.estimation.least_squares.block_sum_variance`). A level-j node is a square of side
2^(L-j), so |R cap B| is the product of the overlaps of R's two sides with B's, and a_j is the
product of the two sides' 1-D a_j over blocks of side 2^(L-j)
(:func:`~dptree.estimation.least_squares.prefix_block_sums`): O(L) per rectangle, exact (tested
against the dense covariance of the least-squares estimate). Everything here is post-processing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dptree.estimation.intervals import gamma_shape, multiplier
from dptree.estimation.least_squares import block_sum_variance, prefix_block_sums, regular_passes
from dptree.spatial.grid import Grid
from dptree.spatial.moments import rectangle_moments

__all__ = ["GridEstimates", "rectangle_variance"]


def rectangle_variance(grid: Grid, level_var: np.ndarray, ax: np.ndarray, bx: np.ndarray, ay: np.ndarray,
                       by: np.ndarray) -> np.ndarray:
    """Exact variance of the least-squares count of the cell rectangles [ax, bx] x [ay, by] (module docstring)."""
    sides = grid.sides
    a = prefix_block_sums(sides, np.ravel(ax), np.ravel(bx)) * prefix_block_sums(sides, np.ravel(ay), np.ravel(by))
    blocks = [s * s for s in sides]
    return np.maximum(block_sum_variance(blocks, level_var, a), 0.0).reshape(np.shape(ax))


class GridEstimates:
    """The least-squares estimates of a quadtree's cells (``measurements``: the noisy counts of every
    level, Morton order; None where not measured) and the exact error of any rectangle of cells.
    Without measurements (None) only the errors, which do not depend on the data."""

    def __init__(self, grid: Grid, noise: str, level_variance: np.ndarray,
                 measurements: list[np.ndarray | None] | None) -> None:
        self.grid, self.noise, self.level_variance = grid, noise, np.asarray(level_variance, dtype=np.float64)
        self.cum: np.ndarray | None = None
        if measurements is None:
            return
        side = grid.side
        leaf = regular_passes(measurements, [float(v) for v in self.level_variance], (4,) * grid.depth).x[0]
        cells = np.empty(grid.cells)
        cells[grid.morton_order()] = leaf
        #: cum[i, j] = the estimated records in x buckets < i and y buckets < j (padding excluded)
        cum = np.zeros((grid.x.size + 1, grid.y.size + 1))
        np.cumsum(np.cumsum(cells.reshape(side, side)[: grid.x.size, : grid.y.size], axis=0), axis=1,
                  out=cum[1:, 1:])
        self.cum = cum

    @property
    def cells(self) -> np.ndarray:
        """The estimate of every cell of the domain, shape (x buckets, y buckets)."""
        assert self.cum is not None
        return np.diff(np.diff(self.cum, axis=0), axis=1)

    def counts(self, ax: np.ndarray, bx: np.ndarray, ay: np.ndarray, by: np.ndarray, empty: np.ndarray) -> np.ndarray:
        """Estimated counts of the cell rectangles [ax, bx] x [ay, by] (0 where ``empty``)."""
        assert self.cum is not None
        c = self.cum
        return np.where(empty, 0.0, c[bx + 1, by + 1] - c[ax, by + 1] - c[bx + 1, ay] + c[ax, ay])

    def variances(self, ax: np.ndarray, bx: np.ndarray, ay: np.ndarray, by: np.ndarray,
                  empty: np.ndarray) -> np.ndarray:
        """Exact variances of :meth:`counts`."""
        return np.where(empty, 0.0, rectangle_variance(self.grid, self.level_variance, ax, bx, ay, by))

    def spread(self, ax: np.ndarray, bx: np.ndarray, ay: np.ndarray, by: np.ndarray, empty: np.ndarray,
               level: float) -> tuple[np.ndarray, np.ndarray]:
        """(standard error, interval multiplier at ``level``): the normal quantile for Gaussian
        noise; for Laplace noise the variance-gamma quantile at the rectangle's exact error moments
        (:func:`~dptree.spatial.moments.rectangle_moments`, :mod:`dptree.estimation.intervals`), as
        the 1-D tree's intervals: a cell whose error is mostly its own Laplace noise gets the wider
        multiplier its heavier tails need."""
        s = np.sqrt(self.variances(ax, bx, ay, by, empty))
        if self.noise == "gaussian":
            return s, np.broadcast_to(multiplier("gaussian", level), s.shape)
        v1, v2 = rectangle_moments(self.grid.depth, self.level_variance, ax, bx, ay, by)
        return s, multiplier("laplace", level, gamma_shape(v1, v2)).reshape(s.shape)

    def stderr_of(self, grid: Grid, x: tuple[Any, Any], y: tuple[Any, Any]) -> Any:
        """The standard error of the rectangle ``x`` = (x_lo, x_hi), ``y`` = (y_lo, y_hi) in domain units."""
        ax, bx, ex = grid.cell_ranges(grid.x, x[0], x[1], "x")
        ay, by, ey = grid.cell_ranges(grid.y, y[0], y[1], "y")
        ax, bx, ex, ay, by, ey = np.broadcast_arrays(ax, bx, ex, ay, by, ey)
        sd = np.sqrt(self.variances(ax, bx, ay, by, ex | ey))
        return float(sd[0]) if sd.size == 1 and all(np.ndim(v) == 0 for v in (*x, *y)) else sd
