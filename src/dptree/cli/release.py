"""``dptree release``: a private range tree of one column of a CSV/Parquet file (or stdin), plain,
bounded per user (``--user-id``) or one per group (``--by``), optionally charged to a ledger."""

from __future__ import annotations

import argparse
from typing import Any, cast

import numpy as np

from dptree.cli import core
from dptree.cli.ledger_options import add_ledger_options, charged, charged_budget, ledger_path, note_charge
from dptree.errors import InvalidParameterError

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser("release", help="release a private range tree of one column of a CSV/Parquet file")
    core.add_input_options(p)
    p.add_argument("--column", required=True)
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
    p.add_argument("--max-contributions", type=int, default=1)
    p.add_argument("--levels", choices=["uniform", "all_ranges", "prefix", "optimal"], default="uniform")
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
    p.set_defaults(func=run_release)


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
    """Every public check (the --out paths included), the charge, then the data, the noise and
    the output (:mod:`dptree.cli.ledger_options`)."""
    from dptree import noise as _noise
    from dptree.io import release_file
    from dptree.rangetree.release import plan_range_tree

    # 1. everything public, before any charge
    ledger = ledger_path(args.ledger)
    core.check_seed(args)
    core.check_group_options(args)
    if args.bounds != "private" and args.bounds_share != 0.1:  # it would go unused
        raise InvalidParameterError("--bounds-share is the share of --epsilon that --bounds private spends on the "
                                    "bounds: add --bounds private (without --lower/--upper), or drop --bounds-share")
    if args.sparse:
        return _run_sparse(args, ledger)
    if args.bounds == "private":
        return _run_private_bounds(args, ledger)
    if args.bounds_origin is not None:
        raise InvalidParameterError("--bounds-origin is where --bounds private starts its search: add --bounds private "
                                    "(without --lower/--upper), or drop --bounds-origin")
    if args.lower is None or args.upper is None:
        raise InvalidParameterError("--lower and --upper are required (the domain must be public), or pass "
                                    "--bounds private to spend --bounds-share of --epsilon finding them")
    lower = core.parse_bound(args.lower, "--lower")
    upper = core.parse_bound(args.upper, "--upper")
    plan = plan_range_tree(
        lower=lower, upper=upper, epsilon=args.epsilon, delta=args.delta, rho=args.rho,
        width=core.parse_width(args.width, lower), branching=args.branching, noise=args.noise,
        neighbors=args.neighbors, max_contributions=args.max_contributions, levels=args.levels,
    )
    check_exact_total(args)
    groups = core.parse_groups(args.groups) if args.by else None
    outs = core.group_output_paths(args.out, groups)
    core.check_input_path(args.file, ledger)
    for out in outs:
        core.check_output_path(out, inputs=[args.file], ledger=ledger, force=args.force)
    planned = f"planned a {plan.layout.branching}-ary tree over {plan.domain.size} buckets"
    progress = core.progress_of(args, [planned, "histogram computed; adding noise and estimating"])
    progress(planned)
    src = cast(_noise.RngLike, _noise.make_source(args.seed))  # one stream: bounding, then noise
    label = args.ledger_label or f"{args.file}:{args.column}" + (f" by {args.by}" if args.by else "")
    created = release_file.utc_now()  # before the data is read: the file must not time the reading
    # 2. the charge (committed), 3. the data, the noise and the output
    with charged(ledger, plan, label, outputs=outs) as charge:
        hist = _histogram(args, plan, groups, src, progress.report)
        progress("histogram computed; adding noise and estimating")
        if args.by:
            from dptree.rangetree.groupby import release_groups

            rel = release_groups(plan, hist, groups, src, column=args.column, source=args.file,  # type: ignore[arg-type]
                                 created=created)
            for _, r in rel.items():
                note_charge(r, charge, ledger)
            paths = rel.save(args.out, allow_nonprivate=args.allow_nonprivate, force=args.force)
            names = ", ".join(map(str, rel.groups))
            summary = f"{len(paths)} group releases ({names}): " + rel[rel.groups[0]].summary()
        else:
            release = plan.release(hist, rng=src, column=args.column, source=args.file, created=created)
            note_charge(release, charge, ledger)
            release.save(args.out, allow_nonprivate=args.allow_nonprivate, force=args.force)
            summary, paths = release.summary(), [args.out]
    progress.done()
    print(summary)
    core.wrote(paths)
    return 0


def _histogram(args: argparse.Namespace, plan: Any, groups: list[Any] | None, src: Any, report: Any) -> Any:
    """The leaf histogram(s) of the data file: per group (--by), bounded per user (--user-id) or
    plain. Reads the data: only inside the charge."""
    from dptree.data import histograms

    return histograms.leaf_histogram(
        args.file, plan, column=args.column, user_id=args.user_id or None, by=args.by or None,
        groups=groups if args.by else None, unknown=args.unknown_groups, on_invalid=args.on_invalid, rng=src,
        fmt=args.input_format, progress=report or False,
    )


def _run_private_bounds(args: argparse.Namespace, ledger: str | None) -> int:
    """``release --bounds private``: the public checks (:func:`plan_private_bounds`), the charge of
    the whole --epsilon, then one read of the data, the search and the tree."""
    from dptree import noise as _noise
    from dptree.rangetree.api import release_over_private_bounds
    from dptree.rangetree.bounds import plan_private_bounds

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
    core.check_input_path(args.file, ledger)
    core.check_output_path(args.out, inputs=[args.file], ledger=ledger, force=args.force)
    finding = f"private bounds: {plan.bounds_epsilon:g} of epsilon = {plan.epsilon:g} finds the range"
    progress = core.progress_of(args, [finding])
    progress(finding)
    src = _noise.make_source(args.seed)
    label = args.ledger_label or f"{args.file}:{args.column}"
    with charged(ledger, plan, label, outputs=[args.out]) as charge:
        release = release_over_private_bounds(plan, args.file, src, column=args.column, on_invalid=args.on_invalid,
                                              source=args.file, fmt=args.input_format)
        _write_one(args, release, charge, ledger)
    progress.done()
    print(release.summary())
    core.wrote([args.out])
    return 0


def _write_one(args: argparse.Namespace, release: Any, charge: Any, ledger: str | None) -> None:
    """Inside the charge (which records ``--out`` as its output): note it on the release, write ``--out``."""
    note_charge(release, charge, ledger)
    release.save(args.out, allow_nonprivate=args.allow_nonprivate, force=args.force)


def _run_sparse(args: argparse.Namespace, ledger: str | None) -> int:
    """``release --sparse``: a sparse range tree (:func:`dptree.sparse_range_tree`; pure epsilon-DP,
    Laplace, add/remove): its public checks, the charge of --epsilon, then the data and the file."""
    from dptree import noise as _noise
    from dptree.sparsetree.api import sparse_plans, sparse_range_tree

    clash = [flag for flag, used in (
        ("--width", args.width is not None), ("--levels", args.levels != "uniform"),
        ("--noise gaussian", args.noise == "gaussian"), ("--delta", bool(args.delta)), ("--rho", args.rho is not None),
        ("--neighbors replace", args.neighbors == "replace"), ("--bounds private", args.bounds == "private"),
        ("--bounds-origin", args.bounds_origin is not None), ("--by", bool(args.by)), ("--user-id", bool(args.user_id)),
    ) if used]
    if clash:
        raise InvalidParameterError(f"--sparse releases a pure epsilon-DP tree (Laplace noise, add/remove neighbors, "
                                    f"no bucket width) of the whole file: drop {', '.join(clash)}")
    if args.epsilon is None:
        raise InvalidParameterError("--sparse needs --epsilon")
    if (args.lower is None) != (args.upper is None):
        raise InvalidParameterError("--sparse: give both --lower and --upper, or neither (the tree then covers every "
                                    "64-bit key of the column's type)")
    lower = None if args.lower is None else core.parse_bound(args.lower, "--lower")
    upper = None if args.upper is None else core.parse_bound(args.upper, "--upper")
    tree = {"epsilon": args.epsilon, "lower": lower, "upper": upper, "branching": args.branching or 16,
            "max_contributions": args.max_contributions, "column": args.column, "fmt": args.input_format}
    sparse_plans(args.file, dense_depth=None, threshold=None, method="privtree", structure_share="auto", **tree)
    core.check_input_path(args.file, ledger)
    core.check_output_path(args.out, inputs=[args.file], ledger=ledger, force=args.force)
    src = _noise.make_source(args.seed)
    with charged_budget(ledger, epsilon=args.epsilon, label=args.ledger_label or f"{args.file}:{args.column}",
                        outputs=[args.out]) as charge:
        release = sparse_range_tree(args.file, on_invalid=args.on_invalid, rng=src, **tree)
        _write_one(args, release, charge, ledger)
    print(release.summary())
    core.wrote([args.out])
    return 0


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
