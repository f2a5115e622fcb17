"""Ordered public domains: map values to leaf indices (buckets) and back.

A domain is public input. Leaf i covers the bucket [lower + i*width, lower + (i+1)*width);
the last bucket also holds ``upper``. Values outside [lower, upper] are clamped into the first
or last bucket; how many were clamped is never revealed (it would depend on private data).
Smith & Ullman 2021 ("The Domain Size") discuss the choice of the bucket width gamma: a wider bucket
means less tree noise but more rounding error.

* integers: ``lower``, ``upper`` ints, ``width`` an int (default 1);
* floats: ``lower``, ``upper`` floats and a required float ``width``;
* dates and timestamps: ``numpy.datetime64`` / ``datetime`` bounds and a ``width`` timedelta
  (default one day).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

import numpy as np

from dptree.data.dates import as_dates, date_bounds, date_query_array, dates_to_ns, is_date_bound
from dptree.data.inputs import present, valid_records, value_kind
from dptree.errors import (
    RANGE_TREE_FLOAT_FIX,
    DataError,
    DomainError,
    dates_need_date_bounds_error,
    infinite_values_error,
    missing_values_error,
    non_integer_values_error,
)

__all__ = ["Domain", "make_domain", "coerce_values", "whole_from", "MAX_LEAVES"]

MAX_LEAVES = 1 << 26  # about 67 million leaves; larger trees do not fit a 24 GiB machine safely

Kind = Literal["integer", "float", "datetime"]


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_real(x: Any) -> bool:
    return (_is_int(x) or isinstance(x, (float, np.floating))) and not isinstance(x, bool)




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
            return date_query_array(x, int(self.lower) - int(self.width), int(self.upper) + int(self.width))
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

    def leaf_from(self, x: Any) -> np.ndarray:
        """Leaf index where the values >= x begin (the low end of a range, or of a histogram bin):
        on an integer domain x rounded up first (0.5 starts at 1); past the last bucket (``size``)
        when x > upper, since every record is clamped to upper. (:meth:`leaf_of` maps a point above
        upper inside the last bucket to it, right for the high end of a range, not for the low.)"""
        x = whole_from(x) if self.kind == "integer" else x
        idx = np.asarray(self.leaf_of(x))
        return np.where(np.asarray(self._query_array(x)) > self.upper, self.size, idx)

    def interpolate(self, idx: np.ndarray, frac: np.ndarray) -> np.ndarray:
        """A point ``frac`` of the way through bucket ``idx`` (integers: the bucket's value)."""
        if self.kind == "float":
            return np.minimum(self.lower + (idx + frac) * self.width, self.upper)
        if (self.kind == "integer" and self.width == 1) or self.kind == "datetime":
            return self.leaf_start(idx)  # integers and dates answer with a bucket's first value
        base = np.int64(self.lower) + idx.astype(np.int64) * np.int64(self.width)
        # frac = 1 is the bucket's top: its last value (width would be the next bucket's first)
        off = np.minimum(np.floor(frac * float(self.width)).astype(np.int64), np.int64(self.width) - 1)
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
        raise DomainError(f"lower ({lower}) must be smaller than upper ({upper})", parameter="lower")
    if width is not None and float(width) <= 0:
        raise DomainError(f"width must be > 0, got {width}", parameter="width")
    if _is_int(lower) and _is_int(upper) and (width is None or _is_int(width)):
        lo_int, hi_int = int(lower), int(upper)
        w_int = 1 if width is None else int(width)
        if abs(lo_int) >= 2**62 or abs(hi_int) >= 2**62:
            raise DomainError("integer bounds must lie within +-2^62; for wider integer keys (64-bit ids, nanosecond "
                              "timestamps) use dptree.sparse_range_tree (dptree release --sparse): a tree over "
                              "every 64-bit key, with no width")
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


def whole_from(lo: Any) -> Any:
    """The low end of ``count(lo, hi)`` on an integer domain: a fractional float rounded up (lo <=
    value: 0.5 starts at 1; the floor that query points get would count the records at 0)."""
    a = np.asarray(lo)
    return np.ceil(a) if a.dtype.kind == "f" else lo




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

    ``missing``: the declared invalid-value policy (``on_invalid``), applied by
    :func:`~dptree.data.inputs.valid_records`: NaN / None / NaT, infinities, non-integers on an
    integer domain and entries that are not numbers raise :class:`DataError`, or with ``"drop"``
    are left out. An array of the wrong type (text, dates on a numeric domain) always raises.
    Out-of-range finite values are kept (they are clamped later).
    """
    if missing not in ("error", "drop"):
        raise DataError(f"on_invalid must be 'error' or 'drop', got {missing!r}")
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
    arr = arr[valid_records(arr, domain.kind, missing)]
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
        if arr.dtype.kind in "MUS":
            raise dates_need_date_bounds_error(value_kind(arr))
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
