import sys
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

import pytest

sys.path.insert(0, str(Path(__file__).parent))


class CliResult(NamedTuple):
    """What one ``dptree`` command did: its exit status and what it printed."""

    code: int
    out: str
    err: str


@pytest.fixture
def cli_run(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run the ``dptree`` command line in this process: ``cli_run(["release", path, ...])``
    (arguments are turned into strings) returns ``(code, out, err)``. A usage error that argparse
    turns into ``SystemExit`` gives its exit status, like the installed command."""
    from dptree.cli.main import main

    def run(argv: Sequence[Any]) -> CliResult:
        capsys.readouterr()
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        out, err = capsys.readouterr()
        return CliResult(code, out, err)

    return run
