"""Exact counts of the records in key ranges, the only thing the sparse tree's mechanisms read
from the data (:mod:`dptree.sparsetree.mechanism`).

Two ways to answer the same questions, with the same exact answers:

* :class:`SortedKeys`: the keys sorted once, two binary searches per range
  (:func:`node_counts`, :func:`range_counts`). Sorting is O(n log n) and, on machines without a
  fast vectorised sort, most of a release (0.63 s for 10^7 keys against 0.05 s for a dense
  D = 2^20 release, docs/notes/sparse_tree.md).
* :class:`BinnedKeys`: no sort. One histogram of the keys over at most :data:`MAX_BINS` equal
  bins of 2^s keys that cover the keys' range (the smallest s that fits; counted in parallel
  chunks), with its prefix sums:
  a range whose ends lie on bin edges is two lookups. Only where an end falls inside a bin (a
  node finer than 2^s keys: the tree split that deep) are the keys of the bins concerned
  gathered and sorted, once, for binary searches inside them. On spread data the tree rarely
  splits below 2^s (64-bit ids and log-normal latencies at 10^7: never), so the release costs
  a few passes over the keys instead of a sort.

Both read the keys only to count; which one runs, and the bin width, depend on the keys' range,
which only sets how the exact counts are computed (the counts, and so the release, are the same).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Literal, Protocol, TypeVar, Union

import numpy as np

from dptree.data.sorting import sort_keys

__all__ = ["KeyCounts", "SortedKeys", "BinnedKeys", "MAX_BINS", "as_counts", "node_counts", "range_counts"]

T = TypeVar("T")

#: the histogram's bins at most (its counts and prefix sums: 2 x 8 bytes each)
MAX_BINS = 1 << 20


def node_counts(keys: np.ndarray, index: np.ndarray, shift: int) -> np.ndarray:
    """Exact number of ``keys`` (sorted uint64) in each node ``index`` (sorted) of 2^shift keys."""
    n = keys.size
    if index.size == 0:
        return np.zeros(0, dtype=np.int64)
    sh = np.uint64(shift)
    left = np.searchsorted(keys, index << sh, side="left")
    right = np.empty_like(left)
    nxt = index[:-1] + np.uint64(1)
    consecutive = index[1:] == nxt
    right[:-1] = left[1:]
    ends = np.flatnonzero(~consecutive).tolist() + [index.size - 1]
    last = index[ends]
    wraps = last == np.uint64((1 << (64 - shift)) - 1)  # the last node of 2^64 keys: its end would wrap
    stop = np.where(wraps, np.uint64(0), last + np.uint64(1)) << sh
    right[ends] = np.where(wraps, n, np.searchsorted(keys, stop, side="left"))
    return (right - left).astype(np.int64)


def range_counts(keys: np.ndarray, start: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Exact number of ``keys`` (sorted uint64) in each range [start, last]."""
    return (np.searchsorted(keys, last, side="right") - np.searchsorted(keys, start, side="left")).astype(np.int64)


class KeyCounts(Protocol):
    """The records' keys as the mechanisms read them: exact counts of nodes and ranges."""

    size: int

    def nodes(self, index: np.ndarray, shift: int) -> np.ndarray:
        """The number of keys in each node ``index`` (sorted) of 2^shift keys."""

    def ranges(self, start: np.ndarray, last: np.ndarray) -> np.ndarray:
        """The number of keys in each range [start, last] (uint64)."""


class SortedKeys:
    """Counts by binary search in the sorted keys."""

    def __init__(self, keys: np.ndarray) -> None:
        self.keys, self.size = keys, int(keys.size)

    def nodes(self, index: np.ndarray, shift: int) -> np.ndarray:
        return node_counts(self.keys, index, shift)

    def ranges(self, start: np.ndarray, last: np.ndarray) -> np.ndarray:
        return range_counts(self.keys, start, last)


class BinnedKeys:
    """Counts from a histogram of the (unsorted) keys over bins of 2^shift keys, refined by
    binary search inside the bins where a range's end falls between two bin edges."""

    def __init__(self, keys: np.ndarray, max_bins: int = MAX_BINS) -> None:
        self.keys, self.size = keys, int(keys.size)
        lo, hi = (int(keys.min()), int(keys.max())) if keys.size else (0, 0)
        s = 0
        while (hi >> s) - (lo >> s) + 1 > max_bins:
            s += 1
        self.shift, self.base, self.top = s, lo >> s, hi >> s
        nb = self.top - self.base + 1

        def histogram(chunk: np.ndarray) -> np.ndarray:
            return np.bincount(self._bins(chunk).view(np.int64), minlength=nb)

        # one slice per thread: a histogram per chunk would cost an array of nb counts each
        hist = sum(_over_chunks(keys, histogram, chunk=-(-keys.size // _threads(keys.size))),
                   np.zeros(nb, dtype=np.int64))
        self.cum = np.concatenate([[0], np.cumsum(hist)])
        self._flagged = np.zeros(self.top - self.base + 1, dtype=bool)
        self._fine = np.zeros(0, dtype=np.uint64)  # the sorted keys of the flagged bins

    def _bins(self, chunk: np.ndarray) -> np.ndarray:
        """The bin of every key of ``chunk`` from the first (a fresh array, shifted in place)."""
        bins = chunk >> np.uint64(self.shift)
        bins -= np.uint64(self.base)
        return bins

    def nodes(self, index: np.ndarray, shift: int) -> np.ndarray:
        if index.size == 0:
            return np.zeros(0, dtype=np.int64)
        if shift >= 64:  # the root of 2^64 keys
            return np.full(index.size, self.size, dtype=np.int64)
        start = index << np.uint64(shift)
        return self.ranges(start, start + np.uint64((1 << shift) - 1))

    def ranges(self, start: np.ndarray, last: np.ndarray) -> np.ndarray:
        return (self._upto(last) - self._below(start)).astype(np.int64)

    def _bin(self, x: np.ndarray) -> np.ndarray:
        """The bin of each key x counted from the first, -1 below it and the number of bins above
        the last."""
        b = x >> np.uint64(self.shift)
        base, top = np.uint64(self.base), np.uint64(self.top)
        rel = np.where((b >= base) & (b <= top), b - base, np.uint64(0)).astype(np.int64)
        return np.where(b < base, -1, np.where(b > top, self.top - self.base + 1, rel))

    def _below(self, x: np.ndarray) -> np.ndarray:
        """The number of keys < x."""
        b = self._bin(x)
        out = self.cum[np.maximum(b, 0)]
        inside = (x & np.uint64((1 << self.shift) - 1)) != 0
        return self._refine(out, x, b, inside & (b >= 0) & (b <= self.top - self.base), side="left")

    def _upto(self, x: np.ndarray) -> np.ndarray:
        """The number of keys <= x."""
        b = self._bin(x)
        out = self.cum[np.clip(b + 1, 0, self.cum.size - 1)]
        mask = np.uint64((1 << self.shift) - 1)
        inside = (x & mask) != mask
        return self._refine(out, x, b, inside & (b >= 0) & (b <= self.top - self.base), side="right", upto=True)

    def _refine(self, out: np.ndarray, x: np.ndarray, b: np.ndarray, inside: np.ndarray, *,
                side: Literal["left", "right"], upto: bool = False) -> np.ndarray:
        """Where x falls strictly inside its bin: the bin's keys on the wrong side of x corrected
        by binary search in the sorted keys of the flagged bins."""
        if not inside.any():
            return out
        bins = b[inside]
        if not self._flagged[bins].all():
            self._flagged[bins] = True
            parts = _over_chunks(self.keys, lambda chunk: chunk[self._flagged[self._bins(chunk).view(np.int64)]])
            fine = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
            sort_keys(fine)
            self._fine = fine
        first = (bins + self.base).astype(np.uint64) << np.uint64(self.shift)
        within = np.searchsorted(self._fine, x[inside], side=side) - np.searchsorted(self._fine, first, side="left")
        out = out.copy()
        if upto:  # out held every key of the bin: keep those <= x
            out[inside] = self.cum[bins] + within
        else:  # out held the keys before the bin: add those of the bin < x
            out[inside] = out[inside] + within
        return out


#: keys per chunk of :func:`_over_chunks` (its temporaries stay in cache and are reused)
CHUNK = 1 << 18


def _threads(n: int) -> int:
    """Threads for a pass over n keys: one per CPU, at most 8, and one per 2^20 keys."""
    return max(min(os.cpu_count() or 1, 8, n >> 20), 1)


def _over_chunks(keys: np.ndarray, fn: Callable[[np.ndarray], T], chunk: int = CHUNK) -> list[T]:
    """``fn`` of every chunk of ``keys`` in order, the chunks shared among :func:`_threads`
    threads (numpy releases the GIL in the work of ``fn``), each thread taking a run of chunks."""
    starts = list(range(0, keys.size, max(chunk, 1)))
    threads = min(_threads(keys.size), len(starts))
    if threads <= 1:
        return [fn(keys[i:i + chunk]) for i in starts]
    runs = np.array_split(np.asarray(starts), threads)
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="dptree-count") as pool:
        done = pool.map(lambda run: [fn(keys[i:i + chunk]) for i in run.tolist()], runs)
        return [out for run in done for out in run]


Counts = Union[np.ndarray, KeyCounts]


def as_counts(keys: Counts) -> KeyCounts:
    """Sorted uint64 keys (the mechanisms' historical input) as :class:`SortedKeys`; a
    :class:`KeyCounts` as it is."""
    return SortedKeys(keys) if isinstance(keys, np.ndarray) else keys
