"""The quadtree's estimates: Morton order, least squares and exact rectangle variances against dense
algebra, and the all-rectangles split against a brute-force average."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import dptree
from dptree.rangetree.allocation import average_workload_variance, relative_level_variances
from dptree.rangetree.layout import build_layout
from dptree.spatial.estimates import GridEstimates, rectangle_variance
from dptree.spatial.grid import morton, unmorton
from dptree.spatial.plan import grid_weights


def test_morton_round_trip_and_nodes_are_squares() -> None:
    i, j = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    code = morton(i.ravel(), j.ravel())
    assert sorted(code.tolist()) == list(range(256))
    ii, jj = unmorton(code)
    assert np.array_equal(ii, i.ravel()) and np.array_equal(jj, j.ravel())
    for side in (1, 2, 4, 8):  # the 4^k leaves under one node are a square of side 2^k
        block = side * side
        for start in range(0, 256, block):
            a, b = unmorton(np.arange(start, start + block))
            assert a.max() - a.min() == side - 1 and b.max() - b.min() == side - 1


def _dense(depth: int, level_var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(A, weights): the measured nodes' incidence on the Morton-ordered leaves and their inverse
    variances (inf: exact)."""
    n = 4**depth
    rows, w = [], []
    for lvl in range(depth + 1):
        size = 4 ** (depth - lvl)
        if not np.isfinite(level_var[lvl]):
            continue
        for node in range(n // size):
            r = np.zeros(n)
            r[node * size:(node + 1) * size] = 1
            rows.append(r)
            w.append(np.inf if level_var[lvl] == 0 else 1 / level_var[lvl])
    return np.array(rows), np.array(w)


def _dense_covariance(depth: int, level_var: np.ndarray) -> np.ndarray:
    """The covariance of the GLS leaf estimates, an exact node held as a linear constraint."""
    A, w = _dense(depth, level_var)
    exact = ~np.isfinite(w)
    C = np.linalg.inv(A[~exact].T @ (w[~exact, None] * A[~exact]))
    for a in A[exact]:
        Ca = C @ a
        C = C - np.outer(Ca, Ca) / (a @ Ca)
    return C


@pytest.mark.parametrize("lower,upper,levels,neighbors", [
    ((0, 0), (3, 3), "geometric", "add_remove"),
    ((0, 0), (7, 7), "all_rectangles", "add_remove"),
    ((0, 0), (7, 7), "uniform", "add_remove"),
    ((0, 0), (4, 2), "geometric", "replace"),  # padding: a 5 x 3 domain in an 8 x 8 grid
])
def test_rectangle_variances_equal_the_dense_covariance(lower, upper, levels, neighbors) -> None:  # noqa: ANN001
    plan = dptree.plan_range_tree_2d(lower=lower, upper=upper, epsilon=1.0, levels=levels, neighbors=neighbors)
    g = plan.grid
    var = np.asarray(plan.tree.level_variance)
    C = _dense_covariance(g.depth, var)
    rects = [(ax, bx, ay, by) for ax, bx in itertools.combinations_with_replacement(range(g.x.size), 2)
             for ay, by in itertools.combinations_with_replacement(range(g.y.size), 2)]
    ax, bx, ay, by = (np.array(v) for v in zip(*rects))
    got = rectangle_variance(g, var, ax, bx, ay, by)
    for k in range(0, len(rects), max(1, len(rects) // 200)):
        i, j = np.meshgrid(np.arange(ax[k], bx[k] + 1), np.arange(ay[k], by[k] + 1), indexing="ij")
        wv = np.zeros(g.cells)
        wv[morton(i.ravel(), j.ravel())] = 1
        assert got[k] == pytest.approx(wv @ C @ wv, rel=1e-9, abs=1e-9)


def test_leaf_estimates_equal_dense_weighted_least_squares() -> None:
    plan = dptree.plan_range_tree_2d(lower=(0, 0), upper=(3, 3), epsilon=1.0, levels="geometric")
    g, var = plan.grid, np.asarray(plan.tree.level_variance)
    rng = np.random.default_rng(3)
    meas = [rng.integers(-20, 40, 4**lvl).astype(np.int64) for lvl in range(g.depth + 1)]
    est = GridEstimates(g, "laplace", var, meas)
    A, w = _dense(g.depth, var)
    y = np.concatenate(meas)
    x = np.linalg.solve(A.T @ (w[:, None] * A), A.T @ (w * y))
    i, j = unmorton(np.arange(g.cells))
    dense = np.zeros((4, 4))
    dense[i, j] = x
    assert np.allclose(est.cells, dense, atol=1e-9)


def test_all_rectangles_average_is_exact_and_the_split_minimises_it() -> None:
    depth = 3
    side = 2**depth
    layout = build_layout(4**depth, 4)
    averages = {}
    for levels in ("all_rectangles", "geometric", "uniform"):
        w = grid_weights(depth, levels, "laplace", False)
        lv = relative_level_variances(w, "laplace")
        closed = average_workload_variance(layout, lv, "all_rectangles")
        ends = np.array(list(itertools.combinations_with_replacement(range(side), 2)))
        ax, ay = np.meshgrid(np.arange(len(ends)), np.arange(len(ends)), indexing="ij")
        plan_grid = dptree.plan_range_tree_2d(lower=(0, 0), upper=(side - 1, side - 1), epsilon=1.0).grid
        brute = rectangle_variance(plan_grid, lv, ends[ax.ravel(), 0], ends[ax.ravel(), 1], ends[ay.ravel(), 0],
                                   ends[ay.ravel(), 1]).mean()
        assert closed == pytest.approx(brute, rel=1e-10)
        averages[levels] = closed
    assert averages["all_rectangles"] <= min(averages["geometric"], averages["uniform"]) * (1 + 1e-9)


def test_geometric_split_grows_by_the_cube_root_of_two() -> None:
    w = grid_weights(5, "geometric", "laplace", False)
    assert np.allclose(w[1:] / w[:-1], 2 ** (1 / 3)) and w.sum() == pytest.approx(1.0)
    assert grid_weights(5, "geometric", "laplace", True)[0] == 0.0


@pytest.mark.parametrize("levels,neighbors", [("all_rectangles", "add_remove"), ("geometric", "replace"),
                                              ("uniform", "add_remove")])
def test_error_moments_equal_the_dense_coefficients(levels: str, neighbors: str) -> None:
    from dptree.spatial.moments import rectangle_moments

    plan = dptree.plan_range_tree_2d(lower=(0, 0), upper=(7, 6), epsilon=1.0, levels=levels, neighbors=neighbors)
    g, var = plan.grid, np.asarray(plan.tree.level_variance)
    A, w = _dense(g.depth, var)
    noisy = np.isfinite(w)
    sig2 = np.where(noisy, 1 / np.where(noisy, w, 1.0), 0.0)
    # c = W A (A' W A)^-1 q on the noisy nodes, with the exact ones as constraints (KKT)
    An, Ae = A[noisy], A[~noisy]
    K = np.block([[An.T @ (w[noisy, None] * An), Ae.T], [Ae, np.zeros((len(Ae), len(Ae)))]])
    rng = np.random.default_rng(2)
    rects = [(0, 0, 0, 0), (3, 3, 5, 5), (0, 7, 0, 6), (1, 6, 2, 4)] + [
        tuple(sorted(rng.integers(0, 8, 2))) + tuple(sorted(rng.integers(0, 7, 2))) for _ in range(12)]
    ax, bx, ay, by = (np.array(v) for v in zip(*rects))
    v1, v2 = rectangle_moments(g.depth, var, ax, bx, ay, by)
    assert v1 == pytest.approx(rectangle_variance(g, var, ax, bx, ay, by), rel=1e-9)
    for k, (x0, x1, y0, y1) in enumerate(rects):
        i, j = np.meshgrid(np.arange(x0, x1 + 1), np.arange(y0, y1 + 1), indexing="ij")
        q = np.zeros(g.cells)
        q[morton(i.ravel(), j.ravel())] = 1
        sol = np.linalg.solve(K, np.concatenate([q, np.zeros(len(Ae))]))[: g.cells]
        c = w[noisy] * (An @ sol)  # the noisy nodes' weights in the estimate q' x_hat
        assert v1[k] == pytest.approx(float((c**2 * sig2[noisy]).sum()), rel=1e-9)
        assert v2[k] == pytest.approx(float((c**4 * sig2[noisy] ** 2).sum()), rel=1e-9)


def test_ranges_with_the_same_classes_share_one_computation() -> None:
    """Every single cell has the same error moments (no conditioning on the padding), and they are
    computed once: a table of a 256 x 256 grid's cells costs one moment computation, not 65 536."""
    from dptree.spatial import moments

    plan = dptree.plan_range_tree_2d(lower=(0, 0), upper=(255, 255), epsilon=1.0)
    g, var = plan.grid, np.asarray(plan.tree.level_variance)
    a = np.repeat(np.arange(256), 256)
    b = np.tile(np.arange(256), 256)
    moments._cached.cache_clear()
    v1, v2 = moments.rectangle_moments(g.depth, var, a, a, b, b)
    assert moments._cached.cache_info().misses == 1
    assert np.all(v1 == v1[0]) and np.all(v2 == v2[0])
    assert v1[0] == pytest.approx(rectangle_variance(g, var, a[:1], a[:1], b[:1], b[:1])[0], rel=1e-12)
