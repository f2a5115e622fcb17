"""The Spark engine: PySpark DataFrames, counted in Spark (``pip install "dptree[spark]"``).

Only aggregates reach the driver: the histogram (one count per bucket), for contribution bounding
the record counts of the users above k (numbers without ids), from which the driver draws the
positions to keep (:mod:`dptree.data.bounding`) and sends them back as a small DataFrame, and for
hierarchies one exact count per distinct path, and for the staged exponential mechanisms
(median, quantiles, interior points) a bucket histogram, the rank window's distinct values and
single ranks (:mod:`~dptree.data.engines.spark_ordered`). The SQL maps values to buckets exactly as
:meth:`dptree.data.domain.Domain.to_leaves` and the DuckDB engine do, so the three engines give
identical counts for the same random source (tested).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np

from dptree import noise as _noise
from dptree._validation import require
from dptree.data.bounding import kept_pairs
from dptree.data.domain import Domain
from dptree.data.engines.base import (
    COUNT,
    Bucket,
    Counts,
    Engine,
    Group,
    GroupOf,
    Key,
    Missing,
    OrderedCounts,
    Partition,
    Sample,
    Units,
    Unknown,
    UserRecords,
    Value,
    check_names,
    invalid_values_error,
)
from dptree.data.engines.spark_ordered import SparkOrderedCounts
from dptree.data.engines.spark_sql import (
    FLOATING,
    INTEGRAL,
    NUMERIC,
    collect_columns,
    is_spark_df,
    leaf_sql,
    quote,
    type_name,
    value_sql,
)
from dptree.data.weights import FLOAT_EXACT, MAX_TOTAL, too_large, weight_error
from dptree.errors import (
    DataError,
    InputFormatError,
    check_invalid,
    engine_error,
    missing_keys_error,
    missing_user_ids_error,
    partition_key_type_error,
    unknown_groups_error,
)

__all__ = ["SparkEngine", "is_spark_df"]

def _pyspark() -> Any:
    return require("pyspark.sql", "the Spark engine")


def _check_values(df: Any, column: str, bad: str, missing: str, integer_domain: bool = False) -> str:
    """The declared invalid-value policy ``missing`` (``on_invalid``, :func:`~dptree.errors.check_invalid`)
    on the column: missing values, +-inf, non-integers on an integer domain (never floored) refused
    by kind, or with "drop" flagged by the returned SQL predicate for the caller to leave out."""
    from pyspark.sql import functions as F

    tname = type_name(df, column)
    flags = {"missing": bad}
    if tname in FLOATING:
        flags["infinite"] = f"CAST({quote(column)} AS DOUBLE) IN (double('inf'), double('-inf'))"
    if integer_domain and tname not in INTEGRAL:
        value = f"CAST({quote(column)} AS DOUBLE)"
        # x % 1 stays a double (floor() would cast to BIGINT and overflow on huge values)
        flags["fraction"] = f"NOT ({bad}) AND abs({value}) < double('inf') AND {value} % 1.0 <> 0.0"
    row = df.agg(*[F.expr(f"count_if({p})").alias(k) for k, p in flags.items()]).collect()[0]
    check_invalid({k for k in flags if row[k]}, missing, column)
    return "(" + " OR ".join(f"({p})" for p in flags.values()) + ")"


def _collect_hist(df: Any, n_cells: int) -> np.ndarray:
    hist = np.zeros(n_cells, dtype=np.int64)
    rows = df.groupBy("leaf").count().collect()
    if rows:
        leaves = np.fromiter((r["leaf"] for r in rows), dtype=np.int64, count=len(rows))
        counts = np.fromiter((r["count"] for r in rows), dtype=np.int64, count=len(rows))
        np.add.at(hist, leaves, counts)
    return hist


def _value_counts(df: Any, column: str, missing: Missing, infinite: Missing) -> tuple[np.ndarray, np.ndarray]:
    from pyspark.sql import functions as F

    tname = type_name(df, column)
    if tname not in NUMERIC and tname not in ("DateType", "TimestampType", "TimestampNTZType"):
        raise DataError(f"Spark column {column!r} has type {tname}; the values must be numbers or dates")
    value, bad_missing, bad_inf = value_sql(column, tname)
    row = df.agg(F.expr(f"count_if({bad_missing})").alias("m"), F.expr(f"count_if({bad_inf})").alias("i")).collect()[0]
    if row["m"] and missing == "error":
        raise invalid_values_error("missing", column, None)
    if row["i"] and infinite == "error":
        raise invalid_values_error("infinite", column, None)
    counted = (df.selectExpr(f"{value} AS v").where(f"NOT ({bad_missing} OR {bad_inf})")
               .groupBy("v").agg(F.count(F.lit(1)).alias("n")).orderBy("v"))
    vals, cnt = collect_columns(counted, "v", "n")
    return vals, np.asarray(cnt, dtype=np.int64)


def _check_by(df: Any, by: str, groups: Sequence[Group]) -> None:
    """The by column's type matches the public groups' (strings, or integers on an integer column)."""
    btype = type_name(df, by)
    if isinstance(groups[0], str) != (btype == "StringType"):
        raise DataError(
            f"by column {by!r} has type {btype} but groups are "
            f"{'strings' if isinstance(groups[0], str) else 'integers'}; give groups of the column's type"
        )
    if not isinstance(groups[0], str) and btype not in INTEGRAL:
        raise DataError(f"by column {by!r} has type {btype}; integer groups need an integer column")


def _join_groups(df: Any, by: str, groups: Sequence[Group], unknown: Unknown, *cols: Any) -> Any:
    """The columns ``cols`` of ``df`` with ``dpt_gi``, the index of the row's group in the public
    ``groups`` (broadcast join; NULL for unlisted or missing groups, which raise
    :func:`~dptree.errors.unknown_groups_error` unless ``unknown="drop"``)."""
    from pyspark.sql import functions as F

    gtype = "string" if isinstance(groups[0], str) else "long"
    gdf = df.sparkSession.createDataFrame([(g, i) for i, g in enumerate(groups)], f"dpt_gv {gtype}, dpt_gi long")
    base = df.select(*cols, F.col(quote(by)).alias("dpt_b"))
    joined = base.join(F.broadcast(gdf), base["dpt_b"] == gdf["dpt_gv"], "left")
    n_unknown = joined.agg(F.expr("count_if(dpt_gi IS NULL)").alias("n")).collect()[0]["n"]
    if n_unknown and unknown == "error":
        raise unknown_groups_error()
    return joined if unknown == "error" else joined.where("dpt_gi IS NOT NULL")


def _wrap(what: str, column: str, exc: Exception) -> InputFormatError:
    return engine_error(f"{what} in Spark", column, exc)


def _check_users(df: Any, user_column: str) -> str:
    from pyspark.sql import functions as F

    utype = type_name(df, user_column)
    ucol = quote(user_column)
    ubad = f"{ucol} IS NULL" + (f" OR isnan({ucol})" if utype in FLOATING else "")
    n_null = df.agg(F.expr(f"count_if({ubad})").alias("n")).collect()[0]["n"]
    if n_null:
        raise missing_user_ids_error(user_column)
    return ucol


def _bounded_counts(rows: Any, k: int, n_cells: int, src: _noise.RandomSource) -> np.ndarray:
    """Counts per cell of ``rows(u, leaf)`` keeping at most k rows per user (:mod:`dptree.data.bounding`)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

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
        kept = kept_pairs(src, counts, k)
        kept_df = rows.sparkSession.createDataFrame(
            [(int(h), int(p)) for h, p in zip(kept["h"], kept["pos"])], "h long, pos long")
        joined = ranked.join(heavy.select("u", "h"), "u").join(kept_df, ["h", "pos"])
        hist += _collect_hist(joined, n_cells)
    return hist


def _weight_column(df: Any, weight: str) -> Any:
    """The weight column as an exact DecimalType(38, 0) Spark column, after refusing (without
    counts or values) missing, negative, non-integer, non-finite and inexact float weights."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    dtype = df.schema[weight].dataType
    w = F.col(weight)
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        checks = [("missing values", w.isNull()), ("negative values", w < 0)]
    elif isinstance(dtype, T.DecimalType):
        checks = [("missing values", w.isNull()), ("negative values", w < 0), ("non-integer values", w != F.floor(w))]
    elif isinstance(dtype, (T.FloatType, T.DoubleType)):
        checks = [
            ("missing values", w.isNull() | F.isnan(w)),  # NaN is a missing value, as in numpy and DuckDB
            ("non-finite values", F.abs(w) == float("inf")),
            ("negative values", w < 0),
            ("non-integer values", w != F.floor(w)),
            ("float values above 2^53, which are not exact integers (pass an integer column)", w > float(FLOAT_EXACT)),
        ]
    else:
        raise weight_error(weight, "values that are not numbers (the column type is not numeric)")
    for problem, cond in checks:
        if df.filter(cond).limit(1).count():
            raise weight_error(weight, problem)
    return w.cast(T.DecimalType(38, 0))


def _bucket_counts(df: Any, domain: Domain, column: str, group: GroupOf | None, missing: Missing,
                   sample: Sample | None) -> Counts:
    """Records per leaf (or per (group, leaf) cell), optionally at most k per user across groups."""
    from pyspark.sql import functions as F

    size = domain.size
    leaf, bad = leaf_sql(df, column, domain)
    ucol = _check_users(df, sample.user) if sample is not None else "CAST(NULL AS BIGINT)"
    bad = _check_values(df, column, bad, missing, integer_domain=domain.kind == "integer")
    leaf = f"CASE WHEN {bad} THEN NULL ELSE {leaf} END"
    if group is None:
        rows = df.selectExpr(f"{ucol} AS u", f"{leaf} AS leaf").where("leaf IS NOT NULL")
        cells = size
    else:
        joined = _join_groups(df, group.column, group.groups, group.unknown, F.expr(ucol).alias("u"),
                              F.expr(leaf).alias("dpt_leaf"))
        rows = joined.where("dpt_gi IS NOT NULL AND dpt_leaf IS NOT NULL").selectExpr(
            "u", f"dpt_gi * {size} + dpt_leaf AS leaf")
        cells = len(group.groups) * size
    hist = _collect_hist(rows, cells) if sample is None else _bounded_counts(rows, sample.k, cells, sample.source)
    nz = np.flatnonzero(hist)
    return Counts((nz // size, nz % size) if group is not None else (nz,), hist[nz])


def _unit_counts(df: Any, key: Bucket, units: Units, missing: Missing, sample: Sample | None) -> Counts:
    """Records per (leaf, units) cell (:class:`~dptree.data.engines.base.Units`): the cell
    leaf * cells + code of each valid row with a valid weight, counted (or bounded per user,
    :func:`_bounded_counts`, a user's rows ranked by cell) as :func:`_bucket_counts` counts leaves."""
    wcol, grid, size = str(units.column), units.grid, key.domain.size
    if type_name(df, wcol) not in NUMERIC:
        raise DataError(f"weights column {wcol!r} is not numeric: weights must be numbers")
    leaf, bad = leaf_sql(df, str(key.column), key.domain)
    bad = _check_values(df, str(key.column), bad, missing, integer_domain=key.domain.kind == "integer")
    w = f"CAST({quote(wcol)} AS DOUBLE)"
    wbad = _check_values(df, wcol, f"{quote(wcol)} IS NULL OR isnan({w})", missing)
    ucol = _check_users(df, sample.user) if sample is not None else "CAST(NULL AS BIGINT)"
    code = f"{grid.sql(w)} - {grid.lower_units}"
    cell = f"CASE WHEN {bad} OR {wbad} THEN NULL ELSE ({leaf}) * {grid.cells} + ({code}) END"
    rows = df.selectExpr(f"{ucol} AS u", f"{cell} AS leaf").where("leaf IS NOT NULL")
    cells = size * grid.cells
    hist = _collect_hist(rows, cells) if sample is None else _bounded_counts(rows, sample.k, cells, sample.source)
    nz = np.flatnonzero(hist)
    return Counts((nz // grid.cells, nz % grid.cells), hist[nz])


def _user_counts(df: Any, domain: Domain, column: str, users: UserRecords, group: GroupOf | None,
                 missing: Missing) -> Counts:
    """Users per capped number of records: the rows :func:`_bucket_counts` would bound, counted
    per user in Spark; only the histogram of the capped counts reaches the driver."""
    from pyspark.sql import functions as F

    leaf, bad = leaf_sql(df, column, domain)
    ucol = _check_users(df, users.user)
    bad = _check_values(df, column, bad, missing, integer_domain=domain.kind == "integer")
    leaf = f"CASE WHEN {bad} THEN NULL ELSE {leaf} END"
    if group is None:
        rows = df.selectExpr(f"{ucol} AS u", f"{leaf} AS leaf").where("leaf IS NOT NULL")
    else:
        rows = _join_groups(df, group.column, group.groups, group.unknown, F.expr(ucol).alias("u"),
                            F.expr(leaf).alias("dpt_leaf")).where("dpt_gi IS NOT NULL AND dpt_leaf IS NOT NULL")
    per_user = rows.groupBy("u").agg(F.count(F.lit(1)).alias("c"))
    found = (per_user.select(F.least(F.col("c"), F.lit(int(users.cap))).alias("c")).groupBy("c")
             .agg(F.count(F.lit(1)).alias("n")).orderBy("c").collect())
    return Counts((np.array([int(r["c"]) for r in found], dtype=np.int64),),
                  np.array([int(r["n"]) for r in found], dtype=np.int64))


def _grouped_value_counts(df: Any, column: str, group: GroupOf, missing: Missing, infinite: Missing) -> Counts:
    """The rows joined to the public groups (broadcast), then :func:`_value_counts` on each
    group's rows, sorted by group then value."""
    from pyspark.sql import functions as F

    joined = _join_groups(df, group.column, group.groups, group.unknown, F.col(quote(column)).alias(column)).cache()
    try:
        parts = [_value_counts(joined.where(f"dpt_gi = {i}"), column, missing, infinite)
                 for i in range(len(group.groups))]
    finally:
        joined.unpersist()
    gi = np.repeat(np.arange(len(parts), dtype=np.int64), [v.size for v, _ in parts])
    return Counts((gi, np.concatenate([v for v, _ in parts])), np.concatenate([c for _, c in parts]))


def _partition_counts(df: Any, key: Partition, sample: Sample | None) -> Counts:
    """Records, or distinct users after bounding (:func:`_bounded_counts` on the distinct (user,
    key code) pairs), per sorted distinct key of a string or integral column: the distinct keys are
    sorted by Spark and collected (one row each), numbered on the driver and broadcast back."""
    from pyspark.sql import functions as F

    by = str(key.column)
    ktype = type_name(df, by)
    if ktype == "StringType":
        kexpr = quote(by)
    elif ktype in INTEGRAL:
        kexpr = f"CAST({quote(by)} AS BIGINT)"
    else:
        raise partition_key_type_error(by)
    ucol = _check_users(df, sample.user) if sample is not None else "CAST(NULL AS BIGINT)"
    rows = df.selectExpr(f"{ucol} AS u", f"{kexpr} AS dpt_k")
    if rows.agg(F.expr("count_if(dpt_k IS NULL)").alias("n")).collect()[0]["n"] and key.unknown == "error":
        raise missing_keys_error()
    rows = rows.where("dpt_k IS NOT NULL")
    keys = [r["dpt_k"] for r in rows.select("dpt_k").distinct().orderBy("dpt_k").collect()]
    size = len(keys)
    if size == 0:
        return Counts((np.zeros(0, np.int64) if ktype != "StringType" else np.zeros(0, object),), np.zeros(0, np.int64))
    ktype_sql = "string" if ktype == "StringType" else "long"
    codes = df.sparkSession.createDataFrame([(k, i) for i, k in enumerate(keys)], f"dpt_k {ktype_sql}, leaf long")
    coded = rows.join(F.broadcast(codes), "dpt_k").select("u", "leaf")
    hist = (_collect_hist(coded, size) if sample is None
            else _bounded_counts(coded.distinct(), sample.k, size, sample.source))
    values = np.asarray(keys, dtype=object if ktype == "StringType" else np.int64)
    nz = np.flatnonzero(hist)
    return Counts((values[nz],), hist[nz])


class SparkEngine(Engine):
    """Counts of a PySpark DataFrame, computed in Spark; only aggregates reach the driver."""

    READS = "a Spark DataFrame"

    def counts(self, data: Any, keys: Sequence[Key], *, on_invalid: Missing = "error", sample: Sample | None = None,
               weight: str | None = None) -> Counts:
        _pyspark()
        return super().counts(data, keys, on_invalid=on_invalid, sample=sample, weight=weight)

    def _partition_counts(self, data: Any, key: Partition, sample: Sample | None) -> Counts:
        check_names(self.READS, key.column, user_id=sample.user if sample else None)
        try:
            return _partition_counts(data, key, sample)
        except (DataError, InputFormatError):
            raise
        except Exception as exc:
            raise _wrap("user counts per group", str(key.column), exc) from None

    def _user_counts(self, data: Any, users: UserRecords, key: Bucket, group: GroupOf | None, *,
                     on_invalid: Missing) -> Counts:
        check_names(self.READS, key.column, user_id=users.user, by=group.column if group else None)
        column = str(key.column)
        try:
            if group is not None:
                _check_by(data, group.column, group.groups)
            return _user_counts(data, key.domain, column, users, group, on_invalid)
        except (DataError, InputFormatError):
            raise
        except Exception as exc:
            raise _wrap("records per user", column, exc) from None

    def _key_counts(self, data: Any, key: Bucket | Value, group: GroupOf | None, *, on_invalid: Missing,
                    sample: Sample | None) -> Counts:
        user_id, by = (sample.user if sample else None), (group.column if group else None)
        check_names(self.READS, key.column, user_id=user_id, by=by)
        column = str(key.column)
        what = (("grouped value counts" if group else "value counts") if isinstance(key, Value) else
                "grouped histograms" if group else "bounded histogram" if sample else "histogram")
        try:
            if group is not None:
                _check_by(data, group.column, group.groups)
            if isinstance(key, Value):
                if group is None:
                    vals, cnt = _value_counts(data, column, on_invalid, on_invalid)
                    return Counts.of_values((vals, cnt)) if key.distinct else Counts.of_records(np.repeat(vals, cnt))
                return _grouped_value_counts(data, column, group, on_invalid, on_invalid)
            return _bucket_counts(data, key.domain, column, group, on_invalid, sample)
        except (DataError, InputFormatError):
            raise
        except Exception as exc:
            raise _wrap(what, column, exc) from None

    def _unit_counts(self, data: Any, key: Bucket, units: Units, *, on_invalid: Missing,
                     sample: Sample | None) -> Counts:
        check_names(self.READS, key.column, user_id=sample.user if sample else None, weights=units.column)
        try:
            return _unit_counts(data, key, units, on_invalid, sample)
        except (DataError, InputFormatError):
            raise
        except Exception as exc:
            raise _wrap("sums of weights", str(key.column), exc) from None

    def _grid_counts(self, data: Any, x: Bucket, y: Bucket, *, on_invalid: Missing) -> Counts:
        """Records per (x bucket, y bucket), aggregated inside Spark: a row is counted when both of
        its values are valid (``on_invalid`` applies to each column)."""
        check_names(self.READS, x.column)
        check_names(self.READS, y.column)
        cx, cy = str(x.column), str(y.column)
        try:
            lx, bad_x = leaf_sql(data, cx, x.domain)
            ly, bad_y = leaf_sql(data, cy, y.domain)
            bad_x = _check_values(data, cx, bad_x, on_invalid, integer_domain=x.domain.kind == "integer")
            bad_y = _check_values(data, cy, bad_y, on_invalid, integer_domain=y.domain.kind == "integer")
            ny = y.domain.size
            rows = data.selectExpr(f"CASE WHEN {bad_x} OR {bad_y} THEN NULL ELSE ({lx}) * {ny} + ({ly}) END AS leaf"
                                   ).where("leaf IS NOT NULL")
            hist = _collect_hist(rows, x.domain.size * ny)
        except (DataError, InputFormatError):
            raise
        except Exception as exc:
            raise _wrap("grid histogram", f"{cx}, {cy}", exc) from None
        nz = np.flatnonzero(hist)
        return Counts((nz // ny, nz % ny), hist[nz])

    @contextmanager
    def ordered_counts(self, data: Any, *, column: str | None, lower: int | float, upper: int | float,
                       on_invalid: Missing = "error") -> Iterator[OrderedCounts | None]:
        """:class:`~dptree.data.engines.spark_ordered.SparkOrderedCounts` (each query one Spark
        job returning an aggregate); None, decided from the schema and the kind of bounds only,
        for columns that the value counts (:class:`~dptree.data.engines.base.Value` keys) read
        otherwise (dates, non-numeric types, and integer domains over non-integral columns)."""
        _pyspark()
        check_names(self.READS, column)
        assert column is not None
        tname = type_name(data, column)
        usable = tname in INTEGRAL or (tname in NUMERIC and not isinstance(lower, int))
        if not usable:
            yield None
            return
        yield SparkOrderedCounts(data, column, tname, lower, upper, on_invalid, on_invalid, None)

    def _label_counts(self, data: Any, levels: Sequence[str], weight: str | None) -> Counts:
        """Records (or exact weight sums, as DecimalType(38, 0): a long sum would wrap, a double
        sum round above 2^53) per distinct path, aggregated inside Spark."""
        from pyspark.sql import functions as F

        absent = [c for c in list(levels) + ([weight] if weight else []) if c not in data.columns]
        if absent:
            raise InputFormatError(f"Spark DataFrame has no column(s) {absent}; it has {list(data.columns)}")
        total = F.count(F.lit(1)) if weight is None else F.sum(_weight_column(data, weight))
        # integer labels as their decimal text (exact): toPandas makes an integer column with a
        # null float64, rounding labels above 2^53 (one added null row would relabel every row)
        integral = {f.name for f in data.schema.fields if type(f.dataType).__name__ in INTEGRAL}
        keys = [F.col(quote(c)).cast("string").alias(c) if c in integral else F.col(quote(c)) for c in levels]
        pdf = data.groupBy(*keys).agg(total.alias(COUNT)).toPandas()
        exact = [int(v) for v in pdf[COUNT].tolist()]  # Decimal -> int: exact
        if sum(exact) >= MAX_TOTAL:
            raise too_large(weight)
        return Counts(tuple(pdf[c] for c in levels), np.asarray(exact, dtype=np.int64))


