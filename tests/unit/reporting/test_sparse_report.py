"""``plot_cdf``, ``dptree plot`` and ``dptree report`` on a sparse range tree (and ``plot_cdf`` on a
group-by range tree): what is drawn and listed is the release's own CDF, band and quantiles."""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dptree

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def sparse() -> dptree.SparseRangeTree:
    return dptree.sparse_range_tree(np.random.default_rng(2).lognormal(3.0, 1.0, 5000), epsilon=1.0, rng=6)


@pytest.fixture()
def drawn(monkeypatch: Any) -> list[Any]:
    """The axes of every plot saved during the test."""
    import dptree.reporting.plot as plot

    axes: list[Any] = []
    real = plot._save

    def keep(fig: Any, path: Any) -> None:
        axes.append(fig.axes[0])
        real(fig, path)

    monkeypatch.setattr(plot, "_save", keep)
    return axes


def test_the_cdf_is_drawn_between_the_released_extreme_quantiles(sparse: Any, tmp_path: Path, drawn: Any) -> None:
    import dptree.reporting.plot as plot

    plot.plot_cdf(sparse, tmp_path / "c.png", log=True)
    (ax,) = drawn
    line = next(ln for ln in ax.lines if ln.get_label() == "least-squares estimate")
    xs, ys = np.asarray(line.get_xdata(), dtype=float), np.asarray(line.get_ydata())
    low, high = sparse.quantile([0.001, 0.999])
    assert xs[0] == pytest.approx(low) and xs[-1] == pytest.approx(high) and ax.get_xscale() == "log"
    assert ys == pytest.approx(sparse.cdf(xs) / sparse.total())
    band = ax.collections[0].get_paths()[0].vertices[:, 1]  # the filled band's lower and upper edges
    lo, hi = sparse.cdf_ci(xs)
    assert band.min() == pytest.approx(min(lo.min(), hi.min()) / sparse.total())


def test_dptree_plot_and_report_take_a_sparse_tree_file(sparse: Any, tmp_path: Path, cli_run: Any) -> None:
    sparse.save(tmp_path / "s.json", allow_nonprivate=True)
    code, _, err = cli_run(["plot", str(tmp_path / "s.json"), "--out", str(tmp_path / "s.png")])
    assert code == 0 and (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG", err
    code, _, err = cli_run(["plot", str(tmp_path / "s.json"), "--kind", "histogram", "--out", str(tmp_path / "h.png")])
    assert code == 2 and "dptree query --histogram" in err and not (tmp_path / "h.png").exists()
    code, _, err = cli_run(["report", str(tmp_path / "s.json"), "--out", str(tmp_path / "s.html")])
    assert code == 0, err
    page = (tmp_path / "s.html").read_text()
    assert 'alt="CDF of value with confidence band" src="data:image/png;base64,' in page
    links = dict(re.findall(r'download="([^"]+)" href="data:text/csv;charset=utf-8;base64,([A-Za-z0-9+/=]+)"', page))
    quant = pd.read_csv(io.BytesIO(base64.b64decode(links["release-quantiles.csv"])))
    want = sparse.quantiles(list(quant.q))
    assert quant.estimate.to_numpy() == pytest.approx(np.asarray(want.values, dtype=float))
    assert quant.ci_high.to_numpy() == pytest.approx(np.asarray(want.ci_high, dtype=float))
    cells = pd.read_csv(io.BytesIO(base64.b64decode(links["release-cells.csv"])))
    assert len(cells) == len(sparse.to_frame()) and cells.estimate.sum() == pytest.approx(sparse.total())


def test_a_group_by_range_tree_draws_each_groups_cdf(tmp_path: Path, drawn: Any, cli_run: Any) -> None:
    import dptree.reporting.plot as plot

    x, g = np.arange(900) % 100, np.where(np.arange(900) % 3 == 0, "a", "b")
    rel = dptree.range_tree(x, by=g, groups=["a", "b"], lower=0, upper=99, epsilon=1.0, rng=1)
    rel.save(tmp_path / "g.json", allow_nonprivate=True)
    code, _, err = cli_run(["plot", str(tmp_path / "g.json"), "--groups", "b", "--out", str(tmp_path / "b.png")])
    assert code == 0, err
    plot.plot_cdf(rel, tmp_path / "all.png")
    one, both = drawn
    assert [ln.get_label() for ln in one.lines] == ["b"]
    assert [ln.get_label() for ln in both.lines] == ["a", "b"]
    for line, group in zip(both.lines, ("a", "b")):  # each group's CDF as a fraction of its own total
        xs = np.asarray(line.get_xdata())
        tree = rel[group]
        assert np.asarray(line.get_ydata()) == pytest.approx(tree.cdf(xs) / tree.cdf(xs[-1:])[0])
    code, _, err = cli_run(["plot", str(tmp_path / "g.json"), "--kind", "histogram", "--out", str(tmp_path / "h.png")])
    assert code == 2 and "one file per group" in err
