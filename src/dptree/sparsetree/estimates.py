"""Estimates on the measured (irregular) tree of a sparse range tree: all post-processing.

The counted ranges form a tree (the root, unmeasured, above depth 1; the children of a counted
range partition it: :func:`dptree.sparsetree.mechanism.count_tree`). Its generalised least-squares estimate is Honaker's two passes on that
tree (:func:`dptree.estimation.least_squares.consistent_estimates` with parents arrays), so every
node estimate is consistent. The counted ranges without counted children (*cells*) partition
the key range; a threshold count is the sum of the cells before the point plus, for the cell that
contains it, the fraction of the cell's keys up to the point times its estimate (which assumes the
cell's records are spread uniformly over its keys; :meth:`MeasuredTree.spread_bound` states what
that can cost otherwise).

Quantiles (and ``cdf(monotone=True)``) read the cells after an empirical-Bayes smoothing of the
count tree's last depth towards a linear trend inside each sibling group
(:func:`smooth_last_depth`): the last depth's cells hold few records and their counts are
mostly noise, while the uniform spread the read-off already assumes inside a cell predicts their
sampling variance. It reads only the noisy counts and the released shape (post-processing) and
keeps every parent's estimate. Counts, ``cdf`` and their error bars stay on the least-squares
estimates.

Error bars are exact for the least-squares part: the estimate of a query is linear in the noisy
counts, sum_u g_u y_u, and :meth:`MeasuredTree.prefix_moments` finds every g_u by running the
two passes backwards (their adjoint, O(nodes) per query), which gives the variance
sum_u g_u^2 sigma_u^2 and the fourth-moment sum used by the interval multiplier
(:mod:`dptree.estimation.intervals`).
"""

from __future__ import annotations

import numpy as np

from dptree.estimation.least_squares import consistent_estimates, node_variances
from dptree.sparsetree.mechanism import Nodes

__all__ = ["MeasuredTree", "smooth_last_depth"]

_CHUNK = 4_000_000  # nodes x queries per adjoint block


class MeasuredTree:
    """Least-squares estimates and exact errors on the count tree of a sparse range tree."""

    def __init__(self, nodes: list[Nodes], variances: list[float], size: int) -> None:
        self.nodes, self.size = nodes, size
        H = self.height = len(nodes)
        self.var = [np.inf] + [float(v) for v in variances[:H]]  # depth 0: the root, not measured
        y = [np.zeros(1)] + [nd.noisy.astype(np.float64) for nd in nodes]
        parents: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] + [nd.parent.astype(np.int64) for nd in nodes]
        self.parents = parents
        tree_parents: list[np.ndarray | None] = [None, *parents[1:]]
        est = consistent_estimates(y, self.var, tree_parents)
        self.x, self.z, self.V = est.x, est.z, est.V
        # lambda: the weight of a node's own measurement in its bottom-up estimate z
        self.has_child = [np.bincount(parents[d + 1], minlength=y[d].size) > 0 if d < H else
                          np.zeros(y[d].size, dtype=bool) for d in range(H + 1)]
        self.lam: list[np.ndarray] = []
        for d in range(H + 1):
            n_d = y[d].size
            VC = np.bincount(parents[d + 1], weights=self.V[d + 1], minlength=n_d) if d < H else np.zeros(n_d)
            s2 = self.var[d]
            if not np.isfinite(s2):
                lam = np.zeros(y[d].size)
            else:
                with np.errstate(divide="ignore", invalid="ignore"):  # exact levels (s2 = 0): z = y
                    lam = np.where(self.has_child[d], np.where(s2 + VC > 0, VC / (s2 + VC), 1.0), 1.0)
            self.lam.append(lam)
        # the cells (counted ranges without counted children), sorted by their first key
        depth = np.concatenate([np.full(int((~self.has_child[d]).sum()), d, dtype=np.int64) for d in range(1, H + 1)]
                               + [np.zeros(0, dtype=np.int64)])
        pos = np.concatenate([np.flatnonzero(~self.has_child[d]) for d in range(1, H + 1)] + [np.zeros(0, np.int64)])
        start = np.concatenate([nodes[d - 1].start[~self.has_child[d]] for d in range(1, H + 1)]
                               + [np.zeros(0, dtype=np.uint64)])
        last = np.concatenate([nodes[d - 1].last[~self.has_child[d]] for d in range(1, H + 1)]
                              + [np.zeros(0, dtype=np.uint64)])
        order = np.argsort(start, kind="stable")
        inside = start[order] <= np.uint64(size - 1)
        order = order[inside]
        self.cell_depth, self.cell_pos, self.cell_start = depth[order], pos[order], start[order]
        #: the last key of every cell inside the domain, exact (a float width rounds past 2^53 keys)
        self.cell_last = np.minimum(last[order], np.uint64(size - 1))
        self.cell_width = _widths(self.cell_start, self.cell_last)  # keys of the cell inside the domain
        self.cell_est = _gather(self.x, self.cell_depth, self.cell_pos)
        self.cum = np.concatenate([[0.0], np.cumsum(self.cell_est)])
        self._node_var: list[np.ndarray] | None = None
        self._monotone: np.ndarray | None = None
        self._smoothed: np.ndarray | None = None

    # ------------------------------------------------------------------ threshold queries
    def locate(self, off: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cell index, fraction of the cell's keys <= off, fraction of its keys > off) of offsets
        inside the domain. Both fractions come from exact integer key counts, so the second is 0
        exactly when ``off`` is the cell's last key, however wide the cell (their float sum may
        differ from 1 by a rounding)."""
        off = np.asarray(off, dtype=np.uint64)
        i = np.searchsorted(self.cell_start, off, side="right") - 1
        w = self.cell_width[i]  # off lies in [start, last] of its cell: neither difference wraps
        before = (off - self.cell_start[i]).astype(np.float64) + 1.0
        after = (self.cell_last[i] - off).astype(np.float64)
        return i, before / w, after / w

    def prefix_parts(self, i: np.ndarray, f: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The estimated number of records up to a point at fractions (f, g) of cell i
        (:meth:`locate`) as (cumulative count at a cell end, share of cell i): from the cell's start
        when f <= 1/2, else back from its end. A range inside one cell then takes the difference of
        the shares alone (the cumulative counts cancel exactly), so a point near either end of a
        wide cell keeps its share of the cell's estimate to full relative precision."""
        c = self.cell_est[i]
        near_end = f > 0.5
        return self.cum[i] + near_end * c, np.where(near_end, -g, f) * c

    def prefix(self, off: np.ndarray) -> np.ndarray:
        """Estimated number of records with offset <= off (uniform spread inside the cut cell)."""
        base, share = self.prefix_parts(*self.locate(off))
        return base + share

    def monotone_cdf(self) -> np.ndarray:
        """The isotonic (non-decreasing, non-negative) fit of the cumulative counts at cell ends,
        read off the cells after :meth:`smoothed_cells` (the read-off of quantiles)."""
        if self._monotone is None:
            from scipy.optimize import isotonic_regression

            cum = np.cumsum(self.smoothed_cells())
            self._monotone = np.clip(isotonic_regression(cum, increasing=True).x, 0.0, None)
        return self._monotone

    def smoothed_cells(self) -> np.ndarray:
        """The cell estimates with the last depth's sibling groups smoothed towards their parent
        (:func:`smooth_last_depth`); the least-squares :attr:`cell_est` elsewhere."""
        if self._smoothed is None:
            x = list(self.x)
            if self.height >= 2:
                nd, up = self.nodes[-1], self.nodes[-2]
                # a parent reaching past the domain's last key has children that are not cells: left alone
                pw = np.where(up.last <= np.uint64(self.size - 1), _widths(up.start, up.last), 0.0)
                x[-1] = smooth_last_depth(self.x[-1], nd.noisy.astype(np.float64), self.x[-2], self.parents[-1],
                                          _widths(nd.start, nd.last), pw, self.var[-1])
            self._smoothed = _gather(x, self.cell_depth, self.cell_pos)
        return self._smoothed

    def total(self) -> float:
        return float(self.cum[-1])

    # ------------------------------------------------------------------ exact errors
    def node_variance(self) -> list[np.ndarray]:
        """Exact variance of every node's estimate (:func:`node_variances`), computed once."""
        if self._node_var is None:
            var = [np.asarray(v) for v in self.var]
            self._node_var = node_variances(var, [None, *self.parents[1:]], self.V)
        return self._node_var

    def cell_sd(self, i: np.ndarray) -> np.ndarray:
        """Standard error of the estimates of cells ``i``."""
        return np.sqrt(_gather(self.node_variance(), self.cell_depth[i], self.cell_pos[i]))

    def prefix_moments(self, ends: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]]
                       ) -> tuple[np.ndarray, np.ndarray]:
        """(sum_u g_u^2 sigma_u^2, sum_u g_u^4 sigma_u^4) of the queries sum of sign * prefix.

        ``ends``: per term, (cut cell i, fraction f, empty, sign) arrays over the queries; the
        prefix is every cell before i plus f times cell i (nothing where empty). g is the adjoint
        of the two passes applied to the cell weights, in blocks of queries.
        """
        Q = ends[0][0].size
        C = self.cell_est.size
        nodes = sum(nd.noisy.size for nd in self.nodes) + 1
        step = max(1, _CHUNK // max(nodes + C, 1))
        v1, v2 = np.zeros(Q), np.zeros(Q)
        cells = np.arange(C)[:, None]
        for q0 in range(0, Q, step):
            sl = slice(q0, q0 + step)
            W = np.zeros((C, min(step, Q - q0)))
            for i, f, empty, sign in ends:
                cols = np.arange(W.shape[1])
                part = (cells < i[sl][None, :]).astype(np.float64)
                part[i[sl], cols] = f[sl]
                part[:, empty[sl]] = 0.0
                W += sign * part
            v1[sl], v2[sl] = self._adjoint(W)
        return v1, v2

    def moments(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(sum_u g_u^2 sigma_u^2, sum_u g_u^4 sigma_u^4) of the queries sum_c W[c, q] x_c, linear
        in the cells' least-squares estimates x_c (``W``: cells x queries, the cells in the order of
        their first key)."""
        return self._adjoint(np.asarray(W, dtype=np.float64))

    def _adjoint(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        L, Q = self.height, W.shape[1]
        gx = [np.zeros((self.x[d].size, Q)) for d in range(L + 1)]
        for d in range(1, L + 1):
            sel = self.cell_depth == d
            if sel.any():
                gx[d][self.cell_pos[sel]] += W[sel]
        gz = [np.zeros_like(g) for g in gx]
        for d in range(L, 0, -1):  # back through the downward pass
            par = self.parents[d]
            SV = np.bincount(par, weights=self.V[d], minlength=self.x[d - 1].size)
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(SV[par] > 0, self.V[d] / SV[par], 0.0)
            a = _sum_rows(par, r[:, None] * gx[d], self.x[d - 1].size)
            gx[d - 1] += a
            gz[d] += gx[d] - a[par]
        gz[0] += gx[0]
        v1, v2 = np.zeros(Q), np.zeros(Q)
        for d in range(L + 1):  # back through the upward pass
            gy = self.lam[d][:, None] * gz[d]
            if d < L:
                gC = (1.0 - self.lam[d])[:, None] * gz[d]
                gz[d + 1] += gC[self.parents[d + 1]]
            if d > 0:
                t = gy * gy * self.var[d]
                v1 += t.sum(axis=0)
                v2 += (t * t).sum(axis=0)
        return v1, v2

    def spread_bound(self, i: np.ndarray, f: np.ndarray, g: np.ndarray, level_multiplier: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
        """How far below / above the estimate the true prefix can be because the cut cell's records
        are not spread uniformly: at most f c and g c = (1 - f) c for a cell of c records (f, g:
        :meth:`locate`), with c bounded by the upper interval end of the cell's estimate (0 when the
        point ends its cell: g = 0)."""
        c = np.maximum(self.cell_est[i] + level_multiplier * self.cell_sd(i), 0.0)
        cut = g > 0.0
        return np.where(cut, f * c, 0.0), np.where(cut, g * c, 0.0)


def _widths(start: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Number of keys of each range [start, last] (as floats: exact up to 2^53 keys, relative
    rounding past that; positions and ends use the exact uint64 keys)."""
    return (last - start).astype(np.float64) + 1.0


def smooth_last_depth(x: np.ndarray, y: np.ndarray, x_parent: np.ndarray, parent: np.ndarray, width: np.ndarray,
                      parent_width: np.ndarray, noise_var: float, *, trend_z: float = 4.0, spread_sd: float = 2.0
                      ) -> np.ndarray:
    """Empirical-Bayes smoothing of the count tree's last depth (post-processing of noisy counts).

    The cells of the last depth hold few records each, so their least-squares estimates ``x`` are
    dominated by the noise (variance ``noise_var``). Inside a sibling group of m >= 5 equal-width
    ranges under a parent with estimate X (``x_parent[parent]``), each child's share is s = 1/m
    and its centred position u_c = (c - (m - 1) / 2) / m. If the parent's records were spread
    uniformly over its keys (what the read-off already assumes inside a cell), the children's
    counts would be multinomial around s X: on the residuals x - s X, which sum to zero, their
    covariance is V (I - J/m) with V = max(X, 0) s, against noise_var (I - J/m) for the
    least-squares residuals, so the Bayes factor of every residual is V / (V + noise_var). The
    smoothing shrinks each group towards a linear trend:

    * trend: the least-squares slope b of the residuals x_c - s X on u_c; when the noisy counts
      ``y`` show no trend (b_y^2 sum u^2 / (V + noise_var) <= ``trend_z``: about two standard
      deviations) b is shrunk by V / (V + noise_var), else kept;
    * around the trend: residuals r_c = x_c - s X - b u_c are multiplied by a = V / (V + noise_var)
      when the noisy counts' residual sum of squares is within ``spread_sd`` standard deviations of
      its value under uniform spread ((m - 2)(V + noise_var)); otherwise by the empirical-Bayes
      factor (V + t^2) / (V + t^2 + noise_var), t^2 the excess variance per child.

    Within a group the trend and the shrunk residuals sum to X (the slope and the residuals sum to
    zero), so every parent's estimate, and the total, are unchanged. Reads only the noisy counts,
    their least-squares estimates and the count tree (the released shape): post-processing. Groups
    with unequal widths or fewer than 5 ranges, and exact counts (``noise_var`` 0), are left as
    they are, as are groups that do not tile their parent's ``parent_width`` keys (the caller
    passes 0 for parents that reach past the domain's last key). Returns the smoothed estimates
    of the last depth.
    """
    out = np.array(x, dtype=np.float64, copy=True)
    if x.size == 0 or not noise_var > 0.0 or not np.isfinite(noise_var):
        return out
    G = x_parent.size
    m = np.bincount(parent, minlength=G).astype(np.float64)
    first = np.concatenate([[0], np.cumsum(m)[:-1]]).astype(np.int64)  # siblings are consecutive
    wmin = np.full(G, np.inf)
    wmax = np.zeros(G)
    has = m > 0
    wmin[has] = np.minimum.reduceat(width, first[has])
    wmax[has] = np.maximum.reduceat(width, first[has])
    ok = ((m >= 5) & (wmin == wmax) & (np.abs(m * wmax - parent_width) <= 0.5))[parent]
    if not ok.any():
        return out
    s = 1.0 / m[parent]
    u = (np.arange(x.size) - first[parent] - (m[parent] - 1.0) / 2.0) * s
    X = x_parent[parent]
    r, ry = x - s * X, y - s * X
    V = np.maximum(X, 0.0) * s  # multinomial covariance on the zero-sum residuals: V (I - J/m)
    suu = np.bincount(parent, weights=u * u, minlength=G)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.bincount(parent, weights=r * u, minlength=G) / suu
        slope_y = np.bincount(parent, weights=ry * u, minlength=G) / suu
    Vg = np.bincount(parent, weights=V, minlength=G) / np.maximum(m, 1.0)
    null = Vg / (Vg + noise_var)  # the optimal factor when the parent's records are spread uniformly
    z = slope_y**2 * suu / (Vg + noise_var)
    slope = np.where(z > trend_z, slope, slope * null)
    e = ry - slope_y[parent] * u
    dof = np.maximum(m - 2.0, 1.0)
    excess = np.maximum(np.bincount(parent, weights=e * e, minlength=G) / dof - Vg - noise_var, 0.0)
    ratio = np.bincount(parent, weights=e * e, minlength=G) / (dof * (Vg + noise_var))
    a = np.where(ratio < 1.0 + spread_sd * np.sqrt(2.0 / dof), null, (Vg + excess) / (Vg + excess + noise_var))
    trend = s * X + slope[parent] * u
    smooth = trend + a[parent] * (x - trend)
    out[ok] = smooth[ok]
    return out


def _gather(per_level: list[np.ndarray], depth: np.ndarray, pos: np.ndarray) -> np.ndarray:
    out = np.empty(depth.size)
    for d in np.unique(depth):
        sel = depth == d
        out[sel] = per_level[int(d)][pos[sel]]
    return out


def _sum_rows(par: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Row sums of ``values`` grouped by the non-decreasing parent index ``par`` (siblings are
    consecutive), as an (n, queries) array."""
    out = np.zeros((n, values.shape[1]))
    if par.size:
        first = np.flatnonzero(np.concatenate([[True], par[1:] != par[:-1]]))
        out[par[first]] = np.add.reduceat(values, first, axis=0)
    return out
