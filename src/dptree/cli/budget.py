"""``dptree budget``: create a budget ledger, upgrade an old one, back it up, or show its spend history
(per charge its amounts and the mechanism families of its stored loss, or "numbers only")."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from dptree.cli import core
from dptree.errors import InvalidParameterError
from dptree.io.release_file import is_sqlite_file

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser("budget", help="create a budget ledger or show its spend history")
    p.add_argument("ledger", help="ledger file (SQLite)")
    p.add_argument("--create", action="store_true", help="create the ledger with the totals given")
    p.add_argument("--total-epsilon", type=float)
    p.add_argument("--total-delta", type=float, default=0.0)
    p.add_argument("--total-rho", type=float)
    p.add_argument("--upgrade", action="store_true",
                   help="upgrade a ledger written by an older dptree (format 1 or 2) to the current format")
    p.add_argument("--backup", metavar="OUT",
                   help="write a copy of the ledger to OUT, every committed charge included (a copy of the "
                        "ledger file alone can miss charges still in its -wal file)")
    p.add_argument("--force", action="store_true",
                   help="with --backup: replace an existing OUT (an earlier backup of this ledger, or a file "
                        "that is not an SQLite database)")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=run_budget)


def run_budget(args: argparse.Namespace) -> int:
    from dptree.privacy.ledger import Ledger

    if args.force and args.backup is None:
        raise InvalidParameterError("--force replaces an existing --backup OUT; give it with --backup")
    if args.backup is not None:
        if args.create or args.upgrade or args.total_epsilon is not None or args.total_rho is not None:
            raise InvalidParameterError("--backup copies an existing ledger; give it without --create, --upgrade "
                                        "and totals")
        with Ledger(args.ledger, read_only=True) as led:
            copied = led.backup(args.backup, force=args.force)
        core.wrote(args.backup)
        core.info(f"backup of ledger {args.ledger}: {copied.charges} charge(s)")
        return 0
    if args.upgrade:
        if args.create or args.total_epsilon is not None or args.total_rho is not None:
            raise InvalidParameterError("--upgrade keeps the ledger's totals; give it alone")
        n = Ledger.upgrade(args.ledger)
        core.info(f"upgraded ledger {args.ledger}: {n} charge(s) checked and chained")
    if args.create:
        if os.path.exists(args.ledger):
            if not is_sqlite_file(args.ledger):  # the ledger checks the rest
                raise InvalidParameterError(f"{args.ledger} already exists and is not a dptree ledger; give --create a "
                                            "new file name, such as budget.sqlite")
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
    print(f"ledger {args.ledger}: total " + ", ".join(f"{k}={v:g}" for k, v in shown.items()))
    parts = []
    if totals["epsilon"] is not None:
        parts.append(f"epsilon={spent.epsilon:.6g} of {totals['epsilon']:g}, "
                     f"delta={spent.delta:.3g} of {totals['delta']:g}")
    if totals["rho"] is not None:
        parts.append(f"rho={spent.rho:.6g} of {totals['rho']:g}")
    print(f"spent in {spent.charges} charge(s): " + "; ".join(parts))
    if history:
        cols = ["id", "time (UTC)", "label", "kind", "epsilon", "delta", "rho", "mechanisms", "status", "output"]
        body = [[str(h["id"]), h["created_utc"], h["label"], h["kind"], f"{h['epsilon']:g}", f"{h['delta']:g}",
                 f"{h['rho']:g}", h["mechanisms"], h["status"], h["output"] or ""] for h in history]
        widths = [max(len(c), *(len(r[i]) for r in body)) for i, c in enumerate(cols)]
        print("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip())
        for r in body:
            print("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    return 0
