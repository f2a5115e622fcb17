"""Only dptree.noise may draw randomness (DESIGN section 9)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src" / "dptree"
FORBIDDEN_MODULES = {"random", "secrets"}
FORBIDDEN_CALLS = {"urandom", "default_rng", "Generator", "PCG64", "RandomState", "SystemRandom", "getrandbits"}


def offending_lines(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bad += [
                f"{path.name}:{node.lineno} import {a.name}"
                for a in node.names
                if a.name.split(".")[0] in FORBIDDEN_MODULES
            ]
        elif isinstance(node, ast.ImportFrom):
            mod = (node.module or "").split(".")[0]
            if mod in FORBIDDEN_MODULES or (node.module or "").startswith("numpy.random"):
                bad.append(f"{path.name}:{node.lineno} from {node.module} import ...")
        elif isinstance(node, ast.Attribute):
            if node.attr == "random" and isinstance(node.value, ast.Name) and node.value.id in {"np", "numpy"}:
                bad.append(f"{path.name}:{node.lineno} np.random")
            elif node.attr in FORBIDDEN_CALLS:
                bad.append(f"{path.name}:{node.lineno} .{node.attr}")
    return bad


def test_only_the_noise_module_draws_randomness() -> None:
    files = [p for p in SRC.rglob("*.py") if "noise" not in p.relative_to(SRC).parts]
    assert files, "source tree not found"
    bad = [line for p in files for line in offending_lines(p)]
    assert not bad, "randomness outside the dptree.noise package:\n" + "\n".join(bad)


def test_the_checker_catches_a_planted_import(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("import numpy as np\nx = np.random.default_rng(0).integers(3)\nimport secrets\n")
    assert len(offending_lines(planted)) >= 2
