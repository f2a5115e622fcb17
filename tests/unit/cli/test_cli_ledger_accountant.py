"""``dptree budget``: the accountant chosen at --create, and --what-if (plan a command line, charge nothing)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dptree.privacy.ledger import Ledger

TREE = "release data.csv --column v --lower 0 --upper 1023 --out t.json --epsilon {eps}"


def test_create_with_an_accountant_and_show_it(tmp_path: Path, cli_run: Any) -> None:
    led = tmp_path / "b.sqlite"
    r = cli_run(["budget", led, "--create", "--total-epsilon", 3, "--total-delta", 1e-6, "--accountant", "renyi",
                 "--orders", "8,16"])
    assert r.code == 0 and "accountant renyi (orders 8,16)" in r.out, r.err
    with Ledger(led) as ledger:
        assert ledger.accountant == "renyi" and ledger.orders == (8.0, 16.0)
    r = cli_run(["budget", led, "--format", "json"])
    assert json.loads(r.out)["accountant"] == {"name": "renyi", "orders": [8.0, 16.0]}
    basic = tmp_path / "basic.sqlite"
    r = cli_run(["budget", basic, "--create", "--total-epsilon", 3, "--total-delta", 1e-6, "--accountant", "basic"])
    assert r.code == 0 and "accountant basic" in r.out
    r = cli_run(["budget", tmp_path / "pure.sqlite", "--create", "--total-epsilon", 1, "--accountant", "renyi"])
    assert r.code == 2 and "total_delta > 0" in r.err
    r = cli_run(["budget", led, "--accountant", "basic"])
    assert r.code == 2 and "with --create" in r.err
    r = cli_run(["budget", tmp_path / "o.sqlite", "--create", "--total-epsilon", 1, "--total-delta", 1e-6,
                 "--orders", "8,x"])
    assert r.code == 2 and "--orders" in r.err


def test_what_if_answers_without_charging(tmp_path: Path, cli_run: Any) -> None:
    led = tmp_path / "b.sqlite"
    assert cli_run(["budget", led, "--create", "--total-epsilon", 3, "--total-delta", 1e-6]).code == 0
    r = cli_run(["budget", led, "--what-if", TREE.format(eps=0.1)])
    assert r.code == 0 and "the release fits" in r.out, r.err
    r = cli_run(["budget", led, "--what-if", TREE.format(eps=4), "--format", "json"])
    out = json.loads(r.out)
    assert r.code == 1 and out["fits"] is False and out["spent"]["after"]["epsilon"] > 3
    with Ledger(led) as ledger:
        assert ledger.spent().charges == 0  # nothing charged, nothing read (data.csv does not exist)
        for _ in range(3):
            ledger.charge(epsilon=0.9)
    r = cli_run(["budget", led, "--what-if", TREE.format(eps=0.31)])
    assert r.code == 1 and "does NOT fit" in r.out
    r = cli_run(["budget", led, "--what-if", TREE.format(eps=0.3)])  # exactly the rest (amounts are exact)
    assert r.code == 0 and "the release fits" in r.out
    assert not (tmp_path / "t.json").exists()


def test_what_if_refuses_what_is_not_a_release(tmp_path: Path, cli_run: Any) -> None:
    led = tmp_path / "b.sqlite"
    assert cli_run(["budget", led, "--create", "--total-epsilon", 3, "--total-delta", 1e-6]).code == 0
    other = tmp_path / "other.sqlite"
    r = cli_run(["budget", led, "--what-if", f"budget {other} --create --total-epsilon 1"])
    assert r.code == 2 and "releasing command" in r.err and not other.exists()
    r = cli_run(["budget", led, "--what-if", "release data.csv --column v --lower 0 --upper 7 --out t.json "
                 "--epsilon -1"])
    assert r.code == 2
    r = cli_run(["budget", led, "--what-if", "release 'unclosed"])
    assert r.code == 2 and "cannot split" in r.err


TREELOG = "interior-point data.csv --column v --lower 0 --upper 1073741824 --epsilon 0.5 --delta 1e-7 " \
          "--method treelog --n 1000000 --out p.json"


def test_approx_delta_lets_a_renyi_ledger_charge_treelog(tmp_path: Path, cli_run: Any) -> None:
    plain, hybrid = tmp_path / "plain.sqlite", tmp_path / "hybrid.sqlite"
    assert cli_run(["budget", plain, "--create", "--total-epsilon", 2, "--total-delta", 1e-6]).code == 0
    r = cli_run(["budget", plain, "--what-if", TREELOG])
    assert r.code == 2 and "--approx-delta" in r.err, (r.out, r.err)
    r = cli_run(["budget", hybrid, "--create", "--total-epsilon", 2, "--total-delta", 1e-6, "--approx-delta", 2e-7])
    assert r.code == 0 and "delta 2e-07 set aside" in r.out, r.err
    with Ledger(hybrid) as ledger:
        assert ledger.approx_delta == 2e-7
    r = cli_run(["budget", hybrid, "--plan", "3 x " + TREELOG])
    assert r.code == 1 and "would accept 2 of 3" in r.out, (r.out, r.err)
    r = cli_run(["budget", hybrid, "--approx-delta", 1e-7])
    assert r.code == 2 and "with --create" in r.err


def test_plan_compares_accountants_and_workload_chooses_the_order(tmp_path: Path, cli_run: Any) -> None:
    led = tmp_path / "b.sqlite"
    day = TREE.format(eps=0.1) + " --branching 2"
    r = cli_run(["budget", led, "--create", "--total-epsilon", 3, "--total-delta", 1e-6, "--workload", "365 x " + day])
    assert r.code == 0 and "accountant renyi (orders" in r.out, r.err
    with Ledger(led) as ledger:
        assert ledger.orders is not None and len(ledger.orders) == 1
    r = cli_run(["budget", led, "--plan", "365 x " + day, "--format", "json"])
    assert r.code == 0, r.err
    out = json.loads(r.out)
    eps = {row["accountant"].split(" (")[0]: row["epsilon"] for row in out["accountants"]}
    assert out["releases"] == 365 and out["ledger_accepts"] == 365
    assert eps["basic composition"] == 36.5
    assert eps["privacy loss distributions"] < eps["Rényi composition"] <= 3.0
    # the filter's one order, fixed for this workload, spends no delta on a split: within 0.1% of the best order
    assert eps["Rényi composition"] <= eps["this ledger"] <= 1.001 * eps["Rényi composition"]
    r = cli_run(["budget", led, "--plan", "365 x " + day, "--plan", TREE.format(eps=1.0)])
    assert r.code == 1 and "would accept 365 of 366" in r.out
    with Ledger(led) as ledger:
        assert ledger.spent().charges == 0
    r = cli_run(["budget", led, "--plan", "0 x " + day])
    assert r.code == 2 and "repeat count" in r.err


def test_history_shows_each_charges_marginal_cost(tmp_path: Path, cli_run: Any) -> None:
    led = tmp_path / "b.sqlite"
    assert cli_run(["budget", led, "--create", "--total-epsilon", 3, "--total-delta", 1e-6]).code == 0
    with Ledger(led) as ledger:
        ledger.charge(epsilon=0.5)
        ledger.charge(epsilon=0.5)
        history = ledger.history()
        assert history[0]["marginal_epsilon"] == 0.5  # pure so far: the sum of epsilons is smaller
        total = ledger.spent().epsilon
    assert sum(h["marginal_epsilon"] for h in history) == pytest.approx(total)
    r = cli_run(["budget", led])
    assert r.code == 0 and "cost" in r.out and "+0.5 eps" in r.out
