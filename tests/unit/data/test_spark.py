"""Spark backend: histograms equal numpy's on every domain kind; clear errors (Spark runs in local[2])."""

from __future__ import annotations

import builtins
import datetime as dt
import sys
from typing import Any

import numpy as np
import pytest

from dptree.data.domain import coerce_values
from dptree.data.engines.base import Bucket
from dptree.data.engines.spark import SparkEngine
from dptree.data.histograms import leaf_histogram
from dptree.errors import DataError, InputFormatError, InvalidParameterError, MissingDependencyError
from dptree.rangetree.release import plan_range_tree


def _numpy_hist(values: Any, plan: Any, missing: str = "error") -> np.ndarray:
    vals = coerce_values(values, plan.domain, missing=missing)
    return np.bincount(plan.domain.to_leaves(vals), minlength=plan.layout.padded_size)


def test_missing_pyspark_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def fake(name: str, *args: Any, **kw: Any) -> Any:
        if name == "pyspark" or name.startswith("pyspark."):
            raise ImportError("No module named 'pyspark'")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", fake)
    # importlib.import_module (the guard) does not call __import__ for an already imported module:
    # hide pyspark from sys.modules too (None makes every import of it fail), as on a plain install
    for name in [m for m in sys.modules if m == "pyspark" or m.startswith("pyspark.")] + ["pyspark", "pyspark.sql"]:
        monkeypatch.setitem(sys.modules, name, None)
    plan = plan_range_tree(lower=0, upper=9, epsilon=1.0)
    with pytest.raises(MissingDependencyError, match=r"pip install 'dptree\[spark\]'"):
        SparkEngine().counts(object(), [Bucket("v", plan.domain)])


def test_not_a_spark_dataframe() -> None:
    pytest.importorskip("pyspark", reason='pyspark is not installed: pip install "dptree[spark]"')
    plan = plan_range_tree(lower=0, upper=9, epsilon=1.0)
    with pytest.raises(DataError, match="expected a PySpark DataFrame"):
        SparkEngine().counts([1, 2, 3], [Bucket("v", plan.domain)])


@pytest.mark.slow
def test_histograms_match_numpy_on_every_domain_kind() -> None:
    from _spark import spark_frame, spark_session

    gen = np.random.default_rng(0)
    ints = gen.integers(-20, 120, 2000)
    floats = np.round(gen.normal(50, 30, 2000), 3)
    floats[::97] = np.nan
    df = spark_frame({"i": ints, "f": floats})
    p_int = plan_range_tree(lower=0, upper=99, epsilon=1.0)
    np.testing.assert_array_equal(leaf_histogram(df, p_int, column="i"), _numpy_hist(ints, p_int))
    p_w = plan_range_tree(lower=0, upper=99, width=7, epsilon=1.0)
    np.testing.assert_array_equal(leaf_histogram(df, p_w, column="i"), _numpy_hist(ints, p_w))
    p_f = plan_range_tree(lower=0.0, upper=100.0, width=0.5, epsilon=1.0)
    np.testing.assert_array_equal(leaf_histogram(df, p_f, column="f", on_invalid="drop"),
                                  _numpy_hist(floats, p_f, missing="drop"))
    # a float column on an integer domain: whole numbers are binned; NaN and fractions are refused,
    # or dropped under the declared policy, as in memory
    whole = np.floor(floats)
    wdf = spark_frame({"w": whole})
    np.testing.assert_array_equal(leaf_histogram(wdf, p_int, column="w", on_invalid="drop"),
                                  _numpy_hist(whole, p_int, missing="drop"))
    np.testing.assert_array_equal(leaf_histogram(df, p_int, column="f", on_invalid="drop"),
                                  _numpy_hist(floats, p_int, missing="drop"))
    with pytest.raises(DataError, match="width"):
        leaf_histogram(df.where("f IS NOT NULL AND NOT isnan(f)"), p_int, column="f")
    with pytest.raises(DataError, match="contains missing values"):
        leaf_histogram(df, p_f, column="f")
    # dates
    spark = spark_session()
    days = [dt.date(2024, 1, 1) + dt.timedelta(days=int(d)) for d in gen.integers(-3, 70, 300)]
    ddf = spark.createDataFrame([(d,) for d in days], "d date")
    p_d = plan_range_tree(lower="2024-01-01", upper="2024-03-01", epsilon=1.0)
    np.testing.assert_array_equal(leaf_histogram(ddf, p_d, column="d"),
                                  _numpy_hist(np.array(days, dtype="datetime64[ns]"), p_d))
    # timestamps, wall-clock (NTZ) and instants, under a session time zone that is not UTC
    stamps = np.datetime64("2024-01-01T00:00") + gen.integers(-3 * 24, 70 * 24, 300).astype("timedelta64[h]")
    wall = [s.astype("datetime64[us]").item() for s in stamps]
    instants = [w.replace(tzinfo=dt.timezone.utc) for w in wall]  # the same times as UTC instants
    tdf = spark.createDataFrame(list(zip(wall, instants)), "t timestamp_ntz, i timestamp")
    p_h = plan_range_tree(lower="2024-01-01", upper="2024-03-01", width=dt.timedelta(hours=6), epsilon=1.0)
    expected = _numpy_hist(stamps.astype("datetime64[ns]"), p_h)
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        np.testing.assert_array_equal(leaf_histogram(tdf, p_h, column="t"), expected)
        np.testing.assert_array_equal(leaf_histogram(tdf, p_h, column="i"), expected)
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


@pytest.mark.slow
def test_spark_errors() -> None:
    from _spark import spark_frame, spark_session

    df = spark_frame({"v": [1, 2, 3], "u": [1.0, np.nan, 2.0], "s": ["a", "b", "c"]})
    plan = plan_range_tree(lower=0, upper=9, epsilon=1.0, max_contributions=2)
    with pytest.raises(InputFormatError, match="column 'w' not found"):
        leaf_histogram(df, plan, column="w")
    with pytest.raises(DataError, match="type StringType; a numeric domain needs a numeric column"):
        leaf_histogram(df, plan, column="s")
    p_d = plan_range_tree(lower="2024-01-01", upper="2024-03-01", epsilon=1.0)
    with pytest.raises(DataError, match="the domain is dates"):
        leaf_histogram(df, p_d, column="v")
    with pytest.raises(DataError, match="user column 'u' contains missing"):
        leaf_histogram(df, plan, column="v", user_id="u")
    with pytest.raises(InvalidParameterError, match="exceeds the plan"):
        leaf_histogram(df, plan, column="v", user_id="s", max_contributions=5)
    inf = spark_session().createDataFrame([(1.0,), (float("inf"),)], "v double")
    with pytest.raises(DataError, match="inf"):
        leaf_histogram(inf, plan, column="v")


def test_hierarchy_counts_on_a_spark_dataframe() -> None:
    """hierarchy_counts accepts a Spark DataFrame: per-path totals are aggregated in Spark and the
    release equals the one made from the same rows in pandas (same seed)."""
    import pandas as pd
    from _spark import spark_frame

    import dptree

    h = dptree.Hierarchy.from_paths([("US", "CA"), ("US", "NY"), ("FR", "IDF")])
    country = ["US", "US", "US", "FR", "US"]
    state = ["CA", "CA", "NY", "IDF", "CA"]
    sdf = spark_frame({"country": country, "state": state})
    pdf = pd.DataFrame({"country": country, "state": state})
    a = dptree.hierarchy_counts(sdf, h, epsilon=1.0, levels=["country", "state"], rng=3)
    b = dptree.hierarchy_counts(pdf, h, epsilon=1.0, levels=["country", "state"], rng=3)
    assert a.measurements["y"].tolist() == b.measurements["y"].tolist()
    c = dptree.hierarchy_counts(sdf, h, epsilon=100.0, levels=["country", "state"], rng=4)
    assert round(c.count("US/CA")) == 3 and round(c.count("FR")) == 1
    w = spark_frame({"country": ["US", "FR"], "state": ["NY", "IDF"], "n": [4, 2]})
    d = dptree.hierarchy_counts(w, h, epsilon=100.0, levels=["country", "state"], weight="n", rng=5)
    assert round(d.count("US/NY")) == 4 and round(d.count("")) == 6
    with pytest.raises(dptree.DPTreeError):
        dptree.hierarchy_counts(spark_frame({"country": ["US"], "state": ["CA"], "n": [-1]}), h, epsilon=1.0,
                                levels=["country", "state"], weight="n")


def test_dates_beyond_2262_are_clamped_not_wrapped_in_spark() -> None:
    """Epoch nanoseconds of 9999-12-31 overflow int64; with ANSI off Spark would wrap them into the
    first bucket. Clamped in the column's own unit (days, microseconds), like numpy."""
    pytest.importorskip("pyspark", reason='pyspark is not installed: pip install "dptree[spark]"')
    from _spark import spark_session

    spark = spark_session()
    plan = plan_range_tree(lower="2024-01-01", upper="2024-12-31", epsilon=1.0)
    rows = [(dt.date(9999, 12, 31), dt.datetime(9999, 12, 31, 5)), (dt.date(9999, 12, 31), dt.datetime(9999, 12, 31)),
            (dt.date(1000, 1, 1), dt.datetime(1000, 1, 1))]
    df = spark.createDataFrame(rows, "d date, t timestamp")
    previous = spark.conf.get("spark.sql.ansi.enabled")
    try:
        for ansi in ("false", "true"):
            spark.conf.set("spark.sql.ansi.enabled", ansi)
            for col in ("d", "t"):
                hist = leaf_histogram(df, plan, column=col)
                assert hist[0] == 1 and hist[plan.domain.size - 1] == 2, (ansi, col)
                assert np.array_equal(hist, _numpy_hist([r[0] for r in rows], plan))
    finally:
        spark.conf.set("spark.sql.ansi.enabled", previous)


def test_float_data_with_integer_bounds_is_refused_in_spark() -> None:
    pytest.importorskip("pyspark", reason='pyspark is not installed: pip install "dptree[spark]"')
    from _spark import spark_session

    plan = plan_range_tree(lower=0, upper=2000, epsilon=1.0)
    df = spark_session().createDataFrame([(1.2,), (1000.9,)], "v double")
    with pytest.raises(DataError, match="width"):
        leaf_histogram(df, plan, column="v")
    whole = spark_session().createDataFrame([(1.0,), (1000.0,)], "v double")
    assert leaf_histogram(whole, plan, column="v").sum() == 2
