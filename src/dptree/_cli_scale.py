"""Command-line additions of issue 6: ``--ledger``/``--user-id``/``--by`` on ``release``,
``dptree budget`` and ``dptree report``.

:func:`register` is called by :func:`dptree.cli.build_parser` with the subcommand action. It adds
the new subcommands and extends the existing ``release`` parser in place: with none of the new
options given, ``release`` runs exactly as before.

Order of a ledgered release (the ledger's crash-safety contract): validate the plan, open the
ledger, compute the histogram (bad files fail here, before any charge), charge the ledger (one
committed transaction), then draw the noise and write the output.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import contextmanager, nullcontext
from typing import Any, Iterator, cast

from .errors import InvalidParameterError

__all__ = ["register", "charged"]


def register(sub: Any) -> None:
    """Add ``budget`` and ``report``, and the issue-6 options of ``release``."""
    release = sub.choices.get("release")
    if release is not None:
        g = release.add_argument_group("scale (issue 6)")
        g.add_argument("--ledger", metavar="PATH", help="charge this budget ledger before releasing (dptree budget)")
        g.add_argument("--ledger-label", metavar="TEXT", help="label of the charge (default: FILE:COLUMN)")
        g.add_argument("--user-id", metavar="COLUMN",
                       help="keep at most --max-contributions records per value of COLUMN (chosen at random)")
        g.add_argument("--by", metavar="COLUMN", help="one release per group of COLUMN (parallel composition)")
        g.add_argument("--groups", metavar="A,B,...", help="the public list of groups (required with --by)")
        g.add_argument("--unknown-groups", choices=["error", "drop"], default="error",
                       help="rows of a group not in --groups: error (default) or drop")
        release.set_defaults(func=_cmd_release)
    _add_budget(sub)
    _add_report(sub)


@contextmanager
def charged(ledger_path: str | None, plan: Any, label: str) -> Iterator[Any]:
    """Charge ``plan`` to the ledger at ``ledger_path`` for the duration of the block (no-op for None).

    Use it around the noise and the output of any releasing command; the charge is committed
    before the block runs, and its status and output are recorded when the block ends::

        with charged(args.ledger, plan, label) as charge:
            release = plan.release(hist); release.save(out)
            if charge is not None: charge.output = out
    """
    if not ledger_path:
        yield None
        return
    from .ledger import Ledger

    with Ledger(ledger_path) as ledger:
        with ledger.charge_for(plan, label=label) as charge:
            yield charge


@contextmanager
def charged_budget(ledger_path: str | None, *, epsilon: float, delta: float = 0.0, label: str = "") -> Iterator[Any]:
    """Like :func:`charged`, for commands whose mechanism takes (epsilon, delta) directly
    (``hierarchy``, ``interior-point``): the charge is committed before the block draws noise."""
    if not ledger_path:
        yield None
        return
    from .budget import check_delta, check_epsilon
    from .ledger import Ledger

    eps, dlt = check_epsilon(epsilon), check_delta(delta)  # never charge an invalid budget
    with Ledger(ledger_path) as ledger:
        with ledger.charge(epsilon=eps, delta=dlt, label=label) as charge:
            yield charge


def add_ledger_options(p: Any) -> None:
    """``--ledger PATH`` and ``--ledger-label TEXT`` for a releasing command."""
    p.add_argument("--ledger", default=None, help="SQLite budget ledger to charge before releasing")
    p.add_argument("--ledger-label", dest="ledger_label", default=None, help="label of the charge")


def _cmd_release(args: argparse.Namespace) -> int:
    from . import cli

    if not (args.ledger or args.user_id or args.by):
        return cli._cmd_release(args)
    from . import noise as _noise
    from .ranges import plan_range_tree

    progress = cli._Progress(args.progress or sys.stderr.isatty())
    if args.seed is not None and not args.allow_nonprivate:
        raise InvalidParameterError("--seed makes a NOT private release; add --allow-nonprivate to save it")
    if args.by and not args.groups:
        raise InvalidParameterError("--by needs --groups A,B,... (the public list of groups)")
    if args.groups and not args.by:
        raise InvalidParameterError("--groups needs --by COLUMN")
    if args.by and "{group}" not in args.out:
        raise InvalidParameterError("with --by, --out must contain {group}, e.g. --out 'age-{group}.json'")
    lower = cli._parse_bound(args.lower)
    upper = cli._parse_bound(args.upper)
    plan = plan_range_tree(
        lower=lower, upper=upper, epsilon=args.epsilon, delta=args.delta, rho=args.rho,
        width=cli._parse_width(args.width, lower), branching=args.branching, noise=args.noise,
        neighbors=args.neighbors, max_contributions=args.max_contributions, levels=args.levels,
    )
    if args.by and args.neighbors == "replace":
        raise InvalidParameterError("--by releases use add/remove neighbours (a record could move between groups)")
    progress(f"planned a {plan.layout.branching}-ary tree over {plan.domain.size} buckets")
    ledger = None
    if args.ledger:
        from .ledger import Ledger

        ledger = Ledger(args.ledger)  # fails now (missing, corrupt, read-only) rather than after the data work
    src = cast(_noise.RngLike, _noise.make_source(args.seed))  # one stream: bounding, then noise
    groups = _parse_groups(args.groups) if args.by else None
    if args.by:
        from .grouped import file_grouped_histograms

        hist = file_grouped_histograms(
            args.file, args.column, args.by, plan, groups=groups, unknown=args.unknown_groups,  # type: ignore[arg-type]
            user_column=args.user_id, missing=args.missing, rng=src, fmt=args.input_format,
        )
    elif args.user_id:
        from .bounding import file_bounded_histogram

        hist = file_bounded_histogram(args.file, args.column, args.user_id, plan, missing=args.missing,
                                      rng=src, fmt=args.input_format)
    else:
        from .backends.duckdb_backend import file_leaf_histogram

        hist = file_leaf_histogram(args.file, args.column, plan.domain, plan.layout.padded_size,
                                   missing=args.missing, fmt=args.input_format, progress=progress.enabled)
    progress("histogram computed; charging, adding noise and estimating")
    label = args.ledger_label or f"{args.file}:{args.column}" + (f" by {args.by}" if args.by else "")
    charge_ctx: Any = ledger.charge_for(plan, label=label) if ledger is not None else nullcontext(None)
    try:
        with charge_ctx as charge:
            if args.by:
                from .grouped import release_groups

                rel = release_groups(plan, hist, groups, src)  # type: ignore[arg-type]
                paths = rel.save(args.out, allow_nonprivate=args.allow_nonprivate)
                if charge is not None:
                    charge.output = ", ".join(paths)
                names = ", ".join(map(str, rel.groups))
                summary = f"{len(paths)} group releases ({names}): " + rel[rel.groups[0]].summary()
            else:
                release = plan.release(hist, rng=src)
                release.save(args.out, allow_nonprivate=args.allow_nonprivate)
                if charge is not None:
                    charge.output = args.out
                summary = release.summary()
    finally:
        if ledger is not None:
            ledger.close()
    progress(f"wrote {args.out}")
    print(summary)
    return 0


def _parse_groups(text: str) -> list[Any]:
    parts = [p.strip() for p in text.split(",")]
    if not parts or any(p == "" for p in parts):
        raise InvalidParameterError("--groups must be a comma-separated list such as north,south,east")
    try:
        return [int(p) for p in parts]
    except ValueError:
        return parts


def _add_budget(sub: Any) -> None:
    p = sub.add_parser("budget", help="create a budget ledger or show its spend history")
    p.add_argument("ledger", help="ledger file (SQLite)")
    p.add_argument("--create", action="store_true", help="create the ledger with the totals given")
    p.add_argument("--total-epsilon", type=float)
    p.add_argument("--total-delta", type=float, default=0.0)
    p.add_argument("--total-rho", type=float)
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=_cmd_budget)


def _cmd_budget(args: argparse.Namespace) -> int:
    import os

    from .ledger import Ledger

    if args.create:
        if os.path.exists(args.ledger):
            raise InvalidParameterError(f"{args.ledger} already exists; it keeps its totals (drop --create to show it)")
        if args.total_epsilon is None and args.total_rho is None:
            raise InvalidParameterError("--create needs --total-epsilon (and --total-delta) and/or --total-rho")
        Ledger(args.ledger, total_epsilon=args.total_epsilon, total_delta=args.total_delta,
               total_rho=args.total_rho).close()
    elif args.total_epsilon is not None or args.total_rho is not None:
        raise InvalidParameterError("totals are set once, with --create")
    with Ledger(args.ledger, read_only=not args.create) as led:
        spent = led.spent()
        history = led.history()
        totals = {"epsilon": led.total_epsilon, "delta": led.total_delta, "rho": led.total_rho}
    if args.format == "json":
        print(json.dumps({"ledger": args.ledger, "totals": totals,
                          "spent": {"epsilon": spent.epsilon, "delta": spent.delta, "rho": spent.rho,
                                    "charges": spent.charges},
                          "history": history}, indent=2))
        return 0
    shown = {k: v for k, v in totals.items() if v is not None and (k != "delta" or totals["epsilon"] is not None)}
    tot = ", ".join(f"{k}={v:g}" for k, v in shown.items())
    print(f"ledger {args.ledger}: total {tot}")
    parts = []
    if totals["epsilon"] is not None:
        parts.append(f"epsilon={spent.epsilon:.6g} of {totals['epsilon']:g}, "
                     f"delta={spent.delta:.3g} of {totals['delta']:g}")
    if totals["rho"] is not None:
        parts.append(f"rho={spent.rho:.6g} of {totals['rho']:g}")
    print(f"spent in {spent.charges} charge(s): " + "; ".join(parts))
    if history:
        cols = ["id", "time (UTC)", "label", "kind", "epsilon", "delta", "rho", "status", "output"]
        body = [[str(h["id"]), h["created_utc"], h["label"], h["kind"], f"{h['epsilon']:g}", f"{h['delta']:g}",
                 f"{h['rho']:g}", h["status"], h["output"] or ""] for h in history]
        widths = [max(len(c), *(len(r[i]) for r in body)) for i, c in enumerate(cols)]
        print("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip())
        for r in body:
            print("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    return 0


def _add_report(sub: Any) -> None:
    p = sub.add_parser("report", help="write a static HTML report of a range-tree release")
    p.add_argument("release")
    p.add_argument("--out", required=True, help="HTML file to write")
    p.add_argument("--ci", type=float, default=0.95, help="confidence level of bands and intervals")
    p.add_argument("--bins", type=int, default=30, help="histogram bins (default 30)")
    p.add_argument("--title")
    p.set_defaults(func=_cmd_report)


def _cmd_report(args: argparse.Namespace) -> int:
    from .ranges import RangeTree
    from .report import write_report
    from .serialize import load

    release = load(args.release)
    if not isinstance(release, RangeTree):
        raise InvalidParameterError("report needs a range-tree release")
    write_report(release, args.out, level=args.ci, bins=args.bins, title=args.title)
    print(f"wrote {args.out}")
    return 0
