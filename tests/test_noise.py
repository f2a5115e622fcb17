"""Basic properties of the noise module (distribution tests with power live in test_samplers_stat)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dptree import noise
from dptree.errors import InvalidParameterError


def test_sources_and_private_flag() -> None:
    assert noise.make_source(None).private is True
    assert noise.make_source(3).private is False
    assert noise.make_source(np.random.default_rng(1)).private is False
    for bad in (-1, "seed", 1.5, True):
        with pytest.raises(InvalidParameterError):
            noise.make_source(bad)  # type: ignore[arg-type]


def test_seeded_sources_reproduce() -> None:
    a = noise.discrete_laplace(noise.make_source(7), 3.3, 1000)
    b = noise.discrete_laplace(noise.make_source(7), 3.3, 1000)
    c = noise.discrete_laplace(noise.make_source(8), 3.3, 1000)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_uniform_below_is_uniform_and_in_range() -> None:
    src = noise.make_source(1)
    x = noise.uniform_below(src, 7, size=70_000)
    assert x.min() == 0 and x.max() == 6
    counts = np.bincount(x, minlength=7)
    chi2 = ((counts - 10_000) ** 2 / 10_000).sum()
    assert chi2 < 40  # chi-square(6) exceeds 40 with probability < 1e-6
    m = np.array([1, 2, 3, 1000, 2**40])
    y = noise.uniform_below(src, np.repeat(m, 2000))
    assert np.all(y < np.repeat(m, 2000)) and np.all(y >= 0)
    big = noise.uniform_int(src, 0, 2 ** (2**16))
    assert 0 <= big <= 2 ** (2**16)


@pytest.mark.parametrize("num,den", [(0, 1), (1, 3), (1, 1), (7, 3), (5, 1), (2**50 + 1, 2**50)])
def test_bernoulli_exp_neg_mean(num: int, den: int) -> None:
    src = noise.make_source(num + den)
    n = 60_000
    x = noise.bernoulli_exp_neg(src, np.full(n, num, dtype=object if num > 2**52 else np.int64), np.full(n, den, dtype=object if den > 2**52 else np.int64))
    p = math.exp(-num / den)
    se = math.sqrt(p * (1 - p) / n) + 1e-12
    assert abs(x.mean() - p) < 5.5 * se + (1e-9 if p in (0.0, 1.0) else 0)


def test_scales_are_rounded_up_never_down() -> None:
    for s in [0.1, 1 / 3, 2.0, 1e-5, 12345.678, 1e9]:
        used = noise.laplace_scale_used(s)
        assert used >= Fraction(s) and float(used) <= s * (1 + 2**-19)
        g = noise.gaussian_sigma2_used(s)
        assert g >= Fraction(s) and float(g) <= s * (1 + 2**-19)
    with pytest.raises(InvalidParameterError):
        noise.laplace_scale_used(0.0)
    with pytest.raises(InvalidParameterError):
        noise.laplace_scale_used(float("nan"))


@pytest.mark.parametrize("scale", [0.3, 1.0, 2.5, 40.0])
def test_discrete_laplace_variance_formula(scale: float) -> None:
    x = noise.discrete_laplace(noise.make_source(11), scale, 200_000)
    v = noise.discrete_laplace_variance(scale)
    # variance of the sample variance ~ (mu4 - v^2)/n; mu4 <= 25 v^2 for these laws
    assert abs(x.var() - v) < 6 * math.sqrt(25 * v * v / 200_000)
    assert abs(x.mean()) < 6 * math.sqrt(v / 200_000)


@pytest.mark.parametrize("sigma2", [0.2, 1.0, 7.3, 1e4, 3e7])
def test_discrete_gaussian_variance_formula(sigma2: float) -> None:
    n = 100_000 if sigma2 < 1e6 else 3_000
    x = noise.discrete_gaussian(noise.make_source(12), sigma2, n)
    v = noise.discrete_gaussian_variance(sigma2)
    assert abs(x.var() - v) < 6 * math.sqrt(2 * v * v / n)
    if sigma2 >= 1:
        assert abs(v - sigma2) / sigma2 < 1e-3  # close to sigma^2 once sigma >= 1


def test_empty_and_invalid_sizes() -> None:
    src = noise.make_source(0)
    assert noise.discrete_laplace(src, 1.0, 0).size == 0
    assert noise.discrete_gaussian(src, 1.0, 0).size == 0
    with pytest.raises(InvalidParameterError):
        noise.discrete_laplace(src, 1.0, -1)
    with pytest.raises(InvalidParameterError):
        noise.uniform_below(src, 0)
