"""The README works as written: every Python block runs on its own (a reader copies one block into
a fresh interpreter), and every ``dptree ...`` line of the command-line block runs against files
with the columns it names, in the order given."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def cli_lines() -> list[list[str]]:
    out = []
    for block in blocks("bash"):
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("dptree "):
                out.append(shlex.split(line)[1:])
    return out


def test_the_readme_has_python_and_cli_examples() -> None:
    assert len(blocks("python")) >= 2
    assert len(cli_lines()) >= 10


@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_python_block_runs_alone(index: int, tmp_path: Path) -> None:
    code = blocks("python")[index]
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"README Python block {index + 1} failed:\n{code}\n{result.stderr[-3000:]}"


def _example_files(d: Path) -> None:
    rng = np.random.default_rng(0)
    n = 2000
    pd.DataFrame({"age": rng.integers(0, 100, n), "latency": rng.integers(0, 10**6, n)}).to_csv(d / "data.csv",
                                                                                               index=False)
    days = np.datetime64("2024-01-01") + rng.integers(0, 366, n).astype("timedelta64[D]")
    pd.DataFrame({"day": days}).to_parquet(d / "events.parquet")
    places = pd.DataFrame({"country": ["US", "US", "FR"], "state": ["CA", "NY", "IDF"], "city": ["SF", "NYC", "Paris"]})
    places.to_csv(d / "places.csv", index=False)
    places.iloc[rng.integers(0, 3, n)].to_csv(d / "rows.csv", index=False)
    pd.DataFrame({"age": rng.integers(0, 100, n), "person": rng.integers(0, 300, n)}).to_parquet(d / "visits.parquet")


def test_cli_lines_run_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    from dptree.cli.main import main

    _example_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    for argv in cli_lines():
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 0, f"`dptree {shlex.join(argv)}` exited {code}:\n{err}"
    assert (tmp_path / "visits.html").exists() and (tmp_path / "h.html").exists()
