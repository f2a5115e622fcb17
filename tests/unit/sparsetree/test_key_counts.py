"""The sparse tree's two ways of counting records in key ranges give the same exact counts, and
the same releases: a histogram of unsorted keys refined inside its bins (``BinnedKeys``, what
``sparse_range_tree`` runs) against binary search in the sorted keys (``SortedKeys``)."""

from __future__ import annotations

import numpy as np
import pytest

import dptree
from dptree.sparsetree.counting import BinnedKeys, SortedKeys
from dptree.data.domain import key_domain
from dptree.sparsetree.plan import plan_sparse_tree


def _keys(kind: int, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == 0:  # spread over 2^64
        return rng.integers(0, 2**64, n, dtype=np.uint64)
    if kind == 1:  # a few distinct values: every bin edge falls between ties
        return rng.integers(0, 50, n).astype(np.uint64)
    if kind == 2:  # spread, off every power-of-two edge
        return (rng.integers(0, 2**20, n).astype(np.uint64) << np.uint64(30)) + np.uint64(12345)
    return np.concatenate([rng.integers(0, 100, n).astype(np.uint64),  # a core and far outliers
                           rng.integers(2**63, 2**64, 5, dtype=np.uint64)])


@pytest.mark.parametrize("max_bins", [2, 16, 1024, 1 << 21])
def test_binned_counts_equal_sorted_counts(max_bins: int) -> None:
    rng = np.random.default_rng(max_bins)
    for trial in range(40):
        keys = _keys(trial % 4, int(rng.integers(0, 2000)), rng)
        binned, exact = BinnedKeys(keys.copy(), max_bins=max_bins), SortedKeys(np.sort(keys))
        a, b = rng.integers(0, 2**64, 300, dtype=np.uint64), rng.integers(0, 2**64, 300, dtype=np.uint64)
        if keys.size:  # ends at, just below and just above the keys themselves
            pick = rng.choice(keys, 300)
            a[:150], b[150:] = pick[:150], pick[150:]
            a[::7], b[::5] = pick[::7] - np.uint64(1), pick[::5] + np.uint64(1)
        start, last = np.minimum(a, b), np.maximum(a, b)
        assert np.array_equal(binned.ranges(start, last), exact.ranges(start, last))
        for shift in (0, 3, 17, 40, 60, 63, 64):
            if shift == 64:
                idx = np.zeros(1, dtype=np.uint64)
            else:
                idx = rng.integers(0, 2 ** (64 - shift), 20, dtype=np.uint64)
                idx = np.unique(np.concatenate([idx, keys[:10] >> np.uint64(shift)]))
            assert np.array_equal(binned.nodes(idx, shift), exact.nodes(idx, shift))


@pytest.mark.parametrize("method", ["privtree", "levels"])
def test_the_release_is_the_same_from_a_histogram_and_from_sorted_keys(method: str) -> None:
    rng = np.random.default_rng(7)
    data = {"ids": rng.integers(0, 2**62, 50_000),
            "log-normal": rng.lognormal(3.0, 2.0, 50_000),
            "pareto": ((rng.pareto(1.1, 50_000) + 1.0) * 512).astype(np.int64),  # splits below the bins
            "ties": rng.integers(0, 5, 20_000)}
    for name, x in data.items():
        dom = key_domain(None, None, x.dtype.kind)
        plan = plan_sparse_tree(dom, epsilon=1.0, method=method)
        keys = dom.read_positions(x)
        binned = BinnedKeys(keys.copy(), max_bins=1 << 12)  # small bins: the refinement runs too
        a, b = plan.measure(binned, 11), plan.measure(SortedKeys(np.sort(keys)), 11)
        assert all(np.array_equal(u, v) for u, v in zip(a.shape, b.shape)), name
        assert len(a.nodes) == len(b.nodes) and np.array_equal(a.heights, b.heights), name
        for u, v in zip(a.nodes, b.nodes):
            assert np.array_equal(u.start, v.start) and np.array_equal(u.noisy, v.noisy), name
        if name == "pareto":
            assert binned._fine.size > 0  # some counts needed keys inside a bin
    r = dptree.sparse_range_tree(data["ids"], epsilon=1.0, rng=3)  # the library's path: no sort
    assert r.total() == pytest.approx(50_000, abs=2_000)


def test_binned_counts_in_threaded_chunks_equal_sorted_counts() -> None:
    """Past 2^20 keys the histogram and the refinement's scan run in chunks over threads."""
    rng = np.random.default_rng(5)
    keys = np.concatenate([rng.integers(0, 2**40, 3 << 20, dtype=np.uint64), np.full(1000, 2**39, dtype=np.uint64)])
    binned, exact = BinnedKeys(keys.copy(), max_bins=1 << 10), SortedKeys(np.sort(keys))
    start = np.sort(rng.integers(0, 2**40, 2000, dtype=np.uint64))
    last = start + rng.integers(0, 2**30, 2000, dtype=np.uint64)  # mostly inside one bin of 2^30 keys
    assert np.array_equal(binned.ranges(start, last), exact.ranges(start, last))
    assert binned._fine.size > 0
    idx = np.unique(keys[:5000] >> np.uint64(12))
    assert np.array_equal(binned.nodes(idx, 12), exact.nodes(idx, 12))


@pytest.mark.parametrize("x", [np.array([5]), np.array([-2**63, 2**63 - 1, -2**63]), np.full(1000, 7),
                               np.array([], dtype=np.int64), np.array([0.0, -0.0, 1e-300, -1e300]),
                               np.array([0, 2**64 - 1, 2**63], dtype=np.uint64)],
                         ids=["one", "int64 ends", "one value", "empty", "zeros and extremes", "uint64 ends"])
def test_edge_cases_release_the_same_from_both_counters(x: np.ndarray) -> None:
    dom = key_domain(None, None, x.dtype.kind)
    keys = dom.read_positions(x)
    for method in ("privtree", "levels"):
        plan = plan_sparse_tree(dom, epsilon=1.0, method=method)
        a, b = plan.measure(BinnedKeys(keys.copy()), 3), plan.measure(SortedKeys(np.sort(keys)), 3)
        assert all(np.array_equal(u, v) for u, v in zip(a.shape, b.shape))
        assert all(np.array_equal(u.start, v.start) and np.array_equal(u.noisy, v.noisy) for u, v in zip(a.nodes, b.nodes))
