"""``dptree quantiles``: m private quantiles of a column, each with an interval (:func:`dptree.quantiles`).

    dptree quantiles FILE --column C --q 0.1,0.5,0.9 --lower L --upper U --epsilon E
                     [--method auto|tree|approx|joint|exponential] [--level 0.95] [--n N | --n-max N]
                     [--user-id COLUMN --max-contributions K|private] [--by COLUMN --groups A,B,...] [--out FILE]
                     [--by COLUMN --groups private --delta D [--max-groups M] [--groups-share S]]

prints the quantiles as a table and with ``--out`` writes the release (``dptree query`` shows it
again). Its ``--width`` is also the tree's bucket width on a numeric domain. The input options
are those of ``dptree median`` (:mod:`dptree.cli.interior`).
"""

from __future__ import annotations

import argparse
from typing import Any

from dptree.cli import core
from dptree.cli.interior import add_column_options, add_size_options, read_column
from dptree.cli.private_groups import private_groups
from dptree.cli.release import add_contributions_options
from dptree.cli.run import Releasing, run_releasing
from dptree.errors import InvalidParameterError
from dptree.io.contract import shown

__all__ = ["register"]


def register(sub: Any) -> None:
    from dptree.quantiles.measured import INTERVAL_SHARE
    from dptree.quantiles.plan import INTERVAL_OPTIONS, METHODS

    p = sub.add_parser(
        "quantiles",
        help="release m quantiles of a column with intervals (tree, ApproxQuantiles, JointExp; auto picks)",
        description="Release m differentially private quantiles of a CSV/Parquet column, each with an interval "
        "(dptree.quantiles): pure epsilon-DP under --neighbors.",
    )
    p.add_argument("--q", required=True, metavar="Q1,Q2,...", help="the levels in [0, 1], e.g. 0.1,0.5,0.9")
    add_column_options(p)
    p.add_argument("--method", default="auto", choices=list(METHODS),
                   help="auto (default) picks the smallest predicted error from public quantities")
    p.add_argument("--level", type=float, default=0.95, help="the intervals' confidence level (default 0.95)")
    p.add_argument("--interval", default="auto", choices=list(INTERVAL_OPTIONS),
                   help="auto (default): the tree's calibrated intervals, the other methods' counts (measured by noisy "
                        "counts at --interval-share of --epsilon); the tree's pivot; the others' bound (the stated "
                        "worst-case bound, no extra budget)")
    p.add_argument("--interval-share", type=float, default=INTERVAL_SHARE,
                   help=f"the share of --epsilon the counts intervals spend (default {INTERVAL_SHARE})")
    p.add_argument("--neighbors", choices=["add_remove", "replace"], default="add_remove")
    p.add_argument("--delta", type=float, default=0.0,
                   help="with --groups private: the delta of the selection of the groups (quantiles spend none)")
    add_size_options(p, "declared, never computed; --method joint needs one")
    p.add_argument("--n-min", type=int, default=None,
                   help="PUBLIC lower bound on the number of records: narrower intervals for approx, exponential "
                        "and joint")
    p.add_argument("--on-invalid", default="error", choices=["error", "drop"],
                   help="missing/NaN/inf values: refuse, or drop those rows (how many is never shown)")
    p.add_argument("--out", help="also write the release (JSON) here; with --by it contains {group}")
    core.add_force_option(p, "quantiles release")
    g = p.add_argument_group("people and groups")
    g.add_argument("--user-id", metavar="COLUMN",
                   help="the privacy unit is one person: keep at most --max-contributions records per value of "
                   "COLUMN (chosen at random)")
    add_contributions_options(g)
    core.add_group_options(g)
    p.set_defaults(func=run_quantiles)


def run_quantiles(args: argparse.Namespace) -> int:
    return run_releasing(_Quantiles(args))


def _levels(text: str) -> list[float]:
    """``--q 0.1,0.5,0.9``: the levels, each in [0, 1]."""
    if not text.strip():
        raise InvalidParameterError("--q needs at least one level, e.g. --q 0.5")
    try:  # an empty item ('0.5,') is refused, as --groups refuses one: a level may be missing
        levels = [float(t) for t in text.split(",")]
    except ValueError:
        raise InvalidParameterError(f"--q must be comma-separated levels such as 0.1,0.5,0.9, got {text!r}") from None
    return core.check_levels(levels, "--q")


class _Quantiles(Releasing):
    """m quantiles with intervals; one release per group with ``--by``."""

    kind = "quantiles"

    def plan(self) -> Any:
        args = self.args
        self.levels = _levels(args.q)
        self.lower, self.upper = core.parse_bounds(args.lower, args.upper)
        self.width = core.parse_width(args.width, self.upper if isinstance(self.upper, str) else self.lower)
        core.check_group_options(args)
        self.private = private_groups(args)
        self.groups = core.parse_groups(args.groups) if args.by and not self.private else None
        from dptree.quantiles import plan_quantiles

        found = {"delta": args.delta, "groups_share": args.groups_share, "max_groups": args.max_groups}
        return plan_quantiles(self.levels, lower=self.lower, upper=self.upper, epsilon=args.epsilon,
                              method=args.method, level=args.level, n=args.n, n_max=args.n_max, n_min=args.n_min,
                              width=self.width, neighbors=args.neighbors, interval=args.interval,
                              interval_share=args.interval_share,
                              groups="private" if self.private else self.groups, user_id=args.user_id,
                              max_contributions=args.max_contributions,
                              contributions_share=args.contributions_share, contributions_cap=args.contributions_cap,
                              **(found if self.private else {"delta": args.delta}))

    def outputs(self) -> list[str]:
        if self.args.out is None or self.private:
            return [] if self.args.out is None else [self.args.out]
        return core.group_output_paths(self.args.out, self.groups)

    def parts(self, release: Any) -> list[Any]:
        return [release] if self.private else list(super().parts(release))

    def read(self, plan: Any) -> Any:
        return read_column(self.args)

    def release(self, plan: Any, data: Any) -> Any:
        args = self.args
        by = {"by": args.by, "unknown": args.unknown_groups} if args.by else {}
        return plan.release(data, column=args.column, rng=args.seed, on_invalid=args.on_invalid, **by)

    def show(self, release: Any) -> None:
        """One table per release (per group with ``--by``): each level's value and interval."""
        if self.private:
            sel = release.privacy["selection"]["budget_spent"]
            print(f"{len(release.groups)} group(s) found privately (selection at epsilon={sel['epsilon']:g}, "
                  f"delta={sel['delta']:g})")
        for group, one in (release.items() if self.args.by else [(None, release)]):
            print(one.summary() if group is None else f"group {group}: {one.summary()}")
            rows = [(f"quantile({q:g})", _value(v), f"[{_value(lo)}, {_value(hi)}]")
                    for q, v, lo, hi in zip(one.q, one.values, one.ci_low, one.ci_high)]
            cols = ("level", "value", f"{one.level:.0%} CI")
            widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
            print("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip())
            print("  ".join("-" * w for w in widths))
            for r in rows:
                print("  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths))))


def _value(v: Any) -> str:
    """A released value: a float to 6 digits, a date at the precision it needs, an integer whole."""
    return f"{v:.6g}" if isinstance(v, float) else shown(v)
