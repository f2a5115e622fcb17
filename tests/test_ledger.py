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

import numpy as np
import pytest

from dptree.budget import zcdp_epsilon
from dptree.errors import BudgetExceededError, DPTreeError, InvalidParameterError
from dptree.ledger import Ledger, LedgerCorruptError, LedgerError, LedgerLockedError, LedgerReadOnlyError
from dptree.ranges import plan_range_tree

SRC = str(Path(__file__).resolve().parents[1] / "src")


def test_pure_charges_add_exactly(tmp_path: Path) -> None:
    with Ledger(tmp_path / "b.ledger", total_epsilon=1.0) as led:
        for _ in range(10):
            led.charge(epsilon=0.1, label="q")
        assert led.spent().epsilon == pytest.approx(1.0) and led.spent().charges == 10
        with pytest.raises(BudgetExceededError, match="exceed the total budget"):
            led.charge(epsilon=1e-9)
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
                                dict(total_rho=float("inf")), dict(total_epsilon=1.0, total_delta=1.0),
                                dict(total_delta=1e-6)])
def test_bad_totals(tmp_path: Path, kw: dict) -> None:
    with pytest.raises(InvalidParameterError):
        Ledger(tmp_path / "b.ledger", **kw)


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
    with Ledger(tmp_path / "b.ledger", total_epsilon=2.0, total_delta=1e-6) as led:
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


_WORKER = r"""
import json, sys
sys.path.insert(0, {src!r})
from dptree.ledger import Ledger
from dptree.errors import BudgetExceededError
led = Ledger(sys.argv[1], timeout=60)
ok = refused = 0
for i in range(50):
    try:
        led.charge(epsilon=0.01, label=sys.argv[2] + "-" + str(i))
        ok += 1
    except BudgetExceededError:
        refused += 1
print(json.dumps([ok, refused]))
"""


def test_concurrent_processes_cannot_overspend(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    Ledger(path, total_epsilon=3.0).close()  # room for 300 of the 400 charges attempted
    code = _WORKER.format(src=SRC)
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
