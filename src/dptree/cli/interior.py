"""The ``interior-point`` subcommand of the dptree CLI (seed 002; wired in by ``dptree.cli.main``).

    dptree interior-point FILE --column C --lower L --upper U --epsilon E
                          [--delta D] [--method auto|exponential|treelog|heavypaths]
                          [--beta B] [--seed S --allow-nonprivate] [--run-anyway] [--n N | --n-max N]
                          [--on-invalid error|drop]

``--n``/``--n-max`` declare the number of records as a **public** size (exact / upper bound); the
tree methods need one, and it alone drives their calibration. The output never shows the actual
number of rows.

FILE is a CSV or Parquet file read with DuckDB like ``dptree release`` (``-`` reads CSV from
standard input). Integer bounds give an integer domain, any float bound a float domain. Errors are
printed as one line on stderr (exit 2).

``dptree median`` and ``dptree quantile --q Q`` take the same input options and release one
quantile of the column with the exponential mechanism (:func:`dptree.quantile`).
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from dptree.cli.main import cli_wording
from dptree.errors import DPTreeError, InputFormatError, InvalidParameterError

__all__ = ["read_column", "register", "run_interior_point", "run_quantile"]


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


def _execute(args: argparse.Namespace, release: Any, command: str) -> Any:
    """Every public check, the ledger charge, then the data: the shared order of ``interior-point``,
    ``median`` and ``quantile``. Returns the result, or raises DPTreeError."""
    from dptree.cli.core import charged_budget, check_input_path, check_public_parameters, ledger_path

    if args.seed is not None and not args.allow_nonprivate:
        raise InvalidParameterError(
            "--seed makes the release reproducible and NOT private; add --allow-nonprivate to confirm"
        )
    # every public check before the charge; the data file is read only after it (issue 10, 2(b))
    ledger = ledger_path(args.ledger)
    check_public_parameters(release)
    check_input_path(args.file)
    label = args.ledger_label or f"{command} {args.file}:{args.column}"
    with charged_budget(ledger, epsilon=args.epsilon, delta=getattr(args, "delta", 0.0), label=label):
        vals = read_column(args.file, args.column, drop_missing=args.on_invalid == "drop", fmt=args.input_format)
        return release(vals)


def _declared(res: Any) -> str:
    if res.n_declared is None:
        return "none"
    return f"{'n_max' if getattr(res, 'n_is_upper_bound', False) else 'n'}={res.n_declared}"


def run_interior_point(args: argparse.Namespace) -> int:
    """Execute the subcommand; returns the exit code."""
    try:
        res = _execute(args, lambda data: _release(args, data), "interior-point")
    except DPTreeError as exc:
        print(f"dptree interior-point: error: {cli_wording(str(exc))}", file=sys.stderr)
        return 2
    print(f"interior_point: {res.value}")
    if res.bottom:  # the mechanism's bottom output; the value above is only a placeholder
        print("bottom: True (no answer: the value is the placeholder --lower, not an interior point)")
    else:
        print("bottom: False")
    print(f"method: {res.method}")
    print(f"budget: {res.budget.describe()}")
    req = res.n_required
    print(f"guarantee_applies: {res.guarantee_applies} (declared {_declared(res)}, n_required={req}, beta={res.beta})")
    print(f"private: {res.private}")
    return 0


def run_quantile(args: argparse.Namespace) -> int:
    """``dptree median`` / ``dptree quantile --q Q``: the exponential-mechanism quantile of a column
    (pure epsilon-DP); returns the exit code."""
    from dptree.interior.points import quantile

    q = 0.5 if args.command == "median" else args.q

    def release(data: Any) -> Any:
        return quantile(data, q, lower=args.lower, upper=args.upper, epsilon=args.epsilon, rng=args.seed,
                        n=args.n, n_max=args.n_max, on_invalid=args.on_invalid)

    try:
        res = _execute(args, release, args.command)
    except DPTreeError as exc:
        print(f"dptree {args.command}: error: {exc}", file=sys.stderr)
        return 2
    name = "median" if args.command == "median" else f"quantile({res.q:g})"
    print(f"{name}: {res.value}")
    print("method: exponential mechanism (seed 002)")
    print(f"budget: epsilon={res.epsilon:g} (pure epsilon-DP)")
    print(f"declared: {_declared(res)}")
    print(f"private: {res.private}")
    return 0


def _release(args: argparse.Namespace, vals: Any) -> Any:
    from dptree.interior.points import interior_point

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
    p.add_argument("file", help="CSV or Parquet file ('-' for CSV on standard input)")
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
    _add_input_options(p)
    p.set_defaults(func=run_interior_point)
    for name, what in (("median", "the median"), ("quantile", "one quantile (--q)")):
        m = subparsers.add_parser(
            name,
            help=f"release {what} of a column, by the exponential mechanism (pure epsilon-DP, seed 002)",
            description=f"Release {what} of a CSV/Parquet column with the exponential mechanism "
            "(dptree.quantile): pure epsilon-DP under add/remove or replace one record; no size needed.",
        )
        m.add_argument("file", help="CSV or Parquet file ('-' for CSV on standard input)")
        m.add_argument("--column", required=True, help="column name")
        if name == "quantile":
            m.add_argument("--q", required=True, type=float, help="the quantile level in [0, 1], e.g. 0.9")
        m.add_argument("--lower", required=True, type=_bound, help="public lower bound of the domain")
        m.add_argument("--upper", required=True, type=_bound, help="public upper bound of the domain")
        m.add_argument("--epsilon", required=True, type=float)
        m.add_argument("--seed", type=int, default=None, help="TESTS ONLY: seeded, non-private randomness")
        m.add_argument("--allow-nonprivate", dest="allow_nonprivate", action="store_true", help="allow --seed")
        size = m.add_mutually_exclusive_group()
        size.add_argument("--n", type=int, default=None, help="PUBLIC exact number of records (optional, echoed)")
        size.add_argument("--n-max", type=int, default=None, help="PUBLIC upper bound on the number of records")
        m.add_argument("--on-invalid", default="error", choices=["error", "drop"],
                       help="missing/NaN/inf values: refuse, or drop those rows (how many is never shown)")
        _add_input_options(m)
        m.set_defaults(func=run_quantile)


def _add_input_options(p: Any) -> None:
    from dptree.cli.core import add_ledger_options

    p.add_argument("--format", dest="input_format", choices=["csv", "parquet"],
                   help="input format (default: from the name, or the file's first bytes)")
    add_ledger_options(p)
