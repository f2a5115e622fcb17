"""Order-preserving 64-bit keys of a sparse range tree's domain (integers, floats, ns timestamps).

Every value maps to an unsigned 64-bit key, monotone in the value, so a tree over keys is a tree
over values: signed integers and nanosecond timestamps as ``v + 2^63``, unsigned integers as
themselves, and float64 through the order-preserving map of the interior-point family
(:mod:`dptree.interior.encoding`, ``_float_key``: -0.0 and 0.0 share a key), in vectorised form
(:func:`dptree.data.sorting.float_keys`; that module's map is per value, this one is tested equal
to it). The public domain is a key range [lo, hi]; the tree's leaves are the 2^bits single keys
from ``lo`` with 2^bits >= hi - lo + 1. Values outside the domain are clamped (per record). NaN, NaT, None and
infinities are refused with a message that names no value, position or count, or dropped record
by record with ``on_invalid="drop"``.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from dptree.data.dates import NS_RANGE, as_dates, dates_to_ns, is_date_bound, parse_date_bound
from dptree.data.inputs import value_kind
from dptree.data.inputs import present, to_numpy, valid_records
from dptree.data.sorting import float_keys, key_floats, sort_keys
from dptree.errors import DataError, DomainError, dates_need_date_bounds_error, non_integer_values_error

__all__ = ["KeyKind", "KeyDomain", "key_domain", "float_keys", "key_floats", "sort_keys", "INVALID_HINT"]

KeyKind = Literal["int", "uint", "float", "datetime"]
_SIGN = np.uint64(1 << 63)
_U64_MAX = (1 << 64) - 1
_FMAX = float(np.finfo(np.float64).max)
_NS_LO = -(2**63) + 1  # int64 min is NaT
_NS_HI = 2**63 - 1
INVALID_HINT = (
    "pass on_invalid='drop' to drop such records (a per-record policy; how many are dropped is never "
    "revealed), or clean the data first"
)


def _float_item(v: Any) -> float:
    """One item of an object column on a float domain: a finite value beyond the doubles (10^400,
    a huge Fraction) is the largest double of its sign, which the bounds then clamp."""
    if isinstance(v, (str, bytes)):
        raise DataError("values must be numbers or dates of one kind")
    try:
        f = float(v)
    except OverflowError:
        return math.copysign(sys.float_info.max, v)
    except (TypeError, ValueError):
        raise DataError("values must be numbers or dates of one kind") from None
    if math.isinf(f) and not isinstance(v, (float, np.floating)) and not (isinstance(v, Decimal) and v.is_infinite()):
        return math.copysign(sys.float_info.max, f)
    return f


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


@dataclass(frozen=True)
class KeyDomain:
    """The public domain as the key range [lo, hi] (Python ints in [0, 2^64)) of a ``kind``."""

    kind: KeyKind
    lo: int
    hi: int

    @property
    def bits(self) -> int:
        """The tree has 2^bits leaves (single keys) from ``lo``; at least 1."""
        return max((self.hi - self.lo).bit_length(), 1)

    @property
    def size(self) -> int:
        """The number of keys in [lower, upper]."""
        return self.hi - self.lo + 1

    # ------------------------------------------------------------------ values -> keys
    def _integer_keys(self, items: list[Any], drop: bool, query: bool) -> np.ndarray:
        """Keys of an object column on an integer domain, item by item and exactly: an integer, or a
        whole float, Decimal or Fraction; another number is floored (a query point), dropped or
        refused, as the float path does."""
        base = (1 << 63) if self.kind == "int" else 0
        out = []
        for v in items:
            if _is_int(v):
                x = int(v)
            elif isinstance(v, (float, np.floating, Decimal, Fraction)):
                x = math.floor(v)
                if x != v and not query:
                    if drop:
                        continue
                    raise non_integer_values_error("give float bounds (e.g. lower=0.0) for a float domain, or "
                                                   + INVALID_HINT)
            else:
                raise DataError("values must be numbers or dates of one kind")
            out.append(min(max(x + base, self.lo), self.hi))
        return np.array(out, dtype=np.uint64)

    def _keys(self, arr: np.ndarray, drop: bool, query: bool) -> np.ndarray:
        """Global keys of a 1-D array (invalid entries refused, or dropped with ``drop``)."""
        kind = arr.dtype.kind
        if kind == "O":
            bad = ~present(arr) | np.array([isinstance(v, float) and math.isinf(v) for v in arr], dtype=bool)
            if bad.any():
                if query:
                    raise DataError("query points must be finite numbers or dates, not None, NaN or infinities")
                if not drop:
                    raise DataError("values contain missing values (None/NaN) or infinities; " + INVALID_HINT)
                arr = arr[~bad]
            if any(isinstance(v, (bool, np.bool_)) for v in arr):
                raise DataError("values must be numbers or dates, not True/False")
            # each item on its own: numpy's common type of the items (float64 as soon as one is a float)
            # rounded 64-bit integers, so one record moved others (as_dates: the same for dates)
            if self.kind in ("int", "uint"):
                return self._integer_keys(arr.tolist(), drop, query)
            if self.kind == "datetime":
                return self._keys(as_dates(arr), drop, query)
            return self._keys(np.array([_float_item(v) for v in arr.tolist()], dtype=np.float64), drop, query)
        if self.kind == "datetime":
            if kind == "U" or (arr.size == 0 and kind != "M"):  # ISO text, or no rows: as the dense tree reads them
                return self._keys(as_dates(arr.astype(object)), drop, query)
            if kind != "M":
                raise DataError("a date domain needs dates or timestamps (datetime64) as values")
            nat = np.isnat(arr)
            if nat.any():
                if not drop:
                    raise DataError("values contain missing dates (NaT); " + INVALID_HINT)
                arr = arr[~nat]
            ns = dates_to_ns(arr, self.lo - (1 << 63), self.hi - (1 << 63))
            return ns.view(np.uint64) ^ _SIGN
        if kind == "M" or kind not in "iuf":
            if kind in "MUS":
                raise dates_need_date_bounds_error(value_kind(arr))
            raise DataError(f"values must be numbers for a {self.kind} domain, got {value_kind(arr)}")
        if kind == "f":
            finite = np.isfinite(arr)
            if not finite.all():
                if query:
                    raise DataError("query points must be finite")
                if not drop:
                    raise DataError("values contain NaN or infinity; " + INVALID_HINT)
                arr = arr[finite]
        if self.kind == "float":
            return float_keys(arr.astype(np.float64, copy=False))
        if kind == "f":  # integer domain: whole floats are fine, other floats are not integers
            whole = arr == np.floor(arr)
            if not whole.all():
                if query:
                    arr = np.floor(arr)
                elif not drop:
                    raise non_integer_values_error("give float bounds (e.g. lower=0.0) for a float domain, or "
                                                   + INVALID_HINT)
                else:
                    arr = arr[whole]
            arr = arr.astype(np.float64, copy=False)  # float16/32: their bounds 2^63 overflow (numpy warns)
            lim = 2.0**64 if self.kind == "uint" else 2.0**63
            low = 0.0 if self.kind == "uint" else -(2.0**63)
            big, small = arr >= lim, arr < low
            safe = np.clip(arr, low, 0.0 if lim == 0 else np.nextafter(lim, 0))
            if self.kind == "uint":
                keys = safe.astype(np.uint64)
            else:
                keys = safe.astype(np.int64).view(np.uint64) ^ _SIGN
            return np.where(big, np.uint64(_U64_MAX), np.where(small, np.uint64(0), keys))
        if self.kind == "int":
            if kind == "u":
                return np.where(arr >= _SIGN, np.uint64(_U64_MAX), arr.astype(np.uint64) ^ _SIGN)
            return arr.astype(np.int64, copy=False).view(np.uint64) ^ _SIGN
        if kind == "i":  # uint domain
            a = arr.astype(np.int64, copy=False)
            return np.where(a < 0, np.int64(0), a).view(np.uint64)
        return arr.astype(np.uint64, copy=False)

    def offsets(self, values: Any, *, column: str | None = None, on_invalid: str = "error") -> np.ndarray:
        """Clamped offsets ``key - lo`` (uint64) of the records of ``values``."""
        arr = to_numpy(values, column=column)
        if arr.dtype.kind == "b":
            raise DataError("values must be numbers or dates, not True/False")
        arr = arr[valid_records(arr, {"int": "integer", "uint": "integer"}.get(self.kind, self.kind), on_invalid)]
        keys = self._keys(arr, on_invalid == "drop", query=False)
        if keys is arr or np.shares_memory(keys, arr):
            keys = keys.copy()
        lo, hi = np.uint64(self.lo), np.uint64(self.hi)
        if self.lo > 0 or self.hi < 2**64 - 1:  # clamp in place (public bounds; no-op for the full range)
            np.clip(keys, lo, hi, out=keys)
        if self.lo:
            keys -= lo
        return keys

    def query_keys(self, x: Any) -> np.ndarray:
        """Global keys (not clamped) of public query points."""
        if self.kind == "datetime":
            try:
                arr = np.atleast_1d(np.asarray(x))
            except (TypeError, ValueError) as exc:
                raise DataError("query points of a date domain must be dates or timestamps") from exc
            if arr.dtype.kind != "M":  # text, dates, datetimes: each on its own (no wrap-around)
                arr = as_dates(arr)
            if np.isnat(arr).any():
                raise DataError("query points must not be NaT")
            ns = dates_to_ns(arr, *NS_RANGE)  # beyond the range dates are bounded in: its ends (outside any domain)
            return ns.view(np.uint64) ^ _SIGN
        arr = np.atleast_1d(np.asarray(x))
        if arr.dtype.kind not in "iufO":
            raise DataError(f"query points must be numbers, got {value_kind(arr)}")
        return self._keys(arr, False, query=True)

    def query_offsets(self, x: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(offsets clamped into the domain, below lower, above upper) of public query points."""
        keys = self.query_keys(x)
        below, above = keys < np.uint64(self.lo), keys > np.uint64(self.hi)
        return np.clip(keys, np.uint64(self.lo), np.uint64(self.hi)) - np.uint64(self.lo), below, above

    # ------------------------------------------------------------------ keys -> values
    def values_at(self, offsets: np.ndarray) -> np.ndarray:
        """The domain values of offsets (clamped to [lower, upper])."""
        off = np.minimum(np.asarray(offsets, dtype=np.uint64), np.uint64(self.hi - self.lo))
        keys = off + np.uint64(self.lo)
        if self.kind == "float":
            return key_floats(keys)
        if self.kind == "uint":
            return keys
        signed = (keys ^ _SIGN).view(np.int64)
        return signed.astype("datetime64[ns]") if self.kind == "datetime" else signed

    def value(self, key: int) -> Any:
        """One global key as a plain Python value (dates as ISO text): what a release file holds."""
        if self.kind == "float":
            return float(key_floats(np.array([key], dtype=np.uint64))[0])
        if self.kind == "uint":
            return int(key)
        if self.kind == "datetime":
            return str(np.datetime64(int(key) - (1 << 63), "ns"))
        return int(key) - (1 << 63)

    @property
    def bounds(self) -> tuple[Any, Any]:
        """(lower, upper) as plain Python values (dates: ISO text)."""
        return self.value(self.lo), self.value(self.hi)


def _bound_key(b: Any, kind: KeyKind, name: str) -> int:
    if kind == "datetime":
        return int(parse_date_bound(b, name).astype(np.int64)) + (1 << 63)
    if kind == "float":
        fb = float(b)
        if not math.isfinite(fb):
            raise DomainError(f"{name} must be finite, got {b}")
        return int(float_keys(np.array([fb]))[0])
    v = int(b)
    base = (1 << 63) if kind == "int" else 0
    if not 0 <= v + base <= _U64_MAX:
        raise DomainError(f"{name}={v} does not fit 64 bits: integer bounds lie in [-2^63, 2^64 - 1], and a "
                          "domain reaching below 0 must end below 2^63", parameter=name)
    return v + base


def key_domain(lower: Any, upper: Any, dtype_kind: str) -> KeyDomain:
    """The public key domain from the bounds, or (both ``None``) the whole 64-bit range of the
    input's type (``dtype_kind``, numpy's kind letter of the input column: schema, not data)."""
    if (lower is None) != (upper is None):
        raise DomainError("give both lower and upper, or neither (the tree then covers every 64-bit key)")
    if lower is None:
        if dtype_kind == "M":
            return KeyDomain("datetime", _NS_LO + (1 << 63), _NS_HI + (1 << 63))
        if dtype_kind == "f":
            return KeyDomain("float", _bound_key(-_FMAX, "float", "lower"), _bound_key(_FMAX, "float", "upper"))
        if dtype_kind == "u":
            return KeyDomain("uint", 0, _U64_MAX)
        if dtype_kind == "O":  # Python objects (integers wider than 64 bits, a 128-bit column): no 64-bit type
            raise DomainError("the values have no 64-bit type (Python objects, e.g. integers wider than 64 bits or a "
                              "128-bit integer column), so the tree cannot cover every key of their type: give "
                              "lower= and upper= (integers at most 2^64 apart; values outside are clamped)")
        return KeyDomain("int", 0, _U64_MAX)
    for name, b in (("lower", lower), ("upper", upper)):
        number = _is_int(b) or isinstance(b, (float, np.floating))
        if isinstance(b, (bool, np.bool_)) or not (number or is_date_bound(b)):
            raise DomainError(f"{name} must be an int, a float or a date, got {type(b).__name__}")
    kind: KeyKind
    if is_date_bound(lower) or is_date_bound(upper):
        if not (is_date_bound(lower) and is_date_bound(upper)):
            raise DomainError("lower and upper must both be dates, or both numbers")
        kind = "datetime"
    elif _is_int(lower) and _is_int(upper):
        kind = "uint" if int(lower) >= 0 and int(upper) >= 2**63 else "int"
    else:
        kind = "float"
    lo, hi = _bound_key(lower, kind, "lower"), _bound_key(upper, kind, "upper")
    if lo > hi:
        raise DomainError(f"lower must be <= upper, got lower={lower!r} > upper={upper!r}; swap them", parameter="lower")
    return KeyDomain(kind, lo, hi)
