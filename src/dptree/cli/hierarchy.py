"""``dptree hierarchy``: private counts for every node of a public hierarchy (Ghazi et al. 2023).

The data file (CSV or Parquet, ``-`` for CSV on stdin) is read with DuckDB, which also does the
GROUP BY over the level columns, so only one row per distinct path reaches Python
(:func:`dptree.data.histograms.path_counts`, the engines' seam). The structure file is a
CSV/Parquet with the same level columns (one row per leaf) or with ``node``/``parent`` columns.
``dptree query REL.json --node US/CA`` answers from the saved release (:mod:`dptree.cli.query`).
"""

from __future__ import annotations

import argparse
from contextlib import contextmanager
from typing import Any, Iterator

from dptree.cli import core
from dptree.cli.ledger_options import add_ledger_options
from dptree.cli.readers import read_structure
from dptree.cli.run import Releasing, run_releasing
from dptree.data.engines.base import COUNT
from dptree.errors import InvalidParameterError
from dptree.hierarchy.discovery import FOUND

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "hierarchy",
        help="private counts for every node of a public hierarchy (Ghazi et al. 2023)",
        description="Release differentially private counts for every node of a public hierarchy "
        "(Ghazi et al. 2023): Laplace / Gaussian baselines with consistent least squares, "
        "or the multiplicative-error algorithm of Theorem 4.1.",
    )
    core.add_input_options(p, formats=False)
    p.add_argument("--levels", required=True, help="comma-separated level columns, root side first")
    p.add_argument("--structure", required=True,
                   help="public structure file (.csv/.parquet), or 'private' to find the tree from the data (needs "
                        "--delta; --structure-share of --epsilon finds it)")
    p.add_argument("--structure-share", dest="structure_share", type=float, default=None, metavar="S",
                   help="with --structure private: the share of --epsilon spent finding the tree (default 0.5)")
    p.add_argument("--weight", default=None, help="column of non-negative integer counts per row")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, default=0.0)
    p.add_argument("--method", choices=["laplace", "gaussian", "multiplicative"], default="laplace")
    p.add_argument("--alpha", type=float, default=None, help="multiplicative error allowance in (0,1)")
    p.add_argument("--tau-min", dest="tau_min", type=float, default=None)
    p.add_argument("--max-contributions", dest="max_contributions", type=int, default=1)
    p.add_argument("--no-consistent", dest="no_consistent", action="store_true")
    p.add_argument("--nonnegative", action="store_true")
    p.add_argument("--integer", action="store_true")
    p.add_argument("--other", default=None, help="label of the public 'other' leaf under every internal node")
    p.add_argument(
        "--unknown",
        choices=["error", "drop", "other"],
        default=None,
        help="declared policy for rows whose path is not a leaf of the structure: error (default; "
        "the message says neither how many nor which), drop them, or count them in the 'other' "
        "leaf of their deepest known ancestor (needs --other)",
    )
    p.add_argument("--unknown-to-other", dest="unknown_to_other", action="store_true",
                   help="same as --unknown other (kept for compatibility)")
    core.add_seed_options(p)
    p.add_argument("--out", required=True, help="output release file (.json)")
    core.add_force_option(p, "hierarchy release")
    add_ledger_options(p)
    p.set_defaults(func=run_hierarchy)


def run_hierarchy(args: argparse.Namespace) -> int:
    return run_releasing(_Hierarchy(args))


class _Hierarchy(Releasing):
    """Every public check (the structure is public) and the plan, the charge, then the data's
    path counts, the release and its file."""

    kind = "hierarchy"

    def plan(self) -> Any:
        from dptree.io import release_file

        args = self.args
        self.levels = [c.strip() for c in args.levels.split(",") if c.strip()]
        if not self.levels:
            raise InvalidParameterError("--levels needs at least one column name, e.g. country,state,city")
        core.check_seed(args)
        from dptree.hierarchy.api import plan_hierarchy_counts

        if args.structure == FOUND:
            return self._plan_found(plan_hierarchy_counts)
        if args.structure_share is not None:
            raise InvalidParameterError("--structure-share goes with --structure private (a tree found from the data)")
        self.structure = read_structure(args.structure, self.levels, other=args.other)  # public
        self.created = release_file.utc_now()  # before the data is read: the file must not time the reading
        if args.unknown_to_other and args.unknown not in (None, "other"):
            raise InvalidParameterError("--unknown-to-other contradicts --unknown " + str(args.unknown))

        return plan_hierarchy_counts(self.structure, epsilon=args.epsilon, delta=args.delta, method=args.method,
                                     alpha=args.alpha, consistent=not args.no_consistent,
                                     nonnegative=args.nonnegative, integer=args.integer,
                                     max_contributions=args.max_contributions, tau_min=args.tau_min)

    def _plan_found(self, plan_hierarchy_counts: Any) -> Any:
        """``--structure private``: the plan of a tree found from the data (no structure file)."""
        from dptree.hierarchy.discovery import STRUCTURE_SHARE
        from dptree.io import release_file

        args = self.args
        if args.other is not None or args.unknown is not None or args.unknown_to_other:
            raise InvalidParameterError("--other and --unknown apply to a public --structure file: a tree found from "
                                        "the data counts every record (at its deepest node found, or that node's "
                                        "'(other)' leaf); drop them")
        self.created = release_file.utc_now()
        share = STRUCTURE_SHARE if args.structure_share is None else args.structure_share
        return plan_hierarchy_counts(FOUND, levels=self.levels, epsilon=args.epsilon, delta=args.delta,
                                     method=args.method, alpha=args.alpha, consistent=not args.no_consistent,
                                     nonnegative=args.nonnegative, integer=args.integer,
                                     max_contributions=args.max_contributions, tau_min=args.tau_min,
                                     structure_share=share)

    def inputs(self) -> list[str]:
        return [self.args.file] + ([] if self.args.structure == FOUND else [self.args.structure])

    def label(self) -> str:
        return f"hierarchy {self.args.file} -> {self.args.out}"

    @contextmanager
    def read(self, plan: Any) -> Iterator[Any]:
        from dptree.data import histograms

        with core.readable_path(self.args.file) as path:
            yield histograms.path_counts(path, self.levels, weight=self.args.weight)  # the engines' one seam

    def release(self, plan: Any, data: Any) -> Any:
        args = self.args
        if args.structure == FOUND:
            rel = plan.release(data, weight=COUNT, rng=args.seed)
        else:
            rel = plan.release(data, levels=self.levels, weight=COUNT,
                               unknown=args.unknown or ("other" if args.unknown_to_other else "error"), rng=args.seed)
        rel.metadata.update(source="stdin" if self.args.file == "-" else self.args.file, created_utc=self.created)
        return rel

    def parts(self, release: Any) -> list[Any]:
        return [release]

    def show(self, release: Any) -> None:
        print(release.summary())
