"""``dptree release --weights COLUMN --weight-bounds LO,HI``: a range tree with sums of a weight
column (:func:`dptree.plan_range_sums`; counts, sums and means of every range), through the one
run order (:mod:`dptree.cli.run`): plan, check the files, charge, read, release, save."""

from __future__ import annotations

import argparse
from contextlib import contextmanager
from typing import Any, Iterator, cast

from dptree.cli import core
from dptree.cli.run import Releasing
from dptree.errors import InvalidParameterError

__all__ = ["add_sums_options", "wants_sums", "RangeSumsRelease"]


def add_sums_options(p: Any) -> None:
    """``--weights``, ``--weight-bounds``, ``--weight-resolution``, ``--sum-share``."""
    g = p.add_argument_group("sums and means of a weight")
    g.add_argument("--weights", metavar="COLUMN",
                   help="also release the sums of COLUMN over every range (dptree query --sum, --mean)")
    g.add_argument("--weight-bounds", metavar="LO,HI",
                   help="public bounds every weight is clamped to, e.g. 0,100 (required with --weights)")
    g.add_argument("--weight-resolution", type=float, default=1.0,
                   help="the grid weights are rounded to, halves up (default 1; e.g. 0.01 for cents)")
    g.add_argument("--sum-share", type=float, default=None,
                   help="the share of the budget the sum tree gets (default: the split that minimises a typical "
                        "range's mean variance)")


def wants_sums(args: argparse.Namespace) -> bool:
    return bool(args.weights or args.weight_bounds or args.sum_share is not None or args.weight_resolution != 1.0)


def _bounds(text: str | None) -> tuple[float, float]:
    if not text or text.count(",") != 1:
        raise InvalidParameterError("--weight-bounds needs LO,HI, e.g. --weight-bounds 0,100 (with --weights)")
    try:
        lo, hi = (float(t) for t in text.split(","))
    except ValueError:
        raise InvalidParameterError(f"--weight-bounds needs two numbers LO,HI, got {text!r}") from None
    return lo, hi


class RangeSumsRelease(Releasing):
    """A range tree with sums of ``--weights`` (one column of the same file; no --by, --sparse,
    --bounds private or --max-contributions private)."""

    kind = "range_sums"

    def plan(self) -> Any:
        from dptree import noise as _noise
        from dptree.io import release_file
        from dptree.rangetree.sums_release import plan_range_sums

        args = self.args
        used = [flag for flag, on in (("--by", args.by), ("--sparse", args.sparse),
                                      ("--bounds private", args.bounds == "private"),
                                      ("--max-contributions private", args.max_contributions == "private")) if on]
        if used:
            raise InvalidParameterError(f"{', '.join(used)} do(es) not combine with --weights: release the sums over "
                                        "declared --lower/--upper, at a declared --max-contributions K")
        if not args.weights:
            raise InvalidParameterError("--weight-bounds, --weight-resolution and --sum-share apply to sums: add "
                                        "--weights COLUMN")
        if args.lower is None or args.upper is None:
            raise InvalidParameterError("--lower and --upper are required (the domain must be public)")
        lower, upper = core.parse_bounds(args.lower, args.upper)
        res = args.weight_resolution
        plan = plan_range_sums(
            lower=lower, upper=upper, epsilon=args.epsilon, delta=args.delta, rho=args.rho,
            width=core.parse_width(args.width, lower), branching=args.branching, noise=args.noise,
            neighbors=args.neighbors, max_contributions=args.max_contributions, levels=args.levels,
            weight_bounds=_bounds(args.weight_bounds), weight_resolution=int(res) if res == int(res) else res,
            sum_share=args.sum_share,
        )
        self.src = cast(_noise.RngLike, _noise.make_source(args.seed))  # one stream: bounding, then noise
        self.created = release_file.utc_now()  # before the data is read
        return plan

    def label(self) -> str:
        return f"{self.args.file}:{self.args.column} sums of {self.args.weights}"

    @contextmanager
    def read(self, plan: Any) -> Iterator[Any]:
        from dptree.data.histograms import leaf_sums

        args = self.args
        yield leaf_sums(args.file, plan, plan.grid, weights=args.weights, column=args.column,
                        user_id=args.user_id or None, on_invalid=args.on_invalid, rng=self.src, fmt=args.input_format,
                        progress=self.progress.report or False)

    def release(self, plan: Any, data: Any) -> Any:
        counts, sums = data
        return plan.release(counts, sums, self.src, column=self.args.column, weights=self.args.weights,
                            source=self.args.file, created=self.created)

    def show(self, release: Any) -> None:
        print(release.summary())
