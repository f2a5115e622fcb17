"""The rank blocks of an ordered domain as numpy arrays: the vectorised data side of every
exponential mechanism over [lower, upper] in :mod:`dptree.interior.selection`.

On a domain inside [0, 2^64) the data (sorted distinct offsets, uint64, with int64
multiplicities) is split into the blocks of :func:`~dptree.interior.selection.rank_blocks` --
each distinct value alone, the gaps between them -- with O(distinct values) numpy work and no
Python object per block or per record. Scores are computed on these arrays and sampled by the
vectorised exact sampler (:func:`dptree.noise.sample_exponential_index` on arrays). Other inputs
(Python ints beyond 64 bits) keep the list path of :mod:`~dptree.interior.selection`.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, NamedTuple

import numpy as np

from dptree.errors import InvalidParameterError

__all__ = ["Blocks", "as_lists", "block_arrays", "group_arrays", "offsets_array"]


def as_lists(x: Any) -> Any:
    """Python ints for the list path (numpy scalars would wrap around in its arithmetic)."""
    return x.tolist() if isinstance(x, np.ndarray) else x



def offsets_array(values: Any) -> np.ndarray | None:
    """``values`` as a uint64 array when it is an integer array of non-negative values, else None."""
    if not isinstance(values, np.ndarray) or values.dtype.kind not in "iu" or values.ndim != 1:
        return None
    if values.dtype.kind == "i" and values.size and values.min() < 0:
        return None
    return values.astype(np.uint64, copy=False)


def group_arrays(arr: np.ndarray, counts: Any) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_group` of a uint64 array: sorted distinct values (uint64), multiplicities (int64)."""
    cnt = np.ones(arr.size, np.int64) if counts is None else np.asarray(counts)
    if cnt.dtype.kind not in "iu" or cnt.shape != arr.shape:
        try:
            cnt = np.array([operator.index(c) for c in counts], dtype=np.int64)
        except TypeError:
            raise InvalidParameterError("counts must be integers") from None
        if cnt.shape != arr.shape:
            raise InvalidParameterError("counts must give one multiplicity per value")
    if cnt.size and cnt.min() < 0:
        raise InvalidParameterError("counts must be non-negative")
    if arr.size <= 1 or (arr[1:] > arr[:-1]).all():
        if cnt.size == 0 or cnt.min() > 0:  # already sorted, distinct and positive (e.g. from prepare)
            return arr, cnt.astype(np.int64, copy=False)
    else:
        order = np.argsort(arr, kind="stable")
        arr, cnt = arr[order], cnt[order]
    keep = cnt > 0
    arr, cnt = arr[keep], cnt[keep].astype(np.int64)
    if arr.size == 0:
        return arr, cnt
    starts = np.flatnonzero(np.concatenate(([True], arr[1:] != arr[:-1])))
    return arr[starts], np.add.reduceat(cnt, starts)


#: the vectorised block path runs on domains [lower, upper] inside [0, 2^64) (offsets as uint64)
_U64 = 1 << 64


class Blocks(NamedTuple):
    """The blocks of :func:`~dptree.interior.selection.rank_blocks` as arrays, in the layout
    [each distinct value, the gap below each value, the gap above the maximum] (2k + 1 blocks,
    empty gaps included with length 0: the sampler never draws them)."""

    values: np.ndarray  # k sorted distinct values (uint64)
    below: np.ndarray  # #{x < value} (int64)
    upto: np.ndarray  # #{x <= value} (int64)
    lengths: np.ndarray  # 2k + 1 block lengths (uint64)
    lower: int

    def per_block(self, f: Callable[[Any, Any, np.ndarray], Any]) -> np.ndarray:
        """``f(below, upto, out)`` of every block written into one int64 array (the layout
        above): the ranks of a value's block are (below, upto), of the gap below it (below,
        below), of the top gap (n, n)."""
        k = self.values.size
        out = np.empty(2 * k + 1, np.int64)
        n = self.upto[-1:]
        f(self.below, self.upto, out[:k])
        f(self.below, self.below, out[k:2 * k])
        f(n, n, out[2 * k:])
        return out

    def start(self, i: int) -> int:
        """The first point of block ``i``."""
        k = self.values.size
        if i < k:
            return int(self.values[i])
        j = i - k
        return self.lower if j == 0 else int(self.values[j - 1]) + 1

    def starts(self) -> np.ndarray:
        """Every block's first point (object array of Python ints; for checks, not the hot path)."""
        return np.array([self.start(i) for i in range(self.lengths.size)], dtype=object)


def block_arrays(vals: Any, cnt: Any, lower: int, upper: int) -> Blocks | None:
    """The :class:`Blocks` of sorted distinct ``vals`` with multiplicities ``cnt`` in [lower,
    upper], or None when they do not apply (Python ints, a domain outside [0, 2^64), no data
    value, counts whose total is 2^62 or more): O(distinct values) numpy work, no Python object
    per block."""
    v = offsets_array(vals)
    if v is None or v.size == 0 or not (0 <= lower and upper < _U64) or not isinstance(cnt, np.ndarray):
        return None
    c = cnt.astype(np.int64, copy=False)
    if float(c.sum(dtype=np.float64)) >= 2.0**62:
        return None
    upto = np.cumsum(c)
    k, last = v.size, int(v[-1])
    lengths = np.empty(2 * k + 1, np.uint64)
    lengths[:k] = 1
    gaps = lengths[k:2 * k]
    np.subtract(v[1:], v[:-1], out=gaps[1:])
    gaps[1:] -= np.uint64(1)
    gaps[0] = int(v[0]) - lower
    lengths[-1] = upper - last
    return Blocks(v, upto - c, upto, lengths, lower)
