"""The one core of the ``dptree`` command line: the conventions every command shares.

* **Streams.** Results go to stdout; diagnostics (progress, warnings, ``wrote FILE``) and errors
  go to stderr.
* **Errors.** One line, ``dptree: error: MESSAGE``, for every command and for argparse's usage
  errors too (after the usage line). Library messages are put in CLI terms: the parameter an error
  names and the settings it suggests become this command's flags (:mod:`dptree.cli.flags`).
* **Exit status.** 0 ok, 2 user error (bad input, a refused release), 3 internal error (a bug; set
  ``DPTREE_DEBUG=1`` for its traceback), 130 interrupted.
* **Inputs.** ``--lower``/``--upper``/``--width`` are parsed once (:func:`parse_bound`,
  :func:`parse_width`); ``--seed`` needs ``--allow-nonprivate`` (:func:`check_seed`); the data
  file must exist and be a file, ``-`` is CSV on standard input (:func:`check_input_path`,
  :func:`readable_path`).
* **Outputs.** ``--out`` is checked before anything is charged or read (:func:`check_output_path`:
  its directory, not an input or the ledger, not a link/pipe/device, ``--force`` to replace a file
  that is not a dptree artefact of the same kind); the library writes it atomically.
* **Releases.** Commands that read a saved release (query, plot, report) tell its kind by the
  ``KIND`` of its class, through one table per command (:func:`for_kind`), never by ``isinstance``.

The ledger options and the charge (committed before the data is read) are in
:mod:`dptree.cli.ledger_options`.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import io
import math
import os
import re
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, NoReturn, Sequence, TypeVar

from dptree.cli.flags import in_cli_terms
from dptree.cli.status import EXIT_BROKEN_PIPE, EXIT_INTERNAL_ERROR, EXIT_USER_ERROR
from dptree.errors import DPTreeError, InputFormatError, InvalidParameterError

__all__ = [
    "Parser",
    "run",
    "error",
    "info",
    "known_flags",
    "Progress",
    "add_progress_option",
    "progress_of",
    "parse_bound",
    "parse_bounds",
    "parse_width",
    "add_seed_options",
    "check_seed",
    "add_input_options",
    "check_input_path",
    "readable_path",
    "add_force_option",
    "add_group_options",
    "check_group_options",
    "check_output_path",
    "group_output_paths",
    "parse_groups",
    "wrote",
    "release_kind",
    "for_kind",
]

PROG = "dptree"

T = TypeVar("T")


# --------------------------------------------------------------------------- parser, errors, streams


class Parser(argparse.ArgumentParser):
    """argparse with the CLI's one error prefix. Its subcommands (``add_subparsers``) are parsers
    of this class too, and the subparsers action is kept as :attr:`commands`."""

    commands: Any = None

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USER_ERROR, f"{PROG}: error: {message}\n")

    def add_subparsers(self, **kwargs: Any) -> Any:
        self.commands = super().add_subparsers(**kwargs)
        return self.commands


def error(message: str) -> None:
    """The one error line: ``dptree: error: MESSAGE`` on stderr."""
    print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)


def info(message: str) -> None:
    """A diagnostic line on stderr (stdout is for results only)."""
    print(message, file=sys.stderr, flush=True)


def run(parser: Parser, argv: Sequence[str]) -> int:
    """Parse ``argv``, run the command's ``func`` and turn what it raises into the exit status and
    the one error line (Ctrl-C: in :func:`dptree.cli.main.main`, which also covers loading the commands)."""
    args = parser.parse_args(_join_negative_values(list(argv)))
    try:
        return int(args.func(args))
    except DPTreeError as exc:
        command = getattr(args, "command", None)
        error(in_cli_terms(exc, command, known_flags(parser, command)))
        return EXIT_USER_ERROR
    except BrokenPipeError:  # the reader went away (``dptree query ... | head``): stop quietly
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        error(f"{exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}".rstrip(": "))
        return EXIT_USER_ERROR
    except Exception as exc:  # a bug: say so in one line, traceback on request
        if os.environ.get("DPTREE_DEBUG"):
            raise
        error(f"internal error: {type(exc).__name__}: {exc} (set DPTREE_DEBUG=1 for a traceback)")
        return EXIT_INTERNAL_ERROR


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's last flush into the closed pipe
    does not print a second error."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):  # no real stdout (tests, embedding)
        pass


_VALUE_OPTIONS = ("--count", "--cdf", "--lower", "--upper", "--histogram", "--width", "--bounds-origin")
_NEGATIVE = re.compile(r"^-(\d|\.\d|inf|nan)", re.IGNORECASE)


def _join_negative_values(argv: list[str]) -> list[str]:
    """Let ``--count -5:3``, ``--histogram -100,500``, ``--lower -inf`` (refused by the bound's own
    check, with its message) and ``--width -1d`` work: argparse would read them as options."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok in _VALUE_OPTIONS and i + 1 < len(argv) and _NEGATIVE.match(argv[i + 1]):
            out.append(f"{tok}={argv[i + 1]}")
            i += 2
            continue
        out.append(tok)
        i += 1
    return out


def known_flags(parser: Parser, command: str | None = None) -> set[str]:
    """Every ``--option`` of ``command`` (all commands of ``parser`` without one) and of its own
    subcommands (``stream create``), read from the usage lines: a message names only options of the
    command that was run."""
    choices = parser.commands.choices if parser.commands is not None else {}
    parsers = [parser, *([choices[command]] if command in choices else choices.values())]
    parsers += [action for p in parsers[1:] if p.commands is not None for action in p.commands.choices.values()]
    return {flag for p in parsers for flag in re.findall(r"--[a-z][a-z0-9-]*", p.format_usage())}


class Progress:
    """Stage messages on stderr when it is a terminal (or with --progress)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.t0 = time.perf_counter()

    def __call__(self, msg: str) -> None:
        if self.enabled:
            info(f"{PROG}: {msg} [{time.perf_counter() - self.t0:.1f}s]")


class _DeprecatedFlag(argparse.Action):
    """A deprecated spelling of another option (its ``metavar``): a warning on stderr, then its value."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        info(f"{PROG}: warning: {option_string} is deprecated; use {self.metavar} (the same choices)")
        setattr(namespace, self.dest, values)


def add_on_invalid_option(p: Any, help: str) -> None:
    """``--on-invalid error|drop`` (``on_invalid=`` in Python); ``--missing``: its deprecated spelling."""
    p.add_argument("--on-invalid", default="error", choices=["error", "drop"], help=help)
    p.add_argument("--missing", dest="on_invalid", choices=["error", "drop"], action=_DeprecatedFlag,
                   metavar="--on-invalid", help=argparse.SUPPRESS)


def add_progress_option(p: Any) -> None:
    p.add_argument("--progress", action="store_true", help="print progress even when stderr is not a terminal")


def progress_of(args: argparse.Namespace, stages: Sequence[str]) -> Any:
    """The command's progress: its ``stages``, declared from public parameters before any row is
    read, each printed (on stderr when it is a terminal, or with --progress) in that order, all of
    them on every path (:class:`~dptree.data.engines.duckdb_progress.Stages`; call ``done()`` at
    the end). Its ``report`` prints the engine's own declared stages and DuckDB's percentage done
    (None when silent)."""
    from dptree.data.engines.duckdb_progress import Stages

    printer = Progress(bool(getattr(args, "progress", False)) or sys.stderr.isatty())
    return Stages(printer if printer.enabled else None, stages)


# --------------------------------------------------------------------------- bounds and the seed


def parse_bound(text: str, flag: str, *, dates: bool = True) -> Any:
    """A public bound (``--lower``, ``--upper``, a numeric ``--width``): an int, else a float
    (finite), else with ``dates`` the text itself, a date or timestamp left for the domain to parse."""
    value: int | float
    try:
        value = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            if dates:
                return text
            raise InvalidParameterError(f"{flag} must be a number, got {text!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidParameterError(f"{flag} must be a finite number, got {text!r}")
    return value


def parse_bounds(lower: str, upper: str) -> tuple[Any, Any]:
    """``--lower`` and ``--upper`` (:func:`parse_bound`): both numbers, or both dates."""
    lo, hi = parse_bound(lower, "--lower"), parse_bound(upper, "--upper")
    if isinstance(lo, str) != isinstance(hi, str) and _is_date(lo if isinstance(lo, str) else hi):
        raise InvalidParameterError(f"--lower and --upper must both be dates or both be numbers, got {lower!r} and "
                                    f"{upper!r}")
    return lo, hi


def _is_date(text: str) -> bool:
    """Whether ``text`` reads as a date (text that does not is refused by the domain, naming it)."""
    import numpy as np

    try:
        np.datetime64(text.strip())
    except ValueError:
        return False
    return True


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(d|h|m|s|w)\s*$")


def parse_width(text: str | None, lower: Any) -> Any:
    """``--width``: a number, or for a date domain (``lower`` is text) a duration such as 1d or 6h."""
    if text is None:
        return None
    if isinstance(lower, str):
        m = _DURATION.match(text)
        if not m:
            raise InvalidParameterError(f"date width must look like 1d, 12h, 30m, 10s or 1w; got {text!r}")
        unit = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds", "w": "weeks"}[m.group(2)]
        return _dt.timedelta(**{unit: float(m.group(1))})
    return parse_bound(text, "--width", dates=False)


def check_levels(levels: Sequence[float], flag: str) -> list[float]:
    """Quantile levels (``--q``, ``--quantile``) in [0, 1]; whole percentiles are shown as the
    fractions they mean."""
    if levels and all(0.0 <= q <= 1.0 for q in levels):
        return list(levels)
    hint = ""
    if levels and all(0.0 <= q <= 100.0 for q in levels):  # math.isnan fails both comparisons
        hint = (f"; percentiles are fractions: for {', '.join(f'{q:g}' for q in levels[:5])} give "
                f"{', '.join(f'{q / 100:g}' for q in levels[:5])}")
    raise InvalidParameterError(f"{flag} levels must be numbers in [0, 1]{hint}")


def add_seed_options(p: Any) -> None:
    p.add_argument("--seed", type=int, default=None,
                   help="TESTS ONLY: seeded, reproducible and NOT private (needs --allow-nonprivate)")
    p.add_argument("--allow-nonprivate", dest="allow_nonprivate", action="store_true",
                   help="confirm a seeded, NOT private release")


def check_seed(args: argparse.Namespace) -> None:
    """``--seed`` needs ``--allow-nonprivate``: a seeded release is reproducible and not private."""
    if args.seed is not None and args.seed < 0:
        raise InvalidParameterError(f"--seed must be an integer >= 0, got {args.seed}")
    if args.seed is not None and not args.allow_nonprivate:
        raise InvalidParameterError(
            "--seed makes the release reproducible and NOT private; add --allow-nonprivate to confirm"
        )


# --------------------------------------------------------------------------- input files


def add_input_options(p: Any, *, formats: bool = True) -> None:
    """The data file (``-`` for CSV on stdin) and, with ``formats``, ``--format csv|parquet``."""
    p.add_argument("file", metavar="FILE", help="CSV or Parquet file, or - for CSV on standard input")
    if formats:
        p.add_argument("--format", dest="input_format", choices=["csv", "parquet"],
                       help="input format (default: from the name, or the file's first bytes)")


def check_input_path(path: str, ledger: str | None = None) -> None:
    """The data file exists, is a file (``-`` is standard input) and is not the budget ``ledger``
    (checked before the charge: reading the ledger as data would spend budget on an error). Not
    its content."""
    if path == "-":
        return
    if not os.path.exists(path):
        raise InputFormatError(f"input file not found: {path} (no such file)")
    if os.path.isdir(path):
        raise InputFormatError(f"input {path} is a directory, not a CSV or Parquet file")
    if ledger and _same_file(Path(path), Path(ledger)):
        raise InvalidParameterError(f"input {path} is the budget ledger (--ledger); give the data file")


@contextmanager
def readable_path(path: str) -> Iterator[str]:
    """A path a reader can open: ``path`` itself, or for ``-`` a private temporary copy of
    standard input (CSV), removed when the block ends. Reads stdin: call it after the charge."""
    if path != "-":
        yield path
        return
    with tempfile.NamedTemporaryFile(prefix="dptree-stdin-", suffix=".csv", delete=False) as tmp:
        stdin = sys.stdin
        tmp.write(stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read().encode("utf-8"))
    try:
        yield tmp.name
    finally:
        os.unlink(tmp.name)


# --------------------------------------------------------------------------- output files


def add_force_option(p: Any, what: str) -> None:
    """--force: replace an existing --out file (a release, or a file that is not a dptree {what});
    never an input, a link, a pipe or a device."""
    help_ = (f"replace an existing --out file (an earlier {what}, or a file that is not one)" if "release" in what
             else f"overwrite an existing --out file that is not a dptree {what}")
    p.add_argument("--force", action="store_true", help=help_)


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def add_group_options(p: Any) -> None:
    """``--by``, ``--groups`` and ``--unknown-groups``: one release per public group, or per group
    found privately (``--groups private``, :mod:`dptree.cli.private_groups`)."""
    from dptree.cli.private_groups import add_private_group_options

    p.add_argument("--by", metavar="COLUMN", help="one release per group of COLUMN (parallel composition)")
    p.add_argument("--groups", metavar="A,B,...", help="the public list of groups (required with --by), or 'private' "
                   "to find them from the data (--max-groups, --groups-share)")
    p.add_argument("--unknown-groups", choices=["error", "drop"], default="error",
                   help="rows of a group not in --groups (with private groups: of none): error (default) or drop")
    add_private_group_options(p)


def check_group_options(args: argparse.Namespace) -> None:
    """--by and --groups go together, and with them --out names one file per group (one file with
    --groups private: the groups are not known before the data is read)."""
    from dptree.cli.private_groups import check_private_group_options

    if args.by and not args.groups:
        raise InvalidParameterError("--by needs --groups A,B,... (the public list of groups), or --groups private")
    if args.groups and not args.by:
        raise InvalidParameterError("--groups needs --by COLUMN")
    if check_private_group_options(args):
        return
    if args.by and args.out is not None and "{group}" not in args.out:
        raise InvalidParameterError("with --by, --out must contain {group}, e.g. --out 'age-{group}.json'")


def parse_groups(text: str) -> list[Any]:
    """The public groups of ``--groups a,b,c`` (integers where every one is an integer)."""
    parts = [p.strip() for p in text.split(",")]
    if not parts or any(p == "" for p in parts):
        raise InvalidParameterError("--groups must be a comma-separated list such as north,south,east")
    try:
        return [int(p) for p in parts]
    except ValueError:
        return parts


def group_output_paths(pattern: str, groups: Sequence[Any] | None) -> list[str]:
    """The files a release will write: ``--out``, or one per group with ``{group}`` replaced."""
    if groups is None:
        return [pattern]
    from dptree.io.grouped import SAFE_GROUP_NAME

    paths = []
    for g in groups:
        name = str(g)
        if not SAFE_GROUP_NAME.match(name):
            raise InvalidParameterError(
                f"--groups: {name!r} cannot be part of a file name; use groups made of letters, digits and _.=+-"
            )
        paths.append(pattern.replace("{group}", name))
    return paths


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
            raise InvalidParameterError(f"{flag} {out} is {what}; write to another file")
    check_overwrite(out, kind, force=force, flag=flag)


def wrote(paths: str | Sequence[str]) -> None:
    """``wrote FILE[, FILE...]`` on stderr: a diagnostic, not a result."""
    info("wrote " + (paths if isinstance(paths, str) else ", ".join(paths)))


# --------------------------------------------------------------------------- release kinds

_KIND_NAMES = {"range_tree": "range-tree", "range_sums": "range-tree with sums", "factorized_cdf": "factorised CDF",
               "range_tree_groups": "grouped range-tree",
               "range_tree_private_groups": "private-groups range-tree",
               "sparse_range_tree": "sparse range-tree", "hierarchy": "hierarchy", "quantiles_groups": "grouped quantiles",
               "quantiles_private_groups": "private-groups quantiles", "interior_point": "interior-point",
               "range_tree_2d": "2-D range-tree", "range_tree_2d_privtree": "2-D PrivTree",
               "stream_counter": "stream counter"}


def release_kind(release: Any) -> str | None:
    """The kind of a loaded release ("range_tree", "hierarchy", ...): its class's ``KIND`` (the
    release contract, :mod:`dptree.io.contract`)."""
    kind = getattr(type(release), "KIND", None)
    return kind if isinstance(kind, str) else None


def for_kind(table: Mapping[str, T], release: Any, command: str) -> T:
    """The entry of ``table`` for the kind of ``release``, or a clear error naming the kinds that
    ``command`` takes."""
    kind = release_kind(release)
    if kind is None or kind not in table:
        names = [_KIND_NAMES.get(k, k) for k in table]
        wanted = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
        raise InvalidParameterError(
            f"{command} needs a {wanted} release; this one is a {kind or type(release).__name__} release"
        )
    return table[kind]


def release_level(release: Any, ci: float | None) -> float:
    """``--ci`` for a release: 0.95 when not given; a quantiles release's intervals are part of it,
    so its own level (``--ci`` other than that level is refused)."""
    if release_kind(release) not in ("quantiles", "quantiles_groups", "quantiles_private_groups"):
        return 0.95 if ci is None else ci
    if ci is not None and ci != release.level:
        raise InvalidParameterError(f"--ci: this quantiles release's intervals are at level {release.level:g}; "
                                    f"drop --ci or pass --ci {release.level:g}")
    return float(release.level)


def write_from_release(args: argparse.Namespace, handlers: Mapping[str, Callable[[Any, argparse.Namespace], None]],
                       what: str) -> int:
    """``plot`` and ``report``: check ``--out``, load the release, run the handler for its kind,
    say what was written (on stderr)."""
    from dptree import load  # every release kind registered (the package root imports them on load)

    check_output_path(args.out, inputs=[args.release], kind=what, force=args.force)
    release = load(args.release)
    for_kind(handlers, release, what)(release, args)
    wrote(args.out)
    return 0
