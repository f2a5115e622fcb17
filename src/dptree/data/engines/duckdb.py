"""The DuckDB engine: CSV and Parquet files (out of core, multi-threaded) and DuckDB relations.

Only counts and cells leave DuckDB: the histogram (one count per bucket, in one scan that also
runs the checks), for hierarchies one count per distinct path; contribution bounding
(:mod:`dptree.data.engines.duckdb_bounded`) also reads integer user ids into numpy, where they
stay. No value enters Python. The SQL
(:mod:`dptree.data.engines.duckdb_sql`) buckets values exactly as
:meth:`dptree.data.domain.Domain.to_leaves` does and bounding follows :mod:`dptree.data.bounding`,
so a file and the same values as an array give the same counts (tested). A DuckDB relation is
read through Arrow (only the columns used) into a connection of its own: nothing is created in
the caller's connection.
"""

from __future__ import annotations

import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence, TypeVar, Union

import numpy as np

from dptree.data.domain import Domain
from dptree.data.engines.base import COUNT, Engine, Group, Missing, OrderedCounts, Unknown, invalid_values_error
from dptree.data.engines.duckdb_ordered import DuckDBOrderedCounts
from dptree.data.engines.duckdb_progress import Progress, _poll_progress, progress_reporter
from dptree.data.engines.duckdb_sql import (
    cell_sql,
    check_cells,
    check_weight_column,
    column_type,
    column_types,
    leaf_sql,
    quote_ident,
    arrow_table,
    quote_str,
    user_sql,
)
from dptree.data.engines.duckdb_bounded import bounded_counts
from dptree.data.engines.duckdb_values import checked_values, grouped_sorted_value_counts, sorted_value_counts
from dptree.errors import DataError, InputFormatError, InvalidParameterError, engine_error, redact, unknown_groups_error
from dptree.noise import RandomSource

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DuckDBEngine", "csv_value_types", "file_leaf_histogram", "read_column", "open_table", "is_relation",
           "detect_format", "Progress"]

T = TypeVar("T")

# the names the command line and older code import from here
_quote_ident, _column_type = quote_ident, column_type


def is_relation(data: Any) -> bool:
    """A DuckDB relation (``duckdb.sql(...)``, ``con.table(...)``)."""
    return type(data).__module__.split(".")[0] in ("duckdb", "_duckdb") and hasattr(data, "columns")


def detect_format(path: str) -> str:
    """The format of a file, "parquet" or "csv": from its name, else from its first bytes."""
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


#: integer domains within +-2^53 are read from CSV as DOUBLE (every integer there is exact)
EXACT_DOUBLE = 1 << 53


def csv_value_types(column: str, kind: str, lower: Any, upper: Any, *, keep_integers: bool = False
                    ) -> tuple[dict[str, str], dict[str, str]]:
    """How a CSV's value column is read for a domain of ``kind``, never on DuckDB's guess from a
    sample of rows alone: (types, guarded columns). DOUBLE for float domains, and for integer
    domains within +-2^53 (a non-integer is then refused by the integer check, never rounded);
    TIMESTAMP for dates (a time of day is kept, where a guessed DATE drops it). Integer domains
    wider than 2^53, or with ``keep_integers`` (the staged interior paths, which need an integer
    column), keep DuckDB's guess and are *guarded*: where the guess is an integer type, one scan of
    the column as text refuses non-integers (:func:`open_table`); where the guess is text (a
    sample of empty fields), the column is read as DOUBLE within +-2^53, else HUGEINT (guarded too)."""
    if kind == "datetime":
        return {column: "TIMESTAMP"}, {}
    wide = kind == "integer" and max(abs(int(lower)), abs(int(upper))) > EXACT_DOUBLE
    if kind == "integer" and (keep_integers or wide):
        return {}, {column: "HUGEINT" if wide else "DOUBLE"}
    return {column: "DOUBLE"}, {}


def _refuse_rounded_integers(con: Any, path: str, column: str, wide: bool) -> None:
    """DuckDB reads a CSV column it guessed to be integers (from a sample of its rows) by rounding
    any later "5.25": read the column once more, as DOUBLE (``wide``: as text, whose decimal
    digits also show a fraction DOUBLE would round away past 2^53), and refuse non-integers."""
    col = quote_ident(column)
    raw = f"read_csv({quote_str(path)}, auto_detect=true, types={{{quote_str(column)}: '{'VARCHAR' if wide else 'DOUBLE'}'}})"
    num = f"TRY_CAST({col} AS DOUBLE)" if wide else col
    digits = f" OR regexp_matches({col}, '^\\s*[+-]?[0-9]*[.][0-9]*[1-9][0-9]*\\s*$')" if wide else ""
    try:
        found = con.execute(f"SELECT count(*) FROM (SELECT 1 FROM {raw} WHERE {num} <> floor({num}){digits} LIMIT 1)"
                            ).fetchall()[0][0]
    except Exception as exc:  # DuckDB's text quotes the offending line: never passed on as it is
        raise engine_error("values", column, exc) from None
    if found:
        raise DataError(f"column {column!r} holds numbers that are not integers, and the domain is integers: give "
                        "float bounds (e.g. lower=0.0) for a float domain, or round the column first")


def _register_relation(con: Any, rel: Any, columns: Sequence[str] | None) -> str:
    """Register the used ``columns`` of a relation (as Arrow) in ``con``; the table's name."""
    have = list(rel.columns)
    for c in columns or ():
        if c not in have:
            raise InputFormatError(f"column {c!r} not found; available columns: {', '.join(have)}")
    if columns:
        rel = rel.project(", ".join(quote_ident(c) for c in dict.fromkeys(columns)))
    con.register("dpt_input", arrow_table(rel))
    return "dpt_input"


@contextmanager
def open_table(source: Any, fmt: str | None = None, progress: Progress = False, *,
               columns: Sequence[str] | None = None, text: bool = False,
               types: dict[str, str] | None = None,
               integers: dict[str, str] | None = None) -> Iterator[tuple[Any, str]]:
    """Yield (DuckDB connection, SQL table expression) for a CSV/Parquet file, '-' (CSV on stdin)
    or a DuckDB relation (only its ``columns``, when given, are read).

    ``types``: DuckDB types for CSV columns (:func:`csv_value_types`) instead of the types DuckDB
    guesses from a sample of the first rows. A guess of BIGINT rounds a later "5.25" to 5 without
    an error, and a guess of DATE drops a later time of day: a silently wrong count.
    ``integers``: CSV columns whose guess is kept but, where it is an integer type, checked to hold
    integers only (one scan as text); where the guess is text, read as the type given instead.
    Columns the file does not have are left to the "column not found" check.

    Standard input is copied to a private temporary file that is removed on exit. ``text``: read
    every CSV column as text (hierarchy labels such as "007" stay as written). ``progress``:
    report DuckDB's progress on stderr (or to a callable) while the block runs; never on stdout.
    """
    import duckdb

    tmp_name = None
    path = ""
    if not is_relation(source):
        path = os.fspath(source)
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
        if not path:
            expr, shown = _register_relation(con, source, columns), "a DuckDB relation"
        else:
            fmt = fmt or detect_format(path)
            if fmt == "parquet":
                expr = f"read_parquet({quote_str(path)})"
            elif fmt == "csv":
                extra = ", all_varchar=true, header=true" if text else ""
                expr = f"read_csv({quote_str(path)}, auto_detect=true{extra})"
            else:
                raise InputFormatError(f"unknown input format {fmt!r}; use csv or parquet")
            shown = "stdin" if tmp_name else Path(path).name
            try:
                guess = {r[0]: str(r[1]).upper() for r in con.execute(f"DESCRIBE SELECT * FROM {expr}").fetchall()}
                csv = fmt == "csv" and not text
                chosen = {c: t for c, t in (types or {}).items() if c in guess} if csv else {}
                guarded = {c: t for c, t in (integers or {}).items() if c in guess} if csv else {}
                if chosen or guarded:
                    # a column of dates on a numeric domain keeps its type: the domain check then says to give dates
                    chosen = {c: t for c, t in chosen.items()
                              if t == "TIMESTAMP" or not any(d in guess[c] for d in ("DATE", "TIME"))}
                    chosen.update({c: t for c, t in guarded.items() if "CHAR" in guess[c]})
                if chosen:
                    typed = ", ".join(f"{quote_str(c)}: {quote_str(t)}" for c, t in chosen.items())
                    expr = f"read_csv({quote_str(path)}, auto_detect=true, types={{{typed}}})"
                    final = {r[0]: str(r[1]).upper() for r in con.execute(f"DESCRIBE SELECT * FROM {expr}").fetchall()}
                else:
                    final = guess
            except Exception as exc:  # duckdb raises its own exception types
                raise InputFormatError(f"cannot read {shown} as {fmt}: {redact(exc)}") from None
            for c, fallback in guarded.items():
                if "INT" in final[c]:
                    _refuse_rounded_integers(con, path, c, wide=fallback == "HUGEINT")
            shown = "stdin" if tmp_name else path
        with _poll_progress(con, progress_reporter(progress), "reading " + shown):
            yield con, expr
    finally:
        con.close()
        if tmp_name:
            os.unlink(tmp_name)


def _fetch_hist(con: Any, sql: str, cells: int) -> np.ndarray:
    """Counts per cell of ``sql`` (rows ``leaf, n`` of a GROUP BY leaf: each leaf once)."""
    rows = con.execute(sql).fetchnumpy()
    hist = np.zeros(cells, dtype=np.int64)
    hist[np.asarray(rows["leaf"], dtype=np.int64)] = np.asarray(rows["n"], dtype=np.int64)
    return hist


#: the most bits of a dense GROUP BY key for which DuckDB may use its perfect hash aggregate (a
#: table of 2^bits counts per thread: ~38 MB at 22 bits)
PERFECT_BITS = 22


def dense_group_by(con: Any, cells: int, ctype: str) -> None:
    """Let DuckDB count a GROUP BY of cells in [-3, cells) of an integer column (type ``ctype``)
    with its perfect hash aggregate (an array indexed by the key, no hashing) when the column's
    statistics bound the key (Parquet statistics through the clamping): :func:`trust_statistics`
    with a threshold of the key's bits. DuckDB's default allows 12 bits."""
    bits = (cells + 4).bit_length() + 1  # the key's range, plus one value for NULL
    if "INT" in ctype and bits <= PERFECT_BITS:
        trust_statistics(con, ctype, perfect_bits=max(bits, 12))


def trust_statistics(con: Any, *ctypes: str, perfect_bits: int = PERFECT_BITS) -> bool:
    """Switch DuckDB's statistics propagation back on (and allow its perfect hash aggregate up to
    ``perfect_bits`` bits of key range) when none of the columns read, of types ``ctypes``, can
    hold NaN; whether it did. :func:`open_table` switches the statistics off because Parquet's
    leave NaN out (DuckDB would fold ``isnan(x)`` to false); without a float column they are
    exact. With them DuckDB also sorts on narrower keys and groups small integer keys without
    hashing. Only the column types decide, never the data."""
    if any(t in ctype.upper() for ctype in ctypes for t in ("FLOAT", "DOUBLE", "REAL")):
        return False
    con.execute("SET disabled_optimizers = ''")
    con.execute(f"SET perfect_ht_threshold = {perfect_bits}")
    return True


def _join_groups(con: Any, expr: str, by: str, groups: Sequence[Group], unknown: Unknown, select: str) -> None:
    """``dpt_joined``: ``select`` (expressions on the rows ``t`` of ``expr``) and ``gi``, the index of
    the row's group in the public ``groups`` (NULL for unlisted or missing groups, which raise
    :func:`~dptree.errors.unknown_groups_error` unless ``unknown="drop"``). The by column's type
    must match the groups' (strings or integers)."""
    import pyarrow as pa

    btype = column_type(con, expr, by)
    if isinstance(groups[0], str) != ("VARCHAR" in btype or "CHAR" in btype or "TEXT" in btype):
        raise DataError(
            f"by column {by!r} has type {btype} but groups are "
            f"{'strings' if isinstance(groups[0], str) else 'integers'}; give groups of the column's type"
        )
    numeric = any(t in btype for t in ("INT", "DOUBLE", "FLOAT", "DECIMAL"))
    if not isinstance(groups[0], str) and not numeric:
        raise DataError(f"by column {by!r} has type {btype}; integer groups need a numeric column")
    con.register("dpt_groups", pa.table({"gv": pa.array(list(groups)),
                                         "gi": pa.array(np.arange(len(groups), dtype=np.int64))}))
    con.execute(f"CREATE TEMP TABLE dpt_joined AS SELECT {select}, g.gi AS gi FROM {expr} t "
                f"LEFT JOIN dpt_groups g ON t.{quote_ident(by)} = g.gv")
    if con.execute("SELECT count_if(gi IS NULL) FROM dpt_joined").fetchall()[0][0] and unknown == "error":
        raise unknown_groups_error()


class DuckDBEngine(Engine):
    """Counts of CSV/Parquet files and DuckDB relations, computed in DuckDB. ``fmt``: the file
    format ("csv" or "parquet"; default: from the name or the first bytes). ``progress``: stage
    messages and DuckDB's progress, on stderr (or to a callable), never on stdout."""

    READS = "a file"

    def __init__(self, fmt: str | None = None, progress: Progress = False) -> None:
        self.fmt, self.progress = fmt, progress

    def _names(self, data: Any, column: Any, **refs: Any) -> None:
        self.names(column, reads="a DuckDB relation" if is_relation(data) else None, **refs)

    def _open(self, data: Any, *columns: str | None, text: bool = False, value: str | None = None,
              kind: str | None = None, lower: Any = None, upper: Any = None, keep_integers: bool = False) -> Any:
        """:func:`open_table` on ``columns``; the ``value`` column of a CSV is read as its domain
        needs (``kind``, ``lower``, ``upper``, ``keep_integers``: :func:`csv_value_types`)."""
        types, guarded = (csv_value_types(value, kind, lower, upper, keep_integers=keep_integers)
                          if value and kind else ({}, {}))
        return open_table(data, self.fmt, self.progress, columns=[c for c in columns if c], text=text, types=types,
                          integers=guarded)

    def _open_domain(self, data: Any, domain: Domain, value: str | None, *columns: str | None) -> Any:
        return self._open(data, value, *columns, value=value, kind=domain.kind, lower=domain.lower,
                          upper=domain.upper)

    def leaf_histogram(self, data: Any, domain: Domain, cells: int, *, column: str | None,
                       missing: Missing) -> np.ndarray:
        self._names(data, column)
        assert column is not None
        try:
            with self._open_domain(data, domain, column) as (con, expr):
                ctype = column_type(con, expr, column)
                if not con.execute(f"SELECT count(*) FROM (SELECT 1 FROM {expr} LIMIT 1)").fetchall()[0][0]:
                    return np.zeros(cells, dtype=np.int64)  # empty input: a release of noise around zero
                # one scan: the leaves and the checks' flags (negative cells) in one GROUP BY
                dense_group_by(con, cells, ctype)
                rows = con.execute(f"SELECT {cell_sql(con, expr, column, domain)} AS leaf, count(*) AS n "
                                   f"FROM {expr} GROUP BY 1").fetchnumpy()
                leaf, n = np.asarray(rows["leaf"], dtype=np.int64), np.asarray(rows["n"], dtype=np.int64)
                check_cells(set(leaf[leaf < 0].tolist()), column, missing)
                hist = np.zeros(cells, dtype=np.int64)
                hist[leaf[leaf >= 0]] = n[leaf >= 0]
                return hist
        except (DataError, InputFormatError):
            raise
        except Exception as exc:
            raise engine_error("histogram", column, exc) from None

    def bounded_histogram(self, data: Any, domain: Domain, cells: int, *, column: str | None, user_id: Any,
                          k: int, missing: Missing, source: RandomSource) -> np.ndarray:
        self._names(data, column, user_id=user_id)
        report = progress_reporter(self.progress)
        try:
            with self._open_domain(data, domain, column, user_id) as (con, expr):
                # exact statistics when no column can hold NaN: cheaper checks, GROUP BY u and sort
                trust_statistics(con, column_type(con, expr, str(column)), column_type(con, expr, user_id))
                leaf, bad = leaf_sql(con, expr, str(column), domain, missing)
                ucol = user_sql(con, expr, user_id)
                if report:
                    report(f"bucketing the rows and keeping at most {k} record(s) per user")
                # a query, not a table: each of bounded_counts' two scans reads the file again, which
                # costs less than writing every row into DuckDB first. With missing="error" the checks
                # refused any missing value, so no row is dropped (and counting per user reads only u).
                rows = (f"(SELECT {ucol} AS u, {leaf} AS leaf FROM {expr})" if missing == "error" else
                        f"(SELECT u, leaf FROM (SELECT {ucol} AS u, CASE WHEN {bad} THEN NULL ELSE {leaf} END AS leaf "
                        f"FROM {expr}) WHERE leaf IS NOT NULL)")
                return bounded_counts(con, rows, k, cells, source, report)
        except (DataError, InputFormatError, InvalidParameterError):
            raise
        except Exception as exc:
            raise engine_error("bounded histogram", column, exc) from None

    def grouped_histograms(self, data: Any, domain: Domain, cells: int, *, column: str | None, by: Any,
                           groups: Sequence[Group], unknown: Unknown, user_id: Any, k: int | None,
                           missing: Missing, source: RandomSource) -> np.ndarray:
        self._names(data, column, user_id=user_id, by=by)
        G = len(groups)
        try:
            with self._open_domain(data, domain, column, by, user_id) as (con, expr):
                leaf, bad = leaf_sql(con, expr, str(column), domain, missing)
                ucol = user_sql(con, expr, user_id) if user_id is not None else "NULL"
                _join_groups(con, expr, by, groups, unknown,
                             f"{ucol} AS u, CASE WHEN {bad} THEN NULL ELSE {leaf} END AS leaf")
                con.execute(f"CREATE TEMP TABLE dpt_rows AS SELECT u, gi * {cells} + leaf AS leaf FROM dpt_joined "
                            "WHERE gi IS NOT NULL AND leaf IS NOT NULL")
                if k is None or user_id is None:
                    hist = _fetch_hist(con, "SELECT leaf, count(*) AS n FROM dpt_rows GROUP BY leaf", G * cells)
                else:
                    hist = bounded_counts(con, "dpt_rows", k, G * cells, source, progress_reporter(self.progress))
                return hist.reshape(G, cells)
        except (DataError, InputFormatError, InvalidParameterError):
            raise
        except Exception as exc:
            raise engine_error("grouped histograms", column, exc) from None

    def grouped_value_counts(self, data: Any, *, column: str | None, by: Any, groups: Sequence[Group],
                             unknown: Unknown, missing: Missing = "error", infinite: Missing = "error",
                             message: str | None = None,
                             domain: tuple[str, Any, Any] | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
        """The rows joined to the public groups once (a temporary table of the value and the
        group's index), the checks and the groups' sizes in one scan of it, then :meth:`value_counts`'
        counting on each group's rows."""
        self._names(data, column, by=by)
        assert column is not None
        kind, lower, upper = domain or (None, None, None)
        try:
            with self._open(data, column, by, value=column, kind=kind, lower=lower, upper=upper,
                            keep_integers=True) as (con, expr):
                col = quote_ident(column)
                _join_groups(con, expr, by, groups, unknown, f"t.{col} AS {col}")
                return grouped_sorted_value_counts(con, "dpt_joined", column, len(groups), missing, infinite, message)
        except (DataError, InputFormatError):
            raise
        except Exception as exc:
            raise engine_error("grouped value counts", column, exc) from None

    def value_counts(self, data: Any, *, column: str | None, missing: Missing = "error",
                     infinite: Missing = "error", message: str | None = None,
                     domain: tuple[str, Any, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """One ``GROUP BY x ORDER BY x`` in DuckDB; only the distinct values and counts leave it.
        ``domain`` (kind, lower, upper): a CSV's column is read as that domain needs
        (:func:`csv_value_types`; integers guarded, not read as DOUBLE)."""
        return self._on_column(data, column, domain, "value counts",
                               lambda con, expr, col: sorted_value_counts(con, expr, col, missing, infinite, message))

    def values(self, data: Any, *, column: str | None, missing: Missing = "error", infinite: Missing = "error",
               message: str | None = None, domain: tuple[str, Any, Any] | None = None) -> np.ndarray:
        """One scan of the valid values into numpy, unsorted (a CSV read as ``domain`` needs, as
        :meth:`value_counts`)."""
        return self._on_column(data, column, domain, "values",
                               lambda con, expr, col: checked_values(con, expr, col, missing, infinite, message))

    def _on_column(self, data: Any, column: str | None, domain: tuple[str, Any, Any] | None, what: str,
                   run: Callable[[Any, str, str], T]) -> T:
        """``run(con, expr, column)`` on the value column of ``data`` (a CSV read as ``domain`` needs,
        integers guarded); engine failures become :func:`~dptree.errors.engine_error` naming ``what``."""
        self._names(data, column)
        assert column is not None
        kind, lower, upper = domain or (None, None, None)
        try:
            with self._open(data, column, value=column, kind=kind, lower=lower, upper=upper,
                            keep_integers=True) as (con, expr):
                return run(con, expr, column)
        except (DataError, InputFormatError):
            raise
        except Exception as exc:
            raise engine_error(what, column, exc) from None

    @contextmanager
    def ordered_counts(self, data: Any, *, column: str | None, lower: int | float, upper: int | float,
                       missing: Missing = "error", infinite: Missing = "error",
                       message: str | None = None) -> Iterator[OrderedCounts | None]:
        """One connection for the session's queries (:class:`~dptree.data.engines.duckdb_ordered.DuckDBOrderedCounts`); None for columns
        whose values the staged path does not read exactly like :meth:`value_counts` (dates,
        128-bit integers, and integer domains over non-integer columns)."""
        self._names(data, column)
        assert column is not None
        kind = "integer" if isinstance(lower, int) else "float"
        with self._open(data, column, value=column, kind=kind, lower=lower, upper=upper,
                        keep_integers=True) as (con, expr):
            try:
                ctype = column_type(con, expr, column)
            except InputFormatError:
                raise
            except Exception as exc:
                raise engine_error("ordered counts", column, exc) from None
            integer = isinstance(lower, int)
            ints = "INT" in ctype and "HUGEINT" not in ctype
            floating = any(t in ctype for t in ("DOUBLE", "FLOAT", "REAL", "DECIMAL", "NUMERIC"))
            if not (ints or (floating and not integer)):
                yield None
            else:
                yield DuckDBOrderedCounts(con, expr, column, ctype, lower, upper, missing, infinite, message)

    def path_counts(self, data: Any, levels: Sequence[str], *, weight: str | None) -> pd.DataFrame:
        import duckdb

        try:
            with self._open(data, *levels, weight, text=True) as (con, expr):
                have = column_types(con, expr)
                absent = [c for c in list(levels) + ([weight] if weight else []) if c not in have]
                if absent:
                    # the file's column names are not listed: on a malformed CSV they can be a data line
                    raise InputFormatError(f"the data has no column(s) {absent}; check its header row")
                keys = ", ".join(quote_ident(c) for c in levels)
                # every group sum <= the total < MAX_TOTAL: exact in BIGINT; count(*) without weights
                # (a SUM of 1s would add in HUGEINT)
                total = ("count(*)" if weight is None
                         else f"CAST(SUM({check_weight_column(con, expr, weight)}) AS BIGINT)")
                rel = con.sql(f"SELECT {keys}, {total} AS {COUNT} FROM {expr} GROUP BY ALL")
                # through Arrow: labels stay Arrow strings (no Python object per distinct path)
                return arrow_table(rel).to_pandas()
        except duckdb.Error as exc:
            # DuckDB's message may quote a line or a value of the file: say only what failed
            raise InputFormatError(
                f"cannot read the data ({type(exc).__name__}); check that it is a valid CSV/Parquet file "
                "with a header row"
            ) from None


def file_leaf_histogram(path: str, column: str, domain: Domain, padded_size: int, *, missing: Missing = "error",
                        fmt: str | None = None, progress: Progress = False) -> np.ndarray:
    """Bucket counts of ``column`` of a CSV/Parquet file (or '-' for CSV on stdin), via DuckDB."""
    return DuckDBEngine(fmt, progress).leaf_histogram(path, domain, padded_size, column=column, missing=missing)


def read_column(path: str, column: str, fmt: str | None = None) -> np.ndarray:
    """All values of one column as a numpy array (for mechanisms that need the values themselves)."""
    try:
        with open_table(path, fmt) as (con, expr):
            column_type(con, expr, column)
            out = con.execute(f"SELECT {quote_ident(column)} FROM {expr}").fetchnumpy()[column]
    except (DataError, InputFormatError):
        raise
    except Exception as exc:
        raise engine_error("values", column, exc) from None
    if isinstance(out, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(out)
        if out.dtype.kind == "f":
            return np.where(mask, np.nan, out.data)
        values = np.asarray(out.data, dtype=object)  # NULLs become None (filled(None) would give '?')
        values[mask] = None
        return values
    return np.asarray(out)
