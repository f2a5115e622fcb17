"""value_counts: the same sorted distinct values and counts from every engine; leaf_histogram's errors."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from dptree.data.histograms import value_counts
from dptree.errors import DataError, InputFormatError


def _reference(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    vals, cnt = np.unique(values, return_counts=True)
    return vals, cnt


def test_numpy_values_are_sorted_distinct_with_counts() -> None:
    gen = np.random.default_rng(3)
    for arr in (gen.integers(-50, 50, 3000), gen.integers(0, 2**64 - 1, 500, dtype=np.uint64, endpoint=True),
                np.round(gen.normal(0, 5, 2000), 1)):
        vals, cnt = value_counts(arr)
        want_v, want_c = _reference(arr)
        np.testing.assert_array_equal(vals, want_v)
        np.testing.assert_array_equal(cnt, want_c)
        assert vals.dtype == arr.dtype and cnt.dtype == np.int64
    vals, cnt = value_counts(np.zeros(0))
    assert vals.size == 0 and cnt.size == 0
    vals, cnt = value_counts([10**30, 3, 10**30])  # wider than 64 bits: Python ints, exact
    assert vals.tolist() == [3, 10**30] and cnt.tolist() == [1, 2]


def test_missing_and_infinite_values_raise_or_are_dropped_without_echoing_data() -> None:
    arr = np.array([2.5, np.nan, 2.5, np.inf, -1.0])
    with pytest.raises(DataError, match="missing values") as ei:
        value_counts(arr)
    assert not any(c.isdigit() for c in str(ei.value))
    with pytest.raises(DataError, match="inf"):
        value_counts(arr, missing="drop")
    vals, cnt = value_counts(arr, missing="drop", infinite="drop")
    assert vals.tolist() == [-1.0, 2.5] and cnt.tolist() == [1, 2]
    with pytest.raises(DataError, match="^my policy$"):
        value_counts(arr, message="my policy")
    with pytest.raises(DataError):
        value_counts(["a", "b"])


def test_files_and_relations_give_the_arrays_counts(tmp_path: Path) -> None:
    gen = np.random.default_rng(5)
    df = pd.DataFrame({"i": gen.integers(-9, 9, 4000), "f": np.round(gen.normal(0, 3, 4000), 2),
                       "u": gen.integers(0, 2**64 - 1, 4000, dtype=np.uint64, endpoint=True)})
    df.loc[::37, "f"] = np.nan
    path = tmp_path / "d.parquet"
    df.to_parquet(path)
    df.to_csv(tmp_path / "d.csv", index=False)
    for col in ("i", "f", "u"):
        want = value_counts(df, column=col, missing="drop")
        for data in (path, str(tmp_path / "d.csv"), duckdb.from_df(df)):
            if col == "u" and str(data).endswith(".csv"):
                continue  # a CSV reader types 64-bit unsigned columns by its own rules
            got = value_counts(data, column=col, missing="drop")
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
    with pytest.raises(DataError, match="missing values"):
        value_counts(path, column="f")
    with pytest.raises(InputFormatError, match="not found"):
        value_counts(path, column="nope")
    inf = tmp_path / "inf.parquet"
    pd.DataFrame({"x": [1.0, np.inf]}).to_parquet(inf)
    with pytest.raises(DataError, match="inf"):
        value_counts(inf, column="x")
    assert value_counts(inf, column="x", infinite="drop")[0].tolist() == [1.0]


@pytest.mark.slow
def test_spark_gives_the_arrays_counts() -> None:
    from _spark import spark_frame

    gen = np.random.default_rng(7)
    ints = gen.integers(-20, 120, 1500)
    floats = np.round(gen.normal(50, 30, 1500), 1)
    floats[::97] = np.nan
    df = spark_frame({"i": ints, "f": floats})
    for col, arr in (("i", ints), ("f", floats)):
        want = value_counts(arr, missing="drop")
        got = value_counts(df, column=col, missing="drop")
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    with pytest.raises(DataError, match="missing values"):
        value_counts(df, column="f")
