"""How a ledger composes its charges: the accountant of the (epsilon, delta) total and the rules a
spend must satisfy.

The accountant is fixed at creation and stored in ``ledger_meta`` under ``accountant``
(:func:`accountant_text`), which enters the genesis hash: ``basic`` (the amounts add up,
:func:`budget_violation`) or ``renyi:ORDERS[;approx_delta=D]`` (a
:class:`~dptree.privacy.accounting.RenyiFilter` at those orders over each charge's Rényi curve,
:func:`charge_curve`, with D of the total delta set aside for (epsilon, delta) steps;
:func:`spend_violation`). A ledger without the key (created before accountants were stored, or
upgraded) is ``basic``. :func:`spend_of` is what a state has spent, as the ledger reports it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dptree.privacy.accounting import RenyiFilter, pure_curve, rdp_curve, zcdp_curve
from dptree.privacy.budget import zcdp_epsilon
from dptree.privacy.ledger_format import ChainState, LossCost, Totals, amount_fraction, amount_text

__all__ = [
    "Spend",
    "spend_of",
    "budget_violation",
    "accountant_text",
    "parse_accountant",
    "charge_curve",
    "renyi_violation",
    "renyi_epsilon",
    "spend_violation",
    "pure_sum",
]


def budget_violation(t: Totals, eps: Fraction, delta: Fraction, rho: Fraction, rho_pure: Fraction,
                     approx: bool) -> str | None:
    """Why a spend (eps, delta from (eps, delta) charges; rho from zCDP charges) exceeds the totals."""
    if t.rho is not None:
        if approx:
            return "an (epsilon, delta) charge cannot be counted against a zCDP (rho) total"
        if rho + rho_pure > t.rho:
            return f"rho {float(rho + rho_pure):.6g} > total_rho {float(t.rho):g}"
    if t.epsilon is not None:
        if delta > t.delta:
            return f"delta {float(delta):.6g} > total_delta {float(t.delta):g}"
        total_eps = eps
        if rho > 0:
            if delta >= t.delta:
                return "zCDP (Gaussian) charges need some total_delta left to convert rho to epsilon"
            total_eps += Fraction(zcdp_epsilon(float(rho), float(t.delta - delta)))
        if total_eps > t.epsilon:
            return f"epsilon {float(total_eps):.6g} > total_epsilon {float(t.epsilon):g}"
    return None



def accountant_text(orders: tuple[float, ...] | None, approx_delta: Fraction = Fraction(0)) -> str:
    """The stored accountant: ``basic``, or ``renyi:`` and the filter's orders (exact float reprs),
    followed by ``;approx_delta=D`` when a share D of total_delta is set aside for (epsilon, delta)
    steps (:class:`~dptree.privacy.accounting.RenyiFilter`'s hybrid rule)."""
    if orders is None:
        return "basic"
    text = "renyi:" + ",".join(repr(float(a)) for a in orders)
    return text + (f";approx_delta={_decimal(approx_delta)}" if approx_delta else "")


def _decimal(f: Fraction) -> str:
    return amount_text(float(f), "approx_delta")


def parse_accountant(text: str | None) -> tuple[tuple[float, ...] | None, Fraction]:
    """The filter's orders of a stored accountant (None: basic) and the delta it sets aside for
    (epsilon, delta) steps (ValueError if malformed)."""
    if text is None or text == "basic":
        return None, Fraction(0)
    if not text.startswith("renyi:"):
        raise ValueError(f"unknown accountant {text!r}")
    body, _, reserve = text[len("renyi:"):].partition(";approx_delta=")
    try:
        orders = tuple(float(a) for a in body.split(","))
        approx = amount_fraction(reserve) if reserve else Fraction(0)
    except (ValueError, ArithmeticError):
        raise ValueError(f"malformed accountant {text!r}") from None
    if (not orders or any(not math.isfinite(a) or a <= 1 for a in orders)
            or accountant_text(orders, approx) != text):
        raise ValueError(f"malformed accountant {text!r}")
    return orders, approx


def _up(x: Fraction) -> float:
    """The least float >= x (a curve is increasing in its parameter: never undercharge)."""
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def charge_curve(kind: str, epsilon: Fraction, rho: Fraction, cost: LossCost | None,
                 orders: tuple[float, ...]) -> np.ndarray:
    """A charge's Rényi curve at ``orders``: its stored loss's curve
    (:func:`~dptree.privacy.accounting.rdp_curve`, mechanism by mechanism, whatever amounts the
    plan's statement was charged; an (epsilon, delta) step by the filter's hybrid rule), or for a
    charge of numbers only the curve of any mechanism with that guarantee (a pure or (epsilon,
    delta) charge randomized response at epsilon, a zCDP charge alpha * rho). The delta of an
    (epsilon, delta) charge is counted apart (:func:`spend_violation`)."""
    if cost is not None:
        return rdp_curve(cost.loss, orders, hybrid=True)
    if kind in ("pure", "approx"):
        return pure_curve(_up(epsilon), orders)
    return zcdp_curve(_up(rho), orders)


def _filter(t: Totals, orders: tuple[float, ...], curve: np.ndarray, approx_delta: Fraction) -> RenyiFilter:
    assert t.epsilon is not None
    f = RenyiFilter(float(t.epsilon), float(t.delta), orders, float(approx_delta))
    if f.orders != orders:
        raise ValueError("the accountant's orders do not all have a positive budget at the totals")
    f.spent = np.array(curve, dtype=np.float64)
    return f


def renyi_violation(t: Totals, orders: tuple[float, ...], curve: np.ndarray,
                    approx_delta: Fraction = Fraction(0)) -> str | None:
    """Why the summed Rényi ``curve`` is refused by the filter of the (epsilon, delta) total (every
    order over its budget), or None."""
    f = _filter(t, orders, curve, approx_delta)
    if bool(np.any(f.spent <= f.budgets)):
        return None
    return (f"the Rényi filter at orders {list(orders)} would be over its budget at every order "
            f"(total_epsilon {float(t.epsilon or 0):g} at total_delta {float(t.delta):g})")


def renyi_epsilon(t: Totals, orders: tuple[float, ...], curve: np.ndarray,
                  approx_delta: Fraction = Fraction(0)) -> float:
    """The epsilon (at the total's delta) that the filter's running sum converts to."""
    return _filter(t, orders, curve, approx_delta).epsilon_spent()


def spend_violation(t: Totals, eps: Fraction, delta: Fraction, rho: Fraction, rho_pure: Fraction, approx: bool,
                    orders: tuple[float, ...] | None, curve: np.ndarray | None,
                    approx_delta: Fraction = Fraction(0), step_delta: Fraction = Fraction(0)) -> str | None:
    """Why a spend exceeds the totals under the ledger's accountant: :func:`budget_violation`
    (basic, ``orders`` None), or with a Rényi accountant the rho total as there, the deltas of the
    (epsilon, delta) steps (``step_delta``) within the ``approx_delta`` set aside for them, and the (epsilon,
    delta) total by the filter over the summed ``curve`` of every charge (:func:`charge_curve`;
    :class:`~dptree.privacy.accounting.RenyiFilter` with that ``approx_delta``), except that
    while every charge is pure (:func:`pure_sum`) a sum of epsilons within the total is accepted
    as well.

    Why the "or" is sound: with pure charges only, the privacy loss of the whole interaction is at
    most the sum of their epsilons on every run (each step's loss is at most its epsilon), so
    on the event {sum <= epsilon} the hockey-stick term E[(1 - e^(epsilon - L))_+] is 0; on the
    other runs the filter accepted, and :class:`~dptree.privacy.accounting.RenyiFilter`'s
    argument bounds that part by delta."""
    if orders is None:
        return budget_violation(t, eps, delta, rho, rho_pure, approx)
    assert curve is not None
    why = budget_violation(Totals(None, t.delta, t.rho), eps, delta, rho, rho_pure, approx)
    if why is not None:
        return why
    if step_delta > approx_delta:
        return (f"the (epsilon, delta) steps' deltas would sum to {float(step_delta):.3g}, above the "
                f"approx_delta {float(approx_delta):.3g} set aside for them")
    basic = pure_sum(eps, rho, approx)
    if basic is not None and t.epsilon is not None and basic <= t.epsilon:
        return None
    return renyi_violation(t, orders, curve, approx_delta)


def pure_sum(eps: Fraction, rho: Fraction, approx: bool) -> Fraction | None:
    """The sum of the pure charges' epsilons when every charge is pure (no zCDP and no (epsilon,
    delta) charge, whose privacy loss is unbounded), else None."""
    return eps if rho == 0 and not approx else None


@dataclass(frozen=True)
class Spend:
    """Budget spent so far (or that would be spent), under the composition rules above."""

    epsilon: float
    delta: float
    rho: float
    charges: int


def spend_of(t: Totals, s: ChainState) -> Spend:
    """What the verified state ``s`` has spent of the totals ``t``: with the renyi accountant,
    the epsilon the filter's running sums convert to at the total's delta (or the sum of the
    epsilons, when every charge is pure and that is smaller); with basic composition the summed
    epsilons, the summed rho converted at the delta the (epsilon, delta) charges left (Canonne,
    Kamath & Steinke 2020, Cor. 13); rho as counted against a rho total."""
    e_out, d_out = float(s.eps), float(s.delta)
    if s.orders is not None and s.curve is not None:  # the Rényi filter's epsilon at the total's delta
        e_out = renyi_epsilon(t, s.orders, s.curve, s.approx_delta) if s.n else 0.0
        d_out = float(t.delta) if s.n else 0.0
        basic = pure_sum(s.eps, s.rho, s.approx)
        if basic is not None and t.epsilon is not None and basic <= t.epsilon and float(basic) <= e_out:
            e_out, d_out = float(basic), 0.0
    elif s.rho > 0:
        d_left = t.delta - s.delta
        if d_left > 0:  # convert the summed rho at the delta the (epsilon, delta) charges left
            e_out = float(s.eps + Fraction(zcdp_epsilon(float(s.rho), float(d_left))))
            d_out = float(t.delta)
        else:  # no delta to convert rho with: no finite epsilon
            e_out = math.inf
    return Spend(epsilon=e_out, delta=d_out, rho=float(s.rho + s.rho_pure), charges=s.n)
