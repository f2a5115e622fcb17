"""Raw values of an ordered public domain: each value read on its own, then its position.

What :class:`~dptree.data.domain.Domain` reads from the caller's rows: an item of an object column
into the domain's type (:func:`coerce_values`, exactly: no record's type depends on another's), a
column of values into clamped positions (:func:`value_positions`), and the wordings of the
invalid-value policy (``on_invalid``: NaN / None / NaT, infinities, non-integers on an integer
domain raise, or with ``"drop"`` are left out; how many are dropped is never revealed).
"""

from __future__ import annotations

import math
import sys
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal, Protocol, cast

import numpy as np

from dptree.data.dates import as_dates, dates_to_ns
from dptree.data.inputs import present, to_numpy, valid_records, value_kind
from dptree.data.sorting import float_keys, key_floats
from dptree.errors import (
    RANGE_TREE_FLOAT_FIX,
    DataError,
    dates_need_date_bounds_error,
    infinite_values_error,
    missing_values_error,
    non_integer_values_error,
)

__all__ = ["Kind", "Ordered", "coerce_values", "value_positions", "read_positions", "clamped_positions",
           "whole_from", "is_int", "is_real", "float_order", "float_value", "float_item", "INVALID_HINT",
           "INVALID_VALUES"]

Kind = Literal["integer", "float", "datetime"]

INVALID_HINT = (
    "pass on_invalid='drop' to drop such records (a per-record policy; how many are dropped is never "
    "revealed), or clean the data first"
)
INVALID_VALUES = "values contain missing values (NaN, None, NaT) or infinities; " + INVALID_HINT
FLOAT_BOUNDS_FIX = "give float bounds (e.g. lower=0.0) for a float domain, or " + INVALID_HINT

_FMAX = sys.float_info.max


class Ordered(Protocol):
    """What reading values needs of a domain (:class:`~dptree.data.domain.Domain`): ``size``
    positions from ``lower`` to ``upper``, ``width`` apart (None: the float64 order)."""

    @property
    def kind(self) -> Kind: ...
    @property
    def lower(self) -> float | int: ...
    @property
    def upper(self) -> float | int: ...
    @property
    def width(self) -> float | int | None: ...
    @property
    def size(self) -> int: ...


def is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def is_real(x: Any) -> bool:
    return (is_int(x) or isinstance(x, (float, np.floating))) and not isinstance(x, bool)


def float_order(x: float) -> int:
    """The float64 order of a finite ``x`` as a signed integer (-0.0 and 0.0 share 0):
    :func:`~dptree.data.sorting.float_keys` less 2^63."""
    return int(float_keys(np.array([x], dtype=np.float64))[0]) - (1 << 63)


def float_value(k: int) -> float:
    return float(key_floats(np.array([k + (1 << 63)], dtype=np.uint64))[0])


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, (float, np.floating)) and math.isnan(v))


def integer_item(v: Any, drop: bool) -> int | None:
    """One item of an object column on an integer domain, exactly: an integer, or a whole float,
    Decimal or Fraction; None when it is invalid (missing, infinite, fractional) and ``drop``."""
    if isinstance(v, (bool, np.bool_)) or isinstance(v, (str, bytes)):
        raise DataError("values must be numbers or dates of one kind")
    if is_int(v):
        return int(v)
    if not isinstance(v, (float, np.floating, Decimal, Fraction)) and v is not None:
        raise DataError("values must be numbers or dates of one kind")
    if v is None or _missing(v) or (not isinstance(v, Fraction) and not math.isfinite(v)):
        if drop:
            return None
        raise DataError(INVALID_VALUES)
    x = math.floor(v)
    if x != v:
        if drop:
            return None
        raise non_integer_values_error(FLOAT_BOUNDS_FIX)
    return x


def float_item(v: Any, drop: bool) -> float | None:
    """One item of an object column on a float domain: a finite value beyond the doubles (10^400,
    a huge Fraction) is the largest double of its sign, which the bounds then clamp; None when it
    is missing or infinite and ``drop``."""
    if isinstance(v, (bool, np.bool_, str, bytes)):
        raise DataError("values must be numbers or dates of one kind")
    if v is None:
        f = math.nan
    else:
        try:
            f = float(v)
        except OverflowError:
            return _FMAX if v > 0 else -_FMAX
        except (TypeError, ValueError):
            raise DataError("values must be numbers or dates of one kind") from None
    if math.isinf(f) and not isinstance(v, (float, np.floating)) and not (isinstance(v, Decimal) and v.is_infinite()):
        return math.copysign(_FMAX, f)
    if not math.isfinite(f):
        if drop:
            return None
        raise DataError(INVALID_VALUES)
    return f


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


def coerce_values(values: Any, domain: Ordered, *, missing: str = "error") -> np.ndarray:
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


def value_positions(dom: Ordered, arr: np.ndarray, *, drop: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """(positions, kept indices or None for all) of a 1-D array of values on ``dom``, clamped into
    [0, size): uint64 when size <= 2^64, Python ints (an object array) beyond.

    Missing values and infinities, and non-integers on an integer domain, raise a
    :class:`DataError` naming no value, position or count, or with ``drop`` are left out (their
    indices are not in the kept ones). Values of the wrong type always raise."""
    kind = arr.dtype.kind
    if dom.kind == "datetime":
        return _date_positions(dom, arr, drop)
    if kind in "MmUS" or (kind not in "iufO"):
        if kind in "MUS":
            raise dates_need_date_bounds_error(value_kind(arr))
        raise DataError(f"values must be numbers, got {value_kind(arr)}")
    if kind == "O":
        return _item_positions(dom, arr.tolist(), drop)
    keep = None
    if kind == "f":
        finite = np.isfinite(arr)
        if not finite.all():
            if not drop:
                raise DataError(INVALID_VALUES)
            keep = np.flatnonzero(finite)
            arr = arr[keep]
    if dom.kind == "float":
        return _float_positions(dom, arr.astype(np.float64, copy=False)), keep
    if kind == "f":
        arr = arr.astype(np.float64, copy=False)  # float16/32: the limit 2^63 below overflows them
        whole = arr == np.floor(arr)
        if not whole.all():
            if not drop:
                raise non_integer_values_error(FLOAT_BOUNDS_FIX)
            kept = np.flatnonzero(whole)
            keep, arr = (kept if keep is None else keep[kept]), arr[kept]
        if dom.size > 1 << 64 or not (np.abs(arr) < 2.0**63).all():  # whole floats beyond int64: exact
            return _integer_positions(dom, [int(x) for x in arr.tolist()]), keep
        arr = arr.astype(np.int64)
    if dom.size > 1 << 64:
        return _integer_positions(dom, [int(x) for x in arr.tolist()]), keep
    return clamped_positions(dom, arr), keep


def read_positions(dom: Ordered, values: Any, *, column: str | None = None, on_invalid: str = "error") -> np.ndarray:
    """Clamped positions (uint64) on ``dom`` of the records of ``values`` (anything
    :func:`~dptree.data.inputs.to_numpy` reads), under the invalid-value policy ``on_invalid``."""
    arr = to_numpy(values, column=column)
    if arr.dtype.kind == "b":
        raise DataError("values must be numbers or dates, not True/False")
    arr = arr[valid_records(arr, dom.kind, on_invalid)]
    return value_positions(dom, arr, drop=on_invalid == "drop")[0]


def clamped_positions(dom: Ordered, v: np.ndarray) -> np.ndarray:
    """Positions (uint64) of an int64 or uint64 array clamped to an integer or date domain (size
    <= 2^64): the clamp runs in the array's own type, the subtraction of lower modulo 2^64 (exact:
    the true offset lies in [0, 2^64)), then the division by the width."""
    lo, hi = int(dom.lower), int(dom.upper)
    info = np.iinfo(v.dtype)
    if hi < info.min:
        return np.full(v.size, dom.size - 1, np.uint64)
    if lo > info.max:
        return np.zeros(v.size, np.uint64)
    if lo <= info.min and hi >= info.max:  # the domain holds every value of the type
        c = v.astype(np.uint64)
    else:
        c = np.clip(v, v.dtype.type(max(lo, info.min)), v.dtype.type(min(hi, info.max))).astype(np.uint64)
    if lo % (1 << 64):
        c -= np.uint64(lo % (1 << 64))
    if dom.width != 1:
        c //= np.uint64(cast(int, dom.width))
    return c


def _integer_positions(dom: Ordered, ints: list[int]) -> np.ndarray:
    lo, hi, w = int(dom.lower), int(dom.upper), int(cast(int, dom.width))
    offs = [(min(max(x, lo), hi) - lo) // w for x in ints]
    return np.array(offs, dtype=np.uint64 if dom.size <= 1 << 64 else object)


def _float_positions(dom: Ordered, v: np.ndarray) -> np.ndarray:
    if dom.width is None:  # the float64 order
        origin = float_order(float(dom.lower))
        keys = float_keys(v)
        np.clip(keys, np.uint64(origin + (1 << 63)), np.uint64(float_order(float(dom.upper)) + (1 << 63)), out=keys)
        keys -= np.uint64(origin + (1 << 63))
        return keys
    idx = np.floor((np.clip(v, dom.lower, dom.upper) - dom.lower) / dom.width).astype(np.int64)
    return np.minimum(idx, dom.size - 1).view(np.uint64)


def _item_positions(dom: Ordered, items: list[Any], drop: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Positions of the items of an object column, each on its own into the domain's type
    (numpy's common type of the items, float64 as soon as one is a float, would round 64-bit
    integers, so one record would move others)."""
    kept: list[int] = []
    found: list[Any] = []
    for i, v in enumerate(items):
        x = integer_item(v, drop) if dom.kind == "integer" else float_item(v, drop)
        if x is not None:
            kept.append(i)
            found.append(x)
    keep = None if len(kept) == len(items) else np.array(kept, dtype=np.int64)
    if dom.kind == "integer":
        return _integer_positions(dom, found), keep
    return _float_positions(dom, np.array(found, dtype=np.float64)), keep


def _date_positions(dom: Ordered, arr: np.ndarray, drop: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Whole widths after ``lower`` (clamped in the values' own unit first,
    :func:`~dptree.data.dates.dates_to_ns`); NaT / None refused or dropped."""
    if arr.dtype.kind == "O":  # a missing entry (None, NaN) is NaT
        arr = np.where(present(arr), arr, np.array(None, dtype=object)) if arr.size else arr
    dates = as_dates(arr)
    keep = None
    nat = np.isnat(dates)
    if nat.any():
        if not drop:
            raise DataError(INVALID_VALUES)
        keep = np.flatnonzero(~nat)
        dates = dates[keep]
    ns = dates_to_ns(dates, int(dom.lower), int(dom.upper)).view(np.uint64)
    ns -= np.uint64(int(dom.lower) % (1 << 64))  # modulo 2^64: exact, the offsets lie in [0, 2^64)
    if dom.width != 1:
        ns //= np.uint64(cast(int, dom.width))
    return ns, keep
