"""The public bucketing of :meth:`~dptree.data.engines.base.OrderedCounts.buckets`, shared by the
engines that implement it (:mod:`~dptree.data.engines.duckdb_ordered`,
:mod:`~dptree.data.engines.spark_ordered`), so that they put every value in the same bucket.

Integer domains [lo, hi]: bucket (clamped - lo) // :func:`int_width`. Float domains:
floor((clamped - lo) / :func:`float_width`) in IEEE double arithmetic, clamped to
[0, count - 1] (monotone: correct rounding of a monotone operation is monotone); one bucket
when the width is not a positive normal float. Both depend on the public bounds and the public
bucket count only. The ``*_edges`` functions give a range of the raw values that holds every
row of buckets first .. last (a prefilter an engine may push down to the file; the bucket test
after it keeps the query exact)."""

from __future__ import annotations

import math
import sys
from typing import Callable

import numpy as np

from dptree.data.engines.base import Missing, invalid_values_error

__all__ = ["MISSING", "INFINITE", "int_width", "int_edges", "float_width", "float_edges", "flagged_histogram"]

#: the bucket numbers under which the bucket query counts rows with missing and infinite values
MISSING, INFINITE = -1, -2


def int_width(lo: int, hi: int, count: int) -> int:
    """Points per bucket of the integer domain [lo, hi]: ceil(|X| / count)."""
    return -(-(hi - lo + 1) // count)


def int_edges(lo: int, hi: int, count: int, first: int, last: int) -> tuple[int | None, int | None]:
    """(a, b): the clamped values of buckets first .. last lie in [a, b) (None: no bound).
    Bucket j holds lo + j w .. lo + (j + 1) w - 1."""
    w = int_width(lo, hi, count)
    return (lo + first * w if first else None,
            lo + (last + 1) * w if last < count - 1 and lo + (last + 1) * w <= hi else None)


def float_width(lo: float, hi: float, count: int) -> float | None:
    """The bucket width (hi - lo) / count of a float domain, or None (one bucket) when it is not
    a positive normal float or the span overflows."""
    span = hi - lo
    w = span / count
    return w if math.isfinite(span) and w >= sys.float_info.min else None


def float_key_sql(clamped: str) -> str:
    """The SQL key of a clamped float value (DuckDB and Spark alike): -0.0 and 0.0 as one."""
    return f"(CASE WHEN {clamped} = 0 THEN CAST(0 AS DOUBLE) ELSE {clamped} END)"


def float_bucket_sql(clamped: str, lo: float, hi: float, count: int, double: Callable[[float], str]) -> str:
    """The SQL bucket (0 .. count - 1, a BIGINT) of a clamped float value over [lo, hi]: floor((x - lo) / w),
    the last bucket closed; one bucket where :func:`float_width` has none. ``double``: the
    dialect's exact literal of a float."""
    w = float_width(lo, hi, count)
    if w is None:
        return "CAST(0 AS BIGINT)"
    return f"CAST(least(floor(({clamped} - {double(lo)}) / {double(w)}), {count - 1}) AS BIGINT)"


def float_edges(lo: float, hi: float, count: int, first: int, last: int) -> tuple[float | None, float | None]:
    """(a, b): the values of buckets first .. last lie in [a, b) (None: no bound). A bucket
    j >= first holds values >= lo + (first - 1) w, one <= last values below lo + (last + 2) w:
    each rounding moves a value by far less than w when the bounds' own rounding
    (2^-40 |bound|) is below w; only then is a bound given."""
    w = float_width(lo, hi, count)
    if w is None or (abs(lo) + abs(hi)) * 2.0**-40 >= w:
        return None, None
    a, b = lo + (first - 1) * w, lo + (last + 2) * w
    return (a if first > 1 and lo < a < hi else None, b if last < count - 2 and lo < b < hi else None)


def flagged_histogram(b: np.ndarray, n: np.ndarray, count: int, missing: Missing, infinite: Missing,
                      column: str, message: str | None) -> np.ndarray:
    """The histogram (int64, length ``count``) of a bucket query's rows (bucket ``b``, records
    ``n``), after the checks: rows counted under :data:`MISSING` or :data:`INFINITE` raise
    :func:`~dptree.data.engines.base.invalid_values_error` (naming no value or count) when their
    policy is "error", and are left out otherwise."""
    if (b == MISSING).any() and missing == "error":
        raise invalid_values_error("missing", column, message)
    if (b == INFINITE).any() and infinite == "error":
        raise invalid_values_error("infinite", column, message)
    hist = np.zeros(count, np.int64)
    hist[b[b >= 0]] = n[b >= 0]
    return hist
