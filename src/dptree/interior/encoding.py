"""Domain encoding of the interior-point family (Kaplan et al. 2020): public bounds and values to integer keys.

Integer domains [lower, upper] of any size keep their values; float domains go through the
order-preserving map of a float64 to a 64-bit integer key; date domains (bounds that are dates,
datetimes or ISO text) count whole units of a public resolution ``width`` (a timedelta, default
one day) from ``lower``, so a record at time t has key floor((t - lower) / width) -- the buckets
of a range tree over the same bounds and width. Every mechanism works on offsets
``key - key(lower)`` in [0, |X|). Values outside [lower, upper] are clamped (a per-record
transformation; how many were clamped is never revealed). Invalid values (NaN, infinities,
non-integers in an integer domain) raise an error that names no value, position or count, or are
dropped record by record with ``on_invalid="drop"``.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Mapping

import numpy as np

from dptree.data.sorting import float_keys
from dptree.errors import (DataError, DomainError, InvalidParameterError, ReleaseFileError, dates_need_date_bounds_error,
                           non_integer_values_error)
from dptree.interior.selection import _group

__all__ = ["Encoding", "INVALID_HINT", "domain_document", "domain_from_document", "encoding", "encode_values", "point_encoding",
           "prepare", "prepare_groups"]


def _float_key(x: float) -> int:
    """Order-preserving map float64 -> int (monotone; -0.0 and 0.0 both map to 0)."""
    i = struct.unpack(">q", struct.pack(">d", x))[0]
    return -(i & 0x7FFFFFFFFFFFFFFF) if i < 0 else i


def _key_float(k: int) -> float:
    bits = ((-k) | (1 << 63)) if k < 0 else k
    return struct.unpack(">d", struct.pack(">Q", bits))[0]


def _is_intlike(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


@dataclass(frozen=True)
class Encoding:
    """The public domain as keys [lo, hi]: ``kind`` "integer" (the values), "float" (float64 keys) or
    "datetime" (whole ``unit`` nanoseconds after ``origin`` nanoseconds: lo = 0)."""

    kind: Literal["integer", "float", "datetime"]
    lo: int  # key of lower
    hi: int  # key of upper
    origin: int = 0  # datetime: lower in nanoseconds since 1970
    unit: int = 1  # datetime: the resolution (width) in nanoseconds

    @property
    def size(self) -> int:
        """|X|, the number of points of the domain."""
        return self.hi - self.lo + 1

    @property
    def bounds(self) -> tuple[Any, Any]:
        """(lower, upper) as plain Python numbers of the domain's kind (what a release file holds;
        for dates the first and the last unit's start as numpy datetime64[ns])."""
        return self.decode(0), self.decode(self.size - 1)

    @property
    def width(self) -> np.timedelta64 | None:
        """A date domain's resolution as a timedelta (the range tree's bucket width); None otherwise."""
        return np.timedelta64(self.unit, "ns") if self.kind == "datetime" else None

    def decode(self, offset: int) -> Any:
        """The domain point at ``offset`` (clamped to the domain)."""
        key = self.lo + min(max(offset, 0), self.size - 1)
        if self.kind == "datetime":
            return np.datetime64(self.origin + key * self.unit, "ns")
        return key if self.kind == "integer" else _key_float(key)

    def contains(self, value: Any) -> bool:
        """Whether ``value`` is a point of this domain, of its kind (for re-validating a loaded file)."""
        if self.kind == "integer":
            return _is_intlike(value) and self.lo <= int(value) <= self.hi
        if self.kind == "datetime":
            if not isinstance(value, np.datetime64) or np.isnat(value):
                return False
            k, r = divmod(int(value.astype("datetime64[ns]").astype(np.int64)) - self.origin, self.unit)
            return r == 0 and self.lo <= k <= self.hi
        return isinstance(value, float) and math.isfinite(value) and self.lo <= _float_key(value) <= self.hi

    def dump(self, value: Any) -> Any:
        """A point as a release file holds it: ISO text for dates, the number otherwise."""
        return str(np.datetime64(value, "ns")) if self.kind == "datetime" else value

    def load(self, value: Any) -> Any:
        """A point read from a release file (:meth:`dump`'s inverse; text that is not a date stays
        text, which :meth:`contains` refuses)."""
        if self.kind == "datetime" and isinstance(value, str):
            try:
                return np.datetime64(value, "ns")
            except ValueError:
                return value
        return value


def encoding(lower: Any, upper: Any, width: Any = None) -> Encoding:
    """The encoding of the public domain [lower, upper]: integer when both bounds are ints, datetime
    when a bound is a date, datetime or ISO text (``width``: its resolution, a timedelta, default one
    day; :func:`dptree.data.dates.date_bounds`), float otherwise. ``width`` is read for date domains
    only (a numeric domain's points are all its integers or floats; a range tree's numeric bucket
    width is not part of this encoding; the public APIs refuse it where it means nothing). Raises DomainError for bounds that are not finite numbers or
    dates, or not ordered."""
    from dptree.data.dates import date_bounds, is_date_bound

    if is_date_bound(lower) or is_date_bound(upper):
        lo_ns, hi_ns, unit = date_bounds(lower, upper, width)
        return Encoding("datetime", 0, (hi_ns - lo_ns) // unit, lo_ns, unit)
    for name, b in (("lower", lower), ("upper", upper)):
        if isinstance(b, (bool, np.bool_)) or not (_is_intlike(b) or isinstance(b, (float, np.floating))):
            raise DomainError(f"{name} must be an int, a float or a date, got {type(b).__name__}")
        if isinstance(b, (float, np.floating)) and not math.isfinite(float(b)):
            raise DomainError(f"{name} must be finite, got {b}")
    if _is_intlike(lower) and _is_intlike(upper):
        lo, hi, kind = int(lower), int(upper), "integer"
    else:
        try:
            lo, hi, kind = _float_key(float(lower)), _float_key(float(upper)), "float"
        except OverflowError as exc:
            raise DomainError("bounds do not fit a float64 domain; use integer bounds") from exc
    if lo > hi:
        raise DomainError(f"lower must be <= upper, got lower={lower!r} > upper={upper!r}; swap them", parameter="lower")
    return Encoding(kind, lo, hi)  # type: ignore[arg-type]


def point_encoding(lower: Any, upper: Any, width: Any = None) -> Encoding:
    """:func:`encoding` for the mechanisms that output a point of the domain (interior points,
    single quantiles): ``width`` is accepted for date domains only (their resolution), refused with
    a clear error on a numeric one, where every integer or float is already a point."""
    enc = encoding(lower, upper, width)
    if width is not None and enc.kind != "datetime":
        raise InvalidParameterError("width= is the resolution of a date domain; a numeric domain has none (every "
                                    "integer, or every float, between the bounds is a point): drop width=")
    return enc


def domain_document(enc: Encoding) -> dict[str, Any]:
    """The public domain as a release file holds it: kind and bounds (dates: ISO text and the width
    in nanoseconds, as a range tree's file holds them)."""
    lower, upper = enc.bounds
    if enc.kind == "datetime":
        return {"kind": "datetime", "lower": enc.dump(lower), "upper": enc.dump(upper), "width": enc.unit}
    return {"kind": enc.kind, "lower": lower, "upper": upper}


def domain_from_document(doc: Any, kind: str) -> Encoding:
    """The encoding of a loaded ``parameters.domain``, checked (ReleaseFileError otherwise)."""
    if not isinstance(doc, Mapping) or doc.get("kind") not in ("integer", "float", "datetime"):
        raise ReleaseFileError(f"{kind} release: parameters.domain must give kind 'integer', 'float' or 'datetime'")
    if doc["kind"] == "datetime":
        w = doc.get("width")
        if not (isinstance(doc.get("lower"), str) and isinstance(doc.get("upper"), str) and type(w) is int and w > 0):
            raise ReleaseFileError(f"{kind} release: a date domain gives ISO bounds and a width in nanoseconds")
        try:
            enc = encoding(doc["lower"], doc["upper"], np.timedelta64(w, "ns"))
        except DomainError as exc:
            raise ReleaseFileError(f"{kind} release: parameters.domain is malformed ({exc})") from None
    else:
        want = int if doc["kind"] == "integer" else float
        if not (type(doc.get("lower")) is want and type(doc.get("upper")) is want):
            raise ReleaseFileError(f"{kind} release: the domain bounds must be {doc['kind']}s")
        enc = encoding(doc["lower"], doc["upper"])
    if domain_document(enc) != dict(doc):
        raise ReleaseFileError(f"{kind} release: parameters.domain is malformed")
    return enc


INVALID_HINT = (
    "pass on_invalid='drop' to drop such records (a per-record policy; how many are dropped is "
    "never revealed), or clean the data first"
)


def _items(values: Any, drop: bool) -> list[Any]:
    """The records as a list (arrays of floats: NaN/infinities refused or dropped here)."""
    if isinstance(values, (str, bytes)) or values is None:
        raise DataError("values must be a sequence of numbers")
    if not isinstance(values, np.ndarray):
        try:
            return list(values)
        except TypeError as exc:
            raise DataError("values must be a sequence of numbers") from exc
    from dptree.data.inputs import _check_1d

    arr = _check_1d(values, "values")  # as range_tree: a 2-D array is refused, not flattened
    if arr.dtype.kind == "f":
        finite = np.isfinite(arr)
        if not np.all(finite):
            if not drop:
                raise DataError("values contain NaN or infinity; " + INVALID_HINT)
            arr = arr[finite]
        return list(arr.tolist())
    if arr.dtype.kind in "iu":
        return list(arr.tolist())
    if arr.dtype.kind == "O":
        return list(arr)
    from dptree.data.inputs import value_kind

    raise DataError(f"values must be numbers, got {value_kind(arr)}")


def _key(v: Any, enc: Encoding, drop: bool) -> int | None:
    """The key of one record, or None when it is dropped (``drop``) as invalid."""
    if isinstance(v, (bool, np.bool_)):
        raise DataError("values must be numbers, not bools")
    if enc.kind == "integer":
        if _is_intlike(v):
            return int(v)
        if not isinstance(v, (float, np.floating)):
            raise DataError("values must be numbers (int or float)")
        fv = float(v)
        if not math.isfinite(fv):
            if drop:
                return None
            raise DataError("values contain NaN or infinity; " + INVALID_HINT)
        if fv != math.floor(fv):
            if drop:
                return None
            raise non_integer_values_error(
                "pass float bounds (e.g. lower=0.0) to use the float encoding, or " + INVALID_HINT
            )
        return int(fv)
    if not (_is_intlike(v) or isinstance(v, (float, np.floating))):
        raise DataError("values must be numbers (int or float)")
    try:
        fv = float(v)
    except OverflowError as exc:
        if drop:
            return None
        raise DomainError(
            "a value does not fit the float64 encoding of this domain; use integer bounds, or " + INVALID_HINT
        ) from exc
    if not math.isfinite(fv):
        if drop:
            return None
        raise DataError("values contain NaN or infinity; " + INVALID_HINT)
    return _float_key(fv)


def encode_values(values: Any, enc: Encoding, on_invalid: str = "error") -> list[int]:
    """Offsets (key - lo) of the clamped values.

    NaN/infinite values (and non-integers in an integer domain) raise :class:`DataError` with a
    message that names no value, position or count, or are dropped with ``on_invalid="drop"``.
    Values of a wrong type (strings, bools) always raise (a schema error, not a data value)."""
    drop = on_invalid == "drop"
    if enc.kind == "datetime":
        from dptree.data.inputs import to_numpy

        return _encode_array(to_numpy(values, name="values"), enc, drop)[0].astype(np.int64).tolist()
    out: list[int] = []
    lo, hi = enc.lo, enc.hi
    for v in _items(values, drop):
        k = _key(v, enc, drop)
        if k is not None:
            out.append(min(max(k, lo), hi) - lo)
    return out


_INVALID_VALUES = "values contain missing values (NaN, None) or infinities; " + INVALID_HINT
_I64 = np.iinfo(np.int64)
_U64 = np.iinfo(np.uint64)


def _clamped_offsets(v: np.ndarray, enc: Encoding) -> np.ndarray:
    """Offsets (uint64) of an int64 or uint64 array clamped to the domain (|X| <= 2^64): the
    clamp runs in the array's own type, the subtraction of lo modulo 2^64 (exact: the true
    offset lies in [0, 2^64))."""
    info = np.iinfo(v.dtype)
    if enc.hi < info.min:
        return np.full(v.size, enc.size - 1, np.uint64)
    if enc.lo > info.max:
        return np.zeros(v.size, np.uint64)
    if enc.lo <= info.min and enc.hi >= info.max:  # the domain holds every value of the type
        c = v.astype(np.uint64)
    else:
        c = np.clip(v, v.dtype.type(max(enc.lo, info.min)), v.dtype.type(min(enc.hi, info.max))).astype(
            np.uint64, copy=False)
    if enc.lo % (1 << 64):
        c -= np.uint64(enc.lo % (1 << 64))
    return c


def _float_keys(v: np.ndarray) -> np.ndarray:
    """:func:`_float_key` of a float64 array (a fresh int64 array): the unsigned order-preserving keys
    of :func:`dptree.data.sorting.float_keys`, which are ``_float_key + 2^63``, shifted back."""
    keys = float_keys(v)
    keys ^= np.uint64(1 << 63)
    return keys.view(np.int64)


def _encode_array(arr: np.ndarray, enc: Encoding, drop: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """(offsets, kept positions or None for all) of finite values: uint64 offsets when
    |X| <= 2^64, vectorised; Python ints otherwise (and for object arrays), value by value."""
    kind = arr.dtype.kind
    if enc.kind == "datetime":
        return _date_offsets(arr, enc, drop)
    if kind == "M":
        raise dates_need_date_bounds_error("dates")
    if kind not in "iufO":
        raise DataError("values must be numbers (int or float)")
    if kind == "O" or enc.size > 1 << 64:
        found = [_key(v, enc, drop) for v in arr.tolist()]
        kept = [i for i, k in enumerate(found) if k is not None]
        offs = [min(max(found[i], enc.lo), enc.hi) - enc.lo for i in kept]  # type: ignore[type-var,operator]
        out = np.array(offs, dtype=np.uint64) if enc.size <= 1 << 64 else np.array(offs, dtype=object)
        return out, (None if len(kept) == arr.size else np.array(kept, dtype=np.int64))
    if enc.kind == "float":
        keys = _float_keys(arr)
        np.clip(keys, enc.lo, enc.hi, out=keys)
        out = keys.view(np.uint64)
        out -= np.uint64(enc.lo % (1 << 64))  # modulo 2^64: exact, the offsets lie in [0, 2^64)
        return out, None
    if kind in "iu":
        return _clamped_offsets(arr, enc), None
    arr = arr.astype(np.float64, copy=False)  # float16/32: the limit 2^63 below overflows them (numpy warns)
    whole = arr == np.floor(arr)
    keep = None
    if not whole.all():
        if not drop:
            raise non_integer_values_error(
                "pass float bounds (e.g. lower=0.0) to use the float encoding, or " + INVALID_HINT)
        keep = np.flatnonzero(whole)
        arr = arr[keep]
    small = np.abs(arr) < 2.0**63
    out = np.empty(arr.size, np.uint64)
    out[small] = _clamped_offsets(arr[small].astype(np.int64), enc)
    if not small.all():  # whole floats beyond int64 (rare): exact through Python ints
        out[~small] = [min(max(int(x), enc.lo), enc.hi) - enc.lo for x in arr[~small].tolist()]
    return out, keep


def _date_offsets(arr: np.ndarray, enc: Encoding, drop: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`_encode_array` for a date domain: whole units after the origin, clamped (in the values'
    own unit first, :func:`dptree.data.dates.dates_to_ns`); NaT / None refused or dropped."""
    from dptree.data.dates import as_dates, dates_to_ns

    dates = as_dates(arr)
    keep = None
    nat = np.isnat(dates)
    if nat.any():
        if not drop:
            raise DataError(_INVALID_VALUES)
        keep = np.flatnonzero(~nat)
        dates = dates[keep]
    ns = dates_to_ns(dates, enc.origin, min(enc.origin + enc.size * enc.unit - 1, int(_I64.max)))
    return ((ns - enc.origin) // enc.unit).astype(np.uint64), keep


def _exact(values: Any) -> Any:
    """A list or tuple holding integers beyond 2^53 as an object array: numpy would make it
    float64 and round them (integer domains are exact at any size)."""
    if isinstance(values, (list, tuple)) and any(
            _is_intlike(v) and not -(2**53) <= v <= 2**53 for v in values):
        return np.array(values, dtype=object)
    return values


def prepare(
    values: Any, lower: Any, upper: Any, counts: Sequence[int] | None, on_invalid: str = "error",
    column: str | None = None, width: Any = None,
) -> tuple[Encoding, Any, Any]:
    """The domain's encoding and the data as sorted distinct offsets with multiplicities.

    ``values``: anything :func:`dptree.data.histograms.value_counts` reads (arrays, lists,
    pandas/polars/Arrow, with ``column=`` a table, a CSV/Parquet file, a DuckDB relation or a
    Spark DataFrame), counted in its engine (memory O(distinct values)) and encoded vectorised:
    offsets as uint64 and multiplicities as int64 numpy arrays when |X| <= 2^64, Python ints
    beyond. ``counts``: multiplicities of in-memory ``values`` instead. ``width``: a date domain's
    resolution (:func:`encoding`).

    There is no refusal on empty data: whether the data is empty is private; the mechanisms are
    defined on the empty multiset (every quality is 0) and their output is then data-independent."""
    from dptree.data.histograms import value_counts
    from dptree.data.inputs import to_numpy

    enc = encoding(lower, upper, width)
    drop = on_invalid == "drop"
    if counts is not None and drop:
        raise InvalidParameterError("on_invalid='drop' cannot be combined with counts=; drop the rows first")
    if (isinstance(values, (str, bytes)) and column is None) or values is None:
        raise DataError("values must be a sequence of numbers")
    values = _exact(values)
    policy: Literal["error", "drop"] = "drop" if drop else "error"
    if counts is not None:
        arr = to_numpy(values, column=column, name="values")
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            raise DataError(_INVALID_VALUES)
        cnt = _count_array(counts)
        if cnt.shape != arr.shape or (cnt.size and cnt.min() < 0):
            raise DataError(_BAD_COUNTS)
    else:
        arr, cnt = value_counts(values, column=column, missing=policy, infinite=policy, message=_INVALID_VALUES,
                                domain=(enc.kind, *enc.bounds))
    return (enc, *_encode_counts(arr, cnt, enc, drop))


_BAD_COUNTS = "counts must be non-negative integers, one per value"


def _count_array(counts: Any) -> np.ndarray:
    """The caller's ``counts`` as integers: whole numbers only (NaN, infinities, fractions and text
    are refused, never truncated)."""
    cnt = np.asarray(counts)
    if cnt.dtype.kind in "iu":
        return cnt
    try:
        whole = [int(c) for c in counts]
        if any(w != c for w, c in zip(whole, counts)):
            raise ValueError("not a whole number")
        return np.array(whole, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        raise DataError(_BAD_COUNTS) from None


def prepare_groups(
    values: Any, lower: Any, upper: Any, *, by: Any, groups: Sequence[Any], unknown: Literal["error", "drop"] = "error",
    on_invalid: str = "error", column: str | None = None, width: Any = None,
) -> tuple[Encoding, list[tuple[Any, Any]]]:
    """:func:`prepare` for each public group's rows (``by``: a column of the table, file, relation
    or Spark DataFrame ``values``, or an array beside in-memory values), counted in the engine in
    one pass (:func:`dptree.data.histograms.grouped_value_counts`); in the order of ``groups``, a
    group without rows as empty arrays. Rows of unlisted groups raise or are dropped (``unknown``)."""
    from dptree.data.histograms import grouped_value_counts

    enc = encoding(lower, upper, width)
    drop = on_invalid == "drop"
    if (isinstance(values, (str, bytes)) and column is None) or values is None:
        raise DataError("values must be a sequence of numbers")
    policy: Literal["error", "drop"] = "drop" if drop else "error"
    parts = grouped_value_counts(_exact(values), column=column, by=by, groups=groups, unknown=unknown,
                                 missing=policy, infinite=policy, message=_INVALID_VALUES,
                                 domain=(enc.kind, *enc.bounds))
    return enc, [_encode_counts(arr, cnt, enc, drop) for arr, cnt in parts]


def _encode_counts(arr: np.ndarray, cnt: np.ndarray, enc: Encoding, drop: bool) -> tuple[Any, Any]:
    """Distinct values and counts (as read) as sorted distinct offsets of ``enc`` with multiplicities."""
    offs, keep = _encode_array(arr, enc, drop)
    if keep is not None:
        cnt = cnt[keep]
    if offs.dtype == object:
        return _group(offs.tolist(), cnt.tolist())
    return _group(offs, cnt)
