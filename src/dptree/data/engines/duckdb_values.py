"""The sorted distinct values of a column and their counts, in DuckDB (:class:`~dptree.data.engines.base.Value` keys):
read into numpy and sorted there in parallel up to :data:`IN_MEMORY_VALUES` rows, sorted by
DuckDB (in parallel, out of core) and streamed back as runs past it. Only the distinct values and
their counts leave; the missing/infinite checks name the kind of problem, never a count."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from dptree.data.engines.base import Missing, invalid_values_error
from dptree.data.engines.duckdb_sql import arrow_table, column_type, quote_ident
from dptree.data.sorting import distinct_counts, run_lengths
from dptree.errors import DataError

__all__ = ["sorted_value_counts", "grouped_sorted_value_counts", "checked_values", "IN_MEMORY_VALUES"]


#: rows per batch streamed out of DuckDB by :func:`sorted_value_counts`
_BATCH = 1 << 20
#: the most rows :func:`sorted_value_counts` sorts in numpy (peak RSS grew by 47 bytes a row on 10^7
#: distinct floats from Parquet, outputs included, against 73 with DuckDB's sort: about 3 GB here);
#: past it DuckDB sorts them (out of core)
IN_MEMORY_VALUES = 1 << 26


def sorted_value_counts(con: Any, expr: str, column: str, missing: Missing, infinite: Missing,
                        message: str | None) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct values of ``column`` of ``expr`` (a table in ``con``) and their counts,
    after the missing/infinite checks of ``missing``/``infinite`` (module docstring)."""
    value, valid, ctype, (rows,) = _checked(con, expr, column, missing, infinite, message)
    return _collect(con, value, f"FROM {expr} WHERE {valid}", ctype, rows)


def checked_values(con: Any, expr: str, column: str, missing: Missing, infinite: Missing) -> np.ndarray:
    """Every valid value of ``column`` of ``expr``, unsorted, after the checks of
    :func:`sorted_value_counts` (one scan into numpy: no sort)."""
    value, valid, ctype, _ = _checked(con, expr, column, missing, infinite, None)
    if "HUGEINT" in ctype:  # wider than 64 bits: Python ints
        return np.repeat(*_collect(con, value, f"FROM {expr} WHERE {valid}", ctype, 0))
    return np.asarray(arrow_table(con.sql(f"SELECT {value} AS v FROM {expr} WHERE {valid}")).column(0).to_numpy())


def grouped_sorted_value_counts(con: Any, table: str, column: str, n_groups: int, missing: Missing,
                                infinite: Missing, message: str | None) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`sorted_value_counts` of each group of ``table`` (its rows with ``gi`` = 0 .. n_groups - 1;
    rows whose ``gi`` is NULL are not counted): the checks and the groups' row counts in one scan, then
    one scan of each group's values."""
    value, valid, ctype, rows = _checked(con, f"(SELECT * FROM {table} WHERE gi IS NOT NULL)", column, missing,
                                         infinite, message, n_groups=n_groups)
    return [_collect(con, value, f"FROM {table} WHERE gi = {i} AND {valid}", ctype, rows[i]) for i in range(n_groups)]


def _checked(con: Any, expr: str, column: str, missing: Missing, infinite: Missing, message: str | None, *,
             n_groups: int | None = None) -> tuple[str, str, str, list[int]]:
    """(the value expression, the valid-row condition, the column's type, the row count, or each
    group's) after the missing/infinite checks over every row of ``expr``."""
    ctype = column_type(con, expr, column)
    col = quote_ident(column)
    whole = re.fullmatch(r"(?:DECIMAL|NUMERIC)\((\d+),\s*0\)", ctype)  # whole numbers: exact (DOUBLE rounds past 2^53)
    floating = whole is None and any(t in ctype for t in ("DOUBLE", "FLOAT", "REAL", "DECIMAL", "NUMERIC"))
    if not (whole or floating or "INT" in ctype or "DATE" in ctype or "TIMESTAMP" in ctype):
        raise DataError(f"column {column!r} has type {ctype}; the values must be numbers or dates")
    if whole:
        ctype = "BIGINT" if int(whole.group(1)) <= 18 else "HUGEINT"
        value = f"CAST({col} AS {ctype})"
    else:
        value = f"CAST({col} AS DOUBLE)" if floating else col
    bad_missing = f"({col} IS NULL" + (f" OR isnan({value}))" if floating else ")")
    bad_inf = f"isinf({value})" if floating else "false"
    # counted in a projection, not a WHERE: a filter could be pruned by Parquet statistics that omit NaN
    if n_groups is None:
        n_missing, n_inf, total = con.execute(
            f"SELECT count_if({bad_missing}), count_if({bad_inf}), count(*) FROM {expr}").fetchall()[0]
        rows = [int(total)]
    else:
        per = con.execute(f"SELECT gi, count_if({bad_missing}), count_if({bad_inf}), count(*) FROM {expr} "
                          "GROUP BY gi").fetchall()
        n_missing, n_inf = sum(r[1] for r in per), sum(r[2] for r in per)
        rows = [0] * n_groups
        for gi, _, _, count in per:
            rows[int(gi)] = int(count)
    if n_missing and missing == "error":
        raise invalid_values_error("missing", column, message)
    if n_inf and infinite == "error":
        raise invalid_values_error("infinite", column, message)
    return value, f"NOT ({bad_missing} OR {bad_inf})", ctype, rows


def _collect(con: Any, value: str, where: str, ctype: str, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct values of ``value`` over the rows of ``where`` (a FROM ... WHERE clause)
    and their counts; ``rows`` (at least the rows it selects) only picks the path."""
    if "HUGEINT" in ctype:  # wider than 64 bits: the distinct values as Python ints
        out = con.execute(f"SELECT {value} AS v, count(*) AS n {where} GROUP BY 1 ORDER BY 1").fetchall()
        return np.array([r[0] for r in out], dtype=object), np.array([r[1] for r in out], dtype=np.int64)
    if rows <= IN_MEMORY_VALUES:
        # one scan into numpy, then a parallel sort of order-preserving keys (dptree.data.sorting):
        # 2-2.5x faster than DuckDB's sort below on 10^7 floats. The row count only picks the path
        # (both give the same arrays); it reaches no output.
        col = arrow_table(con.sql(f"SELECT {value} AS v {where}")).column(0)
        return distinct_counts(np.asarray(col.to_numpy()))
    # DuckDB sorts (in parallel, out of core); the sorted rows stream out in batches and only
    # their runs are kept, so Python holds the distinct values and one batch. (A GROUP BY with
    # ORDER BY is ~3x slower on high-cardinality columns: hashing every distinct value, then sorting.)
    rel = con.sql(f"SELECT {value} AS v {where} ORDER BY 1")
    reader = rel.to_arrow_reader(_BATCH) if hasattr(rel, "to_arrow_reader") else rel.fetch_record_batch(_BATCH)
    vals: list[np.ndarray] = []
    cnts: list[np.ndarray] = []
    for batch in reader:
        v, c = run_lengths(np.asarray(batch.column(0).to_numpy(zero_copy_only=False)))
        if vals and v.size and vals[-1][-1] == v[0]:  # a run across two batches
            cnts[-1][-1] += c[0]
            v, c = v[1:], c[1:]
        vals.append(v)
        cnts.append(c)
    if not vals:
        out = con.execute(f"SELECT {value} AS v {where} LIMIT 0").fetchnumpy()["v"]
        return np.asarray(out), np.zeros(0, np.int64)
    return np.concatenate(vals), np.concatenate(cnts)

