"""How a ledger prices and checks a charge: a plan's amounts and stored loss, and the
accountant's rule for accepting it.

:class:`LedgerRules` adds to :class:`~dptree.privacy.ledger_maintenance.LedgerMaintenance` the
steps between a release plan and a row of the ledger: the accountant a new ledger is created with
(``basic`` composition, or the Rényi filter of :mod:`dptree.privacy.accounting` at orders fixed
in advance), the amounts a plan is charged (its budget, never less than its stated spend) and its
stored :class:`~dptree.privacy.loss.PrivacyLoss`, and the check of a new charge against the totals
and every earlier charge. :class:`~dptree.privacy.ledger.Ledger` builds on it.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any, Iterable, Mapping, Sequence, cast

import numpy as np

from dptree.errors import InvalidParameterError
from dptree.privacy.budget import Budget
from dptree.privacy.ledger_accountant import (
    Spend,
    charge_curve,
    spend_of,
    spend_violation,
)
from dptree.privacy.ledger_format import (
    ChainState,
    LossCost,
    Totals,
    amount_fraction,
    amount_text,
    covers_steps,
    loss_cost,
    loss_text,
    step_delta,
)
from dptree.privacy.ledger_maintenance import LedgerMaintenance
from dptree.privacy.loss import PrivacyLoss

__all__ = ["LedgerRules"]


def _covering(amount: float, exact: Fraction) -> float:
    """``amount``, raised if needed to the least float whose stored decimal is >= ``exact``."""
    out = max(amount, float(exact))
    while amount_fraction(amount_text(out, "amount")) < exact:
        out = math.nextafter(out, math.inf)
    return out


class LedgerRules(LedgerMaintenance):
    """The accountant, the amounts of a plan's charge and the acceptance of a new charge."""

    #: the Rényi filter's orders, fixed when the ledger was created (None: basic composition)
    _orders: tuple[float, ...] | None = None
    #: the part of total_delta the filter sets aside for (epsilon, delta) steps
    _approx_delta: Fraction = Fraction(0)

    @staticmethod
    def _requested_accountant(requested: Totals | None, accountant: object, orders: Sequence[float] | None,
                              workload: Iterable[Any] | None, approx_delta: object = None
                              ) -> tuple[str, tuple[float, ...] | None, Fraction] | None:
        """The accountant asked for (name, the filter's orders, the delta it sets aside for
        (epsilon, delta) steps), resolved against the totals; None when neither the accountant nor
        the totals were given (an existing ledger keeps its own).

        The default is ``renyi`` (at :data:`~dptree.privacy.accounting.FILTER_ORDERS`) for an
        (epsilon, delta > 0) total and ``basic`` otherwise: a pure epsilon total has no delta for
        the Rényi conversion, and a rho total is charged each mechanism's exact rho either way."""
        from dptree.privacy.accounting import RenyiFilter

        if accountant not in (None, "basic", "renyi"):
            raise InvalidParameterError(f"accountant must be 'basic' or 'renyi', got {accountant!r}",
                                        parameter="accountant")
        if orders is not None and workload is not None:
            raise InvalidParameterError("give the Rényi orders (orders=) or a workload to choose one order "
                                        "(workload=), not both")
        renyi_only = orders is not None or workload is not None or approx_delta is not None
        if accountant == "basic" and renyi_only:
            raise InvalidParameterError("orders, workload and approx_delta set up the Rényi filter: give them "
                                        "with accountant='renyi'")
        reserve = Fraction(0) if approx_delta is None else amount_fraction(amount_text(approx_delta, "approx_delta"))
        if requested is None:  # an existing ledger: what was asked is compared with what it stores
            if accountant is None and not renyi_only:
                return None
            return str(accountant or "renyi"), None if orders is None else tuple(float(a) for a in orders), reserve
        renyi_ok = requested.epsilon is not None and requested.delta > 0
        name = accountant if accountant is not None else ("renyi" if renyi_ok or renyi_only else "basic")
        if name == "basic":
            return "basic", None, Fraction(0)
        if not renyi_ok:
            raise InvalidParameterError(
                "the renyi accountant needs total_epsilon and a total_delta > 0 (it converts Rényi divergence "
                "to (epsilon, delta)); give total_delta, or accountant='basic'", parameter="accountant")
        eps, delta, share = float(cast(Fraction, requested.epsilon)), float(requested.delta), float(reserve)
        if not reserve < requested.delta:
            raise InvalidParameterError(
                f"approx_delta (the part of total_delta set aside for releases with an (epsilon, delta) step) "
                f"must be below total_delta={delta:g}, got {approx_delta!r}", parameter="approx_delta")
        if workload is not None:
            losses = [LedgerRules._loss_of(p) for p in workload]
            if not losses:
                raise InvalidParameterError("workload must list at least one plan", parameter="workload")
            return "renyi", RenyiFilter.for_workload(eps, delta, losses, approx_delta=share).orders, reserve
        if orders is not None:
            return "renyi", RenyiFilter(eps, delta, orders, share).orders, reserve
        return "renyi", RenyiFilter(eps, delta, approx_delta=share).orders, reserve

    @staticmethod
    def _loss_of(plan: Any) -> PrivacyLoss:
        if isinstance(plan, PrivacyLoss):
            return plan
        privacy_loss = getattr(plan, "privacy_loss", None)
        loss = privacy_loss() if callable(privacy_loss) else None
        if not isinstance(loss, PrivacyLoss):
            raise InvalidParameterError("workload must list release plans (with privacy_loss()) or PrivacyLoss "
                                        "objects", parameter="workload")
        return loss

    def _charge_terms(self, epsilon: float, delta: float, rho: float, loss: str | None
                      ) -> tuple[str, Fraction, Fraction, Fraction, LossCost | None, Fraction]:
        """A charge's kind, exact amounts, stored loss's cost and the rho it counts against a rho
        total (InvalidParameterError for amounts that make no charge)."""
        e, d, r = amount_text(epsilon, "epsilon"), amount_text(delta, "delta"), amount_text(rho, "rho")
        fe, fd, fr = amount_fraction(e), amount_fraction(d), amount_fraction(r)
        if fr > 0 and (fe > 0 or fd > 0):
            raise InvalidParameterError("charge either rho (zCDP) or epsilon/delta, not both")
        if fe == 0 and fr == 0:
            raise InvalidParameterError("a charge needs epsilon > 0 or rho > 0")
        if fd >= 1:
            raise InvalidParameterError(f"delta must be in [0, 1), got {delta}")
        kind = "zcdp" if fr > 0 else ("approx" if fd > 0 else "pure")
        cost = None if loss is None else loss_cost(loss)
        if cost is not None and not covers_steps(fd, cost):
            raise InvalidParameterError("the plan's (epsilon, delta) steps spend more delta than its statement states")
        if kind == "pure" and cost is not None and cost.rho is not None:
            pure_rho = cost.rho  # each mechanism's exact rho
        else:
            pure_rho = fe * fe / 2 if kind == "pure" else Fraction(0)
        return kind, fe, fd, fr, cost, pure_rho

    def _empty_state(self) -> ChainState:
        """The state of this ledger before its first charge."""
        zero = Fraction(0)
        curve = None if self._orders is None else np.zeros(len(self._orders))
        return ChainState(zero, zero, zero, zero, False, 0, 0, "", self._orders, curve, self._approx_delta)

    def _spend_of(self, s: ChainState) -> Spend:
        return spend_of(self._totals, s)

    def _violation(self, s: ChainState, kind: str, fe: Fraction, fd: Fraction, fr: Fraction, pure_rho: Fraction,
                   cost: LossCost | None, loss: str | None) -> str | None:
        """Why the charge does not fit on top of the verified state ``s`` (None: it fits)."""
        after = self._after(s, kind, fe, fd, fr, pure_rho, cost)
        return spend_violation(self._totals, after.eps, after.delta, after.rho, after.rho_pure, after.approx,
                               after.orders, after.curve, after.approx_delta, after.step_delta)

    @staticmethod
    def _after(s: ChainState, kind: str, fe: Fraction, fd: Fraction, fr: Fraction, pure_rho: Fraction,
               cost: LossCost | None) -> ChainState:
        """The state ``s`` with one more charge of these terms."""
        curve = s.curve
        if s.orders is not None and s.curve is not None:
            curve = s.curve + charge_curve(kind, fe, fr, cost, s.orders)
        return dataclasses.replace(
            s, eps=s.eps + (fe if kind != "zcdp" else 0), delta=s.delta + fd, rho=s.rho + fr,
            rho_pure=s.rho_pure + pure_rho, approx=s.approx or kind == "approx", n=s.n + 1, curve=curve,
            step_delta=s.step_delta + step_delta(kind, fd, cost))

    def _refuse_curveless(self, kind: str, fd: Fraction, cost: LossCost | None) -> None:
        """Refuse, before any transaction, a release with an (epsilon, delta) step that a renyi
        ledger could never charge: one that sets aside no delta for such steps."""
        if self._orders is not None and step_delta(kind, fd, cost) > 0 and self._approx_delta == 0:
            raise InvalidParameterError(
                f"ledger {self.path} uses the renyi accountant and sets aside no delta for releases with an "
                "(epsilon, delta) step, such as this one: it cannot be charged here. Create the ledger with part "
                "of total_delta set aside for them (approx_delta=..., dptree budget --create --approx-delta), "
                "or with the basic accountant (accountant='basic')")

    def _plan_charge(self, release_plan: Any) -> tuple[float, float, float, str | None]:
        """The amounts a plan is charged and its stored loss (None: a statement, numbers only)."""
        epsilon, delta, rho = self._plan_amounts(release_plan)
        privacy_loss = getattr(release_plan, "privacy_loss", None)
        if not callable(privacy_loss):
            return epsilon, delta, rho, None
        loss = privacy_loss()
        if not isinstance(loss, PrivacyLoss):
            raise InvalidParameterError("charge_for needs a plan whose privacy_loss() is a PrivacyLoss")
        text = loss_text(loss)
        cost = loss_cost(text)
        if rho > 0:
            if cost.rho is not None:
                rho = _covering(rho, cost.rho)
        elif delta == 0 and cost.epsilon is not None:
            epsilon = _covering(epsilon, cost.epsilon)
        return epsilon, delta, rho, text

    @staticmethod
    def _plan_amounts(release_plan: Any) -> tuple[float, float, float]:
        """(epsilon, delta, rho) a plan is charged by its statement or budget."""
        statement = getattr(release_plan, "statement", release_plan)
        budget = getattr(release_plan, "budget", None)
        if isinstance(budget, Budget) and not (isinstance(statement, Mapping) and "budget_spent" in statement):
            if budget.kind == "zcdp":  # a plan whose statement states its budget, not a spend
                return 0.0, 0.0, float(budget.rho or 0.0)
            return float(budget.epsilon or 0.0), float(budget.delta or 0.0), 0.0
        if not isinstance(statement, Mapping) or "budget_spent" not in statement:
            raise InvalidParameterError("charge_for needs a release plan (e.g. from plan_range_tree) or its statement")
        spent = statement["budget_spent"]
        requested = statement.get("budget_requested") or (  # a plan's budget is what it was asked to spend
            {"epsilon": budget.epsilon, "rho": budget.rho} if isinstance(budget, Budget) else {})
        if "rho" in spent:
            rho = float(requested.get("rho") or 0.0)
            if rho <= 0 or rho < spent["rho"]:
                rho = math.nextafter(float(spent["rho"]), math.inf)  # float(spent) may round down
            return 0.0, 0.0, rho
        eps = float(requested.get("epsilon") or 0.0)
        if eps < spent["epsilon"]:
            eps = math.nextafter(float(spent["epsilon"]), math.inf)
        return eps, float(spent.get("delta") or 0.0), 0.0
