"""Noise parameters as exact rationals, and the variances of the noise they give.

A scale (or a variance) that is not a small rational is rounded *up* to the next dyadic rational
with about 20 significant bits. Rounding up only adds noise, so a privacy guarantee computed from
the unrounded value still holds; :func:`laplace_scale_used` and :func:`gaussian_sigma2_used`
report the exact values the samplers use, and the variances reported for error bars are those
of the rounded parameters.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from fractions import Fraction
from typing import Iterator

import numpy as np

from dptree.errors import InvalidParameterError

__all__ = [
    "LAPLACE_SCALE_LIMITS",
    "GAUSSIAN_SIGMA2_LIMITS",
    "NoiseScaleError",
    "laplace_scale_used",
    "gaussian_sigma2_used",
    "noise_scale_of",
    "discrete_laplace_variance",
    "discrete_gaussian_variance",
]

_SIGNIFICANT_BITS = 20  # precision of dyadic rounding of noise parameters (relative 2^-20)

#: The discrete Laplace scales the sampler draws exactly. Above 2^56 a draw passes the 2^62 that a
#: release holds (probability e^-64 at 2^56), and past 2^62 the int64 arithmetic of the sampler
#: wraps (then its tables cannot be built); below the smallest normal double the tables overflow.
LAPLACE_SCALE_LIMITS = (2.0**-1022, 2.0**56)
#: The discrete Gaussian sigma^2 the sampler draws exactly: sigma up to 2^55 (its proposals above
#: the tables are discrete Laplace draws of scale floor(sigma) + 1, and |Z| >= 2^62 has
#: probability below e^-2000); the same smallest normal double below.
GAUSSIAN_SIGMA2_LIMITS = (2.0**-1022, 2.0**110)


class NoiseScaleError(InvalidParameterError):
    """A noise parameter outside what the exact samplers draw (:data:`LAPLACE_SCALE_LIMITS`,
    :data:`GAUSSIAN_SIGMA2_LIMITS`). ``factor``: the parameter over the nearest limit (> 1 too
    large, < 1 too small). Plans compute their noise before any budget is spent and name the
    caller's parameter that made it (:func:`noise_scale_of`; ``parameter``: that name, once given)."""

    def __init__(self, message: str, factor: float, parameter: str | None = None) -> None:
        super().__init__(message)
        self.factor = factor
        self.parameter = parameter


def _checked(x: Fraction, limits: tuple[float, float], what: str) -> Fraction:
    """``x`` if the sampler of ``what`` draws it, else a :class:`NoiseScaleError`."""
    lo, hi = limits
    if lo <= x <= hi:
        return x
    big = x > hi
    factor = math.exp(math.log(x.numerator) - math.log(x.denominator) - math.log(hi if big else lo))
    shown = f"{float(x):.3g}" if x < Fraction(10) ** 300 else "more than 1e300"
    raise NoiseScaleError(
        f"a {what} of {shown} is {'above' if big else 'below'} what the exact sampler draws "
        f"({lo:.3g} to {hi:.3g})", factor)


@contextmanager
def noise_scale_of(name: str, value: float, power: float = -1.0, *, given: str = "") -> Iterator[None]:
    """Name the caller's parameter when the noise it calibrates cannot be drawn: a
    :class:`NoiseScaleError` raised inside becomes one that says ``name=value`` (with ``given``,
    e.g. ``"epsilon=1.0"``) leaves a noise scale the samplers cannot draw, and the value to use.
    ``power``: the noise parameter goes as ``value ** power`` (-1: a budget share; 1: a sensitivity;
    -2: a Gaussian budget for sigma^2; 2: a sensitivity for sigma^2). An error that already names
    a parameter (an inner call) passes through."""
    try:
        yield
    except NoiseScaleError as exc:
        if exc.parameter is not None:
            raise
        f = exc.factor
        need = value * f ** (-1.0 / power)
        bound = "at least" if (f > 1) == (power < 0) else "at most"
        if isinstance(value, int) and not isinstance(value, bool):
            need = math.floor(need) if bound == "at most" else math.ceil(need)
            shown = str(need)
        else:
            shown = f"{need:.3g}"
        with_ = f" with {given}" if given else ""
        raise NoiseScaleError(
            f"{name}={value!r}{with_} leaves a noise scale too {'large' if f > 1 else 'small'} to sample "
            f"({exc}); use {bound} {name}={shown}", f, name) from None


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
    """The exact scale the discrete Laplace sampler uses for a requested ``scale`` (>= it); a
    :class:`NoiseScaleError` outside :data:`LAPLACE_SCALE_LIMITS` (the sampler calls it first)."""
    x = _as_fraction(scale)
    if x > 0:
        _checked(x, LAPLACE_SCALE_LIMITS, "discrete Laplace scale")
    t, s = _dyadic_upper(x)
    return Fraction(t, s)  # <= the upper limit, a dyadic rational: rounding up stays within it


def gaussian_sigma2_used(sigma2: float | Fraction) -> Fraction:
    """The exact variance parameter the discrete Gaussian sampler uses (>= the requested one); a
    :class:`NoiseScaleError` outside :data:`GAUSSIAN_SIGMA2_LIMITS` (the sampler calls it first)."""
    x = _as_fraction(sigma2)
    if x > 0:
        _checked(x, GAUSSIAN_SIGMA2_LIMITS, "discrete Gaussian sigma^2")
    t, s = _dyadic_upper(x)
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
