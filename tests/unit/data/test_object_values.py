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
    assert np.array_equal(dptree.range_tree(s, lower=0, upper=10, epsilon=1.0, missing="drop", rng=1).leaf_estimates,
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
    assert dptree.sparse_range_tree(typed, epsilon=1.0, rng=1).domain.kind == "int"
    assert dptree.range_tree(typed, bounds="private", epsilon=1.0, rng=1).domain.kind == "integer"
    assert dptree.sparse_range_tree([1, 2, 3] * 100, lower=0, upper=10, epsilon=1.0, rng=1).domain.kind == "int"
