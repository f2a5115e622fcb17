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

from dptree.noise import RandomSource, uniform_below

__all__ = ["APPROX_DITHER", "CallDithers", "approx_dither_factor", "dither_factor", "dither_keys"]


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


#: ApproxQuantiles' K on domains of at most 2^48 points (:func:`approx_dither_factor`)
APPROX_DITHER = 1 << 7
#: the keys are uint64 offsets: |X| K <= 2^64
_KEY_SPACE = 1 << 64
#: at most this many records' draws are sorted at once; a value with more is counted per key
#: (memory O(K), not O(records))
_SORT_LIMIT = 1 << 20


def approx_dither_factor(domain_size: int) -> int:
    """ApproxQuantiles' K (:mod:`dptree.quantiles.approx`), from the domain size only: 2^16, halved
    while |X| K > 2^64 (the keys must be uint64 offsets); 1 (no dithering: ties at a split go by
    fair coins) on domains of more than 2^63 points. A tie block of c records then meets the chosen
    key in about c / K records, whose coins cost about c / (4 K) ranks
    (docs/notes/quantiles_benchmark.md)."""
    k = APPROX_DITHER
    while k > 1 and int(domain_size) * k > _KEY_SPACE:
        k //= 2
    return k


class CallDithers:
    """The draws u of one mechanism call (ApproxQuantiles draws afresh per call): each record's u is
    drawn when the call first needs the value the record sits at and kept for the rest of the call.
    Drawing on first use is drawing everything in advance (the draws are independent of each other
    and of the data), so a call pays only for the values its sampler looks at. Per value: the sorted
    distinct u in [0, K) and how many records drew each."""

    def __init__(self, src: RandomSource, k: int) -> None:
        self.src, self.k = src, int(k)
        self._run: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # (values, keys, counts)
        self._one: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def window(self, values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The sorted distinct keys (uint64) and counts of all records at ``values`` (sorted distinct
        uint64 offsets, once per call), drawn now: one batch, or value by value past the sort limit."""
        total = int(np.sum(counts))
        if total <= _SORT_LIMIT:
            keys, cnt = dither_keys(values, counts, self.k, uniform_below(self.src, self.k, size=total))
        else:
            parts = [self._draw(int(c)) for c in counts]
            keys = np.concatenate([np.uint64(int(v) * self.k) + u.astype(np.uint64)
                                   for v, (u, _) in zip(values, parts)])
            cnt = np.concatenate([c for _, c in parts])
        self._run = (values, keys, cnt)
        return keys, cnt

    def known(self, value: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The u and counts at ``value`` if drawn in this call, else None."""
        if self._run is not None:
            values, keys, cnt = self._run
            pos = int(np.searchsorted(values, np.uint64(value)))
            if pos < values.size and int(values[pos]) == value:
                start = np.uint64(value * self.k)
                i = int(np.searchsorted(keys, start, side="left"))
                j = int(np.searchsorted(keys, start + np.uint64(self.k - 1), side="right"))
                return (keys[i:j] - start).astype(np.int64), cnt[i:j]
        return self._one.get(value)

    def at(self, value: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The u and counts of the ``count`` records at ``value``: drawn now unless drawn before."""
        got = self.known(value)
        if got is None:
            got = self._one[value] = self._draw(count)
        return got

    def _draw(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """``count`` fresh draws as (sorted distinct u, counts)."""
        if count <= _SORT_LIMIT:
            u, c = np.unique(uniform_below(self.src, self.k, size=count), return_counts=True)
            return u.astype(np.int64), c.astype(np.int64)
        per_key = np.zeros(self.k, np.int64)
        left = count
        while left:
            take = min(left, _SORT_LIMIT)
            per_key += np.bincount(uniform_below(self.src, self.k, size=take), minlength=self.k)
            left -= take
        u = np.flatnonzero(per_key)
        return u.astype(np.int64), per_key[u]
