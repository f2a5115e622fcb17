"""Exact samplers (dptree.noise.exponential) and dptree.interior.selection (seed 002 section 2)."""

from __future__ import annotations

import collections
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from interior_stats import binom_sf, em_interval_law
from scipy import stats

from dptree import noise
from dptree.errors import DPTreeError, InvalidParameterError
from dptree.interior.sparse_vector import AboveThreshold, above_threshold_error_bound
from dptree.interior.selection import (
    choosing_error_bound,
    choosing_mechanism,
    choosing_threshold,
    effective_epsilon,
    exponential_base,
    exponential_mechanism,
    interior_quality_intervals,
    ordered_exponential_mechanism,
)
from dptree.noise import exponential as noise_exponential

# ------------------------------------------------------------------ dptree.noise.exponential samplers


@pytest.mark.parametrize("x", [1e-6, 0.01, 0.5, 1.0, 3.0, 25.0])
def test_exp_lower_rational_is_a_tight_lower_bound(x):
    p, q = noise.exp_lower_rational(x)
    assert p % 2 == 1 and q & (q - 1) == 0
    # exact check against a rigorous upper bound: e^x <= partial sum + remainder bound
    assert Fraction(p, q) > 1
    assert math.log(p / q) <= x * (1 + 1e-15)
    assert abs(math.log(p / q) - x) <= 1e-14 * max(1.0, x)


def test_exp_lower_rational_below_series_upper_bound():
    # e^x <= 1/(1-x) for x < 1 is an exact rational upper bound; p/q must be below e^x <= it
    for x in (Fraction(1, 3), Fraction(1, 2), Fraction(9, 10)):
        p, q = noise.exp_lower_rational(x)
        assert Fraction(p, q) < 1 / (1 - x)
        # and above the 20-term partial sum minus 2^-60 (tightness)
        s = sum(x**j / math.factorial(j) for j in range(20))
        assert Fraction(p, q) > s - Fraction(1, 2**60)


@pytest.mark.parametrize("r", [1, 2, 5, 40])
def test_bernoulli_pow_ratio_frequency(r):
    p, q = noise.exp_lower_rational(0.5)
    k = q.bit_length() - 1
    lam = noise_exponential._log2_lower(p, q)
    m = (r * lam.numerator) // lam.denominator
    x = 2.0**m / (p / q) ** r
    assert 0.5 < x <= 1
    src = noise.make_source(100 + r)
    n = 20000
    hits = sum(noise.bernoulli_pow_ratio(src, p, k, r, m) for _ in range(n))
    # two-sided binomial test at 1e-6
    assert binom_sf(hits, n, x) > 1e-7 and binom_sf(n - hits, n, 1 - x) > 1e-7


def test_bernoulli_pow_ratio_rejects_probability_above_one():
    p, q = noise.exp_lower_rational(0.5)
    k = q.bit_length() - 1
    with pytest.raises(RuntimeError):
        for _ in range(50):
            noise.bernoulli_pow_ratio(noise.make_source(1), p, k, 1, 5)


def _chi2_pvalue(counts, probs):
    n = sum(counts)
    return stats.chisquare(counts, [n * p for p in probs]).pvalue


def test_sample_exponential_index_exact_law_and_catches_10pct_wrong_scale():
    base = noise.exp_lower_rational(0.5)
    b = base[0] / base[1]
    lengths = [1, 3, 2, 5, 1]
    expo = [0, 1, 2, 4, 7]
    src = noise.make_source(7)
    n = 60000
    c = collections.Counter(noise.sample_exponential_index(src, lengths, expo, base) for _ in range(n))
    counts = [c[i] for i in range(5)]

    def law(bb):
        w = [a * bb ** (-r) for a, r in zip(lengths, expo)]
        return [x / sum(w) for x in w]

    assert _chi2_pvalue(counts, law(b)) > 1e-6
    wrong = math.exp(1.1 * math.log(b))  # a 10% wrong epsilon
    assert _chi2_pvalue(counts, law(wrong)) < 1e-6


def test_sample_exponential_index_huge_lengths_and_exponents_fast():
    base = noise.exp_lower_rational(0.5)
    src = noise.make_source(3)
    big = 1 << (1 << 20)
    # weight of index 1: 2^(2^20) * e^(-0.5 * 1.5e6) ~ 2^(1048576 - 1082021): negligible
    out = [noise.sample_exponential_index(src, [1, big], [0, 1_500_000], base) for _ in range(20)]
    assert out == [0] * 20
    # and the reverse: index 1 dominates
    out = [noise.sample_exponential_index(src, [1, big], [1_400_000, 0], base) for _ in range(20)]
    assert out == [1] * 20


def test_sample_exponential_index_tail_branch(monkeypatch):
    """Force the rare far-tail branch once and check it returns a valid tail index."""
    base = noise.exp_lower_rational(0.5)
    src = noise.make_source(4)
    lengths, expo = [1, 1 << 200, 3], [0, 100000, 100001]
    real = noise.uniform_int
    calls = {"n": 0}

    def fake(s, lo, hi):
        calls["n"] += 1
        if calls["n"] == 1:
            return hi  # the last value: inside the tail bound
        return real(s, lo, hi)

    monkeypatch.setattr(noise_exponential, "uniform_int", fake)  # the name the sampler calls
    i = noise.sample_exponential_index(src, lengths, expo, base)
    assert i in (0, 1, 2)
    assert calls["n"] >= 2


def test_sample_exponential_index_rejects_bad_input():
    base = noise.exp_lower_rational(0.5)
    src = noise.make_source(1)
    with pytest.raises(InvalidParameterError):
        noise.sample_exponential_index(src, [], [], base)
    with pytest.raises(InvalidParameterError):
        noise.sample_exponential_index(src, [0, 0], [0, 1], base)
    with pytest.raises(InvalidParameterError):
        noise.sample_exponential_index(src, [1], [-1], base)


# ------------------------------------------------------------------ exponential mechanism


def test_exponential_mechanism_law():
    eps = 1.0
    scores = [3, 0, 5, 5, 1]
    src = noise.make_source(11)
    n = 40000
    c = collections.Counter(exponential_mechanism(scores, epsilon=eps, rng=src) for _ in range(n))
    e = effective_epsilon(exponential_base(eps))
    w = [math.exp(e * s / 2) for s in scores]
    assert _chi2_pvalue([c[i] for i in range(5)], [x / sum(w) for x in w]) > 1e-6
    assert abs(e - eps) < 1e-12 and e <= eps


def test_exponential_mechanism_sensitivity_and_weights():
    src = noise.make_source(5)
    n = 30000
    c = collections.Counter(
        exponential_mechanism([0, 4], epsilon=1.0, sensitivity=2, weights=[3, 1], rng=src) for _ in range(n)
    )
    w = [3.0, math.exp(1.0 * 4 / 4)]
    assert _chi2_pvalue([c[0], c[1]], [x / sum(w) for x in w]) > 1e-6
    with pytest.raises(InvalidParameterError):
        exponential_mechanism([1.5], epsilon=1.0)
    with pytest.raises(InvalidParameterError):
        exponential_mechanism([], epsilon=1.0)


# ------------------------------------------------------------------ ordered domain


def _brute_quality(data, y):
    return min(sum(x <= y for x in data), sum(x >= y for x in data))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-5, 20), min_size=1, max_size=12), st.integers(-8, -5), st.integers(20, 26))
def test_interior_quality_intervals_match_brute_force(data, lo, hi):
    vals = sorted(set(data))
    cnt = [data.count(v) for v in vals]
    iv = interior_quality_intervals(vals, cnt, lo, hi)
    covered = []
    for s, e, q in iv:
        assert s <= e
        for y in range(s, e + 1):
            assert q == _brute_quality(data, y)
            covered.append(y)
    assert covered == list(range(lo, hi + 1))


def test_ordered_em_exact_law_on_small_domain():
    data = [2, 2, 2, 5, 9, 9]
    vals, cnt = [2, 5, 9], [3, 1, 2]
    eps = 1.0
    law = em_interval_law(vals, cnt, 0, 11, effective_epsilon(exponential_base(eps)) / 2)
    probs = [0.0] * 12
    for s, e, p in law:
        for y in range(s, e + 1):
            probs[y] = p / (e - s + 1)
    src = noise.make_source(21)
    n = 40000
    c = collections.Counter(
        ordered_exponential_mechanism(data, lower=0, upper=11, epsilon=eps, rng=src) for _ in range(n)
    )
    assert _chi2_pvalue([c[y] for y in range(12)], probs) > 1e-6


def test_ordered_em_huge_domain_point_mass_and_ties():
    big = 1 << (1 << 20)
    n = math.ceil(2 * (1 << 20) * math.log(2)) + 10
    src = noise.make_source(2)
    x = big // 3
    outs = [
        ordered_exponential_mechanism([x], counts=[n], lower=0, upper=big - 1, epsilon=1.0, rng=src) for _ in range(10)
    ]
    assert all(o == x for o in outs)
    # many ties around two values on a 2^64 domain
    vals = [7] * 500 + [9] * 500
    y = ordered_exponential_mechanism(vals, lower=0, upper=2**64 - 1, epsilon=1.0, rng=src)
    assert 7 <= y <= 9


def test_ordered_em_rejects_out_of_domain_values():
    with pytest.raises(DPTreeError):
        ordered_exponential_mechanism([5, 50], lower=0, upper=10, epsilon=1.0, rng=1)
    with pytest.raises(DPTreeError):
        ordered_exponential_mechanism([5], lower=10, upper=0, epsilon=1.0, rng=1)


# ------------------------------------------------------------------ Choosing Mechanism


def test_choosing_constants_match_lemma_2_4():
    eps, delta, beta, n, k = 0.5, 1e-6, 0.05, 1000, 3
    assert choosing_error_bound(eps, delta, beta, n, k) == pytest.approx(
        16 / eps * math.log(4 * k * n / (beta * eps * delta))
    )
    assert choosing_threshold(eps, delta, k) == pytest.approx(8 / eps * math.log(4 * k / (eps * delta)))


def test_choosing_finds_heavy_candidate_and_meets_lemma_2_4():
    eps, delta, beta = 1.0, 1e-6, 0.05
    quals = [0] * 50 + [400] + [3] * 20 + [390]
    n = sum(quals)
    bound = 400 - choosing_error_bound(eps, delta, beta, n)
    src = noise.make_source(9)
    runs = 300
    bad = 0
    for _ in range(runs):
        c = choosing_mechanism(quals, epsilon=eps, delta=delta, rng=src)
        q = 0 if c is None else quals[c]
        bad += q < bound
    assert binom_sf(bad, runs, beta) > 1e-6
    assert bad == 0  # the bound is loose here: nothing should fail


def test_choosing_returns_bottom_when_opt_is_small():
    eps, delta = 1.0, 1e-6
    opt = int(choosing_threshold(eps, delta) / 2)  # the privacy case of the proof: pass prob <= delta
    src = noise.make_source(8)
    outs = [choosing_mechanism([opt, 1, 2], epsilon=eps, delta=delta, rng=src) for _ in range(500)]
    assert all(o is None for o in outs)


def test_choosing_rejects_out_of_range_parameters():
    with pytest.raises(InvalidParameterError):
        choosing_mechanism([5], epsilon=3.0, delta=1e-6)
    with pytest.raises(InvalidParameterError):
        choosing_mechanism([5], epsilon=1.0, delta=0.0)
    with pytest.raises(InvalidParameterError):
        choosing_mechanism([-1], epsilon=1.0, delta=1e-6)
    for huge in ([2**70, 3], np.array([2**63, 3], dtype=np.uint64)):  # qualities count records: < 2^63
        with pytest.raises(InvalidParameterError, match="below 2\\^63"):
            choosing_mechanism(huge, epsilon=1.0, delta=1e-6)
    # arrays and lists are the same mechanism: same validation, same (bottom-or-index) outputs
    assert choosing_mechanism(np.array([0, 0], dtype=np.int64), epsilon=1.0, delta=1e-6, rng=1) is None


# ------------------------------------------------------------------ AboveThreshold


def test_above_threshold_bound_is_at_least_theorem_4_2():
    for m, beta, eps in [(1, 0.1, 1.0), (8, 1e-6, 0.3)]:
        assert above_threshold_error_bound(eps, m, beta) >= 8 / eps * math.log(2 * m / beta)


def test_above_threshold_accuracy():
    eps, m, beta = 1.0, 10, 0.01
    alpha = above_threshold_error_bound(eps, m, beta)
    c = 100
    src = noise.make_source(12)
    bad = 0
    runs = 300
    for _ in range(runs):
        at = AboveThreshold(threshold=c, epsilon=eps, rng=src)
        answers = [0, 10, int(c - alpha) - 1, 50, int(c + alpha) + 1, 0, 0, 0, 0, 0]
        top = None
        for i, a in enumerate(answers):
            if at.query(a):
                top = i
                break
        # with prob >= 1 - beta: top exactly at index 4 (the only query >= c + alpha)
        bad += top != 4
    assert binom_sf(bad, runs, beta) > 1e-6


def test_above_threshold_halts():
    at = AboveThreshold(threshold=0, epsilon=1.0, rng=1)
    while not at.query(10**6):
        pass
    with pytest.raises(InvalidParameterError):
        at.query(1)
