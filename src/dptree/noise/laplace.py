"""Exact discrete Laplace noise, P(x) proportional to exp(-|x|/scale) on Z, and its truncation.

:func:`discrete_laplace` follows Canonne, Kamath and Steinke (NeurIPS 2020, Algorithm 2, last
step: the same law), sampled by exact table inversion on 64-bit words
(:mod:`dptree.noise.inversion`). :func:`truncated_discrete_laplace` is
the TruncLap of Ghazi et al. 2023 (Lemma 2.8) on the integers, with its exact delta
(:func:`truncated_laplace_delta`) and the smallest bound for a target delta
(:func:`truncated_laplace_bound`). The truncated sampler's running time depends on the sampled
values (a rejection loop).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

from dptree.errors import InvalidParameterError
from dptree.noise.inversion import InversionTable, TruncatedGeometricLaw, TwoSidedGeometricLaw
from dptree.noise.parameters import laplace_scale_used
from dptree.noise.sources import RandomSource

__all__ = [
    "discrete_laplace",
    "truncated_discrete_laplace",
    "truncated_laplace_delta",
    "truncated_laplace_bound",
]


_RADIX = 256  # the digits of the magnitude below the top table take values 0..255
_TOP_SCALE = 128  # the top table's scale lam / 256^k is at most this (its size is ~ 55 times it)
_BLOCK = 1 << 15  # samples per pass: the temporaries stay in the CPU caches


@functools.lru_cache(maxsize=256)
def _laplace_plan(lam: Fraction, radix: int, top_scale: int) -> tuple[int, InversionTable, list[InversionTable]]:
    """(L, the table of A, the tables of the digits of D) for the scale ``lam`` (cached per scale)."""
    assert radix & (radix - 1) == 0, "L - 1 - D is D xor (L - 1) only for a power of two"
    k = 0
    while lam / radix**k > top_scale:
        k += 1
    big = radix**k
    top = InversionTable(TwoSidedGeometricLaw(Fraction(big) / lam, 1 / lam))
    digits = [InversionTable(TruncatedGeometricLaw(Fraction(radix**i) / lam, radix)) for i in range(k)]
    return big, top, digits


def discrete_laplace(src: RandomSource, scale: float | Fraction, size: int) -> np.ndarray:
    """``size`` exact samples of the discrete Laplace: P(x) proportional to q^|x|, q = exp(-1/scale).

    Exact table inversion (:mod:`dptree.noise.inversion`; proof there and in docs/notes/privacy.md) of
    the decomposition X = L A + B with L = R^k (R = 256) the smallest power with scale / L <= 128
    and B = X mod L. From P(A = a, B = b) ~ q^|La + b|: P(A = a) ~ rho^a for a >= 0 and
    q rho^(|a|-1) for a <= -1 (rho = q^L); given A, B = D if A >= 0 and B = L - 1 - D if A < 0,
    where D (P(D = d) ~ q^d on 0..L-1) is independent of A, and the base-R digits D_i of D are
    independent with P(D_i = d) ~ (q^(R^i))^d on 0..R-1. Each of A, D_0, .., D_(k-1) costs one
    64-bit word and one table lookup (k = 0 for scale <= 128), with no rejection loop: the random
    bytes used do not depend on the output, except with probability < 2^-39 per sample. The law
    is exact for the scale actually used (:func:`laplace_scale_used`, >= the requested one): the
    law of CKS 2020 (Algorithm 2). Added to an integer query of L1 sensitivity D it gives
    (D/scale)-DP.
    """
    if size < 0:
        raise InvalidParameterError("size must be non-negative")
    lam = laplace_scale_used(scale)
    big, top, digits = _laplace_plan(lam, _RADIX, _TOP_SCALE)
    out = np.empty(size, dtype=np.int64)
    for start in range(0, size, _BLOCK):
        n = min(size, start + _BLOCK) - start
        a = top.draw(src, n)
        if not digits:
            out[start : start + n] = a
            continue
        d = digits[0].draw(src, n)
        for i, table in enumerate(digits[1:], start=1):
            d = d.astype(np.int64) + table.draw(src, n).astype(np.int64) * _RADIX**i
        o = out[start : start + n]
        o[:] = a
        np.multiply(o, big, out=o)
        neg = np.right_shift(a, 8 * a.dtype.itemsize - 1).astype(d.dtype, copy=False)  # -1 where A < 0
        np.add(o, d ^ (neg & d.dtype.type(big - 1)), out=o)  # B = L - 1 - D = D xor (L - 1) when A < 0
    return out


def truncated_discrete_laplace(
    src: RandomSource, scale: float | Fraction, bound: int, size: int
) -> np.ndarray:
    """``size`` exact samples of the truncated discrete Laplace on the integer lattice.

    P(z) is proportional to exp(-|z| / scale) for integers |z| <= ``bound`` and 0 otherwise:
    the TruncLap(scale, bound) of Ghazi et al. 2023 (Lemma 2.8) restricted to Z. Sampled exactly by
    rejection from :func:`discrete_laplace` (the conditional law of a discrete Laplace given
    |Z| <= bound is exactly the truncated law). The scale used is
    :func:`laplace_scale_used` (``scale`` rounded up); callers computing privacy from the
    truncation bound must use that scale (see :func:`truncated_laplace_delta`).
    """
    if size < 0:
        raise InvalidParameterError("size must be non-negative")
    b = int(bound)
    if b < 0 or b != bound:
        raise InvalidParameterError(f"bound must be a non-negative integer, got {bound}")
    out = np.zeros(size, dtype=np.int64)
    if b == 0:
        return out
    todo = np.arange(size)
    while todo.size:
        z = discrete_laplace(src, scale, todo.size)
        ok = np.abs(z) <= b
        out[todo[ok]] = z[ok]
        todo = todo[~ok]
    return out


def truncated_laplace_delta(scale: float | Fraction, bound: int, sensitivity: int = 1) -> float:
    """delta of the truncated discrete Laplace mechanism for an integer query.

    Adding :func:`truncated_discrete_laplace` noise (``scale``, ``bound``) to an integer
    query whose value moves by at most ``sensitivity`` between neighbors is
    (sensitivity / scale_used, delta)-DP with delta = P(|Z| > bound - sensitivity) / 2, i.e.
    the mass of the ``sensitivity`` outermost points on one side, which one neighbor can
    produce and the other cannot: with p = exp(-1/scale_used),
    delta = sum_{j=0}^{s-1} p^(bound-j) / Z_bound,  Z_bound = 1 + 2 p (1 - p^bound) / (1 - p).
    Inside both supports the probability ratio is at most p^(-sensitivity).
    """
    return _truncated_delta(float(laplace_scale_used(scale)), int(bound), int(sensitivity))


def _truncated_delta(lam: float, b: int, s: int) -> float:
    """:func:`truncated_laplace_delta` for the scale used ``lam`` (a float), bound b, sensitivity s."""
    if b < s:
        return 1.0
    # in log space with expm1, stable for tiny epsilon (1 - p underflows to 0 in plain floats)
    one_minus_p = -math.expm1(-1.0 / lam)
    z = 1.0 + 2.0 * math.exp(-1.0 / lam) * (-math.expm1(-b / lam)) / one_minus_p
    edge = math.exp(-(b - s + 1) / lam) * (-math.expm1(-s / lam)) / one_minus_p  # sum_{j<s} p^(b-j)
    return min(1.0, edge / z)


def truncated_laplace_bound(epsilon: float, delta: float) -> int:
    """Smallest integer bound B such that truncated discrete Laplace noise with scale
    1/epsilon and bound B, added to a sensitivity-1 integer query, is (epsilon, delta)-DP.

    Ghazi et al. 2023, Lemma 2.8, give the continuous bound R = ln(1 + (e^eps - 1)/(2 delta)) / eps;
    on the lattice the exact delta of :func:`truncated_laplace_delta` is used instead. The
    result is at most ceil(R) (checked in the tests), usually floor(R) or less. delta(B) is
    decreasing in B: found by doubling and bisection, O(log B) evaluations for any epsilon.
    """
    if not (epsilon > 0 and 0 < delta < 1):
        raise InvalidParameterError("truncated_laplace_bound needs epsilon > 0 and 0 < delta < 1")
    lam = float(laplace_scale_used(1.0 / epsilon))  # the scale used, once (not per evaluation)
    hi = 1
    while _truncated_delta(lam, hi, 1) > delta:
        hi *= 2
    lo = hi // 2  # delta(lo) > delta, or lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _truncated_delta(lam, mid, 1) <= delta:
            hi = mid
        else:
            lo = mid
    return max(hi, 1)
