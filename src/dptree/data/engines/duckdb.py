"""The DuckDB engine: CSV and Parquet files (out of core, multi-threaded) and DuckDB relations.

Only counts and cells leave DuckDB (:meth:`DuckDBEngine.counts`): one count per bucket (in one
scan that also runs the checks) or per (group, bucket) cell, one per distinct path for
hierarchies, the distinct values and their counts for the exponential mechanisms; contribution bounding
(:mod:`dptree.data.engines.duckdb_bounded`) also reads integer user ids into numpy, where they
stay. No value enters Python. The SQL
(:mod:`dptree.data.engines.duckdb_sql`) buckets values exactly as
:meth:`dptree.data.domain.Domain.to_leaves` does and bounding follows :mod:`dptree.data.bounding`,
so a file and the same values as an array give the same counts (tested). Inputs are opened by
:mod:`dptree.data.engines.duckdb_tables`: a DuckDB relation is read through Arrow (only the
columns used) into a connection of its own, so nothing is created in the caller's connection.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np

from dptree.data.domain import Domain
from dptree.data.engines.base import (
    COUNT,
    Bucket,
    Counts,
    Engine,
    Group,
    GroupOf,
    Missing,
    OrderedCounts,
    Partition,
    Sample,
    Units,
    Unknown,
    UserRecords,
    Value,
    check_names,
)
from dptree.data.engines.duckdb_bounded import bounded_counts, bounded_stages
from dptree.data.engines.duckdb_ordered import DuckDBOrderedCounts
from dptree.data.engines.duckdb_progress import Progress, Stages, progress_reporter
from dptree.data.engines.duckdb_sql import (
    arrow_table,
    cell_sql,
    check_cells,
    check_weight_column,
    column_type,
    column_types,
    leaf_sql,
    quote_ident,
    user_sql,
)
from dptree.data.engines.duckdb_tables import csv_value_types, detect_format, is_csv, is_relation, open_table
from dptree.data.engines.duckdb_values import checked_values, grouped_sorted_value_counts, sorted_value_counts
from dptree.errors import (
    DataError,
    InputFormatError,
    InvalidParameterError,
    engine_error,
    missing_keys_error,
    partition_key_type_error,
    unknown_groups_error,
)

__all__ = ["DuckDBEngine", "csv_value_types", "read_column", "open_table", "is_relation",
           "detect_format", "is_csv", "Progress"]

# the names the command line and older code import from here
_quote_ident, _column_type = quote_ident, column_type


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


def _join_groups(con: Any, expr: str, by: str, groups: Sequence[Group], unknown: Unknown, select: str,
                 csv: bool = False) -> None:
    """``dpt_joined``: ``select`` (expressions on the rows ``t`` of ``expr``) and ``gi``, the index of
    the row's group in the public ``groups`` (NULL for unlisted or missing groups, which raise
    :func:`~dptree.errors.unknown_groups_error` unless ``unknown="drop"``). The by column's type
    must match the groups' (strings or integers). A row matches at most one group, exactly:
    integer groups compare as HUGEINT, and a float value only when it is a whole number (never
    through DOUBLE, which rounds groups above 2^53). ``csv``: the by column is a CSV's text
    (:meth:`DuckDBEngine._open`), never a type DuckDB guessed from the rows: string groups match
    the text; integer groups match a field that is an integer numeral (``7``, ``+007``, ``7.0``)
    of that value, the same rule for every row; any other field is an unknown group."""
    import pyarrow as pa

    btype = column_type(con, expr, by)
    text = "VARCHAR" in btype or "CHAR" in btype or "TEXT" in btype
    key = f"t.{quote_ident(by)}"
    if isinstance(groups[0], str) or not (csv and text):
        if isinstance(groups[0], str) != text:
            raise DataError(
                f"by column {by!r} has type {btype} but groups are "
                f"{'strings' if isinstance(groups[0], str) else 'integers'}; give groups of the column's type"
            )
        numeric = any(t in btype for t in ("INT", "DOUBLE", "FLOAT", "DECIMAL", "REAL", "NUMERIC"))
        if not isinstance(groups[0], str) and not numeric:
            raise DataError(f"by column {by!r} has type {btype}; integer groups need a numeric column")
    if not isinstance(groups[0], str):
        if text:  # a CSV field: an integer numeral, optionally with a zero fraction
            txt = f"trim({key})"
            key = (f"CASE WHEN regexp_full_match({txt}, '[+-]?[0-9]+([.]0*)?') "
                   f"THEN TRY_CAST(regexp_extract({txt}, '^[+-]?[0-9]+') AS HUGEINT) END")
        elif any(t in btype for t in ("DOUBLE", "FLOAT", "REAL")):
            key = (f"CASE WHEN isfinite({key}) AND {key} = floor({key}) AND abs({key}) < 1e38 "
                   f"THEN CAST({key} AS HUGEINT) END")
        elif "DECIMAL" in btype or "NUMERIC" in btype:
            key = f"CASE WHEN {key} = floor({key}) THEN CAST({key} AS HUGEINT) END"
        else:
            key = f"CAST({key} AS HUGEINT)"
    # integer groups travel as text and are cast to HUGEINT here: Arrow has no 128-bit integers
    con.register("dpt_group_list", pa.table({"gv": pa.array([str(g) for g in groups]),
                                             "gi": pa.array(np.arange(len(groups), dtype=np.int64))}))
    gv = "gv" if isinstance(groups[0], str) else "CAST(gv AS HUGEINT)"
    con.execute(f"CREATE TEMP TABLE dpt_groups AS SELECT {gv} AS gv, gi FROM dpt_group_list")
    con.execute(f"CREATE TEMP TABLE dpt_joined AS SELECT {select}, g.gi AS gi FROM {expr} t "
                f"LEFT JOIN dpt_groups g ON {key} = g.gv")
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
        check_names("a DuckDB relation" if is_relation(data) else self.READS, column, **refs)

    def _open(self, data: Any, *columns: str | None, text: bool = False, value: str | None = None,
              kind: str | None = None, lower: Any = None, upper: Any = None, keep_integers: bool = False,
              as_text: Sequence[str | None] = (), drop_invalid: bool = False, doubles: Sequence[str] = ()) -> Any:
        """:func:`open_table` on ``columns``; the ``value`` column of a CSV is read as its domain
        needs (``kind``, ``lower``, ``upper``, ``keep_integers``: :func:`csv_value_types`; its
        non-integers dropped by the caller's policy with ``drop_invalid``), and the ``as_text``
        columns of a CSV (group keys, user ids) as their text and the ``doubles`` (weights) as DOUBLE:
        a public rule, never a type DuckDB guessed from the rows (one field "x" would turn a guessed
        BIGINT into VARCHAR for all)."""
        types: dict[str, str] = {c: "VARCHAR" for c in as_text if c}
        types.update({c: "DOUBLE" for c in doubles})
        value_types, guarded = (csv_value_types(value, kind, lower, upper, keep_integers=keep_integers)
                                if value and kind else ({}, {}))
        types.update(value_types)
        return open_table(data, self.fmt, self.progress, columns=[c for c in columns if c], text=text, types=types,
                          integers=guarded, drop_invalid=drop_invalid)

    def _open_domain(self, data: Any, domain: Domain, value: str | None, *columns: str | None,
                     as_text: Sequence[str | None] = (), missing: Missing = "error", doubles: Sequence[str] = ()) -> Any:
        return self._open(data, value, *columns, value=value, kind=domain.kind, lower=domain.lower,
                          upper=domain.upper, as_text=as_text, drop_invalid=missing == "drop", doubles=doubles)

    def _unit_counts(self, data: Any, key: Bucket, units: Units, *, on_invalid: Missing,
                     sample: Sample | None) -> Counts:
        from dptree.data.engines.duckdb_weighted import unit_counts

        return unit_counts(self, data, key, units, on_invalid=on_invalid, sample=sample)

    def _csv(self, data: Any) -> bool:
        """Whether ``data`` is read as CSV (its columns typed by :meth:`_open`, not declared)."""
        return not is_relation(data) and is_csv(data, self.fmt)

    def _key_counts(self, data: Any, key: Bucket | Value, group: GroupOf | None, *, on_invalid: Missing,
                    sample: Sample | None) -> Counts:
        self._names(data, key.column, user_id=sample.user if sample else None, by=group.column if group else None)
        column = str(key.column)
        if isinstance(key, Value):
            kind, lower, upper = key.domain or (None, None, None)
            by = group.column if group else None
            try:
                with self._open(data, column, by, value=column, kind=kind, lower=lower, upper=upper,
                                keep_integers=True, as_text=[by], drop_invalid=on_invalid == "drop") as (con, expr):
                    if group is None and not key.distinct:
                        return Counts.of_records(checked_values(con, expr, column, on_invalid, on_invalid))
                    if group is None:
                        return Counts.of_values(sorted_value_counts(con, expr, column, on_invalid, on_invalid, None))
                    col = quote_ident(column)
                    _join_groups(con, expr, group.column, group.groups, group.unknown, f"t.{col} AS {col}",
                                 self._csv(data))
                    parts = grouped_sorted_value_counts(con, "dpt_joined", column, len(group.groups), on_invalid,
                                                        on_invalid, None)
            except (DataError, InputFormatError):
                raise
            except Exception as exc:
                raise engine_error("grouped value counts" if group else "value counts", column, exc) from None
            gi = np.repeat(np.arange(len(parts), dtype=np.int64), [v.size for v, _ in parts])
            return Counts((gi, np.concatenate([v for v, _ in parts])), np.concatenate([c for _, c in parts]))
        size = key.domain.size
        if group is not None:
            hist = self._grouped(data, key.domain, column, group, on_invalid, sample)
            cells = np.flatnonzero(hist)
            return Counts((cells // size, cells % size), hist[cells])
        if sample is not None:
            hist = self._bounded(data, key.domain, column, sample, on_invalid)
            cells = np.flatnonzero(hist)
            return Counts((cells,), hist[cells])
        return self._buckets(data, key.domain, column, on_invalid)

    def _grid_counts(self, data: Any, x: Bucket, y: Bucket, *, on_invalid: Missing) -> Counts:
        """Records per (x bucket, y bucket): both cells and every check in one GROUP BY scan (a row
        is counted when both values are valid; ``on_invalid`` applies to each column)."""
        self._names(data, x.column)
        self._names(data, y.column)
        cx, cy = str(x.column), str(y.column)
        types: dict[str, str] = {}
        guarded: dict[str, str] = {}
        for col, dom in ((cx, x.domain), (cy, y.domain)):
            t, g = csv_value_types(col, dom.kind, dom.lower, dom.upper)
            types.update(t)
            guarded.update(g)
        none = np.zeros(0, np.int64)
        try:
            with open_table(data, self.fmt, self.progress, columns=list(dict.fromkeys((cx, cy))), types=types,
                            integers=guarded, drop_invalid=on_invalid == "drop") as (con, expr):
                if not con.execute(f"SELECT count(*) FROM (SELECT 1 FROM {expr} LIMIT 1)").fetchall()[0][0]:
                    return Counts((none, none), none)
                rows = con.execute(f"SELECT {cell_sql(con, expr, cx, x.domain)} AS i, "
                                   f"{cell_sql(con, expr, cy, y.domain)} AS j, count(*) AS n "
                                   f"FROM {expr} GROUP BY 1, 2").fetchnumpy()
                i, j = np.asarray(rows["i"], dtype=np.int64), np.asarray(rows["j"], dtype=np.int64)
                n = np.asarray(rows["n"], dtype=np.int64)
                check_cells(set(i[i < 0].tolist()), cx, on_invalid)
                check_cells(set(j[j < 0].tolist()), cy, on_invalid)
                ok = (i >= 0) & (j >= 0)
                return Counts((i[ok], j[ok]), n[ok])
        except (DataError, InputFormatError):
            raise
        except Exception as exc:
            raise engine_error("grid histogram", f"{cx}, {cy}", exc) from None

    def _partition_counts(self, data: Any, key: Partition, sample: Sample | None) -> Counts:
        """Records, or distinct users after bounding (:func:`bounded_counts` on the distinct (user,
        key code) pairs, key codes in key order), per sorted distinct key: text keys (a CSV's are
        always its text) or integer keys; the keys are numbered by a sort in DuckDB."""
        by = key.column
        user_id = sample.user if sample is not None else None
        self._names(data, by, user_id=user_id)
        try:
            with self._open(data, by, user_id, as_text=[by, user_id]) as (con, expr):
                ktype = column_type(con, expr, by)
                if "VARCHAR" in ktype:
                    kcol = quote_ident(by)
                elif ktype in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"):
                    kcol = f"CAST({quote_ident(by)} AS BIGINT)"
                else:
                    raise partition_key_type_error(by)
                if con.execute(f"SELECT count_if({kcol} IS NULL) FROM {expr}").fetchall()[0][0] and \
                        key.unknown == "error":
                    raise missing_keys_error()
                ucol = user_sql(con, expr, user_id, self._csv(data)) if user_id is not None else "NULL"
                rows = f"(SELECT {ucol} AS u, {kcol} AS key FROM {expr} WHERE {kcol} IS NOT NULL)"
                con.execute(f"CREATE TEMP TABLE dpt_keys AS SELECT key, CAST(row_number() OVER (ORDER BY key) - 1 "
                            f"AS BIGINT) AS code FROM (SELECT DISTINCT key FROM {rows})")
                keys = con.execute("SELECT key FROM dpt_keys ORDER BY code").fetchnumpy()["key"]
                size = len(keys)
                joined = f"{rows} r JOIN dpt_keys d ON r.key = d.key"
                if sample is None:
                    hist = _fetch_hist(con, f"SELECT d.code AS leaf, count(*) AS n FROM {joined} GROUP BY 1", size)
                else:
                    con.execute(f"CREATE TEMP TABLE dpt_pairs AS SELECT DISTINCT r.u AS u, d.code AS leaf "
                                f"FROM {joined}")
                    hist = bounded_counts(con, "dpt_pairs", sample.k, size, sample.source,
                                          progress_reporter(self.progress))
        except (DataError, InputFormatError, InvalidParameterError):
            raise
        except Exception as exc:
            raise engine_error("user counts per group", by, exc) from None
        values = np.asarray(keys, dtype=np.int64) if "VARCHAR" not in ktype else np.asarray(
            [str(v) for v in keys], dtype=object)
        nz = np.flatnonzero(hist)
        return Counts((values[nz],), hist[nz])

    def _user_counts(self, data: Any, users: UserRecords, key: Bucket, group: GroupOf | None, *,
                     on_invalid: Missing) -> Counts:
        """Users per capped number of records: the rows :meth:`_bounded` (or with ``group``
        :meth:`_grouped`) would bound, counted per user in DuckDB; only the histogram of the
        capped counts leaves it (at most ``cap`` numbers, no user id)."""
        column, user_id, domain = str(key.column), users.user, key.domain
        by = group.column if group is not None else None
        self._names(data, key.column, user_id=user_id, by=by)
        try:
            with self._open_domain(data, domain, column, by, user_id, as_text=[by, user_id],
                                   missing=on_invalid) as (con, expr):
                leaf, bad = leaf_sql(con, expr, column, domain, on_invalid)
                ucol = user_sql(con, expr, user_id, self._csv(data))
                if group is None:
                    rows = f"(SELECT {ucol} AS u FROM {expr} WHERE NOT {bad})"
                else:
                    _join_groups(con, expr, group.column, group.groups, group.unknown,
                                 f"{ucol} AS u, CASE WHEN {bad} THEN NULL ELSE {leaf} END AS leaf", self._csv(data))
                    rows = "(SELECT u FROM dpt_joined WHERE gi IS NOT NULL AND leaf IS NOT NULL)"
                found = con.execute(f"SELECT least(c, {int(users.cap)}) AS c, count(*) AS n FROM "
                                    f"(SELECT count(*) AS c FROM {rows} GROUP BY u) GROUP BY 1 ORDER BY 1").fetchnumpy()
                return Counts((np.asarray(found["c"], dtype=np.int64),), np.asarray(found["n"], dtype=np.int64))
        except (DataError, InputFormatError, InvalidParameterError):
            raise
        except Exception as exc:
            raise engine_error("records per user", column, exc) from None

    def _buckets(self, data: Any, domain: Domain, column: str, missing: Missing) -> Counts:
        """Records per leaf: the leaves and the checks' flags (negative cells) in one GROUP BY scan."""
        try:
            with self._open_domain(data, domain, column, missing=missing) as (con, expr):
                ctype = column_type(con, expr, column)
                if not con.execute(f"SELECT count(*) FROM (SELECT 1 FROM {expr} LIMIT 1)").fetchall()[0][0]:
                    # empty input (a CSV of a header alone reads as text): a release of noise around zero
                    return Counts((np.zeros(0, np.int64),), np.zeros(0, np.int64))
                dense_group_by(con, domain.size, ctype)
                rows = con.execute(f"SELECT {cell_sql(con, expr, column, domain)} AS leaf, count(*) AS n "
                                   f"FROM {expr} GROUP BY 1").fetchnumpy()
                leaf, n = np.asarray(rows["leaf"], dtype=np.int64), np.asarray(rows["n"], dtype=np.int64)
                check_cells(set(leaf[leaf < 0].tolist()), column, missing)
                return Counts((leaf[leaf >= 0],), n[leaf >= 0])
        except (DataError, InputFormatError):
            raise
        except Exception as exc:
            raise engine_error("histogram", column, exc) from None

    def _bounded(self, data: Any, domain: Domain, column: str, sample: Sample, missing: Missing) -> np.ndarray:
        """Records per leaf after keeping at most k records per user (:func:`bounded_counts`)."""
        k, user_id = sample.k, sample.user
        bucketing = f"bucketing the rows and keeping at most {k} record(s) per user"
        say = Stages(progress_reporter(self.progress), (bucketing, *bounded_stages(k)))
        try:
            with say, self._open_domain(data, domain, column, user_id, as_text=[user_id],
                                        missing=missing) as (con, expr):
                # exact statistics when no column can hold NaN: cheaper checks, GROUP BY u and sort
                trust_statistics(con, column_type(con, expr, column), column_type(con, expr, user_id))
                leaf, bad = leaf_sql(con, expr, column, domain, missing)
                ucol = user_sql(con, expr, user_id, self._csv(data))
                say(bucketing)
                # a query, not a table: each of bounded_counts' two scans reads the file again, which
                # costs less than writing every row into DuckDB first. With missing="error" the checks
                # refused any missing value, so no row is dropped (and counting per user reads only u).
                rows = (f"(SELECT {ucol} AS u, {leaf} AS leaf FROM {expr})" if missing == "error" else
                        f"(SELECT u, leaf FROM (SELECT {ucol} AS u, CASE WHEN {bad} THEN NULL ELSE {leaf} END AS leaf "
                        f"FROM {expr}) WHERE leaf IS NOT NULL)")
                return bounded_counts(con, rows, k, domain.size, sample.source, say)
        except (DataError, InputFormatError, InvalidParameterError):
            raise
        except Exception as exc:
            raise engine_error("bounded histogram", column, exc) from None

    def _grouped(self, data: Any, domain: Domain, column: str, group: GroupOf, missing: Missing,
                 sample: Sample | None) -> np.ndarray:
        """Records per (group, leaf) cell, flattened (optionally bounded per user across groups)."""
        by, size = group.column, domain.size
        user_id = sample.user if sample is not None else None
        try:
            with self._open_domain(data, domain, column, by, user_id, as_text=[by, user_id],
                                   missing=missing) as (con, expr):
                leaf, bad = leaf_sql(con, expr, column, domain, missing)
                ucol = user_sql(con, expr, user_id, self._csv(data)) if user_id is not None else "NULL"
                _join_groups(con, expr, by, group.groups, group.unknown,
                             f"{ucol} AS u, CASE WHEN {bad} THEN NULL ELSE {leaf} END AS leaf", self._csv(data))
                con.execute(f"CREATE TEMP TABLE dpt_rows AS SELECT u, gi * {size} + leaf AS leaf FROM dpt_joined "
                            "WHERE gi IS NOT NULL AND leaf IS NOT NULL")
                cells = len(group.groups) * size
                if sample is None:
                    return _fetch_hist(con, "SELECT leaf, count(*) AS n FROM dpt_rows GROUP BY leaf", cells)
                return bounded_counts(con, "dpt_rows", sample.k, cells, sample.source,
                                      progress_reporter(self.progress))
        except (DataError, InputFormatError, InvalidParameterError):
            raise
        except Exception as exc:
            raise engine_error("grouped histograms", column, exc) from None

    @contextmanager
    def ordered_counts(self, data: Any, *, column: str | None, lower: int | float, upper: int | float,
                       on_invalid: Missing = "error") -> Iterator[OrderedCounts | None]:
        """One connection for the session's queries
        (:class:`~dptree.data.engines.duckdb_ordered.DuckDBOrderedCounts`); None for columns whose
        values the staged path does not read exactly like a :class:`~dptree.data.engines.base.Value`
        key (dates, 128-bit integers, and integer domains over non-integer columns)."""
        self._names(data, column)
        assert column is not None
        kind = "integer" if isinstance(lower, int) else "float"
        with self._open(data, column, value=column, kind=kind, lower=lower, upper=upper,
                        keep_integers=True, drop_invalid=on_invalid == "drop") as (con, expr):
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
                yield DuckDBOrderedCounts(con, expr, column, ctype, lower, upper, on_invalid, on_invalid, None)

    def _label_counts(self, data: Any, levels: Sequence[str], weight: str | None) -> Counts:
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
                table = arrow_table(rel)  # Arrow labels: no Python object per distinct path
                return Counts(tuple(table.column(i) for i in range(len(levels))),
                              table.column(COUNT).to_numpy().astype(np.int64, copy=False))
        except duckdb.Error as exc:
            # DuckDB's message may quote a line or a value of the file: say only what failed
            raise InputFormatError(
                f"cannot read the data ({type(exc).__name__}); check that it is a valid CSV/Parquet file "
                "with a header row"
            ) from None



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
