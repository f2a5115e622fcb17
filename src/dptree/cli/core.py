"""Command-line additions of issue 6: ``--ledger``/``--user-id``/``--by`` on ``release``,
``dptree budget`` and ``dptree report``.

:func:`register` is called by :func:`dptree.cli.main.build_parser` with the subcommand action. It adds
the new subcommands and extends the existing ``release`` parser in place: with none of the new
options given, ``release`` runs exactly as before.

Order of every releasing command (``release``, ``release --by/--user-id``, ``hierarchy``,
``interior-point``), the ledger's contract:

1. everything public is validated: the budget and the other parameters (through the mechanism's
   own checks, on a stand-in that refuses to be read: :func:`check_public_parameters`), the
   ``--out`` path (its directory exists and is writable, it is not the input or the ledger), the
   input file's existence (a file-system fact, not its content);
2. with ``--ledger``, the charge is committed (one durable transaction);
3. only then is the data file read, the noise drawn and the output written.

So no message derived from the data can come out before the budget is spent: a release that
fails on its data (a bad column, missing values, unknown groups, ...) keeps its charge (it is
recorded as ``failed``), and errors cannot be used as a free counting oracle.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, cast

from dptree.errors import DPTreeError, InputFormatError, InvalidParameterError

__all__ = [
    "register",
    "charged",
    "charged_budget",
    "add_ledger_options",
    "ledger_path",
    "check_input_path",
    "check_output_path",
    "check_public_parameters",
]

LEDGER_HELP = (
    "charge this budget ledger (create it with: dptree budget PATH --create --total-epsilon E). "
    "The charge is committed BEFORE the data file is read: a release that then fails on its data "
    "(bad column, missing values, unknown groups, ...) keeps its charge"
)


def register(sub: Any) -> None:
    """Add ``budget`` and ``report``, and the issue-6 options of ``release``."""
    release = sub.choices.get("release")
    if release is not None:
        g = release.add_argument_group("scale (issue 6)")
        g.add_argument("--ledger", metavar="PATH", help=LEDGER_HELP)
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
def charged(ledger_path_: str | None, plan: Any, label: str) -> Iterator[Any]:
    """Charge ``plan`` to the ledger at ``ledger_path_`` for the duration of the block (no-op for None;
    ``""`` is an error).

    Use it around the data reading, the noise and the output of any releasing command, after
    every public check; the charge is committed before the block runs, and its status and output
    are recorded when the block ends (a block that raises keeps its charge, marked ``failed``)::

        with charged(args.ledger, plan, label) as charge:
            hist = read(file); release = plan.release(hist); release.save(out)
            if charge is not None: charge.output = out
    """
    if ledger_path(ledger_path_) is None:
        yield None
        return
    with _open_ledger(cast(str, ledger_path_)) as ledger:
        with ledger.charge_for(plan, label=label) as charge:
            try:
                yield charge
            except DPTreeError as exc:
                _kept(exc, charge)
                raise


@contextmanager
def charged_budget(ledger_path_: str | None, *, epsilon: float, delta: float = 0.0, label: str = "") -> Iterator[Any]:
    """Like :func:`charged`, for commands whose mechanism takes (epsilon, delta) directly
    (``hierarchy``, ``interior-point``): the charge is committed before the block reads the data."""
    from dptree.privacy.budget import check_delta, check_release_budget

    eps, dlt = check_release_budget(epsilon), check_delta(delta)  # never charge an invalid budget
    if ledger_path(ledger_path_) is None:
        yield None
        return
    with _open_ledger(cast(str, ledger_path_)) as ledger:
        with ledger.charge(epsilon=eps, delta=dlt, label=label) as charge:
            try:
                yield charge
            except DPTreeError as exc:
                _kept(exc, charge)
                raise


def add_ledger_options(p: Any) -> None:
    """``--ledger PATH`` and ``--ledger-label TEXT`` for a releasing command."""
    p.add_argument("--ledger", default=None, metavar="PATH", help=LEDGER_HELP)
    p.add_argument("--ledger-label", dest="ledger_label", default=None, help="label of the charge")


# --------------------------------------------------------------------------- public checks


class _DataBoundary(BaseException):
    """Raised when a mechanism run on :class:`_Unread` reaches its data (a BaseException so that
    no ``except Exception`` on the way can swallow it)."""


class _Unread:
    """A stand-in for the private data that refuses to be read."""

    def __getattr__(self, name: str) -> Any:
        raise _DataBoundary(name)

    def __iter__(self) -> Any:
        raise _DataBoundary("__iter__")

    def __len__(self) -> int:
        raise _DataBoundary("__len__")

    def __getitem__(self, key: Any) -> Any:
        raise _DataBoundary("__getitem__")

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise _DataBoundary("__array__")


def check_public_parameters(release: Callable[[Any], Any]) -> None:
    """Run ``release(data)`` on a stand-in that raises as soon as it is read: the mechanism's own
    checks of its public parameters run (and raise their errors) without any data, noise or charge.
    Call it before the charge so that an invalid parameter never costs budget."""
    try:
        release(_Unread())
    except _DataBoundary:
        return


def check_exact_total(args: argparse.Namespace) -> None:
    """``--neighbors replace`` publishes the exact total: refuse the options that make it data-dependent
    (the CLI face of :meth:`dptree.rangetree.release.RangeTreePlan.check_public_total`)."""
    used = [flag for flag, on in (("--by", getattr(args, "by", None)), ("--user-id", getattr(args, "user_id", None)),
                                  ("--missing drop", args.missing == "drop")) if on]
    if args.neighbors == "replace" and used:
        raise InvalidParameterError(
            "--neighbors replace publishes the total number of records exactly, which is only private when every "
            f"input record is counted; {', '.join(used)} make(s) the counted total depend on the data: use "
            "--neighbors add_remove"
        )


def check_input_path(path: str) -> None:
    """The data file exists and is a file (``-`` is standard input). Not its content."""
    if path == "-":
        return
    if not os.path.exists(path):
        raise InputFormatError(f"input file not found: {path} (no such file)")
    if os.path.isdir(path):
        raise InputFormatError(f"input {path} is a directory, not a CSV or Parquet file")


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def known_flags() -> set[str]:
    """Every option of every dptree command (for :func:`dptree.cli.main.cli_wording`)."""
    from dptree.cli.main import build_parser

    out: set[str] = set()
    for action in build_parser()._actions:
        for sub in getattr(action, "choices", None) or {}:
            parser = action.choices[sub]  # type: ignore[index]
            for a in parser._actions:
                out.update(s for s in a.option_strings if s.startswith("--"))
    return out


def check_output_path(out: str, *, inputs: Sequence[str] = (), ledger: str | None = None,
                      flag: str = "--out", kind: str = "release:range_tree", force: bool = False) -> None:
    """Refuse an output path that cannot be written, before anything is charged: its directory must
    exist and be writable, and it must not be a directory, an input file or the ledger, a link, pipe
    or device, or (without --force) a file that is not a dptree artefact of ``kind``
    (:func:`dptree.io.release_file.check_overwrite`)."""
    from dptree.io.release_file import check_overwrite

    if not out or not out.strip():
        raise InvalidParameterError(f"{flag} needs a file name, e.g. {flag} release.json")
    p = Path(out)
    if p.is_dir():
        raise InvalidParameterError(f"{flag} {out} is a directory; give a file name such as release.json")
    parent = p.parent
    if not parent.is_dir():
        raise InvalidParameterError(f"{flag} {out}: directory {parent} does not exist; create it first")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InvalidParameterError(f"{flag} {out}: directory {parent} is not writable")
    if p.exists() and not os.access(p, os.W_OK):
        raise InvalidParameterError(f"{flag} {out} exists and is not writable")
    others = [(i, "the input file") for i in inputs if i and i != "-"]
    if ledger:
        others += [(ledger + suffix, "the ledger") for suffix in ("", "-wal", "-shm", "-journal")]
    for other, what in others:
        if _same_file(p, Path(other)):
            raise InvalidParameterError(f"{flag} {out} is {what}; write the release to another file")
    check_overwrite(out, kind, force=force, flag=flag)


def _output_paths(pattern: str, groups: Sequence[Any] | None) -> list[str]:
    """The files a release will write: ``--out``, or one per group with ``{group}`` replaced."""
    if groups is None:
        return [pattern]
    from dptree.rangetree.groupby import _SAFE_NAME

    paths = []
    for g in groups:
        name = str(g)
        if not _SAFE_NAME.match(name):
            raise InvalidParameterError(
                f"--groups: {name!r} cannot be part of a file name; use groups made of letters, digits and _.=+-"
            )
        paths.append(pattern.replace("{group}", name))
    return paths


def _cmd_release(args: argparse.Namespace) -> int:
    from dptree.cli import main as cli

    ledger = ledger_path(args.ledger)
    if not (ledger or args.user_id or args.by):
        return cli._cmd_release(args)
    from dptree import noise as _noise
    from dptree.rangetree.release import plan_range_tree

    progress = cli._Progress(args.progress or sys.stderr.isatty())
    # 1. everything public, before any charge
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
    check_exact_total(args)
    groups = _parse_groups(args.groups) if args.by else None
    outs = _output_paths(args.out, groups)
    check_input_path(args.file)
    for out in outs:
        check_output_path(out, inputs=[args.file], ledger=ledger, force=args.force)
    progress(f"planned a {plan.layout.branching}-ary tree over {plan.domain.size} buckets")
    report = progress if progress.enabled else None
    src = cast(_noise.RngLike, _noise.make_source(args.seed))  # one stream: bounding, then noise
    label = args.ledger_label or f"{args.file}:{args.column}" + (f" by {args.by}" if args.by else "")
    # 2. the charge (committed), 3. the data, the noise and the output
    from dptree.io.release_file import _utc_now

    created = _utc_now()  # before the data is read: the file must not time the reading
    with charged(ledger, plan, label) as charge:
        if args.by:
            from dptree.rangetree.groupby import file_grouped_histograms

            hist = file_grouped_histograms(
                args.file, args.column, args.by, plan, groups=groups, unknown=args.unknown_groups,  # type: ignore[arg-type]
                user_column=args.user_id, missing=args.missing, rng=src, fmt=args.input_format, progress=report,
            )
        elif args.user_id:
            from dptree.data.histograms import file_bounded_histogram

            hist = file_bounded_histogram(args.file, args.column, args.user_id, plan, missing=args.missing,
                                          rng=src, fmt=args.input_format, progress=report)
        else:
            from dptree.data.engines.duckdb import file_leaf_histogram

            hist = file_leaf_histogram(args.file, args.column, plan.domain, plan.layout.padded_size,
                                       missing=args.missing, fmt=args.input_format, progress=report)
        progress("histogram computed; adding noise and estimating")
        if args.by:
            from dptree.rangetree.groupby import release_groups

            rel = release_groups(plan, hist, groups, src, column=args.column, source=args.file,  # type: ignore[arg-type]
                                 created=created)
            for _, r in rel.items():
                note_charge(r, charge, ledger)
            paths = rel.save(args.out, allow_nonprivate=args.allow_nonprivate, force=args.force)
            if charge is not None:
                charge.output = ", ".join(paths)
            names = ", ".join(map(str, rel.groups))
            summary = f"{len(paths)} group releases ({names}): " + rel[rel.groups[0]].summary()
        else:
            release = plan.release(hist, rng=src, column=args.column, source=args.file, created=created)
            note_charge(release, charge, ledger)
            release.save(args.out, allow_nonprivate=args.allow_nonprivate, force=args.force)
            if charge is not None:
                charge.output = args.out
            summary = release.summary()
            paths = [args.out]
    print(summary)
    print("wrote " + ", ".join(paths))
    return 0


def note_charge(release: Any, charge: Any, ledger: str | None) -> None:
    """Record a ledger charge in the release's public metadata (the report shows it): the ledger's
    path, the charge's id and label and the amounts charged (the budget, a public parameter)."""
    if charge is None:
        return
    release.metadata["ledger"] = {"path": str(ledger), "charge": int(charge.id), "label": str(charge.label),
                                  "epsilon": float(charge.epsilon), "delta": float(charge.delta),
                                  "rho": float(charge.rho)}


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
    p.add_argument("--upgrade", action="store_true",
                   help="upgrade a ledger written by an older dptree (format 1) to the checked format")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=_cmd_budget)


def _cmd_budget(args: argparse.Namespace) -> int:
    from dptree.privacy.ledger import Ledger

    if args.upgrade:
        if args.create or args.total_epsilon is not None or args.total_rho is not None:
            raise InvalidParameterError("--upgrade keeps the ledger's totals; give it alone")
        n = Ledger.upgrade(args.ledger)
        print(f"upgraded ledger {args.ledger}: {n} charge(s) checked and chained", file=sys.stderr)
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
    from dptree.cli.main import add_view_options

    p = sub.add_parser("report", help="write a static HTML report of a range-tree or hierarchy release")
    p.add_argument("release")
    p.add_argument("--out", required=True, help="HTML file to write")
    from dptree.cli.main import add_force_option

    add_force_option(p, "report")
    p.add_argument("--ci", type=float, default=0.95, help="confidence level of bands and intervals")
    p.add_argument("--bins", type=int, default=30, help="histogram bins (default 30)")
    p.add_argument("--title")
    add_view_options(p)
    p.set_defaults(func=_cmd_report)


def _cmd_report(args: argparse.Namespace) -> int:
    from dptree.hierarchy.release import HierarchyRelease
    from dptree.io.release_file import load
    from dptree.rangetree.release import RangeTree
    from dptree.reporting.report import write_report

    check_output_path(args.out, inputs=[args.release], kind="report", force=args.force)
    release = load(args.release)
    if not isinstance(release, (RangeTree, HierarchyRelease)):
        raise InvalidParameterError("report needs a range-tree or hierarchy release")
    write_report(release, args.out, level=args.ci, bins=args.bins, title=args.title, log=args.log,
                 clip_negative=args.clip_negative, force=args.force)
    print(f"wrote {args.out}")
    return 0
