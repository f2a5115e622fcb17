"""Calibration of the interior-point methods from public inputs only (Kaplan et al. 2020).

Everything here is a function of the public domain size |X|, the budget, beta and the size the
caller declared (``n=`` exact or ``n_max=`` an upper bound); never of the data. It gives

* the sample requirement of each method (:func:`method_requirements`): the n from which its
  success guarantee (an interior point with probability >= 1 - beta) holds;
* the per-replacement budget of the tree methods (:func:`swap_budget`, group privacy);
* the plan of one release (:func:`plan`): the method ``"auto"`` resolves to, its calibration,
  ``n_required`` and ``guarantee_applies``, and the privacy statement -- computed by
  :func:`~dptree.interior.api.interior_point` before the data is read and re-derived when a saved
  release is loaded.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any, Literal

from dptree._validation import InstanceOf, Interval, Options, check_param, validate_params
from dptree.errors import InsufficientDataError, InvalidParameterError
from dptree.interior.heavypaths import heavypaths_parameters
from dptree.interior.selection import effective_epsilon, exponential_base
from dptree.interior.treelog import treelog_parameters
from dptree.privacy.budget import check_release_budget
from dptree.privacy.statement import Neighbors, make_statement

__all__ = [
    "METHODS",
    "Plan",
    "check_budget",
    "declared_size",
    "exponential_requirement",
    "method_requirements",
    "method_requirements_log2",
    "plan",
    "swap_budget",
]

Method = Literal["auto", "exponential", "treelog", "heavypaths"]
METHODS: tuple[str, ...] = ("auto", "exponential", "treelog", "heavypaths")
TREE_METHODS = ("treelog", "heavypaths")

# The declared constraints shared by the public functions of the family (dptree._validation).
EPSILON = [Interval(Real, 0, None, closed="neither", hint="pass e.g. epsilon=1.0")]
DELTA = [Interval(Real, 0, 1, closed="left", hint="the tree methods need delta > 0, e.g. delta=1e-6")]
BETA = [Interval(Real, 0, 1, closed="neither", hint="the failure probability of the guarantee, e.g. beta=0.1")]
METHOD = [Options(METHODS)]
DECLARED_SIZE = [None, Interval(Integral, 1, None, hint="declare a positive integer (a public size, never "
                                                        "computed from the data)")]
ON_INVALID = [Options(("error", "drop"), hint="'drop' drops invalid records (how many is never revealed)")]


def check_budget(epsilon: Any, delta: Any, beta: Any) -> tuple[float, float, float]:
    """The declared checks of (epsilon, delta, beta) and the supported range of epsilon, for values
    read outside a signature (a loaded file)."""
    for name, value, options in (("epsilon", epsilon, EPSILON), ("delta", delta, DELTA), ("beta", beta, BETA)):
        check_param(name, value, options)
    return check_release_budget(epsilon), float(delta), float(beta)


def exponential_requirement(size: int, epsilon: float, beta: float, *, ln_size: float | None = None) -> int:
    """Smallest n with P(EM fails to return an interior point) <= beta on *every* dataset.

    P(q(S, y) = 0) <= |X| b^-OPT and OPT >= ceil(n/2), so OPT >= (2/eps') ln(|X|/beta) suffices,
    eps' = 2 ln b <= eps the epsilon actually used (Kaplan et al. 2020, Lemma 2.2 with |F| = |X|).
    On point-mass data OPT = n, and n = (2/eps) ln(|X|/beta) suffices.
    """
    eps_used = effective_epsilon(exponential_base(epsilon))
    ln_x = _ln_int(size) if ln_size is None else ln_size
    m = math.ceil(2.0 / eps_used * (ln_x - math.log(beta)))
    return max(1, 2 * m - 1)


def _ln_int(x: int) -> float:
    """ln of a positive Python int of any size."""
    b = x.bit_length()
    if b < 1000:
        return math.log(x)
    return math.log(x >> (b - 64)) + (b - 64) * math.log(2.0)


def _requirement_search(pred: Any, start: int = 8, cap: int = 1 << 62) -> int | None:
    """Smallest n >= 1 with pred(n) (pred monotone from some point on), by doubling + bisection."""
    n = start
    while not pred(n):
        n *= 2
        if n > cap:
            return None
    lo, hi = n // 2, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi


def swap_budget(epsilon: float, delta: float) -> tuple[float, float]:
    """Per-replacement budget of the tree methods: (eps/2, delta/(1 + e^(eps/2))).

    A mechanism that is (e, d)-DP for add/remove-one neighbors of at most N + 1 records is
    (2e, (1 + e^e) d)-DP for one replacement (remove, then add: group privacy), so calibrating the
    tree methods at (eps/2, delta/(1 + e^(eps/2))) makes them (eps, delta)-DP under add/remove-one
    and replace-one after the cap (docs/notes/interior_point.md)."""
    return epsilon / 2, delta / (1 + math.exp(epsilon / 2))


@functools.lru_cache(maxsize=256)
def _tree_requirement(method: str, size: int, eps: float, delta: float, beta: float) -> int | None:
    """The declared size from which a tree method's success guarantee holds (public inputs only)."""
    fn = treelog_parameters if method == "treelog" else heavypaths_parameters
    return _requirement_search(lambda k: fn(k, size, eps, delta, beta)["guarantee_applies"])


def _requirements(size: int, eps: float, dlt: float, beta: float) -> dict[str, int | None]:
    e_in, d_in = swap_budget(eps, dlt)
    return {
        "exponential": exponential_requirement(size, eps, beta),
        "treelog": _tree_requirement("treelog", size, e_in, d_in, beta),
        "heavypaths": _tree_requirement("heavypaths", size, e_in, d_in, beta),
    }


@validate_params({"size": [InstanceOf(Integral, description="a positive integer (|X|)")], "epsilon": EPSILON,
                  "delta": [Interval(Real, 0, 1, closed="neither", hint="e.g. delta=1e-6")], "beta": BETA})
def method_requirements(size: int, *, epsilon: float, delta: float, beta: float = 0.1) -> dict[str, int | None]:
    """The n at which each method's stated success guarantee (probability >= 1 - beta) applies.

    Only public inputs (``|X|``, epsilon, delta, beta); the tree methods are calibrated as
    :func:`~dptree.interior.api.interior_point` calibrates them (at the per-replacement budget,
    with n declared)."""
    if size < 1:  # an int of any size: |X| may exceed what a float holds
        raise InvalidParameterError(f"size must be a positive integer (|X|), got {size}")
    return _requirements(int(size), float(epsilon), float(delta), float(beta))


@validate_params({"height": [Interval(Integral, 1, None)], "epsilon": EPSILON,
                  "delta": [Interval(Real, 0, 1, closed="neither", hint="e.g. delta=1e-6")], "beta": BETA})
def method_requirements_log2(height: int, *, epsilon: float, delta: float, beta: float = 0.1) -> dict[str, int | None]:
    """:func:`method_requirements` for |X| = 2^height given by its height (for |X| like 2^(2^40))."""
    eps, dlt, h = float(epsilon), float(delta), int(height)
    e_in, d_in = swap_budget(eps, dlt)
    return {
        "exponential": exponential_requirement(2, eps, beta, ln_size=h * math.log(2.0)),
        "treelog": _requirement_search(
            lambda n: treelog_parameters(n, 2, e_in, d_in, beta, height=h)["guarantee_applies"]
        ),
        "heavypaths": _requirement_search(
            lambda n: heavypaths_parameters(n, 2, e_in, d_in, beta, height=h)["guarantee_applies"]
        ),
    }


def declared_size(n: int | None, n_max: int | None) -> tuple[int | None, bool]:
    """The caller-declared public size (each already declared a positive integer or None):
    (N, is_upper_bound); (None, False) if none."""
    if n is not None and n_max is not None:
        raise InvalidParameterError("pass either n= (the exact public size) or n_max= (a public upper bound), not both")
    if n is not None:
        return int(n), False
    return (None, False) if n_max is None else (int(n_max), True)


def _guarantee(req: int | None, size: int | None, upper: bool, ok_at_size: bool | None = None) -> bool | None:
    """guarantee_applies from public quantities only (see :class:`~dptree.interior.api.InteriorPoint`)."""
    if size is None:
        return None
    ok = (req is not None and size >= req) if ok_at_size is None else ok_at_size
    if upper:
        return False if not ok else None  # the actual size may be smaller than the bound
    return ok


@dataclass(frozen=True)
class Plan:
    """Everything public about one interior-point release, derived before the data is read."""

    method: str  # the method run ("auto" resolved)
    epsilon: float
    delta: float  # 0.0 for the exponential mechanism (pure epsilon-DP)
    beta: float
    n_declared: int | None
    n_is_upper_bound: bool
    n_required: int | None
    guarantee_applies: bool | None
    calibration: dict[str, Any] = field(default_factory=dict)

    def statement(self, private: bool) -> dict[str, Any]:
        """The privacy statement (:mod:`dptree.privacy.statement`) of a release by this plan."""
        budget = {"epsilon": self.epsilon, "delta": self.delta}
        if self.method == "exponential":
            return make_statement(
                mechanism="interior point: exponential mechanism over the ordered domain with "
                "q(S, y) = min(#{x <= y}, #{x >= y}) (seed 002, Lemma 2.2 and Algorithm 1 step 1)",
                neighbors=Neighbors("add_remove"), guarantee="pure epsilon-DP", private=private,
                replace="also holds: replace-one neighbors (the quality has sensitivity 1 under both)",
                budget_spent=budget,
            )
        source = ("TreeLog (seed 002, Algorithm 1; privacy Lemma 3.7)" if self.method == "treelog" else
                  "HeavyPaths (seed 002, Algorithms 2-6; privacy Lemmas 4.5, 4.6, 4.9, 4.11, docs/heavypaths.md)")
        return make_statement(
            mechanism=f"interior point: {source}, calibrated for the declared size; data capped at it",
            neighbors=Neighbors("add_remove"), guarantee="(epsilon, delta)-DP", private=private,
            replace="also holds: replace-one neighbors (the add/remove lemma is calibrated at "
            "(eps/2, delta/(1 + e^(eps/2))); a replacement is a removal and an addition: group privacy)",
            budget_spent=budget,
        )


def plan(method: str, size: int, epsilon: float, delta: float, beta: float, n_declared: int | None,
         upper_bound: bool, *, run_anyway: bool = True) -> Plan:
    """The plan of a release over a domain of ``size`` points (public inputs only).

    ``method="auto"``: the exponential mechanism without a declared size, else the method with
    the smallest stated requirement; below it :class:`InsufficientDataError` unless ``run_anyway``.
    """
    auto_reason = None
    if method == "auto":
        if n_declared is None:
            method, auto_reason = "exponential", "no public size declared: the exponential mechanism needs none"
        else:
            reqs = _requirements(size, epsilon, delta, beta) if delta > 0 else {
                "exponential": exponential_requirement(size, epsilon, beta)}
            best = min((r, m) for m, r in reqs.items() if r is not None)
            if best[0] > n_declared and not run_anyway:
                raise InsufficientDataError(
                    f"no method's success guarantee holds at the declared {'n_max' if upper_bound else 'n'}="
                    f"{n_declared}: the smallest requirement is n >= {best[0]} ({best[1]}) for |X|={size}, "
                    f"epsilon={epsilon}, delta={delta}, beta={beta}; collect more data, raise epsilon/beta, "
                    "or pass run_anyway=True"
                )
            method, auto_reason = best[1], "smallest stated requirement at the declared size"
    req: int | None
    if method == "exponential":
        req = exponential_requirement(size, epsilon, beta)
        cal: dict[str, Any] = {"epsilon_used": effective_epsilon(exponential_base(epsilon))}
        ok = _guarantee(req, n_declared, upper_bound)
        delta = 0.0
    else:
        assert n_declared is not None
        e_in, d_in = swap_budget(epsilon, delta)
        fn = treelog_parameters if method == "treelog" else heavypaths_parameters
        cal = dict(fn(n_declared, size, e_in, d_in, beta))
        cal["epsilon_per_change"], cal["delta_per_change"] = e_in, d_in
        req = _tree_requirement(method, size, e_in, d_in, beta)
        ok = _guarantee(req, n_declared, upper_bound, bool(cal["guarantee_applies"]))
    if auto_reason:
        cal["auto"] = auto_reason
    return Plan(method, epsilon, delta, beta, n_declared, upper_bound, req, ok, cal)
