"""Budgets at the edge of what dptree computes are refused by name, never with a raw traceback: an
integer epsilon past the doubles (OverflowError), a delta too small for the exact Gaussian
calibration (its final check failed as an AssertionError), a per-record budget that
max_contributions drives below the supported range (the message named epsilon alone)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import dptree
from dptree import InvalidParameterError
from dptree.privacy.budget import EXACT_GAUSSIAN_MIN_DELTA

X = np.arange(100)


@pytest.mark.parametrize("call", [
    lambda: dptree.range_tree(X, lower=0, upper=100, epsilon=10**400),
    lambda: dptree.range_tree(X, lower=0, upper=100, rho=10**400, noise="gaussian"),
    lambda: dptree.sparse_range_tree(X, lower=0, upper=100, epsilon=10**400),
    lambda: dptree.median(X, lower=0, upper=100, epsilon=10**400),
    lambda: dptree.quantiles(X, [0.5], lower=0, upper=100, epsilon=10**400),
])
def test_an_integer_budget_past_the_doubles_is_refused(call: Callable[[], Any]) -> None:
    with pytest.raises(InvalidParameterError, match="outside the supported range"):
        call()


def test_a_delta_below_the_exact_gaussian_calibration_is_refused_by_name() -> None:
    tree = dict(lower=0, upper=100, epsilon=1.0, noise="gaussian")
    h = dptree.Hierarchy.from_paths([("a", "b"), ("a", "c")])
    for call in (lambda d: dptree.range_tree(X, delta=d, **tree),
                 lambda d: dptree.hierarchy_counts([("a", "b")], h, epsilon=1.0, delta=d, method="gaussian")):
        with pytest.raises(InvalidParameterError, match=r"delta=1e-30 is below 1e-20"):
            call(1e-30)
        call(EXACT_GAUSSIAN_MIN_DELTA)  # the smallest supported delta still calibrates


def test_a_per_record_budget_too_small_names_max_contributions() -> None:
    with pytest.raises(InvalidParameterError, match=r"epsilon=1 / max_contributions=\d+ leaves 1e-20 per record"):
        dptree.quantiles(X, [0.5], lower=0, upper=100, epsilon=1.0, user_id=X, max_contributions=10**20)


def test_bounds_share_without_private_bounds_is_refused() -> None:
    with pytest.raises(InvalidParameterError, match="pass bounds='private'"):
        dptree.range_tree(X, lower=0, upper=100, epsilon=1.0, bounds_share=0.5)  # it would be silently unused


@pytest.mark.parametrize("epsilon", [1e3, 1e6])
def test_a_gaussian_release_at_a_huge_epsilon_is_calibrated(epsilon: float) -> None:
    """Balle and Wang's delta multiplied e^epsilon (an OverflowError from epsilon = 710) by a tiny
    normal tail; computed in log space it calibrates, and the release is exact to the noise."""
    from dptree.privacy.budget import _continuous_gaussian_delta

    rel = dptree.range_tree(X, lower=0, upper=127, epsilon=epsilon, delta=1e-6, noise="gaussian", rng=1)
    assert rel.count(0, 49) == pytest.approx(50, abs=0.5)
    assert 0 <= _continuous_gaussian_delta(epsilon, 1e-4, 8) <= 1
    assert _continuous_gaussian_delta(1.0, 4.0, 3) == pytest.approx(0.082542101485596, rel=1e-12)  # direct form
