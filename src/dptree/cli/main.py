"""The ``dptree`` command line: the parser, built from one module per command, and :func:`main`.

Every command module declares its arguments in ``register(subparsers)`` and calls the library;
the shared conventions (errors, streams, exit status, bounds, the seed guard, input and output
files) are in :mod:`dptree.cli.core`, the ledger options and the charge in
:mod:`dptree.cli.ledger_options`.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Sequence

from dptree import __version__
from dptree.cli.status import EXIT_INTERRUPTED

if TYPE_CHECKING:
    from dptree.cli.core import Parser

__all__ = ["main", "build_parser"]


def build_parser() -> Parser:
    # inside main's Ctrl-C handling
    from dptree.cli import budget, hierarchy, interior, plot, quantiles, query, release, report, stream
    from dptree.cli.core import Parser

    parser = Parser(prog="dptree", description="Differential privacy on trees.")
    parser.add_argument("--version", action="version", version=f"dptree {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    release.register(sub)
    query.register(sub)
    plot.register(sub)
    hierarchy.register(sub)
    interior.register(sub)  # interior-point, median, quantile
    quantiles.register(sub)
    budget.register(sub)
    report.register(sub)
    stream.register(sub)  # stream create | append | show
    parser.set_defaults(build_parser=build_parser)  # budget --what-if parses a releasing command line
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``dptree`` command; returns the exit status (0 ok, 2 user error, 3 internal error,
    130 interrupted, 141 when the reader of the output went away). Usage errors exit through argparse (status 2).
    Ctrl-C gives the one line and 130 from here on: while the commands load, while the arguments are
    parsed and while a command runs."""
    try:
        from dptree.cli.core import run

        return run(build_parser(), sys.argv[1:] if argv is None else argv)
    except KeyboardInterrupt:
        sys.stderr.write("dptree: error: interrupted\n")  # the core's error() may not be loaded yet
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
