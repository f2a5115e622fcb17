"""Plots and reports of releases whose groups were found from the data: every released group is
drawn; a release that kept no group says so instead of drawing an empty figure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dptree
from dptree.errors import InvalidParameterError
from dptree.reporting.plot import plot_cdf, plot_quantiles
from dptree.reporting.report import render_report


def _data(n: int = 6000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.integers(0, 100, n), rng.choice(np.array(["north", "south"], dtype=object), n)


def test_trees_and_quantiles_of_groups_found_are_drawn_and_reported(tmp_path: Path) -> None:
    v, g = _data()
    tree = dptree.range_tree(v, by=g, groups="private", lower=0, upper=99, epsilon=1.0, delta=1e-6, rng=1)
    q = dptree.quantiles(v, [0.25, 0.5], by=g, groups="private", lower=0, upper=99, epsilon=1.0, delta=1e-6,
                         method="approx", rng=1)
    assert tree.groups == ["north", "south"] and q.groups == ["north", "south"]
    for rel in (tree, q):
        html = render_report(rel)
        assert "north" in html and "south" in html and "<img" in html
    plot_cdf(tree, tmp_path / "t.png")
    plot_quantiles(q, tmp_path / "q.png")
    assert (tmp_path / "t.png").stat().st_size > 0 and (tmp_path / "q.png").stat().st_size > 0


def test_a_release_without_groups_refuses_to_draw(tmp_path: Path) -> None:
    tree = dptree.range_tree([3], by=["lonely"], groups="private", lower=0, upper=9, epsilon=1.0, delta=1e-6, rng=2)
    assert tree.groups == []
    with pytest.raises(InvalidParameterError, match="no group was released"):
        plot_cdf(tree, tmp_path / "t.png")
    with pytest.raises(InvalidParameterError, match="no group was released"):
        render_report(tree)
