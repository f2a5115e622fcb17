"""Per-level budget allocation: the closed-form averages reproduce DESIGN's anchors, and the
optimiser never does worse than the simpler strategies it contains."""

from __future__ import annotations

import numpy as np
import pytest

from dptree.rangetree.allocation import (
    _optimal_weights_cached,
    average_range_variance,
    choose_branching,
    level_weights,
    relative_level_variances,
)
from dptree.rangetree.layout import build_layout


def continuous_laplace_average(b: int, weights: np.ndarray, D: int = 1024) -> float:
    """All-range average variance at eps = 1 in DESIGN's units: Laplace variance 2 (1/(eps w))^2."""
    lay = build_layout(D, b)
    return average_range_variance(lay, 2.0 * relative_level_variances(np.asarray(weights), "laplace"))


@pytest.mark.parametrize(
    "b,root,expected",
    [(2, True, 476.6), (16, False, 176.2), (32, False, 164.3), (16, True, 238.8)],
)
def test_design_anchors(b: int, root: bool, expected: float) -> None:
    L = build_layout(1024, b).depth
    w = np.full(L + 1, 1.0 / (L + 1)) if root else np.concatenate([[0.0], np.full(L, 1.0 / L)])
    assert continuous_laplace_average(b, w) == pytest.approx(expected, abs=0.06)


@pytest.mark.parametrize("b", [2, 3, 4, 8, 16, 32])
def test_optimal_is_no_worse_than_its_special_cases(b: int) -> None:
    lay = build_layout(1024, b)
    L = lay.depth
    opt = continuous_laplace_average(b, level_weights(lay, strategy="optimal", noise="laplace", root_exact=False))
    uniform = continuous_laplace_average(b, level_weights(lay, strategy="uniform", noise="laplace", root_exact=False))
    no_root = continuous_laplace_average(
        b, np.asarray(_optimal_weights_cached(1024, lay.fanouts, "laplace", (False,) + (True,) * L, False))
    )
    assert opt <= uniform + 1e-9
    assert opt <= no_root + 1e-9  # the root-free problem is a face of the full one


def test_best_optimised_tree_matches_the_design_anchor() -> None:
    best = min(
        continuous_laplace_average(b, level_weights(build_layout(1024, b), strategy="optimal", noise="laplace", root_exact=False))
        for b in (2, 4, 8, 16, 32)
    )
    assert best == pytest.approx(154.5, abs=0.06)


def test_gaussian_optimum_is_convex_and_beats_uniform() -> None:
    lay = build_layout(1024, 16)
    w = level_weights(lay, strategy="optimal", noise="gaussian", root_exact=False)
    v_opt = average_range_variance(lay, relative_level_variances(w, "gaussian"))
    u = level_weights(lay, strategy="uniform", noise="gaussian", root_exact=False)
    assert v_opt <= average_range_variance(lay, relative_level_variances(u, "gaussian")) + 1e-9
    assert abs(w.sum() - 1) < 1e-9 and np.all(w >= 0)


def test_choose_branching_is_the_argmin() -> None:
    D = 1024
    best = choose_branching(D, "laplace", "uniform", False)
    values = {
        b: continuous_laplace_average(b, level_weights(build_layout(D, b), strategy="uniform", noise="laplace", root_exact=False))
        for b in (2, 4, 8, 16, 32, 64)
    }
    assert values[best] == min(values.values())
