"""Exact discrete noise on the integers: the only module of dptree that draws randomness.

Samplers follow Canonne, Kamath and Steinke, "The Discrete Gaussian for Differential
Privacy" (NeurIPS 2020), using integer arithmetic only:

* :func:`bernoulli_exp_neg` -- Bernoulli(exp(-gamma)) for rational gamma >= 0 (their Algorithm 1);
* :func:`discrete_laplace` -- P(x) proportional to exp(-|x|/scale) on Z (their Algorithm 2);
* :func:`discrete_gaussian` -- P(x) proportional to exp(-x^2/(2 sigma^2)) on Z (their Algorithm 3).

All of them are vectorised over numpy arrays: each loop of the paper runs on the array of
samples that are still undecided. Random bits come from the operating system's CSPRNG
(``os.urandom``) through :class:`SystemRandomSource`. A seeded source exists for tests and
reproducible experiments only; anything made with it is marked not private by its caller.

Noise parameters are given as real numbers but used as exact rationals: a scale (or a
variance) that is not a small rational is rounded *up* to the next dyadic rational with
about 20 significant bits. Rounding up only adds noise, so the privacy guarantee computed
from the unrounded value still holds; :func:`laplace_scale_used` and
:func:`gaussian_sigma2_used` report the exact values used, and the variances reported for
error bars are those of the rounded parameters.

Running time depends on the sampled values (the loops are rejection loops), as in CKS 2020;
see docs/verification.md.
"""

from __future__ import annotations

import bisect
import functools
import math
import os
from fractions import Fraction
from typing import Protocol, Union, cast

import numpy as np

from dptree.errors import InvalidParameterError

__all__ = [
    "RandomSource",
    "SystemRandomSource",
    "SeededRandomSource",
    "CountingRandomSource",
    "ExternalRandomSource",
    "random_hex",
    "RngLike",
    "make_source",
    "uniform_below",
    "uniform_int",
    "bernoulli_ratio",
    "bernoulli_exp_neg",
    "discrete_laplace",
    "discrete_gaussian",
    "laplace_scale_used",
    "gaussian_sigma2_used",
    "discrete_laplace_variance",
    "discrete_gaussian_variance",
]

_INT64_SAFE = 1 << 62  # products below this never overflow int64 arithmetic used here
_DEN_SAFE = 1 << 53  # denominators the vectorised Bernoulli(exp(-gamma)) path accepts
_SIGNIFICANT_BITS = 20  # precision of dyadic rounding of noise parameters (relative 2^-20)


# --------------------------------------------------------------------------- sources


class RandomSource(Protocol):
    """A source of uniformly random bytes."""

    @property
    def private(self) -> bool:
        """Whether releases made with this source are private (True for the OS CSPRNG only)."""
        ...

    def random_bytes(self, n: int) -> bytes:
        """Return ``n`` uniformly random bytes."""
        ...


class SystemRandomSource:
    """The operating system's CSPRNG (``os.urandom``). Releases made with it are private.

    It is the only private source: ``private`` is a read-only property that is True for this
    exact class only (a subclass could replace ``random_bytes``), and every other source reports
    False whatever attributes it carries (issue 10, leak 5).
    """

    @property
    def private(self) -> bool:
        return type(self) is SystemRandomSource

    def random_bytes(self, n: int) -> bytes:
        return os.urandom(n)


class SeededRandomSource:
    """A reproducible pseudo-random source for tests and experiments. NOT private."""

    @property
    def private(self) -> bool:
        return False

    def __init__(self, seed: Union[int, np.random.Generator]) -> None:
        if isinstance(seed, np.random.Generator):
            self._gen = seed
        else:
            self._gen = np.random.Generator(np.random.PCG64(seed))

    def random_bytes(self, n: int) -> bytes:
        return self._gen.bytes(n)


class CountingRandomSource:
    """A seeded (NOT private) source that counts the calls and bytes a sampler asks for, to
    measure how many random draws a sample needs (tests and ``benchmarks/sampler_cost.py``)."""

    @property
    def private(self) -> bool:
        return False

    def __init__(self, seed: int) -> None:
        self.inner = SeededRandomSource(seed)
        self.calls = 0
        self.bytes = 0

    def random_bytes(self, n: int) -> bytes:
        self.calls += 1
        self.bytes += n
        return self.inner.random_bytes(n)


def random_hex(nbytes: int) -> str:
    """A random identifier (hex) from the OS CSPRNG, for non-statistical uses such as a ledger's id."""
    return SystemRandomSource().random_bytes(nbytes).hex()


class ExternalRandomSource:
    """Any other object with ``random_bytes``, wrapped: its bytes are used, but a release made with
    it is marked NOT private (only :class:`SystemRandomSource` is trusted)."""

    def __init__(self, inner: RandomSource) -> None:
        self.inner = inner

    @property
    def private(self) -> bool:
        return False

    def random_bytes(self, n: int) -> bytes:
        out = self.inner.random_bytes(n)
        if not isinstance(out, bytes) or len(out) != n:
            raise InvalidParameterError("the random source's random_bytes(n) must return exactly n bytes")
        return out


RngLike = Union[None, int, np.random.Generator, RandomSource]


def make_source(rng: RngLike) -> RandomSource:
    """Turn the public ``rng`` argument into a random source.

    ``None`` (the default) gives the OS CSPRNG. An ``int`` seed or a numpy ``Generator`` gives a
    seeded source whose ``private`` attribute is False: use it for tests only.
    """
    if rng is None:
        return SystemRandomSource()
    if isinstance(rng, (SystemRandomSource, SeededRandomSource, CountingRandomSource, ExternalRandomSource)):
        return rng
    if callable(getattr(rng, "random_bytes", None)):
        # any other object with random bytes (a test double, a user's generator): usable, but
        # never private, whatever its own ``private`` attribute says
        return ExternalRandomSource(cast(RandomSource, rng))
    if isinstance(rng, np.random.Generator):
        return SeededRandomSource(rng)
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        if int(rng) < 0:
            raise InvalidParameterError(f"rng seed must be a non-negative integer, got {rng}")
        return SeededRandomSource(int(rng))
    raise InvalidParameterError(
        "rng must be None (private, OS randomness), an int seed or a numpy Generator "
        f"(tests only); got {type(rng).__name__}"
    )


# --------------------------------------------------------------------------- uniform integers


def _bit_length(values: np.ndarray) -> np.ndarray:
    """Exact bit lengths of non-negative int64 values."""
    v = values.astype(np.int64)
    e = np.frexp(v.astype(np.float64))[1].astype(np.int64)
    # float rounding can make e one too large for values just below a power of two
    too_big = (e > 0) & ((v >> np.maximum(e - 1, 0)) == 0)
    return np.where(too_big, e - 1, e)


def _words(src: RandomSource, count: int, nbits: int) -> np.ndarray:
    """``count`` uniform integers of ``nbits`` bits (nbits <= 63) as int64."""
    if nbits <= 8:
        dtype: type = np.uint8
    elif nbits <= 16:
        dtype = np.uint16
    elif nbits <= 32:
        dtype = np.uint32
    else:
        dtype = np.uint64
    size = np.dtype(dtype).itemsize
    raw: np.ndarray = np.frombuffer(src.random_bytes(count * size), dtype=dtype)
    if dtype is np.uint64:
        raw = raw >> np.uint64(1)  # keep 63 bits so the values fit int64
    return raw.astype(np.int64)


def _uniform_below_scalar(src: RandomSource, m: int, n: int) -> np.ndarray:
    """``n`` exactly uniform integers in [0, m) for one bound 1 <= m < 2^62."""
    nbits = (m - 1).bit_length()
    if nbits == 0:
        return np.zeros(n, dtype=np.int64)
    mask = np.int64((1 << nbits) - 1)
    out = _words(src, n, nbits) & mask
    bad = np.flatnonzero(out >= m)
    while bad.size:
        redraw = _words(src, bad.size, nbits) & mask
        out[bad] = redraw
        bad = bad[redraw >= m]
    return out


def uniform_below(src: RandomSource, m: np.ndarray | int, size: int | None = None) -> np.ndarray:
    """Exactly uniform integers in [0, m) for each entry of ``m`` (int64, 1 <= m < 2^62).

    Rejection sampling on masked random words: each round accepts with probability > 1/2.
    """
    if np.ndim(m) == 0:
        mm = int(m)
        if not 1 <= mm < _INT64_SAFE:
            raise InvalidParameterError("uniform_below needs 1 <= m < 2^62")
        return _uniform_below_scalar(src, mm, 1 if size is None else size)
    m_arr = np.ascontiguousarray(m, dtype=np.int64).ravel()
    n = m_arr.size
    if n == 0:
        return np.empty(0, dtype=np.int64)
    lo, hi = int(m_arr.min()), int(m_arr.max())
    if lo < 1 or hi >= _INT64_SAFE:
        raise InvalidParameterError("uniform_below needs 1 <= m < 2^62")
    if lo == hi:
        return _uniform_below_scalar(src, hi, n)
    bits = _bit_length(m_arr - 1)
    masks = (np.int64(1) << bits) - 1
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        nbits = int(bits[todo].max())
        draw = _words(src, todo.size, max(nbits, 1)) & masks[todo]
        ok = draw < m_arr[todo]
        out[todo[ok]] = draw[ok]
        todo = todo[~ok]
    return out


def uniform_int(src: RandomSource, low: int, high: int) -> int:
    """One exactly uniform Python integer in [low, high] (any size, e.g. 2^(2^20))."""
    if high < low:
        raise InvalidParameterError(f"uniform_int needs low <= high, got {low} > {high}")
    span = high - low + 1
    nbits = (span - 1).bit_length()
    if nbits == 0:
        return low
    nbytes = (nbits + 7) // 8
    mask = (1 << nbits) - 1
    while True:
        draw = int.from_bytes(src.random_bytes(nbytes), "little") & mask
        if draw < span:
            return low + draw


def bernoulli_ratio(src: RandomSource, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Exact Bernoulli(num/den) for int64 arrays with 0 <= num <= den < 2^62."""
    num = np.asarray(num, dtype=np.int64)
    den = np.asarray(den, dtype=np.int64)
    num, den = np.broadcast_arrays(num, den)
    return uniform_below(src, den) < num.ravel()


# --------------------------------------------------------------------------- Bernoulli(exp(-gamma))


def _fraction_loop_scalar(src: RandomSource, rest: int, den: int, k: int) -> bool:
    """The loop of CKS Algorithm 1 for gamma = rest/den in [0, 1], continued from K = k."""
    while True:
        if uniform_int(src, 0, den * k - 1) < rest:
            k += 1
        else:
            return k % 2 == 1


def _bernoulli_exp_neg_scalar(src: RandomSource, num: int, den: int) -> bool:
    """CKS 2020 Algorithm 1 for one rational gamma = num/den >= 0, in Python integers."""
    whole = (num - 1) // den if num > den else 0  # leaves rest/den in [0, 1]
    rest = num - whole * den
    for _ in range(whole):  # Bernoulli(exp(-1)) must succeed `whole` times
        if not _bernoulli_exp_neg_scalar(src, 1, 1):
            return False
    return _fraction_loop_scalar(src, rest, den, 1)


def bernoulli_exp_neg(src: RandomSource, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) for non-negative integers num, den > 0 (CKS 2020, Alg. 1).

    For gamma in [0, 1]: K = 1; while Bernoulli(gamma/K) succeeds, K += 1; return [K odd].
    For gamma > 1: w = ceil(gamma) - 1 independent Bernoulli(exp(-1)) must all succeed, then
    Bernoulli(exp(-(gamma - w))) with gamma - w in (0, 1]. Inputs may be int64 or Python-int object arrays;
    entries whose arithmetic could overflow int64 take an exact Python-integer path.
    """
    num_a = np.atleast_1d(np.asarray(num))
    den_a = np.atleast_1d(np.asarray(den))
    num_a, den_a = np.broadcast_arrays(num_a, den_a)
    num_a = num_a.ravel()
    den_a = den_a.ravel()
    n = num_a.size
    out = np.zeros(n, dtype=bool)
    if n == 0:
        return out
    if num_a.dtype == object or den_a.dtype == object:
        safe = np.array(
            [0 <= int(a) < _INT64_SAFE and 0 < int(b) < _DEN_SAFE for a, b in zip(num_a, den_a)],
            dtype=bool,
        )
    else:
        safe = (den_a > 0) & (den_a < _DEN_SAFE) & (num_a >= 0)
    for i in np.flatnonzero(~safe):
        num_i, den_i = int(num_a[i]), int(den_a[i])
        if num_i < 0 or den_i <= 0:
            raise InvalidParameterError("bernoulli_exp_neg needs num >= 0 and den > 0")
        out[i] = _bernoulli_exp_neg_scalar(src, num_i, den_i)
    idx = np.flatnonzero(safe)
    if idx.size == 0:
        return out
    out[idx] = _bernoulli_exp_neg_int64(src, num_a[idx].astype(np.int64), den_a[idx].astype(np.int64))
    return out


def _bernoulli_exp_one(src: RandomSource, n: int) -> np.ndarray:
    """``n`` exact Bernoulli(exp(-1)) draws: CKS Algorithm 1 with gamma = 1 (Bernoulli(1/K))."""
    result = np.zeros(n, dtype=bool)
    todo = np.arange(n)
    k = 1
    while todo.size:
        success = _uniform_below_scalar(src, k, todo.size) == 0  # Bernoulli(1/k)
        result[todo[~success]] = k % 2 == 1
        todo = todo[success]
        k += 1
    return result


def _bernoulli_exp_neg_int64(src: RandomSource, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Vectorised CKS Algorithm 1 for gamma = a/b with int64 a >= 0 and 0 < b < 2^53."""
    n = a.size
    whole = np.where(a > b, (a - 1) // b, 0)  # leaves rest/b in [0, 1]
    rest = a - whole * b
    alive = np.ones(n, dtype=bool)
    remaining = whole.copy()
    while True:  # the integer part: `whole` Bernoulli(exp(-1)) draws must all succeed
        need = np.flatnonzero(alive & (remaining > 0))
        if need.size == 0:
            break
        ok = _bernoulli_exp_one(src, need.size)
        alive[need[~ok]] = False
        remaining[need] -= 1
    live = np.flatnonzero(alive)
    result = np.zeros(live.size, dtype=bool)
    rest_l = rest[live]
    b_l = b[live]
    constant_den = b_l.size > 0 and bool((b_l == b_l[0]).all())
    todo = np.arange(live.size)
    k = 1  # K advances in lockstep for every undecided sample
    while todo.size:
        if (k + 1) * int(b_l[todo].max()) >= _INT64_SAFE:
            for j in todo:  # b*K nears the int64 range: finish exactly in Python integers
                result[j] = _fraction_loop_scalar(src, int(rest_l[j]), int(b_l[j]), k)
            break
        if constant_den:
            draw = _uniform_below_scalar(src, int(b_l[0]) * k, todo.size)
        else:
            draw = uniform_below(src, b_l[todo] * k)
        success = draw < rest_l[todo]  # Bernoulli(rest / (b K))
        result[todo[~success]] = k % 2 == 1
        todo = todo[success]
        k += 1
    final = np.zeros(n, dtype=bool)
    final[live] = result
    return final


# --------------------------------------------------------------------------- parameters


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


# --------------------------------------------------------------------------- samplers


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


def discrete_gaussian(src: RandomSource, sigma2: float | Fraction, size: int) -> np.ndarray:
    """``size`` exact samples of the discrete Gaussian N_Z(0, sigma2) (CKS 2020, Algorithm 3).

    t = floor(sigma) + 1; Y ~ discrete Laplace(t); accept with
    Bernoulli(exp(-(|Y| - sigma2/t)^2 / (2 sigma2))). Adding it to an integer query whose
    change has squared L2 norm D2 gives (D2 / (2 sigma2))-zCDP (CKS 2020, Theorem 4 composed
    over coordinates).
    """
    if size < 0:
        raise InvalidParameterError("size must be non-negative")
    p, q = _dyadic_upper(_as_fraction(sigma2))  # sigma2 = p/q exactly
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


# --------------------------------------------------------------------------- samplers for the exponential mechanism
#
# Appended for issue 5 (seed 002: exponential mechanism, Choosing Mechanism, TreeLog, HeavyPaths).
#
# The exponential mechanism outputs candidate i with probability proportional to
# length_i * exp(epsilon * score_i / (2 * sensitivity)). Floating-point implementations (weights
# exp(...) in doubles, or Gumbel-max with float noise) leak through rounding, exactly as textbook
# float Laplace does (Mironov 2012), so dptree samples it *exactly* in rational arithmetic:
#
# 1. The base exp(epsilon / (2 * sensitivity)) is replaced by a rational base b = p / 2^K with
#    1 < b <= exp(epsilon / (2 * sensitivity)), computed from a partial sum of the exponential
#    series (every partial sum of e^x, x > 0, is a lower bound). The mechanism with weights
#    length_i * b^score_i is (2 * sensitivity * ln b)-DP <= epsilon-DP by the usual proof
#    (McSherry & Talwar 2007): for neighbours every weight changes by a factor in
#    [b^-sens, b^sens] and so does the normaliser. Rounding the base *down* is conservative.
# 2. Exact rejection sampling. Let r_i = max_score - score_i >= 0 so the target weight is
#    length_i * b^-r_i. The proposal weight is length_i * 2^-m_i with the integer
#    m_i = floor(r_i * L), L a rational strictly below log2 b, so 2^-m_i >= b^-r_i and the
#    acceptance probability b^-r_i * 2^m_i lies in (2^-1-tiny, 1]. The proposal is sampled with
#    exact integer weights (uniform_int over their sum); the acceptance Bernoulli compares a
#    lazily drawn uniform bit string with rigorous lower/upper bounds of b^-r_i * 2^m_i computed
#    at increasing precision, so it is exact (no rounding decides any outcome) and cheap even
#    for r_i in the millions. Accepted draws have exactly the target distribution.
#
# Running time depends on the data through the number of rejections (expected < 2.1 rounds), as
# for the CKS samplers above.

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
    rejection sampling as described at the top of this section.
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


# =========================================================================== truncated Laplace
# Appended for hierarchy counts (seed 001, Lemma 2.8). Nothing above this line was changed.


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
    query whose value moves by at most ``sensitivity`` between neighbours is
    (sensitivity / scale_used, delta)-DP with delta = P(|Z| > bound - sensitivity) / 2, i.e.
    the mass of the ``sensitivity`` outermost points on one side, which one neighbour can
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

# =========================================================================== uniform subsets
# Added for contribution bounding (dptree.data.bounding, issue 6). Everything below draws from a
# RandomSource like the samplers above; nothing above this line was changed.

_FLOYD_MAX_K = 32  # above this, ranking by random keys is cheaper than Floyd's membership checks


def uniform_subsets(src: RandomSource, sizes: np.ndarray, k: int) -> np.ndarray:
    """For each population size c in ``sizes`` (all > k >= 1), an exactly uniform random k-subset of
    {0, ..., c-1}: an int64 array of shape (len(sizes), k), each row sorted.

    k <= 32: Floyd's algorithm (Bentley & Floyd 1987), vectorised over rows: for j = c-k .. c-1 draw
    t uniform in [0, j] and add t, or j when t is already chosen. k > 32: give every element an
    independent uniform 62-bit key, redraw keys that tie inside a row (the redraw treats elements
    symmetrically, so the order stays exchangeable), and keep the k smallest keys of each row.
    """
    c = np.ascontiguousarray(sizes, dtype=np.int64).ravel()
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or int(k) < 1:
        raise InvalidParameterError(f"k must be an integer >= 1, got {k!r}")
    k = int(k)
    u = c.size
    if u == 0:
        return np.empty((0, k), dtype=np.int64)
    if int(c.min()) <= k or int(c.max()) >= _INT64_SAFE:
        raise InvalidParameterError("uniform_subsets needs k < size < 2^62 for every row")
    if k <= _FLOYD_MAX_K:
        out = np.empty((u, k), dtype=np.int64)
        for i in range(k):
            j = c - k + i
            t = uniform_below(src, j + 1)
            seen = (out[:, :i] == t[:, None]).any(axis=1) if i else np.zeros(u, dtype=bool)
            out[:, i] = np.where(seen, j, t)
        out.sort(axis=1)
        return out
    total = int(c.sum())
    row = np.repeat(np.arange(u, dtype=np.int64), c)
    keys = _words(src, total, 62)
    while True:
        order = np.lexsort((keys, row))
        ks, rs = keys[order], row[order]
        tie = (ks[1:] == ks[:-1]) & (rs[1:] == rs[:-1])
        if not tie.any():
            break
        bad = np.unique(np.concatenate([order[1:][tie], order[:-1][tie]]))
        keys[bad] = _words(src, bad.size, 62)
    starts = np.concatenate([[0], np.cumsum(c)[:-1]])
    rank = np.arange(total, dtype=np.int64) - starts[rs]
    pos = order - starts[rs]  # element index inside its row
    chosen = pos[rank < k].reshape(u, k)
    chosen.sort(axis=1)
    return chosen
