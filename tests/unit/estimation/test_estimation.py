"""Honaker's two-pass estimator and the exact variances against dense weighted least squares."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import dense_gls, incidence

from dptree.estimation.least_squares import consistent_estimates, node_variances, range_variance
from dptree.rangetree.layout import build_layout


def random_tree(rng: np.random.Generator, max_depth: int = 4) -> tuple[list[np.ndarray | None], list[int]]:
    """A random irregular tree: arity 1..5, leaves at different depths."""
    parents: list[np.ndarray | None] = [None]
    sizes = [1]
    frontier = np.array([0])
    for _ in range(max_depth):
        par = []
        for p in frontier:
            if len(sizes) > 1 and rng.random() < 0.25:
                continue  # p stays a leaf
            par.extend([p] * int(rng.integers(1, 6)))
        if not par:
            break
        par_arr = np.array(par)
        parents.append(par_arr)
        sizes.append(par_arr.size)
        frontier = np.arange(par_arr.size)
    return parents, sizes


def level_slices(values: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    out, start = [], 0
    for s in sizes:
        out.append(values[start : start + s])
        start += s
    return out


@pytest.mark.parametrize("seed", range(12))
def test_two_pass_equals_dense_gls_on_random_trees(seed: int) -> None:
    rng = np.random.default_rng(seed)
    parents, sizes = random_tree(rng)
    A, _ = incidence(parents, sizes)
    n = sum(sizes)
    var = rng.uniform(0.3, 5.0, n)
    if seed % 3 == 0:
        var[0] = np.inf  # root not measured
    if seed % 3 == 1:
        var[0] = 0.0  # root known exactly
    truth = A @ rng.integers(0, 20, A.shape[1])
    y = truth + rng.normal(0, np.sqrt(np.where(np.isfinite(var), var, 1.0)))
    y[0] = truth[0] if var[0] == 0 else y[0]
    est = consistent_estimates(level_slices(y, sizes), level_slices(var, sizes), parents)
    x = np.concatenate(est.x)
    expected, cov = dense_gls(A, y, var)
    np.testing.assert_allclose(x, expected, rtol=1e-10, atol=1e-9)
    nv = np.concatenate(node_variances(level_slices(var, sizes), parents, est.V))
    np.testing.assert_allclose(nv, np.diag(cov), rtol=1e-10, atol=1e-10)


def test_estimates_are_consistent() -> None:
    rng = np.random.default_rng(5)
    parents, sizes = random_tree(rng, 5)
    n = sum(sizes)
    y = rng.normal(0, 3, n)
    est = consistent_estimates(level_slices(y, sizes), level_slices(np.ones(n), sizes), parents)
    for j in range(1, len(sizes)):
        sums = np.bincount(parents[j], weights=est.x[j], minlength=sizes[j - 1])
        has_child = np.bincount(parents[j], minlength=sizes[j - 1]) > 0
        np.testing.assert_allclose(sums[has_child], est.x[j - 1][has_child], atol=1e-9)


def regular_tree(layout_fanouts: tuple[int, ...]) -> tuple[list[np.ndarray | None], list[int]]:
    parents: list[np.ndarray | None] = [None]
    sizes = [1]
    for f in layout_fanouts:
        n = sizes[-1] * f
        parents.append(np.arange(n) // f)
        sizes.append(n)
    return parents, sizes


@pytest.mark.parametrize(
    "domain,branching,level_var",
    [
        (8, 2, [1.0, 1.0, 1.0, 1.0]),
        (10, 3, [np.inf, 2.0, 1.0, 0.5]),  # padded to 3*3*2 = 18 leaves
        (27, 3, [0.0, 3.0, 1.5, 0.7]),  # root exact (replace neighbors)
        (16, 4, [5.0, 0.2, 1.0]),
        (30, 5, [np.inf, 1.0, 4.0, 2.0]),
    ],
)
def test_range_variance_closed_form_matches_dense(domain: int, branching: int, level_var: list[float]) -> None:
    layout = build_layout(domain, branching)
    assert len(level_var) == layout.depth + 1
    parents, sizes = regular_tree(layout.fanouts)
    A, offsets = incidence(parents, sizes)
    var = np.concatenate([np.full(s, v) for s, v in zip(sizes, level_var)])
    y = np.zeros(sum(sizes))
    _, cov = dense_gls(A, y, var)
    leaf_cov = cov[offsets[-1] :, offsets[-1] :]
    lo, hi = np.triu_indices(domain)
    dense = np.array([leaf_cov[a : b + 1, a : b + 1].sum() for a, b in zip(lo, hi)])
    closed = range_variance(layout.block_sizes, level_var, lo, hi)
    np.testing.assert_allclose(closed, dense, rtol=1e-9, atol=1e-12)


def test_layout_puts_remainder_at_the_bottom() -> None:
    lay = build_layout(1024, 16)
    assert lay.fanouts == (16, 16, 4)
    assert lay.block_sizes == (1024, 64, 4, 1)
    lay = build_layout(1000, 16)
    assert lay.padded_size == 1024 and lay.fanouts == (16, 16, 4)
    lay = build_layout(2, 16)
    assert lay.fanouts == (2,)
    lay = build_layout(17, 16)
    assert lay.fanouts == (16, 2)


@pytest.mark.parametrize(
    "domain,branching,level_var",
    [
        (8, 2, [1.0, 1.0, 1.0, 1.0]),
        (10, 3, [np.inf, 2.0, 1.0, 0.5]),
        (27, 3, [0.0, 3.0, 1.5, 0.7]),
        (16, 4, [5.0, 0.2, 1.0]),
        (30, 5, [np.inf, 1.0, 4.0, 2.0]),
        (9, 3, [np.inf, np.inf, 1.0]),  # an unmeasured internal level below the root
    ],
)
def test_range_error_moments_match_dense_coefficients(domain: int, branching: int, level_var: list[float]) -> None:
    """sum c^2 sigma^2 and sum c^4 sigma^4 of every range, from O(L^2) classes vs dense GLS weights."""
    from dptree.estimation.least_squares import range_error_moments

    layout = build_layout(domain, branching)
    parents, sizes = regular_tree(layout.fanouts)
    A, offsets = incidence(parents, sizes)
    var = np.concatenate([np.full(s, v) for s, v in zip(sizes, level_var)])
    meas = np.isfinite(var) & (var > 0)
    exact = var == 0
    w = np.where(meas, 1.0 / np.where(meas, var, 1.0), 0.0)
    n = A.shape[1]
    k = int(exact.sum())
    K = np.zeros((n + k, n + k))
    K[:n, :n] = A[meas].T @ (w[meas, None] * A[meas])
    K[:n, n:] = A[exact].T
    K[n:, :n] = A[exact]
    E = np.linalg.inv(K)[:n, :n] @ (A.T * w)  # leaf estimates = E y (+ exact constraints)
    lo, hi = np.triu_indices(domain)
    m2, m4 = range_error_moments(layout.fanouts, level_var, lo, hi)
    sig = np.where(meas, var, 0.0)
    for i, (a, b) in enumerate(zip(lo, hi)):
        c = E[a : b + 1].sum(axis=0)
        t = c * c * sig
        assert m2[i] == pytest.approx(t.sum(), rel=1e-9, abs=1e-12)
        assert m4[i] == pytest.approx((t * t).sum(), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize(
    "fanouts,level_var", [((3, 2, 4), [np.inf, 1.0, 2.0, 0.5]), ((2, 2), [0.0, 1.0, 3.0]), ((5,), [2.0, 1.0])]
)
def test_regular_fast_path_equals_generic_estimator(fanouts: tuple[int, ...], level_var: list[float]) -> None:
    rng = np.random.default_rng(3)
    parents, sizes = regular_tree(fanouts)
    y = [rng.normal(0, 3, s) for s in sizes]
    generic = consistent_estimates(y, [np.full(s, v) for s, v in zip(sizes, level_var)], parents)
    fast = consistent_estimates(y, level_var, [None] * len(sizes), fanouts=fanouts)
    for a, b in zip(generic.x, fast.x):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    for a, b in zip(generic.V, fast.V):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
