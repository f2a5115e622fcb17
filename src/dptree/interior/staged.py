"""The exponential mechanisms of interior points, quantiles and medians on data that an engine
counts (files, DuckDB relations, Spark DataFrames): staged queries instead of a sort of the whole
column.

The in-memory path (:func:`~dptree.interior.selection.ordered_exponential_mechanism`,
:func:`~dptree.interior.selection.quantile_exponential_mechanism`) needs every distinct value
and its count, which for a file means sorting the column. :func:`sample_staged` asks the engine
(:class:`~dptree.data.engines.base.OrderedCounts`) for three kinds of exact counts instead:

1. ``buckets``: one GROUP BY into :data:`BUCKETS` public buckets of the clamped values, by a
   monotone bucketing (x < y implies bucket(x) <= bucket(y)); this query also runs the
   missing/infinite checks. From it, n = the total, the mechanism's best rank ``center`` and the
   rank range [lo_rank, hi_rank] = :func:`~dptree.interior.blocks.window_ranks` (a function of n
   and the public parameters).
2. ``window``: the distinct clamped values whose rank interval [#{x < v}, #{x <= v}] meets
   [lo_rank, hi_rank], with their counts and exact global ranks, read from the buckets
   first .. last that can hold them (first: the first bucket whose cumulative count reaches
   lo_rank; last: the first whose cumulative count exceeds hi_rank, or the last bucket). As the
   bucketing is monotone, the rows of the buckets before ``first`` are exactly the rows below
   every value of those buckets, so the ranks are exact; and the values returned are a run of
   consecutive distinct values -- the very window ``v[i0] .. v[i1 - 1]`` that
   :func:`~dptree.interior.blocks.sample_windowed` takes from the full sorted data
   (:func:`~dptree.interior.blocks.window_indices`: the values with upto >= lo_rank up to the
   first with upto > hi_rank, i.e. those with upto >= lo_rank and #{x < v} <= hi_rank). It is
   non-empty when n >= 1: the value whose rank interval holds ``center`` lies in a bucket
   between first and last.
3. ``ranks(y)``: (#{x < y}, #{x <= y}) of one point, asked only when the sampler proposes a point
   y of the prefix or suffix region (outside the window), to accept or reject it.

**The law is exactly the full mechanism's.** :func:`~dptree.interior.blocks.sample_windowed` is
then run on the window with the global n, the whole domain and ``ranks``: its proof (each domain
point lies in exactly one candidate -- a window value, a gap between two window values, the
prefix below the window or the suffix above it; window candidates carry their exact weight
length * beta^-badness; prefix and suffix points are over-weighted by a bound that the
unimodal badness guarantees, and a proposed point is accepted with probability
beta^-(badness(y) - bound), badness(y) from its exact ranks) needs only the window's values and
exact global ranks, n, and the exact ranks of proposed outside points, which is what the engine
returns. Moreover the candidate arrays, the random draws and the ranks used are identical to
those of the in-memory path on the same data, so the same random source gives the same point
(``tests/unit/interior/test_interior_staged.py`` checks this seed by seed, and the law against
brute force with a window small enough that the outside regions carry most of the mass).
When n = 0 the window is empty and the in-memory mechanism on no data runs (the same law, the
same draws).

**Queries.** Two scans (buckets, window) always, plus one ``ranks`` scan per proposal of an
outside point: the number of queries depends on the data only through the mechanism's own
random draws (a proposal of the prefix or suffix, whose total weight is below 2^-160 of the
window's whenever the window does not reach the data's minimum or maximum). Nothing the engine
returns leaves the mechanism: the release is the sampled point only.

**Memory.** O(:data:`BUCKETS` + rho) in Python, rho = :func:`window_ranks`' half width
(160 / (slope log2 beta) ranks, ~222 / epsilon for a median): never one object per row and
independent of n; the engine's own work (one GROUP BY over the buckets, one GROUP BY of the
window's buckets) runs in the engine (out of core in DuckDB, distributed in Spark).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any, Callable, Literal

import numpy as np

from dptree.data.domain import Domain
from dptree.data.engines.base import OrderedCounts
from dptree.data.values import INVALID_VALUES
from dptree.interior.blocks import Badness, Blocks, sample_windowed, window_ranks
from dptree.noise import RandomSource

__all__ = ["BUCKETS", "engine_ranks", "rank_window", "rank_windows", "sample_staged", "staged_point", "staged_session"]

#: buckets of the first query: as many as a range tree's leaves in benchmarks/interior_scale.py
BUCKETS = 1 << 14

#: (badness, best rank, slope) of a mechanism on n records, or None when its arrays do not fit
#: int64 (then the caller's in-memory path runs)
BadnessOf = Callable[[int], "tuple[Badness, Fraction, int] | None"]


def sample_staged(src: RandomSource, counts: OrderedCounts, enc: Domain, badness_of: BadnessOf,
                  base: tuple[int, int], empty: Callable[[], int]) -> int | None:
    """The point (offset in [0, |X|)) of the exponential mechanism with weights
    beta^-badness(y), beta = ``base``, on the data behind ``counts`` (module docstring: the
    queries and the proof that the law is the full mechanism's). ``empty()``: the mechanism on
    no data (n = 0). None when ``badness_of`` declines (b n beyond int64)."""
    cum = np.cumsum(counts.buckets(BUCKETS))
    n = int(cum[-1])
    made = badness_of(n)
    if made is None:
        return None
    badness, center, slope = made
    lo_rank, hi_rank = window_ranks(center, slope, base)
    offs, cnt, upto = rank_window(counts, enc, cum, lo_rank, hi_rank)
    if offs.size == 0:  # n = 0 (module docstring)
        return empty()
    blocks = Blocks(offs, upto, cnt, int(offs[0]), int(offs[-1]))
    return sample_windowed(src, blocks, badness, center, slope, base, n=n, domain=(0, enc.size - 1),
                           ranks=engine_ranks(counts, enc))


def rank_window(counts: OrderedCounts, enc: Domain, cum: np.ndarray, lo_rank: int, hi_rank: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets, counts, upto) of the distinct values whose global rank interval meets
    [lo_rank, hi_rank] (the ``window`` query, module docstring), read from the buckets that can
    hold them; ``cum``: the cumulative counts of :data:`BUCKETS` buckets. Offsets as uint64
    (float values encoded), strictly increasing."""
    return rank_windows(counts, enc, cum, [(lo_rank, hi_rank)])[0]


def rank_windows(counts: OrderedCounts, enc: Domain, cum: np.ndarray, ranges: list[tuple[int, int]]
                 ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`rank_window` of each (lo_rank, hi_rank), read by the engine's ``windows`` (one scan
    where the requests fit a query)."""
    requests = []
    for lo_rank, hi_rank in ranges:
        first = min(int(np.searchsorted(cum, lo_rank, side="left")), cum.size - 1)
        last = min(int(np.searchsorted(cum, hi_rank, side="right")), cum.size - 1)
        requests.append((first, last, int(cum[first - 1]) if first else 0, lo_rank, hi_rank))
    got = counts.windows(requests) if len(requests) > 1 else [counts.window(*r) for r in requests]
    out = []
    for vals, cnt, upto in got:
        offs = vals if enc.kind == "integer" else enc.positions(vals)[0]
        if offs.size > 1 and not (offs[1:] > offs[:-1]).all():
            raise RuntimeError("the engine's window is not strictly increasing (internal error)")
        out.append((offs, cnt, upto))
    return out


def engine_ranks(counts: OrderedCounts, enc: Domain) -> Callable[[int], tuple[int, int]]:
    """(#{x < y}, #{x <= y}) of an offset y, asked of the engine (the ``ranks`` query)."""
    def ranks(y: int) -> tuple[int, int]:
        return counts.ranks(y if enc.kind == "integer" else enc.value_at(y))

    return ranks


@contextmanager
def staged_session(values: Any, column: str | None, counts: Any, enc: Domain,
                   on_invalid: str) -> Iterator[OrderedCounts | None]:
    """A session of :class:`~dptree.data.engines.base.OrderedCounts` on ``column`` of ``values``
    when its engine has one (files, DuckDB relations and Spark DataFrames over a domain of at most 2^64 points,
    without ``counts=``); None otherwise (decided from the input's kind and schema), and the
    caller counts in memory (:func:`~dptree.interior.encoding.prepare`). Date domains count in
    memory too: their points are units of a resolution, which the engine's window of raw
    distinct values does not group."""
    if counts is not None or column is None or enc.size > 1 << 64 or enc.kind == "datetime":
        yield None
        return
    from dptree.data.histograms import is_table, ordered_counts

    if not is_table(values):
        yield None
        return
    policy: Literal["error", "drop"] = "drop" if on_invalid == "drop" else "error"
    lower, upper = enc.bounds
    with ordered_counts(values, column=column, lower=lower, upper=upper, on_invalid=policy,
                        message=INVALID_VALUES) as session:
        yield session


def staged_point(values: Any, column: str | None, counts: Any, enc: Domain, on_invalid: str, src: RandomSource,
                 badness_of: BadnessOf, base: tuple[int, int], empty: Callable[[], int]) -> int | None:
    """:func:`sample_staged` on ``column`` of ``values`` in a :func:`staged_session`; None where
    there is none (and b n < 2^62), and the caller counts in memory."""
    with staged_session(values, column, counts, enc, on_invalid) as session:
        return None if session is None else sample_staged(src, session, enc, badness_of, base, empty)
