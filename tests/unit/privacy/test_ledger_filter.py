"""The ledger's accountant: a Rényi filter over each charge's stored loss, fixed and chained at creation."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _ledger_worker import worker_script

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


def test_an_approximate_step_is_refused_under_renyi(tmp_path: Path) -> None:
    with Ledger(tmp_path / "b.ledger", total_epsilon=2.0, total_delta=1e-6) as led:
        with pytest.raises(InvalidParameterError, match="no Rényi curve.*basic accountant"):
            led.charge(epsilon=0.1, delta=1e-7)
        assert led.spent().charges == 0


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
