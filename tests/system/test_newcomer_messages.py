"""Messages a newcomer meets: each says what to do, in the caller's terms (Python or the CLI flag)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dptree
from dptree.errors import DomainError, DPTreeError, InvalidParameterError

DATES = ["2024-01-05", "2024-02-01", "2024-03-09"]


@pytest.mark.parametrize("data", [np.array(DATES), DATES, np.array(DATES, dtype="datetime64[D]"),
                                  pd.DataFrame({"d": pd.to_datetime(DATES)})])
@pytest.mark.parametrize("product", ["range_tree", "sparse_range_tree", "median", "quantiles"])
def test_dates_with_numeric_bounds_say_how_to_give_date_bounds(data: Any, product: str) -> None:
    column = "d" if isinstance(data, pd.DataFrame) else None
    kw = dict(column=column, lower=0, upper=100, epsilon=1.0)
    run = {"range_tree": lambda: dptree.range_tree(data, **kw),
           "sparse_range_tree": lambda: dptree.sparse_range_tree(data, **kw),
           "median": lambda: dptree.median(data, **kw),
           "quantiles": lambda: dptree.quantiles(data, [0.5], **kw)}[product]
    with pytest.raises(DPTreeError, match="need date bounds: lower='2024-01-01', upper='2024-12-31'") as info:
        run()
    assert "2024-02-01" not in str(info.value) and "2024-03-09" not in str(info.value)


def test_dates_with_numeric_bounds_in_the_cli_name_the_flags(tmp_path: Path, cli_run: Any) -> None:
    path = tmp_path / "d.csv"
    path.write_text("d\n" + "\n".join(DATES) + "\n")
    for command in (["release"], ["median"], ["quantiles", "--q", "0.5"]):
        res = cli_run([command[0], path, "--column", "d", *command[1:], "--lower", "0", "--upper", "100", "--epsilon",
                       "1", "--out", tmp_path / "o.json"])
        assert res.code == 2 and "--lower 2024-01-01, --upper 2024-12-31" in res.err, res.err


def test_percentiles_given_as_whole_numbers_suggest_fractions(tmp_path: Path, cli_run: Any) -> None:
    data = np.arange(100)
    with pytest.raises(InvalidParameterError, match="for 10, 50, 90 give 0.1, 0.5, 0.9"):
        dptree.quantiles(data, [10, 50, 90], lower=0, upper=100, epsilon=1.0)
    rel = dptree.range_tree(data, lower=0, upper=100, epsilon=1.0, rng=1)
    with pytest.raises(InvalidParameterError, match="for 25, 75 give 0.25, 0.75"):
        rel.quantile([25, 75])
    with pytest.raises(InvalidParameterError, match="q=0.9 for the 90th percentile"):
        dptree.quantile(data, 90, lower=0, upper=100, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match=r"in \[0, 1\]$"):  # not percentiles: no suggestion
        dptree.quantiles(data, [-1, 0.5], lower=0, upper=100, epsilon=1.0)
    path = tmp_path / "x.csv"
    path.write_text("x\n1\n2\n")
    res = cli_run(["quantiles", path, "--column", "x", "--q", "10,50,90", "--lower", "0", "--upper", "9", "--epsilon",
                   "1"])
    assert res.code == 2 and "--q levels must be numbers in [0, 1]" in res.err and "give 0.1, 0.5, 0.9" in res.err


def test_range_tree_past_two_to_the_62_points_to_the_sparse_tree(tmp_path: Path, cli_run: Any) -> None:
    with pytest.raises(DomainError, match=r"use dptree.sparse_range_tree \(dptree release --sparse\)"):
        dptree.range_tree(np.array([1, 2]), lower=0, upper=2**63 - 1, epsilon=1.0)
    path = tmp_path / "x.csv"
    path.write_text("x\n1\n2\n")
    res = cli_run(["release", path, "--column", "x", "--lower", "0", "--upper", str(2**63 - 1), "--epsilon", "1",
                   "--out", tmp_path / "o.json"])
    assert res.code == 2 and "use dptree release --sparse" in res.err and "sparse_range_tree" not in res.err


def test_a_column_that_is_not_found_lists_the_schema_never_a_row(tmp_path: Path, cli_run: Any) -> None:
    """Parquet declares its schema: its names are listed. A CSV's first line is a header only by a
    guess from the rows: a file without one, whose first record has a field that does not fit its
    column (n/a among numbers), is read with that record as its header; nothing of it is shown."""
    pq = tmp_path / "p.parquet"
    pd.DataFrame({"age": [30, 41], "name": ["Alma", "Boris"]}).to_parquet(pq)
    res = cli_run(["release", pq, "--column", "agee", "--lower", "0", "--upper", "120", "--epsilon", "1",
                   "--out", tmp_path / "o.json"])
    assert res.code == 2 and "age, name" in res.err and "Alma" not in res.err, res.err
    with pytest.raises(dptree.InputFormatError, match="age, name"):
        dptree.median(str(pq), column="agee", lower=0, upper=120, epsilon=1.0)
    header = tmp_path / "h.csv"
    header.write_text("age,name\n30,Alma\n41,Boris\n")
    headerless = tmp_path / "n.csv"
    headerless.write_text("n/a,Paris\n30,Rome\n41,Oslo\n52,Lima\n")
    text = tmp_path / "t.csv"
    text.write_text("Alma,Paris\nBoris,Rome\n")
    errors = []
    for path in (header, headerless, text):
        res = cli_run(["release", path, "--column", "agee", "--lower", "0", "--upper", "120", "--epsilon", "1",
                       "--out", tmp_path / "o.json"])
        assert res.code == 2 and "not found" in res.err
        assert not any(w in res.err for w in ("n/a", "Paris", "Alma", "Boris", "Rome")), res.err
        errors.append(res.err.replace(str(path), "FILE"))
    assert len(set(errors)) == 1  # the same words whatever the first line holds
    with pytest.raises(dptree.DataError, match="available: age, name"):
        dptree.range_tree(pd.DataFrame({"age": [30], "name": ["Alma"]}), column="agee", lower=0, upper=9, epsilon=1.0)
