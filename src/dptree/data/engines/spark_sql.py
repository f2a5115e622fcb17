"""The Spark SQL shared by the Spark engine's modules (:mod:`~dptree.data.engines.spark`,
:mod:`~dptree.data.engines.spark_ordered`): quoting, the column type families, literals that
reach Spark exactly, the value and missing/infinite tests of the exponential mechanisms' data,
and the collection of a small aggregate through Arrow."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["NUMERIC", "INTEGRAL", "FLOATING", "LONG_MIN", "LONG_MAX", "quote", "long_sql", "double_sql",
           "decimal_sql", "value_sql", "collect_columns"]

NUMERIC = ("ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType", "DecimalType")
INTEGRAL = ("ByteType", "ShortType", "IntegerType", "LongType")
FLOATING = ("FloatType", "DoubleType")
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


def quote(name: str) -> str:
    """A column name as a Spark SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def long_sql(x: int) -> str:
    """A BIGINT literal (a bare -9223372036854775808 would parse as a negated DECIMAL)."""
    if not LONG_MIN <= x <= LONG_MAX:
        raise ValueError("not a 64-bit integer")
    return f"CAST('{int(x)}' AS BIGINT)"


def decimal_sql(x: int) -> str:
    """An integer literal as DECIMAL(38, 0) (exact up to 38 digits)."""
    return f"CAST('{int(x)}' AS DECIMAL(38, 0))"


def double_sql(x: float) -> str:
    """A DOUBLE literal: ``repr`` is the shortest text that reads back as the same double, and
    Spark parses it correctly rounded (Java's ``Double.parseDouble``)."""
    return f"CAST('{float(x)!r}' AS DOUBLE)"


def value_sql(column: str, tname: str) -> tuple[str, str, str]:
    """(value, missing test, infinite test) of a numeric column of Spark type ``tname`` for the
    exponential mechanisms' data: floats and decimals read as DOUBLE (NULL and NaN missing,
    +-inf infinite), integers as they are (NULL missing)."""
    col = quote(column)
    floating = tname in FLOATING or tname == "DecimalType"
    value = f"CAST({col} AS DOUBLE)" if floating else col
    bad_missing = f"({col} IS NULL" + (f" OR isnan({value}))" if floating else ")")
    bad_inf = f"{value} IN (double('inf'), double('-inf'))" if floating else "false"
    return value, bad_missing, bad_inf


def collect_columns(df: Any, *names: str) -> list[np.ndarray]:
    """The ``names`` columns of a small (aggregated) DataFrame as numpy arrays, through Arrow (no
    Python object per row; ``toPandas`` where pyspark has no ``toArrow``)."""
    table = df.toArrow() if hasattr(df, "toArrow") else None
    if table is None:  # pyspark < 4 (tests/unit/data/test_spark_sql.py)
        frame = df.toPandas()
        return [frame[n].to_numpy() for n in names]
    return [np.asarray(table.column(n).to_numpy()) for n in names]
