"""The one run order of every releasing command (``release`` with ``--sparse``, ``--bounds private``
and ``--by``, ``hierarchy``, ``interior-point``, ``median``, ``quantile``, ``quantiles``).

:func:`run_releasing` runs a :class:`Releasing` command in this order, the ledger's contract
(:mod:`dptree.cli.ledger_options`):

1. **parse and plan** (:meth:`Releasing.plan`): every public parameter is checked by building the
   product's plan, without the data;
2. **check** the data file's existence and every ``--out`` file (one per group);
3. **charge** the plan to ``--ledger`` (committed, before any row is read);
4. **read** the data (:meth:`Releasing.read`) and **release** (:meth:`Releasing.release`);
5. **save** the ``--out`` files, each release noting the charge in its metadata;
6. **record** the files written as the charge's output in the ledger; then print the result
   (:meth:`Releasing.show`) and ``wrote FILE`` on stderr.

So no message derived from the data comes out before the budget is spent, and every releasing
command records its output the same way.

:func:`plan_of` runs step 1 only, for ``dptree budget LEDGER --what-if "COMMAND ..."``: the plan a
releasing command line would charge, with no file read and nothing charged.
"""

from __future__ import annotations

import argparse
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import Any, Sequence

from dptree.cli import core
from dptree.cli.ledger_options import charged, ledger_path, note_charge

__all__ = ["Releasing", "run_releasing", "plan_of", "RELEASING_COMMANDS"]

#: the commands that release (and charge a ledger), in the order ``dptree --help`` lists them
RELEASING_COMMANDS = ("release", "hierarchy", "interior-point", "median", "quantile", "quantiles")

# set by plan_of: run_releasing then stops after planning and puts the plan here
_PLAN_ONLY: ContextVar[list[Any] | None] = ContextVar("dptree_plan_only", default=None)


class Releasing(ABC):
    """One releasing command: how it plans from its arguments, reads its input, releases and
    prints. :func:`run_releasing` orders the steps, charges and records."""

    #: the release kind its ``--out`` files hold (``check_output_path`` refuses other files)
    kind: str = "range_tree"

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.progress: Any = None

    @abstractmethod
    def plan(self) -> Any:
        """Every public check, no data: the product's plan (``plan_range_tree``, ``plan_quantiles``,
        ...), which the ledger charges."""

    @abstractmethod
    def read(self, plan: Any) -> AbstractContextManager[Any]:
        """The data, as :meth:`release` takes it (inside the charge)."""

    @abstractmethod
    def release(self, plan: Any, data: Any) -> Any:
        """The release of ``data`` under ``plan``."""

    @abstractmethod
    def show(self, release: Any) -> None:
        """Print the release on stdout."""

    def label(self) -> str:
        """The ledger label when ``--ledger-label`` is not given."""
        return f"{self.args.command} {self.args.file}:{self.args.column}"

    def outputs(self) -> list[str]:
        """The files ``--out`` names (one per group with ``--by``); none without ``--out``."""
        return [] if self.args.out is None else [self.args.out]

    def inputs(self) -> list[str]:
        """The input files, which no ``--out`` may be."""
        return [self.args.file]

    def stages(self) -> list[str]:
        """The progress stages (:func:`dptree.cli.core.progress_of`)."""
        return []

    def parts(self, release: Any) -> Sequence[Any]:
        """The releases that note the charge in their metadata (each group's)."""
        return [part for _, part in release.items()] if hasattr(release, "items") else [release]

    def save(self, release: Any) -> None:
        """Write ``--out`` (one file per group)."""
        release.save(self.args.out, allow_nonprivate=self.args.allow_nonprivate, force=self.args.force)


def run_releasing(command: Releasing) -> int:
    """Plan, check the files, charge, read, release, save, record (module docstring)."""
    args = command.args
    ledger = ledger_path(args.ledger)
    core.check_seed(args)
    plan = command.plan()
    planned = _PLAN_ONLY.get()
    if planned is not None:
        planned.append(plan)
        return 0
    core.check_input_path(args.file, ledger)
    outs = command.outputs()
    for out in outs:
        core.check_output_path(out, inputs=command.inputs(), ledger=ledger, kind=f"release:{command.kind}",
                               force=args.force)
    stages = command.stages()
    command.progress = core.progress_of(args, stages)
    if stages:
        command.progress(stages[0])
    with charged(ledger, plan, args.ledger_label or command.label(), outputs=outs) as charge:
        with command.read(plan) as data:
            release = command.release(plan, data)
        for part in command.parts(release):
            note_charge(part, charge, ledger)
        if outs:
            command.save(release)
    command.progress.done()
    command.show(release)
    if outs:
        core.wrote(outs)
    return 0


def plan_of(argv: Sequence[str], build_parser: Any, flag: str = "--what-if") -> Any:
    """The plan of one releasing command line (``argv`` without ``dptree``, e.g. ``["release",
    "data.csv", "--column", "v", "--epsilon", "0.1", "--lower", "0", "--upper", "1023"]``), parsed
    and checked by that command's own parser and planner (``build_parser``: the command line's
    parser, :func:`dptree.cli.main.build_parser`): no file is read and nothing is charged."""
    from dptree.errors import InvalidParameterError

    argv = list(argv)
    if not argv or argv[0] not in RELEASING_COMMANDS:
        raise InvalidParameterError(f"{flag} needs a releasing command line ({', '.join(RELEASING_COMMANDS)} and "
                                    f"its options, as you would run it), got {argv[:1]}")
    parser = build_parser()
    args = parser.parse_args(core._join_negative_values(argv))
    planned: list[Any] = []
    token = _PLAN_ONLY.set(planned)
    try:
        args.func(args)
    finally:
        _PLAN_ONLY.reset(token)
    if len(planned) != 1:  # pragma: no cover - every releasing command plans through run_releasing
        raise InvalidParameterError(f"{argv[0]} did not plan a release")
    return planned[0]
