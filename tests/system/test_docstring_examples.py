"""The examples in the public entry points' docstrings run and print what they show (doctest), as
OpenDP's documentation does: an example that drifts from the code fails here. Each example seeds
its noise (``rng=7``, a release marked not private) or prints only what does not depend on it, so
the outputs are exact. The entry points are found by their public names, wherever their code lives.
"""

from __future__ import annotations

import doctest

import pytest

import dptree

#: the public entry points whose docstrings must carry runnable examples
ENTRY_POINTS = ["range_tree", "plan_range_tree", "range_tree_2d", "sparse_range_tree", "hierarchy_counts", "interior_point",
                "median", "quantile", "quantiles", "learn_threshold", "Ledger", "load"]

FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def examples(name: str) -> list[doctest.DocTest]:
    """The doctests of ``dptree.<name>``: its own docstring (a class's methods included)."""
    obj = getattr(dptree, name)
    finder = doctest.DocTestFinder(recurse=True, exclude_empty=True)
    return [t for t in finder.find(obj, f"dptree.{name}", globs={}) if t.examples]


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_docstring_examples_run_as_shown(name: str) -> None:
    tests = examples(name)
    assert sum(len(t.examples) for t in tests) >= 3, f"dptree.{name}: its docstring has no runnable example"
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"dptree.{name}: {result.failed} docstring example(s) differ from their output (above)"


def test_a_wrong_example_fails() -> None:
    """The runner compares outputs: an example whose shown output is wrong is counted as failed."""
    parser = doctest.DocTestParser()
    test = parser.get_doctest(">>> 1 + 1\n3\n", {}, "wrong", None, 0)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(test, out=lambda _: None)
    assert runner.summarize(verbose=False).failed == 1
