"""Start-up cost: ``import dptree`` and the command line's help load numpy and dptree's own modules,
never the heavy optional dependencies; those are imported inside the functions that use them.

Each check runs in a fresh interpreter (this test process has long since imported them all).
``benchmarks/import_time.py`` measures the time this saves.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("scipy", "duckdb", "pyarrow", "pandas", "matplotlib", "pyspark", "polars")

_REPORT = f"""
import json, sys
print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))
"""

_CLI_HELP = """
import contextlib, io
from dptree.cli.main import build_parser, main
commands = [a for a in build_parser()._actions if a.dest == "command"][0].choices
with contextlib.redirect_stdout(io.StringIO()) as out:
    for argv in (["--help"], ["--version"], *([c, "--help"] for c in commands)):
        try:
            main(argv)
        except SystemExit as e:
            assert e.code in (0, None), (argv, e.code)
assert "usage: dptree" in out.getvalue() and len(commands) > 5
"""

_EVERY_MODULE = """
import importlib, pkgutil, dptree
for m in pkgutil.walk_packages(dptree.__path__, "dptree."):
    if not m.name.endswith("__main__"):
        importlib.import_module(m.name)
"""


def _heavy_loaded_after(code: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", code + _REPORT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("code", ["import dptree", _CLI_HELP, _EVERY_MODULE],
                         ids=["import dptree", "dptree --help and every command's --help", "every dptree module"])
def test_no_heavy_dependency_is_imported_at_start_up(code: str) -> None:
    assert _heavy_loaded_after(code) == []


def test_the_check_sees_a_heavy_import() -> None:
    """The probe itself: a module that is loaded is reported."""
    assert "pandas" in _heavy_loaded_after("import dptree, pandas")
