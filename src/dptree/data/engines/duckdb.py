"""Leaf histograms of CSV and Parquet files computed inside DuckDB (out of core, multi-threaded).

Only the histogram (one count per bucket) leaves DuckDB; the rows never enter Python. The SQL
clamps values into [lower, upper] and maps them to bucket indices exactly as
:meth:`dptree.data.domain.Domain.to_leaves` does, so a file and the same values as an array give the
same histogram (tested).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Union

import numpy as np

from dptree.data.domain import Domain
from dptree.errors import (
    RANGE_TREE_FLOAT_FIX,
    DataError,
    InputFormatError,
    engine_error,
    infinite_values_error,
    missing_values_error,
    non_integer_values_error,
    redact,
)

__all__ = ["file_leaf_histogram", "read_column", "open_table", "Progress"]

#: ``progress=`` of the file readers: False/None (silent), True (messages on stderr) or a callable
#: that receives each message
Progress = Union[bool, None, Callable[[str], None]]

#: seconds between two progress messages while DuckDB works
PROGRESS_INTERVAL = 2.0


def _stderr_report(msg: str, _t0: list[float] = []) -> None:  # noqa: B006 - the start time, once
    if not _t0:
        _t0.append(time.perf_counter())
    print(f"dptree: {msg} [{time.perf_counter() - _t0[0]:.1f}s]", file=sys.stderr, flush=True)


def progress_reporter(progress: Progress) -> Callable[[str], None] | None:
    """The function that prints progress messages (always to stderr), or None when silent."""
    if not progress:
        return None
    return progress if callable(progress) else _stderr_report


@contextmanager
def _poll_progress(con: Any, report: Callable[[str], None] | None, what: str) -> Iterator[None]:
    """While the block runs, report DuckDB's query progress every PROGRESS_INTERVAL seconds.

    DuckDB's own progress bar prints to stdout, where it would mix with the command's output:
    it is switched off (``enable_progress_bar_print``) and its percentage is read from another
    thread (``query_progress``) and reported to stderr instead."""
    if report is None:
        yield
        return
    con.execute("SET enable_progress_bar = true")
    con.execute("SET enable_progress_bar_print = false")
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(PROGRESS_INTERVAL):
            try:
                pct = float(con.query_progress())
            except Exception:  # the connection closed or is between queries
                continue
            # -1: no query running (work in Python between queries); 0: no estimate (window queries)
            report(f"{what}: DuckDB query {pct:.0f}% done" if pct > 0 else f"{what}: still working")

    thread = threading.Thread(target=run, name="dptree-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _detect_format(path: str) -> str:
    lower = path.lower()
    if lower.endswith((".parquet", ".pq")):
        return "parquet"
    if lower.endswith((".csv", ".tsv", ".txt", ".csv.gz", ".tsv.gz")):
        return "csv"
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise InputFormatError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return "parquet" if head == b"PAR1" else "csv"


@contextmanager
def open_table(path: str, fmt: str | None = None, progress: Progress = False) -> Iterator[tuple[Any, str]]:
    """Yield (DuckDB connection, SQL table expression) for a CSV/Parquet file or '-' (CSV on stdin).

    Standard input is copied to a private temporary file that is removed on exit. ``progress``:
    report DuckDB's progress on stderr (or to a callable) while the block runs; never on stdout.
    """
    try:
        import duckdb
    except ImportError as exc:  # pragma: no cover - duckdb is a core dependency
        raise InputFormatError("reading files needs duckdb: pip install duckdb") from exc
    tmp_name = None
    if path == "-":
        with tempfile.NamedTemporaryFile(prefix="dptree-stdin-", suffix=".csv", delete=False) as tmp:
            stdin = sys.stdin
            tmp.write(stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read().encode("utf-8"))
            tmp_name = tmp.name
        path, fmt = tmp_name, "csv"
    elif not os.path.exists(path):
        raise InputFormatError(f"input file not found: {path}")
    elif os.path.isdir(path):
        raise InputFormatError(f"{path} is a directory, not a CSV or Parquet file")
    con = duckdb.connect()
    try:
        # Parquet statistics leave NaN out, so DuckDB would fold isnan(x) to false and then fail
        # ("statistics corrupt") on a column that holds NaN: keep the optimiser from trusting them.
        con.execute("SET disabled_optimizers = 'statistics_propagation'")
        con.execute("SET enable_progress_bar_print = false")  # DuckDB would print it on stdout
        fmt = fmt or _detect_format(path)
        if fmt == "parquet":
            expr = f"read_parquet({_quote_str(path)})"
        elif fmt == "csv":
            expr = f"read_csv({_quote_str(path)}, auto_detect=true)"
        else:
            raise InputFormatError(f"unknown input format {fmt!r}; use csv or parquet")
        try:
            con.execute(f"DESCRIBE SELECT * FROM {expr}").fetchall()
        except Exception as exc:  # duckdb raises its own exception types
            shown = "stdin" if tmp_name else Path(path).name
            raise InputFormatError(f"cannot read {shown} as {fmt}: {redact(exc)}") from None
        with _poll_progress(con, progress_reporter(progress), "reading " + ("stdin" if tmp_name else path)):
            yield con, expr
    finally:
        con.close()
        if tmp_name:
            os.unlink(tmp_name)


def _column_type(con: Any, expr: str, column: str) -> str:
    rows = con.execute(f"DESCRIBE SELECT * FROM {expr}").fetchall()
    types = {r[0]: r[1] for r in rows}
    if column not in types:
        names = list(types)
        if expr.startswith("read_csv") and (
            all(re.fullmatch(r"column\d+", n) for n in names) or any(d in n for n in names for d in ",;\t|")
        ):
            # DuckDB could not read a header: a ragged or short line, or an unusual delimiter. The
            # names it made up may be a line of the data, so they are not listed.
            raise InputFormatError(
                f"column {column!r} not found: the CSV's header row could not be read; check that every line "
                "has the same number of fields and that the delimiter is a comma (or pass --format parquet "
                "for a Parquet file)"
            )
        raise InputFormatError(f"column {column!r} not found; available columns: {', '.join(names)}")
    return str(types[column]).upper()


def file_leaf_histogram(
    path: str,
    column: str,
    domain: Domain,
    padded_size: int,
    *,
    missing: str = "error",
    fmt: str | None = None,
    progress: Progress = False,
) -> np.ndarray:
    """Bucket counts of ``column`` of a CSV/Parquet file (or '-' for CSV on stdin), via DuckDB."""
    try:
        with open_table(path, fmt, progress) as (con, expr):
            return _histogram(con, expr, column, domain, padded_size, missing)
    except (DataError, InputFormatError):
        raise
    except Exception as exc:
        raise engine_error("histogram", column, exc) from None


def _histogram(con: Any, expr: str, column: str, domain: Domain, padded_size: int, missing: str) -> np.ndarray:
    _column_type(con, expr, column)
    if con.execute(f"SELECT count(*) FROM {expr}").fetchone()[0] == 0:
        return np.zeros(padded_size, dtype=np.int64)  # empty input: a release of noise around zero
    leaf, bad = leaf_sql(con, expr, column, domain, missing)
    sql = f"SELECT {leaf} AS leaf, count(*) AS n FROM {expr} WHERE NOT {bad} GROUP BY 1"
    rows = con.execute(sql).fetchnumpy()
    hist = np.zeros(padded_size, dtype=np.int64)
    np.add.at(hist, np.asarray(rows["leaf"], dtype=np.int64), np.asarray(rows["n"], dtype=np.int64))
    return hist


def leaf_sql(con: Any, expr: str, column: str, domain: Any, missing: str) -> tuple[str, str]:
    """(SQL bucket index, SQL 'value missing' predicate) for ``column``: the same clamping and
    bucketing as :meth:`dptree.data.domain.Domain.to_leaves`. Raises for a column of the wrong type,
    +-inf values, and (with ``missing="error"``) missing values."""
    ctype = _column_type(con, expr, column)
    col = _quote_ident(column)
    numeric = any(t in ctype for t in ("INT", "DOUBLE", "FLOAT", "DECIMAL", "REAL", "NUMERIC"))
    temporal = "DATE" in ctype or "TIMESTAMP" in ctype
    if domain.kind == "datetime":
        if not temporal:
            raise DataError(f"column {column!r} has type {ctype}, but the domain is dates: pass numeric bounds")
        # clamp in the column's own (microsecond) range first: epoch_ns of 9999-12-31 overflows
        lo_us, hi_us = int(domain.lower) // 1000, -(-int(domain.upper) // 1000)
        value = (
            f"epoch_ns(least(greatest(CAST({col} AS TIMESTAMP), make_timestamp({lo_us})), make_timestamp({hi_us})))"
        )
        bad = f"{col} IS NULL"
    else:
        if not numeric:
            hint = " (for dates, give date bounds such as --lower 2024-01-01)" if temporal else ""
            raise DataError(f"column {column!r} has type {ctype}; a numeric domain needs numbers{hint}")
        if "INT" in ctype and "DOUBLE" not in ctype and domain.kind == "integer":
            # clamp in the column's own type (UBIGINT, HUGEINT): uint64 max never reaches a BIGINT cast
            value = f"CAST(least(greatest({col}, {int(domain.lower)}), {int(domain.upper)}) AS BIGINT)"
            bad = f"{col} IS NULL"
        else:
            value = f"CAST({col} AS DOUBLE)"
            inf = con.execute(f"SELECT count_if(isinf({value})) FROM {expr}").fetchone()[0]
            if inf:
                raise infinite_values_error(column)
            bad = f"({col} IS NULL OR isnan({value}))"
    # counted in a projection, not a WHERE: a filter could be pruned by Parquet statistics that omit NaN
    n_missing = con.execute(f"SELECT count_if({bad}) FROM {expr}").fetchone()[0]
    if n_missing and missing == "error":
        raise missing_values_error(column)
    if domain.kind == "integer" and value.endswith("AS DOUBLE)"):
        # as in memory: non-integers are refused, never floored (after the missing-values check)
        frac = con.execute(f"SELECT count_if(NOT {bad} AND {value} <> floor({value})) FROM {expr}").fetchone()[0]
        if frac:
            raise non_integer_values_error(RANGE_TREE_FLOAT_FIX)
    lo, hi, w = domain.lower, domain.upper, domain.width
    if domain.kind == "float":
        leaf = f"CAST(floor((least(greatest({value}, {lo!r}), {hi!r}) - {lo!r}) / {w!r}) AS BIGINT)"
    elif domain.kind == "integer" and value.startswith("CAST(") and value.endswith("AS DOUBLE)"):
        # clamp in DOUBLE first: NaN and huge values never reach the BIGINT cast
        leaf = f"(CAST(floor(least(greatest({value}, {int(lo)}), {int(hi)})) AS BIGINT) - {int(lo)}) // {int(w)}"
    else:
        leaf = f"(least(greatest({value}, {int(lo)}), {int(hi)}) - {int(lo)}) // {int(w)}"
    return f"least({leaf}, {domain.size - 1})", bad


def read_column(path: str, column: str, fmt: str | None = None) -> np.ndarray:
    """All values of one column as a numpy array (for mechanisms that need the values themselves)."""
    try:
        with open_table(path, fmt) as (con, expr):
            _column_type(con, expr, column)
            out = con.execute(f"SELECT {_quote_ident(column)} FROM {expr}").fetchnumpy()[column]
    except (DataError, InputFormatError):
        raise
    except Exception as exc:
        raise engine_error("values", column, exc) from None
    if isinstance(out, np.ma.MaskedArray):
        masked: Any = out
        return np.asarray(masked.astype(object).filled(None) if out.dtype.kind != "f" else masked.filled(np.nan))
    return np.asarray(out)
