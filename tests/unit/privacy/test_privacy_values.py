"""unit= and budget= on every release function and plan: the same release as the shortcut keywords,
and a clear refusal of what a mechanism cannot state."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dptree
from dptree import Budget, PerRecord, PerUser, Replace
from dptree.errors import InvalidParameterError
from dptree.privacy.unit import privacy_values

X = np.arange(200) % 97


def _hierarchy() -> dptree.Hierarchy:
    return dptree.Hierarchy.from_paths([("a", "x"), ("a", "y"), ("b", "z")])


def _paths() -> pd.DataFrame:
    return pd.DataFrame({"l1": ["a", "a", "b"] * 20, "l2": ["x", "y", "z"] * 20})


#: (name, call taking the privacy keywords): a seeded release of every product
RELEASES = {
    "range_tree": lambda **kw: dptree.range_tree(X, lower=0, upper=127, rng=5, **kw),
    "sparse_range_tree": lambda **kw: dptree.sparse_range_tree(X, lower=0, upper=127, rng=5, **kw),
    "hierarchy_counts": lambda **kw: dptree.hierarchy_counts(_paths(), _hierarchy(), levels=["l1", "l2"], rng=5,
                                                             **kw),
    "interior_point": lambda **kw: dptree.interior_point(X, lower=0, upper=127, rng=5, **kw),
    "median": lambda **kw: dptree.median(X, lower=0, upper=127, rng=5, **kw),
    "quantile": lambda **kw: dptree.quantile(X, 0.25, lower=0, upper=127, rng=5, **kw),
    "quantiles": lambda **kw: dptree.quantiles(X, [0.25, 0.75], lower=0, upper=127, rng=5, **kw),
}


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_a_budget_value_releases_what_its_keywords_release(name):
    call = RELEASES[name]
    by_keyword, by_value = call(epsilon=1.0), call(budget=Budget(epsilon=1.0), unit=PerRecord())
    assert by_value.privacy == by_keyword.privacy
    doc_k, doc_v = by_keyword.to_document(), by_value.to_document()
    doc_k.pop("metadata", None), doc_v.pop("metadata", None)
    assert doc_v == doc_k


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_a_budget_with_its_shortcut_is_refused(name):
    with pytest.raises(InvalidParameterError, match="both given") as err:
        RELEASES[name](epsilon=1.0, budget=Budget(epsilon=1.0))
    assert err.value.parameter == "budget"


def test_units_reach_the_statement():
    rel = dptree.range_tree(X, lower=0, upper=127, budget=Budget(epsilon=1.0), unit=PerUser(X % 10, 3), rng=5)
    assert rel.privacy["max_contributions"] == 3 and rel.privacy["neighbors"] == "add_remove"
    rel = dptree.range_tree(X, lower=0, upper=127, budget=Budget(epsilon=1.0), unit=Replace(), rng=5)
    assert rel.privacy["neighbors"] == "replace"
    plan = dptree.plan_range_tree(lower=0, upper=127, budget=Budget(rho=0.5), noise="gaussian")
    assert plan.privacy_loss().rho() == pytest.approx(0.5)
    plan = dptree.plan_range_tree(lower=0, upper=127, budget=Budget(epsilon=1.0, delta=1e-6), noise="gaussian")
    assert plan.budget == Budget(epsilon=1.0, delta=1e-6)
    assert dptree.plan_quantiles([0.5], lower=0, upper=127, budget=Budget(epsilon=1.0),
                                 unit=Replace()).statement["neighbors"] == "replace"


@pytest.mark.parametrize(("call", "kwargs", "parameter", "says"), [
    (dptree.median, {"budget": Budget(rho=0.5)}, "budget", "takes an epsilon budget"),
    (dptree.median, {"budget": Budget(epsilon=1.0, delta=1e-6)}, "budget", "pure epsilon-DP"),
    (dptree.median, {"unit": PerUser("uid", 2), "epsilon": 1.0}, "unit", "does not bound records per user"),
    (dptree.sparse_range_tree, {"unit": Replace(), "epsilon": 1.0}, "unit", "add/remove neighbours only"),
    (dptree.median, {"unit": PerRecord(3), "epsilon": 1.0}, "unit", "one record per person"),
    (dptree.range_tree, {"unit": "per_user", "epsilon": 1.0}, "unit", "unit must be"),
    (dptree.range_tree, {"budget": 1.0}, "budget", "must be a dptree.Budget"),
    (dptree.range_tree, {"unit": PerRecord(), "max_contributions": 2, "epsilon": 1.0}, "unit", "both given"),
])
def test_what_a_mechanism_cannot_state_is_refused(call, kwargs, parameter, says):
    with pytest.raises(InvalidParameterError, match=says) as err:
        call(X, lower=0, upper=127, **kwargs)
    assert err.value.parameter == parameter


def test_the_decorator_needs_the_declared_parameters():
    with pytest.raises(TypeError, match="declare unit= and budget="):
        @privacy_values
        def f(values, *, epsilon):  # refused when decorated, before any call
            return values
