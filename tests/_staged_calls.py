"""Counting the staged exponential mechanisms' engine queries (dptree.interior.staged,
dptree.quantiles.staged) in tests, with the path they replace made to fail."""

from __future__ import annotations

from typing import Any

import pytest

from dptree.data.engines.base import Value

QUERIES = ("buckets", "window", "windows", "ranks", "upto")


def count_staged_queries(monkeypatch: pytest.MonkeyPatch, counts_cls: type, engine_cls: type) -> dict[str, int]:
    """Wrap the :class:`~dptree.data.engines.base.OrderedCounts` queries of ``counts_cls`` to count
    their calls, and make ``engine_cls.counts`` of a :class:`~dptree.data.engines.base.Value` key
    (reading every distinct value) raise: a test
    using this shows the staged path ran and how many scans it made."""
    seen = dict.fromkeys(QUERIES, 0)
    for name in QUERIES:
        orig = getattr(counts_cls, name)

        def wrapped(self: Any, *a: Any, _orig: Any = orig, _name: str = name) -> Any:
            seen[_name] += 1
            return _orig(self, *a)

        monkeypatch.setattr(counts_cls, name, wrapped)

    original = engine_cls.counts

    def no_value_counts(self: Any, data: Any, keys: Any, **k: Any) -> Any:
        if any(isinstance(key, Value) for key in keys):
            raise AssertionError("the staged path must not read every distinct value (value counts)")
        return original(self, data, keys, **k)

    monkeypatch.setattr(engine_cls, "counts", no_value_counts)
    return seen
