"""The documentation builds: Sphinx (docs/conf.py) turns the user guide, the API reference from the
docstrings, the design, the release format and the notes into HTML with every warning an error (a
broken link, a page outside the table of contents, a docstring that is not valid reStructuredText).
The guide's examples run as doctests. The build needs the ``docs`` extra (``pip install ".[docs]"``;
scripts/test.sh installs it) and is skipped without it."""

from __future__ import annotations

import doctest
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
HAVE_SPHINX = all(importlib.util.find_spec(m) is not None for m in ("sphinx", "myst_parser"))
needs_sphinx = pytest.mark.skipif(not HAVE_SPHINX, reason='the docs extra is not installed (pip install ".[docs]")')

#: the user guide's pages, one per product or topic, each linked from docs/guide/index.md
GUIDE = ["range-trees", "range-trees-2d", "sparse-range-trees", "hierarchy-counts", "interior-points", "quantiles",
         "budget", "input-data", "files-and-reports", "cli", "continual-counting"]


@pytest.mark.parametrize("page", GUIDE)
def test_guide_examples_run_as_shown(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``>>>`` example of a guide page runs and prints what the page shows (doctest), in a
    fresh directory; each page except the command line's has examples."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    text = (DOCS / "guide" / f"{page}.md").read_text(encoding="utf-8")
    test = doctest.DocTestParser().get_doctest(text, {}, f"docs/guide/{page}.md", str(DOCS / "guide" / f"{page}.md"), 0)
    if page == "cli":
        assert test.examples == []  # its examples are shell commands (the README's, run by test_readme.py)
        return
    assert len(test.examples) >= 5, f"docs/guide/{page}.md: too few runnable examples"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0, f"docs/guide/{page}.md: an example differs (above)"


def build(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """``sphinx-build -W`` of ``source`` into ``out``, in a fresh process (autodoc imports dptree)."""
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-d", str(out / ".doctrees"),
           str(source), str(out)]
    env = {**os.environ, "MPLBACKEND": "Agg"}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


def test_every_guide_page_is_in_the_guide_index() -> None:
    index = (DOCS / "guide" / "index.md").read_text(encoding="utf-8")
    pages = sorted(p.stem for p in (DOCS / "guide").glob("*.md") if p.stem != "index")
    assert pages == sorted(GUIDE)
    assert [p for p in GUIDE if not re.search(rf"^{re.escape(p)}$", index, flags=re.M)] == []


@needs_sphinx
def test_the_docs_build_without_warnings(tmp_path: Path) -> None:
    out = tmp_path / "html"
    proc = build(DOCS, out)
    assert proc.returncode == 0, f"sphinx-build failed:\n{proc.stdout}\n{proc.stderr}"
    for page in ["index", "api/index", "design", "release-format", "notes/index"] + [f"guide/{p}" for p in GUIDE]:
        assert (out / f"{page}.html").is_file(), f"{page}.html was not built"
    # the API reference is the docstrings': the entry point's signature and its own words
    api = (out / "api" / "rangetree.html").read_text(encoding="utf-8")
    assert 'id="dptree.range_tree"' in api and "Release a private b-ary range tree" in api
    ledger = (out / "api" / "privacy.html").read_text(encoding="utf-8")
    assert 'id="dptree.Ledger"' in ledger and 'id="dptree.Ledger.charge"' in ledger


@needs_sphinx
def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """-W has teeth: a page that links to a missing document does not build."""
    src = tmp_path / "src"
    src.mkdir()
    conf = (DOCS / "conf.py").read_text(encoding="utf-8")
    assert "Path(__file__).resolve().parents[1]" in conf
    (src / "conf.py").write_text(conf.replace("Path(__file__).resolve().parents[1]", f"Path({str(ROOT)!r})"),
                                 encoding="utf-8")
    (src / "index.md").write_text("# Broken\n\nSee [the guide](guide/missing.md).\n", encoding="utf-8")
    proc = build(src, tmp_path / "html")
    assert proc.returncode != 0
    assert "missing" in proc.stderr
