"""Bad input to the seed-002 entry points: each gives a DPTreeError subclass that says what to do."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dptree.errors import DataError, DomainError, DPTreeError, InvalidParameterError
from dptree.interior.api import interior_point
from dptree.interior.quantiles import median, quantile
from dptree.interior.thresholds import learn_threshold


def test_lower_greater_than_upper():
    with pytest.raises(DomainError, match="swap"):
        interior_point([1, 2], lower=10, upper=0, epsilon=1.0)
    with pytest.raises(DomainError):
        median([1.0], lower=1.5, upper=-1.5, epsilon=1.0)


def test_empty_data_is_not_refused():
    # whether the data is empty is private: the mechanisms run on the empty multiset instead of
    # refusing (a refusal exactly when n = 0 would be an unmetered bit about n)
    assert 0 <= interior_point([], lower=0, upper=10, epsilon=1.0, rng=1).value <= 10
    assert 0 <= interior_point([], lower=0, upper=10, epsilon=1.0, delta=1e-6, method="treelog", n=5, rng=1).value <= 10
    learn_threshold([], [], lower=0, upper=10, epsilon=1.0, rng=1)
    assert 0 <= quantile(np.array([]), 0.5, lower=0, upper=10, epsilon=1.0, rng=1).value <= 10


@pytest.mark.parametrize("eps", [0, -1.0, float("nan"), float("inf"), "1"])
def test_bad_epsilon(eps):
    with pytest.raises(InvalidParameterError):
        interior_point([1, 2], lower=0, upper=10, epsilon=eps)  # type: ignore[arg-type]


@pytest.mark.parametrize("delta", [0.0, 1.0, 1.5, -0.1])
def test_delta_outside_open_unit_interval_for_tree_methods(delta):
    for method in ("treelog", "heavypaths"):
        with pytest.raises(InvalidParameterError, match="delta"):
            interior_point([1, 2], lower=0, upper=10, epsilon=1.0, delta=delta, method=method)


def test_labels_not_binary():
    with pytest.raises(DataError, match="0 or 1"):
        learn_threshold([1, 2, 3], [0, 1, 2], lower=0, upper=10, epsilon=1.0)
    with pytest.raises(DataError, match="0 or 1"):
        learn_threshold([1, 2, 3], [0, 1, float("nan")], lower=0, upper=10, epsilon=1.0)


def test_nan_and_inf_values():
    with pytest.raises(DataError, match="NaN"):
        interior_point([1.0, math.nan], lower=0.0, upper=10.0, epsilon=1.0)
    with pytest.raises(DataError, match=r"\+-inf"):
        interior_point(np.array([1.0, np.inf]), lower=0, upper=10, epsilon=1.0)
    with pytest.raises(DomainError, match="finite"):
        interior_point([1.0], lower=0.0, upper=math.inf, epsilon=1.0)


def test_encoding_cannot_hold_values():
    # an integer domain cannot hold 2.5: the message says to use float bounds
    with pytest.raises(DataError, match="float bounds"):
        interior_point([1, 2.5], lower=0, upper=10, epsilon=1.0)
    # a 400-digit integer on a float64 domain is beyond the doubles: clamped to upper, like any value
    # outside the bounds (every product's domain reads it so)
    assert 0.0 <= interior_point([10**400] * 50, lower=0.0, upper=1.0, epsilon=1.0, rng=0).value <= 1.0
    with pytest.raises(DataError):
        interior_point(["a", "b"], lower=0, upper=10, epsilon=1.0)


def test_other_parameters():
    with pytest.raises(InvalidParameterError):
        interior_point([1], lower=0, upper=10, epsilon=1.0, method="bogus")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError):
        interior_point([1], lower=0, upper=10, epsilon=1.0, beta=1.5)
    with pytest.raises(InvalidParameterError):
        quantile([1], 1.5, lower=0, upper=10, epsilon=1.0)
    with pytest.raises(InvalidParameterError):
        interior_point([1], lower=0, upper=10, epsilon=1.0, rng="seed")  # type: ignore[arg-type]


def test_all_errors_are_dptree_errors():
    assert issubclass(DataError, DPTreeError) and issubclass(DomainError, DPTreeError)


def test_only_noise_module_draws_randomness_in_seed002_modules():
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[3] / "src" / "dptree"
    pat = re.compile(r"\bimport random\b|np\.random|numpy\.random|\bsecrets\b|os\.urandom|random\.random")
    names = [str(p.relative_to(root)) for p in (root / "interior").glob("*.py")] + ["cli/interior.py"]
    assert len(names) > 2
    for name in names:
        text = (root / name).read_text()
        assert not pat.search(text), name


def test_learn_threshold_names_a_fix_it_takes() -> None:
    """It has no on_invalid=: the shared hint to pass one would send the caller into a TypeError."""
    x = np.r_[np.arange(99.0), np.nan]
    with pytest.raises(DataError, match="remove those records, with their labels, first") as info:
        learn_threshold(x, (x > 50).astype(int), lower=0, upper=100, epsilon=1.0)
    assert "on_invalid" not in str(info.value)
