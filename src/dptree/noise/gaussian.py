"""Exact discrete Gaussian noise N_Z(0, sigma2): P(x) proportional to exp(-x^2/(2 sigma2)) on Z.

Up to sigma2 = 10^4 (and up to 4 10^6 for large sizes): exact table inversion on 64-bit words
(:mod:`dptree.noise.inversion`) against integer bounds on the CDF, built from interval chains of
exp(-x^2 / (2 sigma2)) and a bound on the remainder of the normaliser; the tails are searched
exactly with the same uniform. Above: Canonne, Kamath and Steinke, "The Discrete Gaussian for
Differential Privacy" (NeurIPS 2020), Algorithm 3 (discrete Laplace proposals accepted by an exact
Bernoulli(exp(-gamma)), integer arithmetic only; running time depends on the sampled values).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

from dptree.errors import InvalidParameterError
from dptree.noise.bernoulli import _DEN_SAFE, bernoulli_exp_neg
from dptree.noise.inversion import _TAIL_BITS, Interval, InversionTable, _Law, _mul, exp_fixed
from dptree.noise.laplace import _BLOCK, discrete_laplace
from dptree.noise.parameters import _as_fraction, _dyadic_upper, gaussian_sigma2_used
from dptree.noise.sources import RandomSource

__all__ = ["discrete_gaussian"]

_TABLE_SIGMA2 = 4 * 10**6  # largest sigma2 sampled by table inversion (about 30 000 cells)
_SMALL_SIGMA2 = 10**4  # tables up to here are built for any size (in < 50 ms)


@functools.lru_cache(maxsize=64)
def _tail_sums(sigma2: Fraction, p: int) -> tuple[list[int], list[int], int]:
    """Bounds on T(m) 2^p = sum_{y >= m} exp(-y^2 / (2 sigma2)) 2^p for m = 0..M+1, and the bound
    on T(m) for every m > M (the lower bound there is 0).

    g(y + 1) = g(y) r(y) with r(y) = exp(-(2y + 1) / (2 sigma2)) = r(0) s^y, s = exp(-1/sigma2),
    as interval chains; the remainder sum_{y > M} g(y) <= g(M) r(M) / (1 - r(M)) since r decreases.
    """
    big_m = math.ceil(math.sqrt(2 * float(sigma2) * (p + 8) * math.log(2))) + 2
    one = 1 << p
    r, s = exp_fixed(1 / (2 * sigma2), p), exp_fixed(1 / sigma2, p)
    g: list[Interval] = [(one, one)]
    for _ in range(big_m):
        g.append(_mul(g[-1], r, p))
        r = _mul(r, s, p)
    rest = -((-(g[-1][1] * r[1])) // (one - r[1]))  # g(M) r(M) / (1 - r(M)), rounded up
    lo, hi = [0] * (big_m + 2), [rest] * (big_m + 2)
    for m in range(big_m, -1, -1):
        lo[m] = lo[m + 1] + g[m][0]
        hi[m] = hi[m + 1] + g[m][1]
    return lo, hi, rest


class GaussianLaw(_Law):
    """N_Z(0, sigma2) on cells c <-> x = c - K - 1: cells 1..2K+1 are |x| <= K (all but < 2^-40 of
    the mass), cells 0 and 2K+2 the tails, searched exactly. P(X <= x) = T(|x|) / Z for x < 0 and
    1 - T(x + 1) / Z for x >= 0, with Z = 1 + 2 T(1) (symmetry)."""

    exact_tails = True

    def __init__(self, sigma2: Fraction) -> None:
        self.sigma2 = sigma2
        self.a = Fraction(0)
        self.k = max(1, math.ceil(math.sqrt(2 * float(sigma2) * _TAIL_BITS * math.log(2))))
        self.offset = self.k + 1
        self.ncells = 2 * self.k + 3
        self.tail_cells = (0, 2 * self.k + 2)

    def cdf_at(self, c: int, p: int) -> Interval:
        g = p + 16
        lo, hi, rest = _tail_sums(self.sigma2, g)
        one = 1 << g

        def tail(m: int) -> Interval:
            return (lo[m], hi[m]) if m < len(lo) else (0, rest)

        z = (one + 2 * lo[1], one + 2 * hi[1])
        x = c - self.offset
        t = tail(-x if x < 0 else x + 1)
        f_lo, f_hi = (t[0] << g) // z[1], -((-(t[1] << g)) // z[0])  # T / Z
        if x >= 0:
            f_lo, f_hi = one - f_hi, one - f_lo
        return max(0, f_lo >> 16), min(1 << p, -((-f_hi) >> 16))

    def cdf_table(self, p: int) -> list[Interval]:
        return [self.cdf_at(c, p) for c in range(self.ncells - 1)]

    def finish(self, src: RandomSource, cells: np.ndarray) -> np.ndarray:
        return cells.astype(np.int64) - self.offset


@functools.lru_cache(maxsize=64)
def _gaussian_table(sigma2: Fraction) -> InversionTable:
    return InversionTable(GaussianLaw(sigma2))


def discrete_gaussian(src: RandomSource, sigma2: float | Fraction, size: int) -> np.ndarray:
    """``size`` exact samples of the discrete Gaussian N_Z(0, sigma2), sigma2 as used by
    :func:`dptree.noise.gaussian_sigma2_used` (>= the requested one).

    sigma2 <= 10^4, or <= 4 10^6 when ``size`` is at least 50 times the table (a public choice
    that pays for building it): exact table inversion, one 64-bit word per sample (whatever the
    output, except with probability < 2^-39). Otherwise CKS 2020, Algorithm 3: t = floor(sigma) + 1;
    Y ~ discrete Laplace(t); accept with Bernoulli(exp(-(|Y| - sigma2/t)^2 / (2 sigma2))).
    Adding it to an integer query whose change has squared L2 norm D2 gives (D2 / (2 sigma2))-zCDP
    (CKS 2020, Theorem 4 composed over coordinates).
    """
    if size < 0:
        raise InvalidParameterError("size must be non-negative")
    s2 = gaussian_sigma2_used(sigma2)  # refused outside the limits the sampler draws
    p, q = _dyadic_upper(_as_fraction(sigma2))  # sigma2 = p/q exactly (= s2)
    cells = 15 * math.isqrt(p // q + 1)  # about the table's size
    if s2 <= _SMALL_SIGMA2 or (s2 <= _TABLE_SIGMA2 and size >= 50 * cells):  # the build pays off
        table = _gaussian_table(s2)
        out = np.empty(size, dtype=np.int64)
        for start in range(0, size, _BLOCK):
            n = min(size, start + _BLOCK) - start
            out[start : start + n] = table.draw(src, n)
        return out
    return _cks_gaussian(src, p, q, size)


def _cks_gaussian(src: RandomSource, p: int, q: int, size: int) -> np.ndarray:
    """CKS 2020, Algorithm 3, for sigma2 = p/q."""
    t = math.isqrt(p // q) + 1  # floor(sqrt(p/q)) = isqrt(floor(p/q)), so t = floor(sigma) + 1
    out = np.zeros(size, dtype=np.int64)
    todo = np.arange(size)
    den_py = 2 * p * q * t * t
    while todo.size:
        y = discrete_laplace(src, t, todo.size)
        ay = np.abs(y)
        # gamma = (|Y| q t - p)^2 / (2 p q t^2), in int64 where it fits, else Python ints
        if den_py < _DEN_SAFE and int(ay.max(initial=0)) * q * t + p < (1 << 31):
            num = (ay * (q * t) - p) ** 2
            den = np.full(todo.size, den_py, dtype=np.int64)
        else:
            num = np.array([(int(v) * q * t - p) ** 2 for v in ay], dtype=object)
            den = np.full(todo.size, den_py, dtype=object)
        accept = bernoulli_exp_neg(src, num, den)
        out[todo[accept]] = y[accept]
        todo = todo[~accept]
    return out
