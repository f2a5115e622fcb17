"""Exact discrete Laplace noise, P(x) proportional to exp(-|x|/scale) on Z, and its truncation.

:func:`discrete_laplace` follows Canonne, Kamath and Steinke (NeurIPS 2020, Algorithm 2, last
step), with an exact inversion sampler for the magnitude. :func:`truncated_discrete_laplace` is
seed 001's TruncLap (Lemma 2.8) on the integers, with its exact delta
(:func:`truncated_laplace_delta`) and the smallest bound for a target delta
(:func:`truncated_laplace_bound`). Running time depends on the sampled values (rejection loops).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dptree.errors import InvalidParameterError
from dptree.noise.parameters import laplace_scale_used
from dptree.noise.sources import RandomSource

__all__ = [
    "discrete_laplace",
    "truncated_discrete_laplace",
    "truncated_laplace_delta",
    "truncated_laplace_bound",
]


# Margins for the float fast path of :func:`discrete_laplace`. The decision floor(x) is taken from
# floats only when x is farther than _FLOAT_SLACK * lambda * (1 + |ln U|) + _FLOAT_SLACK * x from an
# integer: float64 log/multiply errors are below 2^-50 relative, so 2^-40 leaves a margin of
# ~2^10 times the worst error. Tests enlarge it to push many samples through the exact path.
_FLOAT_SLACK = 2.0**-40


def _exp_neg_bounds(x: Fraction, digits: int) -> tuple[Fraction, Fraction]:
    """Rational bounds lo <= exp(-x) <= hi from correctly rounded decimal arithmetic."""
    import decimal

    ctx = decimal.Context(prec=digits)
    xd = ctx.divide(decimal.Decimal(x.numerator), decimal.Decimal(x.denominator))
    val = ctx.exp(-xd)
    # relative error of val: argument rounding (<= x * 10^(1-P)) plus result rounding (10^(1-P))
    rel = Fraction(1, 10 ** (digits - 1)) * (1 + x + 1)
    v = Fraction(val)
    return v * (1 - rel), v * (1 + rel)


def _geometric_exact(src: RandomSource, word: int, lam: Fraction, guess: int) -> int:
    """M = #{m >= 1 : U < exp(-m/lam)} exactly, for U whose first 64 bits are ``word``.

    Further bits of U are drawn as needed; thresholds come from :func:`_exp_neg_bounds`.
    """
    a, k, digits = word, 64, 40
    m = max(guess - 1, 0)

    def below(mm: int) -> bool:  # is U < exp(-mm/lam)?  (mm = 0: always)
        nonlocal a, k, digits
        if mm == 0:
            return True
        while True:
            lo_c, hi_c = _exp_neg_bounds(Fraction(mm) / lam, digits)
            if Fraction(a + 1, 1 << k) <= lo_c:
                return True
            if Fraction(a, 1 << k) >= hi_c:
                return False
            a = (a << 64) | int.from_bytes(src.random_bytes(8), "little")
            k += 64
            digits += 25

    while not below(m):
        m -= 1
    while below(m + 1):
        m += 1
    return m


def discrete_laplace(src: RandomSource, scale: float | Fraction, size: int) -> np.ndarray:
    """``size`` exact samples of the discrete Laplace: P(x) proportional to exp(-|x|/scale).

    As in CKS 2020 (Algorithm 2, last step): a fair sign B and a magnitude M with
    P(M >= m) = q^m, q = exp(-1/scale); (B = 1, M = 0) is rejected, giving P(x) ~ q^|x|.
    M is sampled by inversion, M = #{m >= 1 : U < q^m} for U uniform on [0, 1), from the first 64
    random bits of U: the float value of floor(-scale ln U) is used only when the whole interval of
    U those bits allow, widened by a rigorous float-error margin, gives the same integer; otherwise
    (probability about 2^-39 per sample) the same U is extended with more random bits and compared
    with correctly rounded decimal values of q^m (:func:`_geometric_exact`). The result is exactly
    distributed for the scale actually used (:func:`laplace_scale_used`, >= the requested scale).
    Adding it to an integer query of L1 sensitivity D gives (D/scale)-DP.
    """
    if size < 0:
        raise InvalidParameterError("size must be non-negative")
    lam = laplace_scale_used(scale)
    out = np.zeros(size, dtype=np.int64)
    for start in range(0, size, _LAPLACE_CHUNK):  # bounds the float temporaries (~80 B/sample)
        stop = min(size, start + _LAPLACE_CHUNK)
        out[start:stop] = _discrete_laplace_block(src, lam, stop - start)
    return out


_LAPLACE_CHUNK = 1 << 18


def _discrete_laplace_block(src: RandomSource, lam: Fraction, size: int) -> np.ndarray:
    """One block of :func:`discrete_laplace` (same algorithm, at most ``_LAPLACE_CHUNK`` samples)."""
    lam_f = float(lam)
    out = np.zeros(size, dtype=np.int64)
    todo = np.arange(size)
    two64 = 2.0**64
    while todo.size:
        n = todo.size
        words = np.frombuffer(src.random_bytes(8 * n), dtype=np.uint64)
        signs = np.unpackbits(np.frombuffer(src.random_bytes((n + 7) // 8), dtype=np.uint8))[:n]
        w = words.astype(np.float64)  # relative rounding <= 2^-53, covered by the margin
        with np.errstate(divide="ignore"):
            ln_hi = np.log(w / two64)  # U >= w / 2^64
        ln_lo = np.log((w + 1.0) / two64)  # U < (w + 1) / 2^64
        x_hi = -lam_f * ln_hi  # largest possible -lam ln U
        x_lo = -lam_f * ln_lo
        slack = _FLOAT_SLACK * (lam_f * (1.0 - ln_hi) + x_hi)
        with np.errstate(invalid="ignore"):
            m_lo = np.floor(x_lo - slack)
            m_hi = np.floor(x_hi + slack)
        sure = np.isfinite(m_hi) & (m_lo == m_hi) & (m_hi < 2.0**62)
        mag = np.zeros(n, dtype=np.int64)
        mag[sure] = m_lo[sure].astype(np.int64)
        for i in np.flatnonzero(~sure):
            guess = int(m_lo[i]) if np.isfinite(m_lo[i]) and m_lo[i] >= 0 else 0
            mag[i] = _geometric_exact(src, int(words[i]), lam, guess)
        ok = ~((signs == 1) & (mag == 0))
        out[todo[ok]] = np.where(signs[ok] == 1, -mag[ok], mag[ok])
        todo = todo[~ok]
    return out


def truncated_discrete_laplace(
    src: RandomSource, scale: float | Fraction, bound: int, size: int
) -> np.ndarray:
    """``size`` exact samples of the truncated discrete Laplace on the integer lattice.

    P(z) is proportional to exp(-|z| / scale) for integers |z| <= ``bound`` and 0 otherwise:
    seed 001's TruncLap(scale, bound) (Lemma 2.8) restricted to Z. Sampled exactly by
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
    lam = float(laplace_scale_used(scale))
    b, s = int(bound), int(sensitivity)
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

    Seed 001's Lemma 2.8 gives the continuous bound R = ln(1 + (e^eps - 1)/(2 delta)) / eps;
    on the lattice the exact delta of :func:`truncated_laplace_delta` is used instead. The
    result is at most ceil(R) (checked in the tests), usually floor(R) or less. delta(B) is
    decreasing in B: found by doubling and bisection, O(log B) evaluations for any epsilon.
    """
    if not (epsilon > 0 and 0 < delta < 1):
        raise InvalidParameterError("truncated_laplace_bound needs epsilon > 0 and 0 < delta < 1")
    scale = 1.0 / epsilon
    hi = 1
    while truncated_laplace_delta(scale, hi) > delta:
        hi *= 2
    lo = hi // 2  # delta(lo) > delta, or lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if truncated_laplace_delta(scale, mid) <= delta:
            hi = mid
        else:
            lo = mid
    return max(hi, 1)
