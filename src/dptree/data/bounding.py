"""User-level contribution bounding: keep at most k records per user before the histogram.

Under user-level neighbours (add or remove one *user*), a release whose sensitivity assumes
``max_contributions = k`` (DESIGN section 3: L1 k per level, L2 k per level) is only private if no
user contributes more than k records. This module enforces that: for every user with c > k
records it keeps a uniformly random k-subset of them (:func:`dptree.noise.uniform_subsets`, exact,
randomness from the noise module), then builds the leaf histogram.

Privacy does not rest on the randomness: removing one user changes only that user's kept records,
at most k, whatever the selection. The randomness makes the kept subset unbiased (each of the
user's records is kept with probability k/c), which the test suite checks statistically.

The same algorithm runs in numpy (:func:`bounded_histogram`) and DuckDB
(:func:`file_bounded_histogram`): users are sorted by id, each user's records by leaf index, the
positions to keep are drawn in Python for the users with more than k records, in user order. With
the same ``rng`` both engines therefore give the *same* histogram (tested).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dptree import noise as _noise
from dptree.data.domain import coerce_values
from dptree.data.engines.duckdb import leaf_sql as _leaf_sql
from dptree.errors import (
    DataError,
    InputFormatError,
    InvalidParameterError,
    engine_error,
    length_mismatch_error,
    missing_user_ids_error,
)

__all__ = ["bounded_histogram", "file_bounded_histogram", "user_codes", "check_bound"]


def check_bound(plan: Any, max_contributions: int | None) -> int:
    """The k to enforce: the plan's ``max_contributions`` unless a smaller k >= 1 is given.

    Refuses a ``replace`` plan, whose exact total the bounding would make data-dependent."""
    plan.check_public_total(user_id="bounded")
    k_plan = int(plan.max_contributions)
    if max_contributions is None:
        return k_plan
    k = max_contributions
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or int(k) < 1:
        raise InvalidParameterError(f"max_contributions must be an integer >= 1, got {k!r}")
    if int(k) > k_plan:
        raise InvalidParameterError(
            f"max_contributions={k} exceeds the plan's max_contributions={k_plan}, whose noise only covers "
            f"{k_plan} records per user; plan with max_contributions={k}"
        )
    return int(k)


def user_codes(user_ids: Any, n: int) -> np.ndarray:
    """Dense codes 0..U-1 of user ids, in sorted id order; missing ids raise :class:`DataError`."""
    from dptree.data.inputs import to_numpy

    ids = to_numpy(user_ids, name="user_id")
    if ids.ndim != 1 or ids.size != n:
        raise length_mismatch_error("user_id")
    if ids.dtype.kind == "f":
        missing = np.isnan(ids)
    elif ids.dtype.kind == "O":
        missing = np.fromiter((v is None or (isinstance(v, float) and v != v) for v in ids), bool, ids.size)
    elif ids.dtype.kind == "M":
        missing = np.isnat(ids)
    else:
        missing = np.zeros(ids.size, bool)
    if missing.any():
        raise missing_user_ids_error()
    try:
        _, codes = np.unique(ids, return_inverse=True)
    except TypeError as exc:
        raise DataError("user_id values must be of one comparable type (all numbers or all strings)") from exc
    return codes.astype(np.int64).ravel()


def _kept_positions(src: _noise.RandomSource, heavy_counts: np.ndarray, k: int) -> np.ndarray:
    """(U_heavy, k) positions to keep, drawn in the order of the heavy users."""
    return _noise.uniform_subsets(src, heavy_counts, k)


def bounded_histogram(
    values: Any,
    user_ids: Any,
    plan: Any,
    *,
    max_contributions: int | None = None,
    missing: str = "error",
    rng: _noise.RngLike = None,
) -> np.ndarray:
    """Leaf histogram of ``values`` (length ``plan.layout.padded_size``) after keeping at most k
    records per user (k = ``plan.max_contributions``, or a smaller ``max_contributions``), chosen
    uniformly at random. Feed it to ``plan.release(hist)``.

    ``values`` and ``user_ids`` are any 1-D inputs :func:`dptree.data.inputs.to_numpy` accepts.
    Records with a missing value are dropped before bounding when ``missing="drop"``.
    """
    from dptree.data.inputs import to_numpy

    k = check_bound(plan, max_contributions)
    raw = to_numpy(values, name="values")
    n = raw.size
    codes = user_codes(user_ids, n)
    if raw.ndim == 1 and n and missing == "drop":
        keep = _present(raw)
        raw, codes = raw[keep], codes[keep]
    vals = coerce_values(raw, plan.domain, missing=missing)
    leaves = plan.domain.to_leaves(vals)
    return _bound_leaves(leaves, codes, k, plan.layout.padded_size, _noise.make_source(rng))


def _present(raw: np.ndarray) -> np.ndarray:
    if raw.dtype.kind == "f":
        return ~np.isnan(raw)
    if raw.dtype.kind == "M":
        return ~np.isnat(raw)
    if raw.dtype.kind == "O":
        return np.fromiter((v is not None and not (isinstance(v, float) and v != v) for v in raw), bool, raw.size)
    return np.ones(raw.size, bool)


def _bound_leaves(leaves: np.ndarray, codes: np.ndarray, k: int, padded: int, src: _noise.RandomSource) -> np.ndarray:
    """Histogram (length ``padded``) of ``leaves`` (any cell indices) keeping <= k per user code."""
    if leaves.size == 0:
        return np.zeros(padded, dtype=np.int64)
    order = np.lexsort((leaves, codes))
    sc, sl = codes[order], leaves[order]
    counts = np.bincount(sc)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    keep = counts[sc] <= k
    heavy = np.flatnonzero(counts > k)
    if heavy.size:
        chosen = _kept_positions(src, counts[heavy], k)  # (U_heavy, k)
        flat = (starts[heavy][:, None] + chosen).ravel()
        keep[flat] = True
    return np.bincount(sl[keep], minlength=padded).astype(np.int64)


def file_bounded_histogram(
    path: str,
    column: str,
    user_column: str,
    plan: Any,
    *,
    max_contributions: int | None = None,
    missing: str = "error",
    rng: _noise.RngLike = None,
    fmt: str | None = None,
    progress: Any = False,
) -> np.ndarray:
    """:func:`bounded_histogram` for a CSV/Parquet file, computed inside DuckDB.

    ``progress`` (True, or a callable receiving messages): stage messages and DuckDB's progress,
    on stderr, never on stdout.

    Only per-user record counts of users with more than k records and the final histogram reach
    Python; the kept positions go back to DuckDB as a small table.
    """
    from dptree.data.engines.duckdb import open_table, progress_reporter

    k = check_bound(plan, max_contributions)
    src = _noise.make_source(rng)
    report = progress_reporter(progress)
    try:
        with open_table(path, fmt, report) as (con, expr):
            # DuckDB (2.0) folds isnan(x) to false from Parquet statistics, which omit NaN: NaN values
            # would then pass as numbers. Statistics propagation must be off for exact NaN handling.
            con.execute("SET disabled_optimizers = 'statistics_propagation'")
            leaf_sql, bad_sql = _leaf_sql(con, expr, column, plan.domain, missing)
            ucol = user_sql(con, expr, user_column)
            if report:
                report("bucketing the rows")
            con.execute(
                f"CREATE TEMP TABLE dpt_rows AS SELECT u, leaf FROM (SELECT {ucol} AS u, "
                f"CASE WHEN {bad_sql} THEN NULL ELSE {leaf_sql} END AS leaf FROM {expr}) WHERE leaf IS NOT NULL"
            )
            if report:
                report(f"keeping at most {k} record(s) per user")
            return duckdb_bounded_counts(con, "dpt_rows", k, plan.layout.padded_size, src, report)
    except (DataError, InputFormatError, InvalidParameterError):
        raise
    except Exception as exc:
        raise engine_error("bounded histogram", column, exc) from None


def user_sql(con: Any, expr: str, user_column: str) -> str:
    """The quoted user column after checking it has no missing ids (NULL, or NaN in float columns)."""
    from dptree.data.engines.duckdb import _column_type, _quote_ident

    utype = _column_type(con, expr, user_column)
    ucol = _quote_ident(user_column)
    ubad = f"{ucol} IS NULL" + (f" OR isnan({ucol})" if any(t in utype for t in ("DOUBLE", "FLOAT", "REAL")) else "")
    n_null = con.execute(f"SELECT count_if({ubad}) FROM {expr}").fetchone()[0]
    if n_null:
        raise missing_user_ids_error(user_column)
    return ucol


def duckdb_bounded_counts(
    con: Any, table: str, k: int, n_cells: int, src: _noise.RandomSource, report: Any = None
) -> np.ndarray:
    """Counts per cell of ``table(u, leaf)`` after keeping at most k rows per user u, in DuckDB.

    Same algorithm as the numpy engine: rows of a user ordered by cell, users above k numbered in
    id order, a uniform k-subset of positions drawn for each of them in that order. ``report``
    (a callable or None) receives the name of each stage (never a count).
    """
    say = report or (lambda msg: None)
    say("counting records per user")
    con.execute(f"CREATE TEMP TABLE dpt_uc AS SELECT u, count(*) AS c FROM {table} GROUP BY u")
    con.execute(
        f"CREATE TEMP TABLE dpt_heavy AS SELECT u, c, row_number() OVER (ORDER BY u) - 1 AS h "
        f"FROM dpt_uc WHERE c > {k}"
    )
    counts = np.asarray(con.execute("SELECT c FROM dpt_heavy ORDER BY h").fetchnumpy()["c"], dtype=np.int64)
    # users with at most k rows keep them all: a hash join, no window
    light = con.execute(
        f"SELECT t.leaf, count(*) AS n FROM {table} t JOIN dpt_uc uc ON t.u = uc.u WHERE uc.c <= {k} GROUP BY t.leaf"
    ).fetchnumpy()
    hist = np.zeros(n_cells, dtype=np.int64)
    np.add.at(hist, np.asarray(light["leaf"], dtype=np.int64), np.asarray(light["n"], dtype=np.int64))
    if counts.size:
        say(f"drawing which {k} record(s) each user keeps")
        chosen = _kept_positions(src, counts, k)  # (U_heavy, k), heavy users in id order
        say("counting the kept records")
        kept = {"h": np.repeat(np.arange(counts.size, dtype=np.int64), k), "pos": chosen.ravel()}
        con.register("dpt_kept", _numpy_relation(kept))
        # positions (rank by leaf inside the user) only for the rows of users above k
        ranked = (
            f"SELECT hv.h, t.leaf, row_number() OVER (PARTITION BY t.u ORDER BY t.leaf) - 1 AS pos "
            f"FROM {table} t JOIN dpt_heavy hv ON t.u = hv.u"
        )
        rows = con.execute(
            f"SELECT r.leaf, count(*) AS n FROM ({ranked}) r JOIN dpt_kept kp ON r.h = kp.h AND r.pos = kp.pos "
            "GROUP BY r.leaf"
        ).fetchnumpy()
        np.add.at(hist, np.asarray(rows["leaf"], dtype=np.int64), np.asarray(rows["n"], dtype=np.int64))
        con.unregister("dpt_kept")
    con.execute("DROP TABLE dpt_heavy")
    con.execute("DROP TABLE dpt_uc")
    return hist


def _numpy_relation(columns: dict[str, np.ndarray]) -> Any:
    """A table DuckDB can scan from numpy columns (through pyarrow, installed with duckdb's extras)."""
    import pyarrow as pa

    return pa.table({name: pa.array(col) for name, col in columns.items()})

