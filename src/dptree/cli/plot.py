"""``dptree plot``: a PNG of a saved release: a range tree's CDF or histogram, a hierarchy's counts."""

from __future__ import annotations

import argparse
from typing import Any, Callable

from dptree.cli import core
from dptree.errors import InvalidParameterError

__all__ = ["register", "add_view_options"]


def add_view_options(p: Any) -> None:
    """Options shared by ``plot`` and ``report``: log scale and the clipped view."""
    p.add_argument("--log", action="store_true", help="logarithmic value axis (symlog when the domain reaches 0)")
    p.add_argument("--clip-negative", action="store_true",
                   help="post-processed view: draw negative estimates as 0 (the plot says so)")


def register(sub: Any) -> None:
    p = sub.add_parser("plot", help="plot a release: a range tree's CDF or histogram, a hierarchy's counts")
    p.add_argument("release")
    p.add_argument("--out", required=True, help="PNG file to write")
    core.add_force_option(p, "plot")
    p.add_argument("--ci", type=float, default=0.95)
    p.add_argument("--kind", choices=["cdf", "histogram"], default="cdf", help="range trees: what to plot")
    p.add_argument("--bins", type=int, default=30, help="histogram: about this many bins with round edges")
    p.add_argument("--depth", type=int, default=1, help="hierarchies: the level to plot (1: children of the root)")
    add_view_options(p)
    p.set_defaults(func=run_plot)


def run_plot(args: argparse.Namespace) -> int:
    return core.write_from_release(args, _PLOTS, "plot")


def _plot_range_tree(release: Any, args: argparse.Namespace) -> None:
    from dptree.reporting.plot import plot_cdf, plot_histogram

    view = {"level": args.ci, "clip_negative": args.clip_negative, "force": args.force, "log": args.log}
    if args.kind == "histogram":
        plot_histogram(release, args.out, bins=args.bins, **view)
    else:
        plot_cdf(release, args.out, **view)


def _plot_hierarchy(release: Any, args: argparse.Namespace) -> None:
    from dptree.reporting.plot import plot_hierarchy

    if args.log:
        raise InvalidParameterError("--log applies to range trees (a value axis); hierarchies have none")
    plot_hierarchy(release, args.out, depth=args.depth, level=args.ci, clip_negative=args.clip_negative,
                   force=args.force)


#: How ``dptree plot`` draws each kind of release.
_PLOTS: dict[str, Callable[[Any, argparse.Namespace], None]] = {
    "range_tree": _plot_range_tree,
    "hierarchy": _plot_hierarchy,
}
