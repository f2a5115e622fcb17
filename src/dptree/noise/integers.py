"""Exactly uniform integers from random bytes (rejection sampling on masked random words).

The building block of every sampler: :func:`uniform_below` (vectorised, bounds below 2^62) and
:func:`uniform_int` (one Python integer of any size). No rounding: each value is exactly uniform.
"""

from __future__ import annotations

import numpy as np

from dptree.errors import InvalidParameterError
from dptree.noise.sources import RandomSource

__all__ = ["uniform_below", "uniform_int"]

_INT64_SAFE = 1 << 62  # products below this never overflow int64 arithmetic used here


def _bit_length(values: np.ndarray) -> np.ndarray:
    """Exact bit lengths of non-negative int64 values."""
    v = values.astype(np.int64)
    e = np.frexp(v.astype(np.float64))[1].astype(np.int64)
    if v.size and int(v.max()) < 1 << 53:  # exact in float64: e is the bit length
        return e
    # float rounding can make e one too large for values just below a power of two
    too_big = (e > 0) & ((v >> np.maximum(e - 1, 0)) == 0)
    return np.where(too_big, e - 1, e)


def _words(src: RandomSource, count: int, nbits: int) -> np.ndarray:
    """``count`` uniform integers of ``nbits`` bits (nbits <= 63) as int64."""
    if nbits <= 8:
        dtype: type = np.uint8
    elif nbits <= 16:
        dtype = np.uint16
    elif nbits <= 32:
        dtype = np.uint32
    else:
        dtype = np.uint64
    size = np.dtype(dtype).itemsize
    raw: np.ndarray = np.frombuffer(src.random_bytes(count * size), dtype=dtype)
    if dtype is np.uint64:
        raw = raw >> np.uint64(1)  # keep 63 bits so the values fit int64
    return raw.astype(np.int64)


def _uniform_below_scalar(src: RandomSource, m: int, n: int) -> np.ndarray:
    """``n`` exactly uniform integers in [0, m) for one bound 1 <= m < 2^62."""
    nbits = (m - 1).bit_length()
    if nbits == 0:
        return np.zeros(n, dtype=np.int64)
    mask = np.int64((1 << nbits) - 1)
    out = _words(src, n, nbits) & mask
    bad = np.flatnonzero(out >= m)
    while bad.size:
        redraw = _words(src, bad.size, nbits) & mask
        out[bad] = redraw
        bad = bad[redraw >= m]
    return out


def uniform_below(src: RandomSource, m: np.ndarray | int, size: int | None = None) -> np.ndarray:
    """Exactly uniform integers in [0, m) for each entry of ``m`` (int64, 1 <= m < 2^62).

    Rejection sampling on masked random words: each round accepts with probability > 1/2.
    """
    if np.ndim(m) == 0:
        mm = int(m)
        if not 1 <= mm < _INT64_SAFE:
            raise InvalidParameterError("uniform_below needs 1 <= m < 2^62")
        return _uniform_below_scalar(src, mm, 1 if size is None else size)
    m_arr = np.ascontiguousarray(m, dtype=np.int64).ravel()
    n = m_arr.size
    if n == 0:
        return np.empty(0, dtype=np.int64)
    lo, hi = int(m_arr.min()), int(m_arr.max())
    if lo < 1 or hi >= _INT64_SAFE:
        raise InvalidParameterError("uniform_below needs 1 <= m < 2^62")
    if lo == hi:
        return _uniform_below_scalar(src, hi, n)
    bits = _bit_length(m_arr - 1)
    masks = (np.int64(1) << bits) - 1
    # the first round on the whole arrays (no gathers), then only the rejected entries
    out = _words(src, n, max(int(bits.max()), 1)) & masks
    todo = np.flatnonzero(out >= m_arr)
    while todo.size:
        nbits = int(bits[todo].max())
        draw = _words(src, todo.size, max(nbits, 1)) & masks[todo]
        ok = draw < m_arr[todo]
        out[todo[ok]] = draw[ok]
        todo = todo[~ok]
    return out


def uniform_int(src: RandomSource, low: int, high: int) -> int:
    """One exactly uniform Python integer in [low, high] (any size, e.g. 2^(2^20))."""
    if high < low:
        raise InvalidParameterError(f"uniform_int needs low <= high, got {low} > {high}")
    span = high - low + 1
    nbits = (span - 1).bit_length()
    if nbits == 0:
        return low
    nbytes = (nbits + 7) // 8
    mask = (1 << nbits) - 1
    while True:
        draw = int.from_bytes(src.random_bytes(nbytes), "little") & mask
        if draw < span:
            return low + draw
