"""Start-up cost: ``import dptree`` and the command line's help load numpy and dptree's own modules,
never the heavy optional dependencies; those are imported inside the functions that use them.

Each check runs in a fresh interpreter (this test process has long since imported them all).
``benchmarks/import_time.py`` measures the time this saves.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

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


def _fresh(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_import_dptree_loads_no_stage_until_a_name_is_used() -> None:
    out = _fresh("import sys, dptree\n"
                 "print(sorted(m for m in sys.modules if m.startswith('dptree.')))\n"
                 "dptree.range_tree\n"
                 "print('dptree.rangetree.api' in sys.modules)")
    before, after = out.splitlines()
    assert before == "[]" and after == "True"


def test_a_public_name_shared_with_a_subpackage_stays_the_function() -> None:
    # importing the subpackage sets the package's attribute to it; dptree.quantiles stays the function
    assert _fresh("import dptree, dptree.quantiles.api\nprint(callable(dptree.quantiles))") == "True"


def test_load_reads_every_kind_in_a_fresh_interpreter(tmp_path: Any) -> None:
    """``dptree.load`` registers every release kind itself: nothing else need be imported first."""
    import numpy as np

    import dptree

    x = np.arange(200) % 50
    files = {
        "range_tree": dptree.range_tree(x, lower=0, upper=60, epsilon=1.0),
        "sparse_range_tree": dptree.sparse_range_tree(x, lower=0, upper=60, epsilon=1.0),
        "quantiles": dptree.quantiles(x, [0.5], lower=0, upper=60, epsilon=1.0),
        "interior_point": dptree.interior_point(x, lower=0, upper=60, epsilon=1.0),
        "hierarchy": dptree.hierarchy_counts([("a", "b")] * 5, dptree.Hierarchy.from_paths([("a", "b")]),
                                             epsilon=1.0),
    }
    for name, rel in files.items():
        rel.save(tmp_path / f"{name}.json")
    kinds = _fresh("import sys, dptree\n"
                   f"for p in sorted(__import__('pathlib').Path({str(tmp_path)!r}).glob('*.json')):\n"
                   "    print(type(dptree.load(p)).__name__)")
    assert kinds.splitlines() == [type(files[name]).__name__ for name in sorted(files)]
