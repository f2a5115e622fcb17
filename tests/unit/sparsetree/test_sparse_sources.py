"""``sparse_range_tree`` reads files (Parquet; CSV with bounds), DuckDB relations and Spark
DataFrames through the engines: the same release, draw for draw, as from the column in memory."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

import dptree
from dptree.errors import DataError, InvalidParameterError


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    g = np.random.default_rng(11)
    return pd.DataFrame({
        "ms": g.lognormal(3.0, 1.2, 3000),
        "id": g.integers(-(2**62), 2**62, 3000),
        "at": np.datetime64("2024-03-01", "ns") + g.integers(0, 10**15, 3000).astype("timedelta64[ns]"),
    })


def _same(a: dptree.SparseRangeTree, b: dptree.SparseRangeTree) -> None:
    assert a.domain == b.domain and a.measured_nodes == b.measured_nodes
    assert np.array_equal(np.asarray(a.quantile([0.1, 0.5, 0.9])), np.asarray(b.quantile([0.1, 0.5, 0.9])))
    assert a.total() == b.total()


@pytest.mark.parametrize("column", ["ms", "id", "at"])
def test_parquet_and_duckdb_relations_give_the_in_memory_release(tmp_path: Path, frame: pd.DataFrame,
                                                                 column: str) -> None:
    frame.to_parquet(tmp_path / "d.parquet")
    want = dptree.sparse_range_tree(frame, column=column, epsilon=1.0, rng=5)
    _same(dptree.sparse_range_tree(str(tmp_path / "d.parquet"), column=column, epsilon=1.0, rng=5), want)
    rel = duckdb.sql(f"SELECT * FROM '{tmp_path / 'd.parquet'}'")
    _same(dptree.sparse_range_tree(rel, column=column, epsilon=1.0, rng=5), want)


def test_a_csv_needs_bounds_whose_type_sets_the_domain(tmp_path: Path, frame: pd.DataFrame) -> None:
    frame.to_csv(tmp_path / "d.csv", index=False)
    want = dptree.sparse_range_tree(frame, column="ms", lower=0.0, upper=1e6, epsilon=1.0, rng=2)
    _same(dptree.sparse_range_tree(str(tmp_path / "d.csv"), column="ms", lower=0.0, upper=1e6, epsilon=1.0, rng=2),
          want)
    with pytest.raises(InvalidParameterError, match="a CSV column has no declared type"):
        dptree.sparse_range_tree(str(tmp_path / "absent.csv"), column="ms", epsilon=1.0)  # refused before reading
    with pytest.raises(InvalidParameterError, match="needs column="):
        dptree.sparse_range_tree(str(tmp_path / "d.csv"), lower=0.0, upper=1e6, epsilon=1.0)


def test_missing_values_in_a_file_follow_on_invalid(tmp_path: Path) -> None:
    pd.DataFrame({"v": [1.5, None, 3.0, float("inf"), 2.0]}).to_parquet(tmp_path / "m.parquet")
    with pytest.raises(DataError, match="on_invalid='drop'"):
        dptree.sparse_range_tree(str(tmp_path / "m.parquet"), column="v", epsilon=1.0)
    kept = dptree.sparse_range_tree(str(tmp_path / "m.parquet"), column="v", epsilon=1.0, on_invalid="drop", rng=1)
    _same(kept, dptree.sparse_range_tree(np.array([1.5, 3.0, 2.0]), epsilon=1.0, rng=1))


def test_spark_dataframes_give_the_in_memory_release(frame: pd.DataFrame) -> None:
    from _spark import spark_session

    sdf = spark_session().createDataFrame([(float(v),) for v in frame["ms"]], "ms double")
    _same(dptree.sparse_range_tree(sdf, column="ms", epsilon=1.0, rng=3),
          dptree.sparse_range_tree(frame["ms"].to_numpy(), epsilon=1.0, rng=3))


def test_engine_values_are_every_valid_value_unsorted_without_a_sort(tmp_path: Path, frame: pd.DataFrame) -> None:
    from dptree.data.histograms import value_counts, values

    frame.to_parquet(tmp_path / "d.parquet")
    for column in ("ms", "id", "at"):
        got = values(str(tmp_path / "d.parquet"), column=column)
        vals, cnt = value_counts(str(tmp_path / "d.parquet"), column=column)
        assert got.dtype == vals.dtype and np.array_equal(np.sort(got), np.repeat(vals, cnt))
    assert np.array_equal(values(str(tmp_path / "d.parquet"), column="ms"), frame["ms"].to_numpy())  # file order
    pd.DataFrame({"v": [1.5, None, float("inf"), 2.0]}).to_parquet(tmp_path / "m.parquet")
    with pytest.raises(DataError, match="missing|inf"):
        values(str(tmp_path / "m.parquet"), column="v")
    assert values(str(tmp_path / "m.parquet"), column="v", on_invalid="drop").tolist() == [1.5, 2.0]


def test_a_128_bit_relation_column_is_read_exactly() -> None:
    # Arrow has no 128-bit integers; read as DECIMAL(38, 0) -> DOUBLE these values would all round
    # to a few multiples of 512 (the spacing of doubles near 2^61)
    from dptree.data.histograms import value_counts
    from dptree.errors import DomainError

    base = 2**61 + 1
    offsets = np.random.default_rng(4).integers(0, 200, 400)
    exact = [base + int(k) for k in offsets]
    con = duckdb.connect()
    rel = con.sql(f"SELECT CAST(k AS HUGEINT) + CAST('{base}' AS HUGEINT) AS v FROM "
                  f"(SELECT unnest({[int(k) for k in offsets]}) AS k)")
    vals, cnt = value_counts(rel, column="v")
    want_vals, want_cnt = np.unique(offsets, return_counts=True)
    assert [int(v) - base for v in vals] == want_vals.tolist() and cnt.tolist() == want_cnt.tolist()
    bounds = dict(lower=base, upper=base + 255, epsilon=1.0)
    _same(dptree.sparse_range_tree(rel, column="v", rng=7, **bounds),
          dptree.sparse_range_tree(np.array(exact, dtype=object), rng=7, **bounds))
    dense = dptree.range_tree(rel, column="v", rng=7, **bounds)
    assert np.array_equal(dense.leaf_estimates, dptree.range_tree(np.array(exact), rng=7, **bounds).leaf_estimates)
    with pytest.raises(DomainError, match="no 64-bit type"):  # the type's keys do not fit 64 bits: bounds needed
        dptree.sparse_range_tree(rel, column="v", epsilon=1.0)
    with pytest.raises(DomainError, match="no 64-bit type"):  # Python ints past 64 bits, an object array
        dptree.sparse_range_tree(np.array([2**64 + k for k in exact], dtype=object), epsilon=1.0)
