"""The 2-D range tree's release: counts, errors and intervals, engines that agree, tables, files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from _edited_release import assert_edited_statement_refused, spent_with

import dptree
from dptree.io.release_file import canonical_checksum
from dptree.spatial.counting import grid_histogram
from dptree.spatial.grid import unmorton


def _points(n: int = 3000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(5, 2, n), rng.uniform(-1, 4, n)


KW = dict(lower=(0.0, -1.0), upper=(10.0, 4.0), width=(0.5, 0.25))


def test_counts_are_exact_at_a_huge_budget_and_clamp_outside_points() -> None:
    x, y = _points()
    rel = dptree.range_tree_2d(x, y, epsilon=1e7, rng=1, **KW)
    xc, yc = np.clip(x, 0, 10), np.clip(y, -1, 4)
    assert rel.total() == pytest.approx(x.size, abs=0.5)
    for (x0, x1), (y0, y1) in [((0.0, 10.0), (-1.0, 4.0)), ((2.0, 4.49), (0.0, 1.99)), ((7.5, 7.5), (3.0, 3.1))]:
        bx0, bx1 = np.floor(x0 / 0.5) * 0.5, (np.floor(x1 / 0.5) + 1) * 0.5
        by0, by1 = np.floor((y0 + 1) / 0.25) * 0.25 - 1, (np.floor((y1 + 1) / 0.25) + 1) * 0.25 - 1
        inside = (xc >= bx0) & (xc < bx1) & (yc >= by0) & (yc < by1)  # a top edge past upper: its closed last bucket
        assert rel.count((x0, x1), (y0, y1)) == pytest.approx(inside.sum(), abs=0.5)


def test_vectorised_answers_and_the_plan_knows_the_errors() -> None:
    x, y = _points()
    rel = dptree.range_tree_2d(x, y, epsilon=1.0, rng=2, **KW)
    lo, hi = np.array([0.0, 2.0, 5.0]), np.array([9.0, 3.0, 5.0])
    c = rel.count((lo, hi), (0.0, 2.0))
    s = rel.stderr((lo, hi), (0.0, 2.0))
    assert c.shape == s.shape == (3,)
    assert [rel.count((a, b), (0.0, 2.0)) for a, b in zip(lo, hi)] == pytest.approx(c.tolist())
    assert rel.plan.expected_error((lo, hi), (0.0, 2.0)) == pytest.approx(s)
    low, high = rel.ci((2.0, 3.0), (0.0, 2.0), level=0.9)
    assert low < rel.count((2.0, 3.0), (0.0, 2.0)) < high
    assert rel.count((20.0, 30.0), (0.0, 1.0)) == 0.0 and rel.stderr((20.0, 30.0), (0.0, 1.0)) == 0.0


@pytest.mark.parametrize("bad", [((3.0, 2.0), (0.0, 1.0)), ((1.0,), (0.0, 1.0)), (2.0, (0.0, 1.0))])
def test_bad_rectangles_are_refused(bad: tuple) -> None:
    x, y = _points(100)
    rel = dptree.range_tree_2d(x, y, epsilon=1.0, rng=2, **KW)
    with pytest.raises(dptree.InvalidParameterError):
        rel.count(*bad)


@pytest.mark.parametrize("kw,match", [(dict(lower=0, upper=(1, 1)), "pair"),
                                      (dict(lower=(0.0, 0.0), upper=(1.0, 1.0)), "width"),
                                      (dict(lower=(0, 0), upper=(9, 9), levels="prefix"), "levels")])
def test_bad_plans_are_refused_before_any_data(kw: dict, match: str) -> None:
    with pytest.raises(dptree.DPTreeError, match=match):
        dptree.plan_range_tree_2d(epsilon=1.0, **kw)


def test_to_frame_blocks_add_up_and_cover_the_grid() -> None:
    x, y = _points()
    rel = dptree.range_tree_2d(x, y, epsilon=1.0, rng=3, **KW)
    cells = rel.to_frame()
    assert len(cells) == 20 * 20 and cells["estimate"].sum() == pytest.approx(rel.total())
    coarse = rel.to_frame(resolution=4, level=0.8)
    assert len(coarse) == 16 and coarse.attrs["ci_level"] == 0.8
    assert coarse["estimate"].sum() == pytest.approx(rel.total())
    first = coarse.iloc[0]
    assert first["estimate"] == pytest.approx(rel.count((first["x_low"], 2.49), (first["y_low"], 0.24)))
    assert first["stderr"] == pytest.approx(rel.stderr((first["x_low"], 2.49), (first["y_low"], 0.24)))


def test_numpy_and_duckdb_count_the_same_cells(tmp_path) -> None:  # noqa: ANN001
    x, y = _points(2000, 5)
    x[:7] = np.nan  # invalid records: refused, or dropped record by record
    y[5:12] = np.inf
    frame = pd.DataFrame({"lon": x, "lat": y})
    plan = dptree.plan_range_tree_2d(epsilon=1.0, **KW)
    csv, parquet = tmp_path / "p.csv", tmp_path / "p.parquet"
    frame.to_csv(csv, index=False)
    frame.to_parquet(parquet)
    want = grid_histogram(frame, plan, ("lon", "lat"), on_invalid="drop")
    assert want.sum() == 2000 - 12
    for data in (str(csv), str(parquet)):
        assert np.array_equal(grid_histogram(data, plan, ("lon", "lat"), on_invalid="drop"), want)
        with pytest.raises(dptree.DataError):
            grid_histogram(data, plan, ("lon", "lat"))
    with pytest.raises(dptree.DataError):
        grid_histogram(frame, plan, ("lon", "lat"))
    a = dptree.range_tree_2d(str(parquet), columns=("lon", "lat"), epsilon=1.0, rng=9, on_invalid="drop", **KW)
    b = dptree.range_tree_2d(frame, columns=("lon", "lat"), epsilon=1.0, rng=9, on_invalid="drop", **KW)
    assert np.array_equal(a.cell_estimates, b.cell_estimates)
    assert a.columns == ("lon", "lat") and a.metadata["source"]


def test_save_and_load_round_trip_and_refuse_tampering(tmp_path) -> None:  # noqa: ANN001
    x, y = _points()
    rel = dptree.range_tree_2d(x, y, epsilon=1.0, rng=4, levels="geometric", **KW)
    path = tmp_path / "r.json"
    rel.save(path, allow_nonprivate=True)
    back = dptree.load(path)
    assert type(back) is dptree.RangeTree2D and back.summary() == rel.summary()
    assert np.array_equal(back.cell_estimates, rel.cell_estimates)
    assert_edited_statement_refused(rel, tmp_path, "budget_spent", spent_with(rel, epsilon=0.1))
    doc = json.loads(path.read_text())
    for part, key, value in (("measurements", "noise_parameters", ["1/1"] * 4), ("parameters", "depth", 3)):
        bad = json.loads(json.dumps(doc))
        bad[part][key] = value
        bad["checksum"] = canonical_checksum(bad)  # the checksum is no signature: only the content is wrong
        edited = tmp_path / f"{key}.json"
        edited.write_text(json.dumps(bad))
        with pytest.raises(dptree.ReleaseFileError):
            dptree.load(edited)


@pytest.mark.parametrize("eps", [1.0, 0.2])
def test_the_95_percent_intervals_cover(eps: float) -> None:
    """Coverage of the 95% intervals over 1500 releases of a 32 x 32 grid (Laplace): the
    variance-gamma multiplier on the exact variance covers 0.93-0.97 from a single cell to the
    whole grid (5 sigma of 1500 releases: +-0.028 around the nominal level is allowed)."""
    plan = dptree.plan_range_tree_2d(lower=(0, 0), upper=(31, 31), epsilon=eps)
    rng = np.random.default_rng(11)
    hist = grid_histogram(pd.DataFrame({"x": rng.integers(0, 32, 900), "y": rng.integers(0, 32, 900)}), plan,
                          ("x", "y"))
    rects = [((3, 3), (9, 9)), ((0, 15), (0, 15)), ((2, 29), (5, 6)), ((0, 31), (0, 31)), ((4, 11), (1, 30))]
    cum = np.zeros((33, 33))
    i, j = unmorton(np.arange(1024))
    cells = np.zeros((32, 32))
    cells[i, j] = hist
    cum[1:, 1:] = cells.cumsum(0).cumsum(1)
    truth = [cum[x1 + 1, y1 + 1] - cum[x0, y1 + 1] - cum[x1 + 1, y0] + cum[x0, y0] for (x0, x1), (y0, y1) in rects]
    hits = np.zeros(len(rects))
    sims = 1500
    for s in range(sims):
        rel = plan.release(hist, rng=1000 + s)
        for k, r in enumerate(rects):
            low, high = rel.ci(*r)
            hits[k] += low <= truth[k] <= high
    cover = hits / sims
    assert np.all(np.abs(cover - 0.95) < 0.028), cover


def test_plot_draws_the_estimates_beside_their_standard_errors() -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    x, y = _points()
    rel = dptree.range_tree_2d(x, y, epsilon=0.5, rng=6, **KW)
    ax = rel.plot(resolution=10)
    images = [im for a in ax.figure.axes for im in a.get_images()]
    assert len(images) == 2
    frame = rel.to_frame(resolution=10)
    assert np.allclose(np.sort(images[0].get_array().ravel()), np.sort(frame["estimate"]))
    assert np.allclose(np.sort(images[1].get_array().ravel()), np.sort(frame["stderr"]))
    assert "as released" in ax.get_title()
    clipped = rel.plot(resolution=10, clip_negative=True, uncertainty=False)
    assert "shown as 0" in clipped.get_title() and len(clipped.figure.axes) == 2  # the map and its colour bar
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.mark.parametrize("args,kw,match", [((np.zeros(3),), {}, "columns"),
                                           ((np.zeros(3), np.zeros(3)), {"columns": ("a", "b")}, "columns"),
                                           ((np.zeros(3), np.zeros(4)), {}, "length")])
def test_inputs_name_what_to_pass(args: tuple, kw: dict, match: str) -> None:
    with pytest.raises(dptree.InvalidParameterError, match=match):
        dptree.range_tree_2d(*args, lower=(0, 0), upper=(3, 3), epsilon=1.0, **kw)
