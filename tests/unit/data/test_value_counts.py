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
        value_counts(arr[2:])
    vals, cnt = value_counts(arr, on_invalid="drop")
    assert vals.tolist() == [-1.0, 2.5] and cnt.tolist() == [1, 2]
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
        want = value_counts(df, column=col, on_invalid="drop")
        for data in (path, str(tmp_path / "d.csv"), duckdb.from_df(df)):
            if col == "u" and str(data).endswith(".csv"):
                continue  # a CSV reader types 64-bit unsigned columns by its own rules
            got = value_counts(data, column=col, on_invalid="drop")
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
    assert value_counts(inf, column="x", on_invalid="drop")[0].tolist() == [1.0]


@pytest.mark.slow
def test_spark_gives_the_arrays_counts() -> None:
    from _spark import spark_frame

    gen = np.random.default_rng(7)
    ints = gen.integers(-20, 120, 1500)
    floats = np.round(gen.normal(50, 30, 1500), 1)
    floats[::97] = np.nan
    df = spark_frame({"i": ints, "f": floats})
    for col, arr in (("i", ints), ("f", floats)):
        want = value_counts(arr, on_invalid="drop")
        got = value_counts(df, column=col, on_invalid="drop")
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    with pytest.raises(DataError, match="missing values"):
        value_counts(df, column="f")


def test_keyed_parallel_sort_gives_numpys_distinct_counts() -> None:
    """distinct_counts above its threshold sorts order-preserving keys in parallel chunks; the result
    is np.unique's for every dtype it keys (ties, negatives, the int64/uint64 ends, dates), with
    -0.0 read as 0.0, and arrays it cannot key (NaN present, float32, objects) take np.sort."""
    from dptree.data import sorting

    gen = np.random.default_rng(11)
    size = sorting._KEYED_MIN * 20  # > 2^20: several chunks
    floats = np.round(gen.normal(0, 50, size), 1)
    floats[:5] = [-0.0, 0.0, -1e308, 1e308, 5e-324]
    ints = gen.integers(-(2**63), 2**63 - 1, size, endpoint=True)
    ints[:3] = [-(2**63), 2**63 - 1, 0]
    uints = gen.integers(0, 2**64 - 1, size, dtype=np.uint64, endpoint=True)
    uints[::3] = 2**63  # ties across the sign bit of the key
    cases = [floats, ints, uints, ints % 1000, (ints % 1000).astype(np.int32), (uints % 7).astype(np.uint8),
             (ints % 10**6).astype("datetime64[s]"), gen.integers(-5, 5, size).astype("datetime64[D]")]
    for arr in cases:
        vals, cnt = sorting.distinct_counts(arr)
        want_v, want_c = np.unique(arr, return_counts=True)
        np.testing.assert_array_equal(vals, want_v)
        np.testing.assert_array_equal(cnt, want_c)
        assert vals.dtype == arr.dtype and cnt.dtype == np.int64
    zero = sorting.distinct_counts(floats)[0]
    assert not np.signbit(zero[zero == 0]).any()  # -0.0 and 0.0 are one value, read as 0.0
    keyed = sorting._to_keys
    with_nan = floats.copy()
    with_nan[7] = np.nan
    assert keyed(with_nan) is None and keyed(floats[5:].astype(np.float32)) is None
    assert keyed(np.array(["2024-01-01", "NaT"], dtype="datetime64[D]")) is None
    vals, cnt = sorting.distinct_counts(with_nan)  # the np.sort fallback: NaN last
    assert np.isnan(vals[-1]) and cnt.sum() == size


def test_files_sorted_in_memory_and_by_duckdb_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Up to IN_MEMORY_VALUES rows DuckDB only scans and numpy sorts; past it DuckDB sorts and
    streams runs (batches cut through tie blocks): the same values and counts either way."""
    from dptree.data.engines import duckdb_values

    gen = np.random.default_rng(13)
    size = 3 * (1 << 17)
    df = pd.DataFrame({"f": np.round(gen.lognormal(0, 2, size), 2), "i": gen.integers(-300, 300, size),
                       "d": gen.integers(0, 4000, size).astype("datetime64[D]")})
    path = tmp_path / "big.parquet"
    df.to_parquet(path)
    monkeypatch.setattr(duckdb_values, "_BATCH", 1 << 15)
    for col in ("f", "i", "d"):
        monkeypatch.setattr(duckdb_values, "IN_MEMORY_VALUES", 1 << 26)
        fast = value_counts(path, column=col)
        monkeypatch.setattr(duckdb_values, "IN_MEMORY_VALUES", 0)
        streamed = value_counts(path, column=col)
        want_v, want_c = np.unique(df[col].to_numpy(), return_counts=True)
        for got in (fast, streamed):
            np.testing.assert_array_equal(got[0], want_v.astype(got[0].dtype))
            np.testing.assert_array_equal(got[1], want_c)
        assert fast[0].dtype == streamed[0].dtype


def test_grouped_value_counts_in_memory_and_by_duckdb_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each group's values and counts are the same whether DuckDB scans (group, value) once and numpy
    splits and sorts them, or DuckDB sorts each group's rows; rows of unlisted groups are dropped."""
    from dptree.data.engines import duckdb_values
    from dptree.data.histograms import grouped_value_counts

    gen = np.random.default_rng(14)
    size = 1 << 16
    df = pd.DataFrame({"f": np.round(gen.lognormal(0, 2, size), 2), "i": gen.integers(-300, 300, size),
                       "g": gen.choice(["a", "b", "c", "x"], size)})
    df.loc[gen.integers(0, size, 50), "f"] = np.nan
    path = tmp_path / "groups.parquet"
    df.to_parquet(path)
    groups = ["c", "a", "b", "empty"]
    for col in ("f", "i"):
        runs = []
        for limit in (1 << 26, 0):
            monkeypatch.setattr(duckdb_values, "IN_MEMORY_VALUES", limit)
            runs.append(grouped_value_counts(path, column=col, by="g", groups=groups, unknown="drop", on_invalid="drop"))
        for got in runs:
            for (vals, cnt), g in zip(got, groups):
                part = df.loc[df["g"] == g, col].dropna().to_numpy()
                want_v, want_c = np.unique(part, return_counts=True)
                np.testing.assert_array_equal(vals, want_v.astype(vals.dtype))
                np.testing.assert_array_equal(cnt, want_c)
