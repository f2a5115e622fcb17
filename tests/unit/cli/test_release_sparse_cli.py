"""``dptree release --sparse``: a sparse range tree of a file's column, the library's release."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dptree


@pytest.fixture()
def parquet(tmp_path: Path) -> Path:
    g = np.random.default_rng(4)
    path = tmp_path / "lat.parquet"
    pd.DataFrame({"ms": g.lognormal(2.0, 1.5, 2000), "id": g.integers(-(2**62), 2**62, 2000)}).to_parquet(path)
    return path


@pytest.mark.parametrize("column", ["ms", "id"])
def test_the_file_is_the_librarys_release(parquet: Path, tmp_path: Path, column: str, cli_run: Any) -> None:
    code, out, err = cli_run(["release", str(parquet), "--column", column, "--sparse", "--epsilon", "1", "--seed", "3",
                              "--allow-nonprivate", "--out", str(tmp_path / "s.json")])
    assert code == 0, err
    got = dptree.load(tmp_path / "s.json")
    want = dptree.sparse_range_tree(str(parquet), column=column, epsilon=1.0, rng=3)
    assert got.domain == want.domain and got.measured_nodes == want.measured_nodes
    assert np.array_equal(np.asarray(got.quantile([0.1, 0.5, 0.9])), np.asarray(want.quantile([0.1, 0.5, 0.9])))
    assert out.startswith("SparseRangeTree of") and got.metadata["source"] == str(parquet)
    code, shown, err = cli_run(["query", str(tmp_path / "s.json"), "--quantile", "0.5"])
    assert code == 0 and "quantile(0.5)" in shown, err


def test_options_that_do_not_apply_and_a_csv_without_bounds_are_refused(parquet: Path, tmp_path: Path,
                                                                      cli_run: Any) -> None:
    csv = tmp_path / "v.csv"
    csv.write_text("v,u\n1.5,a\n,c\n2.5,b\n")
    base = ["release", "--sparse", "--epsilon", "1", "--out", str(tmp_path / "x.json")]
    for argv, message in (
        ([str(parquet), "--column", "ms", "--width", "2", "--user-id", "id"], "drop --width, --user-id"),
        ([str(parquet), "--column", "ms", "--lower", "0.0"], "give both --lower and --upper, or neither"),
        ([str(csv), "--column", "v"], "give --lower and --upper (their type"),
        ([str(csv), "--column", "v", "--lower", "0.0", "--upper", "9.0"], "pass --on-invalid drop to leave them out"),
    ):
        code, _, err = cli_run(base + argv)
        assert code == 2 and message in err and err.count("\n") == 1, (argv, err)
    assert not (tmp_path / "x.json").exists()
    code, _, err = cli_run(base + [str(csv), "--column", "v", "--lower", "0.0", "--upper", "9.0", "--on-invalid", "drop"])
    assert code == 0, err
