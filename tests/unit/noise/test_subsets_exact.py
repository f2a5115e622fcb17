"""uniform_below and uniform_subsets return exactly the previous implementation's values for the
same random source (the faster code draws the same bytes in the same order)."""

from __future__ import annotations

import numpy as np
import pytest
from _noise_oracle import bit_length_oracle, floyd_subsets_oracle, uniform_below_oracle

from dptree.noise import SeededRandomSource, uniform_below, uniform_subsets
from dptree.noise.integers import _bit_length


@pytest.mark.parametrize("seed", range(40))
def test_same_values_as_the_previous_implementation(seed: int) -> None:
    gen = np.random.default_rng(seed)
    n, k = int(gen.integers(1, 2000)), int(gen.integers(1, 33))
    if seed % 4 == 0:
        sizes = np.full(n, k + 1 + int(gen.integers(0, 4)))  # equal bounds in every round
    elif seed % 4 == 1:
        sizes = k + 1 + gen.integers(0, 1 << 61, size=n)  # wide bounds: 64-bit words, float rounding
    else:
        sizes = k + 1 + gen.geometric(gen.uniform(0.01, 0.9), size=n)
    s = int(gen.integers(0, 2**32))
    np.testing.assert_array_equal(uniform_subsets(SeededRandomSource(s), sizes, k),
                                  floyd_subsets_oracle(SeededRandomSource(s), sizes, k))
    m = 1 + gen.integers(0, 1 << int(gen.integers(1, 62)), size=n)
    m[0] = 1 + (m[0] % 2 + 1) * (m.max() // 2 + 1)  # not all equal
    np.testing.assert_array_equal(uniform_below(SeededRandomSource(s), m),
                                  uniform_below_oracle(SeededRandomSource(s), m))


def test_bit_length_exact_near_powers_of_two() -> None:
    p = np.int64(1) << np.arange(1, 63, dtype=np.int64)
    v = np.concatenate([[0, 1], p - 1, p, p[:-1] + 1])
    np.testing.assert_array_equal(_bit_length(v), bit_length_oracle(v))
    np.testing.assert_array_equal(_bit_length(v), [int(x).bit_length() for x in v])
    small = v[v < 1 << 53]  # the fast path (no float rounding below 2^53)
    np.testing.assert_array_equal(_bit_length(small), [int(x).bit_length() for x in small])
