"""The error moments of a rectangle's least-squares count, for its interval's multiplier.

A rectangle's estimate is sum_u c_u y_u over the measured nodes u. Unrolling Honaker's (2015) two
passes as for a 1-D range (:func:`dptree.estimation.least_squares.range_error_moments`):
c_u = lambda_u (omega_u - S_u), with omega_u = |R cap B_u| / |B_u| the share of u's cells in the
rectangle, lambda_u the weight of u's own measurement in the bottom-up pass (1 at the leaves) and
S_u = (1 - lambda_p) S_p + lambda_p omega_p down from the root (S_root = 0). A quadtree node is a
square, so omega_u = fx_u fy_u, the shares of its x and y sides in the rectangle's sides, and the
ancestors' shares along each axis take few values: outside (0), inside (1), or one of the at most
two blocks per level that hold an end. Grouping the x blocks of a level by the chain of their
ancestors' shares gives O(L) classes per level and axis, and c_u is constant on each pair of
classes, so (sum_u c_u^2 sigma_u^2, sum_u c_u^4 sigma_u^4) cost O(L^4) per rectangle, computed once
per distinct pair of axis classes (tested against the dense coefficients).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from dptree.estimation.least_squares import _bottom_up_weights

__all__ = ["axis_classes", "rectangle_moments"]


@lru_cache(maxsize=1 << 16)
def axis_classes(depth: int, a: int, b: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Per level j = 0 .. depth: (F, m), F of shape (classes, j + 1) the chains of shares of the
    range [a, b] in the blocks of side 2^(depth - l) above (and at) each class's blocks, m their
    numbers of blocks. Blocks with a share of 0 or 1 have children of the same share; the (at most
    two) partial blocks of a level are classes of their own."""
    n = 1 << depth
    chains: list[tuple[tuple[float, ...], int, int]] = [(((b - a + 1) / n,), 1, 0)]  # (chain, count, block)
    out = []
    for j in range(depth + 1):
        out.append((np.array([c for c, _, _ in chains], dtype=np.float64), np.array([m for _, m, _ in chains],
                                                                                     dtype=np.float64)))
        if j == depth:
            break
        side = n >> (j + 1)
        nxt: dict[tuple[tuple[float, ...], int], int] = {}  # (chain, block of a partial class) -> count
        for chain, count, block in chains:
            f = chain[-1]
            if f in (0.0, 1.0):
                key = (chain + (f,), -1)
                nxt[key] = nxt.get(key, 0) + 2 * count
                continue
            for child in (2 * block, 2 * block + 1):  # a partial block: its children one by one
                lo, hi = child * side, (child + 1) * side - 1
                g = max(0, min(b, hi) - max(a, lo) + 1) / side
                key = (chain + (g,), -1 if g in (0.0, 1.0) else child)
                nxt[key] = nxt.get(key, 0) + 1
        # in the order of the chains (then the blocks): ranges whose classes are the same have the
        # same tables, so their moments are computed once (every single cell, every aligned block)
        chains = sorted(((k, m, blk) for (k, blk), m in nxt.items()), key=lambda c: (c[0], c[2]))
    return tuple(out)


def _pair_moments(depth: int, level_var: tuple[float, ...], xa: int, xb: int, ya: int, yb: int
                  ) -> tuple[float, float]:
    var = np.asarray(level_var)
    lam, _ = _bottom_up_weights([4] * depth, var)
    mv = np.where(np.isfinite(var) & (var > 0), var, 0.0)
    xs, ys = axis_classes(depth, xa, xb), axis_classes(depth, ya, yb)
    v1 = v2 = 0.0
    for j in range(depth + 1):
        if mv[j] == 0.0:
            continue
        (Fx, mx), (Fy, my) = xs[j], ys[j]
        S = np.zeros((Fx.shape[0], Fy.shape[0]))
        for ell in range(j):
            S = (1.0 - lam[ell]) * S + lam[ell] * np.outer(Fx[:, ell], Fy[:, ell])
        c2 = (lam[j] * (np.outer(Fx[:, j], Fy[:, j]) - S)) ** 2 * mv[j]
        w = np.outer(mx, my)
        v1 += float((w * c2).sum())
        v2 += float((w * c2 * c2).sum())
    return v1, v2


@lru_cache(maxsize=1 << 14)
def _cached(depth: int, level_var: tuple[float, ...], xa: int, xb: int, ya: int, yb: int) -> tuple[float, float]:
    return _pair_moments(depth, level_var, xa, xb, ya, yb)


def rectangle_moments(depth: int, level_var: np.ndarray, ax: np.ndarray, bx: np.ndarray, ay: np.ndarray,
                      by: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sum_u c_u^2 sigma_u^2, sum_u c_u^4 sigma_u^4) of the cell rectangles [ax, bx] x [ay, by] of a
    quadtree of ``depth`` with per-level noise variances ``level_var`` (module docstring). Rectangles
    whose sides have the same classes share one computation: a side's classes depend only on its
    position relative to the blocks, so e.g. every single cell has the same moments."""
    lv = tuple(float(v) for v in np.asarray(level_var, dtype=np.float64))
    ax, bx, ay, by = (np.ravel(v).astype(np.int64) for v in (ax, bx, ay, by))
    xi, x_inv = np.unique(np.stack([ax, bx]), axis=1, return_inverse=True)
    yi, y_inv = np.unique(np.stack([ay, by]), axis=1, return_inverse=True)
    x_key = _signatures(depth, xi)
    y_key = _signatures(depth, yi)
    pairs, inv = np.unique(np.stack([x_key[np.ravel(x_inv)], y_key[np.ravel(y_inv)]]), axis=1, return_inverse=True)
    first_x = {int(k): (int(xi[0, i]), int(xi[1, i])) for i, k in enumerate(x_key)}
    first_y = {int(k): (int(yi[0, i]), int(yi[1, i])) for i, k in enumerate(y_key)}
    vals = np.array([_cached(depth, lv, *first_x[int(p)], *first_y[int(q)]) for p, q in pairs.T]).reshape(-1, 2)
    inv = np.ravel(inv)
    return vals[inv, 0], vals[inv, 1]


def _signatures(depth: int, ends: np.ndarray) -> np.ndarray:
    """One integer per distinct class structure of the ranges ``ends`` (2, k) of an axis."""
    seen: dict[bytes, int] = {}
    out = np.empty(ends.shape[1], dtype=np.int64)
    for i in range(ends.shape[1]):
        levels = axis_classes(depth, int(ends[0, i]), int(ends[1, i]))
        key = b"|".join(F.tobytes() + m.tobytes() for F, m in levels)
        out[i] = seen.setdefault(key, len(seen))
    return out
