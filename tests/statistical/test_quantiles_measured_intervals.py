"""The measured intervals of the exponential-mechanism quantile methods (``interval="counts"``,
:mod:`dptree.quantiles.measured`): the tests' noise law is exact, each end errs with probability at
most (1 - level) / 2 and close to it where the true quantile sits just past a cut, and every level
covers at least its nominal rate end to end, without a declared size, on spread, skewed and tied
data."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dptree
from dptree.noise import discrete_laplace, make_source
from dptree.quantiles.measured import _SumLaw, interval_ends, noise_tail

SCALE = Fraction(5)


def test_the_noise_law_is_the_sum_of_discrete_laplace_draws_and_the_chernoff_bound_is_above_it() -> None:
    src = make_source(1)
    a, b, lam = 7, 12, 0.3
    z = discrete_laplace(src, SCALE, (a + b) * 40_000).reshape(40_000, a + b)
    w = (1 - lam) * z[:, :a].sum(1) - lam * z[:, a:].sum(1)
    law = _SumLaw(SCALE, a + b)
    for t in (0.0, 5.0, 12.5, 20.0, 31.0):
        exact = noise_tail(SCALE, a, b, lam, t)
        empirical = float(np.mean(w >= t))
        assert abs(exact - empirical) < 4 * np.sqrt(exact * (1 - exact) / w.size) + 1e-4, (t, exact, empirical)
        assert law.chernoff(a, b, lam, t) >= exact - 1e-12


@pytest.mark.parametrize("q", [0.1, 0.5, 0.9])
def test_each_end_errs_at_most_at_its_rate_and_near_it_at_the_worst_phase(q: float) -> None:
    """Two cells split at one cut c = 999 of 2000 points, n = 2000 records, declared or not. With
    F(c) = q n - 1 (x_q past c, as close as integers allow: the high end's worst case) the high end
    falls at c, a miss; with F(c) = q n (x_q at c: the low end's) the low end falls past c. Each in at
    most 2.5% of 4000 draws at 95% (plus three standard errors), and in over 1% (not far too
    conservative at the worst case)."""
    n, cuts, size = 2000, [999], 2000
    rng = make_source(2)
    for declared in (None, n):
        for f, x_q in ((round(q * n) - 1, 1000), (round(q * n), 999)):
            cells = np.array([f, n - f])
            noise = discrete_laplace(rng, SCALE, 2 * 4000).reshape(4000, 2)
            miss = 0
            for z in noise:
                ((lo, hi),) = interval_ends(np.array([q]), cells + z, cuts, size, SCALE, 0.95, declared)
                miss += not (lo <= x_q <= hi)
            rate = miss / 4000
            assert rate <= 0.025 + 3 * np.sqrt(0.025 * 0.975 / 4000), (q, declared, x_q, rate)
            assert rate > 0.01, (q, declared, x_q, rate)


def _data(kind: str, n: int, g: np.random.Generator) -> np.ndarray:
    if kind == "uniform":
        return g.integers(0, 1 << 16, n)
    if kind == "lognormal":
        return np.clip(np.round(g.lognormal(7.0, 1.0, n)), 0, (1 << 16) - 1).astype(np.int64)
    return g.choice(np.array([0, 5, 5, 5, 9, 9, 20, 20, 20, 20, 31, 60]) * 100, n)  # tie blocks


@pytest.mark.parametrize(("kind", "method"), [("uniform", "approx"), ("lognormal", "exponential"),
                                              ("ties", "approx"), ("uniform", "joint")])
def test_every_level_covers_its_nominal_rate_end_to_end(kind: str, method: str) -> None:
    """200 releases (a fresh data set each, 10^4 records over 2^16 points, no declared size except
    JointExp's), 95% intervals: every level's coverage at least 0.95 less three standard errors
    of 200 draws, and the intervals informative (median width under a tenth of the domain on
    spread data)."""
    g = np.random.default_rng({"uniform": 3, "lognormal": 4, "ties": 5}[kind])
    qs = np.array([0.1, 0.5, 0.9])
    hits, widths = np.zeros(3), []
    for t in range(200):
        x = _data(kind, 10_000, g)
        sx = np.sort(x)
        truth = sx[np.ceil(qs * x.size).astype(int) - 1]  # min{x : #{<= x} >= q n}
        extra = {"n": x.size} if method == "joint" else {}
        r = dptree.quantiles(x, qs, lower=0, upper=(1 << 16) - 1, epsilon=1.0, method=method, rng=t, **extra)
        assert r.interval == "counts"
        lo, hi = np.asarray(r.ci_low), np.asarray(r.ci_high)
        hits += (lo <= truth) & (truth <= hi)
        widths.append(hi - lo + 1)
    floor = 0.95 - 3 * np.sqrt(0.95 * 0.05 / 200)
    assert np.all(hits / 200 >= floor), (kind, method, hits / 200)
    if kind != "ties":
        assert np.median(np.concatenate(widths)) < (1 << 16) / 10, np.median(np.concatenate(widths))
