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
from typing import Callable, Literal

from .errors import InvalidParameterError

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
]


def _check_number(x: object, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) and not hasattr(x, "__float__"):
        raise InvalidParameterError(f"{name} must be a number, got {type(x).__name__}")
    try:
        v = float(x)  # type: ignore[arg-type,unused-ignore]
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(f"{name} must be a number, got {x!r}") from exc
    if not math.isfinite(v):
        raise InvalidParameterError(f"{name} must be finite, got {v}")
    return v


def check_epsilon(epsilon: object, name: str = "epsilon") -> float:
    """Validate a positive, finite epsilon."""
    v = _check_number(epsilon, name)
    if v <= 0:
        raise InvalidParameterError(f"{name} must be > 0, got {v}; pass e.g. {name}=1.0")
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
    ``supported``. The one range check of every mechanism (docs/privacy.md, input policy)."""
    v = check_epsilon(value, name)
    lo, hi = supported
    if not lo <= v <= hi:
        raise InvalidParameterError(
            f"{name}={v:g} is outside the supported range [{lo:g}, {hi:g}]; choose {name} in that range"
        )
    return v


def check_rho(rho: object) -> float:
    """Validate a positive, finite zCDP parameter rho."""
    return check_epsilon(rho, "rho")


def check_delta(delta: object, *, required: bool = False) -> float:
    """Validate delta in [0, 1) (in (0, 1) when ``required``)."""
    v = _check_number(delta, "delta")
    if not 0.0 <= v < 1.0:
        raise InvalidParameterError(f"delta must be in [0, 1), got {v}")
    if required and v == 0.0:
        raise InvalidParameterError(
            "this mechanism needs delta > 0 (approximate DP); pass e.g. delta=1e-6, "
            "or choose a pure-DP mechanism such as noise='laplace'"
        )
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
    hi = epsilon
    while zcdp_delta(hi, epsilon) <= delta:  # defensive widening; rho = epsilon already fails
        hi *= 2.0
    # zcdp_delta increases in rho: the largest valid rho, rounded down
    return _bisect(lambda r: zcdp_delta(r, epsilon) <= delta, 0.0, hi)[0]


@dataclass(frozen=True)
class Budget:
    """A privacy budget: pure epsilon-DP, (epsilon, delta)-DP, or rho-zCDP.

    ``Budget.pure(1.0)``, ``Budget.approx(1.0, 1e-6)`` and ``Budget.zcdp(0.5)`` validate their
    arguments. ``as_rho()`` converts to zCDP (for Gaussian noise) and ``as_epsilon_delta()``
    to approximate DP, both conservatively.
    """

    kind: Literal["pure", "approx", "zcdp"]
    epsilon: float | None = None
    delta: float = 0.0
    rho: float | None = None

    @staticmethod
    def pure(epsilon: float) -> "Budget":
        return Budget("pure", epsilon=check_epsilon(epsilon))

    @staticmethod
    def approx(epsilon: float, delta: float) -> "Budget":
        return Budget("approx", epsilon=check_epsilon(epsilon), delta=check_delta(delta, required=True))

    @staticmethod
    def zcdp(rho: float) -> "Budget":
        return Budget("zcdp", rho=check_rho(rho))

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
