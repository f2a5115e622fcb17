"""Dates and timestamps of a date domain: bounds, values and query points read into nanoseconds,
each value on its own (numpy's common unit of a list wrapped dates outside 1678-2262 around), and
clamped in its own unit first. :mod:`dptree.data.domain` builds the domain over them."""

from __future__ import annotations

import datetime as _dt
import warnings
from typing import Any, cast

import numpy as np

from dptree.data.inputs import value_kind
from dptree.errors import DataError, DomainError

__all__ = ["NS_RANGE", "as_dates", "date_bounds", "dates_in_ns_range", "dates_to_ns", "is_date_bound",
           "parse_date_bound", "date_query_array"]

# Bounds are nanosecond timestamps; values are clamped in their own unit first, so a date such as
# 9999-12-31 never wraps around when converted to nanoseconds (a wrapped value would land in the
# first bucket).
_NS_MIN = np.datetime64("1677-09-22", "D")
_NS_MAX = np.datetime64("2262-04-10", "D")
#: (first, last) nanosecond timestamps dptree bounds dates by (``_NS_MIN``, ``_NS_MAX`` as int64 ns)
NS_RANGE = (int(_NS_MIN.astype("datetime64[ns]").astype(np.int64)),
            int(_NS_MAX.astype("datetime64[ns]").astype(np.int64)))


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
            raise DomainError(f"{name}={x!r} is not a number, a date or a timestamp", parameter=name) from exc
        if not np.isnat(v) and _NS_MIN <= v <= _NS_MAX:
            v = np.datetime64(x, "ns")  # in range: the instant, finer digits than ns truncated
    else:
        raise DomainError(f"{name} must be a number or a date, got {type(x).__name__}")
    if np.isnat(v):
        raise DomainError(f"{name} must not be NaT")
    if v.dtype == np.dtype("datetime64[ns]"):  # numpy's ns -> D wraps the first day of 1677-09-22 to 2262
        day = np.datetime64(int(v.astype(np.int64)) // (86_400 * 10**9), "D")
    else:
        day = v.astype("datetime64[D]")
    if not _NS_MIN <= day <= _NS_MAX:  # compared in days: no overflow
        raise DomainError(
            f"{name}={x} is outside the dates dptree can bound (nanosecond timestamps, "
            f"{_NS_MIN} to {_NS_MAX}); choose bounds in that range (values outside the bounds are clamped)"
        )
    return v.astype("datetime64[ns]")


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


def date_query_array(x: Any, lo_ns: int, hi_ns: int) -> np.ndarray:
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


def dates_in_ns_range(arr: np.ndarray) -> np.ndarray:
    """Dates, datetimes, datetime64 scalars or ISO text (a 1-D object or text array) as
    datetime64[ns], each value read on its own: one before 1677-09-22 or after 2262-04-10 becomes
    that day (every date bound lies inside it, so the domain's clamp is unchanged), a time with a UTC
    offset is that instant in UTC, digits finer than ns are truncated; None and 'NaT' stay NaT.

    numpy reads a whole array at the finest unit any value has, so one value with nanosecond
    digits would put every value in datetime64[ns], where dates outside 1678-2262 wrap around
    silently (1500-01-01 becomes 2084-07-20): one record would move every other. Here the day of
    each value is read first (no wrap at any year), and the instant only where the day is in range."""
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
