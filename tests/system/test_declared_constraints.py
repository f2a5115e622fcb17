"""The declared parameter constraints (dptree._validation) are read here and fuzzed: every public
function that declares them is called with each value its constraints refuse, and must raise an
InvalidParameterError naming the parameter, before reading any data. A public entry point
without declarations fails the coverage test."""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np
import pytest

import dptree
from dptree._validation import Constraint, check_param
from dptree.errors import InvalidParameterError
from dptree.hierarchy.error_metrics import clopper_pearson_upper  # noqa: F401  (public metric)

H = dptree.Hierarchy.from_paths([("US", "CA"), ("US", "NY"), ("FR", "IDF")])
ROWS = [("US", "CA"), ("US", "NY"), ("FR", "IDF")]
VALUES = np.arange(50)
REL = dptree.range_tree(VALUES, lower=0, upper=63, epsilon=1.0, rng=0)
HREL = dptree.hierarchy_counts(ROWS, H, epsilon=1.0, rng=0)


class Untouchable:
    """Data that fails the test if it is read: validation must come first."""

    def __array__(self, *a: Any, **k: Any) -> Any:
        raise AssertionError("data read before the parameters were validated")

    def __iter__(self) -> Any:
        raise AssertionError("data read before the parameters were validated")

    def __len__(self) -> int:
        raise AssertionError("data read before the parameters were validated")


#: name -> (the declared function, a valid call taking keyword overrides)
CALLS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "range_tree": (dptree.range_tree, lambda **kw: dptree.range_tree(
        VALUES, **{"lower": 0, "upper": 63, "epsilon": 1.0, "rng": 0, **kw})),
    "plan_range_tree": (dptree.plan_range_tree, lambda **kw: dptree.plan_range_tree(
        **{"lower": 0, "upper": 63, "epsilon": 1.0, **kw})),
    "plan_hierarchy_counts": (dptree.plan_hierarchy_counts, lambda **kw: dptree.plan_hierarchy_counts(
        **{"hierarchy": H, "epsilon": 1.0, **kw})),
    "plan_sparse_range_tree": (dptree.plan_sparse_range_tree, lambda **kw: dptree.plan_sparse_range_tree(
        **{"epsilon": 1.0, **kw})),
    "hierarchy_counts": (dptree.hierarchy_counts, lambda **kw: dptree.hierarchy_counts(
        **{"data": ROWS, "hierarchy": H, "epsilon": 1.0, "rng": 0, **kw})),
    "interior_point": (dptree.interior_point, lambda **kw: dptree.interior_point(
        VALUES, **{"lower": 0, "upper": 2**20, "epsilon": 1.0, "delta": 1e-6, "rng": 0, **kw})),
    "median": (dptree.median, lambda **kw: dptree.median(
        VALUES, **{"lower": 0, "upper": 2**20, "epsilon": 1.0, "rng": 0, **kw})),
    "quantile": (dptree.quantile, lambda **kw: dptree.quantile(
        VALUES, **{"q": 0.25, "lower": 0, "upper": 2**20, "epsilon": 1.0, "rng": 0, **kw})),
    "learn_threshold": (dptree.learn_threshold, lambda **kw: dptree.learn_threshold(
        VALUES, VALUES < 20, **{"lower": 0, "upper": 2**20, "epsilon": 1.0, "delta": 1e-6,
                   "rng": 0, **kw})),
    "method_requirements": (dptree.method_requirements, lambda **kw: dptree.method_requirements(
        **{"size": 2**20, "epsilon": 1.0, "delta": 1e-6, **kw})),
    "quantiles": (dptree.quantiles, lambda **kw: dptree.quantiles(
        VALUES, **{"qs": [0.25, 0.75], "lower": 0, "upper": 63, "epsilon": 1.0, "rng": 0, **kw})),
    "RangeTree.ci": (type(REL).ci, lambda **kw: REL.ci(**{"lo": 0, "hi": 10, **kw})),
    "HierarchyRelease.ci": (type(HREL).ci, lambda **kw: HREL.ci(**{"path": "US", **kw})),
}


def declared(fn: Callable[..., Any]) -> dict[str, list[Constraint | None]]:
    return dict(getattr(fn, "constraints", {}))


def refused_values(options: list[Constraint | None]) -> list[Any]:
    """Values from the constraints' own invalid examples that no option accepts."""
    out = []
    for c in options:
        if c is None:
            continue
        for v in c.invalid_examples():
            try:
                check_param("x", v, options)
            except InvalidParameterError:
                out.append(v)
    return out


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_refused_value_raises_a_clear_error(name: str) -> None:
    fn, call = CALLS[name]
    constraints = declared(fn)
    assert constraints, f"{name} declares no parameter constraints"
    call()  # the baseline call is valid
    tried = 0
    for param, options in constraints.items():
        for bad in refused_values(options):
            tried += 1
            with pytest.raises(InvalidParameterError) as info:
                call(**{param: bad})
            assert param in str(info.value), f"{name}({param}={bad!r}): {info.value}"
    assert tried, f"{name}: its constraints generate no invalid values"


@pytest.mark.parametrize("name", ["range_tree", "hierarchy_counts", "interior_point", "median", "quantile",
                                  "quantiles"])
def test_parameters_are_checked_before_the_data_is_read(name: str) -> None:
    fn, _ = CALLS[name]
    params = inspect.signature(fn).parameters
    first = next(iter(params))
    kw: dict[str, Any] = {"epsilon": -1.0}
    bound = {"range_tree": {"lower": 0, "upper": 63}, "interior_point": {"lower": 0, "upper": 9, "delta": 1e-6},
             "median": {"lower": 0, "upper": 9}, "quantile": {"q": 0.5, "lower": 0, "upper": 9},
             "quantiles": {"qs": [0.5], "lower": 0, "upper": 9}, "hierarchy_counts": {}}[name]
    args = (Untouchable(), H) if name == "hierarchy_counts" else (Untouchable(),)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        fn(*args, **bound, **kw)
    assert first in params


def test_the_fuzzer_catches_a_missing_check() -> None:
    """Planted bug: a function that declares a constraint the body would not enforce is caught by
    the declaration; without the decorator the refused value passes silently."""
    from numbers import Real

    from dptree._validation import Interval, validate_params

    def body(*, epsilon: float) -> float:
        return epsilon

    guarded = validate_params({"epsilon": [Interval(Real, 0, None, closed="neither")]})(body)
    bad = refused_values(guarded.constraints["epsilon"])
    assert bad and all(_raises(lambda v=v: guarded(epsilon=v)) for v in bad)
    assert not all(_raises(lambda v=v: body(epsilon=v)) for v in bad)


def _raises(fn: Callable[[], Any]) -> bool:
    try:
        fn()
    except InvalidParameterError:
        return True
    return False


def test_the_binding_shortcut_checks_what_signature_bind_checks() -> None:
    """validate_params binds plain calls itself (no Signature.bind); each call below must behave as
    with bind: a wrong call raises the TypeError of a wrong call before any check, a bad value given
    positionally, by keyword or as the default is refused, and a good call reaches the body."""
    from numbers import Integral, Real

    from dptree._validation import Interval, validate_params

    def body(a: int, b: float = 1.0, *, c: int = -1, d: int = 2) -> tuple[int, float, int, int]:
        return a, b, c, d

    guarded = validate_params({"a": [Interval(Integral, 0, None)], "b": [Interval(Real, 0, None)],
                               "c": [Interval(Integral, 0, None)]})(body)
    assert guarded(3, 2.5, c=1) == (3, 2.5, 1, 2)
    assert guarded(a=3, c=0, d=7) == (3, 1.0, 0, 7)
    for args, kwargs, bad in (((-1,), {"c": 1}, "a"), ((1, -2.0), {"c": 1}, "b"), ((1,), {"b": float("nan"), "c": 1}, "b"),
                              ((1,), {}, "c"), ((True,), {"c": 1}, "a"), ((1, 2), {"c": 1.0}, "c")):
        with pytest.raises(InvalidParameterError, match=f"^{bad} must be"):
            guarded(*args, **kwargs)
    # wrong calls: the TypeError of a wrong call comes first, even with a refused value beside it
    for args, kwargs in (((), {"c": -5}), ((1, 2, 3), {"c": -5}), ((1,), {"a": 1, "c": -5}), ((1,), {"e": 0, "c": -5})):
        with pytest.raises(TypeError):
            guarded(*args, **kwargs)
