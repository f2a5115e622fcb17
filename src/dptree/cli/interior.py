"""``dptree interior-point``, ``dptree median`` and ``dptree quantile`` (Kaplan et al. 2020).

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

The data is read as the library reads a ``column=`` of a file (:func:`read_column`, shared with
``dptree quantiles``).
"""

from __future__ import annotations

import argparse
from abc import abstractmethod
from contextlib import contextmanager
from typing import Any, Iterator

from dptree.cli import core
from dptree.cli.ledger_options import add_ledger_options
from dptree.cli.run import Releasing, run_releasing
from dptree.errors import InvalidParameterError
from dptree.io.contract import shown

__all__ = ["register", "add_column_options", "add_size_options", "read_column"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "interior-point",
        help="release a private point between min and max of a column (Kaplan et al. 2020)",
        description="Release a differentially private interior point of a CSV/Parquet column.",
    )
    add_column_options(p)
    p.add_argument("--delta", type=float, default=0.0, help="needed by treelog/heavypaths")
    p.add_argument("--method", default="auto", choices=["auto", "exponential", "treelog", "heavypaths"])
    p.add_argument("--beta", type=float, default=0.1, help="failure probability of the guarantee")
    p.add_argument("--run-anyway", action="store_true", help="run even if no guarantee holds at the declared n")
    add_size_options(p, "declared, never computed")
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
        add_column_options(m)
        add_size_options(m, "optional, echoed")
        m.add_argument("--on-invalid", default="error", choices=["error", "drop"],
                       help="missing/NaN/inf values: refuse, or drop those rows (how many is never shown)")
        _add_out_option(m)
        m.set_defaults(func=run_quantile)


def add_column_options(p: Any) -> None:
    core.add_input_options(p)
    p.add_argument("--column", required=True, help="column name")
    p.add_argument("--lower", required=True, help="public lower bound of the domain (a number or a date)")
    p.add_argument("--upper", required=True, help="public upper bound of the domain (a number or a date)")
    p.add_argument("--width", default=None,
                   help="dates only: the resolution of the released point (1d default, 6h, 30m, 10s, 1w)")
    p.add_argument("--epsilon", required=True, type=float)
    core.add_seed_options(p)
    add_ledger_options(p)


def add_size_options(p: Any, exact: str) -> None:
    size = p.add_mutually_exclusive_group()
    size.add_argument("--n", type=int, default=None, help=f"PUBLIC exact number of records ({exact})")
    size.add_argument("--n-max", type=int, default=None, help="PUBLIC upper bound on the number of records")


def _add_out_option(p: Any) -> None:
    p.add_argument("--out", help="also write the release (JSON) here (dptree query shows it again)")
    core.add_force_option(p, "release")


@contextmanager
def read_column(args: argparse.Namespace) -> Iterator[Any]:
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
    lower, upper = core.parse_bounds(args.lower, args.upper)
    if args.width is not None and not isinstance(lower, str) and not isinstance(upper, str):
        raise InvalidParameterError("--width is the resolution of a date domain (--lower/--upper dates); a numeric "
                                    "domain has none: drop --width")
    return lower, upper, core.parse_width(args.width, lower if isinstance(lower, str) else upper)


def _declared(res: Any) -> str:
    if res.n_declared is None:
        return "none"
    return f"{'n_max' if getattr(res, 'n_is_upper_bound', False) else 'n'}={res.n_declared}"


class _Point(Releasing):
    """What ``interior-point``, ``median`` and ``quantile`` share: the bounds, the data as the
    library reads a ``column=`` of a file, the release's own printer."""

    def plan(self) -> Any:
        self.lower, self.upper, self.width = _bounds(self.args)
        return self.check()

    @abstractmethod
    def check(self) -> Any:
        """The plan the ledger charges, from the public parameters (the bounds parsed)."""

    def read(self, plan: Any) -> Any:
        return read_column(self.args)


class _InteriorPoint(_Point):
    kind = "interior_point"

    def check(self) -> Any:
        from dptree.interior import plan_interior_point

        args = self.args  # a --delta given to the exponential mechanism is not spent, hence not charged
        return plan_interior_point(lower=self.lower, upper=self.upper, epsilon=args.epsilon, delta=args.delta,
                                   method=args.method, beta=args.beta, run_anyway=args.run_anyway, n=args.n,
                                   n_max=args.n_max, width=self.width)

    def release(self, plan: Any, data: Any) -> Any:
        return plan.release(data, column=self.args.column, on_invalid=self.args.on_invalid, rng=self.args.seed)

    def show(self, res: Any) -> None:
        print(f"interior_point: {shown(res.value)}")
        if res.bottom:  # the mechanism's bottom output; the value above is only a placeholder
            print("bottom: True (no answer: the value is the placeholder --lower, not an interior point)")
        else:
            print("bottom: False")
        print(f"method: {res.method}")
        print(f"budget: {res.budget.describe()}")
        req = res.n_required
        print(f"guarantee_applies: {res.guarantee_applies} (declared {_declared(res)}, n_required={req}, "
              f"beta={res.beta})")
        print(f"private: {res.private}")


class _Quantile(_Point):
    """``dptree median`` / ``dptree quantile --q Q``: the exponential-mechanism quantile of a
    column (pure epsilon-DP)."""

    kind = "quantile"

    def check(self) -> Any:
        from dptree.interior import plan_quantile

        args = self.args
        q = 0.5 if args.command == "median" else args.q
        return plan_quantile(q, lower=self.lower, upper=self.upper, epsilon=args.epsilon, n=args.n, n_max=args.n_max,
                             width=self.width)

    def release(self, plan: Any, data: Any) -> Any:
        return plan.release(data, column=self.args.column, on_invalid=self.args.on_invalid, rng=self.args.seed)

    def show(self, res: Any) -> None:
        name = "median" if self.args.command == "median" else f"quantile({res.q:g})"
        print(f"{name}: {shown(res.value)}")
        print("method: exponential mechanism (Kaplan et al. 2020)")
        print(f"budget: epsilon={res.epsilon:g} (pure epsilon-DP)")
        print(f"declared: {_declared(res)}")
        print(f"private: {res.private}")


def run_interior_point(args: argparse.Namespace) -> int:
    return run_releasing(_InteriorPoint(args))


def run_quantile(args: argparse.Namespace) -> int:
    return run_releasing(_Quantile(args))
