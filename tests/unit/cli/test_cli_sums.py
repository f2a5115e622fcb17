"""``dptree release --weights COLUMN --weight-bounds LO,HI`` and ``dptree query --sum/--mean``: the
same release as the Python API, charged to a ledger before the file is read, and the refusals."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import dptree


@pytest.fixture
def data_csv(tmp_path):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    age = rng.integers(0, 100, 3000)
    df = pd.DataFrame({"age": age, "revenue": np.round(rng.gamma(2.0, 10.0, 3000), 2),
                       "user": rng.integers(0, 2000, 3000)})
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    return path, df


def test_release_and_query_match_the_python_api(tmp_path, data_csv, cli_run) -> None:  # type: ignore[no-untyped-def]
    path, df = data_csv
    out = tmp_path / "r.json"
    res = cli_run(["release", path, "--column", "age", "--lower", 0, "--upper", 99, "--epsilon", 1,
                   "--weights", "revenue", "--weight-bounds", "0,100", "--weight-resolution", 0.01,
                   "--user-id", "user", "--max-contributions", 2, "--out", out, "--seed", 3, "--allow-nonprivate"])
    assert res.code == 0, res.err
    assert "RangeSums" in res.out and "'revenue'" in res.out
    rel = dptree.load(out)
    ref = dptree.range_tree(str(path), column="age", lower=0, upper=99, epsilon=1.0, weights="revenue",
                            weight_bounds=(0, 100), weight_resolution=0.01, user_id="user", max_contributions=2,
                            rng=3)
    assert rel.sum(10, 40) == ref.sum(10, 40) and rel.mean(10, 40) == ref.mean(10, 40)
    q = cli_run(["query", out, "--sum", "10:40", "--mean", "10:40", "--format", "json"])
    assert q.code == 0, q.err
    answers = json.loads(q.out)["answers"]
    assert [a["query"] for a in answers] == ["sum[10, 40]", "mean[10, 40]"]
    assert answers[0]["estimate"] == pytest.approx(ref.sum(10, 40))
    assert answers[1]["ci_low"] == pytest.approx(ref.mean_ci(10, 40)[0])
    h = cli_run(["query", out, "--histogram", "0,50,100"])
    assert h.code == 0 and "sum" in h.out and "mean" in h.out
    assert cli_run(["plot", out, "--out", tmp_path / "p.png"]).code == 0
    rep = cli_run(["report", out, "--out", tmp_path / "r.html"])  # the report holds the sums and means too
    assert rep.code == 0, rep.err
    assert "mean weight" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_sum_of_a_count_release_and_weights_without_bounds_are_refused(tmp_path, data_csv,  # type: ignore[no-untyped-def]
                                                                       cli_run) -> None:
    path, _ = data_csv
    out = tmp_path / "c.json"
    assert cli_run(["release", path, "--column", "age", "--lower", 0, "--upper", 99, "--epsilon", 1, "--out", out,
                    "--seed", 1, "--allow-nonprivate"]).code == 0
    q = cli_run(["query", out, "--sum", "0:9"])
    assert q.code != 0 and "--weights" in q.err
    r = cli_run(["release", path, "--column", "age", "--lower", 0, "--upper", 99, "--epsilon", 1,
                 "--weights", "revenue", "--out", tmp_path / "x.json"])
    assert r.code != 0 and "--weight-bounds" in r.err
    r = cli_run(["release", path, "--column", "age", "--lower", 0, "--upper", 99, "--epsilon", 1, "--by", "user",
                 "--groups", "1,2", "--weights", "revenue", "--weight-bounds", "0,10", "--out", tmp_path / "y.json"])
    assert r.code != 0 and "--by" in r.err


def test_ledger_charges_both_trees(tmp_path, data_csv, cli_run) -> None:  # type: ignore[no-untyped-def]
    path, _ = data_csv
    ledger = tmp_path / "l.db"
    dptree.Ledger(ledger, total_epsilon=2.0).close()
    res = cli_run(["release", path, "--column", "age", "--lower", 0, "--upper", 99, "--epsilon", 1,
                   "--weights", "revenue", "--weight-bounds", "0,100", "--out", tmp_path / "r.json",
                   "--ledger", ledger])
    assert res.code == 0, res.err
    with dptree.Ledger(ledger) as led:
        hist = led.history()
    assert len(hist) == 1 and hist[0]["epsilon"] == pytest.approx(1.0)
    assert any("sum level" in m["label"] for m in hist[0]["loss"]["measurements"])
