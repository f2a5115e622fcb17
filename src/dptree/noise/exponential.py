"""Exact sampling for the exponential mechanism, in rational arithmetic (Kaplan et al. 2020).

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

3. Arrays (:func:`sample_exponential_index` given numpy arrays): the same law, exactly, in O(n)
   numpy work and O(1) Python work per round (no Python integer per candidate). The proposal is
   2^-d_i with the integer d_i = m_i - e_i - min(m - e): m_i <= r_i log2 b as in step 2 (from a
   rational N / 2^s <= L with a 22-bit N, so r_i N fits int64), e_i the float64 exponent of
   length_i, so length_i < 2^e_i exactly (rounding is monotone) and length_i is about 2^(e_i-1)
   or more. A level d is drawn with the exact integer weights #{i: d_i = d} 2^(D - d) for
   d <= D = 64 + log2 n (a Python sum of D + 1 integers), the far tail d > D with an exact bound
   (#tail + 1) // 2 on its weight (entered with probability < n 2^-64; resolved exactly with
   Python integers, rejecting the bound's slack), then a uniform candidate of the level. It is
   accepted with the two exact Bernoulli draws length_i / 2^e_i (a uniform integer) and
   b^-r_i 2^m_i (:func:`bernoulli_pow_ratio`). So a round proposes i with probability
   proportional to 2^-(m_i - e_i) and accepts it with length_i 2^-e_i b^-r_i 2^m_i: the accepted
   i has probability proportional to length_i b^-r_i, the target, with no rounding in any
   decision (each factor <= 1, about 1/2 or more where the mass is: a few rounds are expected).
"""

from __future__ import annotations

import bisect
import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np

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
    lengths: list[int] | np.ndarray,
    exponents: list[int] | np.ndarray,
    base: tuple[int, int],
) -> int:
    """Index i with probability exactly proportional to lengths[i] * (q/p)^exponents[i].

    ``base`` = (p, q) with q = 2^K and p > q odd (see :func:`exp_lower_rational`); lengths are
    non-negative Python ints of any size (not all zero), exponents non-negative ints, or both
    numpy arrays (lengths uint64/int64, exponents int64; steps 2 and 3 of the module docstring).
    Exact rejection sampling as described in the module docstring.
    """
    p, q = base
    k = q.bit_length() - 1
    if q != 1 << k or p <= q:
        raise InvalidParameterError("base must be (p, 2^K) with p > 2^K")
    if isinstance(lengths, np.ndarray) and isinstance(exponents, np.ndarray):
        return _sample_arrays(src, lengths, exponents, p, k)
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


#: exponents above this are treated as this one in the proposal of :func:`_sample_arrays` (a lower
#: bound on m stays valid: their proposal weight only grows, and stays negligible)
_R_CAP = 1 << 40


def _sample_arrays(src: RandomSource, lengths: np.ndarray, exponents: np.ndarray, p: int, k: int) -> int:
    """Step 3 of the module docstring: :func:`sample_exponential_index` on numpy arrays."""
    n = lengths.size
    if n == 0 or n != exponents.size:
        raise InvalidParameterError("lengths and exponents must be non-empty and of equal length")
    if lengths.dtype.kind not in "iu" or exponents.dtype.kind not in "iu":
        raise InvalidParameterError("lengths and exponents must be integer arrays")
    if (lengths.dtype.kind == "i" and (lengths < 0).any()) or (exponents.dtype.kind == "i" and (exponents < 0).any()):
        raise InvalidParameterError("lengths and exponents must be non-negative")
    lam = _log2_lower(p, 1 << k)  # < log2 b
    s = 21 - math.floor(math.log2(lam))  # N in [2^21, 2^22]: r N < 2^63 for r <= 2^40
    num = math.floor(lam * (1 << s)) if s >= 0 else 0
    if num <= 0:  # pragma: no cover - a base beyond e^(2^21): the list path handles any size
        return sample_exponential_index(src, lengths.tolist(), exponents.tolist(), (p, 1 << k))

    def m_of(r: Any) -> Any:  # m_i <= r_i N / 2^s <= r_i lam, in place on arrays
        r = np.minimum(r, _R_CAP).astype(np.int64, copy=False)
        r *= num
        r >>= s
        return r

    d = m_of(exponents)
    e = _bit_length(lengths)  # length < 2^e
    d -= e  # m - e
    empty = None if lengths.all() else lengths == 0
    if empty is not None:
        if empty.all():
            raise InvalidParameterError("all candidate lengths are zero")
        d[empty] = np.iinfo(np.int64).max // 2  # never drawn: excluded from every level below
    d -= d.min()
    top = 64 + n.bit_length()
    np.minimum(d, top + 1, out=e)
    level_counts = np.bincount(e, minlength=top + 2)
    del e
    units = [int(c) << (top - j) for j, c in enumerate(level_counts[:-1].tolist())]
    total = sum(units)
    n_tail = int(level_counts[-1]) - (0 if empty is None else int(empty.sum()))
    tail_bound = (n_tail + 1) // 2  # each tail weight is <= 1/2 unit
    while True:
        u = uniform_int(src, 0, total + tail_bound - 1)
        if u < total:
            j = 0
            while u >= units[j]:
                u -= units[j]
                j += 1
            i = int(np.flatnonzero(d == j)[u >> (top - j)])  # u // 2^(top-j): uniform in the level
        else:
            tail = np.flatnonzero((d > top) if empty is None else (d > top) & ~empty)
            i = _tail_pick(src, d, tail, top, tail_bound)
            if i < 0:
                continue
        li, ri = int(lengths[i]), int(exponents[i])
        if uniform_int(src, 0, (1 << math.frexp(float(li))[1]) - 1) >= li:  # e_i as in _bit_length
            continue
        if bernoulli_pow_ratio(src, p, k, ri, int(m_of(np.array([ri], np.uint64))[0])):
            return i


def _bit_length(x: np.ndarray) -> np.ndarray:
    """e (int64) with 2^(e-1) <= x < 2^e up to float64 rounding, for positive integers: the
    exponent field of float64(x) (= ``frexp``'s). x < 2^e is exact: rounding is monotone and 2^e
    a float, so x >= 2^e would give float64(x) >= 2^e; and x > 2^(e-1) (1 - 2^-53)."""
    e = x.astype(np.float64).view(np.int64)
    e >>= 52
    e -= 1022
    return e


def _tail_pick(src: RandomSource, d: np.ndarray, tail: np.ndarray, top: int, bound: int) -> Any:
    """A tail candidate with probability 2^(top - d_i) / bound, or -1 (the bound's slack): exact,
    in Python integers (entered with probability < n 2^-64)."""
    ds = d[tail].tolist()
    e_max = max(ds)
    cum, acc = [], 0
    for x in ds:
        acc += 1 << (e_max - x)
        cum.append(acc)
    v = uniform_int(src, 0, (bound << (e_max - top)) - 1)
    if v >= acc:
        return -1
    return int(tail[bisect.bisect_right(cum, v)])
