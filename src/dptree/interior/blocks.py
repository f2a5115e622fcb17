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
from typing import Any

import numpy as np

from dptree.errors import InvalidParameterError

__all__ = ["as_lists", "block_arrays", "group_arrays", "offsets_array"]


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


def block_arrays(vals: Any, cnt: Any, lower: int, upper: int) -> tuple[np.ndarray, ...] | None:
    """The blocks of :func:`rank_blocks` as arrays (start uint64, length uint64, below int64, upto
    int64) -- the distinct values first, then the non-empty gaps, not in domain order -- or
    None when it does not apply (Python ints, a domain outside [0, 2^64), no data value, counts
    whose total is 2^62 or more): O(distinct values) numpy work, no Python object per block."""
    v = offsets_array(vals)
    if v is None or v.size == 0 or not (0 <= lower and upper < _U64) or not isinstance(cnt, np.ndarray):
        return None
    c = cnt.astype(np.int64)
    if int(c.sum(dtype=np.float64)) >= 1 << 62:
        return None
    upto = np.cumsum(c)
    below = upto - c
    n, last = int(upto[-1]), int(v[-1])
    gap_start = np.empty(v.size, np.uint64)
    gap_start[0] = lower
    np.add(v[:-1], np.uint64(1), out=gap_start[1:])
    gap_len = v - gap_start
    g = np.flatnonzero(gap_len)  # the non-empty gaps below each value
    top = [np.uint64(upper - last)] if upper > last else []  # the gap above the maximum
    start = np.concatenate((v, gap_start[g], np.array([last + 1] if top else [], np.uint64)))
    length = np.concatenate((np.ones(v.size, np.uint64), gap_len[g], np.array(top, np.uint64)))
    gap_rank = np.concatenate((below[g], np.full(len(top), n, np.int64)))
    return start, length, np.concatenate((below, gap_rank)), np.concatenate((upto, gap_rank))
