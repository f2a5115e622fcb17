"""Confidence intervals: the variance-gamma multiplier and measured coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dptree
from dptree.estimation.intervals import laplace_mixture_multiplier, normal_multiplier


@pytest.mark.parametrize("level", [0.8, 0.9, 0.95, 0.99])
def test_multiplier_limits(level: float) -> None:
    # k = 1: the error is exactly Laplace with variance 1: P(|X| > z) = exp(-sqrt(2) z)
    assert laplace_mixture_multiplier(np.array([1.0]), level)[0] == pytest.approx(
        math.log(1 / (1 - level)) / math.sqrt(2), rel=2e-3
    )
    # large k: normal
    assert laplace_mixture_multiplier(np.array([1e6]), level)[0] == pytest.approx(normal_multiplier(level), rel=1e-3)
    m = laplace_mixture_multiplier(np.logspace(0, 5, 50), level)
    if level >= 0.95:  # heavier tails need wider intervals at high levels (not at 90%:
        assert np.all(np.diff(m) <= 1e-9)  # Laplace's 90% point, 1.628 sd, is below the normal's)


@pytest.mark.parametrize("level", [0.01, 0.5, 0.95, 0.999999])
def test_the_multiplier_table_solves_its_coverage_equation(level: float) -> None:
    """Every tabulated z(k) (vectorised Newton) is the root of E[2 Phi(z / sqrt(W)) - 1] = level,
    W ~ Gamma(k, 1/k) at the table's mid-quantiles, to 1e-10 in coverage; z rises with the level."""
    from scipy.special import gammaincinv, ndtr

    from dptree.estimation.intervals import _K_GRID, _N_QUANTILES, _table

    probs = (np.arange(_N_QUANTILES) + 0.5) / _N_QUANTILES
    z = _table(level)
    for i in range(0, _K_GRID.size, 20):
        root_g = np.sqrt(gammaincinv(_K_GRID[i], probs) / _K_GRID[i])
        assert np.mean(2.0 * ndtr(z[i] / root_g) - 1.0) == pytest.approx(level, abs=1e-10)
    assert np.all(_table(min(level + 0.005, 0.9999995)) > z)


def test_the_interval_helpers_agree_with_the_multipliers() -> None:
    from dptree.estimation.intervals import LEVEL, check_level, gamma_shape, multiplier, symmetric_interval

    # one dominant node: W = sigma^2 E, shape 1 (exactly Laplace); no fourth moment: normal
    k = gamma_shape([2.0, 3.0, 0.0], [4.0, 0.0, 0.0])
    assert k[0] == 1.0 and np.isinf(k[1]) and np.isinf(k[2])
    m = multiplier("laplace", 0.9, k)
    assert m[0] == pytest.approx(laplace_mixture_multiplier(np.array([1.0]), 0.9)[0])
    assert m[1] == pytest.approx(normal_multiplier(0.9), rel=1e-3)
    g = multiplier("gaussian", 0.9, np.zeros(4))
    assert g.shape == (4,) and np.all(g == normal_multiplier(0.9))
    low, high = symmetric_interval(np.array([10.0, 0.0]), np.array([1.0, 2.0]), np.array([2.0, 1.0]))
    np.testing.assert_array_equal(low, [8.0, -2.0])
    np.testing.assert_array_equal(high, [12.0, 2.0])
    assert check_level(np.float32(0.5)) == 0.5 and LEVEL[0].is_satisfied_by(0.95)
    for bad in (0.0, 1.0, 1.5, "0.9", True, float("nan"), None):
        with pytest.raises(dptree.InvalidParameterError, match="level must be .*confidence level"):
            check_level(bad)
