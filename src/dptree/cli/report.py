"""``dptree report``: a static HTML report of a saved release (parameters, privacy, plots, CSV,
the ledger charge)."""

from __future__ import annotations

import argparse
from typing import Any, Callable

from dptree.cli import core
from dptree.cli.plot import add_drawing_options, add_view_options, only_for

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser("report", help="write a static HTML report of a range-tree (dense, sparse or by group), "
                                      "hierarchy or quantiles release")
    add_drawing_options(p, "report", "HTML file to write")
    p.add_argument("--bins", type=int, default=None, help="range trees: histogram bins (default 30)")
    p.add_argument("--title")
    add_view_options(p)
    p.set_defaults(func=run_report)


def run_report(args: argparse.Namespace) -> int:
    return core.write_from_release(args, _REPORTS, "report")


#: the view options a report of each kind has no use for (refused, as dptree plot refuses them)
_UNUSED = {"hierarchy": ("log", "bins"), "quantiles": ("clip_negative", "bins"),
           "quantiles_groups": ("clip_negative", "bins"), "quantiles_private_groups": ("clip_negative", "bins"),
           "sparse_range_tree": ("bins",)}


def _write(release: Any, args: argparse.Namespace) -> None:
    from dptree.reporting.report import write_report

    kind = core.release_kind(release) or ""
    only_for(args, kind.replace("_", " "), *_UNUSED.get(kind, ()))
    write_report(release, args.out, level=core.release_level(release, args.ci),
                 bins=30 if args.bins is None else args.bins, title=args.title, log=args.log,
                 clip_negative=args.clip_negative, force=args.force)


#: The kinds of release ``dptree report`` describes (one writer renders them all).
_REPORTS: dict[str, Callable[[Any, argparse.Namespace], None]] = {
    "range_tree": _write, "range_sums": _write, "range_tree_groups": _write, "range_tree_private_groups": _write,
    "sparse_range_tree": _write, "hierarchy": _write, "quantiles": _write, "quantiles_groups": _write,
    "quantiles_private_groups": _write}
