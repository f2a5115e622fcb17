"""Least squares on the measured tree: equal to dense weighted least squares, and the exact error
moments of the adjoint equal to the dense covariance algebra."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dptree import noise as _noise
from dptree.sparsetree.estimates import MeasuredTree, smooth_last_depth
from dptree.sparsetree.mechanism import SparseLayout, grow_structure, level_nodes, measure_count_tree, measure_levels


def _dense(tree: MeasuredTree, variances: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(design over cells, measurements, noise variances) of every counted range."""
    start = tree.cell_start
    rows, ys, vs = [], [], []
    for d, nd in enumerate(tree.nodes, start=1):
        for a, z, y in zip(nd.start, nd.last, nd.noisy):
            rows.append(((start >= a) & (start <= z)).astype(float))
            ys.append(float(y))
            vs.append(variances[d - 1])
    return np.array(rows), np.array(ys), np.array(vs)


def _levels_tree(seed: int, bits: int, b: int, scales: list) -> tuple[MeasuredTree, list[float]]:
    """method="levels": every node of the expanded tree counted, a scale per level."""
    layout = SparseLayout(bits, b)
    keys = np.sort(np.random.default_rng(seed).integers(0, 2 ** (bits - 1), 150).astype(np.uint64))
    fr = [Fraction(s) for s in scales]
    levels = measure_levels(keys, layout, fr, [6] * layout.depth, 1, _noise.make_source(seed))
    var = [_noise.discrete_laplace_variance(s) for s in fr]
    return MeasuredTree(level_nodes(layout, levels), var, 2**bits), var


def _count_tree(seed: int, bits: int, b: int, scales: list) -> tuple[MeasuredTree, list[float]]:
    """method="privtree": the count tree of a PrivTree shape (chains, remainders), a scale per depth."""
    layout = SparseLayout(bits, b)
    rng = np.random.default_rng(seed)
    keys = np.sort(np.concatenate([rng.integers(0, 2 ** (bits - 3), 150), rng.integers(0, 2**bits, 5)]).astype(np.uint64))
    src = _noise.make_source(seed)
    shape = grow_structure(keys, layout, Fraction(1), 2, 8, 1, src)
    fr = [Fraction(s) for s in scales]
    m = measure_count_tree(keys, layout, shape, lambda h: fr[0], src)
    var = [_noise.discrete_laplace_variance(fr[j % len(fr)]) for j in range(len(m.nodes))]
    assert any(((nd.last - nd.start + np.uint64(1)) & (nd.last - nd.start)).any() for nd in m.nodes)  # a remainder
    return MeasuredTree(m.nodes, var, 2**bits), var


@pytest.mark.parametrize("build, seed, bits, b, scales", [(_levels_tree, 0, 6, 4, [2, 2, 2]),
                                                          (_levels_tree, 1, 7, 2, [1, 3, 2, 5, 1, 2, 4]),
                                                          (_levels_tree, 2, 8, 16, [3, 1]),
                                                          (_count_tree, 3, 10, 2, [1, 3, 2]),
                                                          (_count_tree, 4, 12, 2, [2, 1])])
def test_estimates_and_exact_moments_match_dense_least_squares(build, seed: int, bits: int, b: int,
                                                               scales: list) -> None:
    rng = np.random.default_rng(seed)
    tree, var = build(seed, bits, b, scales)
    A, y, v = _dense(tree, var)
    Wt = np.diag(1 / v)
    cov = np.linalg.inv(A.T @ Wt @ A)
    xhat = cov @ A.T @ Wt @ y
    assert np.allclose(tree.cell_est, xhat, atol=1e-9)
    # prefixes cut at random cells and fractions, and differences of two prefixes (ranges)
    C = xhat.size
    i, j = rng.integers(0, C, 12), rng.integers(0, C, 12)
    f, g = rng.random(12), rng.random(12)
    none = np.zeros(12, dtype=bool)
    v1, v2 = tree.prefix_moments([(i, f, none, 1), (j, g, none, -1)])
    W = (np.arange(C)[:, None] < i).astype(float)
    W[i, np.arange(12)] = f
    Wj = (np.arange(C)[:, None] < j).astype(float)
    Wj[j, np.arange(12)] = g
    W -= Wj
    assert np.allclose(v1, np.einsum("iq,ij,jq->q", W, cov, W), rtol=1e-9)
    G = W.T @ cov @ A.T @ Wt  # coefficients of each query on the measurements
    assert np.allclose(v2, (G**4 * v**2).sum(axis=1), rtol=1e-9)
    assert np.allclose(tree.cell_sd(np.arange(C)) ** 2, np.diag(cov), rtol=1e-9)


def test_cells_partition_the_domain() -> None:
    layout = SparseLayout(10, 4)
    keys = np.sort(np.random.default_rng(5).integers(0, 1000, 3000).astype(np.uint64))
    levels = measure_levels(keys, layout, [Fraction(1)] * layout.depth, [20] * layout.depth, 1, _noise.make_source(5))
    tree = MeasuredTree(level_nodes(layout, levels), [2.0] * layout.depth, 1000)
    ends = tree.cell_start[1:].astype(np.float64)
    assert tree.cell_start[0] == 0
    assert np.array_equal(tree.cell_start[:-1].astype(np.float64) + tree.cell_width[:-1], ends)
    assert tree.cell_start[-1] + np.uint64(tree.cell_width[-1]) == 1000  # cut at the domain's end


def _groups(rng: np.random.Generator, counts: np.ndarray, noise_var: float) -> tuple[np.ndarray, ...]:
    """Sibling groups of a last depth (rows of ``counts``: true child counts), noisy counts with
    Laplace noise of variance ``noise_var`` and their least-squares estimates under an exactly known
    parent: (x, y, parent estimates, parent index, widths, parent widths)."""
    G, m = counts.shape
    y = counts + rng.laplace(0.0, np.sqrt(noise_var / 2), counts.shape)
    X = counts.sum(axis=1).astype(np.float64)
    x = y + ((X - y.sum(axis=1)) / m)[:, None]
    return (x.ravel(), y.ravel(), X, np.repeat(np.arange(G), m), np.full(G * m, 16.0), np.full(G, 16.0 * m))


def test_smoothing_shrinks_noise_on_uniform_spread_and_keeps_structure() -> None:
    rng = np.random.default_rng(11)
    var = 50.0  # the noise of DLap(5): a last depth of 60-record cells at n = 10^6
    uniform = rng.multinomial(977, np.full(16, 1 / 16), size=400)
    x, y, X, par, w, wp = _groups(rng, uniform, var)
    s = smooth_last_depth(x, y, X, par, w, wp, var)
    assert np.allclose(np.bincount(par, weights=s), X)  # every parent's estimate is kept
    truth = uniform.ravel()
    # least squares: about the noise variance (15/16 of it); the smoothing about V var / (V + var)
    assert np.mean((s - truth) ** 2) < 0.6 * np.mean((x - truth) ** 2)
    # a steep trend and a spike are data, not noise: the smoothing keeps them
    slope = np.tile(np.arange(16) * 20, (400, 1))
    spike = np.zeros((400, 16), dtype=np.int64)
    spike[:, 5] = 900
    for counts in (slope, spike):
        x, y, X, par, w, wp = _groups(rng, counts, var)
        s = smooth_last_depth(x, y, X, par, w, wp, var)
        assert np.mean((s - counts.ravel()) ** 2) < 1.05 * np.mean((x - counts.ravel()) ** 2)
        assert np.allclose(np.bincount(par, weights=s), X)
    # exact counts, small or unequal groups: left as they are
    x, y, X, par, w, wp = _groups(rng, uniform, var)
    assert np.array_equal(smooth_last_depth(x, y, X, par, w, wp, 0.0), x)
    w4 = w.copy()
    w4[::16] = 8.0
    assert np.array_equal(smooth_last_depth(x, y, X, par, w4, wp, var), x)
    small = rng.multinomial(100, np.full(4, 1 / 4), size=50)
    x, y, X, par, w, wp = _groups(rng, small, var)
    assert np.array_equal(smooth_last_depth(x, y, X, par, w, np.full(50, 64.0), var), x)


@pytest.mark.slow
def test_quantiles_read_the_smoothed_cells() -> None:
    """The quantile read-off of uniform 64-bit ids is closer with the last depth smoothed than
    with the least-squares cells (paired over seeds; 10^4 records, about 10 records per cell)."""
    import dptree

    err_s, err_ls = [], []
    qs = np.linspace(0.01, 0.99, 99)
    for seed in range(16):
        x = np.sort(np.random.default_rng(100 + seed).integers(0, 2**62, 10_000, dtype=np.int64))
        r = dptree.sparse_range_tree(x, epsilon=1.0, rng=seed)
        t = r._tree
        assert t.height >= 2 and not np.allclose(t.smoothed_cells(), t.cell_est)
        assert np.isclose(t.smoothed_cells().sum(), t.total())
        rank = np.searchsorted(x, r.quantile(qs), side="right")
        err_s.append(np.mean(np.abs(rank - qs * x.size)))
        t._smoothed, t._monotone = t.cell_est, None  # the least-squares read-off
        rank = np.searchsorted(x, r.quantile(qs), side="right")
        err_ls.append(np.mean(np.abs(rank - qs * x.size)))
    assert np.mean(err_s) < 0.93 * np.mean(err_ls)


def test_smoothing_keeps_the_total_when_the_domain_ends_inside_a_node() -> None:
    """Bounds of 10^6 keys: the last top node reaches past the domain, its children past the end
    are no cells, so mass smoothed into them would be lost from the quantiles' CDF."""
    import dptree

    x = np.random.default_rng(1).integers(0, 10**6, 200_000)
    t = dptree.sparse_range_tree(x, lower=0, upper=10**6 - 1, epsilon=1.0, rng=3)._tree
    assert t.height >= 2 and not np.allclose(t.smoothed_cells(), t.cell_est)
    assert t.smoothed_cells().sum() == pytest.approx(t.total(), abs=1e-6)
