"""Privacy budgets: pure epsilon, (epsilon, delta) and zCDP rho, with validation and conversion.

Conversions (all conservative: a numerical approximation can only overstate the privacy loss):

* pure epsilon-DP implies (epsilon^2 / 2)-zCDP (Bun & Steinke 2016, Prop. 1.4);
* rho-zCDP implies (epsilon, delta)-DP with
  delta = inf_{alpha > 1} exp((alpha-1)(alpha*rho - epsilon)) / (alpha-1) * (1 - 1/alpha)^alpha
  (Canonne, Kamath & Steinke 2020, Corollary 13). Every alpha gives a valid delta, so the
  minimisation below is safe even where it is not exactly optimal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Callable, Literal

import numpy as np

from dptree.errors import InvalidParameterError

__all__ = [
    "Budget",
    "check_epsilon",
    "check_release_budget",
    "BUDGET_RANGE",
    "RANGE_TREE_BUDGET_RANGE",
    "check_delta",
    "check_rho",
    "zcdp_delta",
    "zcdp_epsilon",
    "zcdp_rho_for",
    "discrete_gaussian_delta",
    "discrete_gaussian_sigma2_for",
    "discrete_gaussian_delta_slack",
    "discrete_gaussian_block",
    "discrete_gaussian_exact_feasible",
]


def _check_number(x: object, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) and not hasattr(x, "__float__"):
        raise InvalidParameterError(f"{name} must be a number, got {type(x).__name__}", parameter=name)
    try:
        v = float(x)  # type: ignore[arg-type,unused-ignore]
    except OverflowError:  # an integer past the doubles (10**400)
        bits = x.bit_length() if isinstance(x, int) else "many"
        raise InvalidParameterError(f"{name} is outside the supported range: an integer of {bits} bits "
                                    "(a double holds at most about 1.8e308)", parameter=name) from None
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(f"{name} must be a number, got {x!r}", parameter=name) from exc
    if not math.isfinite(v):
        raise InvalidParameterError(f"{name} must be finite, got {v}", parameter=name)
    return v


def check_epsilon(epsilon: object, name: str = "epsilon") -> float:
    """Validate a positive, finite epsilon."""
    v = _check_number(epsilon, name)
    if v <= 0:
        raise InvalidParameterError(f"{name} must be > 0, got {v}; pass e.g. {name}=1.0", parameter=name)
    return v


#: The budgets (epsilon or rho) a release accepts. Beyond them the exact samplers need numbers
#: too large to compute with (epsilon=1e-300 hung, 1e300 overflowed) and the result is either
#: pure noise or not meaningfully private. Range trees compute exactly over a wider range; the
#: hierarchy, interior-point, quantile and threshold mechanisms (whose exponential-mechanism bases,
#: windows and sample sizes grow like e^epsilon or 1/epsilon) over [1e-9, 100].
RANGE_TREE_BUDGET_RANGE = (1e-12, 1e12)
BUDGET_RANGE = (1e-9, 100.0)


def check_release_budget(
    value: object, name: str = "epsilon", supported: tuple[float, float] = BUDGET_RANGE
) -> float:
    """Validate the budget of a release (epsilon or rho): positive, finite and inside
    ``supported``. The one range check of every mechanism (docs/notes/privacy.md, input policy)."""
    v = check_epsilon(value, name)
    lo, hi = supported
    if not lo <= v <= hi:
        raise InvalidParameterError(
            f"{name}={v:g} is outside the supported range [{lo:g}, {hi:g}]; choose {name} in that range",
            parameter=name)
    return v


def check_rho(rho: object) -> float:
    """Validate a positive, finite zCDP parameter rho."""
    return check_epsilon(rho, "rho")


def check_delta(delta: object, *, required: bool = False) -> float:
    """Validate delta in [0, 1) (in (0, 1) when ``required``)."""
    v = _check_number(delta, "delta")
    if not 0.0 <= v < 1.0:
        raise InvalidParameterError(f"delta must be in [0, 1), got {v}", parameter="delta")
    if required and v == 0.0:
        raise InvalidParameterError(
            "this mechanism needs delta > 0 (approximate DP); pass e.g. delta=1e-6, "
            "or choose a pure-DP mechanism (range trees: noise='laplace'; hierarchy counts: method='laplace')",
            parameter="delta")
    return v


def _log_delta_at(rho: float, epsilon: float, alpha: float) -> float:
    return (alpha - 1.0) * (alpha * rho - epsilon) - math.log(alpha - 1.0) + alpha * math.log1p(-1.0 / alpha)


def zcdp_delta(rho: float, epsilon: float) -> float:
    """Smallest delta (CKS 2020, Cor. 13) such that rho-zCDP implies (epsilon, delta)-DP."""
    if rho <= 0:
        return 0.0
    if epsilon < 0:
        raise InvalidParameterError("epsilon must be >= 0")
    # log delta(alpha) is convex in alpha; search log(alpha - 1) by golden section.
    lo, hi = math.log(1e-9), math.log(max(10.0, 10.0 * (epsilon + 1.0) / rho))

    def f(u: float) -> float:
        return _log_delta_at(rho, epsilon, 1.0 + math.exp(u))

    g = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    best = min(fc, fd, f(lo), f(hi))
    for _ in range(200):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
        best = min(best, fc, fd)
    return min(1.0, math.exp(best))


def _bisect(below: Callable[[float], bool], lo: float, hi: float) -> tuple[float, float]:
    """Shrink [lo, hi] around the point where ``below`` turns from True to False (relative 1e-12).

    ``below(lo)`` must be True and ``below(hi)`` False; returns the final (lo, hi).
    """
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if below(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return lo, hi


def zcdp_epsilon(rho: float, delta: float) -> float:
    """Smallest epsilon (up to 1e-12 relative, rounded up) with rho-zCDP => (epsilon, delta)-DP."""
    check_delta(delta, required=True)
    if rho <= 0:
        return 0.0
    hi = rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta)) + 1e-12  # BS16 Prop 1.3
    # zcdp_delta decreases in epsilon: the smallest valid epsilon, rounded up
    return _bisect(lambda e: zcdp_delta(rho, e) > delta, 0.0, hi)[1]


def zcdp_rho_for(epsilon: float, delta: float) -> float:
    """Largest rho (rounded down) such that rho-zCDP implies (epsilon, delta)-DP."""
    check_epsilon(epsilon)
    check_delta(delta, required=True)
    return _zcdp_rho_for(float(epsilon), float(delta))


@lru_cache(maxsize=256)
def _zcdp_rho_for(epsilon: float, delta: float) -> float:
    """The search of :func:`zcdp_rho_for` (pure, so cached: every load of a Gaussian release
    re-derives its calibration)."""
    hi = epsilon
    while zcdp_delta(hi, epsilon) <= delta:  # defensive widening; rho = epsilon already fails
        hi *= 2.0
    # zcdp_delta increases in rho: the largest valid rho, rounded down
    return _bisect(lambda r: zcdp_delta(r, epsilon) <= delta, 0.0, hi)[0]


@dataclass(frozen=True, init=False)
class Budget:
    """A privacy budget: pure epsilon-DP, (epsilon, delta)-DP, or rho-zCDP, validated on
    construction.

    ``Budget(epsilon=1.0)``, ``Budget(epsilon=1.0, delta=1e-6)`` and ``Budget(rho=0.5)`` (or
    ``Budget.pure``, ``Budget.approx``, ``Budget.zcdp``). ``as_rho()`` converts to zCDP (for
    Gaussian noise) and ``as_epsilon_delta()`` to approximate DP, both conservatively.

    >>> Budget(epsilon=1.0, delta=1e-6).kind
    'approx'
    >>> Budget(rho=0.5).describe()
    '0.5-zCDP'
    """

    kind: Literal["pure", "approx", "zcdp"]
    epsilon: float | None
    delta: float
    rho: float | None

    def __init__(self, kind: Literal["pure", "approx", "zcdp"] | None = None, *, epsilon: float | None = None,
                 delta: float = 0.0, rho: float | None = None) -> None:
        if rho is not None and (epsilon is not None or delta):
            raise InvalidParameterError("a budget is epsilon (with an optional delta) or rho, not both")
        if kind is None:
            kind = "zcdp" if rho is not None else ("approx" if delta else "pure")
        if kind == "zcdp":
            values: tuple[float | None, float, float | None] = (None, 0.0, check_rho(rho))
        elif kind == "pure":
            values = (check_epsilon(epsilon), check_delta(delta), None)
            if values[1]:
                raise InvalidParameterError("a pure budget has delta = 0")
        elif kind == "approx":
            values = (check_epsilon(epsilon), check_delta(delta, required=True), None)
        else:
            raise InvalidParameterError(f"budget kind must be 'pure', 'approx' or 'zcdp', got {kind!r}")
        for name, value in zip(("kind", "epsilon", "delta", "rho"), (kind, *values)):
            object.__setattr__(self, name, value)

    @staticmethod
    def pure(epsilon: float) -> "Budget":
        return Budget("pure", epsilon=epsilon)

    @staticmethod
    def approx(epsilon: float, delta: float) -> "Budget":
        return Budget("approx", epsilon=epsilon, delta=delta)

    @staticmethod
    def zcdp(rho: float) -> "Budget":
        return Budget("zcdp", rho=rho)

    def as_rho(self) -> float:
        """The zCDP parameter this budget allows (pure eps -> eps^2/2; (eps, delta) -> CKS Cor. 13)."""
        if self.kind == "zcdp":
            assert self.rho is not None
            return self.rho
        assert self.epsilon is not None
        if self.kind == "pure":
            return self.epsilon**2 / 2.0
        return zcdp_rho_for(self.epsilon, self.delta)

    def as_epsilon_delta(self, delta: float | None = None) -> tuple[float, float]:
        """(epsilon, delta) implied by this budget; for zCDP a target ``delta`` is needed."""
        if self.kind in ("pure", "approx"):
            assert self.epsilon is not None
            return self.epsilon, self.delta
        if delta is None:
            raise InvalidParameterError("converting zCDP to (epsilon, delta) needs a delta")
        assert self.rho is not None
        return zcdp_epsilon(self.rho, delta), delta

    def describe(self) -> str:
        if self.kind == "pure":
            return f"{self.epsilon:g}-DP (pure)"
        if self.kind == "approx":
            return f"({self.epsilon:g}, {self.delta:g})-DP"
        return f"{self.rho:g}-zCDP"


# ----------------------------------------------------------------------------------------------
# Exact (epsilon, delta) of the discrete Gaussian
#
# Canonne, Kamath & Steinke 2020 ("The Discrete Gaussian for Differential Privacy", Theorem 7):
# adding N_Z(0, sigma^2) to an integer query of sensitivity Delta is (epsilon, delta)-DP with
#     delta = P[Y > eps sigma^2/Delta - Delta/2] - e^eps P[Y > eps sigma^2/Delta + Delta/2],
# Y ~ N_Z(0, sigma^2), and this delta is tight. It is the hockey-stick divergence
# E_P[(1 - e^(eps - L))_+] of the privacy-loss variable L = log P(y)/Q(y) written as tail sums.
#
# Multivariate case used by dptree (one record changes m noised counts by exactly 1 each, all with
# the same sigma^2: hierarchy paths, range-tree levels): with Z_i iid N_Z(0, sigma^2) and the shift
# (1, ..., 1), L = sum_i (1 - 2 Z_i) / (2 sigma^2) = (m - 2T) / (2 sigma^2), T = Z_1 + ... + Z_m, an
# integer whose law is the m-fold convolution of the discrete Gaussian pmf. So
#     delta(eps) = sum_t P[T = t] (1 - exp(eps - (m - 2t) / (2 sigma^2)))_+
# exactly (the swapped pair gives the same value by the symmetry z -> 1 - z). A neighbor that
# changes fewer counts (a shorter path) has a loss that is a marginal of this one, so its delta is
# no larger (post-processing). Note that the discrete Gaussian's delta is *not* a function of the
# L2 norm of the shift alone (unlike the continuous one), which is why the shift pattern is fixed.
#
# Numerics (every approximation can only increase delta): each coordinate's pmf is truncated at
# |z| <= K sigma and the dropped mass (summed term by term) is added to delta for each coordinate
# (union bound; (1 - e^(...))_+ <= 1). T's pmf is an exact m-fold convolution (direct sums, no FFT).
# When that would hold more than _DG_MAX_LEN points (large sigma^2 m), the coordinates are coarsened
# to blocks of b integers: T >= b * sum floor(Z_i / b), and the loss is evaluated at that lower T,
# i.e. rounded *up* (delta is increasing in L pointwise), which overstates the loss by at most
# m (b - 1) / sigma^2 (reported by :func:`discrete_gaussian_delta_slack`; about 2% of epsilon at
# m = 20). With b = 1 the computation is exact up to float rounding.

_DG_MAX_LEN = 30_000
_DG_MAX_SIGMA2 = 1e8  # beyond: the pmf alone would hold > 10^6 points; the zCDP route is used


def _dg_pmf(sigma2: float, K: float) -> tuple[np.ndarray, int, float]:
    """pmf of N_Z(0, sigma2) on [-h, h] (h = ceil(K sigma) + 1) and the mass outside it."""
    sd = math.sqrt(sigma2)
    H = int(math.ceil(40.0 * sd)) + 10  # terms beyond exp(-800) are 0 in float64
    z = np.arange(-H, H + 1, dtype=np.float64)
    w = np.exp(-(z * z) / (2.0 * sigma2))
    w /= w.sum()
    h = min(H, int(math.ceil(K * sd)) + 1)
    out = float(w[: H - h].sum() + w[H + h + 1 :].sum())
    return w[H - h : H + h + 1].copy(), h, out


def _dg_K(m: int) -> float:
    return math.sqrt(2.0 * math.log(m * 1e16)) + 2.0  # dropped mass per coordinate < 1e-16 / m


def discrete_gaussian_block(sigma2: float, m: int) -> int:
    """Coarsening block b used by :func:`discrete_gaussian_delta` (1: exact)."""
    h = int(math.ceil(_dg_K(m) * math.sqrt(float(sigma2)))) + 1
    return max(1, -(-(m * (2 * h + 1)) // _DG_MAX_LEN))


def discrete_gaussian_delta_slack(sigma2: float, m: int) -> float:
    """The most the coarsening can overstate the privacy loss: m (b - 1) / sigma^2 (0 if exact)."""
    return m * (discrete_gaussian_block(sigma2, m) - 1) / float(sigma2)


def _conv_power(p: np.ndarray, m: int) -> np.ndarray:
    """m-fold convolution of p with itself (direct sums, binary powering)."""
    result: np.ndarray | None = None
    base = p
    while m:
        if m & 1:
            result = base if result is None else np.convolve(result, base)
        m >>= 1
        if m:
            base = np.convolve(base, base)
    assert result is not None
    return result


def discrete_gaussian_delta(epsilon: float, sigma2: float, m: int, *, block: int | None = None) -> float:
    """delta(epsilon) of m independent N_Z(0, sigma2) noises when one neighbor shifts all m
    counts by 1 (an upper bound that is exact up to float rounding when no coarsening is needed).

    ``block``: force the coarsening block b (tests); default :func:`discrete_gaussian_block`.
    """
    return _dg_delta(epsilon, sigma2, m, block, fft=False)


def _dg_delta(epsilon: float, sigma2: float, m: int, block: int | None, *, fft: bool) -> float:
    """The computation of :func:`discrete_gaussian_delta`; ``fft=True`` convolves by FFT (fast,
    float error ~1e-16 of the pmf's peak per point): used only to *search* for sigma^2, never for
    the value that is checked."""
    if m < 1:
        return 0.0
    s2 = float(sigma2)
    if not s2 > 0 or epsilon < 0:
        raise InvalidParameterError("sigma2 must be > 0 and epsilon >= 0")
    if s2 > 4 * _DG_MAX_SIGMA2:
        raise InvalidParameterError("sigma2 too large for the exact computation (> 4e8)")
    p, h, out = _dg_pmf(s2, _dg_K(m))
    b = block if block is not None else discrete_gaussian_block(s2, m)
    if b > 1:  # blocks of b integers: U = floor(Z / b) on [floor(-h/b), floor(h/b)]
        lo_u = (-h) // b
        idx = (np.arange(-h, h + 1) // b) - lo_u
        base = np.bincount(idx, weights=p)
        start = lo_u * m
    else:
        base = p
        start = -h * m
    if fft:
        n_out = m * (base.size - 1) + 1
        nfft = 1 << (n_out - 1).bit_length()
        pt = np.maximum(np.fft.irfft(np.fft.rfft(base, nfft) ** m, nfft)[:n_out], 0.0)
    else:
        pt = _conv_power(base, m)
    t = b * (start + np.arange(pt.size, dtype=np.float64))  # (lower bounds of) T
    loss = (m - 2.0 * t) / (2.0 * s2)
    sel = loss > epsilon
    val = float(np.sum(pt[sel] * -np.expm1(epsilon - loss[sel])))
    return min(1.0, val + m * out)


def _continuous_gaussian_delta(epsilon: float, sigma2: float, m: int) -> float:
    """Balle & Wang 2018 Thm 8: delta of the continuous Gaussian, L2 sensitivity sqrt(m). The
    second term e^epsilon Phi(-a - c) in log space: e^epsilon alone overflows from epsilon = 710,
    while epsilon + log Phi(-a - c) <= -log((a + c) sqrt(2 pi)) stays small (a + c >= sqrt(2 eps))."""
    from scipy.special import log_ndtr, ndtr

    D, s = math.sqrt(m), math.sqrt(sigma2)
    a, c = D / (2 * s), epsilon * s / D
    return float(ndtr(a - c) - math.exp(epsilon + float(log_ndtr(-a - c))))


def _continuous_gaussian_sigma2(epsilon: float, delta: float, m: int) -> float:
    lo, hi = 1e-12, m / (2.0 * zcdp_rho_for(epsilon, delta))
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if _continuous_gaussian_delta(epsilon, mid, m) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def discrete_gaussian_exact_feasible(epsilon: float, delta: float, m: int) -> bool:
    """Whether :func:`discrete_gaussian_sigma2_for` computes (sigma^2 of the zCDP route <= 10^8,
    so the pmf fits in memory); callers use the zCDP calibration otherwise."""
    return 1 <= m and m / (2.0 * zcdp_rho_for(epsilon, delta)) <= _DG_MAX_SIGMA2


#: the smallest delta :func:`discrete_gaussian_sigma2_for` calibrates (measured: from about 1e-26 its
#: floating-point delta can no longer confirm any grid point; 1e-20 leaves a margin)
EXACT_GAUSSIAN_MIN_DELTA = 1e-20


@lru_cache(maxsize=512)
def discrete_gaussian_sigma2_for(epsilon: float, delta: float, m: int) -> Fraction:
    """Smallest sigma^2 on the sampler's dyadic grid (``noise.gaussian_sigma2_used``) such that m
    counts, each changed by at most 1 by a neighbor and each noised with N_Z(0, sigma^2), are
    (epsilon, delta)-DP by :func:`discrete_gaussian_delta`.

    Searched by bisection (with an FFT evaluation, for speed) near the continuous analytic
    Gaussian's value and below the zCDP calibration m / (2 zcdp_rho_for(epsilon, delta)) (always
    valid), then moved along the grid with the exact (direct-convolution) delta: up until it fits,
    down while it still fits. The value returned is checked with :func:`discrete_gaussian_delta`
    (the guarantee never rests on the FFT, the bisection or on monotonicity).
    """
    from dptree.noise import gaussian_sigma2_used

    check_epsilon(epsilon)
    if check_delta(delta, required=True) < EXACT_GAUSSIAN_MIN_DELTA:
        raise InvalidParameterError(
            f"delta={float(delta):g} is below {EXACT_GAUSSIAN_MIN_DELTA:g}, the smallest delta the exact discrete "
            f"Gaussian calibration resolves (its sums lose their precision below about 1e-25): choose delta >= "
            f"{EXACT_GAUSSIAN_MIN_DELTA:g}")
    if not discrete_gaussian_exact_feasible(epsilon, delta, m):
        raise InvalidParameterError("sigma^2 too large for the exact computation; use the zCDP calibration")

    def ok(s2: float) -> bool:  # the check the result rests on: exact convolution
        return discrete_gaussian_delta(epsilon, s2, m) <= delta

    def ok_fast(s2: float) -> bool:  # the search only
        return _dg_delta(epsilon, s2, m, None, fft=True) <= delta

    zc = m / (2.0 * zcdp_rho_for(epsilon, delta))
    bw = _continuous_gaussian_sigma2(epsilon, delta, m)  # a close bracket (Balle & Wang 2018)
    hi = min(zc, 1.03 * bw)
    if not ok_fast(hi):
        hi = zc
    lo = min(0.97 * bw, hi / 1.01)
    for _ in range(60):
        if not ok_fast(lo):
            break
        hi, lo = lo, lo / 1.1
    for _ in range(60):
        if hi - lo <= 2.0**-24 * hi:
            break
        mid = math.sqrt(lo * hi)
        if ok_fast(mid):
            hi = mid
        else:
            lo = mid
    g = gaussian_sigma2_used(min(hi, zc))
    step = 1
    while not ok(float(g)):  # the FFT search was a little off: walk up the grid
        if float(g) >= zc:  # pragma: no cover - the zCDP value is always valid
            g = gaussian_sigma2_used(zc)
            break
        g = gaussian_sigma2_used(Fraction(g.numerator + step, g.denominator))
        step *= 2
    for _ in range(8):  # the grid point below may still fit
        down = Fraction(g.numerator - 1, g.denominator)
        if down <= 0 or gaussian_sigma2_used(down) != down or not ok(float(down)):
            break
        g = down
    assert ok(float(g))
    return g
