"""Ledger backups hold every committed charge, those still in the -wal file included.

SQLite in WAL mode commits a charge to the ``-wal`` file beside the ledger; it reaches the main
file only at a checkpoint (when the last connection closes, or the WAL grows large). While a
release holds its ledger open, a copy of the main file alone lacks that charge, and restoring the
copy refunds it: that is what docs/notes/privacy.md warns against, and what ``Ledger.backup`` /
``dptree budget LEDGER --backup OUT`` avoid.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

from dptree.errors import BudgetExceededError
from dptree.privacy.ledger import Ledger, LedgerError


@pytest.fixture
def open_charge(tmp_path: Path) -> Iterator[tuple[Path, Ledger]]:
    """A ledger of total epsilon 1 whose one charge (0.75) is still in its -wal file: the ledger
    stays open, as it does while a release runs."""
    path = tmp_path / "budget.sqlite"
    led = Ledger(path, total_epsilon=1.0)
    led.charge(epsilon=0.75, label="running release")
    assert Path(f"{path}-wal").stat().st_size > 0
    try:
        yield path, led
    finally:
        led.close()


def _spent(path: Path) -> tuple[float, int]:
    with Ledger(path, read_only=True) as led:
        s = led.spent()
    return s.epsilon, s.charges


def test_a_charge_in_the_wal_is_in_the_backup(open_charge: tuple[Path, Ledger], tmp_path: Path) -> None:
    path, led = open_charge
    copied = led.backup(tmp_path / "backup.sqlite")
    assert (copied.epsilon, copied.charges) == (0.75, 1)
    assert _spent(tmp_path / "backup.sqlite") == (0.75, 1)
    assert not Path(f"{tmp_path / 'backup.sqlite'}-wal").exists()  # one self-contained file
    assert _spent(path) == (0.75, 1)  # the ledger itself is unchanged


def test_a_copy_of_the_main_file_alone_refunds_the_charge(open_charge: tuple[Path, Ledger], tmp_path: Path) -> None:
    """What the docs warn against: the raw copy lacks the charge, and restoring it refunds it; the
    backup restored in the same way keeps it."""
    path, led = open_charge
    shutil.copyfile(path, tmp_path / "raw-copy.sqlite")
    led.backup(tmp_path / "backup.sqlite")
    led.close()
    assert _spent(tmp_path / "raw-copy.sqlite") == (0.0, 0)
    for name, refunded in (("raw-copy.sqlite", True), ("backup.sqlite", False)):
        restored = tmp_path / f"restored-from-{name}"
        shutil.copyfile(tmp_path / name, restored)
        with Ledger(restored) as again:
            if refunded:
                again.charge(epsilon=1.0)  # the whole total again: the 0.75 was refunded
            else:
                with pytest.raises(BudgetExceededError):
                    again.charge(epsilon=1.0)
                again.charge(epsilon=0.25)  # what is left


def test_an_existing_backup_path_needs_force(open_charge: tuple[Path, Ledger], tmp_path: Path) -> None:
    path, led = open_charge
    out = tmp_path / "backup.sqlite"
    led.backup(out)
    led.charge(epsilon=0.125)
    with pytest.raises(LedgerError, match="force=True"):
        led.backup(out)
    assert _spent(out) == (0.75, 1)
    led.backup(out, force=True)  # an earlier backup of this ledger is replaced
    assert _spent(out) == (0.875, 2)
    other = tmp_path / "notes.txt"
    other.write_text("not a ledger")
    with pytest.raises(LedgerError, match="already exists"):
        led.backup(other)
    led.backup(other, force=True)
    assert _spent(other) == (0.875, 2)


def test_the_ledger_itself_and_other_ledgers_are_never_replaced(open_charge: tuple[Path, Ledger],
                                                                tmp_path: Path) -> None:
    path, led = open_charge
    for target in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        with pytest.raises(LedgerError, match="itself"):
            led.backup(target, force=True)
    assert _spent(path) == (0.75, 1)
    another = tmp_path / "another.sqlite"
    with Ledger(another, total_epsilon=5.0) as other:
        other.charge(epsilon=4.0)
    before = another.read_bytes()
    with pytest.raises(LedgerError, match="not a backup of ledger"):
        led.backup(another, force=True)
    assert another.read_bytes() == before
    os.mkdir(tmp_path / "folder")
    with pytest.raises(LedgerError, match="not a regular file"):
        led.backup(tmp_path / "folder", force=True)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".backup")) == []  # no temporary left


def test_cli_backup(open_charge: tuple[Path, Ledger], tmp_path: Path, cli_run: Any) -> None:
    path, _ = open_charge
    out = tmp_path / "backup.sqlite"
    res = cli_run(["budget", path, "--backup", out])
    assert res.code == 0, res.err
    assert f"wrote {out}" in res.err and "1 charge(s)" in res.err and res.out == ""
    assert _spent(out) == (0.75, 1)
    res = cli_run(["budget", path, "--backup", out])
    assert res.code == 2 and "--force" in res.err and "force=True" not in res.err
    assert cli_run(["budget", path, "--backup", out, "--force"]).code == 0
    res = cli_run(["budget", path, "--backup", ""])
    assert res.code == 2 and "backup path must be a non-empty file name" in res.err
    res = cli_run(["budget", path, "--force"])
    assert res.code == 2 and "--backup" in res.err
    res = cli_run(["budget", path, "--backup", out, "--create", "--total-epsilon", "1"])
    assert res.code == 2 and "--backup" in res.err
