"""Only dptree.noise may draw randomness (DESIGN section 9): scan the hierarchy modules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[3] / "src" / "dptree"
FORBIDDEN = re.compile(r"\bimport random\b|\bfrom random\b|np\.random|numpy\.random|\bsecrets\b|os\.urandom")


@pytest.mark.parametrize(
    "name",
    sorted(str(p.relative_to(SRC)) for p in (SRC / "hierarchy").glob("*.py"))
    + ["estimation/postprocess.py", "cli/hierarchy.py"],
)
def test_no_randomness_outside_noise(name: str) -> None:
    text = (SRC / name).read_text()
    assert not FORBIDDEN.search(text), name
