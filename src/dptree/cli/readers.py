"""The DuckDB readers of the ``hierarchy`` and ``interior-point``/``median``/``quantile`` commands.

``read_structure`` reads the public structure file (before any charge); ``read_grouped`` and
``read_column`` read the private data file, so a command calls them only inside its charge
(:mod:`dptree.cli.ledger_options`). No message of theirs holds a count or a value of the data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from dptree.errors import InputFormatError
from dptree.hierarchy import Hierarchy

__all__ = ["read_structure", "read_grouped", "read_column"]


def _reader(path: str) -> str:
    p = Path(path)
    if not p.exists():
        raise InputFormatError(f"no such file: {path}")
    suffix = p.suffix.lower()
    lit = "'" + str(p).replace("'", "''") + "'"
    if suffix in (".parquet", ".pq"):
        return f"read_parquet({lit})"
    if suffix in (".csv", ".tsv", ".txt", ".gz"):
        return f"read_csv({lit}, all_varchar=true, header=true)"
    raise InputFormatError(f"{path}: unsupported file type {suffix!r}; use .csv or .parquet")


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _columns(con: Any, rel: str) -> list[str]:
    return [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()]


def read_structure(path: str, levels: Sequence[str], *, other: str | None = None) -> Hierarchy:
    """A :class:`Hierarchy` from a CSV/Parquet file with the level columns or node/parent."""
    import duckdb

    con = duckdb.connect()
    try:
        rel = _reader(path)
        cols = _columns(con, rel)
        if all(c in cols for c in levels):
            sel = ", ".join(f"CAST({_ident(c)} AS VARCHAR) AS {_ident(c)}" for c in levels)
            frame = con.execute(f"SELECT {sel} FROM {rel}").df()
            return Hierarchy.from_frame(frame, levels, other=other)
        if "node" in cols and "parent" in cols:
            frame = con.execute(
                f"SELECT CAST(node AS VARCHAR) AS node, CAST(parent AS VARCHAR) AS parent FROM {rel}"
            ).df()
            return Hierarchy.from_parent_table(frame, levels=levels, other=other)
        raise InputFormatError(
            f"structure file {path} needs the level columns {list(levels)} or node/parent columns; it has {cols}"
        )
    except duckdb.Error as exc:
        raise InputFormatError(f"cannot read structure file {path}: {exc}") from exc
    finally:
        con.close()


_INT_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
              "UHUGEINT")


def _weight_sql(col: str, ctype: str) -> tuple[str, list[tuple[str, str]]]:
    """(exact HUGEINT value of a valid weight, [(problem, SQL predicate of a bad row)]).

    Never through DOUBLE: TRY_CAST(w AS DOUBLE) rounds above 2^53, and TRY_CAST('2.5' AS HUGEINT)
    rounds to 3, so text is checked against an integer pattern before the cast."""
    from dptree.hierarchy.counting import _FLOAT_EXACT

    t = ctype.upper()
    if t in _INT_TYPES:
        return f"TRY_CAST({col} AS HUGEINT)", [("missing values", f"{col} IS NULL"), ("negative values", f"{col} < 0")]
    if t.startswith("DECIMAL") or t.startswith("NUMERIC"):
        return f"TRY_CAST({col} AS HUGEINT)", [
            ("missing values", f"{col} IS NULL"),
            ("negative values", f"{col} < 0"),
            ("non-integer values", f"{col} <> floor({col})"),
        ]
    if t in ("FLOAT", "DOUBLE", "REAL"):
        return f"TRY_CAST({col} AS HUGEINT)", [
            ("missing values", f"{col} IS NULL OR isnan({col})"),
            ("non-finite values", f"isinf({col})"),
            ("negative values", f"{col} < 0"),
            ("non-integer values", f"{col} <> floor({col})"),
            ("float values above 2^53, which are not exact integers", f"{col} > {_FLOAT_EXACT}"),
        ]
    if t == "VARCHAR":
        txt = f"trim({col})"
        pattern = "'[+]?[0-9]+([.]0*)?'"
        return f"TRY_CAST(regexp_extract({txt}, '^[+]?([0-9]+)', 1) AS HUGEINT)", [
            ("missing values", f"{col} IS NULL OR {txt} = ''"),
            ("negative values", f"regexp_full_match({txt}, '-[0-9]+([.][0-9]*)?')"),
            ("values that are not non-negative integers", f"NOT regexp_full_match({txt}, {pattern})"),
        ]
    return "NULL", [("values that are not numbers", "TRUE")]


def read_grouped(path: str, levels: Sequence[str], weight: str | None = None, *, name: str | None = None) -> Any:
    """One row per distinct path of the data file with its record count (or weight sum),
    computed by DuckDB. Weights are checked to be non-negative integers and summed exactly
    (HUGEINT); a total of ``hierarchy.MAX_TOTAL`` or more raises ``TotalTooLargeError``. No
    error message contains a count or a value from the file. ``name``: the file as messages
    call it (default ``path``; "stdin" for a copy of standard input)."""
    import duckdb

    from dptree.errors import DataError
    from dptree.hierarchy.counting import MAX_TOTAL, _too_large

    shown = name or path
    con = duckdb.connect()
    try:
        rel = _reader(path)
        cols = _columns(con, rel)
        missing = [c for c in list(levels) + ([weight] if weight else []) if c not in cols]
        if missing:
            # the file's column names are not listed: on a malformed CSV they can be a data line
            raise InputFormatError(
                f"data file {shown} has no column(s) {missing}; check its header row and --levels/--weight"
            )
        keys = ", ".join(f"CAST({_ident(c)} AS VARCHAR) AS {_ident(c)}" for c in levels)
        group = ", ".join(str(i + 1) for i in range(len(levels)))
        if weight is None:
            q = f"SELECT {keys}, COUNT(*) AS __n__ FROM {rel} GROUP BY {group}"
            return con.execute(q).df(), "__n__"
        types = {r[0]: str(r[1]) for r in con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()}
        value, checks = _weight_sql(_ident(weight), types[weight])
        flags = ", ".join(f"bool_or({cond})" for _, cond in checks)
        bad = con.execute(f"SELECT {flags} FROM {rel}").fetchone()
        assert bad is not None
        for (problem, _), hit in zip(checks, bad):
            if hit:
                raise DataError(
                    f"weight column {weight!r} must hold non-negative integer counts: it has {problem}; "
                    "fix or drop those rows first (a weight is a number of records)"
                )
        limit = int(MAX_TOTAL)
        row = con.execute(
            f"SELECT bool_or({value} IS NULL OR {value} >= {limit}), "
            f"SUM(CASE WHEN {value} < {limit} THEN {value} ELSE 0 END) FROM {rel}"
        ).fetchone()
        assert row is not None
        if row[0] or (row[1] is not None and int(row[1]) >= limit):
            raise _too_large(weight)
        # every group sum <= the total < MAX_TOTAL: exact in BIGINT
        q = f"SELECT {keys}, CAST(SUM({value}) AS BIGINT) AS __n__ FROM {rel} GROUP BY {group}"
        return con.execute(q).df(), "__n__"
    except duckdb.Error as exc:
        # DuckDB's message may quote a line or a value of the file: say only what failed
        raise InputFormatError(
            f"cannot read data file {shown} ({type(exc).__name__}); check that it is a valid CSV/Parquet file "
            "with a header row"
        ) from None
    finally:
        con.close()


def read_column(path: str, column: str, *, drop_missing: bool = False, fmt: str | None = None) -> list[Any]:
    """All values of ``column`` of a CSV or Parquet file (``-`` = CSV on stdin), read by DuckDB
    like ``dptree release`` (format from the name or the file's first bytes, or ``fmt``).

    Missing values raise (without saying how many) unless ``drop_missing`` (``--on-invalid drop``),
    a per-row policy whose effect is never reported."""
    from dptree.data.engines.duckdb import _quote_ident, open_table

    shown = "stdin" if path == "-" else path
    with open_table(path, fmt) as (con, expr):
        cols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {expr}").fetchall()]
        if column not in cols:
            raise InputFormatError(f"column {column!r} not in {shown}; available: {', '.join(cols)}")
        try:
            rows = con.execute(f"SELECT {_quote_ident(column)} FROM {expr}").fetchall()
        except Exception as exc:  # duckdb's own exception types
            from dptree.errors import engine_error

            raise engine_error("values", column, exc) from None
    vals = [r[0] for r in rows]
    if drop_missing:
        vals = [v for v in vals if v is not None]
    elif any(v is None for v in vals):
        raise InputFormatError(
            f"column {column!r} has missing values; pass --on-invalid drop to drop those rows "
            "(how many is never shown), or drop or impute them first"
        )
    if any(isinstance(v, str) for v in vals):
        raise InputFormatError(f"column {column!r} is not numeric")
    return vals
