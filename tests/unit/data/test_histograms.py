"""dptree.data.histograms.leaf_histogram: one API over arrays, tables, files and Spark; engines agree."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from dptree.data.histograms import leaf_histogram
from dptree.errors import DataError, InvalidParameterError
from dptree.noise import make_source
from dptree.rangetree.release import plan_range_tree


@pytest.fixture
def df() -> pd.DataFrame:
    gen = np.random.default_rng(0)
    n = 2000
    return pd.DataFrame({"v": gen.integers(-3, 60, n), "u": gen.integers(0, 200, n),
                         "g": gen.choice(["a", "b"], n)})


def test_every_input_kind_gives_the_same_histogram(df: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "d.parquet"
    df.to_parquet(path)
    plan = plan_range_tree(lower=0, upper=49, epsilon=1.0, max_contributions=3)
    ref = np.bincount(np.clip(df["v"], 0, 49), minlength=plan.layout.padded_size)
    sources = [(df["v"].to_numpy(), None), (df["v"].tolist(), None), (df, "v"), (pa.Table.from_pandas(df), "v"),
               (duckdb.from_df(df), "v"), (str(path), "v"), (path, "v")]
    for data, col in sources:
        np.testing.assert_array_equal(leaf_histogram(data, plan, column=col), ref)
    bounded = leaf_histogram(df["v"].to_numpy(), plan, user_id=df["u"].to_numpy(), rng=4)
    assert bounded.sum() == np.minimum(df["u"].value_counts().to_numpy(), 3).sum()
    for data, col in ((df, "v"), (str(path), "v")):
        np.testing.assert_array_equal(leaf_histogram(data, plan, column=col, user_id="u", rng=4), bounded)
    grouped = leaf_histogram(df, plan, column="v", by="g", groups=["a", "b", "c"], user_id="u", rng=4)
    np.testing.assert_array_equal(leaf_histogram(str(path), plan, column="v", by="g", groups=["a", "b", "c"],
                                                 user_id="u", rng=4), grouped)
    assert grouped.shape == (3, plan.layout.padded_size) and grouped[2].sum() == 0
    src = make_source(7)  # a shared source: bounding then noise draw from one stream
    rel = plan.release(leaf_histogram(df, plan, column="v", user_id="u", rng=src), src)
    assert not rel.private


def test_bad_calls(df: pd.DataFrame, tmp_path: Path) -> None:
    plan = plan_range_tree(lower=0, upper=49, epsilon=1.0)
    path = tmp_path / "d.parquet"
    df.to_parquet(path)
    with pytest.raises(InvalidParameterError, match="column='name'"):
        leaf_histogram(str(path), plan)
    with pytest.raises(InvalidParameterError, match="user_id must be a column name"):
        leaf_histogram(str(path), plan, column="v", user_id=df["u"].to_numpy())
    with pytest.raises(InvalidParameterError, match="by and groups go together"):
        leaf_histogram(df, plan, column="v", by="g")
    with pytest.raises(DataError, match="pass column="):
        leaf_histogram(df, plan)
    with pytest.raises(DataError, match="user_id names a column"):
        leaf_histogram(df["v"].to_numpy(), plan, user_id="u")
    with pytest.raises(InvalidParameterError, match="fmt applies to files"):
        leaf_histogram(df["v"].to_numpy(), plan, fmt="csv")


@pytest.mark.slow
def test_spark_dataframe(df: pd.DataFrame) -> None:
    from _spark import spark_frame

    sdf = spark_frame({"v": df["v"].to_numpy(), "u": df["u"].to_numpy(), "g": df["g"].to_numpy(dtype=object)})
    plan = plan_range_tree(lower=0, upper=49, epsilon=1.0, max_contributions=2)
    np.testing.assert_array_equal(leaf_histogram(sdf, plan, column="v"), leaf_histogram(df, plan, column="v"))
    np.testing.assert_array_equal(leaf_histogram(sdf, plan, column="v", user_id="u", rng=1),
                                  leaf_histogram(df, plan, column="v", user_id="u", rng=1))
    np.testing.assert_array_equal(leaf_histogram(sdf, plan, column="v", by="g", groups=["a", "b"]),
                                  leaf_histogram(df, plan, column="v", by="g", groups=["a", "b"]))
    with pytest.raises(InvalidParameterError, match="Spark DataFrame, pass column"):
        leaf_histogram(sdf, plan)
