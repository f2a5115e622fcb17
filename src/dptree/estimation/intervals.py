"""Confidence intervals for least-squares estimates built from Laplace or Gaussian noise.

An estimate's error is sum_u c_u eta_u over independent noises. Gaussian noise makes it (very
nearly) normal. Laplace noise is a scale mixture of normals (eta = sqrt(sigma^2 E) N with
E ~ Exp(1)), so the error is N * sqrt(W) with W = sum_u c_u^2 sigma_u^2 E_u: a single dominant
node gives Laplace tails, many similar nodes give normal ones. We match W by a gamma law with the
same mean and variance: shape k = Var^2 / sum_u (c_u^2 sigma_u^2)^2 (k = 1 is exactly Laplace,
k -> infinity the normal), and use the quantile of that variance-gamma law. Measured coverage is
in docs/notes/benchmarks.md; with the normal approximation alone, Laplace ranges dominated by one node
covered only about 93.5% at the 95% level.

This module is the one place intervals are made: :data:`LEVEL` (the declared constraint on every
``level``), :func:`multiplier` (the normal quantile, or the variance-gamma one from
:func:`gamma_shape`) and :func:`symmetric_interval` (estimate -+ multiplier * stderr).
"""

from __future__ import annotations

from functools import lru_cache
from numbers import Real
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from dptree._validation import Interval, check_param

__all__ = [
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "LEVEL",
    "check_level",
    "normal_multiplier",
    "laplace_mixture_multiplier",
    "gamma_shape",
    "multiplier",
    "symmetric_interval",
    "clip_to_counts",
]

#: the constraint on a confidence level (``validate_params({"level": LEVEL})``)
LEVEL = [Interval(Real, 0, 1, closed="neither", hint="a confidence level, e.g. 0.95")]

_K_GRID = np.logspace(0.0, 4.0, 161)
_N_QUANTILES = 4000


def check_level(level: object) -> float:
    """A confidence level: a number strictly between 0 and 1 (:data:`LEVEL`; every ``ci`` and ``--ci``)."""
    check_param("level", level, LEVEL)
    return float(level)  # type: ignore[arg-type]


def normal_multiplier(level: float) -> float:
    """z such that a normal error lies within +-z standard deviations with probability ``level``.
    Computed from the tail (1 - level) / 2, which stays exact for levels within 1e-16 of one."""
    return -NormalDist().inv_cdf((1.0 - check_level(level)) / 2.0)


def clip_to_counts(low: np.ndarray | float, high: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """An interval for a true count (>= 0) intersected with [0, inf): both ends are clipped at 0,
    so a very negative estimate gives [0, 0], never low > high."""
    return np.maximum(low, 0.0), np.maximum(high, 0.0)


@lru_cache(maxsize=16)
def _table(level: float) -> np.ndarray:
    """The multiplier z(k) at every k of :data:`_K_GRID`: the root of the coverage
    c_k(z) = E[2 Phi(z / sqrt(W)) - 1] - level, W ~ Gamma(k, 1/k), the expectation over
    :data:`_N_QUANTILES` mid-quantiles of W. c_k is increasing and concave in z >= 0 (a mean of
    concave functions), so Newton's method from z = 0 rises monotonically to the root without
    overshooting; all k are solved at once (vectorised), and a row that has not converged falls
    back to a bracketed root finder."""
    from scipy.optimize import brentq
    from scipy.special import gammaincinv, ndtr

    probs = (np.arange(_N_QUANTILES) + 0.5) / _N_QUANTILES
    root_g = np.sqrt(gammaincinv(_K_GRID[:, None], probs[None, :]) / _K_GRID[:, None])  # mean one, variance 1/k
    inv = 1.0 / root_g
    density = 2.0 / np.sqrt(2.0 * np.pi)

    def coverage(z: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return (2.0 * ndtr(z[:, None] * inv[rows]) - 1.0).mean(axis=1) - level

    z = np.zeros(_K_GRID.size)
    done = np.zeros(_K_GRID.size, dtype=bool)
    for _ in range(100):
        rows = np.flatnonzero(~done)
        if rows.size == 0:
            break
        u = z[rows, None] * inv[rows]
        slope = (density * np.exp(-0.5 * u * u) * inv[rows]).mean(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = -coverage(z[rows], rows) / slope
        ok = np.isfinite(step) & (step >= 0.0)
        z[rows[ok]] += step[ok]
        done[rows[~ok]] = True  # flat (far tail) or past the root by rounding: the bracket below
        done[rows[ok & (step <= 1e-13 * np.maximum(z[rows], 1.0))]] = True
    for i in range(_K_GRID.size):  # check every root; refine the rare row Newton left behind
        rows = np.array([i])

        def c(v: float, rows: np.ndarray = rows) -> float:
            return float(coverage(np.array([v]), rows)[0])

        if abs(c(z[i])) > 1e-12:
            hi = 60.0
            while c(hi) < 0.0 and hi < 1e6:  # levels within 1e-15 of one
                hi *= 4.0
            z[i] = brentq(c, 0.0, hi, xtol=1e-12) if c(hi) >= 0.0 else hi
    return z


def laplace_mixture_multiplier(k: np.ndarray, level: float) -> np.ndarray:
    """Multiplier of the standard error for an error N*sqrt(W), W ~ Gamma(k, Var/k) (see above)."""
    lev = check_level(level)
    table = _table(lev)
    kk = np.clip(np.asarray(k, dtype=np.float64), 1.0, None)
    out = np.interp(np.log(kk), np.log(_K_GRID), table)
    return np.where(
        kk > _K_GRID[-1], normal_multiplier(lev) + (table[-1] - normal_multiplier(lev)) * _K_GRID[-1] / kk, out
    )


def gamma_shape(v1: ArrayLike, v2: ArrayLike) -> np.ndarray:
    """The shape k = Var^2 / sum_u (c_u^2 sigma_u^2)^2 of the gamma law matched to W, from the
    moments ``v1 = sum_u c_u^2 sigma_u^2`` and ``v2 = sum_u (c_u^2 sigma_u^2)^2`` (inf: no noise,
    normal limit)."""
    a, b = np.asarray(v1, dtype=np.float64), np.asarray(v2, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a * a / b, np.inf)


def multiplier(family: Literal["laplace", "gaussian"], level: float, shape: Any = None) -> np.ndarray:
    """The multiplier m of the standard error at ``level``: the normal quantile for Gaussian noise,
    the variance-gamma quantile at :func:`gamma_shape` ``shape`` for Laplace noise (one per
    estimate; Gaussian multipliers are broadcast to ``shape``'s length when it is given)."""
    if family == "gaussian":
        z = normal_multiplier(level)
        return np.full(np.shape(shape), z) if shape is not None else np.asarray(z)
    return laplace_mixture_multiplier(np.asarray(shape, dtype=np.float64), level)


def symmetric_interval(estimate: Any, stderr: Any, mult: Any) -> tuple[Any, Any]:
    """The interval estimate -+ mult * stderr (elementwise)."""
    half = np.asarray(mult) * stderr
    return estimate - half, estimate + half


# --------------------------------------------------------------------------- Clopper-Pearson (binomial)


def clopper_pearson_lower(k: np.ndarray | int, n: int, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson lower bound(s) on p from k successes of n: the ``alpha`` quantile
    of Beta(k, n - k + 1), and 0 where k = 0. Vectorised over ``k``."""
    from scipy.stats import beta

    k_arr = np.asarray(k, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = beta.ppf(alpha, np.maximum(k_arr, 1), n - k_arr + 1)
    return np.where(k_arr > 0, lo, 0.0)


def clopper_pearson_upper(k: np.ndarray | int, n: int, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson upper bound(s) on p from k successes of n: the ``1 - alpha``
    quantile of Beta(k + 1, n - k), and 1 where k = n. Vectorised over ``k``."""
    from scipy.stats import beta

    k_arr = np.asarray(k, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        hi = beta.ppf(1.0 - alpha, k_arr + 1, np.maximum(n - k_arr, 1))
    return np.where(k_arr < n, hi, 1.0)
