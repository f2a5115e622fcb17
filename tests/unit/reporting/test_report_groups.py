"""``dptree report`` on a group-by range tree (``range_tree_groups``): one page with the privacy
statement, every group's CDF in one plot, and per group the release's own total, quantiles and
histogram, at the ``--ci`` level and with the ``--bins``/``--log`` edges of a single tree's report."""

from __future__ import annotations

import base64
import html
import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dptree
from dptree.reporting.plot import MAX_PLOTTED_GROUPS, nice_edges
from dptree.reporting.report import QUANTILES, privacy_in_words, render_report

pytest.importorskip("matplotlib")

GROUPS = ["a", "b", "empty"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A grouped release of column x (groups of 600, 300 and 0 records), saved."""
    gen = np.random.default_rng(7)
    df = pd.DataFrame({"x": np.concatenate([gen.integers(1, 200, 600), gen.integers(300, 1001, 300)]),
                       "g": ["a"] * 600 + ["b"] * 300})
    rel = dptree.range_tree(df, column="x", by="g", groups=GROUPS, lower=1, upper=1000, epsilon=0.5, rng=11)
    path = tmp_path_factory.mktemp("groups") / "g.json"
    rel.save(path, allow_nonprivate=True)
    return path


@pytest.fixture()
def cdf_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, dict[str, Any]]]:
    """(release, options) of every ``plot_cdf`` the report draws (the plot itself is drawn too)."""
    import dptree.reporting.plot as plot

    calls: list[tuple[Any, dict[str, Any]]] = []
    real = plot.plot_cdf

    def record(release: Any, path: Any, **kw: Any) -> None:
        calls.append((release, kw))
        real(release, path, **kw)

    monkeypatch.setattr(plot, "plot_cdf", record)
    return calls


def _report(cli_run: Any, path: Path, *options: str) -> str:
    out = path.parent / "r.html"
    code, _, err = cli_run(["report", str(path), "--out", str(out), "--force", *options])
    assert code == 0, err
    return out.read_text()


def _sections(page: str) -> dict[str, str]:
    """{group: its part of the page}, in the page's order."""
    pieces = re.split(r"<h2>Group ([^<]+)</h2>", page)
    return dict(zip(pieces[1::2], pieces[2::2]))


def _csv(part: str, name: str) -> pd.DataFrame:
    links = dict(re.findall(r'download="([^"]+)" href="data:text/csv;charset=utf-8;base64,([A-Za-z0-9+/=]+)"', part))
    return pd.read_csv(io.BytesIO(base64.b64decode(links[name])))


def _quantile_rows(part: str) -> list[tuple[str, str, str, str]]:
    return re.findall(r"<tr><td>([\d.]+)</td><td>([^<]+)</td><td>\[([^,]+), ([^\]]+)\]</td></tr>", part)


def _total_cell(tree: Any, level: float) -> str:
    lo, hi = tree.total_ci(level)
    return f"<th>Estimated total</th><td>{tree.total():,.1f} ({level:.0%} interval [{lo:,.1f}, {hi:,.1f}])</td>"


def test_each_group_shows_its_own_total_quantiles_and_histogram(saved: Path, cli_run: Any, cdf_calls: Any) -> None:
    rel = dptree.load(saved)
    page = _report(cli_run, saved, "--bins", "8")
    parts = _sections(page)
    assert list(parts) == GROUPS
    assert page.count("data:image/png;base64,") == 1  # one CDF plot for all groups
    ((drawn, options),) = cdf_calls
    assert drawn.KIND == "range_tree_groups" and options.get("groups") is None  # every group, in one plot
    assert (options["level"], options["log"], options["clip_negative"]) == (0.95, False, False)
    assert "<th>Column</th><td>x</td>" in page and "<th>Groups</th><td>a, b, empty</td>" in page
    assert "<title>Private range trees of x by group</title>" in page and "NOT PRIVATE" in page
    totals = [rel[g].total() for g in GROUPS]
    assert totals[0] > totals[1] + 200  # the groups differ, so a group's numbers under another's name fail
    for g, part in parts.items():
        tree = rel[g]
        assert _total_cell(tree, 0.95) in part
        for other in set(GROUPS) - {g}:
            assert _total_cell(rel[other], 0.95) not in part
        rows = _quantile_rows(part)
        assert [float(q) for q, *_ in rows] == list(QUANTILES)
        want = tree.quantile(list(QUANTILES))
        assert [int(v) for _, v, _, _ in rows] == [int(v) for v in want]
        assert all(int(lo) <= int(v) <= int(hi) for _, v, lo, hi in rows)
        quant = _csv(part, f"x-{g}-quantiles.csv")
        assert list(quant.estimate) == [int(v) for v in want]
        hist = _csv(part, f"x-{g}-histogram.csv")
        expected = tree.histogram(nice_edges(tree.domain, 8), level=0.95)
        assert len(hist) == len(expected.counts) < len(nice_edges(tree.domain, 30)) - 1  # --bins 8, not 30
        assert hist.bin_low.iloc[0] == 1 and hist.bin_high.iloc[-1] == 1000
        assert hist.estimate.to_numpy() == pytest.approx(expected.counts)
        assert hist.ci_low.to_numpy() == pytest.approx(expected.ci_low)
        assert hist.estimate.sum() == pytest.approx(tree.total())  # the bins cover the whole domain


def test_the_privacy_statement_is_the_single_trees_with_the_groups_composition(saved: Path, cli_run: Any) -> None:
    rel = dptree.load(saved)
    page = _report(cli_run, saved)
    words = privacy_in_words(rel.privacy)
    assert f'<p class="privacy">{html.escape(words)}</p>' in page
    groups_sentence = f" Groups: {rel.privacy['composition']}."
    assert "parallel over 3 public groups" in groups_sentence and groups_sentence in words
    assert words.replace(groups_sentence, "") == privacy_in_words(rel["a"].privacy)  # one budget, the same words
    assert "e^epsilon = 1.649 (epsilon = 0.5, pure differential privacy with Laplace noise)" in words


def test_ci_changes_every_interval(saved: Path, cli_run: Any, cdf_calls: Any) -> None:
    rel = dptree.load(saved)
    page = _report(cli_run, saved, "--ci", "0.9")
    assert "pointwise 90% confidence band" in page and "95%" not in page
    assert [options["level"] for _, options in cdf_calls] == [0.9]  # the band too
    for g, part in _sections(page).items():
        tree = rel[g]
        assert _total_cell(tree, 0.9) in part
        lo90, hi90 = tree.total_ci(0.9)
        lo95, hi95 = tree.total_ci(0.95)
        assert hi90 - lo90 < hi95 - lo95
        hist = _csv(part, f"x-{g}-histogram.csv")
        assert hist.ci_high.to_numpy() == pytest.approx(tree.histogram(hist.bin_low.tolist() + [1000], 0.9).ci_high)
    # the quantile intervals at 0.9 are the release's own (calibrated once per release object)
    page = render_report(rel, level=0.9)
    for g, part in _sections(page).items():
        mine = rel[g].quantiles(np.asarray(QUANTILES), 0.9)
        rows = _quantile_rows(part)
        assert [(int(lo), int(hi)) for _, _, lo, hi in rows] == [(int(a), int(b)) for a, b in
                                                                 zip(mine.ci_low, mine.ci_high)]
        quant = _csv(part, f"x-{g}-quantiles.csv")
        assert list(quant.ci_high) == [int(b) for b in mine.ci_high]


def test_bins_log_and_clip_negative_as_for_a_single_tree(saved: Path, cli_run: Any, cdf_calls: Any) -> None:
    rel = dptree.load(saved)
    page = _report(cli_run, saved, "--bins", "5", "--log", "--clip-negative", "--title", "<b>by g</b>")
    assert "<h1>&lt;b&gt;by g&lt;/b&gt;</h1>" in page
    ((_, options),) = cdf_calls  # the plot: logarithmic, in the post-processed (clipped) view
    assert (options["level"], options["log"], options["clip_negative"]) == (0.95, True, True)
    single = render_report(rel["empty"], bins=5, log=True, clip_negative=True)
    log_edges, linear_edges = nice_edges(rel["a"].domain, 5, log=True), nice_edges(rel["a"].domain, 5)
    parts = _sections(page)
    for g, part in parts.items():  # the same (logarithmic) bins as a single tree's report
        want = _csv(single, "x-histogram.csv")
        got = _csv(part, f"x-{g}-histogram.csv")
        assert list(got.bin_low) == list(want.bin_low) == list(log_edges[:-1]) != list(linear_edges[:-1])
        negative = int((got.estimate < 0).sum())  # released as they are, and said so
        note = (f"{negative} bin estimate(s) are below zero: noise, not data." if negative else "below zero")
        assert (note in part) == bool(negative)
    assert (_csv(parts["empty"], "x-empty-histogram.csv").estimate.to_numpy()
            == pytest.approx(_csv(single, "x-histogram.csv").estimate.to_numpy()))
    assert int((_csv(parts["empty"], "x-empty-histogram.csv").estimate < 0).sum()) > 0  # pure noise: some below 0


def test_more_groups_than_one_plot_draws_says_so_and_draws_none(tmp_path: Path, cli_run: Any) -> None:
    names = [f"g{i}" for i in range(MAX_PLOTTED_GROUPS + 1)]
    x = np.random.default_rng(3).integers(0, 100, 20 * len(names))
    rel = dptree.range_tree(x, by=np.repeat(names, 20), groups=names, lower=0, upper=99, epsilon=1.0, rng=5)
    rel.save(tmp_path / "many.json", allow_nonprivate=True)
    page = _report(cli_run, tmp_path / "many.json")
    assert f"No plot: one plot draws at most {MAX_PLOTTED_GROUPS} groups" in page
    assert "data:image/png" not in page
    parts = _sections(page)
    assert list(parts) == names
    for g in names:
        assert _total_cell(rel[g], 0.95) in parts[g]
    few = dptree.range_tree(x[:40], by=np.repeat(names[:2], 20), groups=names[:2], lower=0, upper=99, epsilon=1.0,
                            rng=5)
    assert "No plot" not in render_report(few) and render_report(few).count("data:image/png") == 1
