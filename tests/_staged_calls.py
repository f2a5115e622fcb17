"""Counting the staged exponential mechanisms' engine queries (dptree.interior.staged,
dptree.quantiles.staged) in tests, with the path they replace made to fail."""

from __future__ import annotations

from typing import Any

import pytest

QUERIES = ("buckets", "window", "windows", "ranks")


def count_staged_queries(monkeypatch: pytest.MonkeyPatch, counts_cls: type, engine_cls: type) -> dict[str, int]:
    """Wrap the :class:`~dptree.data.engines.base.OrderedCounts` queries of ``counts_cls`` to count
    their calls, and make ``engine_cls.value_counts`` (reading every distinct value) raise: a test
    using this shows the staged path ran and how many scans it made."""
    seen = dict.fromkeys(QUERIES, 0)
    for name in QUERIES:
        orig = getattr(counts_cls, name)

        def wrapped(self: Any, *a: Any, _orig: Any = orig, _name: str = name) -> Any:
            seen[_name] += 1
            return _orig(self, *a)

        monkeypatch.setattr(counts_cls, name, wrapped)

    def no_value_counts(*a: Any, **k: Any) -> Any:
        raise AssertionError("the staged path must not read every distinct value (value_counts)")

    monkeypatch.setattr(engine_cls, "value_counts", no_value_counts)
    return seen
