"""A persistent privacy-budget ledger shared by processes: SQLite in WAL mode.

``Ledger(path, total_epsilon=..., total_delta=..., total_rho=...)`` holds the total budget of one
dataset and every charge made against it. A release must be charged *before* its output exists::

    ledger = Ledger("adult.ledger", total_epsilon=3.0)
    plan = plan_range_tree(lower=0, upper=120, epsilon=0.5)        # validate first (no data)
    with ledger.charge_for(plan, label="age") as charge:          # commits the charge, or raises
        release = plan.release(hist)                              # noise is drawn only now
        release.save("age.json")
        charge.output = "age.json"                                # recorded when the block exits

Crash safety. A charge is one row inserted inside ``BEGIN IMMEDIATE`` ... ``COMMIT`` after the
budget check (the check and the insert are one transaction, so concurrent processes cannot
overspend: SQLite serialises writers). The commit is durable when :meth:`Ledger.charge` returns
(``synchronous=FULL``), and only then is noise drawn and the output written. Killing the process
at any moment (kill -9) therefore leaves either no charge and no output, or the charge with or
without the output: never an output without its charge, and never two rows for one charge
(a transaction commits entirely or not at all). A charge whose release then failed or was
killed still counts: its noise may have been drawn. There are no refunds.

Composition (all conservative):

* pure epsilon charges (Laplace) add up (basic composition, Dwork & Roth 2014, Thm 3.16);
  (epsilon, delta) charges add up in both parameters;
* zCDP charges (Gaussian noise) add up in rho (Bun & Steinke 2016, Lemma 2.3); against an
  (epsilon, delta) total, the summed rho is converted with CKS 2020 Cor. 13 at the delta that the
  (epsilon, delta) charges left over, and the epsilons add;
* against a rho total, a pure epsilon charge counts as epsilon^2 / 2 (BS16 Prop. 1.4); an
  (epsilon, delta) charge with delta > 0 cannot be counted against a rho total and is refused.

When both an epsilon and a rho total are given, every charge must fit both.

Amounts are stored exactly: each float is recorded as its shortest decimal (what Python prints)
and summed as exact rationals, so ten charges of 0.1 fit a total of 1.0 exactly.

Integrity (format 2). The file itself is the trust anchor: there is no secret, so whoever can
write the file can replace it wholesale (delete it, or rebuild a consistent one with a smaller
spend). What the ledger does is fail closed on every edit it can see:

* CHECK constraints refuse rows whose amounts are not non-negative finite decimals (negative
  numbers, NaN, Infinity) and malformed kinds, statuses and hashes, at the SQL level;
* the charges form a hash chain: each row stores the SHA-256 of the previous row's hash and its
  own immutable fields (id, time, label, kind, epsilon, delta, rho, pid); the chain starts from a
  hash of the totals and a random ledger id, and its head is stored in ``ledger_meta``. The chain,
  the schema, the totals and the spend (which can never exceed the totals) are verified on every
  open and inside every charge's transaction, so an edited, inserted or deleted row, an edited
  total, a dropped or rebuilt table or an added trigger raises :class:`LedgerCorruptError`;
* tables are created only in an empty database, never re-created in an existing ledger.

Not detected: a rewrite that recomputes the chain with this code (SHA-256 is unkeyed), a
whole-file replacement or deletion, and edits of a charge's ``status`` and ``output`` columns
(bookkeeping outside the chain: they do not enter the spend). Keep the ledger where only the
releasing account can write, and back it up.

Ledgers written by dptree before format 2 have no chain; opening one raises
:class:`LedgerOutdatedError`. :meth:`Ledger.upgrade` (``dptree budget PATH --upgrade``) checks
every old charge, adds the constraints and builds the chain over them, in one transaction.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import Any, Iterator, Mapping, cast

from dptree import noise as _noise
from dptree.errors import (
    BudgetExceededError,
    InvalidParameterError,
    LedgerCorruptError,
    LedgerError,
    LedgerLockedError,
    LedgerOutdatedError,
    LedgerReadOnlyError,
)
from dptree.privacy.budget import check_delta, zcdp_epsilon

__all__ = [
    "Ledger",
    "Charge",
    "Spend",
    "LedgerError",
    "LedgerCorruptError",
    "LedgerLockedError",
    "LedgerOutdatedError",
    "LedgerReadOnlyError",
]

_FORMAT = "dptree-ledger"
_VERSION = "2"
_V1 = "1"  # no constraints, no chain: upgraded by Ledger.upgrade


# --------------------------------------------------------------------------- exact amounts


def _amount(x: object, name: str) -> str:
    """A non-negative finite number as its shortest exact decimal string."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) and not hasattr(x, "__float__"):
        raise InvalidParameterError(f"{name} must be a number, got {type(x).__name__}")
    v = float(x)  # type: ignore[arg-type,unused-ignore]
    if not math.isfinite(v) or v < 0:
        raise InvalidParameterError(f"{name} must be a finite number >= 0, got {x!r}")
    return str(Decimal(repr(v)))


def _frac(s: str) -> Fraction:
    return Fraction(Decimal(s))


@dataclass(frozen=True)
class Spend:
    """Budget spent so far (or that would be spent), under the composition rules above."""

    epsilon: float
    delta: float
    rho: float
    charges: int


@dataclass
class Charge:
    """One committed charge. Usable as a context manager: on exit it records ``output`` and
    whether the block succeeded (``done``) or raised (``failed``); the charge counts either way."""

    ledger: "Ledger"
    id: int
    label: str
    epsilon: float
    delta: float
    rho: float
    output: str | None = None
    status_recorded: bool = True
    _closed: bool = field(default=False, repr=False)

    def __enter__(self) -> "Charge":
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if not self._closed:
            self._closed = True
            try:
                self.ledger._finish(self.id, "done" if et is None else "failed", self.output)
            except LedgerLockedError:
                # The charge itself is committed; only its outcome could not be recorded (it stays
                # 'charged'). Failing here would report an error for a release that was made.
                self.status_recorded = False


@dataclass(frozen=True)
class _Totals:
    epsilon: Fraction | None
    delta: Fraction
    rho: Fraction | None


def _amount_check(col: str) -> str:
    # a non-negative finite decimal as str(Decimal) writes it: no sign, no NaN, no Infinity
    return (f"typeof({col}) = 'text' AND {col} GLOB '[0-9]*' AND NOT {col} GLOB '*[^0-9.E+-]*' "
            f"AND length({col}) <= 64")


def _hash_check(col: str) -> str:
    return f"typeof({col}) = 'text' AND length({col}) = 64 AND NOT {col} GLOB '*[^0-9a-f]*'"


_META_SQL = "CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
_CHARGES_SQL = f"""CREATE TABLE charges (
    id INTEGER PRIMARY KEY AUTOINCREMENT CHECK (id > 0),
    created_utc TEXT NOT NULL CHECK (typeof(created_utc) = 'text'),
    label TEXT NOT NULL CHECK (typeof(label) = 'text'),
    kind TEXT NOT NULL CHECK (kind IN ('pure', 'approx', 'zcdp')),
    epsilon TEXT NOT NULL CHECK ({_amount_check("epsilon")}),
    delta TEXT NOT NULL CHECK ({_amount_check("delta")}),
    rho TEXT NOT NULL CHECK ({_amount_check("rho")}),
    status TEXT NOT NULL CHECK (status IN ('charged', 'done', 'failed')),
    output TEXT,
    pid INTEGER NOT NULL CHECK (typeof(pid) = 'integer'),
    prev_hash TEXT NOT NULL CHECK ({_hash_check("prev_hash")}),
    hash TEXT NOT NULL UNIQUE CHECK ({_hash_check("hash")})
)"""
_TABLES = {"ledger_meta": _META_SQL, "charges": _CHARGES_SQL, "sqlite_sequence": None}
_META_KEYS = ("format", "version", "ledger_id", "created_utc", "total_epsilon", "total_delta", "total_rho", "head")
_ROW_FIELDS = "id, created_utc, label, kind, epsilon, delta, rho, pid, prev_hash, hash"


def _norm_sql(sql: object) -> str:
    return " ".join(str(sql).split())


def _sha(fields: list[Any]) -> str:
    text = json.dumps(fields, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _genesis(meta: Mapping[str, str]) -> str:
    """The chain's first link: binds the totals, the creation time and the ledger's random id."""
    return _sha(["dptree-ledger genesis", meta["version"], meta["ledger_id"], meta["created_utc"],
                 meta["total_epsilon"], meta["total_delta"], meta["total_rho"]])


def _row_hash(prev: str, cid: int, created: str, label: str, kind: str, e: str, d: str, r: str, pid: int) -> str:
    return _sha([prev, cid, created, label, kind, e, d, r, pid])


@dataclass(frozen=True)
class _State:
    """The verified content of the charges table: exact sums, count, last id and chain head."""

    eps: Fraction
    delta: Fraction
    rho: Fraction
    rho_pure: Fraction
    approx: bool
    n: int
    last_id: int
    head: str


class Ledger:
    """A privacy budget shared by every process that opens the same SQLite file.

    The first opening creates the file and fixes the totals (``total_epsilon`` with
    ``total_delta``, and/or ``total_rho``); later openings may omit them or must repeat them.
    ``timeout`` bounds the wait (seconds) for another process's transaction. ``read_only=True``
    opens an existing ledger for inspection only.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        total_epsilon: float | None = None,
        total_delta: float = 0.0,
        total_rho: float | None = None,
        timeout: float = 10.0,
        read_only: bool = False,
    ) -> None:
        self.path = self._check_path(path)
        self.timeout = self._check_timeout(timeout)
        self.read_only = read_only
        requested = self._requested_totals(total_epsilon, total_delta, total_rho)
        exists = self.path.exists()
        if self.path.is_dir():
            raise LedgerError(f"ledger path {self.path} is a directory; give a file name such as budget.ledger")
        if read_only:
            if not exists:
                raise LedgerError(f"ledger file not found: {self.path}")
        else:
            self._check_writable(exists)
            if not exists and requested is None:
                raise InvalidParameterError(
                    f"{self.path} is a new ledger: give its total budget, e.g. total_epsilon=1.0 "
                    "(with total_delta) and/or total_rho"
                )
            if not exists:
                self._create_file(cast(_Totals, requested))
        self._con = self._connect()
        try:
            self._totals = self._open(requested)
        except BaseException:
            self._con.close()
            raise

    # ------------------------------------------------------------------ opening
    @staticmethod
    def _check_path(path: object) -> Path:
        if not isinstance(path, (str, os.PathLike)) or not str(os.fspath(path)).strip():
            raise InvalidParameterError(f"the ledger path must be a non-empty file name, got {path!r}")
        if "\0" in str(os.fspath(path)):
            raise InvalidParameterError("the ledger path must not contain a NUL byte")
        return Path(path)

    @staticmethod
    def _check_timeout(timeout: object) -> float:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
            raise InvalidParameterError(f"timeout must be a number of seconds >= 0, got {timeout!r}")
        return float(timeout)

    @staticmethod
    def _requested_totals(eps: object, delta: object, rho: object) -> _Totals | None:
        if eps is None and rho is None:
            if delta not in (0, 0.0, None):
                raise InvalidParameterError("total_delta needs total_epsilon as well")
            return None
        e = None if eps is None else _amount(eps, "total_epsilon")
        r = None if rho is None else _amount(rho, "total_rho")
        d = _amount(check_delta(0.0 if delta is None else delta), "total_delta")
        if (e is not None and _frac(e) == 0) or (r is not None and _frac(r) == 0):
            raise InvalidParameterError("ledger totals must be > 0")
        return _Totals(None if e is None else _frac(e), _frac(d), None if r is None else _frac(r))

    def _check_writable(self, exists: bool) -> None:
        parent = self.path.parent if str(self.path.parent) else Path(".")
        if exists and not os.access(self.path, os.W_OK):
            raise LedgerReadOnlyError(f"ledger {self.path} is read-only; make it writable (chmod u+w) to charge it")
        if not parent.exists():
            raise LedgerError(f"directory {parent} does not exist; create it first")
        if not os.access(parent, os.W_OK):
            raise LedgerReadOnlyError(
                f"directory {parent} is read-only; the ledger needs to write its journal (-wal, -shm) there"
            )

    def _connect(self) -> sqlite3.Connection:
        try:
            if self.read_only:
                uri = self.path.resolve().as_uri() + "?mode=ro"
                con = sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None)
                try:
                    con.execute("SELECT count(*) FROM sqlite_master").fetchone()
                except sqlite3.OperationalError:
                    # A WAL database opened read-only needs its -shm file, which a reader cannot
                    # create in a read-only directory. With no pending WAL content there is nothing
                    # beyond the main file, so it is read as immutable (no -shm needed).
                    wal = Path(str(self.path) + "-wal")
                    if wal.exists() and wal.stat().st_size > 0:
                        raise
                    con.close()
                    con = sqlite3.connect(uri + "&immutable=1", uri=True, timeout=self.timeout,
                                          isolation_level=None)
            else:
                con = sqlite3.connect(str(self.path), timeout=self.timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc
        return con

    def _translate(self, exc: BaseException) -> LedgerError:
        msg = str(exc)
        low = msg.lower()
        if "locked" in low or "busy" in low:
            return LedgerLockedError(
                f"ledger {self.path} stayed locked by another process for more than {self.timeout:g} s; "
                "retry, or pass a longer timeout"
            )
        if "readonly" in low or "read-only" in low or "read only" in low:
            return LedgerReadOnlyError(
                f"ledger {self.path} is read-only ({msg}); open it writable to charge releases"
            )
        if ("not a database" in low or "malformed" in low or "corrupt" in low or "no such table" in low
                or "constraint" in low or "no such column" in low):
            return self._corrupt(f"is corrupt or not a dptree ledger ({msg})")
        return LedgerError(f"ledger {self.path}: {msg}")

    def _corrupt(self, what: str) -> LedgerCorruptError:
        return LedgerCorruptError(
            f"ledger {self.path} {what}; refusing to use it: restore it from a backup (never start a new "
            "ledger for the same data: that would reset its spent budget)"
        )

    def _open(self, requested: _Totals | None) -> _Totals:
        con = self._con
        try:
            if not self.read_only:
                mode = con.execute("PRAGMA journal_mode=WAL").fetchone()
                if mode is None or str(mode[0]).lower() != "wal":
                    raise LedgerError(f"ledger {self.path}: cannot switch to WAL mode (got {mode})")
                con.execute("PRAGMA synchronous=FULL")
                con.execute("BEGIN IMMEDIATE")
            else:
                con.execute("BEGIN")  # one snapshot for the schema, the totals and the chain
            try:
                if not self.read_only and self._is_empty():
                    # an empty database (new file): the only case where tables are ever created
                    if requested is None:
                        raise InvalidParameterError(
                            f"{self.path} is a new ledger: give its total budget, e.g. total_epsilon=1.0 "
                            "(with total_delta) and/or total_rho"
                        )
                    self._create(requested)
                meta = self._meta()
                totals = self._parse_meta(meta)
                self._check_schema()
                self._state(totals)  # the chain, the amounts and the spend
                con.execute("COMMIT")
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise
            check = con.execute("PRAGMA quick_check").fetchone()
            if not check or check[0] != "ok":
                raise self._corrupt(f"failed SQLite's integrity check ({check})")
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc
        if requested is not None and requested != totals:
            raise InvalidParameterError(
                f"ledger {self.path} was created with totals {self._describe(totals)}; totals cannot change "
                "(omit them to use the stored ones)"
            )
        return totals

    def _create_file(self, requested: _Totals) -> None:
        """Create a new ledger atomically: build it completely in a temporary file next to the path,
        then link it into place (which fails if another process created the ledger meanwhile: that
        one is then opened and its totals compared). A process killed during creation leaves no
        half-made ledger at the path, only a hidden temporary file."""
        import tempfile

        parent = self.path.parent if str(self.path.parent) else Path(".")
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{self.path.name}.", suffix=".creating")
        os.close(fd)
        try:
            con = sqlite3.connect(tmp, timeout=self.timeout, isolation_level=None)
            try:
                con.execute("PRAGMA journal_mode=WAL")
                con.execute("PRAGMA synchronous=FULL")
                con.execute("BEGIN IMMEDIATE")
                self._con = con
                self._create(requested)
                con.execute("COMMIT")
                con.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # everything in the main file
            finally:
                con.close()
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            try:
                os.link(tmp, self.path)  # atomic, and never replaces an existing file
            except FileExistsError:
                pass  # created concurrently: opened below like any existing ledger
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc
        except OSError as exc:
            raise LedgerError(f"cannot create ledger {self.path}: {exc.strerror or exc}") from None
        finally:
            for suffix in ("", "-wal", "-shm", "-journal"):
                try:
                    os.unlink(tmp + suffix)
                except OSError:
                    pass

    def _is_empty(self) -> bool:
        return self._con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0

    def _create(self, requested: _Totals) -> None:
        con = self._con
        con.execute(_META_SQL)
        con.execute(_CHARGES_SQL)
        meta = {
            "format": _FORMAT,
            "version": _VERSION,
            "ledger_id": _noise.random_hex(16),
            "created_utc": _now(),
            "total_epsilon": _dec_str(requested.epsilon),
            "total_delta": _dec_str(requested.delta),
            "total_rho": _dec_str(requested.rho),
        }
        meta["head"] = _genesis(meta)
        con.executemany("INSERT INTO ledger_meta(key, value) VALUES (?, ?)", meta.items())

    def _meta(self) -> dict[str, str]:
        tables = {r[0] for r in self._con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "ledger_meta" not in tables:
            if not tables:
                raise self._corrupt("is empty, not a dptree ledger")
            raise self._corrupt("is not a dptree ledger (no ledger_meta table)")
        meta: dict[str, str] = {}
        for key, value in self._con.execute("SELECT key, value FROM ledger_meta"):
            if not isinstance(key, str) or not isinstance(value, str):
                raise self._corrupt("has a malformed ledger_meta table")
            meta[key] = value
        return meta

    def _check_schema(self) -> None:
        """Exactly the tables of a format-2 ledger, with their constraints, and no triggers."""
        objects = self._con.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
        tables = {name: sql for typ, name, sql in objects if typ == "table"}
        for name in _TABLES:
            if name not in tables:
                raise self._corrupt(f"has no {name} table (dropped?); it is never re-created")
        for name, sql in tables.items():
            if name not in _TABLES:
                raise self._corrupt(f"has an unexpected table {name!r}")
            expected = _TABLES[name]
            if expected is not None and _norm_sql(sql) != _norm_sql(expected):
                raise self._corrupt(f"has a modified {name} table (constraints removed or changed?)")
        others = [f"{typ} {name}" for typ, name, _ in objects if typ not in ("table", "index")]
        if others:
            raise self._corrupt(f"has unexpected schema objects ({', '.join(others)})")

    def _parse_meta(self, meta: Mapping[str, str]) -> _Totals:
        if meta.get("format") != _FORMAT:
            raise self._corrupt("is not a dptree ledger (no format marker)")
        version = meta.get("version")
        if version == _V1:
            raise LedgerOutdatedError(
                f"ledger {self.path} was written by an older dptree (format 1, without integrity checks); "
                f"upgrade it once with: dptree budget {self.path} --upgrade (Python: Ledger.upgrade(path)), "
                "which checks every charge and adds the hash chain"
            )
        if version != _VERSION:
            raise self._corrupt(f"has unsupported format version {version!r} (written by a newer dptree?)")
        missing = [k for k in _META_KEYS if k not in meta]
        if missing:
            raise self._corrupt(f"lacks {', '.join(missing)} in ledger_meta")
        return self._totals_of(meta)

    def _totals_of(self, meta: Mapping[str, str]) -> _Totals:
        try:
            eps = meta["total_epsilon"]
            rho = meta["total_rho"]
            totals = _Totals(
                None if eps == "" else Fraction(_stored(eps)),
                Fraction(_stored(meta["total_delta"])),
                None if rho == "" else Fraction(_stored(rho)),
            )
        except (KeyError, ArithmeticError, ValueError) as exc:
            raise self._corrupt("has malformed totals") from exc
        if totals.epsilon is None and totals.rho is None:
            raise self._corrupt("has no total budget")
        if totals.epsilon == 0 or totals.rho == 0 or totals.delta >= 1 or (totals.epsilon is None and totals.delta):
            raise self._corrupt("has malformed totals")
        return totals

    # ------------------------------------------------------------------ verification
    def _state(self, totals: _Totals | None = None) -> _State:
        """Read every charge, verify the hash chain from the totals to the stored head, the amounts
        of each row and that the spend fits the totals; return the exact sums. Call it inside a
        transaction (one snapshot). Raises LedgerCorruptError on anything that does not verify."""
        t = self._totals if totals is None else totals
        con = self._con
        meta = self._meta()
        try:
            prev = _genesis(meta)
        except KeyError as exc:
            raise self._corrupt("lacks its chain fields in ledger_meta") from exc
        eps, delta, rho, rho_pure = _Sum(), _Sum(), _Sum(), _Sum()
        approx = False
        n = last_id = 0
        for row in con.execute(f"SELECT {_ROW_FIELDS} FROM charges ORDER BY id"):
            cid, created, label, kind, e, d, r, pid, prev_hash, own = row
            de, dd, dr = self._row_amounts(cid, kind, e, d, r)
            try:
                expected = _row_hash(prev, cid, created, label, kind, e, d, r, pid)
            except (TypeError, ValueError) as exc:
                raise self._corrupt(f"has a malformed charge (id {cid!r})") from exc
            if not isinstance(cid, int) or prev_hash != prev or own != expected:
                raise self._corrupt(f"failed its hash chain at charge id {cid!r} (a charge was edited, inserted "
                                    "or deleted)")
            prev = own
            n += 1
            last_id = cid
            eps.add(de)
            delta.add(dd)
            rho.add(dr)
            if kind == "pure":
                rho_pure.add_half_square(de)
            elif kind == "approx":
                approx = True
        if prev != meta.get("head"):
            raise self._corrupt("failed its hash chain at the end (a charge was deleted or the totals edited)")
        seq = con.execute("SELECT seq FROM sqlite_sequence WHERE name = 'charges'").fetchone()
        if (seq[0] if seq else 0) != last_id:
            raise self._corrupt("lost its last charges (the id sequence is ahead of the chain)")
        sums = eps.value(), delta.value(), rho.value(), rho_pure.value()
        why = _violation(t, *sums, approx)
        if why is not None:
            raise self._corrupt(f"records a spend above its totals ({why})")
        return _State(*sums, approx, n, last_id, prev)

    def _row_amounts(self, cid: object, kind: object, e: object, d: object, r: object
                     ) -> tuple[Decimal, Decimal, Decimal]:
        try:
            fe, fd, fr = _stored(e), _stored(d), _stored(r)
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise self._corrupt(f"has a charge (id {cid!r}) whose amount is not a finite number >= 0") from exc
        ok = {
            "pure": fe > 0 and fd == 0 and fr == 0,
            "approx": fe > 0 and 0 < fd < 1 and fr == 0,
            "zcdp": fe == 0 and fd == 0 and fr > 0,
        }.get(kind if isinstance(kind, str) else "", False)
        if not ok:
            raise self._corrupt(f"has a charge (id {cid!r}) whose kind does not match its amounts")
        return fe, fd, fr

    # ------------------------------------------------------------------ accounting
    @staticmethod
    def _describe(t: _Totals) -> str:
        parts = []
        if t.epsilon is not None:
            parts.append(f"epsilon={float(t.epsilon):g}, delta={float(t.delta):g}")
        if t.rho is not None:
            parts.append(f"rho={float(t.rho):g}")
        return ", ".join(parts)

    @property
    def total_epsilon(self) -> float | None:
        return None if self._totals.epsilon is None else float(self._totals.epsilon)

    @property
    def total_delta(self) -> float:
        return float(self._totals.delta)

    @property
    def total_rho(self) -> float | None:
        return None if self._totals.rho is None else float(self._totals.rho)

    def _spend_of(self, s: _State) -> Spend:
        t = self._totals
        e_out, d_out = float(s.eps), float(s.delta)
        if s.rho > 0:
            d_left = t.delta - s.delta
            if d_left > 0:  # convert the summed rho at the delta the (epsilon, delta) charges left
                e_out = float(s.eps + Fraction(zcdp_epsilon(float(s.rho), float(d_left))))
                d_out = float(t.delta)
            else:  # no delta to convert rho with: no finite epsilon
                e_out = math.inf
        return Spend(epsilon=e_out, delta=d_out, rho=float(s.rho + s.rho_pure), charges=s.n)

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[None]:
        """``begin`` ... COMMIT, rolled back on any exception; SQLite errors become ledger errors."""
        con = self._con
        try:
            con.execute(begin)
            try:
                yield
                con.execute("COMMIT")
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc

    def _read(self, query: str | None = None) -> tuple[_State, list[Any]]:
        """The verified state and (optionally) the rows of ``query``, from one snapshot."""
        con = self._con
        try:
            con.execute("BEGIN")
            try:
                state = self._state()
                rows = [] if query is None else con.execute(query).fetchall()
            finally:
                if con.in_transaction:
                    con.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc
        return state, rows

    def spent(self) -> Spend:
        """The budget spent so far: epsilon (and delta) as counted against the epsilon total, rho
        (pure charges counted as epsilon^2/2) as counted against the rho total. Verifies the
        ledger first (raises LedgerCorruptError if it was edited)."""
        return self._spend_of(self._read()[0])

    # ------------------------------------------------------------------ charging
    def charge(
        self,
        *,
        epsilon: float = 0.0,
        delta: float = 0.0,
        rho: float = 0.0,
        label: str = "",
    ) -> Charge:
        """Check the budget and commit one charge, atomically; raise BudgetExceededError if it
        does not fit. Give ``epsilon`` (pure), ``epsilon`` and ``delta`` (approximate DP), or
        ``rho`` (zCDP, for Gaussian noise). Call it after validating the release's parameters and
        before reading the data and drawing its noise; the returned :class:`Charge` is committed
        and durable. The ledger is verified inside the same transaction (LedgerCorruptError)."""
        if self.read_only:
            raise LedgerReadOnlyError(f"ledger {self.path} was opened read_only; open it writable to charge releases")
        e, d, r = _amount(epsilon, "epsilon"), _amount(delta, "delta"), _amount(rho, "rho")
        fe, fd, fr = _frac(e), _frac(d), _frac(r)
        if fr > 0 and (fe > 0 or fd > 0):
            raise InvalidParameterError("charge either rho (zCDP) or epsilon/delta, not both")
        if fe == 0 and fr == 0:
            raise InvalidParameterError("a charge needs epsilon > 0 or rho > 0")
        if fd >= 1:
            raise InvalidParameterError(f"delta must be in [0, 1), got {delta}")
        kind = "zcdp" if fr > 0 else ("approx" if fd > 0 else "pure")
        if not isinstance(label, str):
            raise InvalidParameterError("label must be a string")
        con = self._con
        with self._transaction("BEGIN IMMEDIATE"):  # read the verified state, check, append the chained row
            s = self._state()
            eps2, dl2, rh2 = s.eps + (fe if kind != "zcdp" else 0), s.delta + fd, s.rho + fr
            rp2 = s.rho_pure + (fe * fe / 2 if kind == "pure" else 0)
            why = _violation(self._totals, eps2, dl2, rh2, rp2, s.approx or kind == "approx")
            if why is not None:
                left = self._spend_of(s)
                raise BudgetExceededError(
                    f"ledger {self.path}: this release ({_describe_charge(fe, fd, fr)}) would exceed the "
                    f"total budget ({self._describe(self._totals)}): {why}. Already spent in {s.n} charges: "
                    f"epsilon={left.epsilon:.6g}, delta={left.delta:.3g}, rho={left.rho:.6g}. "
                    "Ask a smaller budget or stop releasing from this data."
                )
            cid, created, pid = s.last_id + 1, _now(), os.getpid()
            own = _row_hash(s.head, cid, created, label, kind, e, d, r, pid)
            con.execute(
                f"INSERT INTO charges({_ROW_FIELDS}, status, output) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "'charged', NULL)",
                (cid, created, label, kind, e, d, r, pid, s.head, own),
            )
            con.execute("UPDATE ledger_meta SET value = ? WHERE key = 'head'", (own,))
        return Charge(ledger=self, id=cid, label=label, epsilon=float(fe), delta=float(fd), rho=float(fr))

    def charge_for(self, release_plan: Any, *, label: str = "") -> Charge:
        """Charge the budget of a validated release plan (anything with a privacy ``statement``).

        Laplace plans charge their requested epsilon (>= what the rounded noise spends); Gaussian
        plans charge rho (the requested rho, or the rho their (epsilon, delta) budget converts to).
        """
        statement = getattr(release_plan, "statement", release_plan)
        if not isinstance(statement, Mapping) or "budget_spent" not in statement:
            raise InvalidParameterError("charge_for needs a release plan (e.g. from plan_range_tree) or its statement")
        spent = statement["budget_spent"]
        requested = statement.get("budget_requested") or {}
        if "rho" in spent:
            rho = float(requested.get("rho") or 0.0)
            if rho <= 0 or rho < spent["rho"]:
                rho = math.nextafter(float(spent["rho"]), math.inf)  # float(spent) may round down
            return self.charge(rho=rho, label=label)
        eps = float(requested.get("epsilon") or 0.0)
        if eps < spent["epsilon"]:
            eps = math.nextafter(float(spent["epsilon"]), math.inf)
        return self.charge(epsilon=eps, delta=float(spent.get("delta") or 0.0), label=label)

    def _finish(self, cid: int, status: str, output: str | None) -> None:
        # status and output are bookkeeping outside the hash chain: they do not enter the spend
        try:
            self._con.execute("UPDATE charges SET status = ?, output = ? WHERE id = ?", (status, output, cid))
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc

    # ------------------------------------------------------------------ upgrade
    @classmethod
    def upgrade(cls, path: str | os.PathLike[str], *, timeout: float = 10.0) -> int:
        """Upgrade a ledger written by an older dptree (format 1: no constraints, no chain) to the
        current format, in one transaction; return the number of charges carried over.

        Every old charge is checked (finite non-negative amounts matching its kind, a spend within
        the totals) before the constraints and the hash chain are added; a ledger that fails raises
        :class:`LedgerCorruptError` and is left unchanged. The chain protects the history from the
        upgrade on; what happened to the file before cannot be verified."""
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
                n = self._upgrade_v1()
        finally:
            con.close()
        return n

    def _upgrade_v1(self) -> int:
        con = self._con
        meta = self._meta()
        if meta.get("format") != _FORMAT:
            raise self._corrupt("is not a dptree ledger (no format marker)")
        if meta.get("version") == _VERSION:
            raise InvalidParameterError(f"ledger {self.path} is already in the current format; nothing to upgrade")
        if meta.get("version") != _V1:
            raise self._corrupt(f"has unsupported format version {meta.get('version')!r}")
        totals = self._totals_of(meta)
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables != set(_TABLES):
            raise self._corrupt("does not have the tables of a format-1 ledger (a table was dropped?)")
        rows = con.execute(
            "SELECT id, created_utc, label, kind, epsilon, delta, rho, status, output, pid FROM charges ORDER BY id"
        ).fetchall()
        eps, delta, rho, rho_pure = _Sum(), _Sum(), _Sum(), _Sum()
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
        why = _violation(totals, eps.value(), delta.value(), rho.value(), rho_pure.value(), approx)
        if why is not None:
            raise self._corrupt(f"records a spend above its totals ({why})")
        con.execute("ALTER TABLE charges RENAME TO charges_v1")
        con.execute(_CHARGES_SQL)
        meta["version"] = _VERSION
        meta["ledger_id"] = _noise.random_hex(16)
        meta.setdefault("created_utc", _now())
        prev = _genesis(meta)
        for cid, created, label, kind, e, d, r, status, output, pid in rows:
            own = _row_hash(prev, cid, created, label, kind, e, d, r, pid)
            con.execute(
                f"INSERT INTO charges({_ROW_FIELDS}, status, output) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (cid, created, label, kind, e, d, r, pid, prev, own, status, output),
            )
            prev = own
        con.execute("DROP TABLE charges_v1")
        meta["head"] = prev
        meta["upgraded_utc"] = _now()
        con.executemany("INSERT OR REPLACE INTO ledger_meta(key, value) VALUES (?, ?)", meta.items())
        self._check_schema()
        self._state(totals)
        return len(rows)

    # ------------------------------------------------------------------ inspection
    def history(self) -> list[dict[str, Any]]:
        """Every charge, oldest first: id, time (UTC), label, kind, epsilon, delta, rho, status, output.
        Verifies the ledger first (raises LedgerCorruptError if it was edited)."""
        _, rows = self._read(
            "SELECT id, created_utc, label, kind, epsilon, delta, rho, status, output FROM charges ORDER BY id"
        )
        keys = ("id", "created_utc", "label", "kind", "epsilon", "delta", "rho", "status", "output")
        out = []
        for row in rows:
            rec = dict(zip(keys, row))
            for k in ("epsilon", "delta", "rho"):
                rec[k] = float(_frac(rec[k]))
            out.append(rec)
        return out

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Ledger {self.path} totals {self._describe(self._totals)}>"


def _violation(t: _Totals, eps: Fraction, delta: Fraction, rho: Fraction, rho_pure: Fraction,
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


def _stored(s: object) -> Decimal:
    """A stored amount: a decimal string of a finite number >= 0 (else ValueError)."""
    if not isinstance(s, str):
        raise ValueError("amount is not text")
    d = Decimal(s)
    if not d.is_finite() or d.is_signed():
        raise ValueError("amount is not a finite number >= 0")
    return d


class _Sum:
    """An exact sum of decimals: integer mantissas bucketed by exponent (much faster than Fractions)."""

    def __init__(self) -> None:
        self._by_exp: dict[int, int] = {}
        self._halves: dict[int, int] = {}

    def add(self, d: Decimal) -> None:
        sign, digits, exp = d.as_tuple()
        if digits != (0,):
            m = int("".join(map(str, digits)))
            self._by_exp[int(exp)] = self._by_exp.get(int(exp), 0) + m

    def add_half_square(self, d: Decimal) -> None:
        """Add d^2 / 2 (a pure epsilon charge counted against a rho total)."""
        sign, digits, exp = d.as_tuple()
        if digits != (0,):
            m = int("".join(map(str, digits)))
            self._halves[2 * int(exp)] = self._halves.get(2 * int(exp), 0) + m * m

    def value(self) -> Fraction:
        total = Fraction(0)
        for exp, m in self._by_exp.items():
            total += Fraction(m) * Fraction(10) ** exp
        for exp, m in self._halves.items():
            total += Fraction(m, 2) * Fraction(10) ** exp
        return total


def _describe_charge(e: Fraction, d: Fraction, r: Fraction) -> str:
    if r > 0:
        return f"rho={float(r):g}"
    return f"epsilon={float(e):g}" + (f", delta={float(d):g}" if d > 0 else "")


def _dec_str(f: Fraction | None) -> str:
    """Exact decimal text of a total that came from a decimal string ('' for None)."""
    if f is None:
        return ""
    num, den = f.numerator, f.denominator
    scale = 0
    while den % 10 == 0 or den % 2 == 0 or den % 5 == 0:
        if den % 10 == 0:
            den //= 10
        elif den % 2 == 0:
            den //= 2
            num *= 5
        else:
            den //= 5
            num *= 2
        scale += 1
    if den != 1:  # pragma: no cover - totals always come from decimal strings
        raise InvalidParameterError("ledger totals must be decimal numbers")
    return str(Decimal(num).scaleb(-scale))


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

