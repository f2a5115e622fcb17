"""The report of a range tree with sums of weights: both trees' sensitivities, and the histogram
table with the sums and means of every bin beside the counts."""

from __future__ import annotations

import numpy as np

import dptree
from dptree.reporting.report import render_report


def test_a_report_shows_sums_and_means() -> None:
    rng = np.random.default_rng(0)
    v, w = rng.integers(0, 100, 4000), rng.uniform(0, 50, 4000)
    rel = dptree.range_tree(v, weights=w, weight_bounds=(0, 50), lower=0, upper=99, epsilon=1.0, rng=1)
    html = render_report(rel, bins=4)
    assert "sums of weights: L1 " in html and "<th>mean weight</th>" in html
    hist = rel.histogram([0, 25, 50, 75, 100])
    assert f"{hist.to_frame()['sum'].iloc[0]:,.1f}" in html
    plain = render_report(dptree.range_tree(v, lower=0, upper=99, epsilon=1.0, rng=1), bins=4)
    assert "mean weight" not in plain and "sums of weights" not in plain
