"""Dithered ties: the map shared by the exponential-mechanism quantile methods that split tie blocks.

Each record x of an integer domain [0, |X|) enters a mechanism as the key x K + u, u drawn
uniformly from [0, K) for that record, independently of everything else (K public); the mechanism
runs on the |X| K keys and an output key o is read back as the value floor(o / K). Every value
becomes K keys, so gaps keep their measure relative to the data, while a tie block of c records
becomes c (mostly) distinct keys with gaps between them: a mechanism can place a point *inside*
the block, with #{keys below it} records of the block below it. The privacy argument (coupling the
per-record draws of neighbouring data sets) is each method's: JointExp draws once per record
(:mod:`dptree.quantiles.joint`), ApproxQuantiles once per record and call
(:mod:`dptree.quantiles.approx`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["dither_factor", "dither_keys"]


def dither_factor(n: int | None, domain_size: int) -> int:
    """JointExp's K (:mod:`dptree.quantiles.joint`), from public quantities only: the smallest power of
    two >= 4 n (n the declared size or bound), halved while domain_size * K >= 2^62; 1 (no
    dithering) without a declared size."""
    if n is None or n < 1:
        return 1
    k = 1 << (4 * int(n) - 1).bit_length()
    while k > 1 and int(domain_size) * k >= 1 << 62:
        k //= 2
    return k


def dither_keys(values: np.ndarray, counts: np.ndarray, k: int, draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The dithered data as sorted distinct keys and counts: record i (in sorted order) becomes
    values[.] * k + draws[i]. ``draws``: one integer of [0, k) per record, independent of the data.
    The keys keep the values' integer dtype (int64 for any other input)."""
    v = np.asarray(values)
    if v.dtype.kind not in "iu":
        v = v.astype(np.int64)
    keys = np.repeat(v, np.asarray(counts, dtype=np.int64)) * v.dtype.type(k) + np.asarray(draws).astype(v.dtype)
    return np.unique(keys, return_counts=True)
