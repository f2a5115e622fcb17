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

import math
import operator
from fractions import Fraction
from typing import Any, Callable, NamedTuple

import numpy as np

from dptree.errors import InvalidParameterError
from dptree.noise import RandomSource, bernoulli_pow_ratio, sample_exponential_index, uniform_int

__all__ = ["Badness", "Blocks", "Ranks", "as_lists", "block_arrays", "group_arrays", "offsets_array",
           "sample_windowed", "window_indices", "window_ranks"]

#: ``badness(below, upto, out)``: writes the integer badness (-score) of blocks with these ranks
Badness = Callable[[np.ndarray, np.ndarray, np.ndarray], Any]


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
    """The blocks of :func:`~dptree.interior.selection.rank_blocks`, held as the k sorted distinct
    values with their cumulative counts; the block layout is [each distinct value, the gap below
    each value, the gap above the maximum] (2k + 1 blocks, empty gaps included with length 0: the
    sampler never draws them). Lengths and ranks are computed for the slices a sampler needs."""

    values: np.ndarray  # k sorted distinct values (uint64)
    upto: np.ndarray  # #{x <= value} (int64, the cumulative counts)
    counts: np.ndarray  # multiplicities (int64)
    lower: int
    upper: int

    def gap_lengths(self, i0: int, i1: int) -> np.ndarray:
        """Lengths (uint64) of the gaps below the values i0 .. i1 - 1."""
        v = self.values
        out = np.empty(i1 - i0, np.uint64)
        if i1 > i0:
            np.subtract(v[i0 + 1:i1], v[i0:i1 - 1], out=out[1:])
            out[1:] -= np.uint64(1)
            out[0] = int(v[i0]) - (self.lower if i0 == 0 else int(v[i0 - 1]) + 1)
        return out

    @property
    def below(self) -> np.ndarray:
        """#{x < value} for every distinct value (int64)."""
        return self.upto - self.counts

    @property
    def lengths(self) -> np.ndarray:
        """All 2k + 1 block lengths (uint64; for checks, not the hot path)."""
        k = self.values.size
        return np.concatenate((np.ones(k, np.uint64), self.gap_lengths(0, k),
                               np.array([self.upper - int(self.values[-1])], np.uint64)))

    def per_block(self, f: Callable[[Any, Any, np.ndarray], Any]) -> np.ndarray:
        """``f(below, upto, out)`` of every block written into one int64 array (the layout
        above): the ranks of a value's block are (below, upto), of the gap below it (below,
        below), of the top gap (n, n). For checks, not the hot path."""
        k, below = self.values.size, self.below
        out = np.empty(2 * k + 1, np.int64)
        n = self.upto[-1:]
        f(below, self.upto, out[:k])
        f(below, below, out[k:2 * k])
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
        return np.array([self.start(i) for i in range(2 * self.values.size + 1)], dtype=object)


def block_arrays(vals: Any, cnt: Any, lower: int, upper: int) -> Blocks | None:
    """The :class:`Blocks` of sorted distinct ``vals`` with multiplicities ``cnt`` in [lower,
    upper], or None when they do not apply (Python ints, a domain outside [0, 2^64), no data
    value, counts whose total is 2^62 or more): one cumulative sum, no Python object per block."""
    v = offsets_array(vals)
    if v is None or v.size == 0 or not (0 <= lower and upper < _U64) or not isinstance(cnt, np.ndarray):
        return None
    c = cnt.astype(np.int64, copy=False)
    if float(c.sum(dtype=np.float64)) >= 2.0**62:
        return None
    return Blocks(v, np.cumsum(c), c, lower, upper)


#: bits of relative weight the blocks outside the window may carry at most (for speed only: the
#: law is exact for any window)
_WINDOW_BITS = 160

#: ``ranks(y)``: (#{x < y}, #{x <= y}) of a domain point outside the blocks (an engine query)
Ranks = Callable[[int], tuple[int, int]]


def window_ranks(center: Fraction, slope: int, base: tuple[int, int]) -> tuple[int, int]:
    """The integer rank range [ceil(center - rho), floor(center + rho)] of the window, rho =
    ceil(WINDOW_BITS / (slope log2 beta)): the distinct values whose rank interval [#{x < v},
    #{x <= v}] meets it (plus the first value above it) are sampled block by block. Public
    function of the mechanism's parameters and ``center`` (which is computed from n inside the
    mechanism and never leaves it)."""
    p, q = base
    rho = math.ceil(_WINDOW_BITS / (slope * math.log2(p / q)))
    return math.ceil(center) - rho, math.floor(center) + rho


def window_indices(upto: np.ndarray, lo_rank: int, hi_rank: int) -> tuple[int, int]:
    """The window [i0, i1) of sorted distinct values with cumulative counts ``upto``: from the
    first value with #{x <= v} >= lo_rank to the first value with #{x <= v} > hi_rank (or the
    last value) -- exactly the values whose rank interval [#{x < v}, #{x <= v}] meets
    [lo_rank, hi_rank] when #{x <= max} >= lo_rank (what an engine selects by ranks,
    :meth:`dptree.data.engines.base.OrderedCounts.window`)."""
    k = upto.size
    i0 = min(int(np.searchsorted(upto, lo_rank, side="left")), k - 1)
    i1 = max(min(int(np.searchsorted(upto, hi_rank, side="right")) + 1, k), i0 + 1)
    return i0, i1


def sample_windowed(src: RandomSource, blocks: Blocks, badness: Badness, center: Fraction, slope: int,
                    base: tuple[int, int], *, n: int | None = None, domain: tuple[int, int] | None = None,
                    ranks: Ranks | None = None) -> int:
    """A point y with P(y) proportional to beta^-badness(y), beta = p/q = ``base``, exactly, doing
    numpy work only on the blocks near the best rank.

    ``badness(below, upto, out)`` writes the (integer) badness of blocks with those ranks into
    ``out``; it must be unimodal in the rank: at least ``badness(0, u)`` at every point whose
    #{x <= y} is at most u, and at least ``badness(l, n)`` at every point whose #{x < y} is at
    least l (true of -quality for interior points and of the tie-aware quantile badness).
    ``center``/``slope``: the best rank and the badness per rank away from it (for the window).

    ``blocks`` holds sorted distinct values of the data with their exact *global* cumulative
    counts (``upto``, so #{x < v} = upto - counts); by default every distinct value, over the
    domain [blocks.lower, blocks.upper] with n = upto[-1]. A staged caller
    (:mod:`dptree.interior.staged`) passes only a consecutive run of the distinct values, the
    total ``n``, the whole ``domain`` and ``ranks(y)``, which gives (#{x < y}, #{x <= y}) of a
    point outside [blocks.lower, blocks.upper] (an engine query).

    Candidates (every point of the domain in exactly one): the window values v[i0] .. v[i1 - 1]
    (:func:`window_indices` of :func:`window_ranks`), each a block of one point with its exact
    badness; the gaps between consecutive window values (ranks (upto, upto) of the value below,
    exact); the prefix [domain low, v[i0] - 1], whose points have #{x <= y} <= #{x < v[i0]} = l0,
    with the bound badness(0, l0); the suffix [v[i1 - 1] + 1, domain high], whose points have
    #{x < y} >= #{x <= v[i1 - 1]} = u1, with the bound badness(u1, n). Prefix and suffix are
    weighted length * beta^-bound, so each of their points is over-weighted. One exact draw
    (:func:`~dptree.noise.sample_exponential_index` on the arrays) picks a candidate; a window
    block gives a uniform point of it; a prefix/suffix gives a uniform point y of it, accepted
    with probability beta^-(badness(y) - bound) (exact, :func:`~dptree.noise.bernoulli_pow_ratio`;
    badness(y) from y's exact ranks), otherwise everything is drawn again. A round outputs y with
    probability proportional to (weight of y's candidate per point) * (acceptance) =
    beta^-badness(y) for every y, and the rounds are independent: every point y is output with
    probability proportional to beta^-badness(y), the law of sampling all blocks, exactly.
    """
    p, q = base
    k_bits = q.bit_length() - 1
    v, upto, counts, k = blocks.values, blocks.upto, blocks.counts, blocks.values.size
    n_all = int(upto[-1]) if n is None else n
    dom_lo, dom_hi = (blocks.lower, blocks.upper) if domain is None else domain
    i0, i1 = window_indices(upto, *window_ranks(center, slope, base))
    m = i1 - i0
    first, last = int(v[i0]), int(v[i1 - 1])
    lengths = [np.ones(m, np.uint64), blocks.gap_lengths(i0 + 1, i1) if m > 1 else np.zeros(0, np.uint64)]
    regions: list[tuple[int, int, int]] = []  # (first point, length, bound) of the prefix / suffix
    if first > dom_lo:
        regions.append((dom_lo, first - dom_lo, _bad(badness, 0, int(upto[i0] - counts[i0]))))
    if last < dom_hi:
        regions.append((last + 1, dom_hi - last, _bad(badness, int(upto[i1 - 1]), n_all)))
    lengths.append(np.array([r[1] for r in regions], np.uint64))
    bad = np.empty(2 * m - 1 + len(regions), np.int64)
    window_upto = upto[i0:i1]
    badness(window_upto - counts[i0:i1], window_upto, bad[:m])
    if m > 1:
        gap_ranks = window_upto[:-1]  # the gap above v[i]: #{x < y} = #{x <= y} = upto[i]
        badness(gap_ranks, gap_ranks, bad[m:2 * m - 1])
    bad[2 * m - 1:] = [r[2] for r in regions]
    bad -= bad.min()
    all_lengths = np.concatenate(lengths)
    while True:
        i = sample_exponential_index(src, all_lengths, bad, base)
        j = i - (2 * m - 1)
        if j < 0:
            s = int(v[i0 + i]) if i < m else int(v[i0 + i - m]) + 1
            return uniform_int(src, s, s + int(all_lengths[i]) - 1)
        start, length, bound = regions[j]
        y = uniform_int(src, start, start + length - 1)
        if blocks.lower <= y <= blocks.upper:
            pos = int(np.searchsorted(v, np.uint64(y), side="left"))  # values < y: v[:pos]
            lo_rank = int(upto[pos - 1]) if pos else int(upto[0] - counts[0])
            hi_rank = lo_rank + (int(counts[pos]) if pos < k and int(v[pos]) == y else 0)
        else:
            if ranks is None:
                raise InvalidParameterError("a point outside the blocks needs ranks=")
            lo_rank, hi_rank = ranks(y)
        r = _bad(badness, lo_rank, hi_rank) - bound
        if bernoulli_pow_ratio(src, p, k_bits, r, 0):
            return y


def _bad(badness: Badness, lo_rank: int, hi_rank: int) -> int:
    """``badness`` of one point with #{x < y} = lo_rank, #{x <= y} = hi_rank."""
    out = np.empty(1, np.int64)
    lo = np.array([lo_rank], np.int64)
    badness(lo, lo if lo_rank == hi_rank else np.array([hi_rank], np.int64), out)
    return int(out[0])
