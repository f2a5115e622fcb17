"""Issue 14 (first half): silent wrong answers, data loss, crashes, hangs and unclear messages.

Each test failed on the code before the fix; see the issue for the reproductions."""

from __future__ import annotations

import numpy as np
import pytest

import dptree
from dptree.errors import InvalidParameterError

H = dptree.Hierarchy.from_paths([("US", "CA"), ("US", "NY"), ("FR", "IDF")])
X = np.arange(100)


# ------------------------------------------------------------------ extreme budgets: one range check

_MECHANISMS = {
    "range_tree": lambda e: dptree.range_tree(X, lower=0, upper=1000, epsilon=e),
    "hierarchy": lambda e: dptree.hierarchy_counts([("US", "CA")], H, epsilon=e),
    "hierarchy_gaussian": lambda e: dptree.hierarchy_counts([("US", "CA")], H, epsilon=e, delta=1e-6,
                                                            method="gaussian"),
    "interior_point": lambda e: dptree.interior_point(X, lower=0, upper=1000, epsilon=e),
    "median": lambda e: dptree.median(X, lower=0, upper=1000, epsilon=e),
    "quantile": lambda e: dptree.quantile(X, 0.3, lower=0, upper=1000, epsilon=e),
    "learn_threshold": lambda e: dptree.learn_threshold(X, X % 2, lower=0, upper=1000, epsilon=e),
}


@pytest.mark.parametrize("name", sorted(_MECHANISMS))
@pytest.mark.parametrize("eps", [1e-300, 1e300])
def test_extreme_budgets_are_refused_by_every_mechanism(name, eps):
    with pytest.raises(InvalidParameterError, match="outside the supported range"):
        _MECHANISMS[name](eps)


@pytest.mark.parametrize("name", sorted(set(_MECHANISMS) - {"range_tree"}))
def test_the_ends_of_the_supported_range_run(name):
    lo, hi = dptree.budget.BUDGET_RANGE
    for eps in (lo * (4 if name == "learn_threshold" else 1), hi):
        for _ in range(3):
            _MECHANISMS[name](eps)


def test_learn_threshold_with_a_tiny_budget_needs_no_memory_for_the_padding():
    # noise of scale 4/epsilon makes the public m huge; S's padding is one value with a count
    for seed in range(20):
        dptree.learn_threshold(X, X % 2, lower=0, upper=1000, epsilon=4e-9, rng=seed)
