"""dptree.hierarchy.error_metrics (Definition 1.4, Problem 3.1) on hand-computed cases, and the simplex
projection / sum-preserving rounding of dptree.estimation.postprocess against a per-family reference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dptree.errors import InvalidParameterError
from dptree.estimation.postprocess import project_families, round_families, simplex_project
from dptree.hierarchy.error_metrics import alpha_eta_accuracy, l2sq_error, linf_error, mrmse_alpha, rmse_alpha


def test_rmse_alpha_by_hand() -> None:
    truth = np.array([0.0, 10.0, 100.0])
    est = np.array([[3.0, 13.0, 95.0], [-1.0, 10.0, 120.0]])
    # node 0: excess 3, 1 -> sqrt(5); node 1 (alpha 0.1 -> allowance 1): 2, 0 -> sqrt(2);
    # node 2 (allowance 10): 0, 10 -> sqrt(50)
    np.testing.assert_allclose(rmse_alpha(est, truth, 0.1), [math.sqrt(5), math.sqrt(2), math.sqrt(50)])
    assert mrmse_alpha(est, truth, 0.1) == pytest.approx(math.sqrt(50))
    np.testing.assert_allclose(rmse_alpha(est, truth, 0.0), np.sqrt(((est - truth) ** 2).mean(axis=0)))
    assert linf_error(est, truth) == pytest.approx((5 + 20) / 2)
    assert l2sq_error(est, truth) == pytest.approx(math.sqrt((9 + 9 + 25 + 1 + 0 + 400) / 6))


def test_alpha_eta_accuracy() -> None:
    truth = np.array([0.0, 100.0])
    runs = np.array([[1.0, 100.0], [5.0, 150.0], [0.0, 90.0], [2.0, 111.0]])
    rep = alpha_eta_accuracy(runs, truth, alpha=0.1, eta=0.3, tau=20.0)
    # allowance: node 0 -> 0.1 * 20 = 2 (fails once: 5), node 1 -> 10 (fails twice: 150, 111)
    np.testing.assert_allclose(rep.failure_rate, [0.25, 0.5])
    assert not rep.accurate and rep.worst_upper >= 0.5
    rep2 = alpha_eta_accuracy(lambda s: truth + s % 2, truth, alpha=0.1, eta=0.0, tau=20.0, reps=10)
    assert rep2.accurate and rep2.reps == 10
    with pytest.raises(InvalidParameterError):
        rmse_alpha(np.ones((2, 3)), np.ones(2))
    with pytest.raises(InvalidParameterError):
        rmse_alpha(np.ones(2), np.ones(2), alpha=-1)
    with pytest.raises(InvalidParameterError):
        alpha_eta_accuracy(runs, truth, alpha=0.1, eta=1.5, tau=1.0)


def reference_projection(v: np.ndarray, s: float) -> np.ndarray:
    if s == 0:
        return np.zeros_like(v)
    u = np.sort(v)[::-1]
    cs = np.cumsum(u)
    k = np.arange(1, v.size + 1)
    r = k[u - (cs - s) / k > 0].max()
    return np.maximum(v - (cs[r - 1] - s) / r, 0.0)


@pytest.mark.parametrize("seed", range(20))
def test_simplex_projection_matches_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_par = int(rng.integers(1, 6))
    par = np.sort(rng.integers(0, n_par, int(rng.integers(1, 25))))
    tot = rng.uniform(0, 10, n_par) * (rng.random(n_par) > 0.2)
    v = rng.normal(0, 5, par.size)
    out = simplex_project(v, par, tot)
    for p in np.unique(par):
        np.testing.assert_allclose(out[par == p], reference_projection(v[par == p], tot[p]), atol=1e-12)
        assert out[par == p].sum() == pytest.approx(tot[p])


def test_rounding_preserves_sums_and_is_close() -> None:
    rng = np.random.default_rng(1)
    parents = [None, np.array([0, 0, 0]), np.array([0, 0, 1, 2, 2, 2])]
    x = [np.array([rng.uniform(50, 60)])]
    x.append(project_families([x[0], rng.normal(18, 5, 3)], parents[:2])[1])
    x.append(project_families([x[0], x[1], rng.normal(6, 3, 6)], parents)[2])
    r = round_families(project_families(x, parents), parents)
    assert all(np.array_equal(a, np.rint(a)) for a in r)
    assert r[0][0] == np.rint(x[0][0])
    np.testing.assert_array_equal(np.bincount(parents[1], weights=r[1], minlength=1), r[0])
    np.testing.assert_array_equal(np.bincount(parents[2], weights=r[2], minlength=3), r[1])
    assert all((np.abs(a - b) < 2).all() for a, b in zip(r, x))
