"""The privacy loss a ledger charge stores: canonical JSON inside the hash chain, the exact rho it
charges a rho total, the upgrade of a format-2 ledger, and its display by ``dptree budget``."""

from __future__ import annotations

import json
import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import dptree
from dptree.errors import BudgetExceededError, InvalidParameterError
from dptree.privacy import ledger_format as fmt
from dptree.privacy.ledger import Ledger, LedgerCorruptError, LedgerOutdatedError


def _tree() -> Any:
    return dptree.plan_range_tree(lower=0, upper=1023, epsilon=1.0, branching=2)


def _quantile() -> Any:
    return dptree.plan_quantile(lower=0, upper=100, q=0.5, epsilon=1.0)


def _stored(path: Path) -> list[Any]:
    con = sqlite3.connect(path)
    rows = [r[0] for r in con.execute("SELECT loss FROM charges ORDER BY id")]
    con.close()
    return rows


def _tamper(path: Path, *statements: str, params: tuple = ()) -> None:
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA ignore_check_constraints = ON")
    for stmt in statements:
        con.execute(stmt, params)
    con.close()


def _assert_refused(path: Path) -> None:
    with pytest.raises(LedgerCorruptError, match="restore it from a backup"):
        Ledger(path)
    with pytest.raises(LedgerCorruptError):
        Ledger(path, read_only=True)


def test_charge_for_stores_the_plans_loss_as_canonical_json(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    plan = _tree()
    with Ledger(path, total_epsilon=5.0) as led:
        charge = led.charge_for(plan, label="tree")
        led.charge(epsilon=0.5, label="numbers")
        assert charge.loss == plan.privacy_loss()
        hist = led.history()
    expected = plan.privacy_loss().to_dict()
    assert hist[0]["loss"] == expected and hist[1]["loss"] is None
    assert [h["mechanisms"] for h in hist] == [f"laplace x{len(plan.privacy_loss().measurements)}", "numbers only"]
    text, none = _stored(path)
    assert none is None
    assert text == json.dumps(expected, sort_keys=True, separators=(",", ":"))
    assert dptree.privacy.loss.PrivacyLoss.from_dict(json.loads(text)) == plan.privacy_loss()


def _scale_edit(text: str) -> str:
    return text.replace('"scale":"10"', '"scale":"100"', 1)


@pytest.mark.parametrize("edit", [
    _scale_edit,                                              # a smaller loss
    lambda t: json.dumps(json.loads(t), sort_keys=True),      # the same loss, other whitespace
    lambda t: None,                                           # the loss removed
    lambda t: t.replace("add_remove", "replace"),             # another privacy unit
])
def test_an_edited_stored_loss_breaks_the_chain(tmp_path: Path, edit: Any) -> None:
    path = tmp_path / "b.ledger"
    with Ledger(path, total_epsilon=5.0) as led:
        led.charge_for(_tree(), label="tree")
        led.charge(epsilon=0.5)
    (text, _) = _stored(path)
    edited = edit(text)
    assert edited != text
    _tamper(path, "UPDATE charges SET loss = ? WHERE id = 1", params=(edited,))
    _assert_refused(path)


def test_a_loss_added_to_a_numbers_only_charge_breaks_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    with Ledger(path, total_epsilon=5.0) as led:
        led.charge_for(_tree(), label="tree")
        led.charge(epsilon=0.5)
    (text, _) = _stored(path)
    _tamper(path, "UPDATE charges SET loss = ? WHERE id = 2", params=(text,))
    _assert_refused(path)


def test_a_stored_loss_above_its_charged_amount_is_refused(tmp_path: Path) -> None:
    """A chain recomputed over a loss that spends more than the row's epsilon does not verify:
    the stored loss must agree with the amounts counted against an epsilon total."""
    path = tmp_path / "b.ledger"
    with Ledger(path, total_epsilon=5.0) as led:
        led.charge_for(_tree(), label="tree")
    con = sqlite3.connect(path, isolation_level=None)
    meta = dict(con.execute("SELECT key, value FROM ledger_meta"))
    row = con.execute("SELECT id, created_utc, label, kind, epsilon, delta, rho, pid, loss FROM charges").fetchone()
    row = (*row[:4], "0.5", *row[5:])  # half the epsilon the stored loss spends
    own = fmt.row_hash(fmt.genesis_hash(meta), row)
    con.execute("UPDATE charges SET epsilon = '0.5', hash = ? WHERE id = 1", (own,))
    con.execute("UPDATE ledger_meta SET value = ? WHERE key = 'head'", (own,))
    con.close()
    with pytest.raises(LedgerCorruptError, match="stored loss exceeds its amounts"):
        Ledger(path)


def test_a_rho_total_is_charged_each_levels_exact_rho(tmp_path: Path) -> None:
    plan = _tree()
    loss = plan.privacy_loss()
    levels = len(plan.layout.fanouts) + 1  # 11 levels for 1024 leaves at branching 2
    assert levels == 11
    measured = [m for m in loss.measurements if m.family == "laplace"]
    assert len(measured) == len(loss.measurements) and len(measured) in (levels - 1, levels)
    exact = sum((m.sensitivity / m.scale) ** 2 / 2 for m in measured)
    assert sum(m.sensitivity / m.scale for m in measured) == 1  # the whole epsilon over the levels
    assert exact == Fraction(1, 2 * len(measured))  # uniform levels: epsilon^2 / (2 d)
    assert exact * (len(measured) - 1) < Fraction(1, 2)  # about d times below epsilon^2 / 2
    total = float(2 * exact)
    with Ledger(tmp_path / "b.ledger", total_rho=total) as led:
        led.charge_for(plan, label="tree 1")
        assert led.spent().rho == float(exact)
        led.charge_for(plan, label="tree 2")  # exactly the total
        assert led.spent().rho == total
        with pytest.raises(BudgetExceededError):
            led.charge_for(plan, label="tree 3")
        with pytest.raises(BudgetExceededError):
            led.charge(epsilon=1e-3)  # numbers only: epsilon^2 / 2 still counts
        assert led.spent().charges == 2


def test_a_rho_total_is_charged_an_exponential_mechanism_epsilon_squared_over_8(tmp_path: Path) -> None:
    plan = _quantile()
    assert [m.family for m in plan.privacy_loss().measurements] == ["exponential"]
    with Ledger(tmp_path / "b.ledger", total_rho=0.125) as led:
        with pytest.raises(BudgetExceededError):
            led.charge(epsilon=1.0)  # numbers only: 0.5
        led.charge_for(plan, label="median")
        assert led.spent().rho == 0.125
        assert [h["mechanisms"] for h in led.history()] == ["exponential"]
        with pytest.raises(BudgetExceededError):
            led.charge_for(plan)


def test_an_epsilon_total_keeps_basic_composition(tmp_path: Path) -> None:
    with Ledger(tmp_path / "b.ledger", total_epsilon=2.0, total_rho=1.0) as led:
        led.charge_for(_tree())
        led.charge_for(_quantile())
        spend = led.spent()
        assert spend.epsilon == 2.0
        assert spend.rho == pytest.approx(1 / 20 + 1 / 8)
        with pytest.raises(BudgetExceededError, match="total_epsilon"):
            led.charge_for(_quantile())


def test_a_gaussian_plan_stores_its_loss_and_charges_at_least_its_rho(tmp_path: Path) -> None:
    plan = dptree.plan_range_tree(lower=0, upper=99, noise="gaussian", rho=0.01)
    with Ledger(tmp_path / "b.ledger", total_rho=1.0) as led:
        charge = led.charge_for(plan)
        assert charge.rho >= plan.privacy_loss().rho() and charge.loss == plan.privacy_loss()
        (h,) = led.history()
        assert h["kind"] == "zcdp" and h["mechanisms"].startswith("gaussian")


def test_a_statement_alone_is_charged_as_numbers_only(tmp_path: Path) -> None:
    with Ledger(tmp_path / "b.ledger", total_epsilon=2.0) as led:
        led.charge_for(_tree().statement)
        (h,) = led.history()
        assert h["loss"] is None and h["mechanisms"] == "numbers only" and h["epsilon"] == 1.0


# A ledger of format 2: a chain over the amounts, no stored loss.
def _v2_ledger(path: Path, rows: list[tuple[str, str, str, str]]) -> None:
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute(fmt.META_SQL)
    con.execute(fmt.CHARGES_SQL_V2)
    meta = {"format": "dptree-ledger", "version": "2", "ledger_id": "ab" * 16, "created_utc": "2026-01-01T00:00:00Z",
            "total_epsilon": "", "total_delta": "0", "total_rho": "1"}
    prev = fmt.genesis_hash(meta)
    for i, (kind, e, d, r) in enumerate(rows, start=1):
        fields = (i, "2026-01-01T00:00:00Z", f"old{i}", kind, e, d, r, 7)
        own = fmt.row_hash(prev, fields)
        con.execute(f"INSERT INTO charges({fmt.ROW_FIELDS_V2}, status, output) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                    "'done', 'o.json')", (*fields, prev, own))
        prev = own
    meta["head"] = prev
    con.executemany("INSERT INTO ledger_meta VALUES (?, ?)", meta.items())
    con.close()


def test_a_format_2_ledger_is_upgraded_with_its_charges_as_numbers_only(tmp_path: Path) -> None:
    path = tmp_path / "v2.ledger"
    _v2_ledger(path, [("pure", "0.5", "0", "0"), ("zcdp", "0", "0", "0.25")])
    for kw in ({}, {"read_only": True}):
        with pytest.raises(LedgerOutdatedError, match=r"format 2.*dptree budget .* --upgrade"):
            Ledger(path, **kw)  # type: ignore[arg-type]
    assert Ledger.upgrade(path) == 2
    with Ledger(path) as led:
        assert led.accountant == "basic"  # an upgraded ledger keeps composing as it did
        hist = led.history()
        assert [(h["label"], h["kind"], h["epsilon"], h["rho"], h["status"], h["output"], h["loss"], h["mechanisms"])
                for h in hist] == [("old1", "pure", 0.5, 0.0, "done", "o.json", None, "numbers only"),
                                   ("old2", "zcdp", 0.0, 0.25, "done", "o.json", None, "numbers only")]
        assert led.spent().rho == 0.125 + 0.25  # the old pure charge still counts epsilon^2 / 2
        led.charge_for(_tree(), label="new")
        assert led.history()[-1]["mechanisms"].startswith("laplace")
    with pytest.raises(InvalidParameterError, match="already in the current format"):
        Ledger.upgrade(path)
    _tamper(path, "UPDATE charges SET rho = '0.125' WHERE id = 2")  # the chain covers the carried rows
    _assert_refused(path)


def test_upgrade_refuses_a_tampered_format_2_ledger_and_leaves_it_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "v2.ledger"
    _v2_ledger(path, [("pure", "0.5", "0", "0"), ("zcdp", "0", "0", "0.25")])
    _tamper(path, "UPDATE charges SET rho = '0.01' WHERE id = 2")
    before = sqlite3.connect(path).execute("SELECT * FROM charges").fetchall()
    with pytest.raises(LedgerCorruptError, match="hash chain"):
        Ledger.upgrade(path)
    con = sqlite3.connect(path)
    assert con.execute("SELECT value FROM ledger_meta WHERE key = 'version'").fetchone() == ("2",)
    assert con.execute("SELECT * FROM charges").fetchall() == before
    con.close()


def test_budget_shows_the_mechanisms_of_each_charge(tmp_path: Path, cli_run: Any) -> None:
    path = tmp_path / "b.ledger"
    with Ledger(path, total_epsilon=5.0) as led:
        led.charge_for(_tree(), label="tree")
        led.charge_for(_quantile(), label="median")
        led.charge(epsilon=0.25, label="by hand")
    n = len(_tree().privacy_loss().measurements)
    code, out, err = cli_run(["budget", path])
    assert code == 0, err
    lines = out.splitlines()
    assert "mechanisms" in lines[2]
    assert f"laplace x{n}" in lines[3] and "tree" in lines[3]
    assert "exponential" in lines[4] and "median" in lines[4]
    assert "numbers only" in lines[5] and "by hand" in lines[5]
    code, out, _ = cli_run(["budget", path, "--format", "json"])
    hist = json.loads(out)["history"]
    assert hist[0]["loss"] == _tree().privacy_loss().to_dict() and hist[2]["loss"] is None
