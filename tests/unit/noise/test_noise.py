"""Basic properties of the noise module (distribution tests with power live in test_samplers_stat)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dptree import noise
from dptree.errors import InvalidParameterError
from dptree.noise import inversion as noise_inversion


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
    x = noise.bernoulli_exp_neg(
        src,
        np.full(n, num, dtype=object if num > 2**52 else np.int64),
        np.full(n, den, dtype=object if den > 2**52 else np.int64),
    )
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


def chi_square_stat(x: np.ndarray, pmf, support: np.ndarray) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    """Chi-square statistic with the tails pooled into one cell; returns (statistic, df)."""
    n = x.size
    p = pmf(support)
    obs = np.array([(x == k).sum() for k in support])
    cells_p = np.append(p, 1.0 - p.sum())
    cells_o = np.append(obs, n - obs.sum())
    keep = cells_p * n >= 20
    pooled_p = np.append(cells_p[keep], cells_p[~keep].sum())
    pooled_o = np.append(cells_o[keep], cells_o[~keep].sum())
    mask = pooled_p > 0
    stat = float(((pooled_o[mask] - n * pooled_p[mask]) ** 2 / (n * pooled_p[mask])).sum())
    return stat, int(mask.sum()) - 1


def laplace_pmf(lam: float):  # type: ignore[no-untyped-def]
    q = math.exp(-1.0 / lam)
    return lambda k: (1 - q) / (1 + q) * q ** np.abs(k)


@pytest.mark.parametrize("lam", [0.6, 2.5, 7.0, 40.0, 300.0])
def test_discrete_laplace_exact_path_has_the_right_law(lam: float, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Force every table draw through the exact path (the hook ``_FORCE_EXACT``) and test the pmf."""
    from scipy.stats import chi2

    exact = {"calls": 0}
    exact_cell = noise_inversion._exact_cell

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        exact["calls"] += 1
        return exact_cell(*args, **kwargs)

    monkeypatch.setattr(noise_inversion, "_FORCE_EXACT", True)  # the module the tables read it from
    monkeypatch.setattr(noise_inversion, "_exact_cell", counted)
    n = 20_000
    x = noise.discrete_laplace(noise.make_source(int(lam * 10)), lam, n)
    assert exact["calls"] >= n  # every sample took the exact path (scale 300: two tables per sample)
    reach = np.arange(-int(20 * lam) - 20, int(20 * lam) + 21)
    stat, df = chi_square_stat(x, laplace_pmf(float(noise.laplace_scale_used(lam))), reach)
    assert stat < chi2.isf(1e-6, df)
    # the same samples are rejected against a 10% wrong scale (where 20 000 samples have the power)
    wrong, _ = chi_square_stat(x, laplace_pmf(lam * 1.1), reach)
    assert wrong > chi2.isf(1e-6, df) or lam < 1 or lam > 10


def cks_discrete_laplace(src, t: int, n: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Independent oracle: CKS 2020 Algorithm 2 (integer scale t), built on bernoulli_exp_neg."""
    out = []
    while len(out) < n:
        u = int(noise.uniform_below(src, t)[0])
        if not noise.bernoulli_exp_neg(src, np.array([u]), np.array([t]))[0]:
            continue
        v = 0
        while noise.bernoulli_exp_neg(src, np.array([1]), np.array([1]))[0]:
            v += 1
        y = u + t * v
        b = int(noise.uniform_below(src, 2)[0])
        if b == 1 and y == 0:
            continue
        out.append(-y if b else y)
    return np.array(out)


def test_inversion_sampler_agrees_with_cks_algorithm_2() -> None:
    from scipy.stats import chi2_contingency

    a = cks_discrete_laplace(noise.make_source(1), 3, 6000)
    b = noise.discrete_laplace(noise.make_source(2), 3, 6000)
    cells = np.arange(-12, 13)
    ta = [np.sum(a <= -13)] + [np.sum(a == k) for k in cells] + [np.sum(a >= 13)]
    tb = [np.sum(b <= -13)] + [np.sum(b == k) for k in cells] + [np.sum(b >= 13)]
    table = np.array([ta, tb])
    table = table[:, table.sum(axis=0) >= 20]
    assert chi2_contingency(table)[1] > 1e-6
