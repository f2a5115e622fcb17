"""``dptree release --user-id COLUMN --max-contributions private``: both steps charged before the
file is read, the release at the chosen bound in the file, standard input read once, refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dptree
from dptree import Ledger


@pytest.fixture
def data(tmp_path: Path) -> Path:
    gen = np.random.default_rng(0)
    per_user = np.minimum(np.floor(gen.pareto(1.5, 400) + 1).astype(np.int64), 500)
    users = np.repeat(np.arange(400), per_user)
    values = gen.integers(0, 100, users.size)
    path = tmp_path / "d.csv"
    path.write_text("v,u\n" + "".join(f"{v},{u}\n" for v, u in zip(values, users)))
    return path


ARGS = ["--column", "v", "--lower", "0", "--upper", "99", "--epsilon", "1", "--user-id", "u", "--max-contributions",
        "private", "--seed", "4", "--allow-nonprivate"]


def test_the_release_and_its_charge(tmp_path: Path, data: Path, cli_run: Any) -> None:
    led = tmp_path / "b.ledger"
    Ledger(led, total_epsilon=1.5).close()
    out = tmp_path / "r.json"
    code, printed, err = cli_run(["release", data, *ARGS, "--ledger", led, "--out", out])
    assert code == 0, err
    rel = dptree.load(out)
    assert f"max_contributions={rel.max_contributions} (chosen privately)" in printed
    assert rel.privacy["contributions"]["chosen"] == rel.max_contributions
    with Ledger(led, read_only=True) as ledger:
        (charge,) = ledger.history()
    assert charge["epsilon"] == 1.0 and charge["mechanisms"].startswith("exponential")
    # the same seed gives the same release from the library
    import pandas as pd

    frame = pd.read_csv(data)
    lib = dptree.range_tree(frame, column="v", user_id="u", lower=0, upper=99, epsilon=1.0,
                            max_contributions="private", rng=4)
    assert lib.max_contributions == rel.max_contributions and lib.count(0, 50) == rel.count(0, 50)
    # a second release does not fit: refused before the file is read, nothing written
    code, _, err = cli_run(["release", tmp_path / "missing.csv", *ARGS, "--ledger", led, "--out", tmp_path / "s.json"])
    assert code != 0 and not (tmp_path / "s.json").exists()


def test_standard_input_is_read_once(data: Path, tmp_path: Path, cli_run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.read_bytes())))
    out = tmp_path / "r.json"
    code, _, err = cli_run(["release", "-", *ARGS, "--out", out])
    assert code == 0, err
    assert dptree.load(out).max_contributions == dptree.load(out).privacy["contributions"]["chosen"]


@pytest.mark.parametrize(("extra", "match"), [
    (["--contributions-cap", "0"], "--contributions-cap"),
    (["--sparse"], "--sparse"),
    (["--by", "u", "--groups", "1,2"], "--by"),
    (["--neighbors", "replace"], "--neighbors replace"),
])
def test_refusals(data: Path, tmp_path: Path, cli_run: Any, extra: list[str], match: str) -> None:
    code, _, err = cli_run(["release", data, *ARGS, *extra, "--out", tmp_path / "r.json"])
    assert code == 2 and match in err, err
    assert not (tmp_path / "r.json").exists()


def test_the_flag_takes_an_integer_or_private(data: Path, tmp_path: Path, cli_run: Any) -> None:
    argv = [a if a != "private" else "many" for a in ARGS]
    code, _, err = cli_run(["release", data, *argv, "--out", tmp_path / "r.json"])
    assert code == 2 and "integer or 'private'" in err
    argv = [a if a != "private" else "3" for a in ARGS]
    code, printed, err = cli_run(["release", data, *argv, "--out", tmp_path / "r.json"])
    assert code == 0 and dptree.load(tmp_path / "r.json").max_contributions == 3 and "chosen" not in printed
