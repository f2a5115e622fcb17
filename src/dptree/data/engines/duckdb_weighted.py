"""Records per (bucket, weight units) cell in DuckDB (a :class:`~dptree.data.engines.base.Units` key
after a Bucket key): the sums of a weight per bucket, for range sums. The cell of a row is
leaf * cells + (units - lower units), the leaf as :func:`~dptree.data.engines.duckdb_sql.leaf_sql`
buckets it and the units by :meth:`~dptree.data.weights.WeightGrid.sql` (the in-memory rule, in
DOUBLE); bounding per user ranks a user's rows by that cell
(:func:`~dptree.data.engines.duckdb_bounded.bounded_counts`), as the numpy engine does. Only the
counts of the cells leave DuckDB."""

from __future__ import annotations

from typing import Any

import numpy as np

from dptree.data.engines.base import Bucket, Counts, Missing, Sample, Units
from dptree.data.engines.duckdb_bounded import bounded_counts
from dptree.data.engines.duckdb_progress import progress_reporter
from dptree.data.engines.duckdb_sql import column_type, leaf_sql, quote_ident, user_sql
from dptree.errors import DataError, InputFormatError, InvalidParameterError, check_invalid, engine_error

__all__ = ["unit_counts"]


def unit_counts(engine: Any, data: Any, key: Bucket, units: Units, *, on_invalid: Missing,
                sample: Sample | None) -> Counts:
    """:meth:`~dptree.data.engines.base.Engine._unit_counts` of a file or relation (``engine``: the
    :class:`~dptree.data.engines.duckdb.DuckDBEngine` that opens it). Weights are read as DOUBLE
    (a CSV's weight column is declared so, never guessed); missing and infinite ones are invalid."""
    column, user_id, grid, domain = str(key.column), sample.user if sample else None, units.grid, key.domain
    if not isinstance(units.column, str):
        raise InvalidParameterError(f"for {engine.READS}, weights must be a column name")
    engine._names(data, key.column, user_id=user_id)
    try:
        with engine._open_domain(data, domain, column, units.column, user_id, as_text=[user_id], missing=on_invalid,
                                 doubles=[units.column]) as (con, expr):
            leaf, bad = leaf_sql(con, expr, column, domain, on_invalid)
            wtype = column_type(con, expr, units.column)
            if not any(t in wtype for t in ("INT", "DOUBLE", "FLOAT", "DECIMAL", "REAL", "NUMERIC")):
                raise DataError(f"weights column {units.column!r} has type {wtype}: weights must be numbers")
            w = f"CAST({quote_ident(units.column)} AS DOUBLE)"
            missing, infinite = f"({w} IS NULL OR isnan({w}))", f"isinf({w})"
            flags = f"SELECT count_if({missing}), count_if({infinite}) FROM {expr}"
            n_missing, n_inf = con.execute(flags).fetchall()[0]
            check_invalid({k for k, n in (("missing", n_missing), ("infinite", n_inf)) if n}, on_invalid, units.column)
            cell = f"({leaf}) * {grid.cells} + ({grid.sql(w)} - {grid.lower_units})"
            keep = f"NOT {bad} AND NOT {missing} AND NOT {infinite}"
            if sample is None:
                rows = con.execute(f"SELECT {cell} AS cell, count(*) AS n FROM {expr} WHERE {keep} "
                                   "GROUP BY 1").fetchnumpy()
                cells, n = np.asarray(rows["cell"], dtype=np.int64), np.asarray(rows["n"], dtype=np.int64)
            else:
                ucol = user_sql(con, expr, str(user_id), engine._csv(data))
                hist = bounded_counts(con, f"(SELECT {ucol} AS u, {cell} AS leaf FROM {expr} WHERE {keep})", sample.k,
                                      domain.size * grid.cells, sample.source, progress_reporter(engine.progress))
                cells = np.flatnonzero(hist)
                n = hist[cells]
    except (DataError, InputFormatError, InvalidParameterError):
        raise
    except Exception as exc:
        raise engine_error("sums of weights", column, exc) from None
    return Counts((cells // grid.cells, cells % grid.cells), n)
