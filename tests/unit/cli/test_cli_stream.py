"""``dptree stream create|append|show``: the counter's whole horizon is charged at create, appends
continue the saved state and print the new totals, show prints them all and writes the public
release; bad input exits with status 2 and one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dptree
from dptree.cli.main import main


def _rows(text: str) -> np.ndarray:
    lines = text.strip().splitlines()
    assert lines[0] == "step,estimate,stderr"
    return np.array([[float(v) for v in line.split(",")] for line in lines[1:]])


def test_create_append_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    led, state, out = tmp_path / "b.ledger", tmp_path / "s.json", tmp_path / "r.json"
    dptree.Ledger(led, total_epsilon=1.5).close()
    assert main(["stream", "create", str(state), "--horizon", "64", "--epsilon", "1", "--ledger", str(led),
                 "--seed", "3", "--allow-nonprivate"]) == 0
    with dptree.Ledger(led) as ledger:
        assert ledger.spent().epsilon == pytest.approx(1.0)  # charged at create, before any count
    capsys.readouterr()
    assert main(["stream", "append", str(state), "1", "2", "3"]) == 0
    first = _rows(capsys.readouterr().out)
    assert main(["stream", "append", str(state), "4"]) == 0
    second = _rows(capsys.readouterr().out)
    assert first[:, 0].tolist() == [1, 2, 3] and second[:, 0].tolist() == [4]
    # the same seed in the library gives the same stream
    c = dptree.stream.Counter(64, epsilon=1.0, rng=3)
    est, se = c.append([1, 2, 3, 4])
    assert np.allclose(np.concatenate([first, second])[:, 1], est, atol=1e-6)
    assert np.allclose(np.concatenate([first, second])[:, 2], se, atol=1e-6)
    assert main(["stream", "show", str(state), "--out", str(out)]) == 0
    shown = _rows(capsys.readouterr().out)
    assert shown.shape == (4, 3)
    rel = dptree.load(out)
    assert isinstance(rel, dptree.StreamRelease) and np.allclose(rel.estimates, est, atol=1e-6)
    capsys.readouterr()
    assert main(["plot", str(out), "--out", str(tmp_path / "p.png")]) == 0
    assert (tmp_path / "p.png").read_bytes().startswith(b"\x89PNG")
    assert main(["plot", str(out), "--out", str(tmp_path / "q.png"), "--log"]) == 2
    assert main(["stream", "create", str(tmp_path / "t.json"), "--horizon", "64", "--epsilon", "1",
                 "--ledger", str(led)]) == 2  # over the ledger's total: refused before any state is written
    assert "exceed" in capsys.readouterr().err and not (tmp_path / "t.json").exists()


@pytest.mark.parametrize("argv, message", [
    (["stream", "create", "S", "--horizon", "8", "--rho", "1"], "--noise gaussian"),
    (["stream", "create", "S", "--horizon", "0", "--epsilon", "1"], "--horizon"),
    (["stream", "create", "S", "--horizon", "8", "--epsilon", "1", "--seed", "1"], "--allow-nonprivate"),
])
def test_bad_parameters_exit_2_before_any_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                               message: str) -> None:
    argv = [str(tmp_path / a) if a == "S" else a for a in argv]
    assert main(argv) == 2
    assert message in capsys.readouterr().err and not (tmp_path / "S").exists()


def test_bad_counts_and_a_file_that_is_not_a_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "s.json"
    assert main(["stream", "create", str(state), "--horizon", "8", "--epsilon", "1"]) == 0
    assert main(["stream", "append", str(state), "1", "x"]) == 2
    assert main(["stream", "append", str(state), "1"] * 1 + ["1"] * 8) == 2  # past the horizon
    assert "horizon" in capsys.readouterr().err
    rel = tmp_path / "r.json"
    assert main(["stream", "show", str(state), "--out", str(rel)]) == 0
    assert main(["stream", "append", str(rel), "1"]) == 2
