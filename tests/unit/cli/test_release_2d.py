"""``dptree release --columns X,Y``: a 2-D range tree from a file through the one run order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dptree
from dptree.cli.main import main


@pytest.fixture
def points(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    path = tmp_path / "p.csv"
    x, y = rng.uniform(0, 10, 500), rng.uniform(-5, 5, 500)
    path.write_text("lon,lat\n" + "".join(f"{a},{b}\n" for a, b in zip(x, y)))
    return path


def test_the_cli_release_equals_the_library_release(points: Path, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    out = tmp_path / "r.json"
    assert main(["release", str(points), "--columns", "lon,lat", "--lower", "0.0,-5.0", "--upper", "10.0,5.0",
                 "--width", "0.5,1", "--epsilon", "1", "--levels", "geometric", "--seed", "5", "--allow-nonprivate",
                 "--out", str(out)]) == 0
    assert "RangeTree2D of 'lon', 'lat'" in capsys.readouterr().out
    rel = dptree.load(out)
    lib = dptree.range_tree_2d(str(points), columns=("lon", "lat"), lower=(0.0, -5.0), upper=(10.0, 5.0),
                               width=(0.5, 1), epsilon=1.0, levels="geometric", rng=5)
    assert np.array_equal(rel.cell_estimates, lib.cell_estimates)
    assert rel.plan.levels == "geometric" and rel.metadata["column"] == "lon,lat"


def test_the_cli_charges_the_ledger_before_reading(points: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "l.db"
    assert main(["budget", str(ledger), "--create", "--total-epsilon", "1.5"]) == 0
    args = ["release", str(points), "--columns", "lon,lat", "--lower", "0.0,-5.0", "--upper", "10.0,5.0",
            "--width", "1", "--epsilon", "1", "--ledger", str(ledger)]
    assert main(args + ["--out", str(tmp_path / "a.json")]) == 0
    assert main(args + ["--out", str(tmp_path / "b.json")]) != 0  # over budget: refused
    assert not (tmp_path / "b.json").exists()


@pytest.mark.parametrize("extra,match", [(["--user-id", "lon"], "--user-id"), (["--branching", "4"], "--branching"),
                                         (["--column", "lon"], "--column"), (["--bounds-origin", "3"], "--bounds-origin"),
                                         (["--levels", "prefix"], "levels")])
def test_options_a_2d_release_does_not_take_are_refused(points: Path, tmp_path: Path, extra: list, match: str,
                                                        capsys) -> None:  # noqa: ANN001
    code = main(["release", str(points), "--columns", "lon,lat", "--lower", "0.0,-5.0", "--upper", "10.0,5.0",
                 "--width", "1", "--epsilon", "1", "--out", str(tmp_path / "c.json"), *extra])
    assert code != 0 and match in capsys.readouterr().err


def test_dptree_plot_draws_the_heat_map(points: Path, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    assert main(["release", str(points), "--columns", "lon,lat", "--lower", "0.0,-5.0", "--upper", "10.0,5.0",
                 "--width", "1", "--epsilon", "1", "--out", str(out)]) == 0
    assert main(["plot", str(out), "--out", str(png), "--resolution", "5"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["plot", str(out), "--out", str(tmp_path / "b.png"), "--log"]) != 0
    assert "--log" in capsys.readouterr().err
