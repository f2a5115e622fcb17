"""Exact sampling for the exponential mechanism, in rational arithmetic (issue 5, seed 002).

The exponential mechanism outputs candidate i with probability proportional to
length_i * exp(epsilon * score_i / (2 * sensitivity)). Floating-point implementations (weights
exp(...) in doubles, or Gumbel-max with float noise) leak through rounding, exactly as textbook
float Laplace does (Mironov 2012), so dptree samples it *exactly*:

1. The base exp(epsilon / (2 * sensitivity)) is replaced by a rational base b = p / 2^K with
   1 < b <= exp(epsilon / (2 * sensitivity)), computed from a partial sum of the exponential
   series (every partial sum of e^x, x > 0, is a lower bound). The mechanism with weights
   length_i * b^score_i is (2 * sensitivity * ln b)-DP <= epsilon-DP by the usual proof
   (McSherry & Talwar 2007): for neighbors every weight changes by a factor in
   [b^-sens, b^sens] and so does the normaliser. Rounding the base *down* is conservative.
2. Exact rejection sampling. Let r_i = max_score - score_i >= 0 so the target weight is
   length_i * b^-r_i. The proposal weight is length_i * 2^-m_i with the integer
   m_i = floor(r_i * L), L a rational strictly below log2 b, so 2^-m_i >= b^-r_i and the
   acceptance probability b^-r_i * 2^m_i lies in (2^-1-tiny, 1]. The proposal is sampled with
   exact integer weights (uniform_int over their sum); the acceptance Bernoulli compares a
   lazily drawn uniform bit string with rigorous lower/upper bounds of b^-r_i * 2^m_i computed
   at increasing precision, so it is exact (no rounding decides any outcome) and cheap even
   for r_i in the millions. Accepted draws have exactly the target distribution.

Running time depends on the data through the number of rejections (expected < 2.1 rounds), as
for the CKS samplers.
"""

from __future__ import annotations

import bisect
import functools
import math
from fractions import Fraction

from dptree.errors import InvalidParameterError
from dptree.noise.integers import uniform_int
from dptree.noise.parameters import _as_fraction
from dptree.noise.sources import RandomSource

__all__ = ["exp_lower_rational", "bernoulli_pow_ratio", "sample_exponential_index"]

_EXP_BASE_BITS = 64


def exp_lower_rational(x: float | Fraction) -> tuple[int, int]:
    """A rational (p, q), q = 2^K, p odd, with 1 < p/q <= exp(x) for x > 0 (p/q within 2^-60 of e^x).

    p/q is a truncated partial sum of the exponential series, hence a rigorous lower bound.
    """
    return _exp_lower_rational_cached(_as_fraction(x))


@functools.lru_cache(maxsize=256)
def _exp_lower_rational_cached(xf: Fraction) -> tuple[int, int]:
    if xf <= 0:
        raise InvalidParameterError(f"exp_lower_rational needs x > 0, got {float(xf)}")
    extra = max(0, -math.floor(math.log2(float(xf)))) if float(xf) > 0 else 1100
    k = _EXP_BASE_BITS + extra
    q = 1 << k
    total = Fraction(0)
    term = Fraction(1)
    j = 0
    tol = Fraction(1, 1 << (k + 8))
    while True:  # x > 0: partial sums increase to e^x; stop once terms are negligible
        total += term
        j += 1
        term = term * xf / j
        if term < tol and j > xf:
            break
    p = math.floor(total * q)
    if p % 2 == 0:
        p -= 1
    if p <= q:
        raise InvalidParameterError(f"epsilon too small to represent exactly: {float(xf)}")
    return p, q


def _log2_lower(p: int, q: int) -> Fraction:
    """A rational strictly below log2(p/q) for p > q > 0 (relative margin 2^-20)."""
    lf = math.log1p((p - q) / q) / math.log(2.0)
    return Fraction(lf) * (1 - Fraction(1, 1 << 20))


def _trunc(m: int, e: int, bits: int, up: bool) -> tuple[int, int]:
    excess = m.bit_length() - bits
    if excess <= 0:
        return m, e
    if up:
        return -((-m) >> excess), e + excess
    return m >> excess, e + excess


def _pow_bounds(p: int, r: int, bits: int) -> tuple[int, int, int, int]:
    """(lo_m, lo_e, hi_m, hi_e) with lo_m 2^lo_e <= p^r <= hi_m 2^hi_e, mantissas ~``bits`` bits."""
    lo_m, lo_e, hi_m, hi_e = 1, 0, 1, 0
    for bit in bin(r)[2:]:
        lo_m, lo_e = _trunc(lo_m * lo_m, 2 * lo_e, bits, False)
        hi_m, hi_e = _trunc(hi_m * hi_m, 2 * hi_e, bits, True)
        if bit == "1":
            lo_m, lo_e = _trunc(lo_m * p, lo_e, bits, False)
            hi_m, hi_e = _trunc(hi_m * p, hi_e, bits, True)
    return lo_m, lo_e, hi_m, hi_e


def bernoulli_pow_ratio(src: RandomSource, p: int, k: int, r: int, m: int) -> bool:
    """Exact Bernoulli(x) with x = 2^(k*r + m) / p^r (the caller guarantees 0 < x <= 1).

    A uniform U in [0, 1) is drawn bit by bit; x is bracketed by rigorous bounds at growing
    precision until the first drawn bits decide U < x. Exact; expected O(1) refinements.
    """
    if r == 0:
        if m > 0:
            raise InvalidParameterError("bernoulli_pow_ratio: x > 1")
        return uniform_int(src, 0, (1 << -m) - 1) == 0 if m < 0 else True
    frac_bits = 64
    u = int.from_bytes(src.random_bytes(8), "little")
    while True:
        prec = frac_bits + 32
        lo_m, lo_e, hi_m, hi_e = _pow_bounds(p, r, prec)
        top = frac_bits + k * r + m
        s_lo = top - hi_e  # x_lo * 2^F = 2^(top - hi_e) / hi_m
        x_lo = (1 << s_lo) // hi_m if s_lo >= 0 else 0
        s_hi = top - lo_e
        x_hi = -((-(1 << s_hi)) // lo_m) if s_hi >= 0 else 1
        if x_lo > (1 << frac_bits):
            raise RuntimeError("bernoulli_pow_ratio: acceptance probability exceeds 1 (internal error)")
        if u + 1 <= x_lo:
            return True
        if u >= x_hi:
            return False
        more = frac_bits  # refine: double the precision of both U and the bounds
        u = (u << more) | int.from_bytes(src.random_bytes(more // 8), "little")
        frac_bits += more


def sample_exponential_index(
    src: RandomSource,
    lengths: list[int],
    exponents: list[int],
    base: tuple[int, int],
) -> int:
    """Index i with probability exactly proportional to lengths[i] * (q/p)^exponents[i].

    ``base`` = (p, q) with q = 2^K and p > q odd (see :func:`exp_lower_rational`); lengths are
    non-negative Python ints of any size (not all zero), exponents non-negative ints. Exact
    rejection sampling as described in the module docstring.
    """
    p, q = base
    k = q.bit_length() - 1
    if q != 1 << k or p <= q:
        raise InvalidParameterError("base must be (p, 2^K) with p > 2^K")
    n = len(lengths)
    if n == 0 or n != len(exponents):
        raise InvalidParameterError("lengths and exponents must be non-empty and of equal length")
    if any(a < 0 for a in lengths) or any(r < 0 for r in exponents):
        raise InvalidParameterError("lengths and exponents must be non-negative")
    lam = _log2_lower(p, q)
    ln_, ld_ = lam.numerator, lam.denominator
    ms = [(r * ln_) // ld_ for r in exponents]
    live = [i for i in range(n) if lengths[i] > 0]
    if not live:
        raise InvalidParameterError("all candidate lengths are zero")
    m0 = min(ms[i] for i in live)
    cut = 64 + max(lengths[i].bit_length() for i in live) + n.bit_length()
    main = [i for i in live if ms[i] - m0 <= cut]
    tail = [i for i in live if ms[i] - m0 > cut]
    cum: list[int] = []
    acc = 0
    for i in main:
        acc += lengths[i] << (m0 + cut - ms[i])
        cum.append(acc)
    main_total = acc
    tail_bound = (sum(lengths[i] for i in tail) + 1) // 2 + 1 if tail else 0
    while True:
        u = uniform_int(src, 0, main_total + tail_bound - 1)
        if u < main_total:
            i = main[bisect.bisect_right(cum, u)]
        else:  # rare: the far tail, sampled exactly with its own common scale
            e_max = max(ms[i] for i in tail)
            shift = e_max - m0 - cut
            tcum: list[int] = []
            tacc = 0
            for i in tail:
                tacc += lengths[i] << (e_max - ms[i])
                tcum.append(tacc)
            v = uniform_int(src, 0, (tail_bound << shift) - 1)
            if v >= tacc:
                continue
            i = tail[bisect.bisect_right(tcum, v)]
        if bernoulli_pow_ratio(src, p, k, exponents[i], ms[i]):
            return i
