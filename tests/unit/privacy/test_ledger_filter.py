"""The ledger's accountant: a Rényi filter over each charge's stored loss, fixed and chained at creation."""

from __future__ import annotations

import json
import math
import sqlite3
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from _ledger_worker import worker_script
from hypothesis import given, settings
from hypothesis import strategies as st

import dptree
from dptree.errors import BudgetExceededError, InvalidParameterError
from dptree.privacy import accounting
from dptree.privacy.accounting import RenyiFilter
from dptree.privacy.ledger import Ledger, LedgerCorruptError

SRC = str(Path(__file__).resolve().parents[3] / "src")


def _daily() -> dptree.RangeTreePlan:
    return dptree.plan_range_tree(lower=0, upper=1023, epsilon=0.1, branching=2)


def test_365_daily_trees_fit_epsilon_3_and_the_next_large_tree_is_refused(tmp_path: Path) -> None:
    plan = _daily()
    path = tmp_path / "year.ledger"
    with Ledger(path, total_epsilon=3.0, total_delta=1e-6, workload=[plan] * 365) as led:
        assert led.accountant == "renyi" and led.orders is not None and len(led.orders) == 1
        for day in range(365):
            led.charge_for(plan, label=f"day {day}")
        spent = led.spent()
        pld = accounting.pld_epsilon([plan.privacy_loss()] * 365, 1e-6)
        assert spent.charges == 365 and spent.delta == 1e-6
        assert pld < spent.epsilon <= 3.0
        assert spent.epsilon == pytest.approx(accounting.rdp_epsilon([plan.privacy_loss()] * 365, 1e-6, led.orders))
        big = dptree.plan_range_tree(lower=0, upper=1023, epsilon=1.0, branching=2)
        assert not led.can_afford(big)
        with pytest.raises(BudgetExceededError, match="Rényi filter"):
            led.charge_for(big, label="too much")
    with Ledger(path, read_only=True) as again:  # replayed from the stored losses
        assert again.spent() == spent and again.accountant == "renyi"


def test_basic_accountant_refuses_what_renyi_accepts(tmp_path: Path) -> None:
    plan = _daily()
    with Ledger(tmp_path / "b.ledger", total_epsilon=3.0, total_delta=1e-6, accountant="basic") as led:
        for _ in range(30):
            led.charge_for(plan)
        assert led.spent().epsilon == pytest.approx(3.0)
        assert not led.can_afford(plan)


def test_the_filter_stops_exactly_where_the_filter_does(tmp_path: Path) -> None:
    """The ledger accepts a charge iff a RenyiFilter at the same orders fed the same losses does
    (the boundary: the last accepted charge and the first refused one)."""
    plan = dptree.plan_range_tree(lower=0, upper=255, epsilon=0.2, branching=2)
    filt = RenyiFilter(2.0, 1e-6)
    n = 0
    while filt.can_afford(plan.privacy_loss()):
        filt.spend(plan.privacy_loss())
        n += 1
    assert n > 2.0 / 0.2 + 1  # more than basic composition allows
    with Ledger(tmp_path / "b.ledger", total_epsilon=2.0, total_delta=1e-6) as led:
        assert led.accountant == "renyi" and led.orders == filt.orders
        for _ in range(n):
            assert led.can_afford(plan)
            led.charge_for(plan)
        assert not led.can_afford(plan)
        before = led.spent()
        with pytest.raises(BudgetExceededError):
            led.charge_for(plan)
        assert led.spent() == before and before.epsilon == pytest.approx(filt.epsilon_spent())
        assert before.epsilon <= 2.0


def test_pure_charges_may_also_fit_by_basic_composition(tmp_path: Path) -> None:
    """While every charge is pure, a sum of epsilons within the total is accepted too (the filter
    alone would stop three charges of 0.3 short of epsilon = 3) and reported as (sum, 0)."""
    with Ledger(tmp_path / "b.ledger", total_epsilon=3.0, total_delta=1e-6) as led:
        for _ in range(10):
            led.charge(epsilon=0.3)
        assert led.spent().epsilon == pytest.approx(3.0) and led.spent().delta == 0.0
        with pytest.raises(BudgetExceededError):
            led.charge(epsilon=0.01)
        filt = RenyiFilter(3.0, 1e-6)
        assert not np.any(10 * accounting.pure_curve(0.3, filt.orders) <= filt.budgets)


def test_numbers_only_charges_count_their_weakest_curve(tmp_path: Path) -> None:
    """A pure charge of numbers only counts randomized response at its epsilon, a zCDP charge
    alpha * rho; the spend is the filter's conversion of their sum."""
    with Ledger(tmp_path / "b.ledger", total_epsilon=2.0, total_delta=1e-6) as led:
        led.charge(epsilon=0.5)
        led.charge(rho=0.02)
        filt = RenyiFilter(2.0, 1e-6)
        filt.spent = accounting.pure_curve(0.5, filt.orders) + accounting.zcdp_curve(0.02, filt.orders)
        assert led.spent().epsilon == pytest.approx(filt.epsilon_spent())


def test_default_accountant_and_validation(tmp_path: Path) -> None:
    with Ledger(tmp_path / "a.ledger", total_epsilon=1.0) as led:  # pure total: no delta to convert with
        assert led.accountant == "basic" and led.orders is None
    with Ledger(tmp_path / "r.ledger", total_rho=1.0) as led:
        assert led.accountant == "basic"
    with Ledger(tmp_path / "c.ledger", total_epsilon=2.0, total_delta=1e-6, orders=(8, 64)) as led:
        assert led.accountant == "renyi" and led.orders == (8.0, 64.0)
    with pytest.raises(InvalidParameterError, match="accountant cannot change"):
        Ledger(tmp_path / "c.ledger", accountant="basic")
    with pytest.raises(InvalidParameterError, match="accountant cannot change"):
        Ledger(tmp_path / "c.ledger", total_epsilon=2.0, total_delta=1e-6, orders=(16,))
    with Ledger(tmp_path / "c.ledger", accountant="renyi") as led:  # the stored one, named
        assert led.orders == (8.0, 64.0)
    with pytest.raises(InvalidParameterError, match="total_delta > 0"):
        Ledger(tmp_path / "d.ledger", total_epsilon=1.0, accountant="renyi")
    with pytest.raises(InvalidParameterError, match="'basic' or 'renyi'"):
        Ledger(tmp_path / "e.ledger", total_epsilon=1.0, accountant="pld")
    with pytest.raises(InvalidParameterError, match="not both"):
        Ledger(tmp_path / "f.ledger", total_epsilon=1.0, total_delta=1e-6, orders=(4,), workload=[_daily()])
    assert not (tmp_path / "d.ledger").exists() and not (tmp_path / "f.ledger").exists()


def _treelog(delta: float = 1e-7) -> dptree.InteriorPointPlan:
    return dptree.plan_interior_point(lower=0, upper=2**30, epsilon=0.5, delta=delta, method="treelog", n=10**6)


def test_an_approximate_step_needs_delta_set_aside_under_renyi(tmp_path: Path) -> None:
    with Ledger(tmp_path / "b.ledger", total_epsilon=2.0, total_delta=1e-6) as led:
        assert led.approx_delta == 0.0
        with pytest.raises(InvalidParameterError, match="sets aside no delta.*approx_delta"):
            led.charge(epsilon=0.1, delta=1e-7)
        with pytest.raises(InvalidParameterError, match="sets aside no delta"):
            led.charge_for(_treelog())
        assert led.spent().charges == 0
    with pytest.raises(InvalidParameterError, match="below total_delta"):
        Ledger(tmp_path / "c.ledger", total_epsilon=2.0, total_delta=1e-6, approx_delta=1e-6)
    with pytest.raises(InvalidParameterError, match="accountant='renyi'"):
        Ledger(tmp_path / "c.ledger", total_epsilon=2.0, total_delta=1e-6, accountant="basic", approx_delta=1e-7)
    assert not (tmp_path / "c.ledger").exists()


def test_the_hybrid_rule_charges_deltas_apart_and_epsilons_by_the_filter(tmp_path: Path) -> None:
    """With approx_delta D set aside: (epsilon, delta) releases fit while their deltas sum to <= D,
    their epsilons enter the filter as randomized response, and the filter converts at delta - D."""
    path = tmp_path / "b.ledger"
    plan = _treelog(1e-7)
    with Ledger(path, total_epsilon=2.0, total_delta=1e-6, approx_delta=3e-7) as led:
        assert led.accountant == "renyi" and led.approx_delta == 3e-7
        filt = RenyiFilter(2.0, 1e-6, led.orders, approx_delta=3e-7)
        for _ in range(3):
            assert led.can_afford(plan)
            led.charge_for(plan)
            filt.spend(plan.privacy_loss())
        assert not led.can_afford(plan)  # a fourth delta of 1e-7 is over the 3e-7 set aside
        with pytest.raises(BudgetExceededError, match="approx_delta"):
            led.charge_for(plan)
        with pytest.raises(BudgetExceededError):
            filt.spend(plan.privacy_loss())
        assert led.spent().epsilon == pytest.approx(filt.epsilon_spent())
        led.charge_for(_daily())  # pure releases still fit by the filter
        eps_steps = [m.epsilon for m in plan.privacy_loss().measurements]
        rr = sum(accounting.pure_curve(e, led.orders) for e in eps_steps if e > 0)
        assert np.allclose(accounting.rdp_curve(plan.privacy_loss(), led.orders, hybrid=True), rr, rtol=1e-9)
    with Ledger(path, read_only=True) as again:  # stored and chained with the accountant
        assert again.approx_delta == 3e-7 and again.spent().charges == 4
    with pytest.raises(InvalidParameterError, match="accountant cannot change"):
        Ledger(path, approx_delta=1e-7)
    con = sqlite3.connect(path, isolation_level=None)
    text = con.execute("SELECT value FROM ledger_meta WHERE key = 'accountant'").fetchone()[0]
    assert text.endswith(";approx_delta=3E-7") or text.endswith(";approx_delta=3e-07"), text
    con.execute("UPDATE ledger_meta SET value = ? WHERE key = 'accountant'", (text.replace("3", "5"),))
    con.close()
    with pytest.raises(LedgerCorruptError):
        Ledger(path, read_only=True)


def test_a_numbers_only_approximate_charge_counts_its_epsilon_and_delta(tmp_path: Path) -> None:
    with Ledger(tmp_path / "b.ledger", total_epsilon=1.0, total_delta=1e-6, approx_delta=1e-7) as led:
        led.charge(epsilon=0.5, delta=1e-7)
        with pytest.raises(BudgetExceededError, match="approx_delta"):
            led.charge(epsilon=0.01, delta=1e-9)
        with pytest.raises(BudgetExceededError, match="every order"):
            led.charge(epsilon=0.6)
        filt = RenyiFilter(1.0, 1e-6, led.orders, approx_delta=1e-7)
        assert led.spent().epsilon == pytest.approx(_converted(filt, accounting.pure_curve(0.5, led.orders)))


def _converted(filt: RenyiFilter, curve: np.ndarray) -> float:
    filt.spent = curve
    return filt.epsilon_spent()


@pytest.mark.parametrize("stored", ["basic", "renyi:8.0", "renyi:4.0,8.0,16.0", "pld"])
def test_the_accountant_is_chained(tmp_path: Path, stored: str) -> None:
    """Editing the stored accountant (to basic, to other orders, to garbage) or deleting it is
    refused, with or without charges."""
    for n in (0, 2):
        path = tmp_path / f"b{n}-{stored.replace(':', '_')}.ledger"
        with Ledger(path, total_epsilon=2.0, total_delta=1e-6, orders=(4, 8, 16, 32)) as led:
            for _ in range(n):
                led.charge_for(_daily())
        for stmt in (f"UPDATE ledger_meta SET value = '{stored}' WHERE key = 'accountant'",
                     "DELETE FROM ledger_meta WHERE key = 'accountant'"):
            copy = path.with_suffix(f".{len(stmt)}")
            copy.write_bytes(path.read_bytes())
            con = sqlite3.connect(copy, isolation_level=None)
            con.execute(stmt)
            con.close()
            with pytest.raises(LedgerCorruptError):
                Ledger(copy, read_only=True)




def test_concurrent_writers_never_pass_the_filter_together(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    Ledger(path, total_epsilon=3.0, total_delta=1e-6).close()
    filt = RenyiFilter(3.0, 1e-6)
    one = accounting.zcdp_curve(0.01, filt.orders)
    fits = max(k for k in range(100) if np.any(k * one <= filt.budgets))
    assert 10 < fits < 48  # fewer than the 48 attempts
    code = worker_script(SRC, 8, "rho=0.01")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), f"p{j}"], stdout=subprocess.PIPE, text=True)
             for j in range(6)]
    results = [json.loads(p.communicate(timeout=300)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(r[0] for r in results) == fits and sum(r[1] for r in results) == 48 - fits
    with Ledger(path) as led:
        assert led.spent().charges == fits and led.spent().epsilon <= 3.0


class _OneStep:
    """A plan of one discrete Laplace count (sensitivity 1) at ``epsilon``."""

    def __init__(self, epsilon: float) -> None:
        from dptree.privacy.loss import Laplace, PrivacyLoss
        from dptree.privacy.statement import Neighbors

        self.budget = dptree.Budget(epsilon=epsilon)
        self._loss = PrivacyLoss(Neighbors(), (Laplace(1 / Fraction(epsilon), 1),))

    def privacy_loss(self):  # noqa: ANN201 - the plan interface
        return self._loss


def _exact_epsilon(k: int, eps: float, delta: float) -> float:
    """The exact epsilon at ``delta`` of k adaptive-free compositions of randomized response at eps
    (the discrete Laplace of sensitivity 1 has exactly its privacy loss): the privacy loss is
    eps (2X - k), X ~ Bin(k, e^eps / (1 + e^eps)); bisection on the hockey-stick divergence."""
    from scipy.stats import binom

    x = np.arange(k + 1)
    pmf = binom.pmf(x, k, math.exp(eps) / (1 + math.exp(eps)))
    loss = eps * (2 * x - k)

    def hockey(e: float) -> float:
        return float(np.sum(pmf * np.clip(1 - np.exp(e - loss), 0, None)))

    lo, hi = 0.0, k * eps
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if hockey(mid) > delta else (lo, mid)
    return hi


@settings(max_examples=20, deadline=None)
@given(eps=st.integers(1, 50).map(lambda j: j / 64), k=st.integers(1, 120))  # dyadic: charged exactly
def test_the_spend_is_never_below_the_exact_composition(eps: float, k: int) -> None:
    """A renyi ledger's reported spend of k equal Laplace counts is at least their exact (epsilon,
    delta) (the binomial privacy curve) and at most the total; it accepts exactly what the filter
    or the sum of the (pure) epsilons allows; a rho total is charged k eps^2 / 2, the closed form."""
    import tempfile

    plan = _OneStep(eps)
    with tempfile.TemporaryDirectory() as d:
        led = Ledger(Path(d) / "b.ledger", total_epsilon=3.0, total_delta=1e-6)
        rho_led = Ledger(Path(d) / "r.ledger", total_rho=50.0)
        filt = RenyiFilter(3.0, 1e-6, led.orders)
        charged = 0
        for _ in range(k):
            after = filt.spent + filt.cost(plan.privacy_loss())
            expected = bool(np.any(after <= filt.budgets)) or Fraction(eps) * (charged + 1) <= 3
            assert led.can_afford(plan) == expected
            if not expected:
                break
            filt.spent = after
            led.charge_for(plan)
            rho_led.charge_for(plan)
            charged += 1
        spent = led.spent()
        assert spent.charges == charged
        assert _exact_epsilon(charged, eps, 1e-6) <= spent.epsilon + 1e-9 <= 3.0 + 1e-9
        assert rho_led.spent().rho == pytest.approx(charged * eps * eps / 2, rel=1e-12)
        led.close()
        rho_led.close()
