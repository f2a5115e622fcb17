"""Only dptree.noise may draw randomness (DESIGN section 9): scan the hierarchy modules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "dptree"
FORBIDDEN = re.compile(r"\bimport random\b|\bfrom random\b|np\.random|numpy\.random|\bsecrets\b|os\.urandom")


@pytest.mark.parametrize(
    "name",
    ["hierarchy.py", "_hstructure.py", "_multiplicative.py", "_postprocess.py", "metrics.py", "_cli_hierarchy.py"],
)
def test_no_randomness_outside_noise(name: str) -> None:
    text = (SRC / name).read_text()
    assert not FORBIDDEN.search(text), name
