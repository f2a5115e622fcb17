"""Ordered public domains: one type for every product, mapping values to positions and back.

A domain is public input: ``size`` positions from ``lower`` to ``upper``. Position i covers
[lower + i*width, lower + (i+1)*width); the last also holds ``upper``. Values outside
[lower, upper] are clamped into the first or last position; how many were clamped is never
revealed (it would depend on private data).

* integers: ``lower``, ``upper`` ints, ``width`` an int (1: every integer is a point);
* floats: ``lower``, ``upper`` floats and a float ``width`` (buckets), or ``width=None``: the
  float64 order, every double between the bounds a point (-0.0 and 0.0 are one);
* dates and timestamps: bounds as int64 nanoseconds and a ``width`` in nanoseconds (a timedelta
  at construction, default one day; 1 ns for a tree over every timestamp).

Three constructors for the products' domains: :func:`make_domain` (a range tree's buckets, at most
:data:`MAX_LEAVES`; Smith & Ullman 2021, "The Domain Size", discuss the choice of the bucket width:
a wider bucket means less tree noise but more rounding error), :func:`point_domain` (every point of
the bounds, integers of any size: the interior-point and quantile mechanisms) and
:func:`key_domain` (bounds within 64 bits, or every 64-bit key of a column's type: the sparse range
tree).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from dptree.data.dates import (
    NS_RANGE,
    as_dates,
    date_bounds,
    date_query_array,
    dates_to_ns,
    is_date_bound,
    parse_date_bound,
)
from dptree.data.inputs import present, value_kind
from dptree.data.sorting import float_keys, key_floats
from dptree.data.values import (
    Kind,
    clamped_positions,
    coerce_values,
    float_item,
    float_order,
    float_value,
    is_int,
    is_real,
    read_positions,
    value_positions,
    whole_from,
)
from dptree.errors import DataError, DomainError

__all__ = ["Domain", "make_domain", "point_domain", "key_domain", "coerce_values", "MAX_LEAVES"]

MAX_LEAVES = 1 << 26  # about 67 million leaves; larger trees do not fit a 24 GiB machine safely

_SIGN = np.uint64(1 << 63)
_U64_MAX = (1 << 64) - 1
_FMAX = sys.float_info.max
_NS_LO = -(2**63) + 1  # int64 min is NaT
_NS_HI = 2**63 - 1


@dataclass(frozen=True)
class Domain:
    """A public ordered domain of ``size`` positions from ``lower``.

    ``width`` is the step between positions: an int for integers (1: every integer), a float for
    buckets of floats, None for the float64 order (every double between the bounds is a point),
    int64 nanoseconds for dates (``lower``/``upper`` are int64 nanoseconds too).
    """

    kind: Kind
    lower: float | int
    upper: float | int
    width: float | int | None
    size: int

    # ------------------------------------------------------------------ public description
    @property
    def bits(self) -> int:
        """A binary tree over the positions has 2^bits leaves (at least 2)."""
        return max((self.size - 1).bit_length(), 1)

    @property
    def step(self) -> float | int:
        """``width`` of a domain of buckets: every domain but the float64 order, which has none."""
        assert self.width is not None, "the float64 order has no width"
        return self.width

    @property
    def resolution(self) -> np.timedelta64 | None:
        """A date domain's width as a timedelta; None for numbers."""
        return np.timedelta64(int(self.step), "ns") if self.kind == "datetime" else None

    @property
    def bounds(self) -> tuple[Any, Any]:
        """(lower, upper) as public values: Python numbers, or datetime64[ns] for dates."""
        if self.kind == "datetime":
            return np.datetime64(int(self.lower), "ns"), np.datetime64(int(self.upper), "ns")
        return self.lower, self.upper

    @property
    def key_kind(self) -> str:
        """The kind as a sparse tree's release file names it: integers are ``"uint"`` when the
        domain needs unsigned 64-bit values (lower >= 0, upper >= 2^63), else ``"int"``."""
        if self.kind == "integer":
            return "uint" if int(self.lower) >= 0 and int(self.upper) >= 1 << 63 else "int"
        return self.kind

    @cached_property
    def _origin(self) -> int:
        """The integer order of ``lower``: the value, its nanoseconds, or its float64 order."""
        return float_order(float(self.lower)) if self.kind == "float" else int(self.lower)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "lower": self.lower, "upper": self.upper, "width": self.width, "size": self.size}

    def format_value(self, v: Any) -> str:
        """A public value of this domain as text (dates in ISO format)."""
        if self.kind == "datetime":
            return str(np.datetime64(int(v), "ns")).replace("T00:00:00.000000000", "")
        return f"{v:g}" if self.kind == "float" else str(v)

    # ------------------------------------------------------------------ values -> positions
    def positions(self, arr: np.ndarray, *, drop: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
        """(positions, kept indices or None for all) of a 1-D array of values, clamped into
        [0, size) (:func:`~dptree.data.values.value_positions`)."""
        return value_positions(self, arr, drop=drop)

    def to_leaves(self, values: np.ndarray) -> np.ndarray:
        """Bucket (int64) of each value of a range tree's domain (at most 2^26 buckets), clamped;
        ``values`` already coerced (:func:`~dptree.data.values.coerce_values`)."""
        if self.kind == "integer":
            v = values.astype(np.int64, copy=False)
            # Clamping is a no-op when every value is in range; checking min/max first saves a pass
            # over the data. The output is the same either way, so nothing released depends on it.
            if self.width == 1 and v.size and self.lower <= v.min() and v.max() <= self.upper:
                return v - np.int64(self.lower) if self.lower else v
            return clamped_positions(self, v).view(np.int64)
        return self.positions(values)[0].view(np.int64)

    def read_positions(self, values: Any, *, column: str | None = None, on_invalid: str = "error") -> np.ndarray:
        """Clamped positions (uint64) of the records of ``values`` (anything
        :func:`~dptree.data.inputs.to_numpy` reads), under the invalid-value policy ``on_invalid``."""
        return read_positions(self, values, column=column, on_invalid=on_invalid)

    # ------------------------------------------------------------------ query points
    @property
    def key_range(self) -> tuple[int, int]:
        """(lower, upper) as 64-bit order keys (:meth:`query_keys`)."""
        if self.kind == "integer":
            return self._int_key(int(self.lower)), self._int_key(int(self.upper))
        if self.kind == "float":
            return float_order(float(self.lower)) + (1 << 63), float_order(float(self.upper)) + (1 << 63)
        return int(self.lower) + (1 << 63), int(self.upper) + (1 << 63)

    def query_keys(self, x: Any) -> np.ndarray:
        """Order-preserving uint64 keys (not clamped) of public query points of a domain within 64
        bits: integers as ``v + 2^63`` (unsigned domains: ``v``), floats by their float64 order
        (:func:`~dptree.data.sorting.float_keys`), dates as nanoseconds + 2^63; a fractional point
        on an integer domain floored."""
        if self.kind == "datetime":
            try:
                arr = np.atleast_1d(np.asarray(x))
            except (TypeError, ValueError) as exc:
                raise DataError("query points of a date domain must be dates or timestamps") from exc
            if arr.dtype.kind != "M":  # text, dates, datetimes: each on its own (no wrap-around)
                arr = as_dates(arr)
            if np.isnat(arr).any():
                raise DataError("query points must not be NaT")
            ns = dates_to_ns(arr, *NS_RANGE)  # beyond the range dates are bounded in: its ends
            return ns.view(np.uint64) ^ _SIGN
        arr = np.atleast_1d(np.asarray(x))
        kind = arr.dtype.kind
        if kind not in "iufO" or kind == "b":
            raise DataError(f"query points must be numbers, got {value_kind(arr)}")
        if kind == "O":
            if (~present(arr)).any() or any(isinstance(v, float) and math.isinf(v) for v in arr.tolist()):
                raise DataError("query points must be finite numbers or dates, not None, NaN or infinities")
            if any(isinstance(v, (bool, np.bool_, str, bytes)) for v in arr.tolist()):
                raise DataError("query points must be numbers")
            if self.kind == "integer":
                return np.array([self._int_key(math.floor(v)) for v in arr.tolist()], dtype=np.uint64)
            arr = np.array([float_item(v, False) for v in arr.tolist()], dtype=np.float64)
            kind = "f"
        if kind == "f" and not np.isfinite(arr).all():
            raise DataError("query points must be finite")
        if self.kind == "float":
            return float_keys(arr.astype(np.float64, copy=False))
        unsigned = self.key_kind == "uint"
        if kind == "f":
            arr = np.floor(arr.astype(np.float64, copy=False))
            lim, low = (2.0**64, 0.0) if unsigned else (2.0**63, -(2.0**63))
            safe = np.clip(arr, low, np.nextafter(lim, 0))
            keys = safe.astype(np.uint64) if unsigned else safe.astype(np.int64).view(np.uint64) ^ _SIGN
            return np.where(arr >= lim, np.uint64(_U64_MAX), np.where(arr < low, np.uint64(0), keys))
        if not unsigned:
            if kind == "u":
                return np.where(arr >= _SIGN, np.uint64(_U64_MAX), arr.astype(np.uint64) ^ _SIGN)
            return arr.astype(np.int64, copy=False).view(np.uint64) ^ _SIGN
        if kind == "i":
            a = arr.astype(np.int64, copy=False)
            return np.where(a < 0, np.int64(0), a).view(np.uint64)
        return arr.astype(np.uint64, copy=False)

    def _int_key(self, v: int) -> int:
        base = 0 if self.key_kind == "uint" else 1 << 63
        return min(max(v + base, 0), _U64_MAX)

    def query_positions(self, x: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(positions clamped into the domain, below lower, above upper) of public query points of
        a domain of width 1 within 64 bits."""
        keys = self.query_keys(x)
        lo, hi = (np.uint64(k) for k in self.key_range)
        return np.clip(keys, lo, hi) - lo, keys < lo, keys > hi

    # ------------------------------------------------------------------ positions -> values
    def value_at(self, position: int) -> Any:
        """The value at ``position`` (clamped to the domain): a Python int or float, or a
        datetime64[ns]."""
        p = min(max(int(position), 0), self.size - 1)
        if self.kind == "float":
            return float_value(self._origin + p) if self.width is None else self.lower + p * self.width
        v = int(self.lower) + p * int(self.step)
        return np.datetime64(v, "ns") if self.kind == "datetime" else v

    def values_at(self, positions: np.ndarray) -> np.ndarray:
        """The values at ``positions`` (clamped to the domain), vectorised (a domain within 64 bits)."""
        off = np.minimum(np.asarray(positions, dtype=np.uint64), np.uint64(self.size - 1))
        return self.leaf_start(off)

    def leaf_start(self, idx: np.ndarray) -> np.ndarray:
        """The smallest value of each position's bucket (not clamped), in domain units: float for
        floats, datetime64[ns] for dates, int64 (uint64 for an unsigned domain) for integers."""
        idx = np.asarray(idx)
        if self.kind == "float":
            if self.width is None:
                return key_floats(idx.astype(np.uint64) + np.uint64(self._origin + (1 << 63)))
            return self.lower + idx * self.width
        # modulo 2^64: exact, every value lies in the int64 (or, unsigned, the uint64) range
        start = idx.astype(np.uint64) * np.uint64(self.step) + np.uint64(int(self.lower) % (1 << 64))
        if self.key_kind == "uint":
            return start
        start = start.view(np.int64)
        return start.astype("datetime64[ns]") if self.kind == "datetime" else start

    def leaf_end(self, idx: np.ndarray) -> Any:
        """The top of each bucket as an interval end: the bucket's upper edge for floats (capped at
        ``upper``), its last value for integers, its start for dates (bucket resolution)."""
        idx = np.asarray(idx)
        if self.kind == "float":
            return np.minimum(self.lower + (idx + 1) * self.step, self.upper)
        if self.kind == "datetime":
            return self.leaf_start(idx)
        return np.minimum(np.int64(self.lower) + (idx + 1) * np.int64(self.step) - 1, np.int64(self.upper))

    def interpolate(self, idx: np.ndarray, frac: np.ndarray) -> np.ndarray:
        """A point ``frac`` of the way through bucket ``idx`` (integers: the bucket's value)."""
        if self.kind == "float":
            return np.minimum(self.lower + (idx + frac) * self.step, self.upper)
        if (self.kind == "integer" and self.width == 1) or self.kind == "datetime":
            return self.leaf_start(idx)  # integers and dates answer with a bucket's first value
        base = np.int64(self.lower) + idx.astype(np.int64) * np.int64(self.step)
        # frac = 1 is the bucket's top: its last value (width would be the next bucket's first)
        off = np.minimum(np.floor(frac * float(self.step)).astype(np.int64), np.int64(self.step) - 1)
        return np.minimum(base + off, np.int64(self.upper))

    # ------------------------------------------------------------------ range tree query points
    def leaf_of(self, x: Any) -> np.ndarray:
        """Bucket of query points (public), *not* clamped: may be < 0 or >= size."""
        arr = self._query_array(x)
        if self.kind in ("integer", "datetime"):
            # points beyond the domain act like its ends; clamping first keeps int64 exact
            lo, hi = int(self.lower) - int(self.step), int(self.upper) + int(self.step)
            return np.floor_divide(np.clip(arr, lo, hi) - int(self.lower), int(self.step))
        arr = np.clip(arr, self.lower - self.step, self.upper + self.step)
        out = np.floor((arr - self.lower) / self.step).astype(np.int64)
        # the last bucket is closed at upper
        return np.where(arr == self.upper, self.size - 1, out)

    def leaf_from(self, x: Any) -> np.ndarray:
        """Bucket where the values >= x begin (the low end of a range, or of a histogram bin):
        on an integer domain x rounded up first (0.5 starts at 1); past the last bucket (``size``)
        when x > upper, since every record is clamped to upper. (:meth:`leaf_of` maps a point above
        upper inside the last bucket to it, right for the high end of a range, not for the low.)"""
        x = whole_from(x) if self.kind == "integer" else x
        idx = np.asarray(self.leaf_of(x))
        return np.where(np.asarray(self._query_array(x)) > self.upper, self.size, idx)

    def _query_array(self, x: Any) -> np.ndarray:
        if self.kind == "datetime":
            # points beyond the domain act like its ends (leaf_of clamps to one bucket beyond)
            return date_query_array(x, int(self.lower) - int(self.step), int(self.upper) + int(self.step))
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

    # ------------------------------------------------------------------ points in release files
    def contains(self, value: Any) -> bool:
        """Whether ``value`` is a point of this domain, of its kind (re-validating a loaded file)."""
        if self.kind == "integer":
            return is_int(value) and self.lower <= int(value) <= self.upper and \
                (int(value) - int(self.lower)) % int(self.step) == 0
        if self.kind == "datetime":
            if not isinstance(value, np.datetime64) or np.isnat(value):
                return False
            ns = int(value.astype("datetime64[ns]").astype(np.int64))
            k, r = divmod(ns - int(self.lower), int(self.step))
            return r == 0 and 0 <= k < self.size
        return isinstance(value, float) and math.isfinite(value) and self.lower <= value <= self.upper

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
    if not is_real(lower) or not is_real(upper):
        raise DomainError(
            f"lower and upper must be numbers or dates, got {type(lower).__name__} and {type(upper).__name__}"
        )
    if width is not None and (not is_real(width)):
        raise DomainError(f"width must be a number, got {type(width).__name__}")
    if not (math.isfinite(float(lower)) and math.isfinite(float(upper))):
        raise DomainError("lower and upper must be finite")
    if width is not None and not math.isfinite(float(width)):
        raise DomainError("width must be finite")
    if (int(lower) >= int(upper)) if is_int(lower) and is_int(upper) else float(lower) >= float(upper):
        raise DomainError(f"lower ({lower}) must be smaller than upper ({upper})", parameter="lower")
    if width is not None and float(width) <= 0:
        raise DomainError(f"width must be > 0, got {width}", parameter="width")
    if is_int(lower) and is_int(upper) and (width is None or is_int(width)):
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


def point_domain(lower: Any, upper: Any, width: Any = None) -> Domain:
    """The domain of every point of [lower, upper]: integers (any size) when both bounds are ints,
    dates when a bound is a date, datetime or ISO text (``width``: their resolution, a timedelta,
    default one day; ``upper`` becomes the start of its unit), the float64 order otherwise.
    ``width`` is read for dates only (a numeric domain's points are all its integers or floats).
    Raises DomainError for bounds that are not finite numbers or dates, or not ordered."""
    if is_date_bound(lower) or is_date_bound(upper):
        lo_ns, hi_ns, unit = date_bounds(lower, upper, width)
        size = (hi_ns - lo_ns) // unit + 1
        return Domain("datetime", lo_ns, lo_ns + (size - 1) * unit, unit, size)
    for name, b in (("lower", lower), ("upper", upper)):
        if not is_real(b) or isinstance(b, np.bool_):
            raise DomainError(f"{name} must be an int, a float or a date, got {type(b).__name__}")
        if isinstance(b, (float, np.floating)) and not math.isfinite(float(b)):
            raise DomainError(f"{name} must be finite, got {b}")
    if is_int(lower) and is_int(upper):
        lo, hi = int(lower), int(upper)
        if lo > hi:
            raise DomainError(f"lower must be <= upper, got lower={lower!r} > upper={upper!r}; swap them", parameter="lower")
        return Domain("integer", lo, hi, 1, hi - lo + 1)
    try:
        lo_f, hi_f = float(lower) + 0.0, float(upper) + 0.0  # + 0.0: -0.0 is 0.0
    except OverflowError as exc:
        raise DomainError("bounds do not fit a float64 domain; use integer bounds") from exc
    if lo_f > hi_f:
        raise DomainError(f"lower must be <= upper, got lower={lower!r} > upper={upper!r}; swap them", parameter="lower")
    return Domain("float", lo_f, hi_f, None, float_order(hi_f) - float_order(lo_f) + 1)


def key_domain(lower: Any, upper: Any, dtype_kind: str) -> Domain:
    """The domain of every 64-bit key between the bounds (integers within [-2^63, 2^64 - 1], the
    float64 order, nanosecond timestamps), or (both ``None``) every key of the input's type
    (``dtype_kind``, numpy's kind letter of the input column: schema, not data)."""
    if (lower is None) != (upper is None):
        raise DomainError("give both lower and upper, or neither (the tree then covers every 64-bit key)")
    if lower is None:
        if dtype_kind == "M":
            return Domain("datetime", _NS_LO, _NS_HI, 1, _NS_HI - _NS_LO + 1)
        if dtype_kind == "f":
            return point_domain(-_FMAX, _FMAX)
        if dtype_kind == "u":
            return Domain("integer", 0, _U64_MAX, 1, 1 << 64)
        if dtype_kind == "O":  # Python objects (integers wider than 64 bits, a 128-bit column): no 64-bit type
            raise DomainError("the values have no 64-bit type (Python objects, e.g. integers wider than 64 bits or a "
                              "128-bit integer column), so the tree cannot cover every key of their type: give "
                              "lower= and upper= (integers at most 2^64 apart; values outside are clamped)")
        return Domain("integer", -(1 << 63), (1 << 63) - 1, 1, 1 << 64)
    for name, b in (("lower", lower), ("upper", upper)):
        if isinstance(b, (bool, np.bool_)) or not (is_real(b) or is_date_bound(b)):
            raise DomainError(f"{name} must be an int, a float or a date, got {type(b).__name__}")
    if is_date_bound(lower) or is_date_bound(upper):
        if not (is_date_bound(lower) and is_date_bound(upper)):
            raise DomainError("lower and upper must both be dates, or both numbers")
        lo, hi = (int(parse_date_bound(b, n).astype(np.int64)) for b, n in ((lower, "lower"), (upper, "upper")))
        if lo > hi:
            raise DomainError(f"lower must be <= upper, got lower={lower!r} > upper={upper!r}; swap them", parameter="lower")
        return Domain("datetime", lo, hi, 1, hi - lo + 1)
    if is_int(lower) and is_int(upper):
        base = 0 if int(lower) >= 0 and int(upper) >= 1 << 63 else 1 << 63
        for name, b in (("lower", lower), ("upper", upper)):
            if not 0 <= int(b) + base <= _U64_MAX:
                raise DomainError(f"{name}={int(b)} does not fit 64 bits: integer bounds lie in [-2^63, 2^64 - 1], "
                                  "and a domain reaching below 0 must end below 2^63", parameter=name)
    return point_domain(lower, upper)


def _check_size(size: int) -> None:
    if size > MAX_LEAVES:
        raise DomainError(
            f"the domain has {size} buckets, more than the supported {MAX_LEAVES}: "
            "choose a larger width or narrower bounds"
        )
    if size < 2:
        raise DomainError("the domain must have at least two buckets")
