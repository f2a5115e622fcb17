"""Date bounds and query points of sparse range trees outside the nanosecond range."""

from __future__ import annotations

import numpy as np
import pytest

import dptree
from dptree.errors import DomainError


def test_a_bound_outside_the_nanosecond_range_is_refused_not_wrapped() -> None:
    """lower = 1500-01-01 used to wrap around to 2084 silently (a wrong domain, no error)."""
    x = np.array(["2024-01-01", "2024-06-01"], dtype="datetime64[D]")
    for lower, upper in (("1500-01-01", "2100-01-01"), ("2000-01-01", "9999-12-31")):
        with pytest.raises(DomainError, match="outside the dates dptree can bound"):
            dptree.sparse_range_tree(x, lower=lower, upper=upper, epsilon=1.0, rng=1)


def test_query_points_outside_the_nanosecond_range_are_below_or_above_the_domain() -> None:
    x = np.datetime64("2024-01-01") + np.random.default_rng(0).integers(0, 300, 2000).astype("timedelta64[D]")
    t = dptree.sparse_range_tree(x, lower="2024-01-01", upper="2024-12-31", epsilon=1.0, rng=1)
    far = np.array(["1000-01-01", "9999-12-31"], dtype="datetime64[D]")
    lo, hi = t.cdf(far)
    assert lo == 0 and hi == pytest.approx(t.cdf(np.datetime64("2024-12-31")))
