"""``dptree interior-point``, ``dptree median``, ``dptree quantile`` (Kaplan et al. 2020) and ``dptree quantiles``.

    dptree interior-point FILE --column C --lower L --upper U [--width W] --epsilon E
                          [--delta D] [--method auto|exponential|treelog|heavypaths]
                          [--beta B] [--seed S --allow-nonprivate] [--run-anyway] [--n N | --n-max N]
                          [--on-invalid error|drop]

``--n``/``--n-max`` declare the number of records as a **public** size (exact / upper bound); the
tree methods need one, and it alone drives their calibration. The output never shows the actual
number of rows.

FILE is a CSV or Parquet file read with DuckDB like ``dptree release`` (``-`` reads CSV from
standard input), counted in DuckDB (never one Python object per row). Integer bounds give an
integer domain, any float bound a float domain, dates (``2024-01-01``, ``2024-01-01T12:00``) a
date domain whose resolution is ``--width`` (``1d`` by default; ``6h``, ``30m``, ``10s``, ``1w``).

``dptree median`` and ``dptree quantile --q Q`` take the same input options and release one
quantile of the column with the exponential mechanism (:func:`dptree.quantile`).

``dptree quantiles --q 0.1,0.5,0.9`` releases m quantiles with intervals by the method of
:func:`dptree.quantiles` (``--method auto|tree|approx|joint|exponential``), prints them as a
table and with ``--out`` writes the release (``dptree query`` shows it again). Its ``--width``
is also the tree's bucket width on a numeric domain.
"""

from __future__ import annotations

import argparse
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from dptree.cli import core
from dptree.cli.ledger_options import add_ledger_options, charged_budget, ledger_path
from dptree.errors import InvalidParameterError
from dptree.io.contract import shown

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "interior-point",
        help="release a private point between min and max of a column (Kaplan et al. 2020)",
        description="Release a differentially private interior point of a CSV/Parquet column.",
    )
    _add_column_options(p)
    p.add_argument("--delta", type=float, default=0.0, help="needed by treelog/heavypaths")
    p.add_argument("--method", default="auto", choices=["auto", "exponential", "treelog", "heavypaths"])
    p.add_argument("--beta", type=float, default=0.1, help="failure probability of the guarantee")
    p.add_argument("--run-anyway", action="store_true", help="run even if no guarantee holds at the declared n")
    _add_size_options(p, "declared, never computed")
    p.add_argument("--on-invalid", default="error", choices=["error", "drop"],
                   help="missing/NaN/inf values (or non-integers in an integer domain): refuse, or drop those rows "
                   "(how many is never shown)")
    _add_out_option(p)
    p.set_defaults(func=run_interior_point)
    for name, what in (("median", "the median"), ("quantile", "one quantile (--q)")):
        m = sub.add_parser(
            name,
            help=f"release {what} of a column, by the exponential mechanism (pure epsilon-DP, Kaplan et al. 2020)",
            description=f"Release {what} of a CSV/Parquet column with the exponential mechanism "
            "(dptree.quantile): pure epsilon-DP under add/remove or replace one record; no size needed.",
        )
        if name == "quantile":
            m.add_argument("--q", required=True, type=float, help="the quantile level in [0, 1], e.g. 0.9")
        _add_column_options(m)
        _add_size_options(m, "optional, echoed")
        m.add_argument("--on-invalid", default="error", choices=["error", "drop"],
                       help="missing/NaN/inf values: refuse, or drop those rows (how many is never shown)")
        _add_out_option(m)
        m.set_defaults(func=run_quantile)
    _register_quantiles(sub)


def _register_quantiles(sub: Any) -> None:
    from dptree.quantiles.plan import METHODS
    from dptree.rangetree.quantile_calibration import INTERVALS

    p = sub.add_parser(
        "quantiles",
        help="release m quantiles of a column with intervals (tree, ApproxQuantiles, JointExp; auto picks)",
        description="Release m differentially private quantiles of a CSV/Parquet column, each with an interval "
        "(dptree.quantiles): pure epsilon-DP under --neighbors.",
    )
    p.add_argument("--q", required=True, metavar="Q1,Q2,...", help="the levels in [0, 1], e.g. 0.1,0.5,0.9")
    _add_column_options(p)
    p.add_argument("--method", default="auto", choices=list(METHODS),
                   help="auto (default) picks the smallest predicted error from public quantities")
    p.add_argument("--level", type=float, default=0.95, help="the intervals' confidence level (default 0.95)")
    p.add_argument("--interval", default="calibrated", choices=list(INTERVALS), help="the tree's interval")
    p.add_argument("--neighbors", choices=["add_remove", "replace"], default="add_remove")
    _add_size_options(p, "declared, never computed; --method joint needs one")
    p.add_argument("--n-min", type=int, default=None,
                   help="PUBLIC lower bound on the number of records: narrower intervals for approx, exponential "
                        "and joint")
    p.add_argument("--on-invalid", default="error", choices=["error", "drop"],
                   help="missing/NaN/inf values: refuse, or drop those rows (how many is never shown)")
    p.add_argument("--out", help="also write the release (JSON) here; with --by it contains {group}")
    core.add_force_option(p, "quantiles release")
    g = p.add_argument_group("people and groups")
    g.add_argument("--user-id", metavar="COLUMN",
                   help="the privacy unit is one person: keep at most --max-contributions records per value of "
                   "COLUMN (chosen at random)")
    g.add_argument("--max-contributions", type=int, default=1,
                   help="records one person may have (default 1); with --user-id, the bound applied")
    core.add_group_options(g)
    p.set_defaults(func=run_quantiles)


def _add_column_options(p: Any) -> None:
    core.add_input_options(p)
    p.add_argument("--column", required=True, help="column name")
    p.add_argument("--lower", required=True, help="public lower bound of the domain (a number or a date)")
    p.add_argument("--upper", required=True, help="public upper bound of the domain (a number or a date)")
    p.add_argument("--width", default=None,
                   help="dates only: the resolution of the released point (1d default, 6h, 30m, 10s, 1w)")
    p.add_argument("--epsilon", required=True, type=float)
    core.add_seed_options(p)
    add_ledger_options(p)


def _add_size_options(p: Any, exact: str) -> None:
    size = p.add_mutually_exclusive_group()
    size.add_argument("--n", type=int, default=None, help=f"PUBLIC exact number of records ({exact})")
    size.add_argument("--n-max", type=int, default=None, help="PUBLIC upper bound on the number of records")


def _add_out_option(p: Any) -> None:
    p.add_argument("--out", help="also write the release (JSON) here (dptree query shows it again)")
    core.add_force_option(p, "release")


def _execute(args: argparse.Namespace, plan: Callable[[], Any], release: Callable[[Any, Any], Any], command: str,
             kind: str | None = None, groups: list[Any] | None = None) -> Any:
    """Every public check (the plan, built from the public parameters, and the ``--out`` files of
    the release ``kind``, one per group of ``groups``), the ledger charge (the plan's budget), then
    ``release(plan, data)`` and the ``--out`` files, which the charge records: the shared order of
    ``interior-point``, ``median``, ``quantile`` and ``quantiles``. Returns the result."""
    core.check_seed(args)
    ledger = ledger_path(args.ledger)
    pl = plan()
    core.check_input_path(args.file, ledger)
    outs = [] if kind is None or args.out is None else core.group_output_paths(args.out, groups)
    for out in outs:
        core.check_output_path(out, inputs=[args.file], ledger=ledger, kind=f"release:{kind}", force=args.force)
    label = args.ledger_label or f"{command} {args.file}:{args.column}"
    with charged_budget(ledger, epsilon=args.epsilon, delta=pl.budget.delta, label=label, outputs=outs):
        with _table(args) as data:
            res = release(pl, data)
        if outs:
            res.save(args.out, allow_nonprivate=args.allow_nonprivate, force=args.force)
    return res


@contextmanager
def _table(args: argparse.Namespace) -> Iterator[Any]:
    """The data as the library reads it with ``column=``: the file itself, counted out of core by
    DuckDB (``-``: a private temporary copy of standard input), or with ``--format parquet`` a
    DuckDB relation over the file (its declared schema). With ``--format csv`` the file is read
    as the library reads a CSV: each column typed from the public parameters, never from DuckDB's
    guess over the rows (a relation would carry the guess). Call it inside the charge."""
    if args.input_format in (None, "csv"):
        with core.readable_path(args.file) as path:
            if args.input_format is None or _named_csv(path):
                yield path
            else:
                with _csv_name(path) as named:
                    yield named
        return
    from dptree.data.engines.duckdb import open_table

    with open_table(args.file, args.input_format) as (con, expr):
        yield con.sql(f"SELECT * FROM {expr}")


def _named_csv(path: str) -> bool:
    """Whether the library reads ``path`` as CSV without being told (its name or first bytes)."""
    from dptree.data.engines.duckdb import detect_format

    return detect_format(path) == "csv"


@contextmanager
def _csv_name(path: str) -> Iterator[str]:
    """``path`` under a name ending in .csv (a link in a private temporary folder, or a copy where
    links are not allowed), so that the library reads it as CSV; removed when the block ends."""
    import os
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="dptree-csv-") as folder:
        named = os.path.join(folder, "input.csv")
        try:
            os.symlink(os.path.abspath(path), named)
        except OSError:
            shutil.copyfile(path, named)
        yield named


def _bounds(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """(lower, upper, width): numbers, or dates with an optional resolution (a date's --width)."""
    lower, upper = core.parse_bound(args.lower, "--lower"), core.parse_bound(args.upper, "--upper")
    if args.width is not None and not isinstance(lower, str) and not isinstance(upper, str):
        raise InvalidParameterError("--width is the resolution of a date domain (--lower/--upper dates); a numeric "
                                    "domain has none: drop --width")
    return lower, upper, core.parse_width(args.width, lower if isinstance(lower, str) else upper)


def _declared(res: Any) -> str:
    if res.n_declared is None:
        return "none"
    return f"{'n_max' if getattr(res, 'n_is_upper_bound', False) else 'n'}={res.n_declared}"


def run_interior_point(args: argparse.Namespace) -> int:
    from dptree.interior import plan_interior_point

    lower, upper, width = _bounds(args)

    def plan() -> Any:  # a --delta given to the exponential mechanism is not spent, hence not charged
        return plan_interior_point(lower=lower, upper=upper, epsilon=args.epsilon, delta=args.delta,
                                   method=args.method, beta=args.beta, run_anyway=args.run_anyway, n=args.n,
                                   n_max=args.n_max, width=width)

    def release(pl: Any, data: Any) -> Any:
        return pl.release(data, column=args.column, on_invalid=args.on_invalid, rng=args.seed)

    res = _execute(args, plan, release, "interior-point", kind="interior_point")
    print(f"interior_point: {shown(res.value)}")
    if res.bottom:  # the mechanism's bottom output; the value above is only a placeholder
        print("bottom: True (no answer: the value is the placeholder --lower, not an interior point)")
    else:
        print("bottom: False")
    print(f"method: {res.method}")
    print(f"budget: {res.budget.describe()}")
    req = res.n_required
    print(f"guarantee_applies: {res.guarantee_applies} (declared {_declared(res)}, n_required={req}, beta={res.beta})")
    print(f"private: {res.private}")
    if args.out is not None:
        core.wrote([args.out])
    return 0


def run_quantile(args: argparse.Namespace) -> int:
    """``dptree median`` / ``dptree quantile --q Q``: the exponential-mechanism quantile of a column
    (pure epsilon-DP)."""
    from dptree.interior import plan_quantile

    q = 0.5 if args.command == "median" else args.q
    lower, upper, width = _bounds(args)

    def plan() -> Any:
        return plan_quantile(q, lower=lower, upper=upper, epsilon=args.epsilon, n=args.n, n_max=args.n_max,
                             width=width)

    def release(pl: Any, data: Any) -> Any:
        return pl.release(data, column=args.column, on_invalid=args.on_invalid, rng=args.seed)

    res = _execute(args, plan, release, args.command, kind="quantile")
    name = "median" if args.command == "median" else f"quantile({res.q:g})"
    print(f"{name}: {shown(res.value)}")
    print("method: exponential mechanism (Kaplan et al. 2020)")
    print(f"budget: epsilon={res.epsilon:g} (pure epsilon-DP)")
    print(f"declared: {_declared(res)}")
    print(f"private: {res.private}")
    if args.out is not None:
        core.wrote([args.out])
    return 0


def _levels(text: str) -> list[float]:
    if not text.strip():
        raise InvalidParameterError("--q needs at least one level, e.g. --q 0.5")
    try:  # an empty item ('0.5,') is refused, as --groups refuses one: a level may be missing
        return [float(t) for t in text.split(",")]
    except ValueError:
        raise InvalidParameterError(f"--q must be comma-separated levels such as 0.1,0.5,0.9, got {text!r}") from None


def run_quantiles(args: argparse.Namespace) -> int:
    """``dptree quantiles``: m quantiles with intervals (:func:`dptree.quantiles`); the table on
    stdout, the release in ``--out``."""
    from dptree.cli.query import print_rows, quantiles_rows
    from dptree.quantiles import plan_quantiles

    qs = _levels(args.q)
    lower, upper = core.parse_bound(args.lower, "--lower"), core.parse_bound(args.upper, "--upper")
    width = core.parse_width(args.width, upper if isinstance(upper, str) else lower)  # dates: a duration
    core.check_group_options(args)
    groups = core.parse_groups(args.groups) if args.by else None
    by = {"by": args.by, "unknown": args.unknown_groups} if args.by else {}

    def plan() -> Any:
        return plan_quantiles(qs, lower=lower, upper=upper, epsilon=args.epsilon, method=args.method,
                              level=args.level, n=args.n, n_max=args.n_max, n_min=args.n_min, width=width,
                              neighbors=args.neighbors, interval=args.interval, groups=groups, user_id=args.user_id,
                              max_contributions=args.max_contributions)

    def release(pl: Any, data: Any) -> Any:
        return pl.release(data, column=args.column, rng=args.seed, on_invalid=args.on_invalid, **by)

    res = _execute(args, plan, release, "quantiles", kind="quantiles", groups=groups)
    for group, one in (res.items() if args.by else [(None, res)]):
        header = one.summary() if group is None else f"group {group}: {one.summary()}"
        print_rows(quantiles_rows(one), one.level, header)
    if args.out is not None:
        core.wrote(core.group_output_paths(args.out, groups))
    return 0
