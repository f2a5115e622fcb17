"""dptree.data.inputs.to_numpy: every supported container, zero-copy where possible, clear errors."""

from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import dptree
from dptree.data.domain import coerce_values, make_domain
from dptree.data.inputs import to_numpy
from dptree.errors import DataError

pl = pytest.importorskip("polars", reason="polars is optional: pip install polars")


def _same(a: np.ndarray, expected: list) -> None:
    exp = np.asarray(expected, dtype=a.dtype if a.dtype.kind != "O" else object)
    if a.dtype.kind == "f":
        np.testing.assert_array_equal(a, np.asarray(expected, dtype=float))
    else:
        assert a.tolist() == exp.tolist()


def test_numpy_is_returned_as_is_and_masked_arrays_fill() -> None:
    x = np.arange(10)
    assert to_numpy(x) is x
    m = np.ma.masked_array([1, 2, 3], mask=[False, True, False])
    _same(to_numpy(m), [1.0, np.nan, 3.0])
    mf = np.ma.masked_array([1.5, 2.5], mask=[True, False])
    _same(to_numpy(mf), [np.nan, 2.5])


def test_lists_and_tuples() -> None:
    _same(to_numpy([1, 2, 3]), [1, 2, 3])
    assert to_numpy((1.5, None)).tolist() == [1.5, None]
    assert to_numpy(range(3)).tolist() == [0, 1, 2]


def test_pandas_zero_copy_and_nullable() -> None:
    s = pd.Series(np.arange(1000, dtype=np.int64))
    assert np.shares_memory(to_numpy(s), s.to_numpy())
    _same(to_numpy(pd.Series([1, None, 3], dtype="Int64")), [1.0, np.nan, 3.0])
    _same(to_numpy(pd.Series([1, 2], dtype="Int64")), [1, 2])
    assert to_numpy(pd.Series([1, 2], dtype="Int64")).dtype == np.int64
    _same(to_numpy(pd.Series([1.5, None], dtype="Float64")), [1.5, np.nan])
    assert to_numpy(pd.Series(["a", None], dtype="string")).tolist() == ["a", None]
    _same(to_numpy(pd.Series([3, 1, 3], dtype="category")), [3, 1, 3])
    _same(to_numpy(pd.Series([1, None], dtype="int64[pyarrow]")), [1.0, np.nan])
    big = to_numpy(pd.Series([2**60, None], dtype="Int64"))  # not exact as float: object with None
    assert big.tolist() == [2**60, None]
    dates = to_numpy(pd.Series(pd.to_datetime(["2024-01-01", None])))
    assert dates.dtype.kind == "M" and np.isnat(dates[1])
    tz = to_numpy(pd.Series(pd.to_datetime(["2024-01-01 01:00"]).tz_localize("Europe/Paris")))
    assert tz[0] == np.datetime64("2024-01-01T00:00")


def test_pandas_dataframe_columns() -> None:
    df = pd.DataFrame({"age": [30, 40], "user": ["a", "b"]})
    _same(to_numpy(df, column="age"), [30, 40])
    with pytest.raises(DataError, match="pass column="):
        to_numpy(df)
    with pytest.raises(DataError, match="column 'height' not found"):
        to_numpy(df, column="height")
    _same(to_numpy(df[["age"]]), [30, 40])  # one column: no name needed


def test_a_duplicated_column_name_is_refused_by_name() -> None:
    df = pd.DataFrame([[1, 2, 5], [3, 4, 6]], columns=["a", "a", "b"])
    tbl = pa.Table.from_arrays([pa.array([1, 3]), pa.array([2, 4]), pa.array([5, 6])], names=["a", "a", "b"])
    for data, what in ((df, "DataFrame"), (tbl, "Arrow table")):
        with pytest.raises(DataError, match=f"the {what} has more than one column named 'a'"):
            to_numpy(data, column="a")
        _same(to_numpy(data, column="b"), [5, 6])  # another column of the same table reads as before
    with pytest.raises(DataError, match="more than one column named 'a'"):
        dptree.range_tree(df, column="b", user_id="a", lower=0, upper=10, epsilon=1.0)


def test_polars() -> None:
    s = pl.Series("x", np.arange(1000, dtype=np.int64))
    out = to_numpy(s)
    _same(out[:3], [0, 1, 2])
    assert np.shares_memory(out, s.to_numpy())  # polars hands out a view of its buffer
    _same(to_numpy(pl.Series([1, None, 3])), [1.0, np.nan, 3.0])
    assert to_numpy(pl.Series(["x", None])).tolist() == ["x", None]
    df = pl.DataFrame({"a": [1, 2], "b": [3.5, 4.5]})
    _same(to_numpy(df, column="b"), [3.5, 4.5])
    with pytest.raises(DataError, match="pass column="):
        to_numpy(df)
    with pytest.raises(DataError, match="collect"):
        to_numpy(df.lazy())


def test_arrow_arrays_and_tables() -> None:
    a = pa.array(np.arange(1000, dtype=np.int64))
    out = to_numpy(a)
    assert np.shares_memory(out, a.to_numpy())  # zero-copy
    _same(to_numpy(pa.array([1, None])), [1.0, np.nan])
    assert to_numpy(pa.array([2**60, None])).tolist() == [2**60, None]
    _same(to_numpy(pa.chunked_array([[1, 2], [3]])), [1, 2, 3])
    _same(to_numpy(pa.table({"v": [1.5, 2.5], "w": [1, 2]}), column="v"), [1.5, 2.5])
    _same(to_numpy(pa.record_batch({"v": [7, 8]})), [7, 8])
    assert to_numpy(pa.array(["a", "b", "a"]).dictionary_encode()).tolist() == ["a", "b", "a"]
    d = to_numpy(pa.array([dt.date(2024, 1, 2), None]))
    assert d.dtype.kind == "M" and np.isnat(d[1])
    with pytest.raises(DataError, match="pass column="):
        to_numpy(pa.table({"v": [1], "w": [2]}))


def test_duckdb_relations() -> None:
    rel = duckdb.sql("SELECT range AS v, range * 2 AS w FROM range(5)")
    _same(to_numpy(rel, column="w"), [0, 2, 4, 6, 8])
    _same(to_numpy(duckdb.sql("SELECT 1 AS a UNION ALL SELECT NULL ORDER BY a NULLS LAST")), [1.0, np.nan])
    with pytest.raises(DataError, match="pass column="):
        to_numpy(rel)


@pytest.mark.parametrize("bad, match", [
    ("12345", "not a string"),
    (np.zeros((2, 2)), "one-dimensional"),
    ([[1, 2], [3]], "one-dimensional, got nested lists"),
    ([1, [2, 3]], "one-dimensional, got nested lists"),
    (np.float64(3.0), "unsupported input type|scalar"),
    ({"a": [1]}, "not a dict"),
    (object(), "unsupported input type"),
])
def test_bad_inputs(bad: object, match: str) -> None:
    with pytest.raises(DataError, match=match):
        to_numpy(bad)


def test_all_inputs_reach_the_same_leaves() -> None:
    values = [3, 7, 7, 1, 9]
    dom = make_domain(0, 9)
    ref = dom.to_leaves(coerce_values(np.asarray(values), dom))
    containers = [values, np.asarray(values), pd.Series(values, dtype="Int64"), pl.Series(values), pa.array(values),
                  pa.table({"v": values}), duckdb.sql("SELECT unnest([3, 7, 7, 1, 9]) AS v")]
    for c in containers:
        got = dom.to_leaves(coerce_values(to_numpy(c), dom))
        np.testing.assert_array_equal(got, ref)
    with pytest.raises(DataError, match="NaN"):
        coerce_values(to_numpy(pd.Series([1, None], dtype="Int64")), dom)
