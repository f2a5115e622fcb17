"""Hierarchy labels are read exactly from every engine: an integer level column with a null (which
pandas would make float64, rounding labels above 2^53) keeps its labels, so one added row with a
missing label changes no other row's leaf; a float label at or above 2^63 is written exactly, with
no warning (numpy's int64 cast warned, from the data, and wrapped it to -2^63)."""

from __future__ import annotations

import warnings
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dptree
from dptree.hierarchy import Hierarchy, leaf_counts

BIG = 2**53 + 1
H = Hierarchy.from_paths([(str(BIG),), (str(BIG - 1),), ("7",)], levels=["id"])


def _inputs(rows: list, tmp_path: Path, name: str) -> list:
    table = pa.table({"id": pa.array(rows, pa.int64())})
    pq.write_table(table, tmp_path / f"{name}.parquet")
    return [table, pl.from_arrow(table), str(tmp_path / f"{name}.parquet"),
            duckdb.sql(f"SELECT * FROM '{tmp_path / name}.parquet'")]


def test_a_null_row_relabels_nobody_in_any_engine(tmp_path: Path) -> None:
    leaf = list(H.all_paths()[1:]).index(str(BIG))  # level 1, in the order of the paths
    rows = [BIG] * 3
    for d, d1 in zip(_inputs(rows, tmp_path, "d"), _inputs(rows + [None], tmp_path, "d1")):
        got = [a.tolist() for a in leaf_counts(d, H, unknown="drop")]
        assert got[1][leaf] == 3 and sum(map(sum, got)) == 3, type(d)
        assert [a.tolist() for a in leaf_counts(d1, H, unknown="drop")] == got, type(d)


def test_a_float_label_beyond_int64_is_written_exactly_without_a_warning() -> None:
    h = Hierarchy.from_paths([("7",), ("10000000000000000000",)], levels=["id"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = leaf_counts(pd.DataFrame({"id": [7.0, 1e19, np.nan, 2.5]}), h, unknown="drop")
    assert sorted(got[1].tolist()) == [1, 1]  # 1e19 is its own leaf, not -2^63 (unknown)


@pytest.mark.slow
def test_spark_keeps_integer_labels_exact() -> None:
    from _spark import spark_session

    spark = spark_session()
    counts = []
    for rows in ([BIG] * 3, [BIG] * 3 + [None]):
        df = spark.createDataFrame([(r,) for r in rows], "id long")
        counts.append([a.tolist() for a in leaf_counts(df, H, unknown="drop")])
    assert counts[0] == counts[1] and counts[0][1][list(H.all_paths()[1:]).index(str(BIG))] == 3


@pytest.mark.slow
def test_spark_calls_a_nan_weight_missing_like_pandas() -> None:
    """Spark said "non-finite values" where numpy and DuckDB say "missing values"."""
    from _spark import spark_session

    spark = spark_session()
    h = Hierarchy.from_paths([("a",), ("b",)], levels=["l"])
    messages = []
    for data in (spark.createDataFrame([("a", 1.0), ("b", float("nan"))], "l string, w double"),
                 pd.DataFrame({"l": ["a", "b"], "w": [1.0, np.nan]})):
        with pytest.raises(dptree.errors.DataError) as err:
            dptree.hierarchy_counts(data, h, epsilon=1.0, weight="w", rng=1)
        messages.append(str(err.value))
    assert messages[0] == messages[1] and "missing values" in messages[0]
