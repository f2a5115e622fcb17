"""``--ledger``/``--ledger-label`` and the charge, shared by every releasing command (``release``,
``hierarchy``, ``interior-point``, ``median``, ``quantile``, ``quantiles``), which all run in one
order (:func:`dptree.cli.run.run_releasing`), the ledger's contract:

1. everything public is validated: the budget and the other parameters (by building the product's
   plan, which builds every sampler at its calibrated scale), the ``--out`` path (its directory exists and is writable, it is not the
   input or the ledger), the input file's existence (a file-system fact, not its content);
2. with ``--ledger``, the charge is committed (one durable transaction: :func:`charged`);
3. only then is the data file read, the noise drawn and the output written, and the files written
   are recorded on the charge.

So no message derived from the data can come out before the budget is spent: a release that
fails on its data (a bad column, missing values, unknown groups, ...) keeps its charge (it is
recorded as ``failed``), and errors cannot be used as a free counting oracle.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any, Iterator, Sequence, cast

from dptree.errors import DPTreeError, InvalidParameterError

__all__ = [
    "LEDGER_HELP",
    "add_ledger_options",
    "ledger_path",
    "charged",
    "note_charge",
]

LEDGER_HELP = (
    "charge this budget ledger (create it with: dptree budget PATH --create --total-epsilon E). "
    "The charge is committed BEFORE the data file is read: a release that then fails on its data "
    "(bad column, missing values, unknown groups, ...) keeps its charge"
)


def add_ledger_options(p: Any) -> None:
    """``--ledger PATH`` and ``--ledger-label TEXT`` for a releasing command."""
    p.add_argument("--ledger", default=None, metavar="PATH", help=LEDGER_HELP)
    p.add_argument("--ledger-label", dest="ledger_label", default=None, metavar="TEXT",
                   help="label of the charge (default: the command and its input)")


def ledger_path(value: str | None) -> str | None:
    """The ``--ledger`` value: None (no ledger) or a non-empty path; ``--ledger ""`` is an error."""
    if value is None:
        return None
    if not value.strip():
        raise InvalidParameterError(
            "--ledger needs a file name; an empty --ledger is not 'no ledger' (omit --ledger to release without one)"
        )
    return value


def _open_ledger(path: str) -> Any:
    from dptree.privacy.ledger import Ledger

    if not os.path.exists(ledger_path(path) or ""):
        raise InvalidParameterError(
            f"--ledger {path} does not exist; create it first: dptree budget {path} --create --total-epsilon E "
            "[--total-delta D] and/or --total-rho R"
        )
    return Ledger(path)


def _kept(exc: DPTreeError, charge: Any) -> None:
    """Say in the (one-line) message that the failed release's charge stays spent."""
    note = (f" [ledger charge {charge.id} stays spent: the charge is committed before the data is read, "
            "and a release that fails on its data keeps it]")
    if len(exc.args) == 1 and isinstance(exc.args[0], str):
        exc.args = (exc.args[0] + note,)


@contextmanager
def charged(ledger_path_: str | None, plan: Any, label: str, *, outputs: Sequence[str] = ()) -> Iterator[Any]:
    """Charge ``plan`` to the ledger at ``ledger_path_`` for the duration of the block (no-op for None;
    ``""`` is an error): a product plan, charged by ``Ledger.charge_for``.

    Use it around the data reading, the noise and the output of any releasing command, after
    every public check (:func:`dptree.cli.run.run_releasing` does); the charge is committed before
    the block runs, and its status and the ``outputs`` (the files the block writes) are recorded
    when the block ends (a block that raises keeps its charge, marked ``failed``, with no output)::

        with charged(args.ledger, plan, label, outputs=[out]) as charge:
            hist = read(file); release = plan.release(hist); release.save(out)
    """
    if ledger_path(ledger_path_) is None:
        yield None
        return
    with _open_ledger(cast(str, ledger_path_)) as ledger:
        with ledger.charge_for(plan, label=label) as charge:
            yield from _recorded(charge, outputs)


def _recorded(charge: Any, outputs: Sequence[str]) -> Iterator[Any]:
    """The body of :func:`charged`: yield the charge; a block that ends
    normally records ``outputs`` on it, one that raises a dptree error says its charge stays spent."""
    try:
        yield charge
    except DPTreeError as exc:
        _kept(exc, charge)
        raise
    if outputs:
        charge.output = ", ".join(outputs)


def note_charge(release: Any, charge: Any, ledger: str | None) -> None:
    """Record a ledger charge in the release's public metadata (the report shows it): the ledger's
    path, the charge's id and label and the amounts charged (the budget, a public parameter)."""
    if charge is None:
        return
    release.metadata["ledger"] = {"path": str(ledger), "charge": int(charge.id), "label": str(charge.label),
                                  "epsilon": float(charge.epsilon), "delta": float(charge.delta),
                                  "rho": float(charge.rho)}
