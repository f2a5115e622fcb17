"""The README works as written from a fresh checkout. Every ```python block runs on its own in a
fresh interpreter (a reader copies one block), and every ```bash block runs command by command, as
a reader pastes it, with the ``dptree`` console script of this environment, in a fresh directory
where ``examples/data/`` resolves as it does at the repository root. Only the two set-up commands
are not run, by name: one installs dptree, the other runs this suite."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
EXAMPLES = ROOT / "examples"
# the set-up commands of "Set up on a fresh machine": the first installs dptree into the current
# environment, the second runs the whole suite, this file included
NOT_RUN = {"bash scripts/demo.sh", "bash scripts/test.sh"}
SPARK = importlib.util.find_spec("pyspark") is not None and shutil.which("java") is not None


def blocks(lang: str, text: str = README) -> list[str]:
    """The bodies of the fenced blocks of one language, in order."""
    return re.findall(rf"^```{lang}\n(.*?)^```", text, flags=re.S | re.M)


def commands(block: str) -> list[str]:
    """A bash block's commands as the shell reads them: ``\\``-continued lines joined into one;
    blank and comment-only lines left out."""
    joined = re.sub(r"\\\n", " ", block)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def workdir(tmp_path: Path) -> Path:
    """A fresh directory in which the README's relative names resolve as at the repository root
    (``examples/data/...``) and into which its commands write their outputs."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "examples").symlink_to(EXAMPLES, target_is_directory=True)
    return work


def environment() -> dict[str, str]:
    """This environment's console scripts first on PATH: the ``dptree`` a reader who installed
    dptree here would run."""
    bindir = Path(sys.executable).parent
    assert (bindir / "dptree").exists(), f"no dptree console script in {bindir}: install dptree (pip install -e .)"
    return {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "MPLBACKEND": "Agg"}


def test_the_readme_has_python_and_cli_examples() -> None:
    every = [c for b in blocks("bash") for c in commands(b)]
    assert len(blocks("python")) >= 2
    assert sum(c.startswith("dptree ") for c in every) >= 10
    # the commands not run are named exactly; a renamed one must be looked at again, not run
    assert NOT_RUN <= set(every)


@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_python_block_runs_alone(index: int, tmp_path: Path) -> None:
    code = blocks("python")[index]
    if "spark" in code.lower() and not SPARK:
        pytest.skip("the block uses Spark: needs pyspark and java")
    result = subprocess.run([sys.executable, "-c", code], cwd=workdir(tmp_path), env=environment(),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"README Python block {index + 1} failed:\n{code}\n{result.stderr[-3000:]}"
    # a newcomer's first run of an example prints no warning
    assert "Warning" not in result.stderr, f"README Python block {index + 1} warns:\n{result.stderr[-3000:]}"


@pytest.mark.parametrize("index", range(len(blocks("bash"))))
def test_bash_block_runs_in_order(index: int, tmp_path: Path) -> None:
    work, env = workdir(tmp_path), environment()
    for command in commands(blocks("bash")[index]):
        if command in NOT_RUN or ("spark" in command.lower() and not SPARK):
            continue
        result = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, f"README command exited {result.returncode}:\n{command}\n{result.stderr[-3000:]}"
        words = shlex.split(command, comments=True)
        for flag, name in zip(words, words[1:]):
            if flag == "--out":
                assert (work / name).is_file(), f"README command wrote no {name}:\n{command}"


def test_example_files_are_what_the_generator_makes(tmp_path: Path) -> None:
    """The bundled files are reproducible from examples/make_example_data.py (fixed seeds), and
    every example file the README names is bundled."""
    result = subprocess.run([sys.executable, str(EXAMPLES / "make_example_data.py"), str(tmp_path)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    made = sorted(p.name for p in tmp_path.iterdir())
    assert made == sorted(p.name for p in (EXAMPLES / "data").iterdir())
    for name in made:
        bundled, fresh = EXAMPLES / "data" / name, tmp_path / name
        if name.endswith(".parquet"):
            assert pq.read_table(bundled).equals(pq.read_table(fresh)), name
        else:
            assert bundled.read_bytes() == fresh.read_bytes(), name
    named = set(re.findall(r"examples/data/([\w.-]+\.\w+)", README))
    assert named and named <= set(made)
