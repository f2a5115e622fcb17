"""Ordered public domains: map values to leaf indices (buckets) and back.

A domain is public input. Leaf i covers the bucket [lower + i*width, lower + (i+1)*width);
the last bucket also holds ``upper``. Values outside [lower, upper] are clamped into the first
or last bucket; how many were clamped is never revealed (it would depend on private data).
Seed 003 ("The Domain Size") discusses the choice of the bucket width gamma: a wider bucket
means less tree noise but more rounding error.

* integers: ``lower``, ``upper`` ints, ``width`` an int (default 1);
* floats: ``lower``, ``upper`` floats and a required float ``width``;
* dates and timestamps: ``numpy.datetime64`` / ``datetime`` bounds and a ``width`` timedelta
  (default one day).
"""

from __future__ import annotations

import datetime as _dt
import math
import sys
import warnings
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, cast

import numpy as np

from dptree.data.inputs import present
from dptree.errors import (
    RANGE_TREE_FLOAT_FIX,
    DataError,
    DomainError,
    infinite_values_error,
    missing_values_error,
    non_integer_values_error,
)

__all__ = ["Domain", "make_domain", "coerce_values", "as_dates", "dates_in_ns_range", "value_kind", "whole_from", "date_bounds", "is_date_bound", "parse_date_bound",
           "MAX_LEAVES"]

MAX_LEAVES = 1 << 26  # about 67 million leaves; larger trees do not fit a 24 GiB machine safely

Kind = Literal["integer", "float", "datetime"]


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x: Any) -> bool:
    return (_is_int(x) or isinstance(x, (float, np.floating))) and not isinstance(x, bool)


def parse_date_bound(x: Any, name: str) -> np.datetime64:
    """A date bound (datetime64, date/datetime or ISO text) as datetime64[ns], checked to lie in the
    nanosecond range (1678-2262: beyond it a conversion to nanoseconds would wrap around silently).
    DomainError otherwise, naming ``name``."""
    if isinstance(x, str):
        try:
            x = _dt.datetime.fromisoformat(x.strip()) if "+" in x or x.rstrip().endswith("Z") else x
        except ValueError:
            pass  # not ISO with an offset: numpy reads it below, or says it is not a date
    if isinstance(x, _dt.datetime) and x.tzinfo is not None:  # a time with an offset: the same instant in UTC
        x = x.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    if isinstance(x, np.datetime64):
        v = x
    elif isinstance(x, (_dt.datetime, _dt.date)):
        v = np.datetime64(x)
    elif isinstance(x, str):
        try:
            float(x)
        except ValueError:
            pass
        else:  # numpy would read "0" as the year 0
            raise DomainError(f"{name}={x!r} is text: give a number ({name}={x.strip()}) or an ISO date "
                              "such as '2024-01-31'")
        try:
            v = np.datetime64(x, "D")  # the day first: text read at its own unit wraps past that unit's years
        except ValueError as exc:
            raise DomainError(f"{name}={x!r} is not a number, a date or a timestamp") from exc
        if not np.isnat(v) and _NS_MIN <= v <= _NS_MAX:
            v = np.datetime64(x, "ns")  # in range: the instant, finer digits than ns truncated
    else:
        raise DomainError(f"{name} must be a number or a date, got {type(x).__name__}")
    if np.isnat(v):
        raise DomainError(f"{name} must not be NaT")
    if not _NS_MIN <= v.astype("datetime64[D]") <= _NS_MAX:  # compared in days: no overflow
        raise DomainError(
            f"{name}={x} is outside the dates dptree can bound (nanosecond timestamps, "
            f"{_NS_MIN} to {_NS_MAX}); choose bounds in that range (values outside the bounds are clamped)"
        )
    return v.astype("datetime64[ns]")


# Bounds are nanosecond timestamps; values are clamped in their own unit first, so a date such as
# 9999-12-31 never wraps around when converted to nanoseconds (it used to land in the first bucket).
_NS_MIN = np.datetime64("1677-09-22", "D")
_NS_MAX = np.datetime64("2262-04-10", "D")
#: (first, last) nanosecond timestamps dptree bounds dates by (``_NS_MIN``, ``_NS_MAX`` as int64 ns)
NS_RANGE = (int(_NS_MIN.astype("datetime64[ns]").astype(np.int64)),
            int(_NS_MAX.astype("datetime64[ns]").astype(np.int64)))


def dates_to_ns(a: np.ndarray, lo_ns: int, hi_ns: int) -> np.ndarray:
    """int64 nanoseconds of the datetime64 array ``a``, clamped to [lo_ns, hi_ns] in ``a``'s own
    unit before the conversion (which would otherwise overflow outside 1678-2262)."""
    unit, _ = np.datetime_data(a.dtype)
    if unit in ("Y", "M", "W", "generic"):
        a = a.astype("datetime64[D]")  # calendar units have no fixed length; days hold any year
        unit = "D"
    per = int(np.timedelta64(1, cast(Any, unit)).astype("timedelta64[ns]").astype(np.int64))
    if unit in ("ps", "fs", "as"):
        return a.astype("datetime64[ns]").astype(np.int64)  # finer than ns: the span is tiny anyway
    raw = a.astype(np.int64)
    nat = np.isnat(a)
    lo_u, hi_u = lo_ns // int(per), -(-hi_ns // int(per))  # floor and ceiling in the source unit
    out = np.clip(raw, lo_u, hi_u) * np.int64(per)
    out = np.clip(out, lo_ns, hi_ns)
    return np.where(nat, np.iinfo(np.int64).min, out)  # NaT stays NaT


_DATE_SCALARS = (np.datetime64, _dt.date, str)


def _date_query_array(x: Any, lo_ns: int, hi_ns: int) -> np.ndarray:
    """Query points of a date domain as int64 nanoseconds, clamped to [lo_ns, hi_ns]; only dates,
    datetimes or date strings."""
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise DataError(f"query points must be dates: {exc}") from exc
    if a.dtype.kind == "M":
        out = a
    elif a.dtype.kind in "OU":
        flat = a.ravel().tolist()
        if not all(isinstance(v, _DATE_SCALARS) for v in flat):
            raise DataError("query points of a date domain must be dates, datetimes or ISO date strings")
        try:
            out = dates_in_ns_range(np.asarray(flat, dtype=object)).reshape(a.shape)
        except (TypeError, ValueError, OverflowError) as exc:
            raise DataError(f"query point is not a valid date: {exc}") from exc
    else:
        raise DataError(f"query points of a date domain must be dates, got {a.dtype}")
    if np.any(np.isnat(out)):
        raise DataError("query points must not be NaT / missing")
    return dates_to_ns(out, lo_ns, hi_ns)


@dataclass(frozen=True)
class Domain:
    """A public ordered domain of ``size`` buckets of equal ``width`` starting at ``lower``.

    For datetimes, ``lower``/``upper``/``width`` are stored as int64 nanoseconds.
    """

    kind: Kind
    lower: float | int
    upper: float | int
    width: float | int
    size: int

    # ------------------------------------------------------------------ value -> leaf
    def to_leaves(self, values: np.ndarray) -> np.ndarray:
        """Leaf index of each value (clamped into [0, size-1]); ``values`` already coerced."""
        if self.kind == "integer":
            v = values.astype(np.int64, copy=False)
            if self.width == 1:
                # Clamping is a no-op when every value is in range; checking min/max first saves
                # a pass over the data. The output is the same either way, so nothing released
                # depends on this branch.
                if v.size and self.lower <= v.min() and v.max() <= self.upper:
                    return v - np.int64(self.lower) if self.lower else v
                idx = np.clip(v, self.lower, self.upper) - np.int64(self.lower)
            else:
                idx = (np.clip(v, self.lower, self.upper) - np.int64(self.lower)) // np.int64(self.width)
        elif self.kind == "datetime":
            v = dates_to_ns(values, int(self.lower), int(self.upper))
            idx = (np.clip(v, self.lower, self.upper) - np.int64(self.lower)) // np.int64(self.width)
        else:
            v = values.astype(np.float64, copy=False)
            idx = np.floor((np.clip(v, self.lower, self.upper) - self.lower) / self.width).astype(np.int64)
        return np.minimum(idx, self.size - 1)

    def leaf_of(self, x: Any) -> np.ndarray:
        """Leaf index of query points (public), *not* clamped: may be < 0 or >= size."""
        arr = self._query_array(x)
        if self.kind in ("integer", "datetime"):
            # points beyond the domain act like its ends; clamping first keeps int64 exact
            lo, hi = int(self.lower) - int(self.width), int(self.upper) + int(self.width)
            return np.floor_divide(np.clip(arr, lo, hi) - int(self.lower), int(self.width))
        arr = np.clip(arr, self.lower - self.width, self.upper + self.width)
        out = np.floor((arr - self.lower) / self.width).astype(np.int64)
        # the last bucket is closed at upper
        return np.where(arr == self.upper, self.size - 1, out)

    def _query_array(self, x: Any) -> np.ndarray:
        if self.kind == "datetime":
            # points beyond the domain act like its ends (leaf_of clamps to one bucket beyond)
            return _date_query_array(x, int(self.lower) - int(self.width), int(self.upper) + int(self.width))
        try:
            a = np.asarray(x)
        except (TypeError, ValueError) as exc:
            raise DataError(f"query points must be numbers: {exc}") from exc
        if a.dtype.kind not in "iuf":
            raise DataError(f"query points must be numbers, got {a.dtype}")
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            raise DataError("query points must be finite")
        if self.kind == "integer":
            if a.dtype.kind == "f":
                return np.floor(np.clip(a, -(2.0**62), 2.0**62)).astype(np.int64)
            if a.dtype.kind == "u":
                return np.minimum(a, np.uint64(2**62)).astype(np.int64)
            return a.astype(np.int64)
        return a.astype(np.float64)

    # ------------------------------------------------------------------ leaf -> value
    def leaf_start(self, idx: np.ndarray) -> np.ndarray:
        """The smallest value of each bucket, in domain units (float for floats, int otherwise)."""
        idx = np.asarray(idx)
        if self.kind == "float":
            return self.lower + idx * self.width
        start = np.int64(self.lower) + idx.astype(np.int64) * np.int64(self.width)
        if self.kind == "datetime":
            return start.astype("datetime64[ns]")
        return start

    def leaf_end(self, idx: np.ndarray) -> Any:
        """The top of each bucket as an interval end: the bucket's upper edge for floats (capped at
        ``upper``), its last value for integers, its start for dates (bucket resolution)."""
        idx = np.asarray(idx)
        if self.kind == "float":
            return np.minimum(self.lower + (idx + 1) * self.width, self.upper)
        if self.kind == "datetime":
            return self.leaf_start(idx)
        return np.minimum(np.int64(self.lower) + (idx + 1) * np.int64(self.width) - 1, np.int64(self.upper))

    def interpolate(self, idx: np.ndarray, frac: np.ndarray) -> np.ndarray:
        """A point ``frac`` of the way through bucket ``idx`` (integers: the bucket's value)."""
        if self.kind == "float":
            return np.minimum(self.lower + (idx + frac) * self.width, self.upper)
        if (self.kind == "integer" and self.width == 1) or self.kind == "datetime":
            return self.leaf_start(idx)  # integers and dates answer with a bucket's first value
        base = np.int64(self.lower) + idx.astype(np.int64) * np.int64(self.width)
        off = np.floor(frac * float(self.width)).astype(np.int64)
        out = np.minimum(base + off, np.int64(self.upper))
        return out.astype("datetime64[ns]") if self.kind == "datetime" else out

    def format_value(self, v: Any) -> str:
        """A public value of this domain as text (dates in ISO format)."""
        if self.kind == "datetime":
            return str(np.datetime64(int(v), "ns")).replace("T00:00:00.000000000", "")
        return f"{v:g}" if self.kind == "float" else str(v)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "lower": self.lower,
            "upper": self.upper,
            "width": self.width,
            "size": self.size,
        }


def is_date_bound(x: Any) -> bool:
    """Whether a bound asks for a date domain: a numpy datetime64, a date/datetime or text."""
    return isinstance(x, (np.datetime64, _dt.date, str))


def date_bounds(lower: Any, upper: Any, width: Any = None) -> tuple[int, int, int]:
    """(lower, upper, width) of a date domain as int64 nanoseconds, checked: dates, datetimes or ISO
    text for the bounds, a timedelta for ``width`` (default one day). DomainError otherwise."""
    for name, b in (("lower", lower), ("upper", upper)):
        if isinstance(b, str):
            parse_date_bound(b, name)  # text that is not a date: named first
    if not (is_date_bound(lower) and is_date_bound(upper)):
        raise DomainError(f"lower and upper must both be dates or both be numbers, got {type(lower).__name__} and "
                          f"{type(upper).__name__}")
    lo = parse_date_bound(lower, "lower")
    hi = parse_date_bound(upper, "upper")
    if width is None:
        w_ns = 86_400 * 10**9
    elif isinstance(width, (_dt.timedelta, np.timedelta64)):
        w_ns = int(np.timedelta64(width).astype("timedelta64[ns]").astype(np.int64))
    elif isinstance(width, str):
        raise DomainError("width for dates must be a timedelta, e.g. datetime.timedelta(days=1)")
    else:
        raise DomainError("width for dates must be a datetime.timedelta or numpy.timedelta64")
    lo_i, hi_i = int(lo.astype(np.int64)), int(hi.astype(np.int64))  # nanoseconds
    if lo_i >= hi_i:
        raise DomainError(f"lower ({lower}) must be before upper ({upper})")
    if w_ns <= 0:
        raise DomainError("width must be a positive duration")
    return lo_i, hi_i, w_ns


def make_domain(lower: Any, upper: Any, width: Any = None) -> Domain:
    """Build and validate a public domain from user-facing bounds.

    Raises :class:`DomainError` for lower >= upper, width <= 0, non-finite bounds, a width of
    the wrong kind, or a domain with more than ``MAX_LEAVES`` buckets (before allocating).
    """
    if lower is None or upper is None:
        raise DomainError("lower and upper are required: the domain must be public, not derived from data "
                          "(range_tree(bounds='private') spends a share of epsilon to find them)")
    if is_date_bound(lower) or is_date_bound(upper):
        lo_i, hi_i, w_ns = date_bounds(lower, upper, width)
        size = (hi_i - lo_i) // w_ns + 1
        _check_size(size)
        return Domain("datetime", lo_i, hi_i, w_ns, int(size))
    if not _is_real(lower) or not _is_real(upper):
        raise DomainError(
            f"lower and upper must be numbers or dates, got {type(lower).__name__} and {type(upper).__name__}"
        )
    if width is not None and (not _is_real(width)):
        raise DomainError(f"width must be a number, got {type(width).__name__}")
    if not (math.isfinite(float(lower)) and math.isfinite(float(upper))):
        raise DomainError("lower and upper must be finite")
    if width is not None and not math.isfinite(float(width)):
        raise DomainError("width must be finite")
    if (int(lower) >= int(upper)) if _is_int(lower) and _is_int(upper) else float(lower) >= float(upper):
        raise DomainError(f"lower ({lower}) must be smaller than upper ({upper})")
    if width is not None and float(width) <= 0:
        raise DomainError(f"width must be > 0, got {width}")
    if _is_int(lower) and _is_int(upper) and (width is None or _is_int(width)):
        lo_int, hi_int = int(lower), int(upper)
        w_int = 1 if width is None else int(width)
        if abs(lo_int) >= 2**62 or abs(hi_int) >= 2**62:
            raise DomainError("integer bounds must lie within +-2^62")
        n_buckets = (hi_int - lo_int) // w_int + 1
        _check_size(n_buckets)
        return Domain("integer", lo_int, hi_int, w_int, int(n_buckets))
    if width is None:
        raise DomainError(
            "real-valued bounds need a public bucket width, e.g. width=0.01 "
            "(or pass integer lower/upper for an integer domain)"
        )
    lo_f, hi_f, w_f = float(lower), float(upper), float(width)
    span = (hi_f - lo_f) / w_f
    if not math.isfinite(span) or span > MAX_LEAVES:
        raise DomainError(
            f"the domain has more than {MAX_LEAVES} buckets of width {w_f:g}: choose a larger width or narrower bounds"
        )
    size_f = math.floor(span) + 1
    if (hi_f - lo_f) / w_f == math.floor((hi_f - lo_f) / w_f):
        size_f -= 1  # upper sits exactly on a bucket edge: it belongs to the last full bucket
    size = max(int(size_f), 1)
    _check_size(size)
    if size < 2:
        raise DomainError("the domain must have at least two buckets: use a smaller width")
    return Domain("float", lo_f, hi_f, w_f, size)


def _check_size(size: int) -> None:
    if size > MAX_LEAVES:
        raise DomainError(
            f"the domain has {size} buckets, more than the supported {MAX_LEAVES}: "
            "choose a larger width or narrower bounds"
        )
    if size < 2:
        raise DomainError("the domain must have at least two buckets")


def dates_in_ns_range(arr: np.ndarray) -> np.ndarray:
    """Dates, datetimes, datetime64 scalars or ISO text (a 1-D object or text array) as
    datetime64[ns], each value read on its own: one before 1677-09-22 or after 2262-04-10 becomes
    that day (every date bound lies inside it, so the domain's clamp is unchanged), a time with a UTC
    offset is that instant in UTC, digits finer than ns are truncated; None and 'NaT' stay NaT.

    numpy reads a whole array at the finest unit any value has, so one value with nanosecond
    digits used to put every value in datetime64[ns], where dates outside 1678-2262 wrap around
    silently (1500-01-01 became 2084-07-20): one record moved every other. Here the day of each
    value is read first (no wrap at any year), and the instant only where the day is in range."""
    with warnings.catch_warnings():  # an offset: numpy reads the instant in UTC, and says it has no zones
        warnings.filterwarnings("ignore", message="no explicit representation of timezones")
        days = arr.astype("datetime64[D]")
        out = np.full(arr.shape, np.datetime64("NaT"), "datetime64[ns]")
        inside = (days >= _NS_MIN) & (days <= _NS_MAX)
        out[inside] = arr[inside].astype("datetime64[ns]")
    out[days < _NS_MIN] = _NS_MIN
    out[days > _NS_MAX] = _NS_MAX
    return out


def as_dates(arr: np.ndarray) -> np.ndarray:
    """A 1-D array as datetime64 (NaT kept; None becomes NaT): a datetime64 array as it is (in its
    own unit, clamped in that unit by :func:`dates_to_ns`), dates, datetimes or ISO text through
    :func:`dates_in_ns_range` (each value on its own, no wrap-around at any year). DataError for
    anything else, naming the kinds of value a date domain takes."""
    if arr.dtype.kind == "M":
        return arr
    if arr.dtype.kind in "OU" or arr.size == 0:
        if arr.dtype.kind == "O" and not all(v is None or isinstance(v, _DATE_SCALARS) for v in arr.tolist()):
            raise DataError("a date domain needs dates, datetimes or ISO date strings as values")
        try:
            return dates_in_ns_range(arr) if arr.size else np.empty(0, "datetime64[ns]")
        except (ValueError, TypeError, OverflowError):
            raise DataError(
                "values are not all dates: a date domain needs dates, datetimes or ISO date strings") from None
    raise DataError(f"a date domain needs dates, datetimes or ISO date strings as values, got {value_kind(arr)}")


def whole_from(lo: Any) -> Any:
    """The low end of ``count(lo, hi)`` on an integer domain: a fractional float rounded up (lo <=
    value: 0.5 starts at 1; the floor that query points get would count the records at 0)."""
    a = np.asarray(lo)
    return np.ceil(a) if a.dtype.kind == "f" else lo


def value_kind(arr: np.ndarray) -> str:
    """What kind of values an array holds, in words from its kind alone: never its dtype, which
    numpy infers from the values of a list (int64 or float64, the longest string's length)."""
    return {"i": "numbers", "u": "numbers", "f": "numbers", "b": "True/False", "S": "bytes", "U": "text",
            "m": "time spans (timedelta)", "M": "dates"}.get(arr.dtype.kind, "objects")


def _object_item(v: Any, integer: bool) -> int | float:
    """One number of an object column (Python int of any size, float, Decimal, Fraction) for an
    integer domain (exact, clamped to +-2^62 like any value outside the bounds; a fraction refused,
    never truncated) or a float domain (a finite value beyond the doubles becomes the largest double,
    then the bounds clamp it; only a true infinity is one)."""
    if isinstance(v, (int, np.integer)):
        x = max(min(int(v), 2**62), -(2**62))
        return x if integer else float(x)
    try:
        f = float(v)
    except OverflowError:  # a Fraction beyond the doubles
        f = math.inf if v > 0 else -math.inf
    if math.isinf(f) and not isinstance(v, (float, np.floating)) and not (isinstance(v, Decimal) and v.is_infinite()):
        f = math.copysign(sys.float_info.max, f)  # finite, only beyond the doubles
    if not integer:
        return f
    if math.isinf(f):
        raise infinite_values_error()
    if abs(f) >= 2.0**62:
        return int(math.copysign(2**62, f))
    if v != int(v):  # exact for Decimal and Fraction too
        raise non_integer_values_error(RANGE_TREE_FLOAT_FIX)  # never floored silently
    return int(v)


def coerce_values(values: Any, domain: Domain, *, missing: str = "error") -> np.ndarray:
    """Turn user data into a 1-D numpy array fit for ``domain``, validating it.

    NaN / None / NaT raise :class:`DataError` unless ``missing="drop"``; infinities and values of
    the wrong type always raise. Out-of-range finite values are kept (they are clamped later).
    """
    if missing not in ("error", "drop"):
        raise DataError(f"missing must be 'error' or 'drop', got {missing!r}")
    if isinstance(values, (str, bytes)):
        raise DataError("values must be an array of numbers, not a string")
    if isinstance(values, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in values):
        raise DataError("values must be numbers; found True/False (convert booleans explicitly if intended)")
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError):
        raise DataError("values cannot be read as a one-dimensional array of numbers or dates") from None
    if arr.ndim == 0:
        raise DataError("values must be a one-dimensional array, got a scalar")
    if arr.ndim != 1:
        raise DataError(f"values must be one-dimensional (one column), got a {arr.ndim}-dimensional array")
    if domain.kind == "datetime":
        out = as_dates(arr)
        nat = np.isnat(out)
        if nat.any():
            if missing == "error":
                raise missing_values_error(cli_flag=False)
            out = out[~nat]
        return out
    if arr.dtype.kind == "O":
        has_none = ~present(arr) if arr.size else np.zeros(0, bool)
        if has_none.any():
            if missing == "error":
                raise missing_values_error(cli_flag=False)
            arr = arr[~has_none]
        items = arr.tolist()
        if any(isinstance(v, (str, bytes, bool, np.bool_)) for v in items):
            raise DataError("values must be numbers; found a non-numeric entry (text or True/False)")
        integer = domain.kind == "integer"
        try:  # each item on its own, into the domain's type: the array's type never depends on other records
            arr = np.array([_object_item(v, integer) for v in items], dtype=np.int64 if integer else np.float64)
        except DataError:
            raise
        except (TypeError, ValueError, ArithmeticError):
            raise DataError("values must be numbers; found a non-numeric entry") from None
    if arr.size == 0:
        return arr.astype(np.float64 if domain.kind == "float" else np.int64)
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise DataError(f"values must be numbers, got {value_kind(arr)}")
    if arr.dtype.kind == "f":
        nan = np.isnan(arr)
        if nan.any():
            if missing == "error":
                raise missing_values_error(cli_flag=False)
            arr = arr[~nan]
        if np.isinf(arr).any():
            raise infinite_values_error()
        if domain.kind == "integer":
            if not np.array_equal(arr, np.floor(arr)):
                raise non_integer_values_error(RANGE_TREE_FLOAT_FIX)  # never floored silently
            return np.clip(arr.astype(np.float64, copy=False), -(2.0**62), 2.0**62).astype(np.int64)
        return arr
    if arr.dtype.kind == "u":
        arr = np.minimum(arr, np.uint64(2**62)).astype(np.int64)
    return arr
