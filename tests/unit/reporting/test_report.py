"""HTML reports: content, escaping, errors, and rendering in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import dptree
from dptree.errors import InvalidParameterError
from dptree.reporting.report import privacy_in_words, render_report, write_report


def _release(**kw: object) -> dptree.RangeTree:
    gen = np.random.default_rng(0)
    args = dict(lower=0.0, upper=100.0, width=0.5, epsilon=1.0, rng=1)
    args.update(kw)
    return dptree.range_tree(gen.lognormal(3, 0.5, 5000), **args)  # type: ignore[arg-type]


def test_report_content_and_escaping() -> None:
    rel = _release()
    text = render_report(rel, title="<script>alert(1)</script>", bins=20)
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert text.count("data:image/png;base64,") == 2
    rows = re.findall(r"<tr><td>([\d.]+)</td><td>([\d.]+)</td><td>\[([\d.]+), ([\d.]+)\]</td></tr>", text)
    assert [r[0] for r in rows] == ["0.01", "0.05", "0.1", "0.25", "0.5", "0.75", "0.9", "0.95", "0.99"]
    for _, est, lo, hi in rows:  # each estimate lies inside its interval, and intervals are ordered
        assert float(lo) <= float(est) <= float(hi)
    assert "NOT PRIVATE" in text
    assert "200 buckets of width 0.5" in text


def test_privacy_in_words() -> None:
    lap = _release().privacy
    assert "e^epsilon = 2.718" in privacy_in_words(lap)
    assert "Adding or removing one person's record " in privacy_in_words(lap)
    gauss = _release(noise="gaussian", epsilon=1.0, delta=1e-6).privacy  # exact calibration
    words = privacy_in_words(gauss)
    assert "(epsilon = 1, delta = 1e-06)" in words and "Gaussian noise" in words and "pure" not in words
    zc = _release(noise="gaussian", epsilon=None, rho=0.5).privacy
    assert "rho = 0.5" in privacy_in_words(zc)
    users = _release(max_contributions=3).privacy
    assert "at most 3 per person" in privacy_in_words(users)
    replace = _release(neighbors="replace").privacy
    assert privacy_in_words(replace).split("NOT PRIVATE")[-1].count("Changing one person's record") == 1
    private = dict(lap, private=True)
    assert "NOT PRIVATE" not in privacy_in_words(private)


def test_report_on_integer_and_date_domains(tmp_path: Path) -> None:
    ints = dptree.range_tree(np.arange(1000) % 97, lower=0, upper=99, epsilon=1.0, rng=2)
    write_report(ints, tmp_path / "i.html")
    dates = dptree.range_tree(np.array(["2024-01-05", "2024-02-01"], dtype="datetime64[ns]"),
                              lower="2024-01-01", upper="2024-03-01", epsilon=1.0, rng=2)
    write_report(dates, tmp_path / "d.html")
    assert "2024-03-01" in (tmp_path / "d.html").read_text()


def test_report_errors(tmp_path: Path) -> None:
    rel = _release()
    for kw in (dict(level=1.0), dict(level=0.2), dict(level="0.9"), dict(bins=0), dict(bins=2.5)):
        with pytest.raises(InvalidParameterError):
            render_report(rel, **kw)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="range-tree, hierarchy or quantiles"):
        render_report(object())  # type: ignore[arg-type]
    with pytest.raises(dptree.DPTreeError, match="cannot write"):
        write_report(rel, tmp_path / "no" / "dir" / "r.html")


def test_quantiles_reports_show_every_estimate_and_interval(tmp_path: Path) -> None:
    x = np.random.default_rng(1).integers(0, 1000, 2000)
    rel = dptree.quantiles(x, [0.1, 0.5, 0.9], lower=0, upper=1023, epsilon=0.7, method="tree", rng=3)
    page = render_report(rel)
    for q, v, lo, hi in zip(rel.q, rel.values, rel.ci_low, rel.ci_high):
        assert re.search(rf">{q:g}</td><td class=\"num\">{v}</td><td class=\"num\">\[{lo}, {hi}\]<", page)
    assert "epsilon = 0.7" in page and "NOT PRIVATE" in page and "calibrated intervals" in page
    users = np.arange(2000) // 2
    per_person = dptree.quantiles(x, [0.5], lower=0, upper=1023, epsilon=1.0, method="approx", user_id=users,
                                  max_contributions=2, rng=4)
    assert "at most 2 per person" in render_report(per_person) and "rank radius" in render_report(per_person)
    grouped = dptree.quantiles(x, [0.5], lower=0, upper=1023, epsilon=1.0, by=np.where(x < 500, "lo", "hi"),
                               groups=["lo", "hi", "empty"], method="approx", rng=5)
    page = render_report(grouped)
    assert [m for m in re.findall(r"<h3>Group (\w+)</h3>", page)] == ["lo", "hi", "empty"]
    assert "parallel over 3 public groups" in page
    for g in ("lo", "hi", "empty"):
        assert f'<td class="num">{grouped[g].values[0]}</td>' in page
    write_report(grouped, tmp_path / "g.html")
    assert (tmp_path / "g.html").read_text() == page


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _screenshot(browser: str, html: Path, png: Path, profile: Path) -> np.ndarray:
    import matplotlib.image as mpimg

    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={profile}",
         "--window-size=1000,2600", f"--screenshot={png}", html.resolve().as_uri()],
        check=True, capture_output=True, timeout=120,
    )
    return mpimg.imread(png)[..., :3]


def _bar_pixels(img: np.ndarray) -> int:
    """Pixels of the histogram bars' colour (matplotlib tab:blue at alpha 0.8 on white)."""
    target = np.array([0.8 * 31 + 51, 0.8 * 119 + 51, 0.8 * 180 + 51]) / 255.0
    return int((np.abs(img - target).max(axis=-1) < 8 / 255).sum())


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (scripts/test.sh installs it with apt-get)")
def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    browser = _chromium()
    assert browser is not None
    html = tmp_path / "report.html"
    write_report(_release(), html)
    img = _screenshot(browser, html, tmp_path / "shot.png", tmp_path / "profile")
    non_white = (img.min(axis=-1) < 0.95).mean()
    assert img.shape[0] >= 2000 and non_white > 0.03  # not blank
    assert _bar_pixels(img) > 2000  # the embedded histogram PNG was decoded and drawn
    # the check has teeth: the same page with its images broken shows no bars
    broken = tmp_path / "broken.html"
    broken.write_text(re.sub(r"base64,[A-Za-z0-9+/=]+", "base64,AAAA", html.read_text()))
    img2 = _screenshot(browser, broken, tmp_path / "shot2.png", tmp_path / "profile")
    assert _bar_pixels(img2) < 100
