"""Exact integer weights: a row that stands for several records (hierarchy counts, ``weight=``),
and the public grid a summed weight is read on (range sums, :class:`WeightGrid`).

Weights are non-negative integer counts summed exactly in integers, never through float64
(``np.bincount(weights=...)`` rounds above 2^53). Node counts and noisy
measurements are int64, so a total of :data:`MAX_TOTAL` (2^61) or more is refused with
:class:`~dptree.errors.TotalTooLargeError`. No message contains a count, a total or a value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from dptree.errors import DataError, InvalidParameterError, TotalTooLargeError

__all__ = ["MAX_TOTAL", "FLOAT_EXACT", "MAX_WEIGHT_UNITS", "WeightGrid", "check_weights", "exact_total", "too_large",
           "weight_error"]

#: Exclusive upper bound on the total weight (number of records) a hierarchy release accepts.
#: Node counts and noisy measurements are int64 (exact below 2^63); the discrete Laplace and
#: Gaussian samplers return magnitudes below 2^62 on their fast path, and release files accept
#: measurements |y| < 2^62. A total below 2^61 leaves room for any noise draw below 2^61
#: (probability 1 - exp(-2^61/scale)); a larger draw is refused from the noisy value alone
#: (post-processing). It is a public constant: the guarantee covers datasets whose total weight is
#: below it, and the refusal never states the total.
MAX_TOTAL = 2**61

#: Float weights are accepted only up to 2^53, where every integer is a float64 value: a float
#: above it may already be the rounding of a different integer.
FLOAT_EXACT = 2**53


def too_large(name: str | None) -> TotalTooLargeError:
    """The refusal of a total of :data:`MAX_TOTAL` or more (it never states the total)."""
    what = f"the weights in column {name!r}" if name else "the records"
    return TotalTooLargeError(
        f"{what} add up to 2^61 or more, more than hierarchy counts can add noise to exactly "
        "(node counts and noisy measurements are 64-bit integers; the limit is dptree.hierarchy.release.MAX_TOTAL); "
        "split the data or rescale the unit of a record"
    )


def weight_error(name: str, problem: str) -> DataError:
    """A weight column holds something other than non-negative integer counts (the kind only)."""
    return DataError(
        f"weight column {name!r} must hold non-negative integer counts: it has {problem}; "
        "fix or drop those rows first (a weight is a number of records)"
    )


def exact_total(v: np.ndarray) -> int:
    """Exact sum (a Python int) of non-negative int64 values < 2^63, without overflow: high and
    low 32-bit halves are summed separately in int64 (each sum < 2^62 for up to 2^30 rows)."""
    total = 0
    step = 1 << 30
    for s in range(0, v.size, step):
        c = v[s : s + step]
        total += (int(np.sum(c >> 32, dtype=np.int64)) << 32) + int(np.sum(c & 0xFFFFFFFF, dtype=np.int64))
    return total


def _float_weight(f: float, name: str) -> int:
    if not math.isfinite(f):
        raise weight_error(name, "non-finite values")
    if f != math.floor(f):
        raise weight_error(name, "non-integer values")
    if f > FLOAT_EXACT:
        raise weight_error(name, "float values above 2^53, which are not exact integers (pass an integer column)")
    return int(f)


def _object_weights(values: np.ndarray, name: str) -> np.ndarray:
    """Exact Python integers of an object column (ints of any size, integral floats up to
    2^53, integral Decimals); raises without showing any value."""
    import pandas as pd

    out = np.empty(values.size, dtype=object)
    for i, x in enumerate(values.tolist()):
        if x is None or (isinstance(x, float) and x != x):
            raise weight_error(name, "missing values")
        if isinstance(x, (bool, np.bool_)):
            raise weight_error(name, "true/false values")
        if isinstance(x, (int, np.integer)):
            out[i] = int(x)
        elif isinstance(x, (float, np.floating)):
            out[i] = _float_weight(float(x), name)
        elif isinstance(x, Decimal):
            if not x.is_finite():
                raise weight_error(name, "non-finite values")
            if x != x.to_integral_value():
                raise weight_error(name, "non-integer values")
            out[i] = int(x)
        else:
            try:
                if pd.isna(x):
                    raise weight_error(name, "missing values")
            except (TypeError, ValueError):
                pass
            raise weight_error(name, "values that are not numbers")
    return out


def check_weights(w: Any, name: str) -> np.ndarray:
    """Weights as exact int64 counts: integer columns of any width, integral floats up to 2^53,
    Python ints / Decimals in object columns. Refuses missing, negative, non-integer and
    non-finite weights, and (:class:`TotalTooLargeError`) totals of :data:`MAX_TOTAL` or more."""
    import pandas as pd

    s = pd.Series(w)
    if pd.api.types.is_bool_dtype(s.dtype):
        raise weight_error(name, "true/false values")
    if s.isna().any():
        raise weight_error(name, "missing values")
    if pd.api.types.is_integer_dtype(s.dtype):
        v = s.to_numpy()
        if v.dtype.kind == "i" and (v < 0).any():
            raise weight_error(name, "negative values")
        if v.size and v.max() >= MAX_TOTAL:  # unsigned values above 2^63 never reach int64
            raise too_large(name)
        v = v.astype(np.int64)
    elif pd.api.types.is_float_dtype(s.dtype):
        f = s.to_numpy(dtype=np.float64)
        if not np.isfinite(f).all():
            raise weight_error(name, "non-finite values")
        if (f < 0).any():
            raise weight_error(name, "negative values")
        if (np.floor(f) != f).any():
            raise weight_error(name, "non-integer values")
        if f.size and f.max() > FLOAT_EXACT:
            raise weight_error(name, "float values above 2^53, which are not exact integers (pass an integer column)")
        v = f.astype(np.int64)
    elif s.dtype == object:
        ints = _object_weights(s.to_numpy(dtype=object), name)
        if any(x < 0 for x in ints):
            raise weight_error(name, "negative values")
        if any(x >= MAX_TOTAL for x in ints):
            raise too_large(name)
        v = ints.astype(np.int64)
    else:
        raise weight_error(name, "values that are not numbers")
    if exact_total(v) >= MAX_TOTAL:
        raise too_large(name)
    return v


#: The largest |bound| / resolution of a weight grid: a record's weight in units is an exact
#: integer of a double (far below 2^53) and a node's sum of n records stays in int64.
MAX_WEIGHT_UNITS = 2**40


@dataclass(frozen=True)
class WeightGrid:
    """The public rule that turns a record's weight into an exact integer (range sums).

    A weight w becomes ``units(w) = min(max(floor(w / resolution + 1/2), lower_units), upper_units)``
    (w / resolution and the floor in float64, the same operations in every engine): w rounded to
    the nearest point of the grid {j * resolution} (halves up) and clamped to
    [``lower``, ``upper``], whose ends lie on the grid. The sum of a set of records is the sum of
    their units times ``resolution``. One record's units lie in [lower_units, upper_units], so
    adding or removing it moves a sum by at most :attr:`sensitivity` = max(|lower_units|,
    |upper_units|) units. Missing and infinite weights are invalid values of the record (refused
    or dropped by the caller's ``on_invalid`` policy)."""

    lower: Fraction
    upper: Fraction
    resolution: Fraction

    @classmethod
    def of(cls, lower: Any, upper: Any, resolution: Any = 1) -> WeightGrid:
        """The grid of the public ``weight_bounds=(lower, upper)`` and ``weight_resolution``; refuses
        bounds off the grid, lower >= upper and grids of more than :data:`MAX_WEIGHT_UNITS` units."""
        def exact(x: Any, name: str) -> Fraction:
            if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating, Fraction)):
                raise InvalidParameterError(f"{name} must be a number, e.g. weight_bounds=(0, 100)", parameter=name)
            if not math.isfinite(float(x)):
                raise InvalidParameterError(f"{name} must be finite, e.g. weight_bounds=(0, 100)", parameter=name)
            return Fraction(int(x)) if isinstance(x, (int, np.integer)) else Fraction(str(float(x)))

        lo, hi = exact(lower, "weight_bounds"), exact(upper, "weight_bounds")
        res = exact(resolution, "weight_resolution")
        if res <= 0:
            raise InvalidParameterError("weight_resolution must be > 0, e.g. weight_resolution=0.01 for cents",
                                        parameter="weight_resolution")
        if lo >= hi:
            raise InvalidParameterError("weight_bounds must be (lower, upper) with lower < upper, e.g. (0, 100)",
                                        parameter="weight_bounds")
        if (lo / res).denominator != 1 or (hi / res).denominator != 1:
            raise InvalidParameterError("weight_bounds must be multiples of weight_resolution (the grid the weights "
                                        "are rounded to), e.g. weight_bounds=(0, 100) with weight_resolution=0.5",
                                        parameter="weight_bounds")
        if max(abs(lo), abs(hi)) / res > MAX_WEIGHT_UNITS:
            raise InvalidParameterError("weight_bounds / weight_resolution must be at most 2^40 units: choose a "
                                        "coarser weight_resolution", parameter="weight_resolution")
        return cls(lo, hi, res)

    @property
    def lower_units(self) -> int:
        return int(self.lower / self.resolution)

    @property
    def upper_units(self) -> int:
        return int(self.upper / self.resolution)

    @property
    def cells(self) -> int:
        """The distinct units a record can have (upper_units - lower_units + 1)."""
        return self.upper_units - self.lower_units + 1

    @property
    def sensitivity(self) -> int:
        """The most one record moves a sum, in units: max(|lower_units|, |upper_units|)."""
        return max(abs(self.lower_units), abs(self.upper_units))

    def units(self, w: np.ndarray) -> np.ndarray:
        """The units of finite float64 weights ``w`` (int64; the rule of the class docstring)."""
        u = np.floor(np.asarray(w, dtype=np.float64) / float(self.resolution) + 0.5)
        return np.clip(u, self.lower_units, self.upper_units).astype(np.int64)

    def sql(self, w: str) -> str:
        """The same rule as an SQL expression (DuckDB, Spark) of the DOUBLE expression ``w``."""
        return (f"CAST(least(greatest(floor({w} / CAST({float(self.resolution)!r} AS DOUBLE) + 0.5), "
                f"{self.lower_units}), {self.upper_units}) AS BIGINT)")

    def to_dict(self) -> dict[str, Any]:
        """The grid as a release file records it and :meth:`of` takes it back (integers, or the
        doubles the caller gave)."""
        def num(x: Fraction) -> int | float:
            return int(x) if x.denominator == 1 else float(x)

        return {"bounds": [num(self.lower), num(self.upper)], "resolution": num(self.resolution)}

    def value(self, units: Any) -> Any:
        """Units as weights (float64): units * resolution."""
        return np.asarray(units, dtype=np.float64) * float(self.resolution)
