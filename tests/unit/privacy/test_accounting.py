"""Tight accounting over sequences of releases: Rényi curves, PLD, zCDP and the Rényi filter."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import special, stats

import dptree
from dptree.errors import BudgetExceededError, DPTreeError
from dptree.privacy.accounting import (
    DEFAULT_ORDERS,
    RenyiFilter,
    pld_epsilon,
    pure_curve,
    rdp_curve,
    rdp_epsilon,
    zcdp_rho,
)
from dptree.privacy.loss import ApproxDP, Exponential, Gaussian, Laplace, PrivacyLoss, PureDP
from dptree.privacy.statement import Neighbors

DELTA = 1e-6


def _loss(*ms, parallel: int = 1) -> PrivacyLoss:
    return PrivacyLoss(Neighbors(), tuple(ms), parallel)


def _tree(epsilon: float) -> PrivacyLoss:
    return dptree.plan_range_tree(lower=0, upper=1023, epsilon=epsilon, branching=2).privacy_loss()


def _levels(epsilon: float, levels: int) -> PrivacyLoss:
    """A tree of ``levels`` noised levels of sensitivity 1 sharing ``epsilon`` uniformly."""
    return _loss(*(Laplace(Fraction(levels) / Fraction(epsilon), 1, f"level {j}") for j in range(levels)))


def _exact_rr_epsilon(eps0: float, n: int, delta: float) -> float:
    """The exact epsilon at ``delta`` of n-fold binary randomized response at eps0 (equal to n
    discrete Laplace steps of sensitivity 1): the privacy loss is (n - 2i) eps0 when i of the n
    bits flip, i ~ Binomial(n, q) under P, and delta(eps) = E_P[(1 - e^(eps - L))_+]."""
    q = 1 / (1 + math.exp(eps0))
    i = np.arange(n + 1)
    logp = stats.binom.logpmf(i, n, q)
    loss = (n - 2 * i) * eps0

    def delta_at(eps: float) -> float:
        keep = loss > eps
        return float(np.sum(np.exp(logp[keep]) * -np.expm1(eps - loss[keep])))

    lo, hi = 0.0, n * eps0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if delta_at(mid) > delta else (lo, mid)
    return hi


# The published table: range trees of D = 1024 with 11 noised levels of sensitivity 1.
TABLE = [(12, 1.0, 5.28, 4.97), (52, 0.25, 2.63, 2.45), (365, 0.1, 2.82, 2.63), (365, 0.05, 1.33, 1.24)]


@pytest.mark.parametrize("n, eps, rdp, pld", TABLE)
def test_the_published_table_within_a_few_percent(n, eps, rdp, pld):
    # the table was computed with the continuous Laplace; the discrete Laplace is charged its own
    # (slightly larger) curve and PLD, hence upper-side tolerances of 2 %
    loss = _levels(eps, 11)
    assert rdp <= rdp_epsilon([loss] * n, DELTA) <= rdp * 1.02
    assert pld * 0.995 <= pld_epsilon([loss] * n, DELTA) <= pld * 1.02


@pytest.mark.parametrize("n, eps", [(12, 1.0), (52, 0.25), (365, 0.1), (365, 0.05)])
def test_range_trees_between_the_exact_curve_and_basic_composition(n, eps):
    loss = _tree(eps)
    assert {m.sensitivity for m in loss.measurements} == {1}
    steps = n * len(loss.measurements)
    exact = _exact_rr_epsilon(eps / len(loss.measurements), steps, DELTA)
    pld, rdp = pld_epsilon([loss] * n, DELTA), rdp_epsilon([loss] * n, DELTA)
    # an upper bound never below the mechanism's exact privacy curve (up to the root finders'
    # precision): on a grid that holds every step's loss the PLD is the exact curve
    assert exact * (1 - 1e-7) <= pld <= exact * 1.01
    assert pld <= rdp <= n * loss.epsilon()
    # no composition is cheaper than one of its releases
    assert rdp_epsilon([loss], DELTA) <= rdp and pld_epsilon([loss], DELTA) <= pld


def test_discrete_laplace_curve_is_exact_and_above_the_continuous_laplace():
    eps = 0.3
    m = Laplace(Fraction(10, 3), 1)  # parameter 1/scale = 0.3
    orders = (1.5, 2.0, 4.0, 16.0)
    curve = rdp_curve(_loss(m), orders)
    k = np.arange(-4000, 4001)
    logp = -eps * np.abs(k) + math.log(math.tanh(eps / 2))  # discrete Laplace pmf, normalised
    logq = -eps * np.abs(k - 1) + math.log(math.tanh(eps / 2))
    for a, c in zip(orders, curve):
        direct = special.logsumexp(a * logp + (1 - a) * logq) / (a - 1)
        assert c == pytest.approx(direct, rel=1e-9)
        mironov = eps + math.log1p((a - 1) * math.expm1(eps * (1 - 2 * a)) / (2 * a - 1)) / (a - 1)
        assert mironov < direct  # the continuous Laplace's curve would undercharge


def test_pure_and_larger_sensitivity_get_the_randomized_response_curve():
    orders = (2.0, 8.0)
    rr = rdp_curve(_loss(PureDP(0.5)), orders)
    assert np.array_equal(rdp_curve(_loss(Laplace(Fraction(4), 2)), orders), rr)
    for a, c in zip(orders, rr):
        assert c == pytest.approx(math.log((math.exp(a * 0.5) + math.exp((1 - a) * 0.5)) / (1 + math.exp(0.5))) / (a - 1))
        assert c < a * 0.5**2 / 2  # below Bun & Steinke's pure-to-zCDP bound


def test_exponential_takes_the_smaller_of_bounded_range_and_pure():
    orders = (1.5, 4.0, 64.0, 1024.0)
    e = Exponential(2.0)
    curve = rdp_curve(_loss(e), orders)
    rr = rdp_curve(_loss(PureDP(2.0)), orders)
    br = np.array(orders) * 2.0**2 / 8
    assert np.allclose(curve, np.minimum(rr, br))
    assert curve[0] == pytest.approx(br[0]) and curve[-1] == pytest.approx(rr[-1])


def test_gaussian_rho_and_curve_closed_form():
    losses = [_loss(Gaussian(Fraction(9), 2), Gaussian(Fraction(1, 2), 1)), _loss(Gaussian(Fraction(4), 3))]
    rho = (4 / 18 + 1 / 1) + 9 / 8
    assert zcdp_rho(losses) == pytest.approx(rho, rel=1e-12)
    assert np.allclose(rdp_curve(losses[0], DEFAULT_ORDERS) + rdp_curve(losses[1], DEFAULT_ORDERS),
                       np.array(DEFAULT_ORDERS) * rho)
    # a discrete Gaussian of sensitivity 1: PLD no worse than the zCDP conversion
    one = [_loss(Gaussian(Fraction(25), 1))] * 20
    assert pld_epsilon(one, DELTA) <= rdp_epsilon(one, DELTA)


def test_a_tree_is_charged_its_levels_rho():
    loss = _tree(0.1)
    d = len(loss.measurements)
    assert zcdp_rho([loss] * 365) == pytest.approx(365 * 0.1**2 / (2 * d))


def test_parallel_copies_are_not_multiplied():
    m = Laplace(Fraction(5), 1)
    assert np.array_equal(rdp_curve(_loss(m, parallel=7)), rdp_curve(_loss(m)))
    assert pld_epsilon([_loss(m, parallel=7)], DELTA) == pld_epsilon([_loss(m)], DELTA)


def test_approximate_steps_and_multi_coordinate_gaussians_are_refused():
    approx = _loss(Laplace(Fraction(2), 1), ApproxDP(0.1, 1e-9))
    with pytest.raises(DPTreeError, match="epsilon_delta"):
        rdp_curve(approx)
    with pytest.raises(DPTreeError, match="epsilon_delta"):
        pld_epsilon([approx], DELTA)
    with pytest.raises(DPTreeError, match="epsilon_delta"):
        zcdp_rho([approx])
    with pytest.raises(DPTreeError, match="rdp_epsilon"):
        pld_epsilon([_loss(Gaussian(Fraction(4), 2))], DELTA)
    with pytest.raises(DPTreeError, match="delta"):
        rdp_epsilon([_tree(1.0)], 0.0)


def test_filter_budget_converts_back_to_epsilon_at_the_split_delta():
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib

    f = RenyiFilter(2.0, 1e-5, (8.0, 16.0, 32.0))
    assert len(f.orders) == 3
    for a, b in zip(f.orders, f.budgets):
        eps, _ = rdp_lib.compute_epsilon([a], [b], 1e-5 / 3)
        assert eps == pytest.approx(2.0, rel=1e-12)


def test_filter_drops_orders_without_budget_up_front():
    f = RenyiFilter(1.0, 1e-6, (1.5, 2.0, 16.0, 32.0))
    assert f.orders == (16.0, 32.0)
    with pytest.raises(DPTreeError, match="larger orders"):
        RenyiFilter(0.5, 1e-9, (1.1, 1.2))


def test_filter_stops_at_the_boundary():
    loss = _loss(PureDP(0.2))
    f = RenyiFilter(3.0, DELTA, (10.0,))
    c = rdp_curve(loss, (10.0,))[0]
    fits = int(f.budgets[0] // c)
    assert fits * c <= f.budgets[0] < (fits + 1) * c
    for _ in range(fits):
        assert f.can_afford(loss)
        f.spend(loss)
    spent = f.spent.copy()
    assert not f.can_afford(loss)
    with pytest.raises(BudgetExceededError):
        f.spend(loss)
    assert np.array_equal(f.spent, spent)  # the refused release charged nothing
    assert f.epsilon_spent() <= 3.0
    # a smaller release may still fit in what is left
    small = _loss(PureDP(1e-4))
    assert f.can_afford(small)


def test_filter_accepts_while_some_order_is_within_budget():
    f = RenyiFilter(3.0, DELTA, (8.0, 64.0))
    assert f.orders == (8.0, 64.0)
    big = _loss(PureDP(2.5))  # over order 8's budget at once, within order 64's
    assert f.can_afford(big)
    f.spend(big)
    assert list(f.spent > f.budgets) == [True, False]
    assert not f.can_afford(_loss(PureDP(0.5)))  # would take order 64 over too


def test_workload_filter_fits_a_year_of_daily_trees_and_refuses_the_next_big_one():
    day = _tree(0.1)
    f = RenyiFilter.for_workload(3.0, DELTA, [day] * 365)
    assert len(f.orders) == 1
    for _ in range(365):
        f.spend(day)
    pld = pld_epsilon([day] * 365, DELTA)
    assert pld <= f.epsilon_spent() <= 3.0
    assert not f.can_afford(_tree(1.0))


def test_hybrid_filter_sets_delta_aside_for_approximate_steps():
    """An (epsilon, delta) step: refused without delta set aside; with D set aside, its epsilon is
    charged as randomized response against budgets computed at delta - D, and the deltas of such
    steps may not sum past D (stopping exactly there)."""
    step = _loss(Laplace(Fraction(10), 1), ApproxDP(0.2, 4e-7))
    with pytest.raises(DPTreeError, match="epsilon_delta"):
        RenyiFilter(3.0, DELTA, (16.0,)).cost(step)
    hybrid = RenyiFilter(3.0, 1e-5, (16.0,), approx_delta=1e-6)
    plain = RenyiFilter(3.0, 9e-6, (16.0,))
    assert hybrid.budgets[0] == pytest.approx(plain.budgets[0], rel=1e-12)
    expected = pure_curve(0.1, (16.0,)) + pure_curve(0.2, (16.0,))
    assert hybrid.cost(step)[0] == pytest.approx(expected[0], rel=1e-9)
    assert hybrid.cost(step)[0] >= expected[0]  # rounded up, never down
    hybrid.spend(step)
    hybrid.spend(step)
    assert not hybrid.can_afford(step)  # 3 x 4e-7 > 1e-6
    with pytest.raises(BudgetExceededError, match="set aside"):
        hybrid.spend(step)
    assert hybrid.approx_spent == pytest.approx(8e-7)
    assert hybrid.can_afford(_loss(PureDP(0.1)))
    with pytest.raises(DPTreeError, match="below delta"):
        RenyiFilter(3.0, DELTA, approx_delta=DELTA)
