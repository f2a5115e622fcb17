"""The privacy unit and budget values, and the privacy loss a plan reports."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import dptree
from dptree.errors import InvalidParameterError
from dptree.privacy.budget import Budget, zcdp_delta
from dptree.privacy.loss import Exponential, Gaussian, Laplace, PrivacyLoss, PureDP, measurement_from_dict
from dptree.privacy.statement import Neighbors
from dptree.privacy.unit import PerRecord, PerUser, Replace, unit_from_keywords


def test_budget_keywords_pick_the_kind():
    assert Budget(epsilon=1.0) == Budget.pure(1.0)
    assert Budget(epsilon=1.0, delta=1e-6) == Budget.approx(1.0, 1e-6)
    assert Budget(rho=0.5) == Budget.zcdp(0.5)
    assert Budget(rho=0.5).kind == "zcdp" and Budget(epsilon=2).kind == "pure"


@pytest.mark.parametrize("kwargs", [{}, {"epsilon": 0}, {"epsilon": -1}, {"epsilon": float("nan")},
                                    {"rho": 1, "epsilon": 1}, {"epsilon": 1, "delta": 1.0},
                                    {"rho": 0.5, "delta": 1e-6}])
def test_budget_refuses_impossible_values(kwargs):
    with pytest.raises(InvalidParameterError):
        Budget(**kwargs)


def test_budget_is_frozen():
    b = Budget(epsilon=1.0)
    with pytest.raises(AttributeError):
        b.epsilon = 2.0  # type: ignore[misc]


def test_units_state_their_relation():
    assert PerRecord().neighbors() == Neighbors("add_remove", 1)
    assert PerRecord(3).neighbors() == Neighbors("add_remove", 3)
    assert PerUser("uid", 4).neighbors() == Neighbors("add_remove", 4)
    assert Replace().neighbors() == Neighbors("replace", 1)
    assert PerUser("uid", 2) == PerUser("uid", 2) != PerUser("other", 2)
    ids = np.arange(3)
    assert PerUser(ids, 2) == PerUser(ids, 2) != PerUser(ids.copy(), 2)


@pytest.mark.parametrize("build", [lambda: PerUser(None, 2), lambda: PerUser("u", 0), lambda: PerUser("u", 1.5),
                                   lambda: Replace(0), lambda: PerRecord(True)])
def test_illegal_units_cannot_be_built(build):
    with pytest.raises(InvalidParameterError):
        build()


def test_keywords_build_the_unit_and_refuse_clashes():
    assert unit_from_keywords() == PerRecord()
    assert unit_from_keywords(neighbors="replace") == Replace()
    assert unit_from_keywords(user_id="u", max_contributions=3) == PerUser("u", 3)
    assert unit_from_keywords(max_contributions=3) == PerRecord(3)
    with pytest.raises(InvalidParameterError, match="replace"):
        unit_from_keywords(neighbors="replace", user_id="u")
    with pytest.raises(InvalidParameterError, match="not both"):
        unit_from_keywords(PerUser("u", 2), max_contributions=2)
    with pytest.raises(InvalidParameterError, match="unit must be"):
        unit_from_keywords("per_user")  # type: ignore[arg-type]


def test_public_names():
    assert dptree.PerUser is PerUser and dptree.Replace is Replace and dptree.PrivacyLoss is PrivacyLoss


def test_measurement_losses_are_exact():
    # discrete Laplace at scale t on sensitivity s: epsilon = s / t; rho = epsilon^2 / 2
    lap = Laplace(Fraction(5, 2), 2)
    assert lap.epsilon == 0.8 and lap.rho == pytest.approx(0.32)
    # discrete Gaussian: rho = s^2 / (2 sigma^2), no pure epsilon
    g = Gaussian(Fraction(8), 2)
    assert g.rho == 0.25 and g.epsilon == math.inf
    # exponential mechanism: bounded range, rho = epsilon^2 / 8 (a quarter of the pure bound)
    e = Exponential(1.0)
    assert e.rho == 0.125 and PureDP(1.0).rho == 0.5


def test_composition_and_conversion():
    d = 11  # a Laplace tree of 11 levels at epsilon = 1: rho is epsilon^2 / (2 d), not epsilon^2 / 2
    loss = PrivacyLoss(Neighbors(), tuple(Laplace(Fraction(d), 1, f"level {i}") for i in range(d)))
    assert loss.epsilon() == pytest.approx(1.0)
    assert loss.rho() == pytest.approx(1 / (2 * d))
    assert loss.delta_at(1.0) == 0.0
    assert loss.delta_at(0.5) == pytest.approx(zcdp_delta(1 / (2 * d), 0.5))
    mixed = PrivacyLoss(Neighbors(), (Gaussian(Fraction(2), 1), Exponential(0.5)))
    assert mixed.epsilon() == math.inf and mixed.rho() == pytest.approx(0.25 + 0.5**2 / 8)
    assert mixed.families == ("gaussian", "exponential")


def test_losses_round_trip_exactly():
    loss = PrivacyLoss(Neighbors("replace", 2), (Laplace(Fraction(1, 3), 2, "root"), Gaussian(Fraction(7, 4), 1),
                                                 Exponential(0.25, "q"), PureDP(0.1)), parallel=5)
    back = PrivacyLoss.from_dict(loss.to_dict())
    assert back == loss and back.to_dict() == loss.to_dict()
    with pytest.raises(InvalidParameterError):
        measurement_from_dict({"family": "laplace", "scale": "0", "sensitivity": "1"})
    with pytest.raises(InvalidParameterError):
        measurement_from_dict({"family": "cauchy"})
    with pytest.raises(InvalidParameterError):
        PrivacyLoss(Neighbors(), ())
