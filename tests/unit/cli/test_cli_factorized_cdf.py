"""``dptree release --noise gaussian --levels factorization`` (and ``cdf``): the same release as the
Python API, read back by ``dptree.load``; the refusals."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import dptree


@pytest.fixture
def data_csv(tmp_path):  # type: ignore[no-untyped-def]
    path = tmp_path / "d.csv"
    pd.DataFrame({"age": np.random.default_rng(0).integers(0, 100, 3000)}).to_csv(path, index=False)
    return path


def test_release_matches_the_python_api(tmp_path, data_csv, cli_run) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "f.json"
    res = cli_run(["release", data_csv, "--column", "age", "--lower", 0, "--upper", 99, "--rho", 0.5,
                   "--noise", "gaussian", "--levels", "factorization", "--out", out, "--seed", 3,
                   "--allow-nonprivate"])
    assert res.code == 0, res.err
    assert "FactorizedCDF" in res.out
    rel = dptree.load(out)
    ref = dptree.range_tree(str(data_csv), column="age", lower=0, upper=99, rho=0.5, noise="gaussian",
                            levels="factorization", rng=3)
    assert rel.count(10, 40) == ref.count(10, 40) and rel.stderr(10, 40) == ref.stderr(10, 40)
    assert json.loads(out.read_text())["kind"] == "factorized_cdf"


def test_cdf_level_and_refusals(tmp_path, data_csv, cli_run) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "c.json"
    ok = cli_run(["release", data_csv, "--column", "age", "--lower", 0, "--upper", 99, "--rho", 0.5,
                  "--noise", "gaussian", "--levels", "cdf", "--out", out, "--seed", 1, "--allow-nonprivate"])
    assert ok.code == 0, ok.err
    assert "FactorizedCDF" in ok.out
    lap = cli_run(["release", data_csv, "--column", "age", "--lower", 0, "--upper", 99, "--epsilon", 1,
                   "--levels", "factorization", "--out", tmp_path / "l.json", "--seed", 1, "--allow-nonprivate"])
    assert lap.code != 0 and "gaussian" in lap.err
    br = cli_run(["release", data_csv, "--column", "age", "--lower", 0, "--upper", 99, "--rho", 0.5,
                  "--noise", "gaussian", "--levels", "factorization", "--branching", 4, "--out", tmp_path / "b.json",
                  "--seed", 1, "--allow-nonprivate"])
    assert br.code != 0 and "--branching" in br.err


def test_query_plot_and_report_read_the_file(tmp_path, data_csv, cli_run) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "f.json"
    assert cli_run(["release", data_csv, "--column", "age", "--lower", 0, "--upper", 99, "--rho", 0.5,
                    "--noise", "gaussian", "--levels", "factorization", "--out", out, "--seed", 3,
                    "--allow-nonprivate"]).code == 0
    rel = dptree.load(out)
    q = cli_run(["query", out, "--count", "10:40", "--format", "json"])
    assert q.code == 0, q.err
    row = json.loads(q.out)["answers"][0]
    assert row["estimate"] == pytest.approx(rel.count(10, 40)) and row["stderr"] == pytest.approx(rel.stderr(10, 40))
    assert cli_run(["plot", out, "--out", tmp_path / "f.png"]).code == 0
    rep = cli_run(["report", out, "--out", tmp_path / "f.html"])
    assert rep.code == 0, rep.err
    assert "square-root Toeplitz factorisation" in (tmp_path / "f.html").read_text(encoding="utf-8")
