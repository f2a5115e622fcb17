"""``dptree release``: a private range tree of one column of a CSV/Parquet file (or stdin), plain,
bounded per user (``--user-id``) or one per group (``--by``), optionally charged to a ledger."""

from __future__ import annotations

import argparse
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Iterator, cast

import numpy as np

from dptree.cli import core
from dptree.cli.ledger_options import add_ledger_options
from dptree.cli.private_groups import private_groups
from dptree.cli.release_2d import Grid2D
from dptree.cli.run import Releasing, run_releasing
from dptree.cli.sums import RangeSumsRelease, add_sums_options, wants_sums
from dptree.errors import InvalidParameterError
from dptree.rangetree.contributions import DEFAULT_CAP, DEFAULT_SHARE

__all__ = ["register", "contribution_bound", "add_contributions_options"]


def contribution_bound(text: str) -> int | str:
    """``--max-contributions``: an integer, or ``private``."""
    if text.strip() == "private":
        return "private"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'private', got {text!r}") from None


def register(sub: Any) -> None:
    p = sub.add_parser("release", help="release a private range tree of one column of a CSV/Parquet file")
    core.add_input_options(p)
    p.add_argument("--column", help="the column to release (one of --column and --columns is required)")
    p.add_argument("--columns", metavar="X,Y",
                   help="two columns: a 2-D range tree (quadtree) over --lower x0,y0 --upper x1,y1 (--width w or "
                        "wx,wy)")
    p.add_argument("--lower", help="public lower bound (number or date); required unless --bounds private")
    p.add_argument("--upper", help="public upper bound (number or date); required unless --bounds private")
    p.add_argument("--bounds", choices=["public", "private"], default="public",
                   help="private: spend --bounds-share of --epsilon finding the bounds (no --lower/--upper)")
    p.add_argument("--bounds-share", type=float, default=0.1,
                   help="with --bounds private: the share of --epsilon spent finding the bounds (default 0.1)")
    p.add_argument("--sparse", action="store_true",
                   help="a sparse range tree over 64-bit keys: ids, ns timestamps or raw floats with no --width; "
                        "--lower/--upper optional (Parquet; a CSV needs them)")
    p.add_argument("--bounds-origin",
                   help="with --bounds private: where the search starts (a number or a date near the data, e.g. "
                        "2024-01-01 for timestamps; a public guess, not a bound; default 0)")
    p.add_argument("--epsilon", type=float)
    p.add_argument("--delta", type=float, default=0.0)
    p.add_argument("--rho", type=float)
    p.add_argument("--width", help="public bucket width (number; for dates e.g. 1d, 6h)")
    p.add_argument("--branching", type=int)
    p.add_argument("--noise", choices=["laplace", "gaussian"], default="laplace")
    p.add_argument("--neighbors", choices=["add_remove", "replace"], default="add_remove")
    add_contributions_options(p)
    p.add_argument("--levels", choices=["uniform", "all_ranges", "prefix", "optimal", "all_rectangles", "geometric",
                                        "factorization", "cdf"],
                   help="the budget split over the levels (default uniform; with --columns all_rectangles); with "
                        "--noise gaussian, factorization releases the CDF through the square-root factorisation "
                        "and cdf picks it or the prefix tree, whichever has the lower average prefix variance")
    core.add_on_invalid_option(p, "the rows whose value is invalid (missing, +-inf, not a number, a non-integer "
                                  "on an integer domain): refuse, or drop each (how many is never shown)")
    core.add_seed_options(p)
    p.add_argument("--out", required=True, help="where to write the release (JSON); with --by it contains {group}")
    core.add_force_option(p, "release")
    core.add_progress_option(p)
    add_ledger_options(p)
    g = p.add_argument_group("users and groups")
    g.add_argument("--user-id", metavar="COLUMN",
                   help="keep at most --max-contributions records per value of COLUMN (chosen at random)")
    core.add_group_options(g)
    add_sums_options(p)
    p.set_defaults(func=run_release)


def add_contributions_options(p: Any) -> None:
    """``--max-contributions K`` (or ``private``), ``--contributions-share``, ``--contributions-cap``."""
    p.add_argument("--max-contributions", type=contribution_bound, default=1, metavar="K",
                   help="records per person (default 1); with --user-id, 'private' chooses it from the data with "
                        "--contributions-share of the budget")
    p.add_argument("--contributions-share", type=float, default=DEFAULT_SHARE,
                   help=f"with --max-contributions private: the share of the budget that chooses it (default "
                        f"{DEFAULT_SHARE:g})")
    p.add_argument("--contributions-cap", type=int, default=DEFAULT_CAP,
                   help=f"with --max-contributions private: the largest bound considered (default {DEFAULT_CAP})")


def check_exact_total(args: argparse.Namespace) -> None:
    """``--neighbors replace`` publishes the exact total: refuse the options that make it data-dependent
    (the CLI face of :meth:`dptree.rangetree.release.RangeTreePlan.check_public_total`)."""
    options = (("--by", args.by), ("--user-id", args.user_id), ("--on-invalid drop", args.on_invalid == "drop"))
    used = [flag for flag, on in options if on]
    if args.neighbors == "replace" and used:
        raise InvalidParameterError(
            "--neighbors replace publishes the total number of records exactly, which is only private when every "
            f"input record is counted; {', '.join(used)} make(s) the counted total depend on the data: use "
            "--neighbors add_remove"
        )


def run_release(args: argparse.Namespace) -> int:
    """The options that pick the release (--sparse, --bounds private, a range tree), then the one
    run order (:func:`dptree.cli.run.run_releasing`)."""
    core.check_seed(args)
    core.check_group_options(args)
    if args.columns is not None:
        return run_releasing(Grid2D(args))
    if args.column is None:
        raise InvalidParameterError("--column names the column to release (or --columns x,y for a 2-D range tree)")
    args.levels = args.levels or "uniform"
    if args.bounds != "private" and args.bounds_share != 0.1:  # it would go unused
        raise InvalidParameterError("--bounds-share is the share of --epsilon that --bounds private spends on the "
                                    "bounds: add --bounds private (without --lower/--upper), or drop --bounds-share")
    private_k = args.max_contributions == "private"
    if not private_k and (args.contributions_share != DEFAULT_SHARE or args.contributions_cap != DEFAULT_CAP):
        raise InvalidParameterError("--contributions-share and --contributions-cap set how --max-contributions private "
                                    "chooses the bound: add --max-contributions private (with --user-id), or drop them")
    if private_k and (args.sparse or args.bounds == "private"):
        raise InvalidParameterError("--max-contributions private needs a range tree over declared --lower/--upper: "
                                    "drop --sparse and --bounds private, or declare --max-contributions K")
    if wants_sums(args):
        return run_releasing(RangeSumsRelease(args))
    if args.sparse:
        return run_releasing(_Sparse(args))
    if args.bounds == "private":
        return run_releasing(_PrivateBounds(args))
    if private_groups(args):
        if private_k:
            raise InvalidParameterError("--groups private releases at a declared --max-contributions K: declare it, or "
                                        "drop --by/--groups for one tree at a private bound")
        return run_releasing(_PrivateGroups(args))
    if private_k:
        return run_releasing(_PrivateContributions(args))
    return run_releasing(_RangeTree(args))


class _RangeTree(Releasing):
    """A range tree (:func:`dptree.plan_range_tree`): plain, bounded per user (--user-id) or one per
    group (--by)."""

    def plan(self) -> Any:
        from dptree import noise as _noise
        from dptree.io import release_file
        from dptree.rangetree.cdf_choice import FACTORIZATION_LEVELS, choose_cdf_plan
        from dptree.rangetree.release import RangeTreePlan, plan_range_tree

        args = self.args
        if args.bounds_origin is not None:
            raise InvalidParameterError("--bounds-origin is where --bounds private starts its search: add --bounds "
                                        "private (without --lower/--upper), or drop --bounds-origin")
        if args.lower is None or args.upper is None:
            raise InvalidParameterError("--lower and --upper are required (the domain must be public), or pass "
                                        "--bounds private to spend --bounds-share of --epsilon finding them")
        lower, upper = core.parse_bounds(args.lower, args.upper)
        if not isinstance(lower, str) and not isinstance(upper, str) and not lower < upper:
            raise InvalidParameterError(f"--lower ({lower}) must be smaller than --upper ({upper})")
        if args.levels in FACTORIZATION_LEVELS:
            for flag, given in (("--by", args.by), ("--branching", args.branching)):
                if given:
                    raise InvalidParameterError(f"{flag} does not combine with --levels {args.levels} (one "
                                                "factorised CDF); use --levels prefix for a range tree")
            plan: Any = choose_cdf_plan(args.levels, lower=lower, upper=upper, epsilon=args.epsilon,
                                        delta=args.delta, rho=args.rho, width=core.parse_width(args.width, lower),
                                        noise=args.noise, neighbors=args.neighbors,
                                        max_contributions=args.max_contributions)
        else:
            plan = plan_range_tree(
                lower=lower, upper=upper, epsilon=args.epsilon, delta=args.delta, rho=args.rho,
                width=core.parse_width(args.width, lower), branching=args.branching, noise=args.noise,
                neighbors=args.neighbors, max_contributions=args.max_contributions, levels=args.levels,
            )
        if plan.root_exact:  # a tree under replace (a factorised CDF publishes nothing exactly)
            check_exact_total(args)
        self.groups = core.parse_groups(args.groups) if args.by else None
        shape = (f"a {plan.layout.branching}-ary tree" if isinstance(plan, RangeTreePlan)
                 else "a factorised CDF")
        self.planned = f"planned {shape} over {plan.domain.size} buckets"
        self.src = cast(_noise.RngLike, _noise.make_source(args.seed))  # one stream: bounding, then noise
        self.created = release_file.utc_now()  # before the data is read: the file must not time the reading
        return plan

    def outputs(self) -> list[str]:
        return core.group_output_paths(self.args.out, self.groups)

    def label(self) -> str:
        return f"{self.args.file}:{self.args.column}" + (f" by {self.args.by}" if self.args.by else "")

    def stages(self) -> list[str]:
        return [self.planned, "histogram computed; adding noise and estimating"]

    @contextmanager
    def read(self, plan: Any) -> Iterator[Any]:
        """The leaf histogram(s) of the data file: per group (--by), bounded per user (--user-id) or
        plain."""
        from dptree.data import histograms

        args = self.args
        yield histograms.leaf_histogram(
            args.file, plan, column=args.column, user_id=args.user_id or None, by=args.by or None,
            groups=self.groups, unknown=args.unknown_groups, on_invalid=args.on_invalid, rng=self.src,
            fmt=args.input_format, progress=self.progress.report or False,
        )
        self.progress("histogram computed; adding noise and estimating")

    def release(self, plan: Any, data: Any) -> Any:
        args = self.args
        if args.by:
            from dptree.rangetree.groupby import release_groups

            return release_groups(plan, data, self.groups, self.src, column=args.column,  # type: ignore[arg-type]
                                  source=args.file, created=self.created)
        return plan.release(data, rng=self.src, column=args.column, source=args.file, created=self.created)

    def show(self, release: Any) -> None:
        if self.args.by:
            names = ", ".join(map(str, release.groups))
            print(f"{len(release.groups)} group releases ({names}): " + release[release.groups[0]].summary())
        else:
            print(release.summary())


class _PrivateGroups(Releasing):
    """``release --by G --groups private``: the groups found privately, then one tree per released
    group (:func:`dptree.rangetree.private_groups.plan_private_groups`), written to one file."""

    kind = "range_tree_private_groups"

    def plan(self) -> Any:
        from dptree import noise as _noise
        from dptree.io import release_file
        from dptree.rangetree.private_groups import plan_private_groups

        args = self.args
        if args.lower is None or args.upper is None:
            raise InvalidParameterError("--lower and --upper are required with --groups private (the domain must be "
                                        "public)")
        lower, upper = core.parse_bounds(args.lower, args.upper)
        plan = plan_private_groups(
            lower=lower, upper=upper, epsilon=args.epsilon, delta=args.delta, rho=args.rho,
            max_groups=1 if args.max_groups is None else args.max_groups, groups_share=args.groups_share,
            per_user=bool(args.user_id), width=core.parse_width(args.width, lower), branching=args.branching,
            noise=args.noise, neighbors=args.neighbors, max_contributions=args.max_contributions, levels=args.levels)
        self.src = _noise.make_source(args.seed)  # one stream: the selection, the bounding, the noise
        self.created = release_file.utc_now()  # before the data is read
        return plan

    def label(self) -> str:
        return f"{self.args.file}:{self.args.column} by {self.args.by} (groups found privately)"

    def stages(self) -> list[str]:
        return ["selecting the groups privately, then one tree per released group"]

    def parts(self, release: Any) -> list[Any]:
        return [release]  # one file: the note goes to its metadata

    def read(self, plan: Any) -> AbstractContextManager[Any]:
        return nullcontext(self.args.file)  # the plan reads the file: the selection, then the trees

    def release(self, plan: Any, data: Any) -> Any:
        args = self.args
        return plan.release(data, by=args.by, user_id=args.user_id or None, column=args.column,
                            unknown=args.unknown_groups, on_invalid=args.on_invalid, rng=self.src,
                            fmt=args.input_format, progress=self.progress.report or False, source=args.file,
                            created=self.created)

    def show(self, release: Any) -> None:
        print(release.summary())


class _PrivateBounds(Releasing):
    """``release --bounds private`` (:func:`dptree.rangetree.bounds.plan_private_bounds`): one read
    of the data, the search for the bounds, then the tree, under the whole --epsilon."""

    def plan(self) -> Any:
        from dptree import noise as _noise
        from dptree.rangetree.bounds import plan_private_bounds

        args = self.args
        if args.lower is not None or args.upper is not None:
            raise InvalidParameterError("--bounds private finds the bounds from the data: drop --lower/--upper, or "
                                        "use --bounds public")
        width = None
        if args.width is not None:
            width = core.parse_width(args.width, "1970-01-01" if args.width[-1:] in "dhmsw" else 0)
        plan = plan_private_bounds(epsilon=args.epsilon, delta=args.delta, rho=args.rho, width=width,
                                   branching=args.branching, noise=args.noise, neighbors=args.neighbors,
                                   max_contributions=args.max_contributions, levels=args.levels,
                                   by=args.by or None, user_id=args.user_id or None, share=args.bounds_share,
                                   origin=_origin(args.bounds_origin))
        check_exact_total(args)
        self.finding = f"private bounds: {plan.bounds_epsilon:g} of epsilon = {plan.epsilon:g} finds the range"
        self.src = _noise.make_source(args.seed)
        return plan

    def label(self) -> str:
        return f"{self.args.file}:{self.args.column}"

    def stages(self) -> list[str]:
        return [self.finding]

    def read(self, plan: Any) -> AbstractContextManager[Any]:
        return nullcontext(self.args.file)  # the plan reads the file once, for the bounds and the tree

    def release(self, plan: Any, data: Any) -> Any:
        from dptree.rangetree.api import release_over_private_bounds

        args = self.args
        return release_over_private_bounds(plan, data, self.src, column=args.column, on_invalid=args.on_invalid,
                                           source=args.file, fmt=args.input_format)

    def show(self, release: Any) -> None:
        print(release.summary())


class _PrivateContributions(Releasing):
    """``release --user-id COLUMN --max-contributions private``
    (:func:`dptree.rangetree.api.plan_private_contributions`): the bound chosen from the records per
    user with --contributions-share of the budget, then the tree at it with the rest; both charged
    before the file is read (read twice: the records per user, then the bounded histogram)."""

    def plan(self) -> Any:
        from dptree import noise as _noise
        from dptree.rangetree.api import plan_private_contributions

        args = self.args
        if args.bounds_origin is not None:
            raise InvalidParameterError("--bounds-origin is where --bounds private starts its search: drop it")
        if args.lower is None or args.upper is None:
            raise InvalidParameterError("--lower and --upper are required with --max-contributions private (the domain "
                                        "must be public)")
        lower, upper = core.parse_bounds(args.lower, args.upper)
        if not isinstance(lower, str) and not isinstance(upper, str) and not lower < upper:
            raise InvalidParameterError(f"--lower ({lower}) must be smaller than --upper ({upper})")
        check_exact_total(args)
        plan = plan_private_contributions(
            lower=lower, upper=upper, epsilon=args.epsilon, delta=args.delta, rho=args.rho,
            width=core.parse_width(args.width, lower), branching=args.branching, noise=args.noise,
            neighbors=args.neighbors, levels=args.levels, user_id=args.user_id or None, by=args.by or None,
            share=args.contributions_share, cap=args.contributions_cap)
        self.src = _noise.make_source(args.seed)  # one stream: the choice, the bounding, the noise
        self.choosing = (f"private max_contributions: {plan.choice_epsilon:g} of the budget chooses it among "
                         f"1..{plan.cap}")
        return plan

    def label(self) -> str:
        return f"{self.args.file}:{self.args.column}"

    def stages(self) -> list[str]:
        return [self.choosing]

    def read(self, plan: Any) -> AbstractContextManager[Any]:
        return core.readable_path(self.args.file)  # standard input copied once: the plan reads it twice

    def release(self, plan: Any, data: Any) -> Any:
        args = self.args
        return plan.release(data, self.src, column=args.column, user_id=args.user_id, on_invalid=args.on_invalid,
                            source=args.file, fmt=args.input_format, progress=self.progress.report or False)

    def show(self, release: Any) -> None:
        print(release.summary())


class _Sparse(Releasing):
    """``release --sparse``: a sparse range tree (:func:`dptree.sparse_range_tree`; pure epsilon-DP,
    Laplace, add/remove)."""

    kind = "sparse_range_tree"

    def plan(self) -> Any:
        from dptree import noise as _noise
        from dptree.sparsetree.api import plan_sparse_range_tree

        args = self.args
        clash = [flag for flag, used in (
            ("--width", args.width is not None), ("--levels", args.levels != "uniform"),
            ("--noise gaussian", args.noise == "gaussian"), ("--delta", bool(args.delta)),
            ("--rho", args.rho is not None), ("--neighbors replace", args.neighbors == "replace"),
            ("--bounds private", args.bounds == "private"), ("--bounds-origin", args.bounds_origin is not None),
            ("--by", bool(args.by)), ("--user-id", bool(args.user_id)),
        ) if used]
        if clash:
            raise InvalidParameterError(f"--sparse releases a pure epsilon-DP tree (Laplace noise, add/remove "
                                        f"neighbors, no bucket width) of the whole file: drop {', '.join(clash)}")
        if args.epsilon is None:
            raise InvalidParameterError("--sparse needs --epsilon")
        if (args.lower is None) != (args.upper is None):
            raise InvalidParameterError("--sparse: give both --lower and --upper, or neither (the tree then covers "
                                        "every 64-bit key of the column's type)")
        lower = None if args.lower is None else core.parse_bound(args.lower, "--lower")
        upper = None if args.upper is None else core.parse_bound(args.upper, "--upper")
        plan = plan_sparse_range_tree(epsilon=args.epsilon, lower=lower, upper=upper, branching=args.branching or 16,
                                      max_contributions=args.max_contributions)
        plan.check_input(args.file, column=args.column, fmt=args.input_format)
        self.src = _noise.make_source(args.seed)
        return plan

    def label(self) -> str:
        return f"{self.args.file}:{self.args.column}"

    def read(self, plan: Any) -> AbstractContextManager[Any]:
        return nullcontext(self.args.file)  # read by the library's engine, inside the charge

    def release(self, plan: Any, data: Any) -> Any:
        args = self.args
        return plan.release(data, column=args.column, on_invalid=args.on_invalid, rng=self.src, fmt=args.input_format)

    def show(self, release: Any) -> None:
        print(release.summary())


def _origin(text: str | None) -> Any:
    """``--bounds-origin``: a number, or a date (numpy.datetime64), or None."""
    if text is None:
        return None
    value = core.parse_bound(text, "--bounds-origin")
    if not isinstance(value, str):
        return value
    try:
        return np.datetime64(value.strip(), "ns")
    except ValueError:
        raise InvalidParameterError(f"--bounds-origin must be a number or a date such as 2024-01-01, got {text!r}") \
            from None
