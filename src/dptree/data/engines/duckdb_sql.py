"""The SQL of the DuckDB engine: column types, the bucketing of values, the checks on user ids
and on weights. Each expression mirrors the numpy reference (:meth:`Domain.to_leaves`,
:mod:`dptree.data.weights`) exactly, so a file and the same values in memory give the same counts.

The checks count offending rows inside DuckDB and raise on "some"; only the kind of problem
reaches the message, never the count (:mod:`dptree.errors`).
"""

from __future__ import annotations

import re
from typing import Any

from dptree.data.domain import Domain
from dptree.data.weights import FLOAT_EXACT, MAX_TOTAL, too_large, weight_error
from dptree.errors import DATE_BOUNDS_HINT, DataError, InputFormatError, check_invalid, missing_user_ids_error

__all__ = ["arrow_table", "quote_ident", "quote_str", "column_type", "leaf_sql", "cell_sql", "check_cells", "user_sql",
           "check_weight_column", "MISSING_CELL", "INFINITE_CELL", "FRACTION_CELL"]


def arrow_table(rel: Any) -> Any:
    """A DuckDB relation's result as an Arrow table (duckdb >= 1.4 / older)."""
    return rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def column_types(con: Any, expr: str) -> dict[str, str]:
    return {r[0]: str(r[1]).upper() for r in con.execute(f"DESCRIBE SELECT * FROM {expr}").fetchall()}


def column_type(con: Any, expr: str, column: str) -> str:
    """The DuckDB type of ``column`` (upper case), or an :class:`InputFormatError` naming the
    available columns (not when the header of a CSV could not be read: the names DuckDB made up
    may then be a line of the data)."""
    types = column_types(con, expr)
    if column not in types:
        names = list(types)
        csv = "read_csv(" in expr  # the file itself, or a subquery over it (open_table)
        if csv and (
            all(re.fullmatch(r"column\d+", n) for n in names) or any(d in n for n in names for d in ",;\t|")
        ):
            raise InputFormatError(
                f"column {column!r} not found: the CSV's header row could not be read; check that every line "
                "has the same number of fields and that the delimiter is a comma (a Parquet file is recognised "
                "by its content, whatever its name)"
            )
        if csv:
            # a CSV's "header" is its first line, and whether it is one is guessed from the rows: in a
            # file without a header it is a record (one whose field does not fit its column's type is
            # taken for a header), so its names are never shown
            raise InputFormatError(f"column {column!r} not found in the CSV's header row; check the name and that "
                                   "the file's first line names its columns (the names found are not shown: "
                                   "without a header they would be a line of the data)")
        raise InputFormatError(f"column {column!r} not found; available columns: {', '.join(names)}")
    return types[column]


#: the cells of :func:`cell_sql` that flag a problem instead of a leaf (never counted)
MISSING_CELL, INFINITE_CELL, FRACTION_CELL = -1, -2, -3

def _bucketing(con: Any, expr: str, column: str, domain: Domain) -> tuple[str, str, str | None, str | None]:
    """(SQL leaf index of a present value, SQL 'value missing' predicate, SQL '+-inf' predicate or
    None, SQL 'not an integer on an integer domain' predicate or None) for ``column``: the same
    clamping and bucketing as :meth:`dptree.data.domain.Domain.to_leaves`, with no cast a BIGINT
    column does not need. Reads the column's type only; raises for a column of
    the wrong type."""
    ctype = column_type(con, expr, column)
    col = quote_ident(column)
    numeric = any(t in ctype for t in ("INT", "DOUBLE", "FLOAT", "DECIMAL", "REAL", "NUMERIC"))
    temporal = "DATE" in ctype or "TIMESTAMP" in ctype
    lo, hi, w = domain.lower, domain.upper, domain.step
    inf = frac = None
    if domain.kind == "datetime":
        if not temporal:
            fix = ("its values must all be dates or times" if "CHAR" in ctype or "TEXT" in ctype
                   else "pass numeric bounds for a numeric column")
            raise DataError(f"column {column!r} has type {ctype}, but the domain is dates: {fix}")
        if "TIMESTAMP_NS" in ctype:  # nanoseconds already: a cast to TIMESTAMP would round them to microseconds
            value = f"epoch_ns({col})"
        else:  # clamp in the column's own (microsecond) range first: epoch_ns of 9999-12-31 overflows
            lo_us, hi_us = int(lo) // 1000, -(-int(hi) // 1000)
            value = (f"epoch_ns(least(greatest(CAST({col} AS TIMESTAMP), make_timestamp({lo_us})), "
                     f"make_timestamp({hi_us})))")
        bad = f"{col} IS NULL"
        leaf = f"(least(greatest({value}, {int(lo)}), {int(hi)}) - {int(lo)}) // {int(w)}"
    elif not numeric:
        hint = f" ({DATE_BOUNDS_HINT})" if temporal or "CHAR" in ctype or "TEXT" in ctype else ""
        text = ("; a CSV column holds text when some field is not a number" if "CHAR" in ctype or "TEXT" in ctype
                else "")
        raise DataError(f"column {column!r} has type {ctype}; a numeric domain needs numbers{hint}{text}")
    elif domain.kind == "integer" and "INT" in ctype and "DOUBLE" not in ctype:
        # clamp in the column's own type (UBIGINT, HUGEINT): uint64 max never reaches a BIGINT cast;
        # then BIGINT arithmetic (a cast only for other types: INTEGER could overflow in the subtraction)
        clamped = f"least(greatest({col}, {int(lo)}), {int(hi)})"
        if ctype != "BIGINT":
            clamped = f"CAST({clamped} AS BIGINT)"
        leaf = clamped if int(lo) == 0 else f"({clamped} - {int(lo)})"
        leaf = leaf if int(w) == 1 else f"{leaf} // {int(w)}"
        bad = f"{col} IS NULL"
    else:
        value = f"CAST({col} AS DOUBLE)"
        bad = f"({col} IS NULL OR isnan({value}))"
        inf = f"isinf({value})"
        if domain.kind == "float":
            leaf = f"CAST(floor((least(greatest({value}, {lo!r}), {hi!r}) - {lo!r}) / {w!r}) AS BIGINT)"
        else:  # integers read as DOUBLE or DECIMAL: non-integers are refused, never floored (as in memory)
            if "DECIMAL" in ctype or "NUMERIC" in ctype:  # exact: through DOUBLE, integers past 2^53 were rounded
                frac = f"{col} <> floor({col})"
                whole = f"CAST({col} AS HUGEINT)"
            else:  # a whole DOUBLE casts to HUGEINT exactly (clamped in DOUBLE first: NaN, +-inf, 1e300 fit)
                frac = f"{value} <> floor({value})"
                whole = f"CAST(least(greatest({value}, -1e30), 1e30) AS HUGEINT)"
            # then clamped as integers: a bound past 2^53 compared as a DOUBLE was rounded (a record of 0
            # below lower = 2^53 + 1 fell to leaf -1, read as missing)
            leaf = f"CAST((least(greatest({whole}, {int(lo)}), {int(hi)}) - {int(lo)}) // {int(w)} AS BIGINT)"
    if domain.kind != "integer" or int(hi - lo) // int(w) > domain.size - 1:
        leaf = f"least({leaf}, {domain.size - 1})"
    return leaf, bad, inf, frac


def cell_sql(con: Any, expr: str, column: str, domain: Domain) -> str:
    """One SQL expression per row: its leaf index (as :func:`leaf_sql`), or :data:`MISSING_CELL`,
    :data:`INFINITE_CELL`, :data:`FRACTION_CELL` for a row that a check refuses. One GROUP BY of
    it counts the leaves and runs every check in the same scan (:func:`check_cells`)."""
    leaf, bad, inf, frac = _bucketing(con, expr, column, domain)
    cases = f"WHEN {bad} THEN {MISSING_CELL} "
    cases += f"WHEN {inf} THEN {INFINITE_CELL} " if inf else ""
    cases += f"WHEN {frac} THEN {FRACTION_CELL} " if frac else ""
    return f"CASE {cases}ELSE {leaf} END"


def check_cells(flagged: set[int], column: str, missing: str) -> None:
    """The declared invalid-value policy ``missing`` (``on_invalid``, :func:`~dptree.errors.check_invalid`)
    on the problems :func:`cell_sql` flagged in some row (by kind, never by count): +-inf, missing
    values, non-integers; with "drop" the flagged rows are left out (their cells are negative)."""
    kinds = {INFINITE_CELL: "infinite", MISSING_CELL: "missing", FRACTION_CELL: "fraction"}
    check_invalid({kinds[c] for c in flagged if c in kinds}, missing, column)


def leaf_sql(con: Any, expr: str, column: str, domain: Domain, missing: str) -> tuple[str, str]:
    """(SQL bucket index, SQL 'value invalid' predicate) for ``column``: the same clamping and
    bucketing as :meth:`dptree.data.domain.Domain.to_leaves`. Raises for a column of the wrong type;
    missing values, +-inf and non-integers on an integer domain are refused or, with
    ``missing="drop"`` (the ``on_invalid`` policy), flagged by the predicate for the caller to
    leave out (one scan for all the checks, :func:`check_cells`)."""
    leaf, bad, inf, frac = _bucketing(con, expr, column, domain)
    # counted in a projection, not a WHERE: a filter could be pruned by Parquet statistics that omit NaN
    flags = [f"count_if({inf or 'FALSE'})", f"count_if({bad})", f"count_if(NOT {bad} AND {frac or 'FALSE'})"]
    n_inf, n_missing, n_frac = con.execute(f"SELECT {', '.join(flags)} FROM {expr}").fetchall()[0]
    check_cells({c for c, n in zip((INFINITE_CELL, MISSING_CELL, FRACTION_CELL), (n_inf, n_missing, n_frac)) if n},
                column, missing)
    return leaf, "(" + " OR ".join(p for p in (bad, inf, frac) if p) + ")"


def user_sql(con: Any, expr: str, user_column: str, text: bool = False) -> str:
    """The quoted user column after checking it has no missing ids (NULL, or NaN in float columns).
    ``text``: the ids are a CSV's text (each id is its text: "1" and "1.0" are two people); when
    every id is a canonical integer numeral ("-7", "0", "12": one text per integer), they are
    keyed by that integer (the same people, in numeric order, as an integer column of them), else
    by the text. Only the order of the people, in which their kept records are drawn, depends on
    which: never who they are, so the law of the release does not either."""
    utype = column_type(con, expr, user_column)
    ucol = quote_ident(user_column)
    ubad = f"{ucol} IS NULL" + (f" OR isnan({ucol})" if any(t in utype for t in ("DOUBLE", "FLOAT", "REAL")) else "")
    n_null, numerals = con.execute(
        f"SELECT count_if({ubad}), "
        + (f"bool_and(regexp_full_match({ucol}, '0|-?[1-9][0-9]{{0,17}}'))" if text and "VARCHAR" in utype
           else "false")
        + f" FROM {expr}").fetchall()[0]
    if n_null:
        raise missing_user_ids_error(user_column)
    return f"CAST({ucol} AS BIGINT)" if numerals else ucol


_INT_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
              "UHUGEINT")


def _weight_sql(col: str, ctype: str) -> tuple[str, list[tuple[str, str]]]:
    """(exact HUGEINT value of a valid weight, [(problem, SQL predicate of a bad row)]).

    Never through DOUBLE: TRY_CAST(w AS DOUBLE) rounds above 2^53, and TRY_CAST('2.5' AS HUGEINT)
    rounds to 3, so text is checked against an integer pattern before the cast."""
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
            ("float values above 2^53, which are not exact integers", f"{col} > {FLOAT_EXACT}"),
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


def check_weight_column(con: Any, expr: str, weight: str) -> str:
    """The exact HUGEINT value of the ``weight`` column, after refusing (by kind, never by count)
    missing, negative, non-integer, non-finite and inexact weights, and totals of
    :data:`~dptree.data.weights.MAX_TOTAL` or more (:class:`~dptree.errors.TotalTooLargeError`)."""
    value, checks = _weight_sql(quote_ident(weight), column_type(con, expr, weight))
    flags = ", ".join(f"bool_or({cond})" for _, cond in checks)
    bad = con.execute(f"SELECT {flags} FROM {expr}").fetchall()[0]
    for (problem, _), hit in zip(checks, bad or ()):
        if hit:
            raise weight_error(weight, problem)
    limit = int(MAX_TOTAL)
    row = con.execute(
        f"SELECT bool_or({value} IS NULL OR {value} >= {limit}), "
        f"SUM(CASE WHEN {value} < {limit} THEN {value} ELSE 0 END) FROM {expr}"
    ).fetchall()[0]
    if row is not None and (row[0] or (row[1] is not None and int(row[1]) >= limit)):
        raise too_large(weight)
    return value
