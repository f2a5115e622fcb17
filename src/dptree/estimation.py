"""Least-squares estimation on trees: Honaker's optimal estimator and exact error bars.

Input: noisy node counts y_v with known noise variances sigma_v^2 on a tree whose true counts
satisfy "parent = sum of children". ``sigma_v^2 = inf`` marks a node that was not measured and
``sigma_v^2 = 0`` a node known exactly (e.g. the public total under replace-one neighbours).

:func:`consistent_estimates` is the generalised least-squares (GLS) estimate, computed in two
O(nodes) passes (seed 004, Honaker's equations 10, 11 and 13, written as an inverse-variance
pass up and a proportional correction down; DESIGN section 4):

* up:   leaves z = y, V = sigma^2; internal C = sum of children z, VC = sum of children V,
        z = (y VC + C sigma^2) / (sigma^2 + VC),  V = sigma^2 VC / (sigma^2 + VC);
* down: x_root = z_root; x_c = z_c + V_c / (sum_siblings V) * (x_parent - sum_siblings z).

It works for any arity and for leaves at different depths (seed 001's trees). The result is
consistent: every parent equals the sum of its children. :func:`node_variances` gives the exact
variance of every x_v in O(nodes) (DESIGN section 5), and :func:`range_variance` the exact
variance of any range of leaves of a regular b-ary tree in O(levels) (DESIGN section 4).
Tests check all three against dense weighted least squares.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .errors import InvalidParameterError

__all__ = [
    "TreeEstimate",
    "consistent_estimates",
    "node_variances",
    "range_variance",
    "prefix_block_sums",
]


@dataclass
class TreeEstimate:
    """Consistent estimates ``x`` per level, and the bottom-up estimates ``z`` and variances ``V``."""

    x: list[np.ndarray]
    z: list[np.ndarray]
    V: list[np.ndarray]


def _child_sums(parent: np.ndarray, values: np.ndarray, n_parent: int) -> np.ndarray:
    return np.bincount(parent, weights=values, minlength=n_parent)


def consistent_estimates(
    y: Sequence[np.ndarray],
    var: Sequence[np.ndarray],
    parents: Sequence[np.ndarray | None],
) -> TreeEstimate:
    """GLS estimates of every node (Honaker's two passes, vectorised level by level).

    ``y[j]``, ``var[j]``: measurements and noise variances of the nodes of depth j (root: j=0).
    ``parents[j]``: for j >= 1, the index in level j-1 of each node's parent (``parents[0]`` is
    ignored). A node without children is a leaf and must be measured (finite variance).
    """
    depth = len(y)
    if not (len(var) == depth == len(parents)) or depth == 0:
        raise InvalidParameterError("y, var and parents must describe the same non-empty list of levels")
    yv = [np.asarray(a, dtype=np.float64) for a in y]
    sv = [np.broadcast_to(np.asarray(v, dtype=np.float64), a.shape) for v, a in zip(var, yv)]
    z: list[np.ndarray] = [np.empty(0)] * depth
    V: list[np.ndarray] = [np.empty(0)] * depth
    with np.errstate(divide="ignore", invalid="ignore"):
        for j in range(depth - 1, -1, -1):
            n = yv[j].size
            s2 = sv[j]
            if j + 1 < depth and parents[j + 1] is not None and yv[j + 1].size:
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
            zj = (yv[j] * VC + C * s2) / (s2 + VC)
            Vj = s2 * VC / (s2 + VC)
            unmeasured = ~np.isfinite(s2)
            zj = np.where(unmeasured, C, zj)
            Vj = np.where(unmeasured, VC, Vj)
            exact_both = (s2 == 0) & (VC == 0)
            zj = np.where(exact_both, yv[j], zj)
            Vj = np.where(exact_both, 0.0, Vj)
            zj = np.where(has_child, zj, yv[j])
            Vj = np.where(has_child, Vj, s2)
            z[j], V[j] = zj, Vj
        x: list[np.ndarray] = [np.empty(0)] * depth
        x[0] = z[0].copy()
        for j in range(1, depth):
            par = np.asarray(parents[j], dtype=np.int64)
            n_par = yv[j - 1].size
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


def range_variance(
    block_sizes: Sequence[int], level_var: Sequence[float], lo: np.ndarray, hi: np.ndarray
) -> np.ndarray:
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
