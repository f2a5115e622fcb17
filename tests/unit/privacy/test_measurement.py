"""measure: counts + independent draws, int64, refusals from the noisy value alone."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dptree import noise
from dptree.errors import DataError
from dptree.privacy.measurement import MEASUREMENT_LIMIT, NoiseSpec, measure


@pytest.mark.parametrize("family", ["laplace", "gaussian"])
def test_counts_plus_the_draws_of_the_same_stream(family: str) -> None:
    counts = [np.array([3], np.int64), np.arange(40, dtype=np.int32), np.arange(64, dtype=np.int64)]
    spec = NoiseSpec(family, (None, Fraction(3), Fraction(7)))
    out = measure(counts, spec, noise.make_source(11))
    draw = noise.discrete_laplace if family == "laplace" else noise.discrete_gaussian
    src = noise.make_source(11)
    assert out[0] is None
    for c, y, p in zip(counts[1:], out[1:], spec.parameters[1:]):
        assert y is not None and y.dtype == np.int64
        np.testing.assert_array_equal(y, c.astype(np.int64) + draw(src, p, c.size))
    np.testing.assert_array_equal(counts[2], np.arange(64))  # the counts are not written to


@pytest.mark.parametrize("value", [MEASUREMENT_LIMIT + 5, -MEASUREMENT_LIMIT - 5])
def test_refuses_a_noisy_count_beyond_the_limit_on_either_side(value: int) -> None:
    spec = NoiseSpec("laplace", (Fraction(1),))
    with pytest.raises(DataError, match="2\\^62"):
        measure([np.array([0, value], np.int64)], spec, noise.make_source(1))
