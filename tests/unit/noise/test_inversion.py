"""The exact table inversion behind the discrete Laplace (dptree.noise.inversion).

Checks the decision rule word by word against an independent high-precision oracle, the tails and
the digit decomposition through the pmf, and that the chi-square test catches a planted
off-by-one threshold. The distribution tests with power are in tests/statistical/test_samplers_stat.py.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import reference_laplace
from scipy.stats import chi2, chi2_contingency
from test_noise import chi_square_stat, laplace_pmf

from dptree import noise
from dptree.noise import inversion, laplace


class WordSource:
    """A (NOT private) source whose first 8 bytes are ``word``; then seeded bytes. Counts bytes."""

    def __init__(self, word: int, seed: int) -> None:
        self.head = int(word).to_bytes(8, "little")
        self.rest = noise.SeededRandomSource(seed)
        self.bytes = 0

    def random_bytes(self, n: int) -> bytes:
        self.bytes += n
        out, self.head = self.head[:n], self.head[n:]
        return out + self.rest.random_bytes(n - len(out))


def two_sided_cdf_bounds(lam: Fraction, x: int) -> tuple[Fraction, Fraction]:
    """Oracle: P(X <= x) of the discrete Laplace P(x) ~ q^|x|, q = exp(-1/lam), to 60 digits."""
    q_lo, q_hi = inversion._exp_neg_bounds(1 / lam, 60)
    if x <= -1:  # q^|x| / (1 + q), increasing in q
        e_lo, e_hi = inversion._exp_neg_bounds(Fraction(-x) / lam, 60)
        return e_lo / (1 + q_hi), e_hi / (1 + q_lo)
    e_lo, e_hi = inversion._exp_neg_bounds(Fraction(x + 1) / lam, 60)
    return 1 - e_hi / (1 + q_lo), 1 - e_lo / (1 + q_hi)


@pytest.mark.parametrize("lam", [Fraction(3, 5), Fraction(5, 2), Fraction(21)])
def test_decided_words_are_exactly_in_their_cell(lam: Fraction) -> None:
    """For words at and around every threshold T_c and H_c: a draw that used only its 8 bytes (the
    fast decision) returns x such that the whole interval [w, w+1) 2^-64 of U lies in
    [P(X <= x-1), P(X <= x)) by the oracle; a draw the oracle cannot decide from 64 bits is never
    decided from them."""
    table = inversion.InversionTable(inversion.TwoSidedGeometricLaw(1 / lam, 1 / lam))
    k = table.law.k
    words = set()
    for c in range(0, table.t.size, max(1, table.t.size // 60)):
        for base in (int(table.t[c]), int(table.h1[c]) + 1):
            words.update(w for w in range(base - 2, base + 3) if 0 <= w < 2**64)
    words.update(int(w) for w in np.random.default_rng(1).integers(0, 2**63, 200, dtype=np.uint64) * 2)
    fast = slow = 0
    for w in sorted(words):
        src = WordSource(w, seed=w % 1000)
        x = int(table.draw(src, 1)[0])
        if src.bytes > 8:
            slow += 1
            continue
        fast += 1
        u_lo, u_hi = Fraction(w, 2**64), Fraction(w + 1, 2**64)
        if x > -k - 1:  # U >= P(X <= x - 1)
            assert u_lo >= two_sided_cdf_bounds(lam, x - 1)[1], (w, x)
        if x < k + 1:  # U < P(X <= x)
            assert u_hi <= two_sided_cdf_bounds(lam, x)[0], (w, x)
    assert fast > 100 and slow > 0  # both paths were exercised by the words at the thresholds


def test_guide_table_agrees_with_the_binary_search() -> None:
    """Every guide entry that decides a 2^48-word cell gives the binary-search value at both ends."""
    table = inversion.InversionTable(inversion.TwoSidedGeometricLaw(Fraction(1, 7), Fraction(1, 7)))
    ok = np.flatnonzero(table.guide != table.slow)
    starts = ok.astype(np.uint64) << table.shift
    for w in (starts, starts + ((np.uint64(1) << table.shift) - np.uint64(1))):
        j = np.searchsorted(table.t, w, side="right")
        assert np.array_equal(j - (table.law.k + 1), table.guide[ok])
        assert np.all((j == 0) | (w > table.h1[np.maximum(j - 1, 0)]))
    assert 0 < ok.size < table.guide.size


def test_tails_beyond_the_table_are_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """With tables covering all but 1/8 of the mass, many draws take the memoryless tails (and the
    geometric's own tail): the pmf is still the discrete Laplace."""
    monkeypatch.setattr(inversion, "_TAIL_BITS", 3)
    laplace._laplace_plan.cache_clear()
    try:
        lam = 2.5
        _, top, _ = laplace._laplace_plan(noise.laplace_scale_used(lam), laplace._RADIX, laplace._TOP_SCALE)
        x = noise.discrete_laplace(noise.make_source(5), lam, 100_000)
        assert (np.abs(x) > top.law.k).mean() > 0.05  # the tails were taken often
        reach = np.arange(-80, 81)
        stat, df = chi_square_stat(x, laplace_pmf(lam), reach)
        assert stat < chi2.isf(1e-6, df)
        wrong, _ = chi_square_stat(x, laplace_pmf(lam * 1.1), reach)
        assert wrong > chi2.isf(1e-6, df)
    finally:
        laplace._laplace_plan.cache_clear()


@pytest.mark.parametrize("lam", [Fraction(73, 10), 40])
def test_digit_decomposition_with_a_small_radix(lam: Fraction, monkeypatch: pytest.MonkeyPatch) -> None:
    """Radix 2 and a top scale of 1: X = L A + B with three or more independent binary digits of D
    (and their complement when A < 0); the pmf is still the discrete Laplace."""
    monkeypatch.setattr(laplace, "_RADIX", 2)
    monkeypatch.setattr(laplace, "_TOP_SCALE", 1)
    big, _, digits = laplace._laplace_plan(Fraction(lam), 2, 1)
    assert len(digits) >= 3 and big == 2 ** len(digits)
    x = noise.discrete_laplace(noise.make_source(6), lam, 100_000)
    reach = np.arange(-int(12 * lam), int(12 * lam) + 1)
    stat, df = chi_square_stat(x, laplace_pmf(float(lam)), reach)
    assert stat < chi2.isf(1e-6, df)
    wrong, _ = chi_square_stat(x, laplace_pmf(float(lam) * 1.1), reach)
    assert wrong > chi2.isf(1e-6, df)


def test_a_planted_off_by_one_threshold_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """An off-by-one in the CDF index of the non-negative cells (rho^(x+2) for rho^(x+1)) shifts
    the law by one step: the distribution test of test_samplers_stat rejects it."""
    law_cls = inversion.TwoSidedGeometricLaw
    good = law_cls._cdf

    def off_by_one(self, c, p, pw):  # type: ignore[no-untyped-def]
        return good(self, c + 1 if c > self.k else c, p, pw)

    monkeypatch.setattr(law_cls, "_cdf", off_by_one)
    laplace._laplace_plan.cache_clear()
    try:
        lam = 2.5
        x = noise.discrete_laplace(noise.make_source(7), lam, 200_000)
        stat, df = chi_square_stat(x, laplace_pmf(lam), np.arange(-80, 81))
        assert stat > chi2.isf(1e-6, df)
    finally:
        laplace._laplace_plan.cache_clear()


def test_new_sampler_agrees_with_the_old_one() -> None:
    """Two-sample test against the float-fast-path reference sampler (reference_laplace.py)."""
    for lam in (1.0, 37.5, 1000.0):  # one table, and a top table with one base-256 digit
        a = reference_laplace.discrete_laplace(noise.make_source(8), lam, 100_000)
        b = noise.discrete_laplace(noise.make_source(9), lam, 100_000)
        edges = np.unique(np.quantile(np.concatenate([a, b]), np.linspace(0, 1, 41)))
        table = np.array([np.histogram(a, edges)[0], np.histogram(b, edges)[0]])
        assert chi2_contingency(table[:, table.sum(axis=0) > 0])[1] > 1e-6


@pytest.mark.parametrize("lam", [Fraction(1, 50), Fraction(10**6, 3), Fraction(2**40)])
def test_extreme_scales(lam: Fraction) -> None:
    """Tiny scales (almost all mass at 0) and huge ones (several digits): moments match."""
    x = noise.discrete_laplace(noise.make_source(10), lam, 50_000)
    if lam < 1:
        assert not x.any()  # P(X != 0) ~ 2 exp(-50)
        return
    v = noise.discrete_laplace_variance(lam)
    assert abs(x.var() / v - 1) < 6 * math.sqrt(5 / 50_000) + 1e-12
    assert abs(x.mean()) < 6 * math.sqrt(v / 50_000) + 1e-9


def gaussian_pmf(sigma2: float):  # type: ignore[no-untyped-def]
    half = int(40 * math.sqrt(sigma2) + 10)
    z = float(np.exp(-np.arange(-half, half + 1) ** 2 / (2 * sigma2)).sum())
    return lambda k: np.exp(-np.asarray(k, dtype=np.float64) ** 2 / (2 * sigma2)) / z


def _gaussian_fit(x: np.ndarray, sigma2: float, power: bool) -> None:
    reach = np.arange(-int(12 * math.sqrt(sigma2)) - 5, int(12 * math.sqrt(sigma2)) + 6)
    stat, df = chi_square_stat(x, gaussian_pmf(sigma2), reach)
    assert stat < chi2.isf(1e-6, df)
    if power:
        wrong, _ = chi_square_stat(x, gaussian_pmf(sigma2 * 1.1), reach)
        assert wrong > chi2.isf(1e-6, df)


@pytest.mark.parametrize("sigma2", [0.5, 10.7])
def test_gaussian_exact_path_has_the_right_law(sigma2: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every draw through the exact path (the hook ``_FORCE_EXACT``): the pmf is N_Z(0, sigma2)."""
    calls = {"n": 0}
    exact_cell = inversion._exact_cell

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        return exact_cell(*args, **kwargs)

    monkeypatch.setattr(inversion, "_FORCE_EXACT", True)
    monkeypatch.setattr(inversion, "_exact_cell", counted)
    x = noise.discrete_gaussian(noise.make_source(11), sigma2, 20_000)
    assert calls["n"] >= 20_000
    _gaussian_fit(x, float(noise.gaussian_sigma2_used(sigma2)), power=sigma2 > 1)


def test_gaussian_tails_are_searched_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table covering all but ~1/4 of the mass: the tails are found by the exact search with the
    same uniform, and the pmf is still N_Z(0, sigma2)."""
    from dptree.noise import gaussian

    monkeypatch.setattr(gaussian, "_TAIL_BITS", 2)
    gaussian._gaussian_table.cache_clear()
    try:
        sigma2 = 10.7
        table = gaussian._gaussian_table(noise.gaussian_sigma2_used(sigma2))
        x = noise.discrete_gaussian(noise.make_source(12), sigma2, 60_000)
        assert (np.abs(x) > table.law.k).mean() > 0.03  # 4.4% with this seed
        _gaussian_fit(x, float(noise.gaussian_sigma2_used(sigma2)), power=True)
    finally:
        gaussian._gaussian_table.cache_clear()


def test_gaussian_table_and_cks_agree() -> None:
    """Two-sample test: table inversion against CKS Algorithm 3 at the same sigma2."""
    from dptree.noise.gaussian import _cks_gaussian

    a = _cks_gaussian(noise.make_source(13), 50, 1, 100_000)
    b = noise.discrete_gaussian(noise.make_source(14), 50, 100_000)
    edges = np.unique(np.quantile(np.concatenate([a, b]), np.linspace(0, 1, 41)))
    table = np.array([np.histogram(a, edges)[0], np.histogram(b, edges)[0]])
    assert chi2_contingency(table[:, table.sum(axis=0) > 0])[1] > 1e-6
