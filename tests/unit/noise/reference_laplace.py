"""A discrete Laplace sampler with a float fast path (~90 ns/sample), kept as a test
oracle and as the "old" side of ``benchmarks/sampler_cost.py --speed``.

CKS 2020 (Algorithm 2, last step): a fair sign B and a magnitude M with P(M >= m) = q^m,
q = exp(-1/scale); (B = 1, M = 0) is rejected. M = #{m >= 1 : U < q^m} is taken from the float
value of floor(-scale ln U) when a rigorous float-error margin allows, else by the exact decimal
comparison of :func:`geometric_exact`.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from dptree.noise.inversion import _exp_neg_bounds
from dptree.noise.parameters import laplace_scale_used
from dptree.noise.sources import RandomSource

FLOAT_SLACK = 2.0**-40  # float64 log/multiply errors are below 2^-50 relative
CHUNK = 1 << 18


def geometric_exact(src: RandomSource, word: int, lam: Fraction, guess: int) -> int:
    """M = #{m >= 1 : U < exp(-m/lam)} exactly, for U whose first 64 bits are ``word``."""
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
    """``size`` exact samples of the discrete Laplace (the float-fast-path reference sampler)."""
    lam = laplace_scale_used(scale)
    out = np.zeros(size, dtype=np.int64)
    for start in range(0, size, CHUNK):
        stop = min(size, start + CHUNK)
        out[start:stop] = _block(src, lam, stop - start)
    return out


def _block(src: RandomSource, lam: Fraction, size: int) -> np.ndarray:
    lam_f = float(lam)
    out = np.zeros(size, dtype=np.int64)
    todo = np.arange(size)
    two64 = 2.0**64
    while todo.size:
        n = todo.size
        words = np.frombuffer(src.random_bytes(8 * n), dtype=np.uint64)
        signs = np.unpackbits(np.frombuffer(src.random_bytes((n + 7) // 8), dtype=np.uint8))[:n]
        w = words.astype(np.float64)
        with np.errstate(divide="ignore"):
            ln_hi = np.log(w / two64)
        ln_lo = np.log((w + 1.0) / two64)
        x_hi = -lam_f * ln_hi
        x_lo = -lam_f * ln_lo
        slack = FLOAT_SLACK * (lam_f * (1.0 - ln_hi) + x_hi)
        with np.errstate(invalid="ignore"):
            m_lo = np.floor(x_lo - slack)
            m_hi = np.floor(x_hi + slack)
        sure = np.isfinite(m_hi) & (m_lo == m_hi) & (m_hi < 2.0**62)
        mag = np.zeros(n, dtype=np.int64)
        mag[sure] = m_lo[sure].astype(np.int64)
        for i in np.flatnonzero(~sure):
            guess = int(m_lo[i]) if np.isfinite(m_lo[i]) and m_lo[i] >= 0 else 0
            mag[i] = geometric_exact(src, int(words[i]), lam, guess)
        ok = ~((signs == 1) & (mag == 0))
        out[todo[ok]] = np.where(signs[ok] == 1, -mag[ok], mag[ok])
        todo = todo[~ok]
    return out
