"""Statistical tests of the exact samplers in dptree.noise (issue 3, item 1; DESIGN section 8).

Every test draws a seeded sample through the test-only rng hook, runs a chi-square
goodness-of-fit test against the exact probability mass function (tails pooled so that every
cell expects >= 20 samples) at significance 1e-6, and shows its power: the *same* sample must be
rejected (p < 1e-6) against the parameter multiplied by 1.1 and divided by 1.1 (Laplace: the
scale; Gaussian: the variance parameter sigma^2, stricter than sigma; Bernoulli(exp(-gamma)):
gamma). Fast part: 200 000 samples per test; ``slow``: 2 000 000.

Draw counts: :class:`CountingSource` wraps the seeded source and counts calls and bytes. The
tests below measure the cost per sample and show that it depends on the sampled value (the CKS
samplers are rejection loops); docs/notes/verification.md has the table.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chi2

from dptree import noise

N_FAST = 200_000
N_SLOW = 2_000_000
ALPHA = 1e-6
MIN_EXPECTED = 20.0


CountingSource = noise.CountingRandomSource


# --------------------------------------------------------------------------- exact pmfs


def laplace_pmf(scale: float | Fraction, support: np.ndarray) -> np.ndarray:
    t = float(noise.laplace_scale_used(scale)) if not isinstance(scale, float) or scale > 0 else scale
    q = math.exp(-1.0 / t)
    return (1 - q) / (1 + q) * q ** np.abs(support)


def laplace_pmf_raw(t: float, support: np.ndarray) -> np.ndarray:
    q = math.exp(-1.0 / t)
    return (1 - q) / (1 + q) * q ** np.abs(support).astype(np.float64)


def gaussian_pmf_raw(sigma2: float, support: np.ndarray) -> np.ndarray:
    half = int(math.ceil(40 * math.sqrt(sigma2) + 10))
    full = np.arange(-half, half + 1, dtype=np.float64)
    z = np.exp(-full * full / (2 * sigma2)).sum()
    x = support.astype(np.float64)
    return np.exp(-x * x / (2 * sigma2)) / z


# --------------------------------------------------------------------------- chi-square


def chi_square_pvalue(samples: np.ndarray, pmf: "callable", n_expected_support: int) -> tuple[float, int]:
    """Chi-square p-value of integer ``samples`` against ``pmf`` (a function of an int array).

    Cells: every integer whose expected count is >= 20 (a contiguous window for these unimodal
    laws) and the two pooled tails; a tail expecting < 20 is merged into its neighbor cell.
    Returns (p-value, number of cells).
    """
    n = samples.size
    support = np.arange(-n_expected_support, n_expected_support + 1)
    p = pmf(support)
    inner = np.flatnonzero(n * p >= MIN_EXPECTED)
    a, b = int(support[inner[0]]), int(support[inner[-1]])
    window = np.arange(a, b + 1)
    pw = pmf(window)
    p_left = max(0.0, float(pmf(support[support < a]).sum()))
    p_right = max(0.0, float(pmf(support[support > b]).sum()))
    obs_w = np.bincount(np.clip(samples, a, b) - a, minlength=b - a + 1).astype(np.float64)
    obs_left = float((samples < a).sum())
    obs_right = float((samples > b).sum())
    obs_w[0] -= obs_left
    obs_w[-1] -= obs_right
    exp_cells = list(n * pw)
    obs_cells = list(obs_w)
    if n * p_left >= MIN_EXPECTED:
        exp_cells.insert(0, n * p_left)
        obs_cells.insert(0, obs_left)
    else:
        exp_cells[0] += n * p_left
        obs_cells[0] += obs_left
    if n * p_right >= MIN_EXPECTED:
        exp_cells.append(n * p_right)
        obs_cells.append(obs_right)
    else:
        exp_cells[-1] += n * p_right
        obs_cells[-1] += obs_right
    e = np.asarray(exp_cells)
    o = np.asarray(obs_cells)
    assert e.min() >= MIN_EXPECTED - 1e-9
    assert o.sum() == n
    stat = float(((o - e) ** 2 / e).sum())
    return float(chi2.sf(stat, e.size - 1)), int(e.size)


def binomial_pvalue(successes: int, n: int, p: float) -> float:
    """Two-cell chi-square test (both cells must expect >= 20)."""
    e = np.array([n * p, n * (1 - p)])
    assert e.min() >= MIN_EXPECTED
    o = np.array([successes, n - successes], dtype=np.float64)
    return float(chi2.sf(((o - e) ** 2 / e).sum(), 1))


# --------------------------------------------------------------------------- truncated discrete Laplace


def truncated_pmf(t: float, bound: int):  # type: ignore[no-untyped-def]
    """P(z) proportional to exp(-|z|/t) on the integers |z| <= bound (seed 001, Lemma 2.8 on Z)."""
    ks = np.arange(-bound, bound + 1)
    z = float(np.exp(-np.abs(ks) / t).sum())
    return lambda s: np.where(np.abs(s) <= bound, np.exp(-np.abs(s).astype(np.float64) / t) / z, 0.0)


@pytest.mark.parametrize("scale,bound", [(2.5, 4), (Fraction(10, 3), 12), (7.3, 30)])
def test_truncated_discrete_laplace_distribution(scale: float | Fraction, bound: int) -> None:
    t = float(noise.laplace_scale_used(scale))
    x = noise.truncated_discrete_laplace(noise.make_source(int(bound)), scale, bound, N_FAST)
    assert np.abs(x).max() <= bound
    p, cells = chi_square_pvalue(x, truncated_pmf(t, bound), bound + 1)
    assert cells >= 3 and p > ALPHA, f"truncated Laplace ({scale}, {bound}): p = {p:.3g}"
    for factor in (1.1, 1 / 1.1):  # power: the same samples reject a 10% wrong scale
        p_alt, _ = chi_square_pvalue(x, truncated_pmf(t * factor, bound), bound + 1)
        assert p_alt < ALPHA, f"no power against scale x{factor:.3f}: p = {p_alt:.3g}"


# --------------------------------------------------------------------------- discrete Laplace

LAPLACE_SCALES = [0.6, 1, 2.5, Fraction(1, 3), 7.3, 40]


def _laplace_check(scale: float | Fraction, n: int, seed: int) -> None:
    t = float(noise.laplace_scale_used(scale))
    x = noise.discrete_laplace(noise.make_source(seed), scale, n)
    assert x.dtype == np.int64 and x.shape == (n,)
    reach = int(60 * t + 60)
    p, cells = chi_square_pvalue(x, lambda s: laplace_pmf_raw(t, s), reach)
    assert cells >= 3
    assert p > ALPHA, f"discrete Laplace scale {scale}: p = {p:.3g} on {cells} cells"
    for factor in (1.1, 1 / 1.1):
        p_alt, _ = chi_square_pvalue(x, lambda s: laplace_pmf_raw(t * factor, s), reach)
        assert p_alt < ALPHA, f"no power against scale x{factor:.3f}: p = {p_alt:.3g}"


@pytest.mark.parametrize("scale", LAPLACE_SCALES, ids=str)
def test_discrete_laplace_distribution(scale: float | Fraction) -> None:
    _laplace_check(scale, N_FAST, seed=101)


@pytest.mark.slow
@pytest.mark.parametrize("scale", LAPLACE_SCALES, ids=str)
def test_discrete_laplace_distribution_slow(scale: float | Fraction) -> None:
    _laplace_check(scale, N_SLOW, seed=202)


def test_laplace_scale_rounding_is_upward_and_tiny() -> None:
    for s in (7.3, 1 / 3, 0.1, 123.456, 1e-3):
        used = noise.laplace_scale_used(s)
        assert used >= Fraction(s)
        assert float(used) / s - 1 < 2e-6


# --------------------------------------------------------------------------- discrete Gaussian

GAUSSIAN_SIGMA2 = [0.5, 2, 10.7, Fraction(1000, 3), 2500]


def _gaussian_check(sigma2: float | Fraction, n: int, seed: int) -> None:
    s2 = float(noise.gaussian_sigma2_used(sigma2))
    x = noise.discrete_gaussian(noise.make_source(seed), sigma2, n)
    assert x.dtype == np.int64 and x.shape == (n,)
    reach = int(40 * math.sqrt(s2) + 20)
    p, cells = chi_square_pvalue(x, lambda s: gaussian_pmf_raw(s2, s), reach)
    assert p > ALPHA, f"discrete Gaussian sigma2 {sigma2}: p = {p:.3g} on {cells} cells"
    for factor in (1.1, 1 / 1.1):
        p_alt, _ = chi_square_pvalue(x, lambda s: gaussian_pmf_raw(s2 * factor, s), reach)
        assert p_alt < ALPHA, f"no power against sigma2 x{factor:.3f}: p = {p_alt:.3g}"
    # the variance reported for error bars is the exact one (4 standard errors)
    v = noise.discrete_gaussian_variance(sigma2)
    assert abs(x.var() / v - 1) < 4 * math.sqrt(2 / n) * 1.2


@pytest.mark.parametrize("sigma2", GAUSSIAN_SIGMA2, ids=str)
def test_discrete_gaussian_distribution(sigma2: float | Fraction) -> None:
    _gaussian_check(sigma2, N_FAST, seed=303)


@pytest.mark.slow
@pytest.mark.parametrize("sigma2", GAUSSIAN_SIGMA2, ids=str)
def test_discrete_gaussian_distribution_slow(sigma2: float | Fraction) -> None:
    _gaussian_check(sigma2, N_SLOW, seed=404)


# --------------------------------------------------------------------------- Bernoulli(exp(-gamma))

# (num, den): gamma <= 1, gamma = 1, gamma > 1 (the integer-part loop), a non-dyadic rational and a
# denominator above 2^53 (the exact Python-integer path).
BERNOULLI_GAMMAS = [(1, 3), (1, 1), (5, 2), (123457, 100000), (3 * 2**58 + 1, 2**58)]


def _bernoulli_check(num: int, den: int, n: int, seed: int) -> None:
    if den >= 2**53:
        numa = np.array([num] * n, dtype=object)
        dena = np.array([den] * n, dtype=object)
    else:
        numa = np.full(n, num, dtype=np.int64)
        dena = np.full(n, den, dtype=np.int64)
    x = noise.bernoulli_exp_neg(noise.make_source(seed), numa, dena)
    assert x.dtype == bool and x.shape == (n,)
    gamma = num / den
    k = int(x.sum())
    p = binomial_pvalue(k, n, math.exp(-gamma))
    assert p > ALPHA, f"Bernoulli(exp(-{num}/{den})): {k}/{n}, p = {p:.3g}"
    for factor in (1.1, 1 / 1.1):
        p_alt = binomial_pvalue(k, n, math.exp(-gamma * factor))
        assert p_alt < ALPHA, f"no power against gamma x{factor:.3f}: p = {p_alt:.3g}"


@pytest.mark.parametrize("num,den", BERNOULLI_GAMMAS, ids=lambda v: str(v))
def test_bernoulli_exp_neg_distribution(num: int, den: int) -> None:
    n = 60_000 if den >= 2**53 else N_FAST  # the Python-integer path is slow
    _bernoulli_check(num, den, n, seed=505)


@pytest.mark.slow
@pytest.mark.parametrize("num,den", BERNOULLI_GAMMAS, ids=lambda v: str(v))
def test_bernoulli_exp_neg_distribution_slow(num: int, den: int) -> None:
    n = 600_000 if den >= 2**53 else N_SLOW
    _bernoulli_check(num, den, n, seed=606)


def test_bernoulli_exp_neg_mixed_parameters_in_one_call() -> None:
    """A vector of different gammas: each position follows its own law (pooled per gamma)."""
    gammas = [(0, 1), (1, 4), (2, 1), (9, 7)]
    reps = 50_000
    num = np.repeat([g[0] for g in gammas], reps)
    den = np.repeat([g[1] for g in gammas], reps)
    x = noise.bernoulli_exp_neg(noise.make_source(707), num, den).reshape(len(gammas), reps)
    assert x[0].all()  # gamma = 0: probability one
    for (a, b), row in zip(gammas[1:], x[1:]):
        assert binomial_pvalue(int(row.sum()), reps, math.exp(-a / b)) > ALPHA


# --------------------------------------------------------------------------- uniform integers


@pytest.mark.parametrize("m", [3, 10, 1000])
def test_uniform_below_distribution(m: int) -> None:
    x = noise.uniform_below(noise.make_source(808), m, N_FAST)
    assert x.min() >= 0 and x.max() < m
    o = np.bincount(x, minlength=m).astype(np.float64)
    e = N_FAST / m
    assert chi2.sf(((o - e) ** 2 / e).sum(), m - 1) > ALPHA


def test_uniform_below_vector_bounds() -> None:
    m = np.array([2, 3, 5, 7, 1000] * 20_000)
    x = noise.uniform_below(noise.make_source(909), m)
    assert np.all((x >= 0) & (x < m))
    for mm in (3, 1000):
        sel = x[m == mm]
        o = np.bincount(sel, minlength=mm).astype(np.float64)
        e = sel.size / mm
        assert chi2.sf(((o - e) ** 2 / e).sum(), mm - 1) > ALPHA


# --------------------------------------------------------------------------- draw counts


def per_sample_costs(sampler: "callable", param: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(value, bytes, calls) of ``n`` samples drawn one at a time through a CountingSource."""
    src = CountingSource(seed)
    vals = np.empty(n, dtype=np.int64)
    nbytes = np.empty(n, dtype=np.int64)
    ncalls = np.empty(n, dtype=np.int64)
    for i in range(n):
        b0, c0 = src.bytes, src.calls
        vals[i] = sampler(src, param, 1)[0]
        nbytes[i] = src.bytes - b0
        ncalls[i] = src.calls - c0
    return vals, nbytes, ncalls


def test_laplace_inversion_cost_does_not_depend_on_the_output() -> None:
    """The discrete Laplace is sampled by table inversion (issue 13): one 64-bit word per table
    (one table for scale <= 128, one more per base-256 digit above), no rejection loop. Every
    sample therefore costs the same bytes whatever its value, except on the exact path and in the
    tails beyond the tables (probability < 2^-39 per sample)."""
    for scale, words in ((3.0, 1), (300.0, 2)):
        vals, nbytes, ncalls = per_sample_costs(noise.discrete_laplace, scale, 2000, seed=11)
        assert np.all(nbytes == 8 * words) and np.all(ncalls == words)
        a = np.abs(vals)
        assert (a <= scale / 3).sum() > 100 and (a >= 2 * scale).sum() > 100  # near and far outputs


def cks_gaussian(src, sigma2: float, n: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    """CKS 2020 Algorithm 3, the discrete Gaussian sampler used above sigma2 = 10^4 (small sizes)."""
    from dptree.noise.gaussian import _cks_gaussian

    return _cks_gaussian(src, int(sigma2), 1, n)


cks_gaussian.__name__ = "cks_gaussian"


def test_gaussian_table_cost_does_not_depend_on_the_output() -> None:
    """The discrete Gaussian up to sigma2 = 10^4 is sampled by table inversion (issue 13): one
    64-bit word per sample whatever its value (except on the exact path and in the tails)."""
    vals, nbytes, ncalls = per_sample_costs(noise.discrete_gaussian, 9.0, 2000, seed=11)
    assert np.all(nbytes == 8) and np.all(ncalls == 1)
    assert (np.abs(vals) >= 6).sum() > 40  # far outputs cost the same


@pytest.mark.parametrize("sampler,param", [(cks_gaussian, 9.0)], ids=["gaussian"])
def test_draw_count_depends_on_the_output(sampler: "callable", param: float) -> None:
    """Running time is not constant: samples far from 0 need more random draws (rejection loops).

    docs/notes/verification.md reports the same measurement with more samples (benchmarks/sampler_cost.py).
    """
    n = 3000 if sampler is cks_gaussian else 2000
    vals, nbytes, ncalls = per_sample_costs(sampler, param, n, seed=11)
    a = np.abs(vals)
    scale = math.sqrt(param) if sampler is cks_gaussian else param
    near = ncalls[a <= 0.5 * scale]
    far = ncalls[a >= 2 * scale]
    assert near.size > 40 and far.size > 40
    # more calls on average for large outputs (each extra geometric step is one more loop)
    assert nbytes[a >= 2 * scale].mean() > nbytes[a <= 0.5 * scale].mean()
    se = math.sqrt(near.var() / near.size + far.var() / far.size)
    assert far.mean() - near.mean() > 5 * se
    # and every sample needs at least a Laplace word and a Bernoulli draw
    assert ncalls.min() >= 2


def test_vectorised_draws_per_sample_are_bounded() -> None:
    """Batched sampling: bytes per sample are O(1) and calls grow only logarithmically with the size.

    Table inversion (issue 13): Laplace(3) and Gaussian(9) 8 bytes/sample.
    """
    for sampler, param, limit in [(noise.discrete_laplace, 3.0, 20), (noise.discrete_gaussian, 9.0, 40)]:
        small, big = CountingSource(12), CountingSource(13)
        sampler(small, param, 1_000)
        sampler(big, param, 100_000)
        assert big.bytes / 100_000 < limit
        assert big.calls < 10 * small.calls  # 100x the samples, far fewer than 100x the calls
