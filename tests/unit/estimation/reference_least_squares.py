"""A straightforward least-squares estimator (two passes with per-node temporaries,
moments per side), kept verbatim as the reference oracle of tests/unit/estimation and the "before"
column of benchmarks/speed.py and benchmarks/ci_speed.py (not used by dptree)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from dptree.errors import InvalidParameterError

__all__ = [
    "TreeEstimate",
    "consistent_estimates",
    "node_variances",
    "range_variance",
    "prefix_block_sums",
    "range_error_moments",
]


@dataclass
class TreeEstimate:
    """Consistent estimates ``x`` per level, and the bottom-up estimates ``z`` and variances ``V``."""

    x: list[np.ndarray]
    z: list[np.ndarray]
    V: list[np.ndarray]


def _child_sums(parent: np.ndarray, values: np.ndarray, n_parent: int, fanout: int | None = None) -> np.ndarray:
    if fanout is not None:  # contiguous children, `fanout` per parent (regular trees)
        return values.reshape(n_parent, fanout).sum(axis=1)
    return np.bincount(parent, weights=values, minlength=n_parent)


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
    level j+1 holds ``fanouts[j]`` contiguous children per node of level j, which is faster.
    """
    depth = len(y)
    if not (len(var) == depth == len(parents)) or depth == 0:
        raise InvalidParameterError("y, var and parents must describe the same non-empty list of levels")
    if fanouts is not None and len(fanouts) != depth - 1:
        raise InvalidParameterError("fanouts must have one entry per level below the root")
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
                if fanouts is not None:
                    f = int(fanouts[j])
                    C = _child_sums(np.empty(0, np.int64), z[j + 1], n, f)
                    VC = _child_sums(np.empty(0, np.int64), V[j + 1], n, f)
                    zj, Vj = _combine(yv[j], s2, C, VC)
                    z[j], V[j] = zj, np.broadcast_to(Vj, (n,)) if np.ndim(Vj) == 0 else Vj
                    continue
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
            if fanouts is not None:
                f = int(fanouts[j - 1])
                S = _child_sums(np.empty(0, np.int64), z[j], n_par, f)
                SV = _child_sums(np.empty(0, np.int64), V[j], n_par, f)
                gap = np.where(SV > 0, (x[j - 1] - S) / SV, 0.0)
                x[j] = z[j] + V[j] * np.repeat(gap, f)
                continue
            par = np.asarray(parents[j], dtype=np.int64)
            S = _child_sums(par, z[j], n_par)
            SV = _child_sums(par, V[j], n_par)
            share = np.where(SV[par] > 0, V[j] / SV[par], 0.0)
            x[j] = z[j] + share * (x[j - 1][par] - S[par])
    return TreeEstimate(x=x, z=z, V=V)


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
    s = np.asarray(block_sizes, dtype=np.float64)
    v = np.asarray(level_var, dtype=np.float64)
    with np.errstate(divide="ignore"):
        info = np.where(np.isfinite(v), s / v, 0.0)
    lam = np.cumsum(info[::-1])[::-1]  # Lambda_j
    a = prefix_block_sums(block_sizes, lo, hi)
    da = np.diff(a, axis=0, prepend=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(np.isinf(lam)[:, None], 0.0, da / lam[:, None])
    return terms.sum(axis=0)


def _bottom_up_weights(fanouts: Sequence[int], level_var: np.ndarray) -> np.ndarray:
    """lambda_j = VC_j / (sigma_j^2 + VC_j): the weight of a node's own measurement in z_v.

    0 for unmeasured levels, 1 for exact ones; leaves get 1 (z = y there).
    """
    L = len(fanouts)
    lam = np.ones(L + 1)
    V = float(level_var[L])
    for j in range(L - 1, -1, -1):
        vc = fanouts[j] * V
        s2 = float(level_var[j])
        if not np.isfinite(s2):
            lam[j], V = 0.0, vc
        elif s2 == 0.0:
            lam[j], V = 1.0, 0.0
        else:
            lam[j], V = vc / (s2 + vc), s2 * vc / (s2 + vc)
    return lam


#: ranges per block in :func:`range_error_moments`
_MOMENT_BLOCK = 16384


def range_error_moments(
    fanouts: Sequence[int], level_var: ArrayLike, lo: np.ndarray, hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(sum_u c_u^2 sigma_u^2, sum_u c_u^4 sigma_u^4) for the GLS estimate of leaf ranges [lo, hi].

    c_u is the weight of node u's measurement in the estimate. Unrolling Honaker's two passes on a
    regular tree, the range estimate is sum_{i in q} y_i + sum_a lambda_a omega_a (y_a - C_a)
    with omega_a = |q cap B_a| / s_a, so c_u depends only on u's level and the omegas of its
    ancestors. Those are 0 or 1 except on the two paths to the range's ends, which leaves O(L^2)
    classes of equal coefficients per range. The first sum is the variance (equal to
    :func:`range_variance`); the second measures how far the error is from Gaussian, for
    intervals (see :mod:`dptree.estimation.intervals`).
    """
    f = [int(x) for x in fanouts]
    L = len(f)
    var = np.asarray(level_var, dtype=np.float64)
    s = [1] * (L + 1)
    for j in range(L - 1, -1, -1):
        s[j] = s[j + 1] * f[j]
    lam = _bottom_up_weights(f, var)
    lam_int = lam.copy()
    lam_int[L] = 0.0  # leaves have no (y - C) term
    # G[j, l] = lambda_j * kappa(j+1, l) for j < l, kappa(j+1, l) = lam~_l prod_{t=j+1}^{l-1} (1 - lambda_t)
    G = np.zeros((L + 1, L + 1))
    for j in range(L):
        for ell in range(j + 1, L + 1):
            G[j, ell] = lam_int[j] * lam[ell] * np.prod(1.0 - lam_int[j + 1 : ell])
    # H[m+1, l] = sum_{j=m+1}^{l-1} G[j, l]  (index shifted by one so m = -1 is row 0)
    H = np.zeros((L + 2, L + 1))
    for m in range(-1, L):
        for ell in range(m + 1, L + 1):
            H[m + 1, ell] = G[m + 1 : ell, ell].sum()
    lo = np.atleast_1d(np.asarray(lo, dtype=np.int64))
    hi = np.atleast_1d(np.asarray(hi, dtype=np.int64))
    if lo.size > _MOMENT_BLOCK:  # blocks of ranges keep the temporaries in cache
        parts = [
            range_error_moments(fanouts, level_var, lo[i : i + _MOMENT_BLOCK], hi[i : i + _MOMENT_BLOCK])
            for i in range(0, lo.size, _MOMENT_BLOCK)
        ]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    # per-level weights of the sums: mv = sigma^2 on measured levels, 0 elsewhere (no term)
    mv = np.where(np.isfinite(var) & (var > 0), var, 0.0)
    mv2 = mv * mv
    sf = np.asarray(s, dtype=np.float64)
    # the whole padded tree inside the range: every node has all-one ancestors; a class of
    # (s_0 / s_l) nodes per level with the constant coefficient lam_l - H[0, l]
    c_root = lam - H[0]
    root_full = ((lo <= 0) & (hi >= s[0] - 1)).astype(np.float64)
    v1 = root_full * float(np.sum(sf[0] / sf * c_root**2 * mv))
    v2 = root_full * float(np.sum(sf[0] / sf * c_root**4 * mv2))
    for side in (0, 1):  # the left (lo) and right (hi) boundary paths
        # A[l] = sum_{j <= m} omega_j G[j, l] along this side's boundary path, level by level
        A = np.zeros((L + 1, lo.size))  # row l: A[l] for every range
        b_prev = np.zeros_like(lo)  # this side's boundary node at level m (root: 0)
        other_prev = np.zeros_like(lo)  # the other side's boundary node at level m
        w_prev = np.minimum(hi, s[0] - 1) - np.maximum(lo, 0) + 1  # overlap (in leaves) at level m
        for m in range(L):
            sm, sn, fm = s[m], s[m + 1], f[m]
            same = b_prev == other_prev
            # partial boundary nodes at level m (on the right side: only where it differs from the left)
            partial = (w_prev > 0) & (w_prev < sm)
            if side == 1:
                partial &= ~same
            omega = w_prev / sm
            a_m = A[m].copy()
            A[m:] += G[m][m:, None] * omega[None, :]  # G[m, l] = 0 for l <= m: rows above unchanged
            coef = lam[m] * omega - a_m
            t = coef * coef * mv[m]
            v1 += partial * t
            v2 += partial * t * t
            # the children at level m+1: numbers fully inside (n_in) and outside (n_out) the range
            cL, cR = lo // sn, hi // sn
            fullL = (np.minimum(hi, (cL + 1) * sn - 1) - np.maximum(lo, cL * sn) + 1) >= sn
            fullR = (np.minimum(hi, (cR + 1) * sn - 1) - np.maximum(lo, cR * sn) + 1) >= sn
            first = b_prev * fm
            if side == 0:
                one = cL == cR
                n_in = np.where(same, np.where(one, fullL, (cR - cL - 1) + fullL + fullR),
                                (first + fm - 1 - cL) + fullL)
                n_out = np.where(same, np.where(one, fm - 1, fm - (cR - cL + 1)), cL - first)
                c_next, other_next = cL, cR
            else:
                n_in = (cR - first) + fullR
                n_out = first + fm - 1 - cR
                c_next, other_next = cR, cL
            n_in = n_in * partial
            n_out = n_out * partial
            per = sf[m + 1] / sf[m + 1 :]
            p1, p2 = per * mv[m + 1 :], per * mv2[m + 1 :]
            X = A[m + 1 :]
            X2 = X * X
            Y = (lam[m + 1 :] - H[m + 1, m + 1 :])[:, None] - X
            Y2 = Y * Y
            # weighted sums over the levels l > m (einsum: no BLAS threads for these thin products)
            v1 += n_in * np.einsum("l,lq->q", p1, Y2) + n_out * np.einsum("l,lq->q", p1, X2)
            v2 += n_in * np.einsum("l,lq,lq->q", p2, Y2, Y2) + n_out * np.einsum("l,lq,lq->q", p2, X2, X2)
            w_prev = np.minimum(hi, (c_next + 1) * sn - 1) - np.maximum(lo, c_next * sn) + 1
            b_prev, other_prev = c_next, other_next
    return v1, v2
