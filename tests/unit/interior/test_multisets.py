"""``multisets.MS`` on arrays against a plain sorted list of records (the reference), for 64-bit
values (uint64) and values past 2^64 (Python ints in an object array)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from dptree.interior.multisets import MS, heavy_chooser, path_and_D


def _records(ms: MS) -> list[int]:
    return [int(v) for v, c in zip(ms.vals.tolist(), ms.cnt.tolist()) for _ in range(c)]


def _multiset(rng: np.random.Generator, h: int, size: int) -> tuple[list[int], list[int]]:
    """Distinct sorted values over [0, 2^h) (clustered, so that nodes share points) with counts."""
    top = (1 << h) - 1
    centres = [int(rng.integers(0, 1 << 62)) * ((1 << h) >> 62) if h > 62 else int(rng.integers(0, 1 << h))
               for _ in range(3)]
    vals = {min(top, max(0, c + int(d))) for c in centres for d in rng.integers(-50, 50, size)}
    if rng.random() < 0.5:
        vals.add(top)  # the domain's last point (2^64 - 1 for h = 64)
    return sorted(vals), [int(c) for c in rng.integers(1, 6, len(vals))]


def _naive_path_and_d(recs: list[int], h: int, t: int, n: int) -> list[tuple[int, int]]:
    """Steps 4-5 of Algorithm 1 level by level over the records (heavier child, ties left)."""
    total, size, level, j, out = n - 3 * t, 0, 0, 0, []
    while size < total:
        w = sum(1 for x in recs if x >> (h - level) == j)
        if level == h or w <= t:
            out.append((level, total - size))
            break
        w0 = sum(1 for x in recs if x >> (h - level - 1) == 2 * j)
        b = heavy_chooser(w0, w - w0)
        add = min(w - w0 if b == 0 else w0, total - size)
        if add > 0:
            out.append((level, add))
            size += add
        level, j = level + 1, 2 * j + b
    merged: dict[int, int] = {}
    for lv, c in out:
        merged[lv] = merged.get(lv, 0) + c
    return sorted(merged.items())


@pytest.mark.parametrize("h", [8, 64, 72])
def test_ms_operations_equal_the_record_list(h: int) -> None:
    rng = np.random.default_rng(h)
    for trial in range(25):
        vals, cnt = _multiset(rng, h, int(rng.integers(1, 40)))
        ms = MS(vals, cnt)
        assert ms.vals.dtype == (np.uint64 if h <= 64 else object)
        recs = sorted(v for v, c in zip(vals, cnt) for _ in range(c))
        n = len(recs)
        assert ms.n == n and ms.max_count() == max(cnt)
        for t in (0, 1, 2, n // 3, n // 2, n):
            tr = ms.trim(t)
            assert _records(tr) == (recs[t:n - t] if 2 * t < n else [])
            assert tr.pre.tolist() == [0, *np.cumsum(tr.cnt).tolist()] and tr.n == len(_records(tr))
        for size in (0, 1, n // 2, n - 1, n, n + 5):
            k = max(n - size, 0)
            capped = ms.cap(size)
            assert _records(capped) == recs[(k + 1) // 2:n - k // 2]
            assert capped.pre.tolist() == [0, *np.cumsum(capped.cnt).tolist()]
        for y in {0, vals[0], vals[-1], vals[len(vals) // 2] + 1, (1 << h) - 1, 1 << h, 1 << 80}:
            le, ge = sum(x <= y for x in recs), sum(x >= y for x in recs)
            assert ms.quality(y) == min(le, ge)
        for level in (0, 1, h // 2, h - 1, h):
            idx, w = ms.level_weights(h, level)
            want = sorted(Counter(x >> (h - level) for x in recs).items())
            assert [(int(a), int(b)) for a, b in zip(idx.tolist(), w.tolist())] == want
        for t in (0, 1, 3):
            if n - 3 * t <= 0:
                continue
            d = path_and_D(ms.trim(t), h, t, n, heavy_chooser)
            got = sorted((int(a), int(b)) for a, b in zip(d.vals.tolist(), d.cnt.tolist()))
            assert got == _naive_path_and_d(recs[t:n - t], h, t, n), (trial, t)


def test_empty_and_list_inputs() -> None:
    e = MS([], [])
    assert e.n == 0 and e.max_count() == 0 and e.quality(5) == 0
    idx, w = e.level_weights(10, 3)
    assert len(idx) == 0 and len(w) == 0
    big = MS([3, 1 << 70], [2, 1])  # past 2^64: Python ints in an object array, exact
    assert big.vals.dtype == object and int(big.trim(0).vals[-1]) == 1 << 70
    assert big.quality((1 << 70) - 1) == 1 and big.quality(1 << 70) == 1 and big.quality(4) == 1


@pytest.mark.parametrize("h", [20, 64])
def test_level_weights_at_every_level_equal_the_grouped_counts(h: int) -> None:
    """Shallow levels (values spanning fewer nodes than an eighth of them) take node bounds by binary
    search, deep ones group the values: both equal the counts grouped by node, on a trimmed
    multiset too (its end counts cut)."""
    rng = np.random.default_rng(h)
    vals = np.unique(rng.integers(0, 1 << (h - 1), 5000, dtype=np.uint64) + np.uint64(1 << (h - 2)))
    cnt = rng.integers(1, 4, vals.size)
    for ms in (MS(vals, cnt), MS(vals, cnt).trim(7)):
        for level in range(h + 1):
            shift = np.uint64(h - level)
            nodes, first = np.unique(ms.vals >> shift, return_index=True)
            want = np.add.reduceat(ms.cnt, first)
            idx, w = ms.level_weights(h, level)
            np.testing.assert_array_equal(idx, nodes)
            np.testing.assert_array_equal(w, want)
            assert idx.dtype == np.uint64 and w.dtype == np.int64
