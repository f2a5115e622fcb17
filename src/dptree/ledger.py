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
"""

from __future__ import annotations

import math
import os
import sqlite3
import time
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import Any, Mapping

from .budget import check_delta, zcdp_epsilon
from .errors import BudgetExceededError, DPTreeError, InvalidParameterError

__all__ = [
    "Ledger",
    "Charge",
    "Spend",
    "LedgerError",
    "LedgerCorruptError",
    "LedgerLockedError",
    "LedgerReadOnlyError",
]

_FORMAT = "dptree-ledger"
_VERSION = "1"


class LedgerError(DPTreeError):
    """The budget ledger cannot be used."""


class LedgerCorruptError(LedgerError):
    """The ledger file is not a valid dptree ledger (corrupt, truncated or another file)."""


class LedgerLockedError(LedgerError):
    """Another process held the ledger locked for longer than the timeout."""


class LedgerReadOnlyError(LedgerError):
    """The ledger cannot be written (read-only file, directory or opening mode)."""


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


_SCHEMA = """
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
        self.path = Path(path)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
            raise InvalidParameterError(f"timeout must be a number of seconds >= 0, got {timeout!r}")
        self.timeout = float(timeout)
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
        self._con = self._connect()
        try:
            self._totals = self._open(requested, exists)
        except BaseException:
            self._con.close()
            raise

    # ------------------------------------------------------------------ opening
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
        if "not a database" in low or "malformed" in low or "corrupt" in low or "no such table" in low:
            return LedgerCorruptError(
                f"ledger {self.path} is corrupt or not a dptree ledger ({msg}); restore it from a backup "
                "(never start a new ledger for the same data: that would reset its spent budget)"
            )
        return LedgerError(f"ledger {self.path}: {msg}")

    def _open(self, requested: _Totals | None, exists: bool) -> _Totals:
        con = self._con
        try:
            if not self.read_only:
                mode = con.execute("PRAGMA journal_mode=WAL").fetchone()
                if mode is None or str(mode[0]).lower() != "wal":
                    raise LedgerError(f"ledger {self.path}: cannot switch to WAL mode (got {mode})")
                con.execute("PRAGMA synchronous=FULL")
                con.execute("BEGIN IMMEDIATE")
                try:
                    for stmt in _SCHEMA.split(";"):
                        if stmt.strip():
                            con.execute(stmt)
                    meta = dict(con.execute("SELECT key, value FROM ledger_meta").fetchall())
                    if not meta:
                        if exists and con.execute("SELECT count(*) FROM charges").fetchone()[0]:
                            raise LedgerCorruptError(
                                f"ledger {self.path} has charges but no totals; restore it from a backup"
                            )
                        if requested is None:
                            raise InvalidParameterError(
                                f"{self.path} is a new ledger: give its total budget, e.g. total_epsilon=1.0 "
                                "(with total_delta) and/or total_rho"
                            )
                        rows = {
                            "format": _FORMAT,
                            "version": _VERSION,
                            "total_epsilon": _dec_str(requested.epsilon),
                            "total_delta": _dec_str(requested.delta),
                            "total_rho": _dec_str(requested.rho),
                            "created_utc": _now(),
                        }
                        con.executemany("INSERT INTO ledger_meta(key, value) VALUES (?, ?)", rows.items())
                        meta = rows
                    totals = self._parse_meta(meta)
                    con.execute("COMMIT")
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
            else:
                meta = dict(con.execute("SELECT key, value FROM ledger_meta").fetchall())
                totals = self._parse_meta(meta)
            check = con.execute("PRAGMA quick_check").fetchone()
            if not check or check[0] != "ok":
                raise LedgerCorruptError(
                    f"ledger {self.path} failed SQLite's integrity check ({check}); restore it from a backup"
                )
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc
        if requested is not None and requested != totals:
            raise InvalidParameterError(
                f"ledger {self.path} was created with totals {self._describe(totals)}; totals cannot change "
                "(omit them to use the stored ones)"
            )
        return totals

    def _parse_meta(self, meta: Mapping[str, str]) -> _Totals:
        if meta.get("format") != _FORMAT:
            raise LedgerCorruptError(f"{self.path} is not a dptree ledger (no format marker); restore it from a backup")
        if meta.get("version") != _VERSION:
            raise LedgerCorruptError(f"ledger {self.path} has unsupported version {meta.get('version')!r}")
        try:
            eps = meta["total_epsilon"]
            rho = meta["total_rho"]
            totals = _Totals(
                None if eps == "" else _frac(eps), _frac(meta["total_delta"]), None if rho == "" else _frac(rho)
            )
        except (KeyError, ArithmeticError, ValueError) as exc:
            raise LedgerCorruptError(f"ledger {self.path} has malformed totals; restore it from a backup") from exc
        if totals.epsilon is None and totals.rho is None:
            raise LedgerCorruptError(f"ledger {self.path} has no total budget; restore it from a backup")
        return totals

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

    def _sums(self) -> tuple[Fraction, Fraction, Fraction, Fraction, bool, int]:
        eps = delta = rho = rho_pure = Fraction(0)
        approx = False
        n = 0
        for kind, e, d, r in self._con.execute("SELECT kind, epsilon, delta, rho FROM charges"):
            n += 1
            fe, fd, fr = _frac(e), _frac(d), _frac(r)
            eps += fe
            delta += fd
            rho += fr
            if kind == "pure":
                rho_pure += fe * fe / 2
            elif kind == "approx":
                approx = True
        return eps, delta, rho, rho_pure, approx, n

    def _violation(self, eps: Fraction, delta: Fraction, rho: Fraction, rho_pure: Fraction, approx: bool) -> str | None:
        """Why a spend (eps, delta from (eps, delta) charges; rho from zCDP charges) exceeds the totals."""
        t = self._totals
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

    def _spend_of(self, eps: Fraction, delta: Fraction, rho: Fraction, rho_pure: Fraction, n: int) -> Spend:
        t = self._totals
        e_out, d_out = float(eps), float(delta)
        if rho > 0:
            d_left = t.delta - delta
            if d_left > 0:  # convert the summed rho at the delta the (epsilon, delta) charges left
                e_out = float(eps + Fraction(zcdp_epsilon(float(rho), float(d_left))))
                d_out = float(t.delta)
            else:  # no delta to convert rho with: no finite epsilon
                e_out = math.inf
        return Spend(epsilon=e_out, delta=d_out, rho=float(rho + rho_pure), charges=n)

    def spent(self) -> Spend:
        """The budget spent so far: epsilon (and delta) as counted against the epsilon total, rho
        (pure charges counted as epsilon^2/2) as counted against the rho total."""
        try:
            eps, delta, rho, rho_pure, _, n = self._sums()
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc
        return self._spend_of(eps, delta, rho, rho_pure, n)

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
        before drawing its noise; the returned :class:`Charge` is committed and durable."""
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
        try:
            con.execute("BEGIN IMMEDIATE")
            try:
                eps, dl, rh, rp, approx, n = self._sums()
                eps2, dl2, rh2 = eps + (fe if kind != "zcdp" else 0), dl + fd, rh + fr
                rp2 = rp + (fe * fe / 2 if kind == "pure" else 0)
                why = self._violation(eps2, dl2, rh2, rp2, approx or kind == "approx")
                if why is not None:
                    left = self._spend_of(eps, dl, rh, rp, n)
                    raise BudgetExceededError(
                        f"ledger {self.path}: this release ({_describe_charge(fe, fd, fr)}) would exceed the "
                        f"total budget ({self._describe(self._totals)}): {why}. Already spent in {n} charges: "
                        f"epsilon={left.epsilon:.6g}, delta={left.delta:.3g}, rho={left.rho:.6g}. "
                        "Ask a smaller budget or stop releasing from this data."
                    )
                cur = con.execute(
                    "INSERT INTO charges(created_utc, label, kind, epsilon, delta, rho, status, output, pid) "
                    "VALUES (?, ?, ?, ?, ?, ?, 'charged', NULL, ?)",
                    (_now(), label, kind, e, d, r, os.getpid()),
                )
                cid = int(cur.lastrowid or 0)
                con.execute("COMMIT")
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc
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
        try:
            self._con.execute("UPDATE charges SET status = ?, output = ? WHERE id = ?", (status, output, cid))
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc

    # ------------------------------------------------------------------ inspection
    def history(self) -> list[dict[str, Any]]:
        """Every charge, oldest first: id, time (UTC), label, kind, epsilon, delta, rho, status, output."""
        try:
            rows = self._con.execute(
                "SELECT id, created_utc, label, kind, epsilon, delta, rho, status, output FROM charges ORDER BY id"
            ).fetchall()
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc
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

