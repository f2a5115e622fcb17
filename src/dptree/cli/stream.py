"""``dptree stream create|append|show``: a continual counter kept in a state file.

* ``create STATE --horizon T --epsilon E`` (or ``--noise gaussian --rho R``): plan the counter,
  charge ``--ledger`` for the whole horizon, write its state. The state file is SECRET (it holds
  the exact totals of open blocks and noise drawn for outputs to come, :mod:`dptree.stream.state`).
* ``append STATE COUNT [COUNT ...]`` (``-`` reads whitespace-separated counts from standard input):
  continue the stream, print ``step,estimate,stderr`` for the new steps, and write the state back
  over the same file (atomically). A state that another process has continued is refused.
* ``show STATE_OR_RELEASE [--out RELEASE]``: print every released total so far; ``--out`` writes
  the public release (``Counter.release()``), which ``dptree plot`` draws.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dptree.cli import core
from dptree.cli.ledger_options import add_ledger_options, charged, note_charge
from dptree.errors import DataError, InvalidParameterError

__all__ = ["register"]


def register(sub: Any) -> None:
    p = sub.add_parser("stream", help="a private running count over a public horizon of steps (continual counting)")
    actions = p.add_subparsers(dest="action", required=True)
    c = actions.add_parser("create", help="plan a counter, charge its whole horizon, write its (secret) state file")
    c.add_argument("state", help="the state file to write (secret: keep it with the counts)")
    c.add_argument("--horizon", type=int, required=True, help="the number of steps T")
    c.add_argument("--epsilon", type=float, default=None, help="Laplace: pure epsilon; Gaussian: with --delta")
    c.add_argument("--delta", type=float, default=None, help="Gaussian: (epsilon, delta), converted to rho")
    c.add_argument("--rho", type=float, default=None, help="Gaussian: rho-zCDP")
    c.add_argument("--noise", choices=["laplace", "gaussian"], default="laplace",
                   help="laplace: binary-tree counter (default); gaussian: square-root Toeplitz counter")
    c.add_argument("--mechanism", choices=["tree", "toeplitz"], default=None,
                   help="tree or toeplitz (default: tree for laplace, toeplitz for gaussian)")
    c.add_argument("--max-participations", dest="max_participations", type=int, default=1,
                   help="steps one user may take part in, one event each (default 1: event level)")
    core.add_force_option(c, "stream_state release")
    core.add_seed_options(c)
    add_ledger_options(c)
    c.set_defaults(func=run_create)
    a = actions.add_parser("append", help="append counts to a counter's state; print the new running totals")
    a.add_argument("state", help="the state file (rewritten in place)")
    a.add_argument("counts", nargs="+", help="one integer count per step, or - to read them from standard input")
    a.set_defaults(func=run_append)
    s = actions.add_parser("show", help="print the running totals of a state or release file; --out writes the "
                                        "public release")
    s.add_argument("file", help="a counter's state file or a stream_counter release")
    s.add_argument("--out", default=None, help="write the public release (JSON) here")
    core.add_force_option(s, "release")
    s.set_defaults(func=run_show)


def run_create(args: argparse.Namespace) -> int:
    from dptree.stream import Counter, plan_counter

    core.check_seed(args)
    plan = plan_counter(horizon=args.horizon, epsilon=args.epsilon, delta=args.delta, rho=args.rho,
                        noise=args.noise, mechanism=args.mechanism, max_participations=args.max_participations)
    core.check_output_path(args.state, ledger=args.ledger, flag="state", kind="release:stream_state",
                           force=args.force)
    label = args.ledger_label or f"stream create {args.state}"
    with charged(args.ledger, plan, label, outputs=[args.state]) as charge:
        counter = Counter(args.horizon, epsilon=args.epsilon, delta=args.delta, rho=args.rho, noise=args.noise,
                          mechanism=args.mechanism, max_participations=args.max_participations, rng=args.seed)
        note_charge(counter, charge, args.ledger)
        counter.save(args.state, allow_nonprivate=args.allow_nonprivate, force=args.force)
    print(f"{counter.summary()}; its state is secret (it holds exact totals and drawn noise)")
    core.wrote(args.state)
    return 0


def _loaded_counter(path: str) -> Any:
    from dptree import load
    from dptree.stream import Counter

    counter = load(path)
    if not isinstance(counter, Counter):
        raise InvalidParameterError(f"{path} is not a counter's state file (dptree stream create writes one)")
    return counter


def _counts(items: list[str]) -> list[int]:
    text = sys.stdin.read().split() if items == ["-"] else items
    try:
        return [int(x) for x in text]
    except ValueError:
        raise DataError("counts must be integers >= 0, one per step") from None


def run_append(args: argparse.Namespace) -> int:
    counter = _loaded_counter(args.state)
    counts = _counts(args.counts)
    first = counter.t + 1
    estimates, stderrs = counter.append(counts)
    counter.save(args.state, allow_nonprivate=not counter.private)
    _print_rows(first, estimates, stderrs)
    core.wrote(args.state)
    return 0


def _print_rows(first: int, estimates: Any, stderrs: Any) -> None:
    out = ["step,estimate,stderr"]
    out += [f"{first + i},{e:.6f},{s:.6f}" for i, (e, s) in enumerate(zip(estimates, stderrs))]
    sys.stdout.write("\n".join(out) + "\n")


def run_show(args: argparse.Namespace) -> int:
    from dptree import load
    from dptree.stream import Counter, StreamRelease

    if args.out is not None:
        core.check_output_path(args.out, inputs=[args.file], kind="release:stream_counter", force=args.force)
    obj = load(args.file)
    if not isinstance(obj, (Counter, StreamRelease)):
        raise InvalidParameterError(f"{args.file} is neither a counter's state nor a stream_counter release")
    release = obj.release() if isinstance(obj, Counter) else obj
    _print_rows(1, release.estimates, release.stderrs)
    if args.out is not None:
        release.save(args.out, allow_nonprivate=not release.private, force=args.force)
        core.wrote(args.out)
    return 0
