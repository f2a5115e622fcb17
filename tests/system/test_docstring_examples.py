"""The examples in the public functions' docstrings run and print what they show (doctest), as
OpenDP's documentation does: an example that drifts from the code fails here."""

from __future__ import annotations

import doctest
import importlib

import pytest

#: the modules of the public entry points whose docstrings carry examples
MODULES = ["dptree.rangetree.api", "dptree.sparsetree.api", "dptree.quantiles.api", "dptree.interior.quantiles",
           "dptree.hierarchy.api"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run_as_shown(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 3, f"{name}: its docstring examples were not found"
    assert result.failed == 0, f"{name}: {result.failed} docstring example(s) differ from their output (above)"
