"""``.plot(ax=None)`` of releases and results: it draws on the caller's axes (or a new figure's) and
returns them, draws what the release holds, and is the same drawing the PNG writers save."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dptree
from dptree.errors import InvalidParameterError, MissingDependencyError

pytest.importorskip("matplotlib")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

AGES = np.random.default_rng(0).integers(18, 90, 2000)
BY = np.where(AGES < 50, "young", "old")


def _axes() -> Any:
    return Figure().add_subplot()


@pytest.fixture(scope="module")
def tree() -> dptree.RangeTree:
    return dptree.range_tree(AGES, lower=0, upper=120, epsilon=1.0, rng=1, column="age")


def _line(ax: Any, label: str) -> tuple[np.ndarray, np.ndarray]:
    ln = next(ln for ln in ax.lines if ln.get_label() == label)
    return np.asarray(ln.get_xdata(), dtype=float), np.asarray(ln.get_ydata(), dtype=float)


def test_a_range_tree_draws_its_cdf_with_its_band_on_the_given_axes(tree: Any) -> None:
    ax = _axes()
    assert tree.plot(ax) is ax
    xs, ys = _line(ax, "least-squares estimate")
    assert list(xs) == list(range(121))  # every bucket of the release is a point
    assert ys == pytest.approx(tree.cdf(np.arange(121)) / tree.total())
    low, high = tree.ci(np.zeros(121, dtype=int), np.arange(121))
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(min(low.min(), high.min()) / tree.total())
    assert "age" in ax.get_xlabel() and "NOT PRIVATE" in ax.get_title()


def test_without_axes_it_draws_a_new_figure_and_returns_its_axes(tree: Any) -> None:
    import matplotlib.pyplot as plt

    ax = tree.plot(max_points=50)
    try:
        assert isinstance(ax, Axes) and len(_line(ax, "least-squares estimate")[0]) == 50
    finally:
        plt.close(ax.figure)


def test_a_sparse_tree_and_a_group_release_draw_their_cdfs() -> None:
    sparse = dptree.sparse_range_tree(AGES, epsilon=1.0, rng=1)
    ax = sparse.plot(_axes(), max_points=200)
    assert len(_line(ax, "least-squares estimate")[0]) <= 200
    groups = dptree.range_tree_by(AGES, by=BY, groups=["young", "old"], lower=0, upper=120, epsilon=1.0, rng=1)
    ax = groups.plot(_axes())
    assert {ln.get_label() for ln in ax.lines} == {"young", "old"} and len(ax.collections) == 2


def test_a_histogram_result_draws_one_bar_per_bin_with_its_interval(tree: Any) -> None:
    h = tree.histogram([0, 18, 30, 65, 120])
    ax = h.plot(_axes())
    assert len(ax.patches) == 4
    assert [p.get_height() for p in ax.patches] == pytest.approx(list(h.counts))
    assert [p.get_x() for p in ax.patches] == [0, 18, 30, 65]
    (bars,) = [c for c in ax.containers if hasattr(c, "has_yerr") and c.has_yerr]
    segs = bars.lines[2][0].get_segments()
    assert sorted(s[0][1] for s in segs) == pytest.approx(sorted(h.ci_low))
    assert "histogram of age" in ax.get_title()
    dates = dptree.range_tree(np.datetime64("2024-01-01") + np.arange(300), lower="2024-01-01", upper="2024-12-31",
                              epsilon=1.0, rng=2)
    assert len(dates.histogram(["2024-01-01", "2024-07-01", "2024-12-31"]).plot(_axes()).patches) == 2


def test_the_legend_colours_count_bars_blue_whatever_bar_comes_first() -> None:
    from matplotlib.colors import to_rgba

    # an empty first bin: noise gives it a negative estimate for some seed, drawn red as released
    rel = next(r for r in (dptree.range_tree(AGES, lower=0, upper=120, epsilon=1.0, rng=s, column="age")
                           for s in range(50)) if r.histogram([0, 10, 120]).counts[0] < 0)
    ax = rel.histogram([0, 10, 120]).plot(_axes())
    assert ax.patches[0].get_facecolor()[:3] == pytest.approx(to_rgba("tab:red")[:3])
    legend = {t.get_text(): h for t, h in zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles)}
    assert legend["estimated count"].get_facecolor()[:3] == pytest.approx(to_rgba("tab:blue")[:3])
    assert legend["negative estimate (noise), as released"].get_facecolor()[:3] == pytest.approx(to_rgba("tab:red")[:3])


@pytest.mark.parametrize("make", ["result", "release", "groups"])
def test_quantiles_draw_one_marker_per_level_with_its_interval(tree: Any, make: str) -> None:
    q = [0.1, 0.5, 0.9]
    if make == "result":
        rel: Any = tree.quantiles(q)
    elif make == "release":
        rel = dptree.quantiles(AGES, q, lower=0, upper=120, epsilon=1.0, rng=1)
    else:
        rel = dptree.quantiles(AGES, q, lower=0, upper=120, epsilon=1.0, by=BY, groups=["young", "old"], rng=1)
    ax = rel.plot(_axes())
    series = [ln for ln in ax.lines if ln.get_marker() == "o"]
    assert len(series) == (2 if make == "groups" else 1)
    one = rel["young"] if make == "groups" else rel
    ys = np.asarray(series[0].get_ydata(), dtype=float)
    assert len(ys) == 3 and ys == pytest.approx(np.asarray(one.values, dtype=float))
    bars = [seg for coll in ax.collections for seg in coll.get_segments()]
    assert len(bars) == 3 * len(series)


def test_a_hierarchy_draws_one_bar_per_node_of_a_level() -> None:
    h = dptree.Hierarchy.from_paths([("US", "CA"), ("US", "NY"), ("FR", "IDF"), ("DE", "BE")])
    rel = dptree.hierarchy_counts([("US", "CA")] * 5, h, epsilon=1.0, levels=["country", "state"], rng=1)
    ax = rel.plot(_axes())
    assert len(ax.patches) == 3 and ax.get_ylabel() == "country"
    assert sorted(p.get_width() for p in ax.patches) == pytest.approx(
        sorted(rel.to_frame().query("depth == 1")["count"]))
    assert len(rel.plot(_axes(), depth=2).patches) == 4
    with pytest.raises(InvalidParameterError, match="depth"):
        rel.plot(_axes(), depth=5)


def test_a_point_is_one_marker_on_its_domain() -> None:
    ip = dptree.interior_point(AGES, lower=0, upper=1000, epsilon=1.0, rng=1)
    ax = ip.plot(_axes())
    (marker,) = [ln for ln in ax.lines if ln.get_marker() == "v"]
    assert list(marker.get_xdata()) == [ip.value] and ax.get_xlim()[0] <= 0 and ax.get_xlim()[1] >= 1000
    days = np.datetime64("2024-01-01") + np.arange(200)
    med = dptree.median(days, lower="2024-01-01", upper="2024-12-31", epsilon=1.0, rng=1)
    assert len([ln for ln in med.plot(_axes()).lines if ln.get_marker() == "v"]) == 1
    thr = dptree.learn_threshold(AGES, (AGES < 40).astype(int), lower=0, upper=1000, epsilon=1.0, rng=1)
    assert "threshold" in thr.plot(_axes()).get_title()


def test_answers_have_no_plot(tree: Any) -> None:
    with pytest.raises(InvalidParameterError, match="has no plot"):
        tree.answer(count=[(1, 5)]).plot(_axes())


def test_the_png_writer_draws_the_same_as_plot(tree: Any, tmp_path: Path, monkeypatch: Any) -> None:
    import dptree.reporting.plot as plot

    saved: list[Any] = []
    real = plot._save
    monkeypatch.setattr(plot, "_save", lambda fig, path: (saved.append(fig.axes[0]), real(fig, path)))
    plot.plot_cdf(tree, tmp_path / "c.png", max_points=60)
    plot.plot_histogram(tree, tmp_path / "h.png", edges=[0, 30, 60, 120])
    cdf, hist = saved
    mine = tree.plot(_axes(), max_points=60)
    for label in ("least-squares estimate", "monotone fit"):
        assert np.array_equal(_line(cdf, label)[1], _line(mine, label)[1])
    assert cdf.get_title() == mine.get_title()
    drawn = tree.histogram([0, 30, 60, 120]).plot(_axes())
    assert [p.get_height() for p in hist.patches] == [p.get_height() for p in drawn.patches]
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


def test_without_matplotlib_the_error_says_what_to_install(tree: Any, monkeypatch: Any, tmp_path: Path) -> None:
    """matplotlib is a dependency of dptree (no extra installs it): the advice names the package."""
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # import fails
    with pytest.raises(MissingDependencyError, match="plotting needs the package 'matplotlib', which is not installed: pip install matplotlib$"):
        tree.plot()
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(MissingDependencyError, match="pip install matplotlib$"):
        dptree.reporting.plot.plot_cdf(tree, tmp_path / "c.png")
