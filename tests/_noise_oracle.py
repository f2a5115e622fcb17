"""The vectorised exact uniform integers and Floyd's k-subsets of the straightforward
vectorised implementation: a test oracle only. :func:`dptree.noise.uniform_below` and
:func:`dptree.noise.uniform_subsets` must return the identical values from the same random source
(tests/unit/noise/test_subsets_exact.py): the same draws, so the same bounded histograms."""

from __future__ import annotations

import numpy as np

from dptree.noise.integers import _words
from dptree.noise.sources import RandomSource


def bit_length_oracle(values: np.ndarray) -> np.ndarray:
    v = values.astype(np.int64)
    e = np.frexp(v.astype(np.float64))[1].astype(np.int64)
    too_big = (e > 0) & ((v >> np.maximum(e - 1, 0)) == 0)
    return np.where(too_big, e - 1, e)


def uniform_below_oracle(src: RandomSource, m: np.ndarray) -> np.ndarray:
    """The vector-bound branch (bounds not all equal)."""
    m_arr = np.ascontiguousarray(m, dtype=np.int64).ravel()
    n = m_arr.size
    bits = bit_length_oracle(m_arr - 1)
    masks = (np.int64(1) << bits) - 1
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        nbits = int(bits[todo].max())
        draw = _words(src, todo.size, max(nbits, 1)) & masks[todo]
        ok = draw < m_arr[todo]
        out[todo[ok]] = draw[ok]
        todo = todo[~ok]
    return out


def floyd_subsets_oracle(src: RandomSource, sizes: np.ndarray, k: int) -> np.ndarray:
    """Floyd's branch (k <= 32), with the uniform integers of the same version."""
    from dptree.noise.integers import _uniform_below_scalar

    c = np.ascontiguousarray(sizes, dtype=np.int64).ravel()
    u = c.size
    out = np.empty((u, k), dtype=np.int64)
    for i in range(k):
        j = c - k + i
        m = j + 1
        t = _uniform_below_scalar(src, int(m[0]), u) if m.min() == m.max() else uniform_below_oracle(src, m)
        seen = (out[:, :i] == t[:, None]).any(axis=1) if i else np.zeros(u, dtype=bool)
        out[:, i] = np.where(seen, j, t)
    out.sort(axis=1)
    return out
