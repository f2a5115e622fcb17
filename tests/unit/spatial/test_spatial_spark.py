"""A 2-D range tree of a Spark DataFrame counts the cells numpy and DuckDB count (skipped without
pyspark or Java, as the other Spark tests)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dptree
from dptree.spatial.counting import grid_histogram


def test_spark_counts_the_cells_numpy_counts() -> None:
    from _spark import spark_frame

    rng = np.random.default_rng(8)
    x, y = rng.normal(5, 3, 300), rng.uniform(-2, 6, 300)
    x[:3] = np.nan
    plan = dptree.plan_range_tree_2d(lower=(0.0, -1.0), upper=(10.0, 4.0), width=(0.5, 0.25), epsilon=1.0)
    frame = spark_frame({"lon": x, "lat": y})
    want = grid_histogram(pd.DataFrame({"lon": x, "lat": y}), plan, ("lon", "lat"), on_invalid="drop")
    assert np.array_equal(grid_histogram(frame, plan, ("lon", "lat"), on_invalid="drop"), want)
    with pytest.raises(dptree.DataError):
        grid_histogram(frame, plan, ("lon", "lat"))
    ints = dptree.plan_range_tree_2d(lower=(0, 0), upper=(9, 9), epsilon=1.0)
    xi, yi = rng.integers(-3, 14, 200), rng.integers(0, 10, 200)
    assert np.array_equal(grid_histogram(spark_frame({"a": xi, "b": yi}), ints, ("a", "b")),
                          grid_histogram(pd.DataFrame({"a": xi, "b": yi}), ints, ("a", "b")))
