"""Command line for hierarchy counts: ``dptree hierarchy`` (release) and the query helper that
``dptree query REL.json --node US/CA`` calls on hierarchy releases.

The lead's ``dptree.cli.main`` calls :func:`register` with its subparsers object; the parsed
arguments carry ``func`` (returns an exit code). Data files (CSV or Parquet) are read with
DuckDB, which also does the GROUP BY over the level columns, so only one row per distinct
path reaches Python. The structure file is a CSV/Parquet with the same level columns (one row
per leaf) or with ``node``/``parent`` columns.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from dptree.cli.main import add_force_option, cli_wording
from dptree.errors import DPTreeError, InputFormatError, InvalidParameterError
from dptree.hierarchy.release import Hierarchy, HierarchyRelease, hierarchy_counts

__all__ = ["register", "query_hierarchy", "run_hierarchy", "read_structure", "read_grouped"]


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
    from dptree.hierarchy.release import _FLOAT_EXACT

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


def read_grouped(path: str, levels: Sequence[str], weight: str | None = None) -> Any:
    """One row per distinct path of the data file with its record count (or weight sum),
    computed by DuckDB. Weights are checked to be non-negative integers and summed exactly
    (HUGEINT); a total of ``hierarchy.MAX_TOTAL`` or more raises ``TotalTooLargeError``. No
    error message contains a count or a value from the file."""
    import duckdb

    from dptree.errors import DataError
    from dptree.hierarchy.release import MAX_TOTAL, _too_large

    con = duckdb.connect()
    try:
        rel = _reader(path)
        cols = _columns(con, rel)
        missing = [c for c in list(levels) + ([weight] if weight else []) if c not in cols]
        if missing:
            # the file's column names are not listed: on a malformed CSV they can be a data line
            raise InputFormatError(
                f"data file {path} has no column(s) {missing}; check its header row and --levels/--weight"
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
            f"cannot read data file {path} ({type(exc).__name__}); check that it is a valid CSV/Parquet file "
            "with a header row"
        ) from None
    finally:
        con.close()


def run_hierarchy(args: argparse.Namespace) -> int:
    """``dptree hierarchy``: read, release, save. Returns the exit code."""
    levels = [c.strip() for c in args.levels.split(",") if c.strip()]
    if not levels:
        raise InvalidParameterError("--levels needs at least one column name, e.g. country,state,city")
    if args.seed is not None and not args.allow_nonprivate:
        raise InvalidParameterError(
            "--seed makes the release reproducible and NOT private; add --allow-nonprivate to confirm"
        )
    h = read_structure(args.structure, levels, other=args.other)  # public
    from dptree.cli.core import (
        charged_budget,
        check_input_path,
        check_output_path,
        check_public_parameters,
        ledger_path,
        note_charge,
    )

    # every public check before the charge; the data file is read only after it (issue 10, 2(b))
    ledger = ledger_path(args.ledger)
    check_public_parameters(lambda data: _release(args, data, h, levels, "__n__"))
    check_input_path(args.file)
    check_output_path(args.out, inputs=[args.file, args.structure], ledger=ledger, kind="release:hierarchy",
                      force=args.force)
    label = args.ledger_label or f"hierarchy {args.file} -> {args.out}"
    delta = 0.0 if args.method == "laplace" else args.delta
    from dptree.io.release_file import _utc_now

    created = _utc_now()  # before the data is read: the file must not time the reading
    with charged_budget(ledger, epsilon=args.epsilon, delta=delta, label=label) as charge:
        frame, wcol = read_grouped(args.file, levels, args.weight)
        rel = _release(args, frame, h, levels, wcol)
        rel.metadata.update(source="stdin" if args.file == "-" else args.file, created_utc=created)
        note_charge(rel, charge, ledger)
        rel.save(args.out, allow_nonprivate=args.allow_nonprivate, force=args.force)
        if charge is not None:
            charge.output = args.out
    print(
        f"wrote {args.out}: {h.n_nodes} nodes, depth {h.depth}, method {args.method}, "
        f"epsilon {args.epsilon}, delta {rel.parameters['delta']}, private {rel.private}",
        file=sys.stderr,
    )
    return 0


def _release(args: argparse.Namespace, frame: Any, h: Any, levels: list[str], wcol: Any) -> HierarchyRelease:
    if args.unknown_to_other and args.unknown not in (None, "other"):
        raise InvalidParameterError("--unknown-to-other contradicts --unknown " + str(args.unknown))
    return hierarchy_counts(
        frame,
        h,
        epsilon=args.epsilon,
        delta=args.delta,
        method=args.method,
        alpha=args.alpha,
        consistent=not args.no_consistent,
        nonnegative=args.nonnegative,
        integer=args.integer,
        max_contributions=args.max_contributions,
        tau_min=args.tau_min,
        levels=levels,
        weight=wcol,
        unknown=args.unknown or ("other" if args.unknown_to_other else "error"),
        rng=args.seed,
    )


def _main_func(args: argparse.Namespace) -> int:
    try:
        return run_hierarchy(args)
    except DPTreeError as exc:
        print(f"dptree hierarchy: error: {cli_wording(str(exc))}", file=sys.stderr)
        return 2


def register(subparsers: Any) -> None:
    """Add the ``hierarchy`` subcommand to an argparse subparsers object."""
    p = subparsers.add_parser(
        "hierarchy",
        help="private counts for every node of a public hierarchy (seed 001)",
        description="Release differentially private counts for every node of a public hierarchy "
        "(Ghazi et al., seed 001): Laplace / Gaussian baselines with consistent least squares, "
        "or the multiplicative-error algorithm of Theorem 4.1.",
    )
    p.add_argument("file", metavar="FILE", help="data file (.csv or .parquet), one row per record")
    p.add_argument("--levels", required=True, help="comma-separated level columns, root side first")
    p.add_argument("--structure", required=True, help="public structure file (.csv/.parquet)")
    p.add_argument("--weight", default=None, help="column of non-negative integer counts per row")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, default=0.0)
    p.add_argument("--method", choices=["laplace", "gaussian", "multiplicative"], default="laplace")
    p.add_argument("--alpha", type=float, default=None, help="multiplicative error allowance in (0,1)")
    p.add_argument("--tau-min", dest="tau_min", type=float, default=None)
    p.add_argument("--max-contributions", dest="max_contributions", type=int, default=1)
    p.add_argument("--no-consistent", dest="no_consistent", action="store_true")
    p.add_argument("--nonnegative", action="store_true")
    p.add_argument("--integer", action="store_true")
    p.add_argument("--other", default=None, help="label of the public 'other' leaf under every internal node")
    p.add_argument(
        "--unknown",
        choices=["error", "drop", "other"],
        default=None,
        help="declared policy for rows whose path is not a leaf of the structure: error (default; "
        "the message says neither how many nor which), drop them, or count them in the 'other' "
        "leaf of their deepest known ancestor (needs --other)",
    )
    p.add_argument(
        "--unknown-to-other",
        dest="unknown_to_other",
        action="store_true",
        help="same as --unknown other (kept for compatibility)",
    )
    p.add_argument("--seed", type=int, default=None, help="reproducible, NOT private (tests only)")
    p.add_argument("--allow-nonprivate", dest="allow_nonprivate", action="store_true")
    p.add_argument("--out", required=True, help="output release file (.json)")
    add_force_option(p, "hierarchy release")
    from dptree.cli.core import add_ledger_options

    add_ledger_options(p)
    p.set_defaults(func=_main_func)


def query_hierarchy(
    release: HierarchyRelease | dict[str, Any] | str, nodes: list[str], ci: float = 0.95
) -> list[dict[str, Any]]:
    """Answer node queries on a hierarchy release: one dict per node with its path, count,
    stderr and a ``ci``-level interval (post-processing; no budget). ``release`` may be a
    :class:`HierarchyRelease`, its ``to_dict()`` or a file path."""
    if isinstance(release, str):
        from dptree.hierarchy.release import load_hierarchy_release

        release = load_hierarchy_release(release)
    elif isinstance(release, dict):
        release = HierarchyRelease.from_dict(release)
    out = []
    for node in nodes:
        lo, hi = release.ci(node, ci)
        out.append(
            {
                "node": node,
                "count": release.count(node),
                "stderr": release.stderr(node),
                "ci_level": ci,
                "ci_low": lo,
                "ci_high": hi,
                "method": release.method,
            }
        )
    return out
