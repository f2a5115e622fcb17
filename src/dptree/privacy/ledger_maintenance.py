"""Maintenance of a ledger file: upgrading one written by an older dptree, and copying one.

:class:`LedgerMaintenance` adds to :class:`~dptree.privacy.ledger_store.LedgerStore` the
one-transaction upgrade of an older format (``dptree budget --upgrade``) and the verified copy
behind ``Ledger.backup`` (``dptree budget --backup``); :class:`~dptree.privacy.ledger.Ledger`
builds on it. Format: :mod:`dptree.privacy.ledger_format`.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import tempfile
from pathlib import Path
from typing import Callable, TypeVar

from dptree import noise as _noise
from dptree.errors import InvalidParameterError, LedgerError
from dptree.privacy.ledger_accountant import (
    budget_violation,
)
from dptree.privacy.ledger_format import (
    CHARGES_SQL,
    FORMAT,
    ROW_FIELDS,
    ROW_FIELDS_V2,
    TABLES,
    TABLES_V2,
    VERSION,
    VERSION_1,
    VERSION_2,
    ExactSum,
    genesis_hash,
    row_hash,
    utc_now,
)
from dptree.privacy.ledger_store import LedgerStore

__all__ = ["LedgerMaintenance"]

T = TypeVar("T")


class LedgerMaintenance(LedgerStore):
    """The upgrade of an older ledger file and the copy behind a backup."""

    @classmethod
    def upgrade(cls, path: str | os.PathLike[str], *, timeout: float = 10.0) -> int:
        """Upgrade a ledger written by an older dptree (format 1: no constraints, no chain; format
        2: a chain over amounts, no stored loss) to the current format, in one transaction; return
        the number of charges carried over.

        Every old charge is checked (finite non-negative amounts matching its kind, a spend within
        the totals; in format 2 the hash chain) before the current table and chain are built over
        them; a ledger that fails raises :class:`LedgerCorruptError` and is left unchanged. Old
        charges are carried over with their amounts, status and output, as numbers only (no
        stored loss: a pure one counts epsilon^2 / 2 against a rho total, as it did). A format-1
        chain protects the history from the upgrade on; what happened to the file before cannot
        be verified."""
        self = cls.__new__(cls)
        self.path = cls._check_path(path)
        self.timeout = cls._check_timeout(timeout)
        self.read_only = False
        if not self.path.is_file():
            raise LedgerError(f"ledger file not found: {self.path}")
        self._check_writable(True)
        self._con = self._connect()
        con = self._con
        try:
            try:
                con.execute("PRAGMA journal_mode=WAL")
                con.execute("PRAGMA synchronous=FULL")
            except sqlite3.Error as exc:
                raise self._translate(exc) from exc
            with self._transaction("BEGIN IMMEDIATE"):
                n = self._upgrade_old()
        finally:
            con.close()
        return n

    def _upgrade_old(self) -> int:
        con = self._con
        meta = self._meta()
        if meta.get("format") != FORMAT:
            raise self._corrupt("is not a dptree ledger (no format marker)")
        version = meta.get("version")
        if version == VERSION:
            raise InvalidParameterError(f"ledger {self.path} is already in the current format; nothing to upgrade")
        if version not in (VERSION_1, VERSION_2):
            raise self._corrupt(f"has unsupported format version {version!r}")
        totals = self._totals_of(meta)
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables != set(TABLES):
            raise self._corrupt(f"does not have the tables of a format-{version} ledger (a table was dropped?)")
        if version == VERSION_2:
            self._check_schema(TABLES_V2)
        rows = con.execute(
            "SELECT id, created_utc, label, kind, epsilon, delta, rho, status, output, pid FROM charges ORDER BY id"
        ).fetchall()
        if version == VERSION_2:  # the chain, before anything is carried over
            prev = genesis_hash(meta)
            for (cid, created, label, kind, e, d, r, pid, prev_hash, own) in con.execute(
                    f"SELECT {ROW_FIELDS_V2} FROM charges ORDER BY id"):
                if prev_hash != prev or own != row_hash(prev, (cid, created, label, kind, e, d, r, pid)):
                    raise self._corrupt(f"failed its hash chain at charge id {cid!r} (a charge was edited, "
                                        "inserted or deleted)")
                prev = own
            if prev != meta.get("head"):
                raise self._corrupt("failed its hash chain at the end (a charge was deleted or the totals edited)")
        eps, delta, rho, rho_pure = ExactSum(), ExactSum(), ExactSum(), ExactSum()
        approx = False
        for cid, created, label, kind, e, d, r, status, output, pid in rows:
            fe, fd, fr = self._row_amounts(cid, kind, e, d, r)
            if not (isinstance(cid, int) and isinstance(created, str) and isinstance(label, str)
                    and isinstance(pid, int) and status in ("charged", "done", "failed")
                    and (output is None or isinstance(output, str))):
                raise self._corrupt(f"has a malformed charge (id {cid!r})")
            eps.add(fe)
            delta.add(fd)
            rho.add(fr)
            if kind == "pure":
                rho_pure.add_half_square(fe)
            approx = approx or kind == "approx"
        why = budget_violation(totals, eps.value(), delta.value(), rho.value(), rho_pure.value(), approx)
        if why is not None:
            raise self._corrupt(f"records a spend above its totals ({why})")
        con.execute("ALTER TABLE charges RENAME TO charges_old")
        con.execute(CHARGES_SQL)
        meta["version"] = VERSION
        if version == VERSION_1:
            meta["ledger_id"] = _noise.random_hex(16)
        meta.setdefault("created_utc", utc_now())
        prev = genesis_hash(meta)
        for cid, created, label, kind, e, d, r, status, output, pid in rows:  # numbers only: no stored loss
            own = row_hash(prev, (cid, created, label, kind, e, d, r, pid, None))
            con.execute(
                f"INSERT INTO charges({ROW_FIELDS}, status, output) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (cid, created, label, kind, e, d, r, pid, None, prev, own, status, output),
            )
            prev = own
        con.execute("DROP TABLE charges_old")
        meta["head"] = prev
        meta["upgraded_utc"] = utc_now()
        con.executemany("INSERT OR REPLACE INTO ledger_meta(key, value) VALUES (?, ?)", meta.items())
        self._check_schema()
        self._state(totals)
        return len(rows)


    def _check_backup_path(self, out: Path, force: bool) -> None:
        """Refuse a backup path that is this ledger or one of its journal files, a directory, a
        link or a device, the main file of another open database, or (without ``force``) any
        existing file; with ``force``, an SQLite file that is not a backup of this ledger."""
        main = self.path.resolve()
        if out.resolve() in {main, *(Path(f"{main}{s}") for s in ("-wal", "-shm", "-journal"))}:
            raise LedgerError(f"the backup path {out} is the ledger {self.path} itself or one of its journal files; "
                              "give another file name")
        for s in ("-wal", "-journal"):
            if Path(f"{out}{s}").exists():
                raise LedgerError(f"{out}{s} exists: an SQLite database at {out} is open or was not closed "
                                  "cleanly; give another file name")
        try:
            st = os.lstat(out)
        except FileNotFoundError:
            return
        if not stat.S_ISREG(st.st_mode):
            raise LedgerError(f"the backup path {out} exists and is not a regular file (a directory, link, pipe "
                              "or device); give a file name such as budget-backup.sqlite")
        if self.path.exists() and os.path.samefile(out, self.path):
            raise LedgerError(f"the backup path {out} is the ledger {self.path} itself; give another file name")
        if not force:
            raise LedgerError(f"{out} already exists; choose another path, or replace it with force=True")
        try:
            with open(out, "rb") as fh:
                sqlite = fh.read(16) == b"SQLite format 3\x00"
        except OSError as exc:
            raise LedgerError(f"cannot read {out} to check what it holds: {exc.strerror or exc}") from None
        if sqlite and self._ledger_id_at(out) != self._meta().get("ledger_id"):
            raise LedgerError(f"{out} is an SQLite database but not a backup of ledger {self.path} (another "
                              "ledger?); it is never replaced: give another file name")

    @staticmethod
    def _ledger_id_at(path: Path) -> str | None:
        """The ledger id stored in the SQLite file at ``path``, or None (not a ledger, unreadable)."""
        try:
            con = sqlite3.connect(path.resolve().as_uri() + "?mode=ro&immutable=1", uri=True)
            try:
                row = con.execute("SELECT value FROM ledger_meta WHERE key = 'ledger_id'").fetchone()
            finally:
                con.close()
        except sqlite3.Error:
            return None
        return row[0] if row and isinstance(row[0], str) else None

    def _backup_to(self, out: Path, verify: Callable[[str], T]) -> T:
        """Copy the ledger (SQLite's backup API, through this connection: WAL content included)
        into a temporary file next to ``out``, make it one self-contained file, flush it to disk,
        ``verify`` it, then rename it to ``out``; returns what ``verify`` returned. A failure
        leaves neither ``out`` changed nor a temporary file behind."""
        parent = out.parent if str(out.parent) else Path(".")
        tmp: str | None = None
        try:
            fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{out.name}.", suffix=".backup")
            os.close(fd)
            dst = sqlite3.connect(tmp, isolation_level=None)
            try:
                self._con.backup(dst)
                dst.execute("PRAGMA journal_mode=DELETE")  # one file: the copy needs no -wal
            finally:
                dst.close()
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            result = verify(tmp)
            os.replace(tmp, out)
            tmp = None
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot write the backup of ledger {self.path} to {out}: {exc}") from None
        except OSError as exc:
            raise LedgerError(f"cannot write the backup of ledger {self.path} to {out}: "
                              f"{exc.strerror or exc}") from None
        finally:
            if tmp is not None:
                for leftover in (tmp, tmp + "-journal"):
                    try:
                        os.unlink(leftover)
                    except OSError:
                        pass
        return result
