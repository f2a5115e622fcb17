"""Statistics of the privacy audits: Clopper-Pearson bounds, the epsilon lower bound, likelihood ratios.

The one Clopper-Pearson implementation of dptree (exact binomial bounds from beta quantiles;
Clopper & Pearson 1934) is in :mod:`dptree.estimation.intervals`: the audit harness, the tests'
hand-rolled audits and :func:`dptree.hierarchy.error_metrics.clopper_pearson_upper` all use it. Each one-sided bound at
significance ``alpha`` fails with probability at most ``alpha``.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from dptree.errors import InvalidParameterError
from dptree.estimation.intervals import clopper_pearson_lower, clopper_pearson_upper

__all__ = [
    "clopper_pearson",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_lower_bound",
    "epsilon_lower_bounds",
    "laplace_llr",
    "gaussian_llr",
]


# Clopper-Pearson: the bounds live with the other intervals (dptree.estimation.intervals).


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """One-sided Clopper-Pearson bounds, each at level ``alpha``: (lower, upper) for k/n."""
    if n <= 0:
        raise InvalidParameterError("clopper_pearson needs n > 0")
    return float(clopper_pearson_lower(k, n, alpha)), float(clopper_pearson_upper(k, n, alpha))


# --------------------------------------------------------------------------- epsilon lower bounds


def epsilon_lower_bound(k_a: int, k_b: int, n: int, alpha: float, delta: float) -> tuple[float, float, float]:
    """(eps_lb, p_a_lower, p_b_upper) at total significance ``alpha`` (alpha/2 per bound).

    eps_lb = log((p_a_lower - delta) / p_b_upper): if the mechanism is (epsilon, delta)-DP,
    eps_lb > epsilon with probability at most ``alpha``; -inf when p_a_lower <= delta.
    """
    pa, _ = clopper_pearson(k_a, n, alpha / 2.0)
    _, pb = clopper_pearson(k_b, n, alpha / 2.0)
    num = pa - delta
    if num <= 0.0:
        return -math.inf, pa, pb
    return math.log(num / pb), pa, pb


def epsilon_lower_bounds(k_a: np.ndarray, k_b: np.ndarray, n: int, alpha: float, delta: float) -> np.ndarray:
    """Vectorised :func:`epsilon_lower_bound` (the bound only), for candidate events."""
    a = alpha / 2.0
    pa = clopper_pearson_lower(k_a, n, a)
    pb = clopper_pearson_upper(k_b, n, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        num = pa - delta
        out = np.where(num > 0, np.log(np.maximum(num, 1e-300) / pb), -np.inf)
    return out


# --------------------------------------------------------------------------- likelihood ratios


def laplace_llr(c0: np.ndarray, c1: np.ndarray, scales: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """log P0(y)/P1(y) for y = c + discrete Laplace noise (per-coordinate ``scales``).

    (|y - c1| - |y - c0|) / scale, summed over coordinates where c0 != c1.
    """
    c0 = np.asarray(c0, dtype=np.float64)
    c1 = np.asarray(c1, dtype=np.float64)
    s = np.broadcast_to(np.asarray(scales, dtype=np.float64), c0.shape)
    idx = np.flatnonzero(c0 != c1)

    def stat(y: np.ndarray) -> np.ndarray:
        yy = np.asarray(y, dtype=np.float64)[:, idx]
        return ((np.abs(yy - c1[idx]) - np.abs(yy - c0[idx])) / s[idx]).sum(axis=1)

    return stat


def gaussian_llr(c0: np.ndarray, c1: np.ndarray, sigma2: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """log P0(y)/P1(y) for y = c + discrete Gaussian noise (per-coordinate ``sigma2``)."""
    c0 = np.asarray(c0, dtype=np.float64)
    c1 = np.asarray(c1, dtype=np.float64)
    s2 = np.broadcast_to(np.asarray(sigma2, dtype=np.float64), c0.shape)
    idx = np.flatnonzero(c0 != c1)

    def stat(y: np.ndarray) -> np.ndarray:
        yy = np.asarray(y, dtype=np.float64)[:, idx]
        d = c0[idx] - c1[idx]
        return ((yy - (c0[idx] + c1[idx]) / 2.0) * d / s2[idx]).sum(axis=1)

    return stat
