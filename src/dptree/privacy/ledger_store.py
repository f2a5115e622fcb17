"""The SQLite file behind a :class:`~dptree.privacy.ledger.Ledger`: opening, creating, verifying.

:class:`LedgerStore` holds the connection and everything that reads or writes the file below
the public API: atomic creation, WAL mode with ``synchronous=FULL``, transactions, the checks
run on every open and inside every charge's transaction (schema, totals, hash chain, amounts,
spend within the totals; anything else raises :class:`~dptree.errors.LedgerCorruptError`).
Upgrading an older file and backing one up: :mod:`dptree.privacy.ledger_maintenance`. A
charge's stored loss is read back exactly (:func:`~dptree.privacy.ledger_format.loss_cost`) and
must agree with its amounts; against a rho total a charge with a stored loss counts its
mechanisms' exact rho, a pure charge without one epsilon^2 / 2.
Format: :mod:`dptree.privacy.ledger_format`.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import contextmanager
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterator, Mapping, TypeVar, cast

import numpy as np

from dptree import noise as _noise
from dptree.errors import (
    InvalidParameterError,
    LedgerCorruptError,
    LedgerError,
    LedgerLockedError,
    LedgerOutdatedError,
    LedgerReadOnlyError,
)
from dptree.privacy.ledger_accountant import (
    accountant_text,
    charge_curve,
    parse_accountant,
    spend_violation,
)
from dptree.privacy.ledger_format import (
    CHARGES_SQL,
    FORMAT,
    META_KEYS,
    META_SQL,
    ROW_FIELDS,
    TABLES,
    VERSION,
    VERSION_1,
    VERSION_2,
    ChainState,
    ExactSum,
    LossCost,
    Totals,
    covers_steps,
    describe_totals,
    genesis_hash,
    loss_cost,
    normalised_sql,
    row_hash,
    step_delta,
    stored_amount,
    total_text,
    utc_now,
)

__all__ = ["LedgerStore"]

T = TypeVar("T")


class LedgerStore:
    """The connection to one ledger file and the verified reads and writes on it (no public API:
    :class:`~dptree.privacy.ledger.Ledger` builds on it)."""

    path: Path
    timeout: float
    read_only: bool
    _con: sqlite3.Connection
    _totals: Totals
    _costs: dict[str, LossCost]  # stored loss text -> its exact cost (parsing is pure: safe to reuse)
    _new_orders: tuple[float, ...] | None = None  # the accountant a new ledger is created with
    _new_approx_delta: Fraction = Fraction(0)  # and the delta it sets aside for (epsilon, delta) steps

    # ------------------------------------------------------------------ opening
    @staticmethod
    def _check_path(path: object, what: str = "ledger") -> Path:
        if not isinstance(path, (str, os.PathLike)) or not str(os.fspath(path)).strip():
            raise InvalidParameterError(f"the {what} path must be a non-empty file name, got {path!r}")
        if "\0" in str(os.fspath(path)):
            raise InvalidParameterError(f"the {what} path must not contain a NUL byte")
        return Path(path)

    @staticmethod
    def _check_timeout(timeout: object) -> float:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
            raise InvalidParameterError(f"timeout must be a number of seconds >= 0, got {timeout!r}")
        return float(timeout)


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

    def _open(self, requested: Totals | None) -> Totals:
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
                f"ledger {self.path} was created with totals {describe_totals(totals)}; totals cannot change "
                "(omit them to use the stored ones)"
            )
        return totals

    def _create_file(self, requested: Totals) -> None:
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

    def _create(self, requested: Totals) -> None:
        con = self._con
        con.execute(META_SQL)
        con.execute(CHARGES_SQL)
        meta = {
            "format": FORMAT,
            "version": VERSION,
            "ledger_id": _noise.random_hex(16),
            "created_utc": utc_now(),
            "total_epsilon": total_text(requested.epsilon),
            "total_delta": total_text(requested.delta),
            "total_rho": total_text(requested.rho),
            "accountant": accountant_text(self._new_orders, self._new_approx_delta),
        }
        meta["head"] = genesis_hash(meta)
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

    def _check_schema(self, expected_tables: Mapping[str, str | None] = TABLES) -> None:
        """Exactly the tables of a current ledger (or ``expected_tables``), with their constraints,
        and no triggers."""
        objects = self._con.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
        tables = {name: sql for typ, name, sql in objects if typ == "table"}
        for name in expected_tables:
            if name not in tables:
                raise self._corrupt(f"has no {name} table (dropped?); it is never re-created")
        for name, sql in tables.items():
            if name not in expected_tables:
                raise self._corrupt(f"has an unexpected table {name!r}")
            expected = expected_tables[name]
            if expected is not None and normalised_sql(sql) != normalised_sql(expected):
                raise self._corrupt(f"has a modified {name} table (constraints removed or changed?)")
        others = [f"{typ} {name}" for typ, name, _ in objects if typ not in ("table", "index")]
        if others:
            raise self._corrupt(f"has unexpected schema objects ({', '.join(others)})")

    def _parse_meta(self, meta: Mapping[str, str]) -> Totals:
        if meta.get("format") != FORMAT:
            raise self._corrupt("is not a dptree ledger (no format marker)")
        version = meta.get("version")
        if version == VERSION_1:
            raise LedgerOutdatedError(
                f"ledger {self.path} was written by an older dptree (format 1, without integrity checks); "
                f"upgrade it once with: dptree budget {self.path} --upgrade (Python: Ledger.upgrade(path)), "
                "which checks every charge and adds the hash chain"
            )
        if version == VERSION_2:
            raise LedgerOutdatedError(
                f"ledger {self.path} was written by an older dptree (format 2, charges stored as numbers only); "
                f"upgrade it once with: dptree budget {self.path} --upgrade (Python: Ledger.upgrade(path)), "
                "which checks the hash chain and carries every charge over"
            )
        if version != VERSION:
            raise self._corrupt(f"has unsupported format version {version!r} (written by a newer dptree?)")
        missing = [k for k in META_KEYS if k not in meta]
        if missing:
            raise self._corrupt(f"lacks {', '.join(missing)} in ledger_meta")
        return self._totals_of(meta)

    def _totals_of(self, meta: Mapping[str, str]) -> Totals:
        try:
            eps = meta["total_epsilon"]
            rho = meta["total_rho"]
            totals = Totals(
                None if eps == "" else Fraction(stored_amount(eps)),
                Fraction(stored_amount(meta["total_delta"])),
                None if rho == "" else Fraction(stored_amount(rho)),
            )
        except (KeyError, ArithmeticError, ValueError) as exc:
            raise self._corrupt("has malformed totals") from exc
        if totals.epsilon is None and totals.rho is None:
            raise self._corrupt("has no total budget")
        if totals.epsilon == 0 or totals.rho == 0 or totals.delta >= 1 or (totals.epsilon is None and totals.delta):
            raise self._corrupt("has malformed totals")
        return totals

    # ------------------------------------------------------------------ verification
    def _state(self, totals: Totals | None = None) -> ChainState:
        """Read every charge, verify the hash chain from the totals to the stored head, the amounts
        of each row and that the spend fits the totals; return the exact sums. Call it inside a
        transaction (one snapshot). Raises LedgerCorruptError on anything that does not verify."""
        t = self._totals if totals is None else totals
        con = self._con
        meta = self._meta()
        try:
            prev = genesis_hash(meta)
        except KeyError as exc:
            raise self._corrupt("lacks its chain fields in ledger_meta") from exc
        orders, approx_delta = self._accountant_of(meta, t)
        curve = None if orders is None else np.zeros(len(orders))
        eps, delta, rho, rho_pure = ExactSum(), ExactSum(), ExactSum(), ExactSum()
        approx, steps = False, Fraction(0)
        n = last_id = 0
        for row in con.execute(f"SELECT {ROW_FIELDS} FROM charges ORDER BY id"):
            cid, created, label, kind, e, d, r, pid, loss, prev_hash, own = row
            de, dd, dr = self._row_amounts(cid, kind, e, d, r)
            cost = self._row_loss(cid, kind, de, dd, dr, loss)
            try:
                expected = row_hash(prev, (cid, created, label, kind, e, d, r, pid, loss))
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
                if cost is not None and cost.rho is not None:
                    rho_pure.add_exact(cost.rho)  # each mechanism's exact rho
                else:
                    rho_pure.add_half_square(de)
            elif kind == "approx":
                approx = True
            steps += step_delta(kind, Fraction(dd), cost)
            if curve is not None:
                curve = curve + self._row_curve(cid, kind, de, dr, cost, loss, cast(tuple, orders))
        if prev != meta.get("head"):
            raise self._corrupt("failed its hash chain at the end (a charge was deleted or the totals edited)")
        seq = con.execute("SELECT seq FROM sqlite_sequence WHERE name = 'charges'").fetchone()
        if (seq[0] if seq else 0) != last_id:
            raise self._corrupt("lost its last charges (the id sequence is ahead of the chain)")
        sums = eps.value(), delta.value(), rho.value(), rho_pure.value()
        why = spend_violation(t, *sums, approx, orders, curve, approx_delta, steps)
        if why is not None:
            raise self._corrupt(f"records a spend above its totals ({why})")
        return ChainState(*sums, approx, n, last_id, prev, orders, curve, approx_delta, steps)

    def _accountant_of(self, meta: Mapping[str, str], t: Totals) -> tuple[tuple[float, ...] | None, Fraction]:
        """The Rényi filter's orders stored in ``meta`` (None: basic composition) and the delta it
        sets aside for (epsilon, delta) steps."""
        try:
            orders, approx_delta = parse_accountant(meta.get("accountant"))
        except ValueError as exc:
            raise self._corrupt(f"has a malformed accountant ({exc})") from exc
        if orders is not None and (t.epsilon is None or t.delta == 0):
            raise self._corrupt("has a Rényi accountant without an (epsilon, delta > 0) total")
        if approx_delta >= t.delta and orders is not None:
            raise self._corrupt("sets aside for (epsilon, delta) steps a delta not below its total_delta")
        return orders, approx_delta

    def _row_curve(self, cid: object, kind: str, e: Decimal, r: Decimal, cost: LossCost | None, loss: object,
                   orders: tuple[float, ...]) -> np.ndarray:
        """A charge's Rényi curve, recomputed from its stored loss or amounts (cached by their text:
        the curve is a pure function of them)."""
        key = (kind, str(e), str(r), loss, orders)
        curves = self.__dict__.setdefault("_curves", {})
        c = curves.get(key)
        if c is None:
            try:
                c = charge_curve(kind, Fraction(e), Fraction(r), cost, orders)
            except ValueError as exc:
                raise self._corrupt(f"has a charge (id {cid!r}) that its Rényi accountant cannot count "
                                    f"({exc})") from exc
            curves[key] = c
        return c

    def _row_amounts(self, cid: object, kind: object, e: object, d: object, r: object
                     ) -> tuple[Decimal, Decimal, Decimal]:
        try:
            fe, fd, fr = stored_amount(e), stored_amount(d), stored_amount(r)
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

    def _row_loss(self, cid: object, kind: object, e: Decimal, d: Decimal, r: Decimal, loss: object
                  ) -> LossCost | None:
        """The exact cost of a charge's stored loss (None: numbers only), checked against the
        charge's amounts: a pure charge covers the loss's pure epsilon, a zCDP charge its rho, an
        (epsilon, delta) charge the deltas of its (epsilon, delta) steps."""
        if loss is None:
            return None
        if not isinstance(loss, str):
            raise self._corrupt(f"has a charge (id {cid!r}) whose stored loss is not text")
        costs = self.__dict__.setdefault("_costs", {})
        cost = costs.get(loss)
        if cost is None:
            try:
                cost = loss_cost(loss)
            except (ValueError, ArithmeticError) as exc:
                raise self._corrupt(f"has a charge (id {cid!r}) whose stored loss is malformed ({exc})") from exc
            costs[loss] = cost
        if kind == "pure":
            ok = cost.epsilon is not None and cost.epsilon <= Fraction(e)
        elif kind == "zcdp":
            ok = cost.rho is not None and cost.rho <= Fraction(r)
        else:
            ok = covers_steps(Fraction(d), cost)
        if not ok:
            raise self._corrupt(f"has a charge (id {cid!r}) whose stored loss exceeds its amounts")
        return cost

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

    def _read(self, query: str | None = None) -> tuple[ChainState, list[Any]]:
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

    def _finish(self, cid: int, status: str, output: str | None) -> None:
        # status and output are bookkeeping outside the hash chain: they do not enter the spend
        try:
            self._con.execute("UPDATE charges SET status = ?, output = ? WHERE id = ?", (status, output, cid))
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc
