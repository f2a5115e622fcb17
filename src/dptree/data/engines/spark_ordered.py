"""The staged exponential mechanisms' queries in Spark (:class:`~dptree.data.engines.base.OrderedCounts`):
a bucket histogram, the distinct values of a rank window with their global ranks, and the two
ranks of one point, each one Spark job whose result is an aggregate, never a row
(:mod:`dptree.interior.staged` runs the mechanism on them). The same clamping, keys and buckets
as :mod:`~dptree.data.engines.duckdb_ordered` (:mod:`~dptree.data.engines.ordered_buckets`), so
a Spark DataFrame, a file and an array give the same point for the same random source."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from dptree.data.engines.base import Missing
from dptree.data.engines.ordered_buckets import (
    INFINITE,
    MISSING,
    flagged_histogram,
    float_bucket_sql,
    float_edges,
    float_key_sql,
    int_edges,
    int_width,
)
from dptree.data.engines.spark_sql import (
    LONG_MAX,
    LONG_MIN,
    collect_columns,
    decimal_sql,
    double_sql,
    long_sql,
    quote,
    value_sql,
)
from dptree.errors import InvalidParameterError, engine_error

__all__ = ["SparkOrderedCounts"]


class SparkOrderedCounts:
    """:class:`~dptree.data.engines.base.OrderedCounts` in Spark: every query is one job that
    returns an aggregate (the bucket histogram, the rank window's distinct values, two ranks).

    Integer domains (integral columns only: ByteType .. LongType): offsets clamped - lower,
    exact. When the domain lies in the 64-bit range with |X| <= 2^63 they are computed in
    BIGINT; otherwise (a 2^64-point domain, or bounds beyond the long range) in DECIMAL(38, 0),
    whose 38 digits hold every offset < 2^64, and shifted by -2^63 into a BIGINT key (the same
    order). Decided from the bounds only. Float domains: the value as DOUBLE (FloatType,
    DecimalType and integers are cast, as the value counts of :meth:`~dptree.data.engines.spark.SparkEngine.counts`
    casts them), clamped, -0.0 read as 0.0 (one key). Buckets: those of
    :mod:`~dptree.data.engines.ordered_buckets`. ``tname``: the column's Spark type (numeric;
    integral on an integer domain), checked by the engine.

    What reaches the driver: ``count`` bucket counts, the window's distinct values (those whose
    rank interval meets [lo_rank, hi_rank]: at most hi_rank - lo_rank + 2, whatever n) and two
    counts per :meth:`ranks`. Exact counts, not private: only a mechanism may read them."""

    def __init__(self, df: Any, column: str, tname: str, lower: int | float, upper: int | float,
                 missing: Missing, infinite: Missing, message: str | None) -> None:
        self.df, self.column = df, column
        self.policy, self.message = (missing, infinite), message
        col = quote(column)
        _, self.bad_missing, self.bad_inf = value_sql(column, tname)
        self.integer = isinstance(lower, int)
        self.shift = 0  # key = offset - shift, a BIGINT
        if self.integer:
            lo, hi = int(lower), int(upper)
            if LONG_MIN <= lo and hi <= LONG_MAX and hi - lo <= LONG_MAX:
                clamped = f"(least(greatest(CAST({col} AS BIGINT), {long_sql(lo)}), {long_sql(hi)}) - {long_sql(lo)})"
                self.key = clamped
            else:  # exact in 38 digits; the shift keeps the key in BIGINT
                clamped = (f"(least(greatest(CAST({col} AS DECIMAL(38, 0)), {decimal_sql(lo)}), {decimal_sql(hi)})"
                           f" - {decimal_sql(lo)})")
                self.shift = 1 << 63
                self.key = f"CAST({clamped} - {decimal_sql(self.shift)} AS BIGINT)"

            def bucket(count: int) -> str:
                return f"CAST({clamped} div {int_width(lo, hi, count)} AS BIGINT)"

            def edges(count: int, first: int, last: int) -> tuple[str | None, str | None]:
                # a bound beyond the long range is left out (the prefilter only needs a superset)
                return tuple(long_sql(e) if e is not None and LONG_MIN <= e <= LONG_MAX else None  # type: ignore
                             for e in int_edges(lo, hi, count, first, last))
        else:
            flo, fhi = float(lower), float(upper)
            lo_s, hi_s = double_sql(flo), double_sql(fhi)
            got = df.sparkSession.sql(f"SELECT {lo_s} AS a, {hi_s} AS b").collect()[0]
            if (got["a"], got["b"]) != (flo, fhi):  # the bounds must reach Spark bit for bit
                raise RuntimeError("Spark did not read the domain's bounds exactly")
            as_double = f"CAST({col} AS DOUBLE)"
            clamped = f"least(greatest({as_double}, {lo_s}), {hi_s})"
            self.key = float_key_sql(clamped)

            def bucket(count: int) -> str:
                return float_bucket_sql(clamped, flo, fhi, count, double_sql)

            def edges(count: int, first: int, last: int) -> tuple[str | None, str | None]:
                a, b = float_edges(flo, fhi, count, first, last)
                return (double_sql(a) if a is not None else None, double_sql(b) if b is not None else None)

        # the prefilter compares the column itself where Spark can push it down to a Parquet scan
        self.raw = col if self.integer or tname == "DoubleType" else f"CAST({col} AS DOUBLE)"
        self._bucket, self._edges = bucket, edges
        self.valid = f"NOT ({self.bad_missing} OR {self.bad_inf})"
        self.count = 0

    def _collect(self, what: str, run: Any) -> Any:
        try:
            return run()
        except Exception as exc:
            raise engine_error(f"{what} in Spark", self.column, exc) from None

    def buckets(self, count: int) -> np.ndarray:
        flagged = (f"CASE WHEN {self.bad_missing} THEN {MISSING} WHEN {self.bad_inf} THEN {INFINITE} "
                   f"ELSE {self._bucket(count)} END")
        grouped = self.df.selectExpr(f"{flagged} AS b").groupBy("b").count()
        b, n = self._collect("ordered counts", lambda: collect_columns(grouped, "b", "count"))
        self.hist = flagged_histogram(np.asarray(b, np.int64), np.asarray(n, np.int64), count, *self.policy,
                                      self.column, self.message)
        self.count = count
        return self.hist.copy()

    def window(self, first: int, last: int, below: int, lo_rank: int, hi_rank: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The running sums run per bucket (a Spark window partitioned by bucket, in parallel),
        each bucket's base -- ``below`` plus the records of the buckets before it in the range,
        from :meth:`buckets` -- added here. From those bases, the buckets whose rank interval
        [base, base + records] misses [lo_rank, hi_rank] are left out, those inside it are kept
        whole, and the rank filter runs in Spark on the at most two buckets that hold lo_rank or
        hi_rank: what is collected is the window, nothing more."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        if not self.count:
            raise InvalidParameterError("OrderedCounts.buckets must run first")
        first, last, lo_rank, hi_rank = int(first), int(last), int(lo_rank), int(hi_rank)
        hist = self.hist[first:last + 1]
        base = int(below) + np.concatenate([[0], np.cumsum(hist)[:-1]]).astype(np.int64)
        top = base + hist  # bucket j's values have upto in [base_j + 1, top_j], #{x < v} in [base_j, top_j - 1]
        meets = np.flatnonzero((hist > 0) & (top >= lo_rank) & (base <= hi_rank))
        if meets.size == 0:
            return np.zeros(0, np.uint64 if self.integer else np.float64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        f, l = first + int(meets[0]), first + int(meets[-1])  # the buckets that meet it (a run: bases increase)
        whole = (base + 1 >= lo_rank) & (top - 1 <= hi_rank)
        cut = [int(j) for j in meets if not whole[j]]  # at most two: those holding lo_rank or hi_rank
        # a range prefilter on the raw column (a superset of the buckets' rows: exact with the
        # bucket test after it), which Spark can push down to a Parquet scan
        a, b = self._edges(self.count, f, l)
        pre = (f" AND {self.raw} >= {a}" if a is not None else "") + (f" AND {self.raw} < {b}" if b is not None else "")
        grouped = (self.df.where(self.valid + pre).selectExpr(f"{self._bucket(self.count)} AS b", f"{self.key} AS v")
                   .where(f"b BETWEEN {f} AND {l}").groupBy("b", "v").count())
        inner = F.sum("count").over(Window.partitionBy("b").orderBy("v").rowsBetween(Window.unboundedPreceding,
                                                                                     Window.currentRow))
        rows = grouped.select("b", "v", "count", inner.alias("i"))
        if cut:
            at = "CASE b " + " ".join(f"WHEN {first + j} THEN {int(base[j])}" for j in cut) + " END"
            rows = rows.where(f"b NOT IN ({', '.join(str(first + j) for j in cut)}) OR "
                              f"({at} + i >= {lo_rank} AND {at} + i - count <= {hi_rank})")
        bs, v, cnt, i = self._collect("ordered counts", lambda: collect_columns(rows, "b", "v", "count", "i"))
        order = np.argsort(v, kind="stable")  # the key's order: offsets (shifted) or floats
        v, n = v[order], np.asarray(cnt, np.int64)[order]
        u = base[np.asarray(bs, np.int64)[order] - first] + np.asarray(i, np.int64)[order]
        if self.integer:  # offsets: the BIGINT key plus the shift, modulo 2^64 (exact: they lie in [0, 2^64))
            return np.asarray(v, np.int64).view(np.uint64) + np.uint64(self.shift), n, u
        return np.asarray(v, np.float64), n, u

    def windows(self, requests: Sequence[tuple[int, int, int, int, int]]
                ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """:meth:`window` of each (first, last, below, lo_rank, hi_rank) in one Spark job: the rows
        of every bucket some request's window meets (each bucket's base is its global rank
        ``below`` + the counts of the buckets before it, whatever the request), running sums per
        bucket, and the rank filter -- any request's -- on the buckets that no request keeps whole;
        each request's window is then cut out of what was collected here."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        if not self.count:
            raise InvalidParameterError("OrderedCounts.buckets must run first")
        if len(requests) < 2:
            return [self.window(*r) for r in requests]
        base = np.concatenate([[0], np.cumsum(self.hist)[:-1]]).astype(np.int64)  # records before each bucket
        top = base + self.hist
        kept: dict[int, list[tuple[int, int]] | None] = {}  # bucket -> None (whole) or its rank ranges
        for first, last, below, lo_rank, hi_rank in requests:
            if int(below) != int(base[int(first)]):
                raise InvalidParameterError("windows: below must be the records before bucket first")
            for j in range(int(first), int(last) + 1):
                if self.hist[j] == 0 or top[j] < lo_rank or base[j] > hi_rank:
                    continue
                if base[j] + 1 >= lo_rank and top[j] - 1 <= hi_rank:
                    kept[j] = None
                elif kept.get(j, []) is not None:
                    kept.setdefault(j, []).append((int(lo_rank), int(hi_rank)))  # type: ignore[union-attr]
        empty = (np.zeros(0, np.uint64 if self.integer else np.float64), np.zeros(0, np.int64), np.zeros(0, np.int64))
        if not kept:
            return [empty for _ in requests]
        listed = sorted(kept)
        grouped = (self.df.where(self.valid).selectExpr(f"{self._bucket(self.count)} AS b", f"{self.key} AS v")
                   .where(f"b IN ({', '.join(map(str, listed))})").groupBy("b", "v").count())
        inner = F.sum("count").over(Window.partitionBy("b").orderBy("v").rowsBetween(Window.unboundedPreceding,
                                                                                     Window.currentRow))
        rows = grouped.select("b", "v", "count", inner.alias("i"))
        cut = {j: r for j, r in kept.items() if r is not None}
        if cut:
            tests = " ".join(f"WHEN {j} THEN " + " OR ".join(f"({int(base[j])} + i >= {lo} AND {int(base[j])} + i - count "
                                                              f"<= {hi})" for lo, hi in r) for j, r in cut.items())
            rows = rows.where(f"CASE b {tests} ELSE true END")
        bs, v, cnt, i = self._collect("ordered counts", lambda: collect_columns(rows, "b", "v", "count", "i"))
        bs = np.asarray(bs, np.int64)
        order = np.lexsort((v, bs))  # bucket, then the key's order within it (the buckets are runs of values)
        bs, v, n = bs[order], np.asarray(v)[order], np.asarray(cnt, np.int64)[order]
        u = base[bs] + np.asarray(i, np.int64)[order]
        if self.integer:
            v = np.asarray(v, np.int64).view(np.uint64) + np.uint64(self.shift)
        else:
            v = np.asarray(v, np.float64)
        out = []
        for first, last, _, lo_rank, hi_rank in requests:
            keep = (bs >= first) & (bs <= last) & (u >= lo_rank) & (u - n <= hi_rank)
            out.append((v[keep], n[keep], u[keep]))
        return out

    def ranks(self, point: int | float) -> tuple[int, int]:
        from pyspark.sql import functions as F

        p = long_sql(int(point) - self.shift) if self.integer else double_sql(float(point))
        counted = self.df.where(self.valid).agg(F.expr(f"count_if({self.key} < {p})").alias("lt"),
                                                F.expr(f"count_if({self.key} <= {p})").alias("le"))
        row = self._collect("ordered counts", lambda: counted.collect()[0])
        return int(row["lt"]), int(row["le"])

    def upto(self, points: Sequence[int | float]) -> np.ndarray:
        from pyspark.sql import functions as F

        if not points:
            return np.zeros(0, dtype=np.int64)
        lits = [long_sql(int(p) - self.shift) if self.integer else double_sql(float(p)) for p in points]
        counted = self.df.where(self.valid).agg(*[F.expr(f"count_if({self.key} <= {p})").alias(f"c{i}")
                                                  for i, p in enumerate(lits)])
        row = self._collect("ordered counts", lambda: counted.collect()[0])
        return np.array([int(row[f"c{i}"] or 0) for i in range(len(lits))], dtype=np.int64)
