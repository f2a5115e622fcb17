"""Dense weighted least squares: the test oracle for estimation and variances (DESIGN section 8)."""

from __future__ import annotations

import numpy as np


def dense_gls(A: np.ndarray, y: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """GLS estimate of the leaf vector b from y = A b + noise with variances ``var``.

    Rows with var = inf are ignored; rows with var = 0 are exact equality constraints.
    Returns (estimate of A b for every row, covariance matrix of those estimates).
    """
    meas = np.isfinite(var) & (var > 0)
    exact = var == 0
    Am, ym, wm = A[meas], y[meas], 1.0 / var[meas]
    H = Am.T @ (wm[:, None] * Am)
    g = Am.T @ (wm * ym)
    C = A[exact]
    c = y[exact]
    k = C.shape[0]
    n = A.shape[1]
    K = np.zeros((n + k, n + k))
    K[:n, :n] = H
    K[:n, n:] = C.T
    K[n:, :n] = C
    Kinv = np.linalg.inv(K)
    sol = Kinv @ np.concatenate([g, c])
    b = sol[:n]
    M = Kinv[:n, :n]
    return A @ b, A @ M @ A.T


def incidence(parents: list[np.ndarray | None], sizes: list[int]) -> tuple[np.ndarray, list[int]]:
    """Node-by-leaf incidence matrix of a tree given by parent arrays per level.

    Leaves are nodes without children (at any depth). Returns (A, offsets of each level).
    """
    offsets = np.cumsum([0] + sizes[:-1]).tolist()
    total = sum(sizes)
    parent_of = np.full(total, -1)
    for j in range(1, len(sizes)):
        parent_of[offsets[j] : offsets[j] + sizes[j]] = offsets[j - 1] + np.asarray(parents[j])
    has_child = np.zeros(total, bool)
    has_child[parent_of[parent_of >= 0]] = True
    leaves = np.flatnonzero(~has_child)
    A = np.zeros((total, leaves.size))
    for col, leaf in enumerate(leaves):
        v = leaf
        while v >= 0:
            A[v, col] = 1.0
            v = parent_of[v]
    return A, offsets
