"""The ``interior-point`` subcommand of the dptree CLI (seed 002; wired in by ``dptree.cli``).

    dptree interior-point FILE --column C --lower L --upper U --epsilon E
                          [--delta D] [--method auto|exponential|treelog|heavypaths]
                          [--beta B] [--seed S --allow-nonprivate] [--run-anyway] [--n N | --n-max N]
                          [--on-invalid error|drop]

``--n``/``--n-max`` declare the number of records as a **public** size (exact / upper bound); the
tree methods need one, and it alone drives their calibration. The output never shows the actual
number of rows.

FILE is a CSV file read with DuckDB (``-`` reads CSV from standard input). Integer bounds give an
integer domain, any float bound a float domain. Errors are printed as one line on stderr (exit 2).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from typing import Any

from .cli import cli_wording
from .errors import DPTreeError, InputFormatError, InvalidParameterError

__all__ = ["read_column", "register", "run_interior_point"]


def _bound(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        v = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from exc
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"bound must be finite, got {text!r}")
    return v


def read_column(path: str, column: str, *, drop_missing: bool = False) -> list[Any]:
    """All values of ``column`` of the CSV file ``path`` (``-`` = stdin) via DuckDB.

    Missing values raise (without saying how many) unless ``drop_missing`` (``--on-invalid drop``),
    a per-row policy whose effect is never reported."""
    import duckdb

    tmp = None
    if path == "-":
        data = sys.stdin.read()
        fd, tmp = tempfile.mkstemp(suffix=".csv")
        with os.fdopen(fd, "w") as fh:
            fh.write(data)
        path = tmp
    elif not os.path.exists(path):
        raise InputFormatError(f"file not found: {path}")
    try:
        con = duckdb.connect()
        try:
            cols = [r[0] for r in con.execute("DESCRIBE SELECT * FROM read_csv_auto(?)", [path]).fetchall()]
        except duckdb.Error as exc:
            raise InputFormatError(f"cannot read {path} as CSV: {str(exc).splitlines()[0]}") from exc
        if column not in cols:
            raise InputFormatError(f"column {column!r} not in {path}; available: {', '.join(cols)}")
        quoted = '"' + column.replace('"', '""') + '"'
        rows = con.execute(f"SELECT {quoted} FROM read_csv_auto(?)", [path]).fetchall()
    finally:
        if tmp is not None:
            os.unlink(tmp)
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


def run_interior_point(args: argparse.Namespace) -> int:
    """Execute the subcommand; returns the exit code."""
    from ._cli_scale import charged_budget, check_input_path, check_public_parameters, ledger_path

    try:
        if args.seed is not None and not args.allow_nonprivate:
            raise InvalidParameterError(
                "--seed makes the release reproducible and NOT private; add --allow-nonprivate to confirm"
            )
        # every public check before the charge; the data file is read only after it (issue 10, 2(b))
        ledger = ledger_path(args.ledger)
        check_public_parameters(lambda data: _release(args, data))
        check_input_path(args.file)
        label = args.ledger_label or f"interior-point {args.file}:{args.column}"
        with charged_budget(ledger, epsilon=args.epsilon, delta=args.delta, label=label):
            vals = read_column(args.file, args.column, drop_missing=args.on_invalid == "drop")
            res = _release(args, vals)
    except DPTreeError as exc:
        print(f"dptree interior-point: error: {cli_wording(str(exc))}", file=sys.stderr)
        return 2
    print(f"interior_point: {res.value}")
    print(f"method: {res.method}")
    print(f"budget: {res.budget.describe()}")
    declared = "none" if res.n_declared is None else f"{'n_max' if res.n_is_upper_bound else 'n'}={res.n_declared}"
    req = res.n_required
    print(f"guarantee_applies: {res.guarantee_applies} (declared {declared}, n_required={req}, beta={res.beta})")
    print(f"private: {res.private}")
    return 0


def _release(args: argparse.Namespace, vals: Any) -> Any:
    from .thresholds import interior_point

    return interior_point(
        vals,
        lower=args.lower,
        upper=args.upper,
        epsilon=args.epsilon,
        delta=args.delta,
        method=args.method,
        beta=args.beta,
        rng=args.seed,
        run_anyway=args.run_anyway,
        n=args.n,
        n_max=args.n_max,
        on_invalid=args.on_invalid,
    )


def register(subparsers: Any) -> None:
    """Add the ``interior-point`` subcommand to an argparse subparsers object."""
    p = subparsers.add_parser(
        "interior-point",
        help="release a private point between min and max of a column (seed 002)",
        description="Release a differentially private interior point of a CSV column.",
    )
    p.add_argument("file", help="CSV file ('-' for standard input)")
    p.add_argument("--column", required=True, help="column name")
    p.add_argument("--lower", required=True, type=_bound, help="public lower bound of the domain")
    p.add_argument("--upper", required=True, type=_bound, help="public upper bound of the domain")
    p.add_argument("--epsilon", required=True, type=float)
    p.add_argument("--delta", type=float, default=0.0, help="needed by treelog/heavypaths")
    p.add_argument("--method", default="auto", choices=["auto", "exponential", "treelog", "heavypaths"])
    p.add_argument("--beta", type=float, default=0.1, help="failure probability of the guarantee")
    p.add_argument("--seed", type=int, default=None, help="TESTS ONLY: seeded, non-private randomness")
    p.add_argument("--allow-nonprivate", dest="allow_nonprivate", action="store_true", help="allow --seed")
    p.add_argument("--run-anyway", action="store_true", help="run even if no guarantee holds at the declared n")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--n", type=int, default=None, help="PUBLIC exact number of records (declared, never computed)")
    size.add_argument("--n-max", type=int, default=None, help="PUBLIC upper bound on the number of records")
    p.add_argument(
        "--on-invalid",
        default="error",
        choices=["error", "drop"],
        help="missing/NaN/inf values (or non-integers in an integer domain): refuse, or drop those rows "
        "(how many is never shown)",
    )
    from ._cli_scale import add_ledger_options

    add_ledger_options(p)
    p.set_defaults(func=run_interior_point)
