"""The persistent budget ledger: composition, errors, concurrency and kill -9 safety."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _ledger_worker import worker_script

from dptree.errors import BudgetExceededError, DPTreeError, InvalidParameterError
from dptree.privacy.budget import zcdp_epsilon
from dptree.privacy.ledger import Ledger, LedgerCorruptError, LedgerError, LedgerLockedError, LedgerReadOnlyError
from dptree.rangetree.release import plan_range_tree

SRC = str(Path(__file__).resolve().parents[3] / "src")


def test_pure_charges_add_exactly(tmp_path: Path) -> None:
    with Ledger(tmp_path / "b.ledger", total_epsilon=1.0) as led:
        for _ in range(10):
            led.charge(epsilon=0.1, label="q")
        assert led.spent().epsilon == pytest.approx(1.0) and led.spent().charges == 10
        with pytest.raises(BudgetExceededError, match="exceed the total budget") as exc:
            led.charge(epsilon=1e-9)
        assert "(total_epsilon=1, total_delta=0)" in str(exc.value)  # the totals by their parameters' names
        assert len(led.history()) == 10  # the refused charge left no row


def test_totals_are_fixed_at_creation(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    with pytest.raises(InvalidParameterError, match="new ledger"):
        Ledger(path)
    assert not path.exists()  # nothing was created
    Ledger(path, total_epsilon=2.0, total_delta=1e-6).close()
    with Ledger(path) as led:  # totals omitted: stored ones are used
        assert led.total_epsilon == 2.0 and led.total_delta == 1e-6 and led.total_rho is None
    Ledger(path, total_epsilon=2.0, total_delta=1e-6).close()
    with pytest.raises(InvalidParameterError, match="totals cannot change"):
        Ledger(path, total_epsilon=3.0, total_delta=1e-6)


@pytest.mark.parametrize("kw", [dict(total_epsilon=0.0), dict(total_epsilon=-1.0), dict(total_epsilon=float("nan")),
                                dict(total_rho=float("inf")), dict(total_epsilon=float("inf")), dict(total_epsilon=1.0, total_delta=1.0),
                                dict(total_delta=1e-6)])
def test_bad_totals(tmp_path: Path, kw: dict) -> None:
    with pytest.raises(InvalidParameterError) as exc:
        Ledger(tmp_path / "b.ledger", **kw)
    if any(isinstance(v, float) and v in (0.0, float("inf")) for v in kw.values()):
        assert "finite number > 0" in str(exc.value)


def test_bad_charges(tmp_path: Path) -> None:
    with Ledger(tmp_path / "b.ledger", total_epsilon=1.0, total_delta=1e-5) as led:
        for kw in (dict(), dict(epsilon=-0.1), dict(epsilon=0.1, rho=0.1), dict(epsilon=float("nan")),
                   dict(epsilon=0.1, delta=1.0), dict(epsilon="0.1")):
            with pytest.raises(InvalidParameterError):
                led.charge(**kw)  # type: ignore[arg-type]
        assert led.history() == []


def test_zcdp_total(tmp_path: Path) -> None:
    with Ledger(tmp_path / "b.ledger", total_rho=0.5) as led:
        led.charge(rho=0.2)
        led.charge(epsilon=0.6)  # pure epsilon counts as epsilon^2/2 = 0.18
        assert led.spent().rho == pytest.approx(0.38)
        with pytest.raises(BudgetExceededError, match="rho"):
            led.charge(rho=0.13)
        led.charge(rho=0.12)
        with pytest.raises(BudgetExceededError, match="cannot be counted against a zCDP"):
            Ledger(tmp_path / "c.ledger", total_rho=1.0).charge(epsilon=0.1, delta=1e-9)


def test_mixed_composition_against_epsilon_delta(tmp_path: Path) -> None:
    with Ledger(tmp_path / "b.ledger", total_epsilon=2.0, total_delta=1e-6, accountant="basic") as led:
        led.charge(epsilon=0.5)
        led.charge(epsilon=0.2, delta=4e-7)
        led.charge(rho=0.01)
        expected = 0.7 + zcdp_epsilon(0.01, 6e-7)
        s = led.spent()
        assert s.epsilon == pytest.approx(expected) and s.delta == pytest.approx(1e-6)
        # the largest extra rho that still fits, found by bisection, then one that does not
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            if 0.7 + zcdp_epsilon(0.01 + mid, 6e-7) <= 2.0:
                lo = mid
            else:
                hi = mid
        with pytest.raises(BudgetExceededError):
            led.charge(rho=hi * 1.001)
        led.charge(rho=lo * 0.999)
    with Ledger(tmp_path / "c.ledger", total_epsilon=1.0) as led:  # no delta: rho cannot convert
        with pytest.raises(BudgetExceededError, match="total_delta"):
            led.charge(rho=0.001)


def test_charge_for_plans_and_status(tmp_path: Path) -> None:
    with Ledger(tmp_path / "b.ledger", total_epsilon=1.0, total_delta=1e-6) as led:
        plan = plan_range_tree(lower=0, upper=99, epsilon=0.25)
        with led.charge_for(plan, label="age") as c:
            rel = plan.release(np.ones(100, dtype=np.int64), rng=1)
            c.output = "age.json"
        assert c.epsilon == 0.25 and rel is not None
        gplan = plan_range_tree(lower=0, upper=99, noise="gaussian", rho=0.001)
        with pytest.raises(RuntimeError):
            with led.charge_for(gplan, label="g"):
                raise RuntimeError("release failed after the charge")
        hist = led.history()
        assert [(h["label"], h["kind"], h["status"], h["output"]) for h in hist] == [
            ("age", "pure", "done", "age.json"), ("g", "zcdp", "failed", None)]
        assert hist[1]["rho"] == pytest.approx(0.001)
        assert led.spent().charges == 2  # the failed release still counts
        with pytest.raises(InvalidParameterError):
            led.charge_for(object())


def test_corrupt_files(tmp_path: Path) -> None:
    junk = tmp_path / "junk.ledger"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(LedgerCorruptError, match="restore it from a backup"):
        Ledger(junk, total_epsilon=1.0)
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    con.execute("INSERT INTO ledger_meta VALUES ('format', 'something else')")
    con.commit()
    con.close()
    with pytest.raises(LedgerCorruptError, match="not a dptree ledger"):
        Ledger(other)
    good = tmp_path / "good.ledger"
    Ledger(good, total_epsilon=1.0).close()
    con = sqlite3.connect(good)
    con.execute("UPDATE ledger_meta SET value = 'x' WHERE key = 'total_epsilon'")
    con.commit()
    con.close()
    with pytest.raises(LedgerCorruptError, match="malformed totals"):
        Ledger(good)
    assert issubclass(LedgerCorruptError, DPTreeError)


def test_locked_past_timeout(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    led = Ledger(path, total_epsilon=1.0, timeout=0.3)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    t0 = time.perf_counter()
    with pytest.raises(LedgerLockedError, match="longer timeout"):
        led.charge(epsilon=0.1)
    assert time.perf_counter() - t0 >= 0.25
    blocker.execute("ROLLBACK")
    blocker.close()
    led.charge(epsilon=0.1)  # usable again once the lock is gone
    assert led.spent().charges == 1
    led.close()


def test_read_only(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    Ledger(path, total_epsilon=1.0).charge(epsilon=0.1, label="first")
    with Ledger(path, read_only=True) as ro:
        assert [h["label"] for h in ro.history()] == ["first"]
        with pytest.raises(LedgerReadOnlyError, match="read_only"):
            ro.charge(epsilon=0.1)
        ro.read_only = False  # bypass the flag: SQLite itself refuses, and the error is translated
        with pytest.raises(LedgerReadOnlyError, match="read-only"):
            ro.charge(epsilon=0.1)
    with pytest.raises(LedgerError, match="not found"):
        Ledger(tmp_path / "missing.ledger", read_only=True)


@pytest.mark.skipif(os.geteuid() == 0, reason="file permissions do not bind root; covered by test_read_only")
def test_read_only_file_permissions(tmp_path: Path) -> None:  # pragma: no cover - non-root only
    path = tmp_path / "b.ledger"
    Ledger(path, total_epsilon=1.0).close()
    path.chmod(0o444)
    with pytest.raises(LedgerReadOnlyError, match="chmod"):
        Ledger(path)


def _chattr(flag: str, *paths: Path) -> bool:
    import shutil
    import subprocess

    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True).returncode == 0


def test_read_only_wal_ledger_in_a_read_only_directory_can_be_listed(tmp_path: Path, cli_run: Any) -> None:
    """A WAL ledger whose directory cannot take a -shm file (read-only for the reader) can be
    listed. The immutable attribute binds root too, so it stands in for a
    read-only directory here."""
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "b.ledger"
    with Ledger(path, total_epsilon=1.0) as led:
        led.charge(epsilon=0.25, label="first")
    for extra in folder.glob("b.ledger-*"):
        extra.unlink()  # a cleanly closed WAL database: nothing pending
    if not _chattr("+i", path, folder):
        pytest.skip("chattr +i is not available on this file system")
    try:
        with pytest.raises(OSError):
            (folder / "probe").write_text("x")  # the directory really is read-only now
        with Ledger(path, read_only=True) as ro:
            assert ro.spent().epsilon == pytest.approx(0.25)
        code, out, err = cli_run(["budget", str(path)])
        assert code == 0 and "first" in out, err
    finally:
        _chattr("-i", path, folder)




def test_concurrent_processes_cannot_overspend(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    Ledger(path, total_epsilon=3.0).close()  # room for 300 of the 400 charges attempted
    code = worker_script(SRC, 50, "epsilon=0.01")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), f"p{j}"], stdout=subprocess.PIPE, text=True)
             for j in range(8)]
    results = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(r[0] for r in results) == 300 and sum(r[1] for r in results) == 100
    with Ledger(path) as led:
        hist = led.history()
        assert len(hist) == 300 and len({h["label"] for h in hist}) == 300
        assert led.spent().epsilon <= 3.0


def _child(path: Path, outdir: Path, trial: int, wfd: int) -> None:
    """Charge, report, write the output atomically, report, mark done; forever (until killed)."""
    led = Ledger(path, timeout=30)
    os.write(wfd, b"R\n")
    attempt = 0
    while True:
        attempt += 1
        with led.charge(epsilon=1e-6, label=f"t{trial}-a{attempt}") as c:
            os.write(wfd, f"C {c.id}\n".encode())
            tmp = outdir / f".out-{c.id}.tmp"
            tmp.write_text(json.dumps({"charge": c.id}))
            os.replace(tmp, outdir / f"out-{c.id}.json")
            os.write(wfd, f"O {c.id}\n".encode())
            c.output = f"out-{c.id}.json"


def test_kill_minus_nine_never_loses_or_duplicates_a_charge(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    outdir = tmp_path / "out"
    outdir.mkdir()
    Ledger(path, total_epsilon=1.0).close()
    delays = np.random.default_rng(6).uniform(0.0, 0.05, size=100)
    reported: set[int] = set()
    for trial, delay in enumerate(delays):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            os.close(r)
            try:
                _child(path, outdir, trial, w)
            finally:
                os._exit(1)
        os.close(w)
        with os.fdopen(r) as fh:
            assert fh.readline() == "R\n"  # the child has opened the ledger
            time.sleep(float(delay))
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            lines = fh.read().splitlines()
        committed = {int(x.split()[1]) for x in lines if x.startswith("C ")}
        reported |= committed
        with Ledger(path) as led:  # opens cleanly after every kill (no corruption)
            hist = led.history()
        ids = {h["id"] for h in hist}
        assert reported <= ids, "a committed charge was lost"
        labels = [h["label"] for h in hist]
        assert len(labels) == len(set(labels)), "a release was charged twice"
        outputs = {int(p.stem.split("-")[1]) for p in outdir.glob("out-*.json")}
        assert outputs <= ids, "an output exists without its charge"
        # each trial's attempts are consecutive: no hole where a charge vanished
        mine = sorted(int(lab.split("-a")[1]) for lab in labels if lab.startswith(f"t{trial}-"))
        assert mine == list(range(1, len(mine) + 1))
    assert len(reported) > 100  # the children really were killed mid-stream, many times
    with Ledger(path) as led:
        spent = led.spent()
        assert spent.charges == len(led.history()) and spent.epsilon == pytest.approx(spent.charges * 1e-6)


def test_outcome_not_recorded_under_lock_keeps_the_charge(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    led = Ledger(path, total_epsilon=1.0, timeout=0.1)
    with led.charge(epsilon=0.1, label="x") as c:
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # another process holds the lock when the block ends
        c.output = "x.json"
    assert not c.status_recorded
    blocker.execute("ROLLBACK")
    blocker.close()
    (h,) = led.history()
    assert (h["status"], h["output"]) == ("charged", None) and led.spent().charges == 1
    led.close()


def test_bad_paths_and_timeout(tmp_path: Path) -> None:
    with pytest.raises(LedgerError, match="is a directory"):
        Ledger(tmp_path, total_epsilon=1.0)
    with pytest.raises(LedgerError, match="does not exist; create it first"):
        Ledger(tmp_path / "no" / "b.ledger", total_epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="timeout"):
        Ledger(tmp_path / "b.ledger", total_epsilon=1.0, timeout=-1)
    with pytest.raises(InvalidParameterError, match="label"):
        Ledger(tmp_path / "c.ledger", total_epsilon=1.0).charge(epsilon=0.1, label=3)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- integrity


def _tamper(path: Path, *statements: str) -> None:
    """Edit the ledger as an attacker with sqlite3 would (CHECK constraints switched off)."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA ignore_check_constraints = ON")
    for stmt in statements:
        con.execute(stmt)
    con.close()


def _spent_ledger(path: Path) -> None:
    with Ledger(path, total_epsilon=1.0) as led:
        for i in range(3):
            led.charge(epsilon=0.3, label=f"r{i}")


def _assert_refused(path: Path) -> None:
    """Every way in fails closed with LedgerCorruptError."""
    with pytest.raises(LedgerCorruptError, match="restore it from a backup"):
        Ledger(path)
    with pytest.raises(LedgerCorruptError):
        Ledger(path, read_only=True)


def test_sqlite_itself_refuses_negative_nan_and_infinite_amounts(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    _spent_ledger(path)
    con = sqlite3.connect(path, isolation_level=None)
    for bad in ("-2.6", "NaN", "Infinity", "-0", "1e-3x", float("inf"), -1.0, None):
        with pytest.raises(sqlite3.IntegrityError):
            con.execute("UPDATE charges SET epsilon = ? WHERE id = 1", (bad,))
    con.close()
    with Ledger(path) as led:
        assert led.spent().charges == 3


def test_negative_charge_row_is_refused(tmp_path: Path) -> None:
    """A row of epsilon -2.6 would make a total of 1 allow a real spend of 3.6."""
    path = tmp_path / "b.ledger"
    _spent_ledger(path)
    insert = ("INSERT INTO charges(created_utc, label, kind, epsilon, delta, rho, status, output, pid{h}) "
              "SELECT created_utc, 'reset', kind, '-2.6', delta, rho, status, output, pid{v} FROM charges LIMIT 1")
    try:
        _tamper(path, insert.format(h=", prev_hash, hash", v=", hash, printf('%064d', 1)"))
    except sqlite3.OperationalError:  # the old format has no hash columns
        _tamper(path, insert.format(h="", v=""))
    _assert_refused(path)


def test_edited_total_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    _spent_ledger(path)
    _tamper(path, "UPDATE ledger_meta SET value = '10' WHERE key = 'total_epsilon'")
    _assert_refused(path)
    empty = tmp_path / "e.ledger"  # no charges yet: the total is still bound (chain head = genesis)
    Ledger(empty, total_epsilon=1.0).close()
    _tamper(empty, "UPDATE ledger_meta SET value = '5' WHERE key = 'total_epsilon'")
    _assert_refused(empty)


def test_dropped_charges_table_is_refused_and_never_recreated(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    _spent_ledger(path)
    _tamper(path, "DROP TABLE charges")
    with pytest.raises(LedgerCorruptError, match="never re-created"):
        Ledger(path)
    with pytest.raises(LedgerCorruptError):
        Ledger(path, total_epsilon=1.0)
    con = sqlite3.connect(path)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    con.close()
    assert "charges" not in tables  # opening did not re-create it (that would reset the spend)


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity", "sNaN", "abc", "", "-0.3"])
def test_nan_and_infinite_rows_fail_closed(tmp_path: Path, bad: str) -> None:
    """These raised a raw ValueError (or were summed) before."""
    path = tmp_path / "b.ledger"
    _spent_ledger(path)
    _tamper(path, f"UPDATE charges SET epsilon = '{bad}' WHERE id = 2")
    _assert_refused(path)


@pytest.mark.parametrize("edit", [
    "UPDATE charges SET epsilon = '0.03' WHERE id = 2",            # a smaller amount
    "UPDATE charges SET kind = 'zcdp', epsilon = '0.0', rho = '0.045' WHERE id = 2",
    "UPDATE charges SET label = 'other' WHERE id = 1",
    "DELETE FROM charges WHERE id = 1",                            # a deleted first row
    "DELETE FROM charges WHERE id = 3",                            # a deleted last row
    "DELETE FROM charges",                                         # all rows
    "UPDATE charges SET id = 7 WHERE id = 3",
    "INSERT INTO charges SELECT 9, created_utc, label, kind, epsilon, delta, rho, status, output, pid, "
    "prev_hash, printf('%064d', 9), loss FROM charges WHERE id = 3",  # a forged row
])
def test_edited_or_deleted_rows_are_refused(tmp_path: Path, edit: str) -> None:
    path = tmp_path / "b.ledger"
    _spent_ledger(path)
    try:
        _tamper(path, edit)
    except sqlite3.OperationalError:  # the old format has no hash columns: edit them out
        _tamper(path, edit.replace(", prev_hash, printf('%064d', 9), loss", ""))
    _assert_refused(path)


def test_deleted_last_row_with_a_consistent_head_is_refused(tmp_path: Path) -> None:
    """Deleting the last charge and moving the head back keeps the chain consistent; the id
    sequence (AUTOINCREMENT) still shows a charge was there."""
    path = tmp_path / "b.ledger"
    _spent_ledger(path)
    _tamper(path, "UPDATE ledger_meta SET value = (SELECT hash FROM charges WHERE id = 2) WHERE key = 'head'",
            "DELETE FROM charges WHERE id = 3")
    _assert_refused(path)


def test_rebuilt_table_without_constraints_or_added_trigger_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    _spent_ledger(path)
    con = sqlite3.connect(path)
    (sql,) = con.execute("SELECT sql FROM sqlite_master WHERE name = 'charges'").fetchone()
    con.close()
    loose = sql.split("(", 1)[0].replace("charges", "c2") + "(id INTEGER PRIMARY KEY, created_utc, label, kind, " \
        "epsilon, delta, rho, status, output, pid, prev_hash, hash, loss)"
    _tamper(path, loose, "INSERT INTO c2 SELECT * FROM charges", "DROP TABLE charges",
            "ALTER TABLE c2 RENAME TO charges")
    _assert_refused(path)
    other = tmp_path / "t.ledger"
    _spent_ledger(other)
    _tamper(other, "CREATE TRIGGER forget AFTER INSERT ON charges BEGIN DELETE FROM charges WHERE id = NEW.id; END")
    _assert_refused(other)


def test_tampering_after_open_is_caught_inside_the_charge(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    _spent_ledger(path)
    with Ledger(path) as led:
        _tamper(path, "DELETE FROM charges WHERE id = 1")
        with pytest.raises(LedgerCorruptError):
            led.charge(epsilon=0.05, label="after")
        with pytest.raises(LedgerCorruptError):
            led.spent()
        with pytest.raises(LedgerCorruptError):
            led.history()
    con = sqlite3.connect(path)
    assert con.execute("SELECT count(*) FROM charges").fetchone()[0] == 2  # the charge was not added
    con.close()


def test_empty_path_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for bad in ("", "  "):
        with pytest.raises(InvalidParameterError, match="non-empty file name"):
            Ledger(bad, total_epsilon=1.0)


def test_new_ledger_in_an_empty_file(tmp_path: Path) -> None:
    """An empty (0-byte) file holds no ledger: it may become one; nothing else is ever initialised."""
    path = tmp_path / "b.ledger"
    path.touch()
    with pytest.raises(InvalidParameterError, match="new ledger"):
        Ledger(path)
    with Ledger(path, total_epsilon=1.0) as led:
        led.charge(epsilon=0.5)
    with Ledger(path) as led:
        assert led.spent().charges == 1


# Format 1: no constraints, no chain.
_V1_SCHEMA = """
CREATE TABLE IF NOT EXISTS ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS charges (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_utc TEXT NOT NULL,
    label TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('pure', 'approx', 'zcdp')),
    epsilon TEXT NOT NULL,
    delta TEXT NOT NULL,
    rho TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('charged', 'done', 'failed')),
    output TEXT,
    pid INTEGER NOT NULL
);
"""


def _v1_ledger(path: Path, rows: list[tuple[str, str, str, str]], total_epsilon: str = "1.0") -> None:
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(_V1_SCHEMA)
    meta = {"format": "dptree-ledger", "version": "1", "total_epsilon": total_epsilon, "total_delta": "1E-6",
            "total_rho": "", "created_utc": "2026-01-01T00:00:00Z"}
    con.executemany("INSERT INTO ledger_meta VALUES (?, ?)", meta.items())
    for i, (kind, e, d, r) in enumerate(rows):
        con.execute("INSERT INTO charges(created_utc, label, kind, epsilon, delta, rho, status, output, pid) "
                    "VALUES ('2026-01-01T00:00:00Z', ?, ?, ?, ?, ?, 'done', 'o.json', 1)", (f"old{i}", kind, e, d, r))
    con.close()


def test_old_format_ledger_must_be_upgraded(tmp_path: Path) -> None:
    import dptree.privacy.ledger as ledger_mod

    path = tmp_path / "old.ledger"
    _v1_ledger(path, [("pure", "0.25", "0.0", "0.0"), ("approx", "0.25", "5E-7", "0.0"), ("zcdp", "0.0", "0.0", "0.001")])
    outdated = ledger_mod.LedgerOutdatedError
    assert issubclass(outdated, LedgerError)
    for kw in ({}, {"read_only": True}):
        with pytest.raises(outdated, match=r"dptree budget .* --upgrade"):
            Ledger(path, **kw)  # type: ignore[arg-type]
    assert Ledger.upgrade(path) == 3
    with Ledger(path) as led:
        hist = led.history()
        assert [(h["label"], h["kind"], h["status"], h["output"]) for h in hist] == [
            ("old0", "pure", "done", "o.json"), ("old1", "approx", "done", "o.json"), ("old2", "zcdp", "done", "o.json")]
        assert led.spent().charges == 3 and led.spent().epsilon > 0.5
        c = led.charge(epsilon=0.01, label="new")
        assert c.id == 4
    with pytest.raises(InvalidParameterError, match="already in the current format"):
        Ledger.upgrade(path)
    _tamper(path, "DELETE FROM charges WHERE id = 2")  # the chain covers the upgraded rows
    _assert_refused(path)


@pytest.mark.parametrize("rows", [
    [("pure", "0.5", "0.0", "0.0"), ("pure", "-2.6", "0.0", "0.0")],   # negative charge
    [("pure", "NaN", "0.0", "0.0")],
    [("pure", "Infinity", "0.0", "0.0")],
    [("pure", "0.6", "0.0", "0.0"), ("pure", "0.6", "0.0", "0.0")],     # above the total
    [("zcdp", "0.5", "0.0", "0.0")],                                    # kind does not match amounts
])
def test_upgrade_refuses_a_tampered_old_ledger_and_leaves_it_unchanged(tmp_path: Path, rows: list) -> None:
    path = tmp_path / "old.ledger"
    _v1_ledger(path, rows)
    before = sqlite3.connect(path).execute("SELECT * FROM charges").fetchall()
    with pytest.raises(LedgerCorruptError):
        Ledger.upgrade(path)
    con = sqlite3.connect(path)
    assert con.execute("SELECT value FROM ledger_meta WHERE key = 'version'").fetchone() == ("1",)
    assert con.execute("SELECT * FROM charges").fetchall() == before
    con.close()


def test_upgrade_of_a_dropped_table_or_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "old.ledger"
    _v1_ledger(path, [("pure", "0.5", "0.0", "0.0")])
    _tamper(path, "DROP TABLE charges")
    with pytest.raises(LedgerCorruptError, match="dropped"):
        Ledger.upgrade(path)
    with pytest.raises(LedgerError, match="not found"):
        Ledger.upgrade(tmp_path / "none.ledger")
