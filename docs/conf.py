"""Sphinx configuration of dptree's documentation: the user guide (docs/guide/), the API reference
built from the docstrings (docs/api/, autodoc), the design and the release format, and the notes
(docs/notes/: proofs and benchmark records). Build: ``sphinx-build -W docs docs/_build/html``
(``pip install ".[docs]"`` first; tests/system/test_docs.py builds it the same way)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # a checkout documents its own tree, installed or not

project = "dptree"
author = "dptree developers"
copyright = "dptree developers"  # noqa: A001 - Sphinx's name
release = version = "0.1.0"

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# the docstrings: RST with numpydoc or Google sections where a function has them
napoleon_numpy_docstring = True
napoleon_google_docstring = True
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
default_role = "code"

# Markdown pages: GitHub-style tables and headings that can be linked to
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 4
# the notes are measurement records written as plain Markdown: a skipped heading level or a
# link to a file outside docs/ (benchmarks/, src/) is not an error there
suppress_warnings = ["myst.header"]

html_theme = "alabaster"
html_title = "dptree"
html_static_path: list[str] = []
