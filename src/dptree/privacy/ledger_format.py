"""The on-disk format of a privacy-budget ledger (format 3): schema, hash chain, exact amounts, stored losses.

Pure data and functions, no connection (the SQLite file is :mod:`dptree.privacy.ledger_store`, the
public API :mod:`dptree.privacy.ledger`, whose docstring states the guarantees):

* the schema, whose CHECK constraints refuse amounts that are not non-negative finite decimals
  and malformed kinds, statuses and hashes at the SQL level;
* the hash chain: SHA-256 over each charge's immutable fields and the previous hash, starting
  from a hash of the totals and the ledger's random id;
* the stored loss: a charge made for a plan records the plan's
  :class:`~dptree.privacy.loss.PrivacyLoss` as canonical JSON (:func:`loss_text`: sorted keys,
  no whitespace), inside the chain; a charge made of numbers alone stores none (NULL).
  :func:`loss_cost` reads it back as exact amounts: its pure epsilon and its rho, each
  measurement at its own rho (a d-level Laplace tree epsilon^2 / (2d), an exponential mechanism
  epsilon^2 / 8), which is what a rho total is charged;
* exact amounts: floats stored as their shortest decimal and summed as exact rationals.

The composition rules a spend must satisfy are :mod:`dptree.privacy.ledger_accountant`.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Mapping, Sequence

import numpy as np

from dptree.errors import InvalidParameterError
from dptree.privacy.loss import ApproxDP, Exponential, Gaussian, Laplace, PrivacyLoss, PureDP

__all__ = [
    "FORMAT",
    "VERSION",
    "VERSION_1",
    "VERSION_2",
    "META_SQL",
    "CHARGES_SQL",
    "CHARGES_SQL_V2",
    "TABLES",
    "TABLES_V2",
    "META_KEYS",
    "ROW_FIELDS",
    "ROW_FIELDS_V2",
    "LossCost",
    "loss_text",
    "loss_cost",
    "mechanisms_text",
    "step_delta",
    "covers_steps",
    "Totals",
    "ChainState",
    "amount_text",
    "amount_fraction",
    "stored_amount",
    "ExactSum",
    "total_text",
    "describe_charge",
    "describe_totals",
    "normalised_sql",
    "genesis_hash",
    "row_hash",
    "utc_now",
]

FORMAT = "dptree-ledger"
VERSION = "3"
VERSION_1 = "1"  # no constraints, no chain: upgraded by Ledger.upgrade
VERSION_2 = "2"  # chained amounts, no stored loss: upgraded by Ledger.upgrade


# --------------------------------------------------------------------------- exact amounts


def amount_text(x: object, name: str) -> str:
    """A non-negative finite number as its shortest exact decimal string."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) and not hasattr(x, "__float__"):
        raise InvalidParameterError(f"{name} must be a number, got {type(x).__name__}")
    v = float(x)  # type: ignore[arg-type,unused-ignore]
    if not math.isfinite(v) or v < 0:
        raise InvalidParameterError(f"{name} must be a finite number >= 0, got {x!r}")
    return str(Decimal(repr(v)))


def amount_fraction(s: str) -> Fraction:
    """The exact value of an amount written by :func:`amount_text`."""
    return Fraction(Decimal(s))


@dataclass(frozen=True)
class Totals:
    """A ledger's total budget, exactly (None: no total of that kind)."""

    epsilon: Fraction | None
    delta: Fraction
    rho: Fraction | None


def stored_amount(s: object) -> Decimal:
    """A stored amount: a decimal string of a finite number >= 0 (else ValueError)."""
    if not isinstance(s, str):
        raise ValueError("amount is not text")
    d = Decimal(s)
    if not d.is_finite() or d.is_signed():
        raise ValueError("amount is not a finite number >= 0")
    return d


class ExactSum:
    """An exact sum of decimals: integer mantissas bucketed by exponent (much faster than Fractions)."""

    def __init__(self) -> None:
        self._by_exp: dict[int, int] = {}
        self._halves: dict[int, int] = {}
        self._exact = Fraction(0)

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

    def add_exact(self, f: Fraction) -> None:
        """Add an exact rational (a stored loss's rho)."""
        self._exact += f

    def value(self) -> Fraction:
        total = self._exact
        for exp, m in self._by_exp.items():
            total += Fraction(m) * Fraction(10) ** exp
        for exp, m in self._halves.items():
            total += Fraction(m, 2) * Fraction(10) ** exp
        return total


def describe_charge(e: Fraction, d: Fraction, r: Fraction) -> str:
    if r > 0:
        return f"rho={float(r):g}"
    return f"epsilon={float(e):g}" + (f", delta={float(d):g}" if d > 0 else "")


def total_text(f: Fraction | None) -> str:
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


def describe_totals(t: Totals, prefix: str = "") -> str:
    """The totals as text, e.g. ``epsilon=1, delta=1e-06, rho=0.5`` (``prefix="total_"``: named as the
    ledger's parameters, which the CLI shows as its --total-* options)."""
    parts = []
    if t.epsilon is not None:
        parts.append(f"{prefix}epsilon={float(t.epsilon):g}, {prefix}delta={float(t.delta):g}")
    if t.rho is not None:
        parts.append(f"{prefix}rho={float(t.rho):g}")
    return ", ".join(parts)


# --------------------------------------------------------------------------- schema and hash chain


def _amount_check(col: str) -> str:
    # a non-negative finite decimal as str(Decimal) writes it: no sign, no NaN, no Infinity
    return (f"typeof({col}) = 'text' AND {col} GLOB '[0-9]*' AND NOT {col} GLOB '*[^0-9.E+-]*' "
            f"AND length({col}) <= 64")


def _hash_check(col: str) -> str:
    return f"typeof({col}) = 'text' AND length({col}) = 64 AND NOT {col} GLOB '*[^0-9a-f]*'"


META_SQL = "CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
#: the columns of a charge row in format 2; format 3 adds the stored loss
_CHARGE_COLUMNS = f"""
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
    hash TEXT NOT NULL UNIQUE CHECK ({_hash_check("hash")})"""
CHARGES_SQL_V2 = f"CREATE TABLE charges ({_CHARGE_COLUMNS}\n)"
TABLES_V2 = {"ledger_meta": META_SQL, "charges": CHARGES_SQL_V2, "sqlite_sequence": None}
META_KEYS = ("format", "version", "ledger_id", "created_utc", "total_epsilon", "total_delta", "total_rho", "head")
CHARGES_SQL = (f"CREATE TABLE charges ({_CHARGE_COLUMNS},\n"
               "    loss TEXT CHECK (loss IS NULL OR (typeof(loss) = 'text' AND loss GLOB '{*}'))\n)")
TABLES = {"ledger_meta": META_SQL, "charges": CHARGES_SQL, "sqlite_sequence": None}
META_KEYS = ("format", "version", "ledger_id", "created_utc", "total_epsilon", "total_delta", "total_rho", "head")
ROW_FIELDS_V2 = "id, created_utc, label, kind, epsilon, delta, rho, pid, prev_hash, hash"
ROW_FIELDS = "id, created_utc, label, kind, epsilon, delta, rho, pid, loss, prev_hash, hash"


def normalised_sql(sql: object) -> str:
    """SQL with its whitespace collapsed, to compare a stored schema with :data:`TABLES`."""
    return " ".join(str(sql).split())


def _sha(fields: list[Any]) -> str:
    text = json.dumps(fields, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def genesis_hash(meta: Mapping[str, str]) -> str:
    """The chain's first link: binds the totals, the creation time, the ledger's random id and its
    accountant (when the ledger stores one: removing or adding the key breaks the chain)."""
    extra = [meta["accountant"]] if "accountant" in meta else []
    return _sha(["dptree-ledger genesis", meta["version"], meta["ledger_id"], meta["created_utc"],
                 meta["total_epsilon"], meta["total_delta"], meta["total_rho"], *extra])


def row_hash(prev: str, row: Sequence[object]) -> str:
    """A charge's link: the previous hash and the charge's immutable fields, in the order of
    ``ROW_FIELDS`` (id, created_utc, label, kind, epsilon, delta, rho, pid, loss; format 2: without
    loss). A stored loss enters as its JSON text, a charge without one as null."""
    return _sha([prev, *row])


@dataclass(frozen=True)
class ChainState:
    """The verified content of the charges table: exact sums, count, last id and chain head."""

    eps: Fraction
    delta: Fraction
    rho: Fraction
    rho_pure: Fraction
    approx: bool
    n: int
    last_id: int
    head: str
    orders: tuple[float, ...] | None = None  # the Rényi filter's orders (None: basic composition)
    curve: np.ndarray | None = None  # the sum of every charge's Rényi curve at ``orders``
    approx_delta: Fraction = Fraction(0)  # the delta the filter sets aside for (epsilon, delta) steps
    step_delta: Fraction = Fraction(0)  # the deltas of those steps so far (:func:`step_delta`)


def utc_now() -> str:
    """The current UTC time as stored in a ledger."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# --------------------------------------------------------------------------- stored losses


def loss_text(loss: PrivacyLoss) -> str:
    """A privacy loss as the canonical JSON a charge stores (sorted keys, no whitespace)."""
    return json.dumps(loss.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)


@dataclass(frozen=True)
class LossCost:
    """A stored loss as exact amounts: its pure epsilon (None when a measurement is not pure), its
    rho (None with an (epsilon, delta) step), the deltas of its (epsilon, delta) steps, and how
    many measurements of each family it makes."""

    loss: PrivacyLoss
    epsilon: Fraction | None
    rho: Fraction | None
    families: tuple[tuple[str, int], ...]
    approx_delta: Fraction = Fraction(0)


def loss_cost(text: str) -> LossCost:
    """The exact cost of a stored loss (ValueError if ``text`` is not a canonical stored loss).

    Each measurement counts at its own parameters, exactly: Laplace sensitivity / scale (rho its
    square over 2, Bun & Steinke 2016, Prop. 1.4), the discrete Gaussian rho Delta^2 / (2 sigma2)
    (Canonne, Kamath & Steinke 2020, Theorem 4), the exponential mechanism epsilon and, being
    epsilon-bounded range, rho epsilon^2 / 8 (Cesar & Rogers 2021, Lemma 3.2), a pure-DP step
    epsilon and epsilon^2 / 2. A float parameter counts as its shortest decimal, like every
    amount the ledger stores."""
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the stored loss is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError("the stored loss is not a JSON object")
    try:
        loss = PrivacyLoss.from_dict(data)
    except InvalidParameterError as exc:
        raise ValueError(str(exc)) from None
    if loss_text(loss) != text:
        raise ValueError("the stored loss is not in canonical form")
    eps: Fraction | None = Fraction(0)
    rho: Fraction | None = Fraction(0)
    approx = Fraction(0)
    for m in loss.measurements:
        if isinstance(m, Laplace):
            e = m.sensitivity / m.scale
            eps = None if eps is None else eps + e
            rho = None if rho is None else rho + e * e / 2
        elif isinstance(m, Exponential):
            e = amount_fraction(amount_text(m.epsilon, "epsilon"))
            eps = None if eps is None else eps + e
            rho = None if rho is None else rho + e * e / 8
        elif isinstance(m, PureDP):
            e = amount_fraction(amount_text(m.epsilon, "epsilon"))
            eps = None if eps is None else eps + e
            rho = None if rho is None else rho + e * e / 2
        elif isinstance(m, Gaussian):
            eps = None
            rho = None if rho is None else rho + m.sensitivity ** 2 / (2 * m.sigma2)
        elif isinstance(m, ApproxDP):
            eps = rho = None
            approx += amount_fraction(amount_text(m.delta, "delta"))
        else:  # pragma: no cover - from_dict returns only the families above
            raise ValueError(f"unknown measurement {m!r}")
    counts: dict[str, int] = {}
    for m in loss.measurements:
        counts[m.family] = counts.get(m.family, 0) + 1
    return LossCost(loss, eps, rho, tuple(counts.items()), approx)


#: how far a stored loss's deltas may exceed its charge's delta: the plans split their statement's
#: delta into shares in float arithmetic, whose exact sum can be an ulp above it
DELTA_SLACK = Fraction(1, 2**40)


def covers_steps(delta: Fraction, cost: LossCost) -> bool:
    """Whether a charge's delta covers its stored loss's (epsilon, delta) steps (up to DELTA_SLACK)."""
    return cost.approx_delta <= delta * (1 + DELTA_SLACK)


def step_delta(kind: str, delta: Fraction, cost: LossCost | None) -> Fraction:
    """The delta a charge's (epsilon, delta) steps spend, as a renyi ledger counts it: the charge's
    delta when it has such steps (its stored loss has :class:`~dptree.privacy.loss.ApproxDP`
    steps, which the delta covers, or it stores none and is an (epsilon, delta) charge), else 0 (a
    Gaussian plan charged by its (epsilon, delta) statement has none: its curve is exact)."""
    has_steps = cost.approx_delta > 0 if cost is not None else kind == "approx"
    return delta if has_steps else Fraction(0)


def mechanisms_text(cost: LossCost | None) -> str:
    """The mechanism families of a stored loss, e.g. ``laplace x11`` or ``exponential``
    (``numbers only`` for a charge that stores none)."""
    if cost is None:
        return "numbers only"
    return ", ".join(f + (f" x{n}" if n > 1 else "") for f, n in cost.families)
