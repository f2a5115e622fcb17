"""``dptree plot``: a PNG of a saved release: a range tree's CDF or histogram (a sparse tree's CDF), a
hierarchy's counts, quantiles with their intervals (every group's, for a group-by release), a 2-D
range tree's heat map beside its standard errors, a continual counter's running totals with their
band."""

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


def add_drawing_options(p: Any, command: str, out: str) -> None:
    """Arguments shared by ``plot`` and ``report``: the release file, the file written (``out``
    describes it), ``--force`` and the confidence level."""
    p.add_argument("release")
    p.add_argument("--out", required=True, help=out)
    core.add_force_option(p, command)
    p.add_argument("--ci", type=float, default=None,
                   help="confidence level of bands and intervals (default 0.95; a quantiles release: its own level)")


def register(sub: Any) -> None:
    p = sub.add_parser("plot", help="plot a release: a range tree's CDF (dense or sparse) or histogram, a "
                                    "hierarchy's counts, quantiles with their intervals")
    add_drawing_options(p, "plot", "PNG file to write")
    p.add_argument("--kind", choices=["cdf", "histogram"], default=None, help="range trees: what to plot (default cdf)")
    p.add_argument("--groups", help="group-by releases: the groups to draw, comma-separated (default: every group, "
                                    "at most 10)")
    p.add_argument("--bins", type=int, default=None, help="histogram: about this many bins with round edges "
                                                          "(default 30)")
    p.add_argument("--depth", type=int, default=None, help="hierarchies: the level to plot (default 1: children of "
                                                           "the root)")
    p.add_argument("--resolution", type=int, default=None,
                   help="2-D range trees: blocks per axis of the heat map (default 64, at most the buckets)")
    add_view_options(p)
    p.set_defaults(func=run_plot)


def run_plot(args: argparse.Namespace) -> int:
    return core.write_from_release(args, _PLOTS, "plot")


def only_for(args: argparse.Namespace, kind: str, *flags: str) -> None:
    """Refuse the options given in ``flags`` (argparse names) that do not apply to a ``kind`` release."""
    given = ["--" + f.replace("_", "-") for f in flags if getattr(args, f) is not None and getattr(args, f) is not False]
    if given:
        verb, it = ("does", "it") if len(given) == 1 else ("do", "them")
        raise InvalidParameterError(f"{', '.join(given)} {verb} not apply to a {kind} release; drop {it}")


def _plot_range_tree(release: Any, args: argparse.Namespace) -> None:
    from dptree.reporting.plot import plot_cdf, plot_histogram

    only_for(args, "range-tree", "groups", "depth", "resolution", *(() if args.kind == "histogram" else ("bins",)))
    view = {"level": core.release_level(release, args.ci), "clip_negative": args.clip_negative, "force": args.force,
            "log": args.log}
    if args.kind == "histogram":
        plot_histogram(release, args.out, bins=30 if args.bins is None else args.bins, **view)
    else:
        plot_cdf(release, args.out, **view)


def _plot_grouped_tree(release: Any, args: argparse.Namespace) -> None:
    from dptree.reporting.plot import plot_cdf

    if args.kind == "histogram":
        raise InvalidParameterError("--kind histogram draws one range tree; a group-by release draws every group's "
                                    "CDF (release --by writes one file per group to plot a histogram of each)")
    only_for(args, "group-by range-tree", "depth", "bins", "resolution")
    plot_cdf(release, args.out, level=core.release_level(release, args.ci), clip_negative=args.clip_negative,
             force=args.force, log=args.log, groups=_groups_of(release, args))


def _groups_of(release: Any, args: argparse.Namespace) -> list[Any] | None:
    """``--groups a,b`` as the release's own groups ("7" names the group 7 or "7"), or None: all."""
    if args.groups is None:
        return None
    return [next((g for g in release.groups if str(g) == str(x)), x) for x in core.parse_groups(args.groups)]


def _plot_sparse(release: Any, args: argparse.Namespace) -> None:
    from dptree.reporting.plot import plot_cdf

    if args.kind == "histogram":
        raise InvalidParameterError("--kind histogram spaces round bins over a bounded domain; a sparse range tree's "
                                    "spans up to 2^64 keys: plot its CDF, or ask dptree query --histogram E0,E1,...")
    only_for(args, "sparse range-tree", "groups", "depth", "bins", "resolution")
    plot_cdf(release, args.out, level=core.release_level(release, args.ci), clip_negative=args.clip_negative,
             force=args.force, log=args.log)


def _plot_hierarchy(release: Any, args: argparse.Namespace) -> None:
    from dptree.reporting.plot import plot_hierarchy

    if args.log:
        raise InvalidParameterError("--log applies to range trees and quantiles (a value axis); hierarchies have none")
    only_for(args, "hierarchy", "kind", "groups", "bins", "resolution")
    plot_hierarchy(release, args.out, depth=1 if args.depth is None else args.depth, level=core.release_level(release, args.ci),
                   clip_negative=args.clip_negative, force=args.force)


def _plot_quantiles(release: Any, args: argparse.Namespace) -> None:
    from dptree.reporting.plot import plot_quantiles

    core.release_level(release, args.ci)  # the release's own level, or a refusal
    only_for(args, "quantiles", "kind", "clip_negative", "depth", "bins", "resolution",
              *(() if hasattr(release, "items") else ("groups",)))
    plot_quantiles(release, args.out, groups=_groups_of(release, args), log=args.log, force=args.force)


def _plot_2d(release: Any, args: argparse.Namespace) -> None:
    from dptree.reporting.plot import plot_heatmap

    if args.log:
        raise InvalidParameterError("--log applies to a value axis; a 2-D range tree's heat map has none")
    only_for(args, "2-D range-tree", "kind", "groups", "bins", "depth")
    if args.resolution is not None and args.resolution < 1:
        raise InvalidParameterError(f"--resolution is a number of blocks per axis (1 or more); got {args.resolution}")
    plot_heatmap(release, args.out, resolution=64 if args.resolution is None else args.resolution,
                 level=core.release_level(release, args.ci), clip_negative=args.clip_negative, force=args.force)


def _plot_stream(release: Any, args: argparse.Namespace) -> None:
    from dptree.reporting.plot import plot_running

    only_for(args, "stream counter", "kind", "groups", "bins", "depth", "clip_negative")
    if args.log:
        raise InvalidParameterError("--log does not apply to a stream counter release (its axis is the step); drop it")
    plot_running(release, args.out, level=core.release_level(release, args.ci), force=args.force)


#: How ``dptree plot`` draws each kind of release.
_PLOTS: dict[str, Callable[[Any, argparse.Namespace], None]] = {
    "range_tree": _plot_range_tree,
    "range_sums": _plot_range_tree,
    "factorized_cdf": _plot_range_tree,
    "range_tree_groups": _plot_grouped_tree,
    "range_tree_private_groups": _plot_grouped_tree,
    "sparse_range_tree": _plot_sparse,
    "hierarchy": _plot_hierarchy,
    "quantiles": _plot_quantiles,
    "quantiles_groups": _plot_quantiles,
    "quantiles_private_groups": _plot_quantiles,
    "range_tree_2d": _plot_2d,
    "range_tree_2d_privtree": _plot_2d,
    "stream_counter": _plot_stream,
}
