"""RangeTree.ci: the same intervals as count -+ multiplier * stderr, to 1e-9 relative."""

from __future__ import annotations

import numpy as np
import pytest

import dptree
from dptree.estimation import least_squares
from dptree.estimation.intervals import gamma_shape, multiplier


@pytest.mark.parametrize("upper, branching", [(4095, 16), (4095, 2), (999, 4), (1000, 3)])
def test_ci_is_count_plus_minus_multiplier_times_stderr(upper: int, branching: int) -> None:
    x = np.random.default_rng(2).integers(0, upper + 1, 5000)
    tree = dptree.range_tree(x, lower=0, upper=upper, epsilon=1.0, branching=branching, rng=4)
    g = np.random.default_rng(3)
    u, v = g.integers(0, upper + 1, 3000), g.integers(0, upper + 1, 3000)
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    lo[:3], hi[:3] = 0, upper
    low, high = tree.ci(lo, hi)
    est, se = tree.count(lo, hi), tree.stderr(lo, hi)  # stderr: the closed-form range_variance
    layout = tree.layout
    a, b = tree.domain.leaf_of(lo), tree.domain.leaf_of(hi)
    v1, v2 = least_squares.range_error_moments(layout.fanouts, tree._est.level_variance, a, b)
    m = multiplier("laplace", 0.95, gamma_shape(v1, v2))
    np.testing.assert_allclose(low, est - m * se, rtol=1e-9, atol=1e-9 * se.max())
    np.testing.assert_allclose(high, est + m * se, rtol=1e-9, atol=1e-9 * se.max())


def test_blocks_of_ranges_give_the_same_moments(monkeypatch: pytest.MonkeyPatch) -> None:
    fan, var = (4, 4, 4, 4), [np.inf, 2.0, 2.0, 3.0, 1.0]
    g = np.random.default_rng(5)
    u, v = g.integers(0, 256, 1000), g.integers(0, 256, 1000)
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    whole = least_squares.range_error_moments(fan, var, lo, hi)
    monkeypatch.setattr(least_squares, "_MOMENT_BLOCK", 7)
    blocks = least_squares.range_error_moments(fan, var, lo, hi)
    np.testing.assert_array_equal(whole[0], blocks[0])
    np.testing.assert_array_equal(whole[1], blocks[1])
