"""Every numeric parameter of every product entry point, read from its signature, at extreme values
on tiny data: each call releases or raises a :class:`~dptree.errors.DPTreeError` (never a raw
ZeroDivisionError, OverflowError or ValueError from the samplers or the arithmetic behind them).
The CLI's face of the same rule, with a real ledger, is ``tests/unit/cli/test_unrunnable_parameters.py``."""

from __future__ import annotations

import inspect
import math
from typing import Any, Callable

import numpy as np
import pytest

import dptree
from dptree.errors import DPTreeError

X = np.array([1, 2, 3, 5, 8, 13, 21, 34, 55, 89] * 2)
Y = (X > 10).astype(int)
H = dptree.Hierarchy.from_paths(["a/b", "a/c", "d"])
PATHS = ["a/b", "a/c", "d", "a/b"]
EXTREMES: list[Any] = [1e-300, 1e-20, 1e300, math.inf, math.nan, 0, -1, 2**70]
#: keyword parameters that are not numbers (or whose numbers are not a mechanism's: the seed)
NOT_NUMERIC = {"rng", "column", "by", "groups", "user_id", "levels", "weight", "counts", "fmt", "missing",
               "on_invalid", "noise", "neighbors", "method", "unknown", "interval", "bounds", "source"}

ENTRY_POINTS: dict[str, tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = {
    "range_tree": (dptree.range_tree, (X,), dict(lower=0, upper=100, epsilon=1.0)),
    "range_tree bounds=private": (dptree.range_tree, (X,), dict(bounds="private", epsilon=1.0)),
    "range_tree noise=gaussian": (dptree.range_tree, (X,), dict(lower=0, upper=100, noise="gaussian", epsilon=1.0,
                                                                delta=1e-6)),
    "range_tree_by": (dptree.range_tree_by, (X,), dict(by=Y, groups=[0, 1], lower=0, upper=100, epsilon=1.0)),
    "sparse_range_tree": (dptree.sparse_range_tree, (X.astype(np.uint64),), dict(epsilon=1.0)),
    "hierarchy_counts": (dptree.hierarchy_counts, (PATHS, H), dict(epsilon=1.0)),
    "hierarchy_counts multiplicative": (dptree.hierarchy_counts, (PATHS, H), dict(epsilon=1.0, delta=1e-6,
                                                                                   method="multiplicative", alpha=0.5)),
    "quantiles": (dptree.quantiles, (X, [0.5]), dict(lower=0, upper=100, epsilon=1.0)),
    "quantiles method=approx": (dptree.quantiles, (X, [0.1, 0.5]), dict(lower=0, upper=100, epsilon=1.0,
                                                                          method="approx")),
    "interior_point": (dptree.interior_point, (X,), dict(lower=0, upper=100, epsilon=1.0)),
    "median": (dptree.median, (X,), dict(lower=0, upper=100, epsilon=1.0)),
    "quantile": (dptree.quantile, (X, 0.5), dict(lower=0, upper=100, epsilon=1.0)),
    "learn_threshold": (dptree.learn_threshold, (X, Y), dict(lower=0, upper=100, epsilon=1.0)),
}


def numeric_parameters(fn: Callable[..., Any]) -> list[str]:
    """The keyword parameters of ``fn`` that take numbers (or dates) of a mechanism."""
    return [p.name for p in inspect.signature(fn).parameters.values()
            if p.kind == p.KEYWORD_ONLY and p.name not in NOT_NUMERIC and not isinstance(p.default, (bool, str))]


def test_the_sweep_covers_the_budget_sensitivity_and_domain_parameters() -> None:
    assert {"epsilon", "delta", "rho", "bounds_share", "bounds_origin", "max_contributions", "branching", "width",
            "lower", "upper"} <= set(numeric_parameters(dptree.range_tree))
    assert {"alpha", "tau_min"} <= set(numeric_parameters(dptree.hierarchy_counts))
    assert {"level", "n", "n_max", "n_min", "grid"} <= set(numeric_parameters(dptree.quantiles))
    assert {"beta", "fraction"} <= set(numeric_parameters(dptree.learn_threshold))


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_extreme_parameters_raise_typed_errors(entry: str) -> None:
    fn, args, base = ENTRY_POINTS[entry]
    raw = []
    for name in numeric_parameters(fn):
        for value in EXTREMES:
            kw = {**base, name: value, "rng": 1}
            try:
                fn(*args, **kw)
            except DPTreeError:
                pass
            except Exception as exc:  # noqa: BLE001  (what the test is looking for)
                raw.append(f"{name}={value!r}: {type(exc).__name__}: {str(exc)[:160]}")
    assert not raw, "\n".join(raw)
