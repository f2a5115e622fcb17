"""Noise parameters as exact rationals, and the variances of the noise they give.

A scale (or a variance) that is not a small rational is rounded *up* to the next dyadic rational
with about 20 significant bits. Rounding up only adds noise, so a privacy guarantee computed from
the unrounded value still holds; :func:`laplace_scale_used` and :func:`gaussian_sigma2_used`
report the exact values the samplers use, and the variances reported for error bars are those
of the rounded parameters.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dptree.errors import InvalidParameterError

__all__ = [
    "laplace_scale_used",
    "gaussian_sigma2_used",
    "discrete_laplace_variance",
    "discrete_gaussian_variance",
]

_SIGNIFICANT_BITS = 20  # precision of dyadic rounding of noise parameters (relative 2^-20)


def _dyadic_upper(x: Fraction) -> tuple[int, int]:
    """A rational t/s >= x with s a power of two and about 20 significant bits (exact if small)."""
    if x <= 0:
        raise InvalidParameterError(f"noise parameter must be positive, got {float(x)}")
    if x.denominator <= (1 << 20) and x.numerator <= (1 << 40):
        return x.numerator, x.denominator
    exp2 = math.floor(math.log2(x.numerator) - math.log2(x.denominator))
    shift = max(0, _SIGNIFICANT_BITS - exp2)
    s = 1 << shift
    t = -((-x.numerator * s) // x.denominator)  # ceil(x * s)
    return t, s


def _as_fraction(x: float | int | Fraction) -> Fraction:
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (int, np.integer)):
        return Fraction(int(x))
    xf = float(x)
    if not math.isfinite(xf):
        raise InvalidParameterError(f"noise parameter must be finite, got {x}")
    return Fraction(xf)


def laplace_scale_used(scale: float | Fraction) -> Fraction:
    """The exact scale the discrete Laplace sampler uses for a requested ``scale`` (>= it)."""
    t, s = _dyadic_upper(_as_fraction(scale))
    return Fraction(t, s)


def gaussian_sigma2_used(sigma2: float | Fraction) -> Fraction:
    """The exact variance parameter the discrete Gaussian sampler uses (>= the requested one)."""
    t, s = _dyadic_upper(_as_fraction(sigma2))
    return Fraction(t, s)


def discrete_laplace_variance(scale: float | Fraction) -> float:
    """Variance of the discrete Laplace with the given scale: 2p/(1-p)^2 with p = exp(-1/scale)."""
    lam = float(laplace_scale_used(scale))
    p = math.exp(-1.0 / lam)
    one_minus_p = -math.expm1(-1.0 / lam)  # accurate for huge scales, where 1 - p underflows
    return 2.0 * p / one_minus_p**2


def discrete_gaussian_variance(sigma2: float | Fraction) -> float:
    """Exact variance of the discrete Gaussian N_Z(0, sigma2) (relative error < 1e-15).

    Summed directly for sigma2 <= 64; above that it equals sigma2 to within a relative
    8 pi^2 sigma2 exp(-2 pi^2 sigma2) < 1e-500 (Poisson summation), so sigma2 is returned.
    """
    s2 = float(gaussian_sigma2_used(sigma2))
    if s2 > 64.0:
        return s2
    half = int(math.ceil(math.sqrt(s2) * 40 + 10))
    x = np.arange(-half, half + 1, dtype=np.float64)
    w = np.exp(-(x * x) / (2.0 * s2))
    return float((w * x * x).sum() / w.sum())
