"""The package type-checks: mypy (configured in pyproject.toml, every function annotated) finds no
error in ``src/dptree``. A wrong annotation on the public API, or code that calls it against its
types, fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_finds_no_error_in_the_package(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "mypy", "src/dptree", "--cache-dir", str(tmp_path / "cache")],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "Success" in out.stdout


def test_mypy_check_has_teeth(tmp_path: Path) -> None:
    """The same configuration rejects an unannotated function and a wrong return type."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f(x):\n    return x\n\n\ndef g(x: int) -> str:\n    return x\n")
    out = subprocess.run([sys.executable, "-m", "mypy", str(bad), "--config-file", str(ROOT / "pyproject.toml"),
                          "--cache-dir", str(tmp_path / "cache")], capture_output=True, text=True, timeout=600)
    assert out.returncode == 1
    assert "no-untyped-def" in out.stdout and "return-value" in out.stdout
