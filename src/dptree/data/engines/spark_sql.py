"""The Spark SQL shared by the Spark engine's modules (:mod:`~dptree.data.engines.spark`,
:mod:`~dptree.data.engines.spark_ordered`): quoting, the column type families, literals that
reach Spark exactly, the value and missing/infinite tests of the exponential mechanisms' data,
the collection of a small aggregate through Arrow, and a column's leaf index in a public domain."""

from __future__ import annotations

from typing import Any

import numpy as np

from dptree.data.domain import Domain
from dptree.errors import DataError, InputFormatError

__all__ = ["NUMERIC", "INTEGRAL", "FLOATING", "LONG_MIN", "LONG_MAX", "quote", "long_sql", "double_sql",
           "decimal_sql", "value_sql", "collect_columns", "is_spark_df", "type_name", "leaf_sql"]

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


def is_spark_df(df: Any) -> bool:
    """A PySpark DataFrame (recognised without importing pyspark)."""
    mod = type(df).__module__
    return mod.startswith("pyspark.sql") and hasattr(df, "schema") and hasattr(df, "selectExpr")


def type_name(df: Any, column: str) -> str:
    """The Spark type of ``column`` (its class name), refusing a missing column."""
    if not is_spark_df(df):
        raise DataError(f"expected a PySpark DataFrame, got {type(df).__name__}")
    fields = {f.name: f for f in df.schema.fields}
    if column not in fields:
        raise InputFormatError(f"column {column!r} not found; available columns: {', '.join(fields)}")
    return type(fields[column].dataType).__name__


def leaf_sql(df: Any, column: str, domain: Domain) -> tuple[str, str]:
    """(Spark SQL leaf index, Spark SQL 'value missing' predicate)."""
    tname = type_name(df, column)
    col = quote(column)
    if domain.kind == "datetime":
        # clamp in the column's own unit (days, microseconds) before scaling to nanoseconds: the
        # product overflows int64 beyond 2262 and, with ANSI off, wraps into the wrong end
        lo_ns, hi_ns = int(domain.lower), int(domain.upper)
        lo_d, hi_d = lo_ns // 86_400_000_000_000, -(-hi_ns // 86_400_000_000_000)
        lo_us, hi_us = lo_ns // 1000, -(-hi_ns // 1000)
        if tname == "DateType":
            value = f"(CAST(least(greatest(unix_date({col}), {lo_d}), {hi_d}) AS BIGINT) * 86400000000000)"
        elif tname == "TimestampType":  # an instant: its UTC time, whatever the session time zone
            value = f"(least(greatest(unix_micros({col}), {lo_us}), {hi_us}) * 1000)"
        elif tname == "TimestampNTZType":  # a wall-clock time, like a naive numpy datetime64
            us = f"timestampdiff(MICROSECOND, TIMESTAMP_NTZ'1970-01-01 00:00:00', {col})"
            value = f"(least(greatest({us}, {lo_us}), {hi_us}) * 1000)"
        else:
            raise DataError(f"Spark column {column!r} has type {tname}, but the domain is dates: pass numeric bounds")
        bad = f"{col} IS NULL"
        lo, hi, w = int(domain.lower), int(domain.upper), int(domain.step)
        leaf = f"(least(greatest({value}, {lo}), {hi}) - {lo}) div {w}"
    else:
        if tname not in NUMERIC:
            raise DataError(f"Spark column {column!r} has type {tname}; a numeric domain needs a numeric column")
        if tname in FLOATING:
            bad = f"({col} IS NULL OR isnan({col}))"
        else:
            bad = f"{col} IS NULL"
        if domain.kind == "integer":
            lo, hi, w = int(domain.lower), int(domain.upper), int(domain.step)
            if tname in INTEGRAL:
                value = f"CAST({col} AS BIGINT)"
                leaf = f"(least(greatest({value}, {lo}), {hi}) - {lo}) div {w}"
            else:  # clamp in DOUBLE first, so NaN and huge values never reach the BIGINT cast
                value = f"CAST({col} AS DOUBLE)"
                leaf = f"(CAST(floor(least(greatest({value}, {lo}), {hi})) AS BIGINT) - {lo}) div {w}"
        else:
            lo_f, hi_f, w_f = float(domain.lower), float(domain.upper), float(domain.step)
            value = f"CAST({col} AS DOUBLE)"
            leaf = f"CAST(floor((least(greatest({value}, {lo_f!r}), {hi_f!r}) - {lo_f!r}) / {w_f!r}) AS BIGINT)"
    return f"least({leaf}, {domain.size - 1})", bad
