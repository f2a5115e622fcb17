"""The square-root Toeplitz factorisation of the prefix-sum matrix, on an integer lattice.

The prefix sums of a stream x_1..x_T are A x, A the lower-triangular all-ones matrix. A = C C with
C lower-triangular Toeplitz, c_k = binom(2k, k) / 4^k, the coefficients of (1 - x)^(-1/2)
(Henzinger, Upadhyay & Upadhyay, SODA 2023; Fichtenberger, Henzinger & Upadhyay, ICML 2023). The
matrix mechanism releases A x + B z for a factorisation A = B C and noise z on C x.

**Why a lattice.** dptree's noise is discrete (integers). Integer noise z added to the real vector
C x is not private: the output's fractional parts reveal those of C x, and neighbouring streams
give disjoint supports. So C is rounded to the lattice 2^-p Z: C~ has the integer coefficients
ci_k = round(c_k 2^p) (p = :func:`lattice_bits`), the query q = ci * x (a convolution of integers) is an
integer vector, and the discrete Gaussian mechanism on q (Canonne, Kamath & Steinke 2020,
Theorem 4) is followed by the post-processing B = A C~^-1 (lower-triangular Toeplitz, generating
function 1 / ((1 - x) ci(x) 2^-p)):

    release = B (q + w) / 2^p = A x + B w / 2^p,       w ~ N_Z(0, sigma_w^2) i.i.d.

The release is A x plus data-independent correlated noise, so it never computes q. Its exact
variance at step t is Var(w) / 4^p * sum_{k < t} b_k^2, for the B actually used (b = C~'s inverse
series, cumulated). B is close to C, and the average variance is within 0.002% of the square-root
factorisation's for T = 2^8 .. 2^20.

**Sensitivity.** One event at step i changes q by column i of C~int (entries ci_0..ci_{T-i}). A
user with at most k participations (one event at each of at most k steps) changes it by the sum
of at most k columns. The columns are non-negative and non-increasing (rounding keeps the order
of the c_k), so the inner product of columns i < j, sum_m ci_m ci_{m+j-i} over m <= T - j,
decreases with the gap j - i and with j: the first k columns pair by pair dominate any k columns,
and the worst case is x = 1 on steps 1..k (:func:`lattice_sensitivity_squared`, an exact
integer; brute-forced over column subsets in the tests).
"""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["lattice_bits", "sqrt_coefficients", "lattice_coefficients", "lattice_sensitivity_squared",
           "post_coefficients", "cumulative_squares", "correlated_noise", "exact_sqrt_variance_sum"]

def lattice_bits(horizon: int) -> int:
    """p for a horizon of T steps: 10 + (bit_length(T) - 10) // 2 (at least 10). The rounded
    factorisation's average variance is within 0.002% of the exact one's for T = 2^8 .. 2^20
    (docs/notes/stream.md), and a smaller p keeps sigma_w^2 = 4^p Delta^2 / (2 rho) small, where
    the exact discrete Gaussian sampler is fastest."""
    return 10 + max(0, (int(horizon).bit_length() - 10) // 2)


def sqrt_coefficients(horizon: int) -> np.ndarray:
    """c_0..c_{T-1}, c_k = binom(2k, k) / 4^k = prod_{j <= k} (2j - 1) / (2j) (float64)."""
    k = np.arange(1, horizon, dtype=np.float64)
    return np.concatenate([[1.0], np.cumprod((2 * k - 1) / (2 * k))])


@functools.lru_cache(maxsize=8)
def lattice_coefficients(horizon: int, bits: int) -> np.ndarray:
    """ci_k = round(c_k 2^p), int64: non-negative and non-increasing (C~ = ci / 2^p)."""
    out = np.rint(np.ldexp(sqrt_coefficients(horizon), bits)).astype(np.int64)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=32)
def lattice_sensitivity_squared(horizon: int, participations: int, bits: int) -> int:
    """The exact squared L2 sensitivity of q = C~int x: ||sum of the first k columns||^2, an
    integer (event level: k = 1, the first column, sum ci_k^2)."""
    ci = lattice_coefficients(horizon, bits)
    k = min(participations, horizon)
    window = np.cumsum(ci)  # < 2^32 * 2^21: int64 is exact
    if k < horizon:
        window[k:] = window[k:] - window[:-k].copy()
    # squares reach 2^104: exact in Python integers
    return sum(int(v) * int(v) for v in window.tolist())


def _multiply(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """The first n coefficients of the product of two series (float FFT)."""
    size = 1 << (len(a) + len(b) - 1).bit_length()
    return np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:n]


def _inverse_series(f: np.ndarray) -> np.ndarray:
    """g with f g = 1 + O(x^n), n = len(f), f_0 = 1: Newton's iteration g <- g (2 - f g)."""
    n = len(f)
    g = np.array([1.0 / f[0]])
    m = 1
    while m < n:
        m = min(2 * m, n)
        fg = _multiply(f[:m], g, m)
        fg[0] -= 2.0
        g = -_multiply(g, fg, m)
    return g


@functools.lru_cache(maxsize=8)
def post_coefficients(horizon: int, bits: int) -> np.ndarray:
    """b_0..b_{T-1} of B = A C~^-1: the cumulative sums of the inverse series of ci / 2^p."""
    out = np.cumsum(_inverse_series(np.ldexp(lattice_coefficients(horizon, bits).astype(np.float64), -bits)))
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=8)
def cumulative_squares(horizon: int, bits: int) -> np.ndarray:
    """sum_{k < t} b_k^2 for t = 1..T: the variance of step t in units of Var(w) / 4^p."""
    b = post_coefficients(horizon, bits)
    out = np.cumsum(b * b)
    out.setflags(write=False)
    return out


def correlated_noise(b: np.ndarray, w: np.ndarray, start: int, bits: int) -> np.ndarray:
    """(B w)_t / 2^p for t = start..len(w) - 1 (0-based steps): the full convolution of the noise
    drawn so far with b, by FFT (post-processing of w)."""
    n = len(w)
    return np.ldexp(_multiply(np.asarray(b[:n], dtype=np.float64), w.astype(np.float64), n)[start:], -bits)


def exact_sqrt_variance_sum(horizon: int) -> float:
    """sum_{k < T} c_k^2 of the unrounded factorisation (a reference for benchmarks and tests)."""
    c = sqrt_coefficients(horizon)
    return float(math.fsum((c * c).tolist()))
