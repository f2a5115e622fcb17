"""Sums of weights per bucket ([Bucket, Units] keys, dptree.data.histograms.leaf_sums): numpy,
DuckDB (CSV, Parquet, a relation) and Spark give the same exact counts and sums, bounded per user
with the same random source included, and apply the same invalid-weight policy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _spark import spark_frame

from dptree.data.histograms import leaf_sums
from dptree.errors import DataError
from dptree.rangetree.sums_release import plan_range_sums


def _frame(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    w = np.round(rng.normal(20, 30, n), 3)  # negatives, values beyond the bounds, halves of the grid
    w[:5] = [0.25, 0.75, -0.25, 1e9, -1e9]
    return pd.DataFrame({"x": rng.uniform(-5, 105, n), "w": w, "u": rng.integers(0, 400, n)})


PLAN = plan_range_sums(lower=0.0, upper=100.0, width=2.5, epsilon=1.0, weight_bounds=(-10, 50),
                       weight_resolution=0.5, max_contributions=3)


def _inputs(df: pd.DataFrame, tmp_path) -> dict:  # type: ignore[no-untyped-def]
    import duckdb

    csv, parquet = tmp_path / "d.csv", tmp_path / "d.parquet"
    df.to_csv(csv, index=False)
    df.to_parquet(parquet)
    return {"csv": str(csv), "parquet": str(parquet), "relation": duckdb.from_df(df)}  # the default connection stays open


@pytest.mark.parametrize("bounded", [False, True])
def test_numpy_and_duckdb_agree(tmp_path, bounded: bool) -> None:  # type: ignore[no-untyped-def]
    df = _frame()
    kw = {"user_id": "u", "rng": 5} if bounded else {}
    ref = leaf_sums(df, PLAN, PLAN.grid, column="x", weights="w", **kw)
    arrays = leaf_sums(df["x"].to_numpy(), PLAN, PLAN.grid, weights=df["w"].to_numpy(),
                       **({"user_id": df["u"].to_numpy(), "rng": 5} if bounded else {}))
    assert all(np.array_equal(a, b) for a, b in zip(ref, arrays))
    g = PLAN.grid
    if not bounded:  # the reference itself, by hand
        leaves = PLAN.domain.to_leaves(df["x"].to_numpy())
        units = np.clip(np.floor(df["w"].to_numpy() / 0.5 + 0.5), g.lower_units, g.upper_units).astype(np.int64)
        assert np.array_equal(ref[1][:PLAN.domain.size], np.bincount(leaves, weights=units,
                                                                      minlength=PLAN.domain.size).astype(np.int64))
    for name, data in _inputs(df, tmp_path).items():
        got = leaf_sums(data, PLAN, PLAN.grid, column="x", weights="w", **kw)
        assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1]), name


@pytest.mark.parametrize("bounded", [False, True])
def test_spark_agrees(bounded: bool) -> None:
    df = _frame(800)
    kw = {"user_id": "u", "rng": 7} if bounded else {}
    ref = leaf_sums(df, PLAN, PLAN.grid, column="x", weights="w", **kw)
    sdf = spark_frame({c: df[c].to_numpy() for c in df.columns})
    got = leaf_sums(sdf, PLAN, PLAN.grid, column="x", weights="w", **kw)
    assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])


def test_invalid_weights_are_refused_or_dropped_alike(tmp_path) -> None:  # type: ignore[no-untyped-def]
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0], "w": [1.0, np.nan, 2.0], "u": [1, 2, 3]})
    inputs = {"pandas": df, **_inputs(df, tmp_path), "spark": spark_frame({c: df[c].to_numpy() for c in df.columns})}
    for name, data in inputs.items():
        with pytest.raises(DataError, match="missing"):
            leaf_sums(data, PLAN, PLAN.grid, column="x", weights="w")
        h, s = leaf_sums(data, PLAN, PLAN.grid, column="x", weights="w", on_invalid="drop")
        assert h.sum() == 2 and s.sum() == 6, name  # (1 + 2) / 0.5 units
