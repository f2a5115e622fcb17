"""Leaf histograms of PySpark DataFrames, computed in Spark (``pip install "dptree[spark]"``).

Only aggregates reach the driver: the histogram (one count per bucket) and, for contribution
bounding, the record counts of the users above k (numbers without ids), from which the driver
draws the positions to keep (randomness from :mod:`dptree.noise`) and sends them back as a small
DataFrame. The SQL maps values to buckets exactly as :meth:`dptree.data.domain.Domain.to_leaves` and the
DuckDB backend do, and bounding uses the same algorithm as :mod:`dptree.data.bounding`, so the three
engines give identical histograms for the same seed (tested).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dptree import noise as _noise
from dptree.data.domain import Domain
from dptree.errors import (
    RANGE_TREE_FLOAT_FIX,
    DataError,
    InputFormatError,
    engine_error,
    infinite_values_error,
    missing_user_ids_error,
    missing_values_error,
    non_integer_values_error,
    unknown_groups_error,
)

__all__ = ["spark_leaf_histogram", "spark_bounded_histogram", "spark_grouped_histograms", "require_pyspark"]

_NUMERIC = ("ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType", "DecimalType")
_INTEGRAL = ("ByteType", "ShortType", "IntegerType", "LongType")
_FLOATING = ("FloatType", "DoubleType")


def require_pyspark() -> Any:
    """The pyspark module, or a clear error naming the extra to install."""
    try:
        import pyspark
        import pyspark.sql  # noqa: F401
    except ImportError as exc:
        raise InputFormatError('the Spark backend needs pyspark: pip install "dptree[spark]"') from exc
    return pyspark


def _is_spark_df(df: Any) -> bool:
    mod = type(df).__module__
    return mod.startswith("pyspark.sql") and hasattr(df, "schema") and hasattr(df, "selectExpr")


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _type_name(df: Any, column: str) -> str:
    if not _is_spark_df(df):
        raise DataError(f"expected a PySpark DataFrame, got {type(df).__name__}")
    fields = {f.name: f for f in df.schema.fields}
    if column not in fields:
        raise InputFormatError(f"column {column!r} not found; available columns: {', '.join(fields)}")
    return type(fields[column].dataType).__name__


def _leaf_sql(df: Any, column: str, domain: Domain) -> tuple[str, str]:
    """(Spark SQL leaf index, Spark SQL 'value missing' predicate)."""
    tname = _type_name(df, column)
    col = _quote(column)
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
        lo, hi, w = int(domain.lower), int(domain.upper), int(domain.width)
        leaf = f"(least(greatest({value}, {lo}), {hi}) - {lo}) div {w}"
    else:
        if tname not in _NUMERIC:
            raise DataError(f"Spark column {column!r} has type {tname}; a numeric domain needs a numeric column")
        if tname in _FLOATING:
            bad = f"({col} IS NULL OR isnan({col}))"
        else:
            bad = f"{col} IS NULL"
        if domain.kind == "integer":
            lo, hi, w = int(domain.lower), int(domain.upper), int(domain.width)
            if tname in _INTEGRAL:
                value = f"CAST({col} AS BIGINT)"
                leaf = f"(least(greatest({value}, {lo}), {hi}) - {lo}) div {w}"
            else:  # clamp in DOUBLE first, so NaN and huge values never reach the BIGINT cast
                value = f"CAST({col} AS DOUBLE)"
                leaf = f"(CAST(floor(least(greatest({value}, {lo}), {hi})) AS BIGINT) - {lo}) div {w}"
        else:
            lo_f, hi_f, w_f = float(domain.lower), float(domain.upper), float(domain.width)
            value = f"CAST({col} AS DOUBLE)"
            leaf = f"CAST(floor((least(greatest({value}, {lo_f!r}), {hi_f!r}) - {lo_f!r}) / {w_f!r}) AS BIGINT)"
    return f"least({leaf}, {domain.size - 1})", bad


def _check_values(df: Any, column: str, bad: str, missing: str, integer_domain: bool = False) -> None:
    from pyspark.sql import functions as F

    tname = _type_name(df, column)
    aggs = [F.expr(f"count_if({bad})").alias("missing")]
    if tname in _FLOATING:
        infinite = f"CAST({_quote(column)} AS DOUBLE) IN (double('inf'), double('-inf'))"
        aggs.append(F.expr(f"count_if({infinite})").alias("inf"))
    if integer_domain and tname not in _INTEGRAL:
        # as in memory and in DuckDB: non-integers on an integer domain are refused, never floored
        value = f"CAST({_quote(column)} AS DOUBLE)"
        # x % 1 stays a double (floor() would cast to BIGINT and overflow on huge values)
        fraction = f"NOT ({bad}) AND abs({value}) < double('inf') AND {value} % 1.0 <> 0.0"
        aggs.append(F.expr(f"count_if({fraction})").alias("fraction"))
    row = df.agg(*aggs).collect()[0]
    if tname in _FLOATING and row["inf"]:
        raise infinite_values_error(column)
    if row["missing"] and missing == "error":
        raise missing_values_error(column)
    if integer_domain and tname not in _INTEGRAL and row["fraction"]:
        raise non_integer_values_error(RANGE_TREE_FLOAT_FIX)


def _collect_hist(df: Any, n_cells: int) -> np.ndarray:
    hist = np.zeros(n_cells, dtype=np.int64)
    rows = df.groupBy("leaf").count().collect()
    if rows:
        leaves = np.fromiter((r["leaf"] for r in rows), dtype=np.int64, count=len(rows))
        counts = np.fromiter((r["count"] for r in rows), dtype=np.int64, count=len(rows))
        np.add.at(hist, leaves, counts)
    return hist


def _wrap(what: str, column: str, exc: Exception) -> InputFormatError:
    return engine_error(f"{what} in Spark", column, exc)


def spark_leaf_histogram(df: Any, column: str, plan: Any, *, missing: str = "error") -> np.ndarray:
    """Bucket counts of ``column`` of a Spark DataFrame for ``plan`` (length ``padded_size``)."""
    require_pyspark()
    try:
        leaf, bad = _leaf_sql(df, column, plan.domain)
        _check_values(df, column, bad, missing, integer_domain=plan.domain.kind == "integer")
        rows = df.selectExpr(f"CASE WHEN {bad} THEN NULL ELSE {leaf} END AS leaf").where("leaf IS NOT NULL")
        return _collect_hist(rows, plan.layout.padded_size)
    except (DataError, InputFormatError):
        raise
    except Exception as exc:
        raise _wrap("histogram", column, exc) from None


def _check_users(df: Any, user_column: str) -> str:
    from pyspark.sql import functions as F

    utype = _type_name(df, user_column)
    ucol = _quote(user_column)
    ubad = f"{ucol} IS NULL" + (f" OR isnan({ucol})" if utype in _FLOATING else "")
    n_null = df.agg(F.expr(f"count_if({ubad})").alias("n")).collect()[0]["n"]
    if n_null:
        raise missing_user_ids_error(user_column)
    return ucol


def _bounded_counts(rows: Any, k: int, n_cells: int, src: _noise.RandomSource) -> np.ndarray:
    """Counts per cell of ``rows(u, leaf)`` keeping at most k rows per user (the numpy algorithm)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from dptree.data.bounding import _kept_positions

    by_user = Window.partitionBy("u")
    ranked = rows.select(
        "u", "leaf",
        (F.row_number().over(by_user.orderBy("leaf")) - 1).alias("pos"),
        F.count(F.lit(1)).over(by_user).alias("c"),
    )
    hist = _collect_hist(ranked.where(f"c <= {k}"), n_cells)
    heavy = rows.groupBy("u").count().where(f"count > {k}")
    # heavy users numbered in id order (one row per heavy user; the order numpy draws in)
    heavy = heavy.select("u", "count", (F.row_number().over(Window.orderBy("u")) - 1).alias("h"))
    counts_rows = heavy.select("h", "count").collect()
    if counts_rows:
        counts = np.zeros(len(counts_rows), dtype=np.int64)
        for r in counts_rows:
            counts[int(r["h"])] = int(r["count"])
        chosen = _kept_positions(src, counts, k)
        kept = rows.sparkSession.createDataFrame(
            [(int(h), int(p)) for h, p in zip(np.repeat(np.arange(counts.size), k), chosen.ravel())],
            "h long, pos long",
        )
        joined = ranked.join(heavy.select("u", "h"), "u").join(kept, ["h", "pos"])
        hist += _collect_hist(joined, n_cells)
    return hist


def spark_bounded_histogram(
    df: Any,
    column: str,
    user_column: str,
    plan: Any,
    *,
    max_contributions: int | None = None,
    missing: str = "error",
    rng: _noise.RngLike = None,
) -> np.ndarray:
    """:func:`dptree.data.bounding.bounded_histogram` of a Spark DataFrame, computed in Spark."""
    require_pyspark()
    from dptree.data.bounding import check_bound

    k = check_bound(plan, max_contributions)
    src = _noise.make_source(rng)
    try:
        leaf, bad = _leaf_sql(df, column, plan.domain)
        ucol = _check_users(df, user_column)
        _check_values(df, column, bad, missing, integer_domain=plan.domain.kind == "integer")
        rows = df.selectExpr(f"{ucol} AS u", f"CASE WHEN {bad} THEN NULL ELSE {leaf} END AS leaf").where(
            "leaf IS NOT NULL")
        return _bounded_counts(rows, k, plan.layout.padded_size, src)
    except (DataError, InputFormatError):
        raise
    except Exception as exc:
        raise _wrap("bounded histogram", column, exc) from None


def spark_grouped_histograms(
    df: Any,
    column: str,
    by_column: str,
    plan: Any,
    *,
    groups: Any,
    unknown: str = "error",
    user_column: str | None = None,
    max_contributions: int | None = None,
    missing: str = "error",
    rng: _noise.RngLike = None,
) -> np.ndarray:
    """:func:`dptree.rangetree.groupby.grouped_histograms` of a Spark DataFrame, shape (len(groups), padded_size)."""
    require_pyspark()
    from pyspark.sql import functions as F

    from dptree.data.bounding import check_bound
    from dptree.rangetree.groupby import _check_unknown, check_groups

    plan.check_public_total(by=by_column)
    gs = check_groups(groups)
    _check_unknown(unknown)
    k = check_bound(plan, max_contributions) if user_column is not None else None
    P, G = plan.layout.padded_size, len(gs)
    try:
        btype = _type_name(df, by_column)
        if isinstance(gs[0], str) != (btype == "StringType"):
            raise DataError(
                f"by column {by_column!r} has type {btype} but groups are "
                f"{'strings' if isinstance(gs[0], str) else 'integers'}; give groups of the column's type"
            )
        if not isinstance(gs[0], str) and btype not in _INTEGRAL:
            raise DataError(f"by column {by_column!r} has type {btype}; integer groups need an integer column")
        leaf, bad = _leaf_sql(df, column, plan.domain)
        ucol = _check_users(df, user_column) if user_column is not None else "CAST(NULL AS BIGINT)"
        _check_values(df, column, bad, missing, integer_domain=plan.domain.kind == "integer")
        spark = df.sparkSession
        gtype = "string" if isinstance(gs[0], str) else "long"
        gdf = spark.createDataFrame([(g, i) for i, g in enumerate(gs)], f"dpt_gv {gtype}, dpt_gi long")
        base = df.selectExpr(f"{ucol} AS u", f"{_quote(by_column)} AS dpt_b",
                             f"CASE WHEN {bad} THEN NULL ELSE {leaf} END AS dpt_leaf")
        joined = base.join(F.broadcast(gdf), base["dpt_b"] == gdf["dpt_gv"], "left")
        n_unknown = joined.agg(F.expr("count_if(dpt_gi IS NULL)").alias("n")).collect()[0]["n"]
        if n_unknown and unknown == "error":
            raise unknown_groups_error()
        rows = joined.where("dpt_gi IS NOT NULL AND dpt_leaf IS NOT NULL").selectExpr(
            "u", f"dpt_gi * {P} + dpt_leaf AS leaf")
        if k is None:
            hist = _collect_hist(rows, G * P)
        else:
            hist = _bounded_counts(rows, k, G * P, _noise.make_source(rng))
        return hist.reshape(G, P)
    except (DataError, InputFormatError):
        raise
    except Exception as exc:
        raise _wrap("grouped histograms", column, exc) from None
