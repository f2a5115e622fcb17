"""``dptree query --rect`` and ``dptree report`` on 2-D releases (the quadtree and the 2-D PrivTree):
the answers are the library's, the report shows the privacy statement, parameters, heat map and
the grid as CSV, and options a 2-D release does not answer are refused."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
import pytest

import dptree
from dptree.cli.main import main


@pytest.fixture(params=["quadtree", "privtree"])
def release_file(request, tmp_path: Path) -> Path:  # noqa: ANN001
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(3.0, 0.5, 1500), rng.uniform(0, 10, 500)]).clip(0, 9.99)
    y = np.concatenate([rng.normal(-2.0, 0.5, 1500), rng.uniform(-5, 5, 500)]).clip(-5, 4.99)
    rel = dptree.range_tree_2d(x, y, lower=(0.0, -5.0), upper=(10.0, 5.0), width=(0.25, 0.25), epsilon=1.0,
                               method=request.param, rng=4)
    path = tmp_path / f"{request.param}.json"
    rel.save(path, allow_nonprivate=True)
    return path


def test_query_rect_answers_count_stderr_and_ci(release_file: Path, capsys) -> None:  # noqa: ANN001
    assert main(["query", str(release_file), "--rect", "2:4,-3:-1", "--rect", "0:9.9,0:4.9", "--total",
                 "--ci", "0.9", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rel = dptree.load(release_file)
    assert out["ci_level"] == 0.9 and [a["query"] for a in out["answers"]][0] == "total"
    for ans, (x, y) in zip(out["answers"], [((0.0, 10.0), (-5.0, 5.0)), ((2.0, 4.0), (-3.0, -1.0)),
                                           ((0.0, 9.9), (0.0, 4.9))]):
        lo, hi = rel.ci(x, y, level=0.9)
        assert ans["estimate"] == pytest.approx(rel.count(x, y))
        assert ans["stderr"] == pytest.approx(rel.stderr(x, y))
        assert (ans["ci_low"], ans["ci_high"]) == pytest.approx((lo, hi))
    assert main(["query", str(release_file), "--rect", "2:4,-3:-1"]) == 0
    table = capsys.readouterr().out
    assert "rect[2, 4] x [-3, -1]" in table and "95% CI" in table


@pytest.mark.parametrize("args,match", [(["--count", "1:2"], "--rect X0:X1,Y0:Y1"), (["--rect", "1:2"], "X0:X1,Y0:Y1"),
                                        (["--rect", "3:2,0:1"], "X0 <= X1"), (["--rect", "a:b,0:1"], "numbers")])
def test_query_refuses_what_a_2d_release_does_not_answer(release_file: Path, args: list, match: str,
                                                         capsys) -> None:  # noqa: ANN001
    assert main(["query", str(release_file), *args]) != 0
    assert match in capsys.readouterr().err


def test_rect_on_a_1d_release_is_refused(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    path = tmp_path / "one.json"
    dptree.range_tree(np.arange(100), lower=0, upper=99, epsilon=1.0, rng=1).save(path, allow_nonprivate=True)
    assert main(["query", str(path), "--rect", "0:1,0:1"]) != 0
    assert "--rect applies to 2-D releases" in capsys.readouterr().err


def test_report_of_a_2d_release(release_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(release_file), "--out", str(out), "--resolution", "8", "--ci", "0.9"]) == 0
    text = out.read_text()
    rel = dptree.load(release_file)
    assert "NOT PRIVATE" in text and "Privacy" in text and "pure differential privacy" in text
    assert "data:image/png;base64," in text and "exact standard error" in text
    assert ("2-D PrivTree" in text) == (rel.KIND == "range_tree_2d_privtree")
    csv = base64.b64decode(re.search(r'download="x-y-grid-8.csv" href="data:text/csv;charset=utf-8;base64,([^"]+)"',
                                     text).group(1)).decode()
    lines = csv.strip().splitlines()
    assert lines[0].startswith("x_low,x_high,y_low,y_high,estimate,stderr,ci_low,ci_high")
    frame = rel.to_frame(level=0.9, resolution=8)
    assert len(lines) == 1 + len(frame) == 65
    assert float(lines[1].split(",")[4]) == pytest.approx(frame["estimate"].iloc[0])


@pytest.mark.parametrize("args", [["--bins", "5"], ["--log"], ["--resolution", "0"]])
def test_report_refuses_options_a_2d_release_does_not_take(release_file: Path, tmp_path: Path, args: list,
                                                           capsys) -> None:  # noqa: ANN001
    assert main(["report", str(release_file), "--out", str(tmp_path / "r.html"), *args]) != 0
    assert capsys.readouterr().err


def test_resolution_on_a_1d_report_is_refused(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    path = tmp_path / "one.json"
    dptree.range_tree(np.arange(100), lower=0, upper=99, epsilon=1.0, rng=1).save(path, allow_nonprivate=True)
    assert main(["report", str(path), "--out", str(tmp_path / "r.html"), "--resolution", "8"]) != 0
    assert "--resolution" in capsys.readouterr().err
