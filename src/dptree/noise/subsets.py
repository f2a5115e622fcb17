"""Exactly uniform random k-subsets, for contribution bounding (:mod:`dptree.data.bounding`).

Floyd's algorithm (Bentley & Floyd 1987) for small k, ranking by random keys for large k; both
draw only exactly uniform integers from a :class:`~dptree.noise.sources.RandomSource`.
"""

from __future__ import annotations

import numpy as np

from dptree.errors import InvalidParameterError
from dptree.noise.integers import _INT64_SAFE, _words, uniform_below
from dptree.noise.sources import RandomSource

__all__ = ["uniform_subsets"]

_FLOYD_MAX_K = 32  # above this, ranking by random keys is cheaper than Floyd's membership checks


def uniform_subsets(src: RandomSource, sizes: np.ndarray, k: int) -> np.ndarray:
    """For each population size c in ``sizes`` (all > k >= 1), an exactly uniform random k-subset of
    {0, ..., c-1}: an int64 array of shape (len(sizes), k), each row sorted.

    k <= 32: Floyd's algorithm (Bentley & Floyd 1987), vectorised over rows: for j = c-k .. c-1 draw
    t uniform in [0, j] and add t, or j when t is already chosen. k > 32: give every element an
    independent uniform 62-bit key, redraw keys that tie inside a row (the redraw treats elements
    symmetrically, so the order stays exchangeable), and keep the k smallest keys of each row.
    """
    c = np.ascontiguousarray(sizes, dtype=np.int64).ravel()
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or int(k) < 1:
        raise InvalidParameterError(f"k must be an integer >= 1, got {k!r}")
    k = int(k)
    u = c.size
    if u == 0:
        return np.empty((0, k), dtype=np.int64)
    if int(c.min()) <= k or int(c.max()) >= _INT64_SAFE:
        raise InvalidParameterError("uniform_subsets needs k < size < 2^62 for every row")
    if k <= _FLOYD_MAX_K:
        cols = np.empty((k, u), dtype=np.int64)  # the i-th pick of every row, contiguous
        for i in range(k):
            j = c - k + i
            t = uniform_below(src, j + 1)
            if i:
                seen = cols[0] == t
                for q in range(1, i):
                    seen |= cols[q] == t
                t = np.where(seen, j, t)
            cols[i] = t
        out = np.ascontiguousarray(cols.T)
        out.sort(axis=1)
        return out
    total = int(c.sum())
    row = np.repeat(np.arange(u, dtype=np.int64), c)
    keys = _words(src, total, 62)
    while True:
        order = np.lexsort((keys, row))
        ks, rs = keys[order], row[order]
        tie = (ks[1:] == ks[:-1]) & (rs[1:] == rs[:-1])
        if not tie.any():
            break
        bad = np.unique(np.concatenate([order[1:][tie], order[:-1][tie]]))
        keys[bad] = _words(src, bad.size, 62)
    starts = np.concatenate([[0], np.cumsum(c)[:-1]])
    rank = np.arange(total, dtype=np.int64) - starts[rs]
    pos = order - starts[rs]  # element index inside its row
    chosen = pos[rank < k].reshape(u, k)
    chosen.sort(axis=1)
    return chosen
