"""Object columns (Python lists, pandas object Series) are read by value: Decimal and Fraction are
numbers (never truncated to integers), pandas' NA and a Decimal NaN are missing values, and a
float16 column reaches the integer domain without numpy's overflow warning."""

from __future__ import annotations

import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dptree
from dptree.errors import DataError


def test_decimal_and_fraction_values_are_bucketed_by_value() -> None:
    # np.array(..., dtype=int64) truncated them: every 1.5 was counted in the bucket of 1.0
    rel = dptree.range_tree([Decimal("1.5")] * 1000, lower=0.0, upper=10.0, width=0.5, epsilon=1.0, rng=1)
    same = dptree.range_tree([1.5] * 1000, lower=0.0, upper=10.0, width=0.5, epsilon=1.0, rng=1)
    assert np.array_equal(rel.leaf_estimates, same.leaf_estimates)
    assert rel.count(1.5, 1.5) > 900 and abs(rel.count(1.0, 1.0)) < 100
    with pytest.raises(DataError, match="non-integers"):  # 3/2 on an integer domain is refused, not floored
        dptree.range_tree([Fraction(3, 2)] * 10, lower=0, upper=10, epsilon=1.0, rng=1)
    whole = dptree.range_tree([Fraction(2, 1)] * 10 + [Decimal(3)], lower=0, upper=10, epsilon=1.0, rng=1)
    assert np.array_equal(whole.leaf_estimates,
                          dptree.range_tree([2] * 10 + [3], lower=0, upper=10, epsilon=1.0, rng=1).leaf_estimates)


@pytest.mark.parametrize("na", [pd.NA, Decimal("NaN"), None, float("nan")])
def test_missing_entries_of_an_object_column_follow_the_declared_policy(na: object) -> None:
    s = pd.Series([1, na, 3] * 100, dtype=object)
    kept = pd.Series([1, 3] * 100)
    with pytest.raises(DataError, match="missing values"):
        dptree.range_tree(s, lower=0, upper=10, epsilon=1.0, rng=1)
    assert np.array_equal(dptree.range_tree(s, lower=0, upper=10, epsilon=1.0, on_invalid="drop", rng=1).leaf_estimates,
                          dptree.range_tree(kept, lower=0, upper=10, epsilon=1.0, rng=1).leaf_estimates)
    assert (dptree.median(s, lower=0, upper=10, epsilon=1.0, on_invalid="drop", rng=1).value
            == dptree.median(kept, lower=0, upper=10, epsilon=1.0, rng=1).value)
    assert (dptree.sparse_range_tree(s, lower=0, upper=10, epsilon=1.0, on_invalid="drop", rng=1).total()
            == dptree.sparse_range_tree(kept, lower=0, upper=10, epsilon=1.0, rng=1).total())


def test_a_float16_column_on_an_integer_domain_warns_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rel = dptree.range_tree(np.arange(100, dtype=np.float16), lower=0, upper=100, epsilon=1.0, rng=1)
    assert np.array_equal(rel.leaf_estimates,
                          dptree.range_tree(np.arange(100), lower=0, upper=100, epsilon=1.0, rng=1).leaf_estimates)
    with warnings.catch_warnings():  # the sparse tree and the median read it too (they warned until Dec 7)
        warnings.simplefilter("error")
        sparse = dptree.sparse_range_tree(np.arange(100, dtype=np.float16), lower=0, upper=100, epsilon=1.0, rng=1)
        med = dptree.median(np.arange(100, dtype=np.float16), lower=0, upper=100, epsilon=1.0, rng=1).value
    assert sparse.total() == dptree.sparse_range_tree(np.arange(100), lower=0, upper=100, epsilon=1.0, rng=1).total()
    assert med == dptree.median(np.arange(100), lower=0, upper=100, epsilon=1.0, rng=1).value


@pytest.mark.parametrize("extra", [[], [3.5], [2**63], [2**70]])
def test_an_untyped_list_never_sets_a_domain_from_its_values(extra: list[object]) -> None:
    """numpy infers a list's type from its values: one record of 3.5 or 2^63 turned an integer domain
    into a float one (and 2^70 into an error), released without noise. A list is refused where the
    domain comes from the type, whatever it holds; a typed array or declared bounds are taken."""
    from dptree.errors import InvalidParameterError

    values = [1, 2, 3] * 100 + extra
    with pytest.raises(InvalidParameterError, match="a Python list has none"):
        dptree.sparse_range_tree(values, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="a Python list has none"):
        dptree.range_tree(values, bounds="private", epsilon=1.0)
    typed = np.asarray([1, 2, 3] * 100, dtype=np.int64)
    assert dptree.sparse_range_tree(typed, epsilon=1.0, rng=1).domain.key_kind == "int"
    assert dptree.range_tree(typed, bounds="private", epsilon=1.0, rng=1).domain.kind == "integer"
    assert dptree.sparse_range_tree([1, 2, 3] * 100, lower=0, upper=10, epsilon=1.0, rng=1).domain.key_kind == "int"


@pytest.mark.parametrize("extra", ["2020-06-01T00:00:00.000000001", np.datetime64("2020-06-01T00:00:00.000000001"),
                                   "2020-06-01T00:00:00.000000000001"])
def test_one_record_with_finer_digits_moves_no_other_date(extra: object) -> None:
    """numpy reads a whole list at the finest unit any value has: one record with nanosecond (or
    picosecond) digits put every value in datetime64[ns] (or [ps]), where 1500-01-01 wrapped around
    to 2084 and 2020-03-15 to 1970: adding one record moved a thousand others to another bucket.
    Each value is now read on its own, so the neighbour's histogram differs by that record only."""
    kw = dict(lower="2020-01-01", upper="2021-01-01", epsilon=1.0)
    base = np.array(["1500-01-01"] * 500 + ["2020-03-15"] * 500, dtype=object)
    plus = np.append(base, np.array([extra], dtype=object))
    for release in (lambda d: dptree.range_tree(d, rng=3, **kw).leaf_estimates,
                    lambda d: np.array([dptree.sparse_range_tree(d, rng=3, **kw).count("2020-01-01", "2020-01-02")])):
        a, b = release(base), release(plus)
        assert a[0] > 400 and abs(a[0] - b[0]) < 50  # the 500 clamped 1500-01-01 records stay in the first bucket
    for d in (base, plus):  # 1500-01-01 wrapped to 2084: the neighbour's median was the domain's top
        assert dptree.median(d, rng=5, **kw).value <= np.datetime64("2020-03-15")
    # the values' own reading: clamped to the dates dptree bounds by, never wrapped
    from dptree.data.dates import as_dates

    got = as_dates(np.array(["1500-01-01", "3000-01-01", "2020-06-01T00:00:00.000000000001", None], dtype=object))
    assert got.dtype == np.dtype("datetime64[ns]") and str(got[0])[:10] == "1677-09-22" and str(got[1])[:10] == "2262-04-10"
    assert got[2] == np.datetime64("2020-06-01", "ns") and np.isnat(got[3])


def test_query_points_with_finer_digits_are_read_on_their_own() -> None:
    rel = dptree.sparse_range_tree(np.array(["2020-03-01"] * 100, dtype="datetime64[D]"), lower="2020-01-01",
                                   upper="2021-01-01", epsilon=1.0, rng=1)
    assert rel.count("2020-01-01", "2020-12-31T00:00:00.000000000001") == rel.count("2020-01-01", "2020-12-31")
    dense = dptree.range_tree(np.array(["2020-03-01"] * 100, dtype="datetime64[D]"), lower="2020-01-01",
                              upper="2021-01-01", epsilon=1.0, rng=1)
    assert dense.count("2020-01-01", "2020-12-31T00:00:00.000000000001") == dense.count("2020-01-01", "2020-12-31")


def test_a_utc_offset_in_the_values_warns_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rel = dptree.range_tree(np.array(["2020-03-01T00:00", "2020-04-01T00:00Z"], dtype=object),
                                lower="2020-01-01", upper="2021-01-01", epsilon=1.0, rng=1)
    same = dptree.range_tree(np.array(["2020-03-01", "2020-04-01"], dtype="datetime64[ns]"),
                             lower="2020-01-01", upper="2021-01-01", epsilon=1.0, rng=1)
    assert np.array_equal(rel.leaf_estimates, same.leaf_estimates)


def _kind_of(rel: object) -> str:
    return rel.domain.kind  # type: ignore[attr-defined]


@pytest.mark.parametrize("container", ["Int64", "arrow", "polars", "category", "masked"])
@pytest.mark.parametrize("extra", [[None], [None, 2**53], [2**53]])
def test_missing_entries_or_large_values_never_change_the_released_kind(container: str, extra: list) -> None:
    """to_numpy makes integers with missing entries float64 (objects past 2^53): the released
    domain's kind followed, so one missing record (dropped under the declared policy) turned an
    integer domain into a float one, and one more record of 2^53 into an error. The kind is the
    container's declared type."""
    import pyarrow as pa

    values = [5, 7, 9] * 20 + extra
    if container == "Int64":
        data: object = pd.Series(values, dtype="Int64")
    elif container == "arrow":
        data = pa.array(values, pa.int64())
    elif container == "polars":
        pl = pytest.importorskip("polars")
        data = pl.Series(values, dtype=pl.Int64)
    elif container == "category":
        data = pd.Series(values, dtype="Int64").astype("category")
    else:
        data = np.ma.masked_array([0 if v is None else v for v in values], mask=[v is None for v in values],
                                  dtype=np.int64)
    assert _kind_of(dptree.sparse_range_tree(data, epsilon=1.0, on_invalid="drop", rng=1)) == "integer"
    assert _kind_of(dptree.range_tree(data, bounds="private", epsilon=1.0, on_invalid="drop", rng=1)) == "integer"


def test_an_object_column_is_read_item_by_item() -> None:
    """The object path chose int64 when every item was an int and float64 otherwise, and a huge int
    failed only in the float path: [2, 10^400] was taken, [2, 2.0, 10^400] refused, so the record 2.0
    showed that a huge one was there. Each item now reads on its own into the domain's type."""
    from decimal import Decimal as D
    from fractions import Fraction as F

    kw = dict(lower=0.0, upper=100.0, width=1.0, epsilon=1.0, rng=1)
    ref = dptree.range_tree(np.array([2.0, 2.0, 100.0]), **kw).leaf_estimates
    for vals in ([2, 2.0, 10**400], [D(2), 2, 10**400], [2, F(2), F(10**400)], [2.0, 2, D("1e400")]):
        assert np.array_equal(dptree.range_tree(np.array(vals, dtype=object), **kw).leaf_estimates, ref), vals
    ints = dict(lower=2**60 - 2**20, upper=2**60 + 2**20, epsilon=1.0, rng=1)
    exact = dptree.range_tree(np.array([2**60 + 1, 2], dtype=np.int64), **ints).leaf_estimates
    # a float beside it no longer rounds 2^60 + 1 (the array was float64 as soon as one item was)
    assert np.array_equal(dptree.range_tree(np.array([2**60 + 1, 2.0], dtype=object), **ints).leaf_estimates, exact)
    with pytest.raises(DataError, match="non-integers"):
        dptree.range_tree(np.array([2, D("2.5")], dtype=object), lower=0, upper=9, epsilon=1.0)
    with pytest.raises(DataError, match=r"\+-inf"):
        dptree.range_tree(np.array([2, D("Infinity")], dtype=object), lower=0, upper=9, epsilon=1.0)
    with pytest.raises(DataError, match="missing values"):  # a signalling NaN is missing, not a crash
        dptree.range_tree(np.array([2, D("sNaN")], dtype=object), lower=0, upper=9, epsilon=1.0)


@pytest.mark.parametrize("values", [[1, 2], [1, 2.5], [b"ab", b"abcdef"]])
def test_a_refusal_names_the_kind_of_values_not_the_inferred_dtype(values: list) -> None:
    """A list's dtype is inferred from its values (int64 or float64; |S2 or |S6, the longest value's
    length): in a message it told neighbours apart. The message names the kind of value."""
    msgs = set()
    for extra in ([], values[-1:]):
        with pytest.raises(DataError) as exc:
            dptree.range_tree(np.asarray(values + extra), lower="2020-01-01", upper="2021-01-01", epsilon=1.0)
        msgs.add(str(exc.value))
        assert "dtype" not in str(exc.value) and "int64" not in str(exc.value)
    assert len(msgs) == 1
