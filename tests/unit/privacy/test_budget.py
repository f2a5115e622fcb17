"""Budgets: validation and the zCDP conversions (CKS 2020 Cor. 13; Bun & Steinke 2016)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dptree.errors import InvalidParameterError
from dptree.privacy.budget import Budget, check_delta, check_epsilon, zcdp_delta, zcdp_epsilon, zcdp_rho_for


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "1", None, True])
def test_invalid_epsilon(bad: object) -> None:
    with pytest.raises(InvalidParameterError):
        check_epsilon(bad)


@pytest.mark.parametrize("bad", [-0.1, 1.0, 2.0, float("nan"), "x"])
def test_invalid_delta(bad: object) -> None:
    with pytest.raises(InvalidParameterError):
        check_delta(bad)


def test_delta_required() -> None:
    with pytest.raises(InvalidParameterError, match="delta > 0"):
        check_delta(0.0, required=True)


def grid_delta(rho: float, eps: float) -> float:
    alphas = 1 + np.logspace(-6, 4, 200_000)
    logd = (alphas - 1) * (alphas * rho - eps) - np.log(alphas - 1) + alphas * np.log1p(-1 / alphas)
    return float(min(1.0, np.exp(logd.min())))


@pytest.mark.parametrize("rho,eps", [(0.01, 0.5), (0.1, 1.0), (0.5, 3.0), (2.0, 10.0)])
def test_cks_conversion_matches_brute_force_minimum(rho: float, eps: float) -> None:
    d = zcdp_delta(rho, eps)
    g = grid_delta(rho, eps)
    assert d <= g * (1 + 1e-6)  # at least as good as a fine grid (the bound holds at every alpha)
    assert d >= g * (1 - 1e-3)  # and not below the true infimum by more than grid resolution
    # tighter than Bun & Steinke's eps = rho + 2 sqrt(rho log(1/delta))
    assert zcdp_epsilon(rho, d) <= rho + 2 * math.sqrt(rho * math.log(1 / d)) + 1e-9


def test_rho_for_inverts_epsilon() -> None:
    for eps, delta in [(1.0, 1e-6), (0.3, 1e-9), (5.0, 1e-5)]:
        rho = zcdp_rho_for(eps, delta)
        assert zcdp_delta(rho, eps) <= delta
        assert zcdp_delta(rho * 1.001, eps) > delta  # and it is (nearly) the largest such rho
        assert zcdp_epsilon(rho, delta) <= eps * (1 + 1e-9)


def test_budget_objects() -> None:
    assert Budget.pure(2.0).as_rho() == 2.0
    b = Budget.approx(1.0, 1e-6)
    assert 0 < b.as_rho() < 0.5
    z = Budget.zcdp(0.1)
    eps, delta = z.as_epsilon_delta(1e-6)
    assert delta == 1e-6 and eps > 0.1
    with pytest.raises(InvalidParameterError):
        z.as_epsilon_delta()
    with pytest.raises(InvalidParameterError):
        Budget.approx(1.0, 0.0)
