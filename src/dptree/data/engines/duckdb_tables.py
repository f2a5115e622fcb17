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
from dptree.errors import InputFormatError, check_invalid, engine_detail, engine_error

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
    """How a CSV's value column is read for a domain of ``kind``, from the public domain only, never
    on DuckDB's guess from a sample of rows: (types, guarded columns). DOUBLE for float domains,
    and for integer domains within +-2^53 (every integer there is exact; a non-integer is then
    handled by the caller's policy, never rounded); TIMESTAMP for dates (a time of day is kept,
    where a guessed DATE drops it). ``keep_integers`` (the staged interior paths, which need an
    integer column) also guards the DOUBLE column ("BIGINT", :func:`open_table`). Integer domains
    wider than 2^53 are guarded as "HUGEINT": read as text and converted field by field, exactly."""
    if kind == "datetime":
        return {column: "TIMESTAMP"}, {}
    wide = kind == "integer" and max(abs(int(lower)), abs(int(upper))) > EXACT_DOUBLE
    if wide:
        return {}, {column: "HUGEINT"}
    if kind == "integer" and keep_integers:
        return {column: "DOUBLE"}, {column: "BIGINT"}
    return {column: "DOUBLE"}, {}




def _guarded_doubles(con: Any, expr: str, column: str, drop_invalid: bool) -> str | None:
    """A CSV column read as DOUBLE on an integer domain (one scan, over every row: the outcome
    never depends on where a row sits): refuse non-integers, unless ``drop_invalid`` (they are
    then dropped, each on its own, by the caller's policy). The column as BIGINT when every value
    is a finite integer (the same values; the staged interior paths need an integer column), else
    None (kept as DOUBLE: the same counts, read by the sorted path)."""
    col = quote_ident(column)
    try:
        frac, odd = con.execute(f"SELECT count_if(isfinite({col}) AND {col} <> floor({col})), "
                                f"count_if(NOT isfinite({col}) OR abs({col}) >= {1 << 62}) FROM {expr}").fetchall()[0]
    except Exception as exc:  # DuckDB's text quotes the offending line: never passed on as it is
        raise engine_error("values", column, exc) from None
    check_invalid({"fraction"} if frac else set(), "drop" if drop_invalid else "error", column)
    return None if frac or odd else f"CAST({col} AS BIGINT)"


#: the largest HUGEINT: integers written with more digits are clamped to it (any domain is inside)
_HUGE = (1 << 127) - 1


def _exact_integers(con: Any, expr: str, column: str, drop_invalid: bool) -> str:
    """A CSV column read as text on an integer domain wider than 2^53, as exact HUGEINT field by
    field (a public rule, the same for every row): an integer numeral (``-7``, ``+007``, ``7.0``)
    is that integer, exactly; another number is an integer only when it is whole and within 2^53
    (``1e3``); NaN and empty fields are missing. A number that is not an integer (``2.5``, ``inf``,
    ``1e20``) is refused, or with ``drop_invalid`` missing (dropped by the caller's policy);
    text that is not a number is refused. One scan over every row decides."""
    col = quote_ident(column)
    txt = f"trim({col})"
    numeral = f"regexp_full_match({txt}, '[+-]?[0-9]+([.]0*)?')"
    num = f"TRY_CAST({txt} AS DOUBLE)"
    digits = f"TRY_CAST(regexp_extract({txt}, '^[+-]?[0-9]+') AS HUGEINT)"
    clamped = f"(CASE WHEN starts_with({txt}, '-') THEN -{_HUGE} ELSE {_HUGE} END)"
    value = (f"(CASE WHEN {numeral} THEN coalesce({digits}, {clamped}) "
             f"WHEN isfinite({num}) AND {num} = floor({num}) AND abs({num}) <= {EXACT_DOUBLE} "
             f"THEN CAST({num} AS HUGEINT) END)")
    present = f"{txt} <> '' AND NOT {numeral}"
    try:
        text, other = con.execute(
            f"SELECT count_if({present} AND {num} IS NULL), "
            f"count_if({present} AND {value} IS NULL AND NOT coalesce(isnan({num}), false)) FROM {expr}"
        ).fetchall()[0]
    except Exception as exc:  # DuckDB's text quotes the offending line: never passed on as it is
        raise engine_error("values", column, exc) from None
    check_invalid({"text"} if text else set(), "drop" if drop_invalid else "error", column)  # text: missing below
    check_invalid({"fraction"} if other else set(), "drop" if drop_invalid else "error", column)
    return value


def _numbers(con: Any, expr: str, columns: Sequence[str], drop_invalid: bool) -> str:
    """``expr`` with the CSV text ``columns`` as DOUBLE, field by field (one scan over every row
    decides): an empty field is missing; a field that is not a number (``n/a``) is refused under
    the policy :func:`~dptree.errors.check_invalid`, or with ``drop_invalid`` missing (left out
    by the caller's policy, as every other invalid record)."""
    casts = {c: f"TRY_CAST(trim({quote_ident(c)}) AS DOUBLE)" for c in columns}
    flags = ", ".join(f"count_if(trim({quote_ident(c)}) <> '' AND {e} IS NULL)" for c, e in casts.items())
    try:
        found = con.execute(f"SELECT {flags} FROM {expr}").fetchall()[0]
    except Exception as exc:  # DuckDB's text quotes the offending line: never passed on as it is
        raise engine_error("values", columns[0], exc) from None
    for c, n in zip(columns, found):
        check_invalid({"text"} if n else set(), "drop" if drop_invalid else "error", c)
    replaced = ", ".join(f"{e} AS {quote_ident(c)}" for c, e in casts.items())
    return f"(SELECT * REPLACE ({replaced}) FROM {expr})"


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
               integers: dict[str, str] | None = None, drop_invalid: bool = False) -> Iterator[tuple[Any, str]]:
    """Yield (DuckDB connection, SQL table expression) for a CSV/Parquet file, '-' (CSV on stdin)
    or a DuckDB relation (only its ``columns``, when given, are read).

    ``types``: DuckDB types for CSV columns (:func:`csv_value_types`) instead of the types DuckDB
    guesses from a sample of the first rows. A guess of BIGINT rounds a later "5.25" to 5 without
    an error, and a guess of DATE drops a later time of day: a silently wrong count.
    VARCHAR reads a column as its text (group keys and user ids: :class:`DuckDBEngine`).
    ``integers``: CSV value columns on an integer domain (:func:`csv_value_types`): "BIGINT", read
    as DOUBLE (:func:`_guarded_doubles`), "HUGEINT", read as text and converted exactly
    (:func:`_exact_integers`); their non-integers are refused, or with ``drop_invalid`` left to
    the caller's policy for invalid values. Columns the file does not have are left to the
    "column not found" check.

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
            path, fmt = tmp_name, ("parquet" if fmt == "parquet" else "csv")  # --format parquet: Parquet bytes
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
                              if t in ("TIMESTAMP", "VARCHAR") or not any(d in guess[c] for d in ("DATE", "TIME"))}
                    chosen.update({c: "VARCHAR" for c, t in guarded.items()
                                   if t == "HUGEINT" and not any(d in guess[c] for d in ("DATE", "TIME"))})
                # a numeric value column is read as text and converted field by field: a field that is
                # not a number is then an invalid record under the caller's policy (:func:`_numbers`),
                # never a failed read
                numbers = [c for c, t in chosen.items() if t == "DOUBLE"]
                chosen.update({c: "VARCHAR" for c in numbers})
                if chosen:
                    typed = ", ".join(f"{quote_str(c)}: {quote_str(t)}" for c, t in chosen.items())
                    expr = f"read_csv({quote_str(path)}, auto_detect=true, types={{{typed}}})"
                    final = {r[0]: str(r[1]).upper() for r in con.execute(f"DESCRIBE SELECT * FROM {expr}").fetchall()}
                else:
                    final = guess
            except Exception as exc:  # duckdb raises its own exception types
                raise InputFormatError(f"cannot read {shown} as {fmt}: {engine_detail(exc)}") from None
            if numbers:
                expr = _numbers(con, expr, numbers, drop_invalid)
                final.update({c: "DOUBLE" for c in numbers})
            exact = {}
            for c, kind in guarded.items():
                if kind == "HUGEINT" and final[c] == "VARCHAR":
                    exact[c] = _exact_integers(con, expr, c, drop_invalid)
                elif kind == "BIGINT" and final[c] == "DOUBLE":
                    ints = _guarded_doubles(con, expr, c, drop_invalid)
                    if ints is not None:
                        exact[c] = ints
            if exact:  # a subquery, not a view: column_type still knows it reads a CSV (whose names it hides)
                replaced = ", ".join(f"{e} AS {quote_ident(c)}" for c, e in exact.items())
                expr = f"(SELECT * REPLACE ({replaced}) FROM {expr})"
            shown = "stdin" if tmp_name else path
        with _poll_progress(con, progress_reporter(progress), "reading " + shown):
            yield con, expr
    finally:
        con.close()
        if tmp_name:
            os.unlink(tmp_name)
