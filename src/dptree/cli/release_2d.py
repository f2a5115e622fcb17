"""``dptree release --columns X,Y``: a private 2-D range tree (quadtree) of two columns of a file,
through the one run order of every releasing command (:func:`dptree.cli.run.run_releasing`)."""

from __future__ import annotations

import argparse
from contextlib import contextmanager
from typing import Any, Iterator

from dptree.cli import core
from dptree.cli.run import Releasing
from dptree.errors import InvalidParameterError

__all__ = ["Grid2D", "check_2d_options"]


def _pair(text: str | None, flag: str) -> tuple[Any, Any] | None:
    """``--lower 0,0``: two numbers (a single number: the same for both axes, ``--width`` only)."""
    if text is None:
        return None
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) == 1 and flag == "--width":
        parts = parts * 2
    if len(parts) != 2:
        raise InvalidParameterError(f"{flag} takes two numbers x,y with --columns, e.g. {flag} 0,0; got {text!r}")
    return (core.parse_bound(parts[0], flag, dates=False), core.parse_bound(parts[1], flag, dates=False))


def check_2d_options(args: argparse.Namespace) -> None:
    """Refuse the 1-D tree's options that a 2-D release does not take (they would go unused)."""
    from dptree.rangetree.contributions import DEFAULT_CAP, DEFAULT_SHARE

    used = [flag for flag, on in (("--column", args.column), ("--by", args.by), ("--user-id", args.user_id),
                                  ("--sparse", args.sparse), ("--bounds private", args.bounds == "private"),
                                  ("--bounds-share", args.bounds_share != 0.1),
                                  ("--bounds-origin", args.bounds_origin is not None),
                                  ("--branching", args.branching is not None),
                                  ("--contributions-share", args.contributions_share != DEFAULT_SHARE),
                                  ("--contributions-cap", args.contributions_cap != DEFAULT_CAP))
            if on]
    if used:
        raise InvalidParameterError(f"--columns releases a 2-D range tree (a quadtree: 4-ary, public bounds, one "
                                    f"record per person up to --max-contributions); drop {', '.join(used)}")


class Grid2D(Releasing):
    """A 2-D range tree of ``--columns X,Y`` over ``--lower x0,y0`` .. ``--upper x1,y1``
    (:func:`dptree.plan_range_tree_2d`)."""

    kind = "range_tree_2d"

    def plan(self) -> Any:
        from dptree import noise as _noise
        from dptree.io import release_file
        from dptree.spatial.release import plan_range_tree_2d

        args = self.args
        check_2d_options(args)
        names = [c.strip() for c in args.columns.split(",")]
        if len(names) != 2 or not all(names):
            raise InvalidParameterError(f"--columns takes two column names x,y, e.g. --columns lon,lat; got "
                                        f"{args.columns!r}")
        self.names = (names[0], names[1])
        if args.lower is None or args.upper is None:
            raise InvalidParameterError("--lower x0,y0 and --upper x1,y1 are required with --columns (the grid is "
                                        "public)")
        if args.max_contributions == "private":
            raise InvalidParameterError("--columns releases at a declared --max-contributions K")
        plan = plan_range_tree_2d(
            lower=_pair(args.lower, "--lower"), upper=_pair(args.upper, "--upper"), width=_pair(args.width, "--width"),
            epsilon=args.epsilon, delta=args.delta, rho=args.rho, noise=args.noise, neighbors=args.neighbors,
            max_contributions=args.max_contributions, levels=args.levels or "all_rectangles")
        plan.check_public_total(on_invalid=args.on_invalid)
        g = plan.grid
        self.planned = f"planned a quadtree of depth {g.depth} over {g.x.size}x{g.y.size} cells"
        self.src = _noise.make_source(args.seed)
        self.created = release_file.utc_now()  # before the data is read: the file must not time the reading
        return plan

    def label(self) -> str:
        return f"{self.args.file}:{self.args.columns}"

    def stages(self) -> list[str]:
        return [self.planned, "cells counted; adding noise and estimating"]

    @contextmanager
    def read(self, plan: Any) -> Iterator[Any]:
        from dptree.spatial.counting import grid_histogram

        yield grid_histogram(self.args.file, plan, self.names, on_invalid=self.args.on_invalid,
                             fmt=self.args.input_format)
        self.progress("cells counted; adding noise and estimating")

    def release(self, plan: Any, data: Any) -> Any:
        return plan.release(data, rng=self.src, columns=self.names, source=self.args.file, created=self.created)

    def show(self, release: Any) -> None:
        print(release.summary())
