"""``dptree budget``: create a budget ledger, upgrade an old one, back it up, show its spend history
(per charge its amounts, the mechanism families of its stored loss, or "numbers only", and its
marginal cost), answer before charging whether a release would fit (``--what-if "release ..."``),
or compare what a sequence of releases declared in advance costs under each accountant
(``--plan "365 x release ..."``)."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
from typing import Any

from dptree.cli import core
from dptree.cli.status import EXIT_OK, EXIT_WOULD_NOT_FIT
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
    p.add_argument("--accountant", choices=["renyi", "basic"], default=None,
                   help="with --create: how the (epsilon, delta) total composes charges: renyi (a Rényi filter "
                        "over each release's mechanisms, valid for adaptively chosen releases; the default with "
                        "--total-delta > 0) or basic (epsilons and deltas add up; the default without delta, "
                        "and the only one that charges releases with an (epsilon, delta) step)")
    p.add_argument("--orders", default=None, metavar="A,B,...",
                   help="with --create --accountant renyi: the filter's Rényi orders, fixed now (default 4,8,16,32, "
                        "less those with no budget at the totals; one order spends no delta on the split)")
    p.add_argument("--approx-delta", dest="approx_delta", type=float, default=None, metavar="D",
                   help="with --create --accountant renyi: the part of --total-delta set aside for releases with an "
                        "(epsilon, delta) step (interior-point treelog, hierarchy multiplicative); their deltas add "
                        "up against D and the filter converts at total delta - D (default 0: such releases are "
                        "refused)")
    p.add_argument("--workload", action="append", default=None, metavar="[N x ]COMMAND",
                   help="with --create --accountant renyi: the releases you expect (repeatable; e.g. \"365 x release "
                        "data.csv --column v --epsilon 0.1 --lower 0 --upper 1023\"): the filter gets the one Rényi "
                        "order at which they use the least of the budget (they may still be chosen adaptively)")
    p.add_argument("--plan", action="append", default=None, metavar="[N x ]COMMAND",
                   help="a sequence of releases declared in advance (repeatable, in order): its epsilon at the "
                        "ledger's total delta under privacy loss distributions, Rényi composition, this ledger's "
                        "accountant and basic composition, and how many of them the ledger would accept now. "
                        "Nothing is read or charged")
    p.add_argument("--what-if", dest="what_if", default=None, metavar="COMMAND",
                   help="the releasing command line you would run, quoted, without 'dptree' (e.g. \"release "
                        "data.csv --column v --epsilon 0.1 --lower 0 --upper 1023\"): whether its release "
                        "would fit and the spend after it (exit status 0: it fits, 1: it would be refused). Nothing is "
                        "read or charged")
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

    if (args.accountant is not None or args.orders is not None or args.approx_delta is not None
            or args.workload is not None) and not args.create:
        raise InvalidParameterError("--accountant, --orders, --approx-delta and --workload are chosen once, "
                                    "with --create")
    if args.plan is not None:
        if args.create or args.upgrade or args.backup is not None or args.what_if is not None:
            raise InvalidParameterError("--plan asks an existing ledger; give it without --create, --upgrade, --backup "
                                        "and --what-if")
        return _plan(args)
    if args.what_if is not None:
        if args.create or args.upgrade or args.backup is not None:
            raise InvalidParameterError("--what-if asks an existing ledger; give it without --create, --upgrade "
                                        "and --backup")
        return _what_if(args)
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
        workload = None if args.workload is None else _sequence(args.workload, args.build_parser, "--workload")
        Ledger(args.ledger, total_epsilon=args.total_epsilon, total_delta=args.total_delta,
               total_rho=args.total_rho, accountant=args.accountant, orders=_orders(args.orders),
               workload=workload, approx_delta=args.approx_delta).close()
    elif args.total_epsilon is not None or args.total_rho is not None:
        raise InvalidParameterError("totals are set once, with --create")
    with Ledger(args.ledger, read_only=not args.create) as led:
        spent = led.spent()
        history = led.history()
        totals = {"epsilon": led.total_epsilon, "delta": led.total_delta, "rho": led.total_rho}
        accountant = _accountant(led)
    if args.format == "json":
        print(json.dumps({"ledger": args.ledger, "totals": totals, "accountant": accountant,
                          "spent": {"epsilon": spent.epsilon, "delta": spent.delta, "rho": spent.rho,
                                    "charges": spent.charges},
                          "history": history}, indent=2))
        return 0
    shown = {k: v for k, v in totals.items() if v is not None and (k != "delta" or totals["epsilon"] is not None)}
    print(f"ledger {args.ledger}: total " + ", ".join(f"{k}={v:g}" for k, v in shown.items())
          + f"; accountant {_accountant_text(accountant)}")
    parts = []
    if totals["epsilon"] is not None:
        parts.append(f"epsilon={spent.epsilon:.6g} of {totals['epsilon']:g}, "
                     f"delta={spent.delta:.3g} of {totals['delta']:g}")
    if totals["rho"] is not None:
        parts.append(f"rho={spent.rho:.6g} of {totals['rho']:g}")
    print(f"spent in {spent.charges} charge(s): " + "; ".join(parts))
    if history:
        cols = ["id", "time (UTC)", "label", "kind", "epsilon", "delta", "rho", "mechanisms", "cost", "status",
                "output"]
        body = [[str(h["id"]), h["created_utc"], h["label"], h["kind"], f"{h['epsilon']:g}", f"{h['delta']:g}",
                 f"{h['rho']:g}", h["mechanisms"], _marginal(h, totals), h["status"], h["output"] or ""]
                for h in history]
        widths = [max(len(c), *(len(r[i]) for r in body)) for i, c in enumerate(cols)]
        print("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip())
        for r in body:
            print("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    return 0


def _orders(text: str | None) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(a) for a in text.split(",")]
    except ValueError:
        raise InvalidParameterError(f"--orders takes numbers > 1 separated by commas, e.g. 4,8,16,32; got {text!r}") \
            from None


def _accountant(led: Any) -> dict[str, Any]:
    return {"name": led.accountant, "orders": None if led.orders is None else list(led.orders),
            **({"approx_delta": led.approx_delta} if led.approx_delta else {})}


def _accountant_text(accountant: dict[str, Any]) -> str:
    orders, reserve = accountant["orders"], accountant.get("approx_delta")
    return (accountant["name"] + ("" if orders is None else " (orders " + ",".join(f"{a:g}" for a in orders)
                                  + (f"; delta {reserve:g} set aside for (epsilon, delta) steps" if reserve else "")
                                  + ")"))


def _marginal(h: dict[str, Any], totals: dict[str, Any]) -> str:
    """A charge's marginal cost as the accountant counts it: +epsilon (and +rho against a rho total)."""
    parts = []
    if totals["epsilon"] is not None:
        parts.append(f"+{h['marginal_epsilon']:.4g} eps")
    if totals["rho"] is not None:
        parts.append(f"+{h['marginal_rho']:.4g} rho")
    return ", ".join(parts)


_REPEAT = re.compile(r"^\s*(\d+)\s*[x×]\s+(.*)$", re.S)


def _sequence(items: list[str], build_parser: Any, flag: str) -> list[Any]:
    """The plans of ``[N x ]COMMAND`` items, in order (each command planned once, repeated N times)."""
    from dptree.cli.run import plan_of

    plans: list[Any] = []
    for item in items:
        m = _REPEAT.match(item)
        times, command = (int(m.group(1)), m.group(2)) if m else (1, item)
        if not 1 <= times <= 100_000:
            raise InvalidParameterError(f"{flag}: the repeat count must be 1 to 100000, got {times}")
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise InvalidParameterError(f"{flag}: cannot split the command line ({exc})") from None
        plans.extend([plan_of(argv, build_parser, flag)] * times)
    return plans


def _plan(args: argparse.Namespace) -> int:
    """What the declared sequence costs under each accountant (and where each is valid), and how
    many of its releases this ledger would accept now, in order."""
    from dptree.privacy import accounting
    from dptree.privacy.ledger import Ledger

    plans = _sequence(args.plan, args.build_parser, "--plan")
    losses = [p.privacy_loss() for p in plans]
    with Ledger(args.ledger, read_only=True) as led:
        delta, accountant = led.total_delta, _accountant(led)
        accepted = led.fits(*plans)
        after = led.spent_with(*plans) if accepted == len(plans) or led.accountant == "basic" else None
        total_eps, charges = led.total_epsilon, led.spent().charges
    basic = math.fsum(loss.epsilon_delta()[0] if math.isfinite(loss.epsilon_delta()[0]) else p.budget.epsilon
                      for p, loss in zip(plans, losses))
    rows: list[dict[str, Any]] = [{"accountant": "basic composition (epsilons add up)", "epsilon": basic,
                                   "valid": "always (releases chosen adaptively included)"}]
    for name, fn in (("Rényi composition (fixed sequence)", accounting.rdp_epsilon),
                     ("privacy loss distributions (fixed sequence)", accounting.pld_epsilon)):
        try:
            eps = fn(losses, delta) if delta > 0 else None
            why = None if delta > 0 else "needs a ledger with total_delta > 0"
        except InvalidParameterError as exc:
            eps, why = None, str(exc).split(":")[0]
        rows.append({"accountant": name, "epsilon": eps, "valid": why or (
            "only if exactly this sequence runs, every release's parameters fixed before any result is seen")})
    rows.append({"accountant": f"this ledger ({_accountant_text(accountant)})",
                 "epsilon": None if after is None else after.epsilon,
                 "valid": "releases chosen adaptively, on top of the ledger's charges so far"})
    out = {"ledger": args.ledger, "releases": len(plans), "delta": delta, "accountants": rows,
           "ledger_accepts": accepted, "ledger_charges_so_far": charges, "total_epsilon": total_eps}
    if args.format == "json":
        print(json.dumps(out, indent=2))
    else:
        print(f"{len(plans)} release(s) declared; epsilon at delta={delta:g} (the ledger's total_delta):")
        width = max(len(r["accountant"]) for r in rows)
        for r in rows:
            shown = "n/a" if r["epsilon"] is None else f"{r['epsilon']:.4g}"
            print(f"  {r['accountant'].ljust(width)}  {shown:>9}  valid: {r['valid']}")
        print(f"the ledger (total_epsilon {total_eps}, {charges} charge(s) so far) would accept {accepted} of "
              f"{len(plans)}, in this order")
    return EXIT_OK if accepted == len(plans) else EXIT_WOULD_NOT_FIT


def _what_if(args: argparse.Namespace) -> int:
    """Plan the quoted command line with its own parser, then ask the ledger (read only) whether
    the plan fits and what the spend would be; exit 0 when it fits, 1 when it does not."""
    from dptree.cli.run import plan_of
    from dptree.privacy.ledger import Ledger

    try:
        argv = shlex.split(args.what_if)
    except ValueError as exc:
        raise InvalidParameterError(f"--what-if: cannot split the command line ({exc})") from None
    plan = plan_of(argv, args.build_parser)
    with Ledger(args.ledger, read_only=True) as led:
        now = led.spent()
        fits = led.can_afford(plan)
        after = led.spent_with(plan)
        totals = {"epsilon": led.total_epsilon, "delta": led.total_delta, "rho": led.total_rho}
        accountant = _accountant(led)
    spends = {k: {"epsilon": v.epsilon, "delta": v.delta, "rho": v.rho, "charges": v.charges}
              for k, v in (("now", now), ("after", after))}
    if args.format == "json":
        print(json.dumps({"ledger": args.ledger, "totals": totals, "accountant": accountant, "fits": fits,
                          "spent": spends}, indent=2))
        return EXIT_OK if fits else EXIT_WOULD_NOT_FIT

    def show(v: dict[str, float]) -> str:
        parts = []
        if totals["epsilon"] is not None:
            parts.append(f"epsilon={v['epsilon']:.6g} of {totals['epsilon']:g} (delta={v['delta']:.3g})")
        if totals["rho"] is not None:
            parts.append(f"rho={v['rho']:.6g} of {totals['rho']:g}")
        return "; ".join(parts)

    print(f"ledger {args.ledger} (accountant {_accountant_text(accountant)}): "
          + ("the release fits" if fits else "the release does NOT fit: it would be refused"))
    print(f"spent now:   {show(spends['now'])} in {now.charges} charge(s)")
    print(f"spent after: {show(spends['after'])}")
    return EXIT_OK if fits else EXIT_WOULD_NOT_FIT
