"""Least-squares estimation on trees: Honaker's optimal estimator and exact error bars.

Input: noisy node counts y_v with known noise variances sigma_v^2 on a tree whose true counts
satisfy "parent = sum of children". ``sigma_v^2 = inf`` marks a node that was not measured and
``sigma_v^2 = 0`` a node known exactly (e.g. the public total under replace-one neighbors).

:func:`consistent_estimates` is the generalised least-squares (GLS) estimate, computed in two
O(nodes) passes (Honaker 2015, equations 10, 11 and 13, written as an inverse-variance
pass up and a proportional correction down; DESIGN section 4):

* up:   leaves z = y, V = sigma^2; internal C = sum of children z, VC = sum of children V,
        z = (y VC + C sigma^2) / (sigma^2 + VC),  V = sigma^2 VC / (sigma^2 + VC);
* down: x_root = z_root; x_c = z_c + V_c / (sum_siblings V) * (x_parent - sum_siblings z).

It works for any arity and for leaves at different depths (the trees of Ghazi et al. 2023). The result is
consistent: every parent equals the sum of its children. :func:`node_variances` gives the exact
variance of every x_v in O(nodes) (DESIGN section 5), and :func:`range_variance` the exact
variance of any range of leaves of a regular b-ary tree in O(levels) (DESIGN section 4).
Tests check all three against dense weighted least squares.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from dptree.errors import InvalidParameterError

__all__ = [
    "TreeEstimate",
    "consistent_estimates",
    "regular_passes",
    "block_sums",
    "node_variances",
    "range_variance",
    "block_sum_variance",
    "prefix_block_sums",
    "range_error_moments",
]


@dataclass
class TreeEstimate:
    """Consistent estimates ``x`` per level, and the bottom-up estimates ``z`` and variances ``V``."""

    x: list[np.ndarray]
    z: list[np.ndarray]
    V: list[np.ndarray]


def _child_sums(parent: np.ndarray, values: np.ndarray, n_parent: int) -> np.ndarray:
    return np.bincount(parent, weights=values, minlength=n_parent)


def block_sums(values: np.ndarray, fanout: int, dtype: type = np.float64) -> np.ndarray:
    """Sums of consecutive blocks of ``fanout`` values (the children of each node of a regular
    tree), as ``dtype``. Fan-out 2 adds two strided slices; larger ones sum rows with ``einsum``
    (2-6x faster than ``sum(axis=1)``, which reduces every short row on its own), integers
    exactly in int64 (counts and noise stay far below 2^58), then one cast of the 1/f-size result."""
    f = int(fanout)
    if f <= 2:
        out: np.ndarray = values[0::f].astype(dtype)
        for i in range(1, f):
            out += values[i::f]
        return out
    return np.einsum("ij->i", values.reshape(-1, f)).astype(dtype, copy=False)


def _combine(y: np.ndarray, s2: np.ndarray, C: np.ndarray, VC: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inverse-variance combination of a node's own measurement with its children's sum."""
    if s2.ndim == 0:  # one variance for the whole level: no per-node special cases
        v = float(s2)
        if not np.isfinite(v):
            return C, VC
        if v == 0.0:  # known exactly
            return y.copy(), np.zeros_like(VC)
        return (y * VC + C * v) / (v + VC), v * VC / (v + VC)
    z = (y * VC + C * s2) / (s2 + VC)
    V = s2 * VC / (s2 + VC)
    unmeasured = ~np.isfinite(s2)
    z = np.where(unmeasured, C, z)
    V = np.where(unmeasured, VC, V)
    exact_both = (s2 == 0) & (VC == 0)
    return np.where(exact_both, y, z), np.where(exact_both, 0.0, V)


def consistent_estimates(
    y: Sequence[np.ndarray],
    var: Sequence[np.ndarray | float],
    parents: Sequence[np.ndarray | None],
    fanouts: Sequence[int] | None = None,
) -> TreeEstimate:
    """GLS estimates of every node (Honaker's two passes, vectorised level by level).

    ``y[j]``, ``var[j]``: measurements and noise variances of the nodes of depth j (root: j=0);
    a variance may be one number for the whole level. ``parents[j]``: for j >= 1, the index in
    level j-1 of each node's parent (``parents[0]`` is ignored). A node without children is a leaf
    and must be measured (finite variance). ``fanouts`` (optional) declares a regular tree whose
    level j+1 holds ``fanouts[j]`` contiguous children per node of level j, with one variance per
    level: the fast path :func:`regular_passes` then computes every level.
    """
    depth = len(y)
    if not (len(var) == depth == len(parents)) or depth == 0:
        raise InvalidParameterError("y, var and parents must describe the same non-empty list of levels")
    if fanouts is not None:
        if len(fanouts) != depth - 1:
            raise InvalidParameterError("fanouts must have one entry per level below the root")
        if any(np.ndim(v) for v in var):
            raise InvalidParameterError("a regular tree (fanouts=) takes one noise variance per level, not per node")
        return regular_passes(y, [float(np.asarray(v)) for v in var], fanouts, all_levels=True)
    yv = [np.asarray(a, dtype=np.float64) for a in y]
    sv = [np.asarray(v, dtype=np.float64) for v in var]
    sv = [v if v.ndim == 0 else np.broadcast_to(v, a.shape) for v, a in zip(sv, yv)]
    z: list[np.ndarray] = [np.empty(0)] * depth
    V: list[np.ndarray] = [np.empty(0)] * depth
    with np.errstate(divide="ignore", invalid="ignore"):
        for j in range(depth - 1, -1, -1):
            n = yv[j].size
            s2 = sv[j]
            if j + 1 < depth and yv[j + 1].size:
                par = np.asarray(parents[j + 1], dtype=np.int64)
                has_child = np.bincount(par, minlength=n) > 0
                C = _child_sums(par, z[j + 1], n)
                VC = _child_sums(par, V[j + 1], n)
            else:
                has_child = np.zeros(n, dtype=bool)
                C = np.zeros(n)
                VC = np.zeros(n)
            if np.any(~has_child & ~np.isfinite(s2)):
                raise InvalidParameterError("every leaf must be measured (finite noise variance)")
            zj, Vj = _combine(yv[j], s2, C, VC)
            if has_child.all():
                z[j], V[j] = zj, Vj
            else:
                z[j] = np.where(has_child, zj, yv[j])
                V[j] = np.where(has_child, Vj, np.broadcast_to(s2, (n,)))
        x: list[np.ndarray] = [np.empty(0)] * depth
        x[0] = z[0].copy()
        for j in range(1, depth):
            n_par = yv[j - 1].size
            par = np.asarray(parents[j], dtype=np.int64)
            S = _child_sums(par, z[j], n_par)
            SV = _child_sums(par, V[j], n_par)
            share = np.where(SV[par] > 0, V[j] / SV[par], 0.0)
            x[j] = z[j] + share * (x[j - 1][par] - S[par])
    return TreeEstimate(x=x, z=z, V=V)


def regular_passes(
    y: Sequence[np.ndarray | None], level_var: ArrayLike, fanouts: Sequence[int], *, all_levels: bool = False,
    out: np.ndarray | None = None,
) -> TreeEstimate:
    """Honaker's two passes on a regular tree with one noise variance per level, in O(nodes).

    With one variance per level, V and the weight lambda_j = VC / (sigma_j^2 + VC) of a node's own
    measurement are per-level numbers (:func:`_bottom_up_weights`), and the passes above become
    up: C_j = block sums of z_{j+1}, d_j = lambda_j (y_j - C_j), z_j = C_j + d_j;
    down: g_{-1} = 0, g_j = (d_j + g_{j-1} repeated) / f_j, x_leaf = y_leaf + g_{L-1} repeated
    (g_j is the share of node j's residual x_j - C_j that each child receives; a child level with
    V = 0 gets none). Only the d_j of the internal levels are kept, so the leaves cost one block
    sum, one broadcast add and their float64 output. ``all_levels=False`` returns the leaves only
    (``x == [leaves]``, ``z`` and ``V`` empty); ``True`` every level, as :func:`consistent_estimates`.
    ``out``: a float64 array of the leaves' shape to write the leaf estimates into (the caller's
    buffer, e.g. the one its prefix sums are then computed in place in); default a new array.
    """
    f = [int(v) for v in fanouts]
    L = len(f)
    var = np.asarray(level_var, dtype=np.float64)
    if var.shape != (L + 1,) or len(y) != L + 1:
        raise InvalidParameterError("a regular tree needs one measurement array and one variance per level")
    if not np.isfinite(var[L]):
        raise InvalidParameterError("every leaf must be measured (finite noise variance)")
    lam, V = _bottom_up_weights(f, var)
    leaves = np.asarray(y[L])
    if out is None:
        out = np.empty(leaves.shape, dtype=np.float64)
    elif out.shape != leaves.shape or out.dtype != np.float64:
        raise InvalidParameterError("out must be a float64 array with one entry per leaf")
    if L == 0:
        out[...] = leaves
        x0 = out
        return TreeEstimate(x=[x0], z=[x0.copy()] if all_levels else [], V=[np.broadcast_to(V[0], x0.shape)])
    d: list[np.ndarray] = [np.empty(0)] * L
    C: list[np.ndarray] = [np.empty(0)] * L  # kept for all_levels only
    below = leaves
    for j in range(L - 1, -1, -1):  # up
        zj = block_sums(below, f[j])  # C_j, then z_j in place
        if all_levels:
            C[j] = zj.copy()
        yj = y[j]
        if lam[j] > 0.0 and yj is not None:
            d[j] = np.subtract(yj, zj, dtype=np.float64)
            d[j] *= lam[j]
            zj += d[j]
        elif lam[j] > 0.0:
            raise InvalidParameterError("a measured level needs its measurements")
        else:  # not measured: z_j = C_j
            d[j] = np.zeros(zj.size)
        below = zj
    g = np.zeros(1)
    x: list[np.ndarray] = [np.empty(0)] * (L + 1)
    for j in range(L):  # down: d_j becomes g_j in place
        gj = d[j]
        if j and V[j] > 0.0:
            gj.reshape(-1, f[j - 1])[...] += g[:, None]
        if all_levels:
            x[j] = C[j] + gj
        gj /= f[j]
        g = gj
    if V[L] > 0.0:
        np.add(leaves.reshape(-1, f[L - 1]), g[:, None], out=out.reshape(-1, f[L - 1]))
    else:
        out[...] = leaves
    if not all_levels:
        return TreeEstimate(x=[out], z=[], V=[])
    x[L] = out
    # d_j now holds g_j: z_j = C_j + lambda_j (y_j - C_j) again
    z = [c + lam[j] * (np.asarray(y[j], dtype=np.float64) - c) if lam[j] > 0 else c for j, c in enumerate(C)]
    z.append(np.asarray(leaves, dtype=np.float64))
    return TreeEstimate(x=x, z=z, V=[np.broadcast_to(v, (zj.size,)) for v, zj in zip(V, z)])


def node_variances(
    var: Sequence[np.ndarray],
    parents: Sequence[np.ndarray | None],
    V: Sequence[np.ndarray],
) -> list[np.ndarray]:
    """Exact variance of every GLS estimate x_v in O(nodes) (DESIGN section 5).

    U_root = inf; for a child c of p: U_c = (1/U_p + 1/sigma_p^2)^-1 + sum of V over c's
    siblings; Var(x_c) = (1/V_c + 1/U_c)^-1. ``V`` are the bottom-up variances from
    :func:`consistent_estimates`.
    """
    depth = len(V)
    out: list[np.ndarray] = []
    with np.errstate(divide="ignore", invalid="ignore"):
        U = np.full(V[0].shape, np.inf)
        out.append(1.0 / (1.0 / V[0] + 1.0 / U))
        for j in range(1, depth):
            par = np.asarray(parents[j], dtype=np.int64)
            s2p = np.broadcast_to(np.asarray(var[j - 1], dtype=np.float64), V[j - 1].shape)
            above = 1.0 / (1.0 / U + 1.0 / s2p)  # information on x_p from outside p's subtree
            SV = _child_sums(par, V[j], V[j - 1].size)
            U_child = above[par] + (SV[par] - V[j])
            out.append(1.0 / (1.0 / V[j] + 1.0 / U_child))
            U = U_child
    return [np.where(np.isnan(o), 0.0, o) for o in out]


def prefix_block_sums(block_sizes: Sequence[int], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """a_j = sum over level-j blocks B of |q cap B|^2 / s_j for ranges q = [lo, hi] of leaves.

    Returns an array of shape (levels, len(lo)). Full blocks contribute s_j each, the (at most
    two) partial blocks their overlap squared over s_j.
    """
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    out = np.empty((len(block_sizes), lo.size), dtype=np.float64)
    for j, s in enumerate(block_sizes):
        first = lo // s
        last = hi // s
        same = first == last
        left = ((first + 1) * s - lo).astype(np.float64)
        right = (hi - last * s + 1).astype(np.float64)
        middle = np.maximum(last - first - 1, 0).astype(np.float64)
        width = (hi - lo + 1).astype(np.float64)
        out[j] = np.where(same, width * width / s, (left * left + right * right) / s + middle * s)
    return out


def range_variance(block_sizes: Sequence[int], level_var: ArrayLike, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Exact variance of the GLS estimate of the leaf range [lo, hi] of a regular tree.

    Levels j = 0 (root) .. L (leaves) with s_j leaves per node and noise variance sigma_j^2 on
    every node of level j (inf: not measured; 0: known exactly). With
    Lambda_j = sum_{l >= j} s_l / sigma_l^2 and a_j from :func:`prefix_block_sums`,
    Var = sum_j (a_j - a_{j-1}) / Lambda_j with a_{-1} = 0 (DESIGN section 4; O(L) per range,
    because the covariance of two leaf estimates depends only on the level of their lowest
    common ancestor).
    """
    return block_sum_variance(block_sizes, level_var, prefix_block_sums(block_sizes, lo, hi))


def block_sum_variance(block_sizes: Sequence[int], level_var: ArrayLike, a: np.ndarray) -> np.ndarray:
    """Exact variance of the GLS estimate of the sum of any set q of leaves of a regular tree, from
    a_j = sum over level-j blocks B of |q cap B|^2 / s_j (shape (levels, queries)).

    The covariance of two leaf estimates depends only on the level of their lowest common
    ancestor, so the variance is linear in the numbers of leaf pairs of q per ancestor level,
    which the a_j give: Var = sum_j (a_j - a_{j-1}) / Lambda_j (:func:`range_variance`), for a
    contiguous range or any other set (a rectangle of a quadtree in Morton order)."""
    s = np.asarray(block_sizes, dtype=np.float64)
    v = np.asarray(level_var, dtype=np.float64)
    with np.errstate(divide="ignore"):
        info = np.where(np.isfinite(v), s / v, 0.0)
    lam = np.cumsum(info[::-1])[::-1]  # Lambda_j
    da = np.diff(a, axis=0, prepend=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(np.isinf(lam)[:, None], 0.0, da / lam[:, None])
    return terms.sum(axis=0)


def _bottom_up_weights(fanouts: Sequence[int], level_var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lambda_j, V_j) per level of a regular tree: lambda_j = VC_j / (sigma_j^2 + VC_j) is the
    weight of a node's own measurement in z_v and V_j the variance of z_v (VC_j = f_j V_{j+1}).

    lambda is 0 for unmeasured levels, 1 for exact ones; leaves get 1 (z = y there).
    """
    L = len(fanouts)
    lam = np.ones(L + 1)
    V = np.empty(L + 1)
    V[L] = float(level_var[L])
    for j in range(L - 1, -1, -1):
        vc = fanouts[j] * V[j + 1]
        s2 = float(level_var[j])
        if not np.isfinite(s2):
            lam[j], V[j] = 0.0, vc
        elif s2 == 0.0:
            lam[j], V[j] = 1.0, 0.0
        else:
            lam[j], V[j] = vc / (s2 + vc), s2 * vc / (s2 + vc)
    return lam, V


#: ranges per block in :func:`range_error_moments`
_MOMENT_BLOCK = 8192


def _moment_tables(f: list[int], var: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lambda, G, H) of :func:`range_error_moments`: lambda_j from :func:`_bottom_up_weights`,
    G[j, l] = lambda_j kappa(j+1, l) for j < l with kappa(j+1, l) = lambda~_l prod_{t=j+1}^{l-1} (1 - lambda_t)
    (lambda~: lambda with 0 at the leaves, which have no (y - C) term), and
    H[m+1, l] = sum_{j=m+1}^{l-1} G[j, l] (row 0 for m = -1)."""
    L = len(f)
    lam, _ = _bottom_up_weights(f, var)
    lam_int = lam.copy()
    lam_int[L] = 0.0
    G = np.zeros((L + 1, L + 1))
    for j in range(L):
        for ell in range(j + 1, L + 1):
            G[j, ell] = lam_int[j] * lam[ell] * np.prod(1.0 - lam_int[j + 1 : ell])
    H = np.zeros((L + 2, L + 1))
    for m in range(-1, L):
        for ell in range(m + 1, L + 1):
            H[m + 1, ell] = G[m + 1 : ell, ell].sum()
    return lam, G, H


def _moment_constants(lam: np.ndarray, H: np.ndarray, sf: np.ndarray,
                      var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-level constants of the children classes in :func:`range_error_moments`.

    Below the boundary node at level m, G[j, l] = a(j, m) b(m, l) for j <= m < l, with
    b(m, l) = lambda_l prod_{t=m+1}^{l-1} (1 - lambda_t); so A_m[l] = b(m, l) S_m with the
    per-range S_m = (1 - lambda_m) S_{m-1} + lambda_m omega_m. With h_l = lambda_l - H[m+1, l],
    p_l = mv_l s_{m+1} / s_l and r_l = mv_l^2 s_{m+1} / s_l:
    K1[m] = sum_{l>m} p_l (h^2, h b, b^2), K2[m] = sum_{l>m} r_l (h^4, h^3 b, h^2 b^2, h b^3, b^4)."""
    L = lam.size - 1
    mv = np.where(np.isfinite(var) & (var > 0), var, 0.0)
    K1, K2 = np.zeros((L, 3)), np.zeros((L, 5))
    for m in range(L):
        ls = np.arange(m + 1, L + 1)
        b = np.array([lam[ell] * np.prod(1.0 - lam[m + 1 : ell]) for ell in ls])
        h = lam[ls] - H[m + 1, ls]
        per = sf[m + 1] / sf[ls]
        p, r = per * mv[ls], per * mv[ls] ** 2
        K1[m] = [np.sum(p * h * h), np.sum(p * h * b), np.sum(p * b * b)]
        K2[m] = [np.sum(r * h ** (4 - k) * b**k) for k in range(5)]
    return K1, K2


def range_error_moments(
    fanouts: Sequence[int], level_var: ArrayLike, lo: np.ndarray, hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(sum_u c_u^2 sigma_u^2, sum_u c_u^4 sigma_u^4) for the GLS estimate of leaf ranges [lo, hi].

    c_u is the weight of node u's measurement in the estimate. Unrolling Honaker's two passes on a
    regular tree, the range estimate is sum_{i in q} y_i + sum_a lambda_a omega_a (y_a - C_a)
    with omega_a = |q cap B_a| / s_a, so c_u depends only on u's level and the omegas of its
    ancestors. Those are 0 or 1 except on the two paths to the range's ends, which leaves O(L^2)
    classes of equal coefficients per range; their sums over the levels below a boundary node are
    polynomials in one number S_m per path (:func:`_moment_constants`), so a range costs O(L).
    The first sum is the variance (equal to :func:`range_variance`); the second measures how far
    the error is from Gaussian, for intervals (see :mod:`dptree.estimation.intervals`).

    Both boundary paths are walked at once, as the columns [lo side | hi side] of one array: the
    distance from a path's end to its node's far edge is e mod s_m + 1 with e = (-lo - 1, hi), and
    (e // s_{m+1}) mod f_m counts the children of the boundary node inside the range on that side.
    While both ends lie in one node, the two columns see the same ancestors and the node is
    counted once (on the lo side, which also drops the f_m children counted twice).
    """
    f = [int(x) for x in fanouts]
    L = len(f)
    var = np.asarray(level_var, dtype=np.float64)
    lo = np.atleast_1d(np.asarray(lo, dtype=np.int64))
    hi = np.atleast_1d(np.asarray(hi, dtype=np.int64))
    s = [1] * (L + 1)
    for j in range(L - 1, -1, -1):
        s[j] = s[j + 1] * f[j]
    lam, _, H = _moment_tables(f, var)
    sf = np.asarray(s, dtype=np.float64)
    K1, K2 = _moment_constants(lam, H, sf, var)
    # per-level weights of the sums: mv = sigma^2 on measured levels, 0 elsewhere (no term)
    mv = np.where(np.isfinite(var) & (var > 0), var, 0.0)
    # the whole padded tree inside the range: every node has all-one ancestors; a class of
    # (s_0 / s_l) nodes per level with the constant coefficient lam_l - H[0, l]
    c_root = lam - H[0]
    root = (float(np.sum(sf[0] / sf * c_root**2 * mv)), float(np.sum(sf[0] / sf * c_root**4 * mv * mv)))
    v1, v2 = np.empty(lo.size), np.empty(lo.size)
    for i in range(0, lo.size, _MOMENT_BLOCK):  # blocks of ranges keep the temporaries in cache
        blk = slice(i, i + _MOMENT_BLOCK)
        v1[blk], v2[blk] = _block_moments(f, s, lam, mv, K1, K2, root, lo[blk], hi[blk])
    return v1, v2


def _block_moments(f: list[int], s: list[int], lam: np.ndarray, mv: np.ndarray, K1: np.ndarray, K2: np.ndarray,
                   root: tuple[float, float], lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`range_error_moments` of one block of ranges (tables precomputed)."""
    L = len(f)
    q = lo.size
    root_full = (lo <= 0) & (hi >= s[0] - 1)
    v1 = root_full * root[0]
    v2 = root_full * root[1]
    w1 = np.zeros(2 * q)  # both sides' sums, folded at the end
    w2 = np.zeros(2 * q)
    e = np.concatenate([-lo - 1, hi])
    width = hi - lo + 1
    width2 = np.concatenate([width, width])
    Q = e // s[0]
    edge = e - Q * s[0] + 1  # distance from the path's end to the far edge of its node, in leaves
    S = np.zeros(2 * q)  # S_m: A_m[l] = b[m, l] S_m along each path
    for m in range(L):
        sm, sn, fm = s[m], s[m + 1], f[m]
        w = np.minimum(edge, width2)  # overlap of the boundary node with the range
        same = width <= edge[:q]  # both ends in one node of level m
        counted = w < sm  # a partial boundary node: its children classes are counted here
        partial = counted.copy()
        omega = w / sm
        partial[q:] &= ~same  # one node while both ends are in it
        coef = omega - S  # the boundary node's own coefficient, over lambda_m
        coef *= partial
        t = coef * coef
        t *= lam[m] ** 2 * mv[m]
        w1 += t
        w2 += t * t
        S *= 1.0 - lam[m]
        S += lam[m] * omega
        # the boundary node's children at level m+1 inside (n_in) and outside (n_out) the range
        if sn & (sn - 1) == 0:  # powers of two: shifts and masks (same integers)
            Qn = e >> (sn.bit_length() - 1)
            edge = (e & (sn - 1)) + 1
        else:
            Qn = e // sn
            edge = e - Qn * sn + 1
        inner = Qn - Q * fm  # (e // s_{m+1}) mod f_m
        Q = Qn
        full = edge >= sn
        full &= width2 >= sn
        # both ends in one node: the lo side counts its children once (not f_m more), and one child
        # holding both ends counts as inside only when the range is that child
        one = same & (width <= edge[:q])
        n_in = inner + full
        n_in[:q] -= same * fm - one * ~full[:q]
        n_in *= counted
        n_all = n_in + counted * ((fm - 1) - inner)  # n_in + n_out
        # the classes below: sum_{l > m} p_l (h_l - b_l S)^2 inside, p_l (b_l S)^2 outside (and
        # 4th powers), expanded in powers of S with per-level constants
        k1, k2 = K1[m], K2[m]
        S2 = S * S
        w1 += n_in * (k1[0] - 2.0 * k1[1] * S) + n_all * (k1[2] * S2)
        w2 += n_in * (k2[0] + S * (-4.0 * k2[1] + S * (6.0 * k2[2] - 4.0 * k2[3] * S))) + n_all * (k2[4] * S2 * S2)
    return v1 + w1[:q] + w1[q:], v2 + w2[:q] + w2[q:]
