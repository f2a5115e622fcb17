"""``dptree report``: a static HTML report of a saved release (parameters, privacy, plots, CSV,
the ledger charge)."""

from __future__ import annotations

import argparse
from typing import Any, Callable

from dptree.cli import core
from dptree.cli.plot import add_drawing_options, add_view_options, only_for
from dptree.errors import InvalidParameterError

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser("report", help="write a static HTML report of a range-tree (dense, sparse, by group or "
                                      "2-D), hierarchy or quantiles release")
    add_drawing_options(p, "report", "HTML file to write")
    p.add_argument("--bins", type=int, default=None, help="range trees: histogram bins (default 30)")
    p.add_argument("--resolution", type=int, default=None,
                   help="2-D releases: blocks per axis of the heat map and the CSV grid (default 64, at most the "
                        "buckets)")
    p.add_argument("--title")
    add_view_options(p)
    p.set_defaults(func=run_report)


def run_report(args: argparse.Namespace) -> int:
    return core.write_from_release(args, _REPORTS, "report")


#: the view options a report of each kind has no use for (refused, as dptree plot refuses them)
_UNUSED = {"hierarchy": ("log", "bins"), "quantiles": ("clip_negative", "bins"),
           "quantiles_groups": ("clip_negative", "bins"), "quantiles_private_groups": ("clip_negative", "bins"),
           "sparse_range_tree": ("bins",), "range_tree_2d": ("bins", "log"),
           "range_tree_2d_privtree": ("bins", "log")}
#: the kinds whose report draws a heat map of blocks (``--resolution``)
_GRIDS = ("range_tree_2d", "range_tree_2d_privtree")


def _write(release: Any, args: argparse.Namespace) -> None:
    from dptree.reporting.report import write_report

    kind = core.release_kind(release) or ""
    unused = _UNUSED.get(kind, ()) + (() if kind in _GRIDS else ("resolution",))
    only_for(args, kind.replace("_", " "), *unused)
    if args.resolution is not None and args.resolution < 1:
        raise InvalidParameterError(f"--resolution is a number of blocks per axis (1 or more); got {args.resolution}")
    write_report(release, args.out, level=core.release_level(release, args.ci),
                 bins=30 if args.bins is None else args.bins, title=args.title, log=args.log,
                 clip_negative=args.clip_negative, force=args.force, resolution=args.resolution)


#: The kinds of release ``dptree report`` describes (one writer renders them all).
_REPORTS: dict[str, Callable[[Any, argparse.Namespace], None]] = {
    "range_tree": _write, "range_sums": _write, "factorized_cdf": _write, "range_tree_groups": _write,
    "range_tree_private_groups": _write, "sparse_range_tree": _write, "hierarchy": _write, "quantiles": _write, "quantiles_groups": _write,
    "quantiles_private_groups": _write, "range_tree_2d": _write, "range_tree_2d_privtree": _write}
