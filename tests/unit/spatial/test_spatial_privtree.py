"""range_tree_2d(method="privtree"): the 2-D PrivTree (Zhang, Xiao & Xie 2016) on the sparse tree's
mechanism at fan-out 4. Brute-forced sensitivities of what PrivTree reads, the shape's epsilon at
b = 4, exact rectangle variances against the estimator's own linear map, the uniform-spread
bounds, the release file and the paper's claim that a data-dependent shape beats the quadtree on
skewed data."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest

import dptree
from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.privacy.ledger import Ledger
from dptree.sparsetree.mechanism import count_tree
from dptree.spatial.counting import as_table, grid_histogram
from dptree.spatial.grid import morton, unmorton
from dptree.spatial.privtree import CellCounts, PrivTree2D, plan_privtree_2d
from dptree.spatial.shape_estimates import morton_below
from dptree.testing.sensitivity import brute_force_sensitivity, neighboring_datasets


def _clusters(n: int = 6000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pts = np.concatenate([rng.normal((12.0, 12.0), 2.0, (n // 2, 2)), rng.normal((48.0, 40.0), 3.0, (n // 2, 2))])
    return np.clip(pts, 0.0, 63.9)


def _release(pts: np.ndarray, **kw) -> PrivTree2D:
    return dptree.range_tree_2d(pts[:, 0], pts[:, 1], lower=(0.0, 0.0), upper=(64.0, 64.0), width=1.0,
                                epsilon=1.0, method="privtree", **kw)


def test_morton_below_matches_brute_force() -> None:
    i, j = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    codes = morton(i, j)
    rng = np.random.default_rng(1)
    for _ in range(200):
        ax, bx = np.sort(rng.integers(0, 8, 2))
        ay, by = np.sort(rng.integers(0, 8, 2))
        m = int(rng.integers(0, 65))
        inside = (i >= ax) & (i <= bx) & (j >= ay) & (j <= by) & (codes < m)
        assert morton_below(3, np.array([m]), *(np.array([v]) for v in (ax, bx, ay, by)))[0] == inside.sum()


def _node_counts(plan, hist: np.ndarray) -> list[np.ndarray]:
    codes = np.repeat(np.arange(hist.size), hist)
    i, j = unmorton(codes)
    table, names = as_table(i, j, None)
    counts = CellCounts(grid_histogram(table, plan, names))
    lay = plan.tree.layout
    return [counts.nodes(np.arange(1 << (lay.bits - lay.shifts[d]), dtype=np.uint64), lay.shifts[d])
            for d in range(1, lay.depth + 1)]


def test_one_record_changes_one_node_per_level_and_one_range_per_count_depth() -> None:
    """PrivTree's proof needs a record on one root-to-leaf path (one node per level, +1), and the
    counts' scale k H / eps_2 needs each depth of any count tree to change by at most 1 in L1."""
    plan = plan_privtree_2d(lower=(0, 0), upper=(3, 3), epsilon=1.0, structure_share=0.5)
    pairs = list(neighboring_datasets(plan.grid.cells, 2, "add_remove"))
    for d in range(plan.tree.layout.depth):
        assert brute_force_sensitivity(lambda h, d=d: _node_counts(plan, h)[d], pairs) == (1.0, 1.0)
    lay = plan.tree.layout
    full = [np.arange(1 << (lay.bits - lay.shifts[d]), dtype=np.uint64) for d in range(1, lay.depth + 1)]
    ranges, _ = count_tree(lay, [full[0], full[1][:8]])
    for start, last, _ in ranges:
        l1, _ = brute_force_sensitivity(lambda h: CellCounts(h).ranges(start, last), pairs)
        assert l1 <= 1.0


def test_statement_loss_and_ledger(tmp_path) -> None:
    plan = plan_privtree_2d(lower=(0, 0), upper=(63, 63), epsilon=1.0, structure_share=0.3, max_contributions=2)
    st = plan.statement
    lam1 = Fraction(plan.tree.structure_scale)
    assert st["structure"]["epsilon"] == pytest.approx(float(Fraction(2 * 7, 3) / lam1))  # k (2b-1)/((b-1) lambda_1)
    assert st["structure"]["epsilon"] <= 0.3 + 1e-12
    assert st["budget_spent"]["epsilon"] <= 1.0 + 1e-12
    assert plan.privacy_loss().epsilon() == pytest.approx(st["budget_spent"]["epsilon"])
    assert "2-D PrivTree" in st["mechanism"] and "add" in str(st["neighbors"])
    with Ledger(tmp_path / "l.sqlite", total_epsilon=2.0) as ledger:
        ledger.charge_for(plan, label="privtree 2d")
        assert ledger.spent().epsilon == pytest.approx(1.0)


def test_counts_are_the_leaves_spread_uniformly() -> None:
    rel = _release(_clusters(), rng=3)
    cells = rel.cell_estimates
    assert rel.total() == pytest.approx(cells.sum())
    assert rel.count((0.0, 63.99), (0.0, 63.99)) == pytest.approx(rel.total())
    assert rel.count((10.0, 20.5), (3.0, 30.0)) == pytest.approx(cells[10:21, 3:31].sum())
    xs = np.array([0.0, 5.0, 40.0])
    assert np.allclose(rel.count((xs, xs + 10), (xs, xs + 20)),
                       [rel.count((a, a + 10), (a, a + 20)) for a in xs])


def test_stderr_is_exact_for_the_linear_estimator() -> None:
    """The estimate is linear in the noisy counts: moving each noisy count by 1 gives its weight
    g_u, and Var = sum_u g_u^2 sigma_u^2 must equal stderr^2."""
    rel = _release(_clusters(800), rng=5, structure_share=0.5)
    m, tree = rel._measurement, rel._tree_plan
    var = tree.variances(rel.depth)
    rects = [((3.0, 20.0), (0.0, 17.0)), ((40.0, 55.5), (30.0, 50.0)), ((0.0, 63.9), (0.0, 63.9)),
             ((11.0, 11.5), (11.0, 11.5)), ((30.0, 31.5), (60.0, 61.5))]  # the last two: inside one leaf
    base = [rel.count(*r) for r in rects]
    want = np.zeros(len(rects))
    for j, nd in enumerate(m.nodes):
        for u in range(nd.noisy.size):
            noisy = nd.noisy.copy()
            noisy[u] += 1
            nodes = list(m.nodes)
            nodes[j] = dataclasses.replace(nd, noisy=noisy)
            moved = PrivTree2D(rel.plan, tree, dataclasses.replace(m, nodes=nodes), rel.privacy)
            g = np.array([moved.count(*r) for r in rects]) - base
            want += g**2 * var[j]
    got = np.array([rel.stderr(*r) for r in rects]) ** 2
    assert np.allclose(got, want, rtol=1e-9)


def test_interval_covers_the_uniform_spread_bias() -> None:
    """A rectangle cutting a leaf: the interval holds the least-squares interval plus the share of
    the leaf's count it may miss; on a rectangle of whole leaves nothing is added."""
    rel = _release(_clusters(), rng=3)
    full = ((0.0, 63.9), (0.0, 63.9))
    lo, hi = rel.ci(*full)
    c, s = rel.count(*full), rel.stderr(*full)
    assert hi - c == pytest.approx(c - lo) and (hi - c) < 4 * s  # no cut leaf: symmetric, noise only
    cut = ((11.0, 11.0), (11.0, 11.0))  # one cell inside a busy leaf
    lo, hi = rel.ci(*cut)
    assert hi - rel.count(*cut) > 3 * rel.stderr(*cut)


def test_privtree_beats_the_quadtree_on_clustered_small_rectangles() -> None:
    """Zhang, Xiao & Xie (2016), Section 6: on skewed spatial data PrivTree's range counts are more
    accurate than a data-independent quadtree's at the same epsilon."""
    pts = _clusters(20000)
    rng = np.random.default_rng(9)
    x0, y0 = rng.uniform(0, 56, 300), rng.uniform(0, 56, 300)
    sq = ((x0, x0 + 7.99), (y0, y0 + 7.99))
    truth = np.array([((pts[:, 0] >= a) & (pts[:, 0] < a + 8) & (pts[:, 1] >= b) & (pts[:, 1] < b + 8)).sum()
                      for a, b in zip(np.floor(x0), np.floor(y0))])
    err_p, err_q = [], []
    for seed in range(3):
        p = _release(pts, rng=seed)
        q = dptree.range_tree_2d(pts[:, 0], pts[:, 1], lower=(0.0, 0.0), upper=(64.0, 64.0), width=1.0,
                                 epsilon=1.0, rng=seed)
        err_p.append(np.mean((p.count(*sq) - truth) ** 2))
        err_q.append(np.mean((q.count(*sq) - truth) ** 2))
    assert np.mean(err_p) < np.mean(err_q)


def test_save_load_and_tampering(tmp_path) -> None:
    rel = _release(_clusters(), rng=3, columns=None)
    path = tmp_path / "pt.json"
    rel.save(path, allow_nonprivate=True)
    back = dptree.load(path)
    assert isinstance(back, PrivTree2D)
    r = ((10.0, 30.0), (5.0, 40.0))
    assert back.count(*r) == rel.count(*r) and back.stderr(*r) == rel.stderr(*r)
    doc = rel.to_document()
    doc["measurements"]["counts"][0][0] += 1
    PrivTree2D.from_document(doc)  # a different noisy count is still a release of the same shape
    doc["measurements"]["noise_parameters"] = "1/1"
    with pytest.raises(ReleaseFileError):
        PrivTree2D.from_document(doc)
    doc = rel.to_document()
    doc["measurements"]["levels"][1]["index"] = doc["measurements"]["levels"][1]["index"][:-1]
    with pytest.raises(ReleaseFileError):
        PrivTree2D.from_document(doc)


def test_frame_and_plot(tmp_path) -> None:
    rel = _release(_clusters(), rng=3)
    f = rel.to_frame(resolution=8)
    assert len(f) == 64 and f["estimate"].sum() == pytest.approx(rel.total())
    assert (f["ci_low"] <= f["estimate"]).all() and (f["estimate"] <= f["ci_high"]).all()
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    rel.plot(resolution=8)


@pytest.mark.parametrize("bad", [{"noise": "gaussian", "delta": 1e-6}, {"neighbors": "replace"},
                                 {"levels": "uniform"}])
def test_quadtree_only_options_are_refused(bad: dict) -> None:
    with pytest.raises(InvalidParameterError, match="method='privtree'"):
        _release(_clusters(100), **bad)


def test_privtree_options_need_the_method() -> None:
    pts = _clusters(100)
    with pytest.raises(InvalidParameterError, match="method='privtree' options"):
        dptree.range_tree_2d(pts[:, 0], pts[:, 1], lower=(0.0, 0.0), upper=(64.0, 64.0), width=1.0, epsilon=1.0,
                             structure_share=0.3)


def test_rectangles_inside_one_leaf_take_the_leafs_own_moments() -> None:
    """The shortcut for a rectangle inside one leaf (w^2 v1, w^4 v2 of the leaf's estimate) gives
    the general weights' moments and spread bounds."""
    rel = _release(_clusters(), rng=3)
    e = rel._est
    f = rel.to_frame(level=0.9)  # one row per cell: every rectangle inside one leaf
    i = np.random.default_rng(2).choice(len(f), 300, replace=False)
    ax, ay = (f["x_low"].to_numpy()[i]).astype(np.int64), (f["y_low"].to_numpy()[i]).astype(np.int64)
    W = e._weights(ax, ax, ay, ay)
    v1, v2 = e.tree.moments(W)
    assert np.allclose(f["stderr"].to_numpy()[i], np.sqrt(v1), rtol=1e-9)
    from dptree.estimation.intervals import gamma_shape, multiplier

    m = multiplier("laplace", 0.9, gamma_shape(v1, v2))
    bound = np.maximum(e.tree.cell_est + multiplier("laplace", 0.9, np.ones(1)) * e.leaf_sd, 0.0)[:, None]
    cut = (W > 0) & (W < 1)
    est = f["estimate"].to_numpy()[i]
    assert np.allclose(f["ci_low"].to_numpy()[i], est - m * np.sqrt(v1) - (cut * W * bound).sum(axis=0))
    assert np.allclose(f["ci_high"].to_numpy()[i], est + m * np.sqrt(v1) + (cut * (1 - W) * bound).sum(axis=0))
