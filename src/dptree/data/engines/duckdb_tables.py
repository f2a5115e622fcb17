"""Opening inputs as DuckDB tables: CSV and Parquet files, standard input and DuckDB relations,
each in a connection of its own (:func:`open_table`), with the CSV value column read as its domain
needs (:func:`csv_value_types`) and 128-bit integer columns of a relation read back exactly."""

from __future__ import annotations

import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from dptree.data.engines.duckdb_progress import Progress, _poll_progress, progress_reporter
from dptree.data.engines.duckdb_sql import arrow_table, quote_ident, quote_str
from dptree.errors import DataError, InputFormatError, engine_error, redact

__all__ = ["EXACT_DOUBLE", "csv_value_types", "detect_format", "is_csv", "is_relation", "open_table"]


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


def is_csv(path: Any, fmt: str | None = None) -> bool:
    """Whether the file ``path`` (or standard input, "-") is read as CSV, whose column types DuckDB
    would infer from the rows (a Parquet file declares its schema)."""
    return fmt == "csv" or (fmt is None and (str(path) == "-" or detect_format(os.fspath(path)) == "csv"))


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
    used = list(dict.fromkeys(columns)) if columns else have
    # Arrow has no 128-bit integers: DuckDB would send them as DECIMAL(38, 0), read back as DOUBLE
    # (rounded past 2^53) or overflowing past 10^38; they travel as decimal text and are cast back
    wide = {c: str(t).upper() for c, t in zip(have, rel.types) if c in used and str(t).upper() in _WIDE_INTS}
    if columns or wide:
        rel = rel.project(", ".join(f"CAST({quote_ident(c)} AS VARCHAR) AS {quote_ident(c)}" if c in wide
                                    else quote_ident(c) for c in used))
    con.register("dpt_arrow" if wide else "dpt_input", arrow_table(rel))
    if wide:
        back = ", ".join(f"CAST({quote_ident(c)} AS {t}) AS {quote_ident(c)}" for c, t in wide.items())
        con.execute(f"CREATE TEMP VIEW dpt_input AS SELECT * REPLACE ({back}) FROM dpt_arrow")
    return "dpt_input"


_WIDE_INTS = ("HUGEINT", "UHUGEINT")


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
