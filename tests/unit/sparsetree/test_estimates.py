"""Least squares on the measured tree: equal to dense weighted least squares, and the exact error
moments of the adjoint equal to the dense covariance algebra."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dptree import noise as _noise
from dptree.sparsetree.estimates import MeasuredTree
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
