"""The one engine seam: the dispatcher picks the engine, every engine implements the interface, and
all engines agree (plain, bounded, grouped histograms and hierarchy path counts)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import dptree
from dptree.data import histograms
from dptree.data.engines import DuckDBEngine, Engine, NumpyEngine, SparkEngine
from dptree.data.engines.base import COUNT, Bucket, GroupOf, Sample, UserRecords, Value
from dptree.data.histograms import engine_for, leaf_histogram, path_counts
from dptree.data.inputs import to_numpy
from dptree.errors import DataError, InputFormatError, InvalidParameterError, TotalTooLargeError
from dptree.hierarchy import Hierarchy, leaf_counts
from dptree.noise import make_source
from dptree.rangetree.api import range_tree_by
from dptree.rangetree.release import plan_range_tree

GROUPS = ["a", "b", "c"]


@pytest.fixture
def df() -> pd.DataFrame:
    gen = np.random.default_rng(1)
    n = 1500
    return pd.DataFrame({"v": gen.integers(-3, 60, n), "u": gen.integers(0, 150, n), "g": gen.choice(["a", "b"], n)})


def test_every_engine_implements_the_one_narrow_interface() -> None:
    abstract = {n for n, f in vars(Engine).items() if getattr(f, "__isabstractmethod__", False)}
    # Engine.counts dispatches the key shapes to these
    assert abstract == {"_label_counts", "_key_counts", "_partition_counts", "_user_counts"}
    public = {n for n, f in vars(Engine).items() if callable(f) and not n.startswith("_")}
    assert public == {"counts", "ordered_counts"}
    for engine in (NumpyEngine, DuckDBEngine, SparkEngine):
        assert issubclass(engine, Engine) and not inspect.isabstract(engine)
        assert {n for n, f in vars(engine).items() if callable(f) and not n.startswith("_")} <= public, engine
        for name in public:  # the same parameters as the interface
            assert inspect.signature(getattr(engine, name)).parameters.keys() == \
                inspect.signature(getattr(Engine, name)).parameters.keys(), (engine, name)


def test_the_engines_count_the_same_keys(tmp_path: Path, df: pd.DataFrame) -> None:
    """The one primitive itself: every key shape gives the same counts in memory and in DuckDB
    (sampled per user from the same source), and other shapes are refused."""
    plan = plan_range_tree(lower=0, upper=49, epsilon=1.0)
    df.to_parquet(tmp_path / "d.parquet")
    group = GroupOf("g", ["a", "b"])
    shapes = [([Bucket("v", plan.domain)], None), ([group, Bucket("v", plan.domain)], None),
              ([group, Bucket("v", plan.domain)], 2), ([Bucket("v", plan.domain)], 1), ([Value("v")], None),
              ([group, Value("v")], None), ([Value("v", distinct=False)], None),
              ([UserRecords("u", 4), Bucket("v", plan.domain)], None),
              ([group, UserRecords("u", 40), Bucket("v", plan.domain)], None)]
    for keys, k in shapes:
        got = [engine.counts(data, keys, sample=Sample("u", k, make_source(3)) if k else None)
               for engine, data in ((NumpyEngine(), df), (DuckDBEngine(), str(tmp_path / "d.parquet")))]
        order = [np.lexsort(c.keys[::-1]) for c in got]
        for (a, b), (oa, ob) in zip([(got[0], got[1])], [order]):
            for ka, kb in zip(a.keys, b.keys):
                np.testing.assert_array_equal(np.asarray(ka)[oa], np.asarray(kb)[ob], err_msg=str(keys))
            np.testing.assert_array_equal(a.n[oa], b.n[ob], err_msg=str(keys))
    with pytest.raises(InvalidParameterError, match="internal error"):
        NumpyEngine().counts(df, [Bucket("v", plan.domain), group])
    with pytest.raises(InvalidParameterError, match="internal error"):
        NumpyEngine().counts(df, [Value("v")], sample=Sample("u", 1, make_source(3)))
    with pytest.raises(InvalidParameterError, match="internal error"):
        DuckDBEngine().counts(str(tmp_path / "d.parquet"), [group, Value("v", distinct=False)])


def test_the_dispatcher_picks_the_engine_by_input(tmp_path: Path, df: pd.DataFrame) -> None:
    for data in (df["v"].to_numpy(), [1, 2], df, df["v"], pl.from_pandas(df), pa.Table.from_pandas(df)):
        assert type(engine_for(data)) is NumpyEngine
    for data in (str(tmp_path / "d.csv"), tmp_path / "d.parquet", "-", duckdb.from_df(df)):
        assert type(engine_for(data)) is DuckDBEngine
    assert engine_for("x.csv", fmt="csv").fmt == "csv"
    with pytest.raises(InvalidParameterError, match="fmt applies to files only"):
        engine_for(duckdb.from_df(df), fmt="csv")


def test_a_duckdb_relation_is_counted_in_duckdb_like_the_array(df: pd.DataFrame) -> None:
    plan = plan_range_tree(lower=0, upper=49, epsilon=1.0, max_contributions=2)
    rel = duckdb.from_df(df)
    np.testing.assert_array_equal(leaf_histogram(rel, plan, column="v"), leaf_histogram(df, plan, column="v"))
    np.testing.assert_array_equal(leaf_histogram(rel, plan, column="v", user_id="u", rng=5),
                                  leaf_histogram(df["v"], plan, user_id=df["u"], rng=5))
    kw: dict[str, Any] = dict(by="g", groups=GROUPS, user_id="u", rng=6)
    np.testing.assert_array_equal(leaf_histogram(rel, plan, column="v", **kw), leaf_histogram(df, plan, column="v", **kw))
    with pytest.raises(InvalidParameterError, match="for a DuckDB relation, pass column="):
        leaf_histogram(rel, plan)
    with pytest.raises(InputFormatError, match="column 'w' not found"):
        leaf_histogram(rel, plan, column="w")
    empty = duckdb.sql("SELECT 1 AS v WHERE false")
    assert leaf_histogram(empty, plan, column="v").sum() == 0


def test_one_random_stream_for_bounding_and_noise(df: pd.DataFrame, tmp_path: Path) -> None:
    """range_tree draws the bounding and the noise from one source, whatever the engine."""
    path = tmp_path / "d.parquet"
    df.to_parquet(path)
    kw: dict[str, Any] = dict(lower=0, upper=49, epsilon=1.0, max_contributions=2, rng=9)
    ref = dptree.range_tree(df["v"], user_id=df["u"], **kw)
    for data in (df, path, duckdb.from_df(df)):
        got = dptree.range_tree(data, column="v", user_id="u", **kw)
        for m, n in zip(got.measurements, ref.measurements):
            assert (m is None and n is None) or np.array_equal(m, n)


# --------------------------------------------------------------------------- hierarchy path counts

H = Hierarchy.from_paths(["US/CA", "US/NY", "FR/IDF", "FR/007"], levels=["country", "region"])


def _rows() -> pd.DataFrame:
    return pd.DataFrame({"country": ["US", "US", "FR", "FR", "US"], "region": ["CA", "CA", "007", "IDF", "NY"],
                         "w": [3, 4, 5, 1, 2]})


def _sorted(frame: pd.DataFrame, keys: list[str]) -> list[tuple[Any, ...]]:
    return sorted(tuple(str(v) for v in r) for r in frame[keys + [COUNT]].itertuples(index=False))


@pytest.mark.parametrize("weight", [None, "w"])
def test_path_counts_agree_across_engines(tmp_path: Path, weight: str | None) -> None:
    rows = _rows()
    keys = ["country", "region"]
    rows.to_csv(tmp_path / "d.csv", index=False)
    rows.to_parquet(tmp_path / "d.parquet")
    ref = path_counts(rows, keys, weight=weight)
    assert ref[COUNT].dtype == np.int64
    for data in (pl.from_pandas(rows), pa.Table.from_pandas(rows), str(tmp_path / "d.csv"), tmp_path / "d.parquet",
                 duckdb.from_df(rows)):
        assert _sorted(path_counts(data, keys, weight=weight), keys) == _sorted(ref, keys), type(data)
    # a CSV is read as text: the label "007" stays "007"
    x = leaf_counts(str(tmp_path / "d.csv"), H, weight=weight)
    np.testing.assert_array_equal(np.concatenate(x), np.concatenate(leaf_counts(rows, H, weight=weight)))
    assert dptree.hierarchy_counts(tmp_path / "d.parquet", H, epsilon=1.0, weight=weight, rng=1).privacy


def test_path_counts_refuse_bad_weights_by_kind_only(tmp_path: Path) -> None:
    keys = ["country", "region"]
    for values, problem in (([1, -7], "negative"), ([1, 2.5], "non-integer"), ([1, None], "missing")):
        rows = pd.DataFrame({"country": ["US", "US"], "region": ["CA", "NY"], "w": values})
        rows.to_parquet(tmp_path / "w.parquet")
        for data in (rows, str(tmp_path / "w.parquet"), duckdb.from_df(rows)):
            with pytest.raises(DataError, match=problem) as info:
                path_counts(data, keys, weight="w")
            assert "7" not in str(info.value) and "2.5" not in str(info.value)
    big = pd.DataFrame({"country": ["US", "FR"], "region": ["CA", "IDF"], "w": [2**60, 2**60]})
    big.to_parquet(tmp_path / "big.parquet")
    for data in (big, str(tmp_path / "big.parquet"), duckdb.from_df(big)):
        with pytest.raises(TotalTooLargeError):
            path_counts(data, keys, weight="w")
    with pytest.raises(InputFormatError, match="no column"):
        path_counts(str(tmp_path / "big.parquet"), ["country", "state"])
    with pytest.raises(InputFormatError, match="input file not found"):
        path_counts(str(tmp_path / "nope.csv"), keys)


# --------------------------------------------------------------------------- declared constraints


@pytest.mark.parametrize("func", [dptree.range_tree, range_tree_by, leaf_histogram, to_numpy])
def test_public_functions_declare_their_constraints(func: Any) -> None:
    assert func.constraints  # read by the fuzz tests
    assert set(func.constraints) <= set(inspect.signature(func).parameters)


def test_declared_constraints_refuse_before_any_data_is_read(df: pd.DataFrame) -> None:
    plan = plan_range_tree(lower=0, upper=49, epsilon=1.0)
    calls = {
        leaf_histogram: lambda **kw: leaf_histogram("never-read.csv", plan, **{"column": "v", **kw}),
        dptree.range_tree: lambda **kw: dptree.range_tree("never-read.csv", lower=0, upper=9, epsilon=1.0,
                                                          **{"column": "v", **kw}),
        range_tree_by: lambda **kw: range_tree_by("never-read.csv", by="g", groups=["a"], lower=0, upper=9,
                                                  epsilon=1.0, **{"column": "v", **kw}),
    }
    for func, call in calls.items():
        for name, options in func.constraints.items():  # type: ignore[attr-defined]
            for c in options:
                for bad in ([] if c is None else c.invalid_examples()):
                    if any(o is None and bad is None or o is not None and o.is_satisfied_by(bad) for o in options):
                        continue
                    with pytest.raises(InvalidParameterError, match=name):
                        call(**{name: bad})
    with pytest.raises(InvalidParameterError, match="on_invalid must be one of 'error', 'drop'; got 'skip'"):
        leaf_histogram(df, plan, column="v", on_invalid="skip")
    with pytest.raises(InvalidParameterError, match="column must be None or a column name"):
        to_numpy(df, column=1)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="rng must be"):
        dptree.range_tree([1, 2], lower=0, upper=9, epsilon=1.0, rng=-1)
    src = make_source(3)
    assert histograms.leaf_histogram(df, plan, column="v", rng=src).sum() == len(df)


@pytest.mark.slow
def test_spark_path_counts_agree_with_pandas() -> None:
    from _spark import spark_frame

    rows = _rows()
    sdf = spark_frame({c: rows[c].to_numpy(dtype=object if c != "w" else np.int64) for c in rows.columns})
    keys = ["country", "region"]
    for weight in (None, "w"):
        assert _sorted(path_counts(sdf, keys, weight=weight), keys) == _sorted(path_counts(rows, keys, weight=weight),
                                                                              keys)
    assert type(engine_for(sdf)) is SparkEngine


def test_read_column_gives_none_for_null_integers_and_nan_for_null_floats(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A masked integer column once came back with '?' in place of NULL (numpy's default fill)."""
    from dptree.data.engines.duckdb import read_column

    (tmp_path / "i.csv").write_text("v\n5\n7\n\n")
    got = read_column(str(tmp_path / "i.csv"), "v")
    assert got.tolist() == [5, 7, None]
    (tmp_path / "f.csv").write_text("v\n5.5\n\n")
    f = read_column(str(tmp_path / "f.csv"), "v")
    assert f[0] == 5.5 and np.isnan(f[1])
