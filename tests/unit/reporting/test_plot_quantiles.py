"""``plot_quantiles`` and ``dptree plot`` / ``dptree report`` on quantiles releases: what is drawn is
the release's own estimates and intervals, every group's side by side."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dptree
from dptree.errors import InvalidParameterError

pytest.importorskip("matplotlib")


@pytest.fixture()
def drawn(monkeypatch: Any) -> list[dict[str, Any]]:
    """What each plot drew: its series (label -> (x, y)), its interval bars and axis labels."""
    import dptree.reporting.plot as plot

    figs: list[dict[str, Any]] = []
    real = plot._save

    def keep(fig: Any, path: Any) -> None:
        ax = fig.axes[0]
        series = {ln.get_label(): (np.asarray(ln.get_xdata(), dtype=float), np.asarray(ln.get_ydata()))
                  for ln in ax.lines if ln.get_marker() == "o"}
        bars = [np.asarray(seg) for coll in ax.collections for seg in coll.get_segments()]
        figs.append({"series": series, "bars": bars, "ylabel": ax.get_ylabel(), "yscale": ax.get_yscale(),
                     "title": ax.get_title(), "legend": [t.get_text() for t in ax.get_legend().get_texts()]})
        real(fig, path)

    monkeypatch.setattr(plot, "_save", keep)
    return figs


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    values = rng.integers(0, 1000, 3000)
    groups = np.array(["north", "south", "east"])[rng.integers(0, 3, 3000)]
    return values, groups


def test_the_plot_draws_each_estimate_at_its_level_with_its_own_interval(tmp_path: Path, drawn: Any) -> None:
    from dptree.reporting.plot import plot_quantiles

    x, _ = _data()
    rel = dptree.quantiles(x, [0.1, 0.5, 0.9], lower=0, upper=1023, epsilon=1.0, method="approx", n=3000, rng=5,
                           column=None)
    rel.metadata["column"] = "delay"
    rows = plot_quantiles(rel, tmp_path / "q.png")
    (fig,) = drawn
    xs, ys = fig["series"]["estimate"]
    assert list(xs) == [0.1, 0.5, 0.9] and list(ys) == rel.values
    assert sorted((seg[0][1], seg[1][1]) for seg in fig["bars"]) == sorted(zip(rel.ci_low, rel.ci_high))
    assert fig["ylabel"] == "delay" and "delay" in fig["title"] and "NOT PRIVATE" in fig["title"]
    assert "95% interval (approx)" in fig["legend"]
    assert list(rows["estimate"]) == rel.values and (tmp_path / "q.png").read_bytes()[:4] == b"\x89PNG"


def test_a_group_by_release_draws_one_series_per_group_side_by_side(tmp_path: Path, drawn: Any) -> None:
    from dptree.reporting.plot import plot_quantiles

    x, g = _data()
    rel = dptree.quantiles(x, [0.25, 0.5, 0.75], lower=0, upper=1023, epsilon=1.0, method="tree", by=g,
                           groups=["north", "south", "east"], rng=2)
    rows = plot_quantiles(rel, tmp_path / "g.png", log=True)
    fig = drawn[0]
    assert set(fig["series"]) == {"north", "south", "east"} and fig["yscale"] == "symlog"
    offsets = []
    for group, (xs, ys) in fig["series"].items():
        assert list(ys) == rel[group].values  # each group's own estimates ...
        offsets.append(xs - np.array([0.25, 0.5, 0.75]))
    assert len({round(float(o[0]), 9) for o in offsets}) == 3  # ... drawn beside, not on top of, each other
    assert all(np.abs(o).max() < 0.125 for o in offsets)  # and within half the gap between two levels
    assert list(rows["group"]) == ["north"] * 3 + ["south"] * 3 + ["east"] * 3

    plot_quantiles(rel, tmp_path / "s.png", groups=["east"])
    assert set(drawn[1]["series"]) == {"east"}
    with pytest.raises(InvalidParameterError, match="groups must name distinct groups"):
        plot_quantiles(rel, tmp_path / "u.png", groups=["west"])
    with pytest.raises(InvalidParameterError, match="applies to a group-by release"):
        plot_quantiles(rel["east"], tmp_path / "u.png", groups=["east"])


def test_too_many_groups_for_one_plot_are_refused_unless_picked(tmp_path: Path, drawn: Any) -> None:
    from dptree.reporting.plot import MAX_PLOTTED_GROUPS, plot_quantiles

    names = [f"g{i}" for i in range(MAX_PLOTTED_GROUPS + 1)]
    x = np.arange(len(names) * 10) % 100
    rel = dptree.quantiles(x, [0.5], lower=0, upper=99, epsilon=1.0, method="approx", by=np.repeat(names, 10),
                           groups=names, rng=1)
    with pytest.raises(InvalidParameterError, match="pick them with groups"):
        plot_quantiles(rel, tmp_path / "a.png")
    assert not (tmp_path / "a.png").exists()
    plot_quantiles(rel, tmp_path / "b.png", groups=names[:2])
    assert set(drawn[0]["series"]) == {"g0", "g1"}
    from dptree.reporting.report import render_report

    page = render_report(rel)  # the tables, and a line saying why there is no plot
    assert "No plot: one plot draws at most 10 groups" in page and "data:image/png" not in page
    assert all(f"Group {g}" in page for g in names)


def test_dptree_plot_and_report_take_quantiles_files(tmp_path: Path, cli_run: Any, drawn: Any) -> None:
    x, g = _data()
    rel = dptree.quantiles(x, [0.1, 0.5, 0.9], lower=0, upper=1023, epsilon=1.0, method="tree", level=0.9, by=g,
                           groups=["north", "south", "east"], rng=4)
    rel.save(tmp_path / "g.json", allow_nonprivate=True)
    rel["north"].save(tmp_path / "n.json", allow_nonprivate=True)
    code, out, err = cli_run(["plot", str(tmp_path / "g.json"), "--groups", "south,east", "--out",
                              str(tmp_path / "g.png")])
    assert code == 0 and err.strip() == f"wrote {tmp_path / 'g.png'}", err
    assert set(drawn[-1]["series"]) == {"south", "east"}
    assert list(drawn[-1]["series"]["east"][1]) == rel["east"].values
    assert cli_run(["plot", str(tmp_path / "n.json"), "--ci", "0.9", "--out", str(tmp_path / "n.png")]).code == 0
    for flags, message in (
        (["--ci", "0.95"], "intervals are at level 0.9; drop --ci or pass --ci 0.9"),
        (["--kind", "histogram"], "--kind does not apply to a quantiles release"),
        (["--clip-negative"], "--clip-negative does not apply to a quantiles release"),
        (["--groups", "north"], "--groups does not apply to a quantiles release"),
    ):
        code, _, err = cli_run(["plot", str(tmp_path / "n.json"), *flags, "--out", str(tmp_path / "x.png")])
        assert code == 2 and message in err, (flags, err)
    for flags in (["--clip-negative"], ["--bins", "10"]):  # the report refuses them as the plot does
        code, _, err = cli_run(["report", str(tmp_path / "n.json"), *flags, "--out", str(tmp_path / "x.html")])
        assert code == 2 and "does not apply to a quantiles release" in err, (flags, err)
    assert not (tmp_path / "x.png").exists()
    code, _, err = cli_run(["plot", str(tmp_path / "g.json"), "--groups", "west", "--out", str(tmp_path / "x.png")])
    assert code == 2 and "'north', 'south', 'east'" in err, err

    code, _, err = cli_run(["report", str(tmp_path / "g.json"), "--out", str(tmp_path / "g.html")])
    assert code == 0, err
    page = (tmp_path / "g.html").read_text()
    (png,) = re.findall(r'alt="quantiles with their intervals" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert base64.b64decode(png)[:4] == b"\x89PNG"
    assert set(drawn[-1]["series"]) == {"north", "south", "east"}
