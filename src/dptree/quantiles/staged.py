"""ApproxQuantiles and the per-level exponential mechanism on data an engine counts (files, DuckDB
relations): every call runs staged on its piece, so no sort of the column (issue 12 item 3).

:mod:`dptree.interior.staged` samples one exponential mechanism over the whole column from three
kinds of exact engine counts (a bucket histogram, the distinct values of a rank window with their
global ranks, the two ranks of one point). ApproxQuantiles' calls run on *pieces*: the records
strictly between the two split values around them, plus the share of each split value's tie
block that its fair coins sent to this side. :class:`StagedPiece` holds a piece as public split
values and exact counts that only the mechanism reads:

* ``lo``/``hi``: the piece's domain; ``low``/``high``: how many records equal to ``lo``/``hi`` the
  piece holds when a split's coins decided it, or None where the end is the domain's own end (the
  piece then holds every record equal to it);
* ``off``: records of the column below the piece minus, where ``low`` is set, the tie records at
  ``lo`` that went left: a record value y strictly inside the piece has piece ranks
  (#{x < y} - off, #{x <= y} - off) from the global ones;
* ``n``: the piece's records.

A call on the piece is :func:`~dptree.interior.blocks.sample_windowed` with the piece's n, its
domain [lo, hi] and a window of its distinct values with their exact piece ranks: the engine's
window of global ranks [lo_rank + off, hi_rank + off] restricted to the values strictly inside
the piece (and an end whose share is None), plus the ends with their shares where their piece
rank intervals meet the window; a proposed point outside the window gets its piece ranks from
the same rule (an engine ``ranks`` query inside, the shares at the ends). These are exactly the
values, counts and ranks the in-memory piece (:class:`~dptree.quantiles.approx.ArrayPiece`) has
in that window, so the candidates, the draws and the output are the same as in memory
(``tests/unit/quantiles/test_approx_staged.py`` checks this seed by seed): the law, and with it
the privacy proof of :mod:`dptree.quantiles.approx`, is unchanged. The split value's ranks in
the piece come from the window (or the ``ranks`` answers already asked), its tie block's coins
from the same random source as in memory.

Queries: one bucket histogram, then per call one window scan plus one ``ranks`` scan per
proposal outside the window (rare: the window carries all but 2^-160 of the weight unless it
reaches the piece's ends) and at most one for the split value's ranks. Nothing the engine
returns leaves the mechanism. Memory: O(buckets + the windows), independent of n.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dptree.data.engines.base import OrderedCounts
from dptree.interior.blocks import Blocks, sample_windowed, window_ranks
from dptree.interior.encoding import Encoding
from dptree.interior.selection import exponential_base, quantile_badness, quantile_level, sample_quantile_blocks
from dptree.interior.staged import BUCKETS, engine_ranks, rank_window, rank_windows, staged_session
from dptree.noise import RandomSource
from dptree.quantiles.approx import Relation, _fair_coins, call_sensitivity, run_approx

__all__ = ["StagedPiece", "fetch_windows", "staged_quantiles"]

_U64 = np.uint64


class _Column:
    """The engine session, the domain's encoding, the bucket histogram's cumulative counts and a
    memo of the ``ranks`` answers (shared by every piece of one release)."""

    def __init__(self, counts: OrderedCounts, enc: Encoding, cum: np.ndarray) -> None:
        self.counts, self.enc, self.cum = counts, enc, cum
        self._ask = engine_ranks(counts, enc)
        self._memo: dict[int, tuple[int, int]] = {}

    def ranks(self, y: int) -> tuple[int, int]:
        if y not in self._memo:
            self._memo[y] = self._ask(y)
        return self._memo[y]


class StagedPiece:
    """A piece of ApproxQuantiles' recursion as engine queries (module docstring; the protocol
    :class:`~dptree.quantiles.approx.Piece`)."""

    def __init__(self, col: _Column, lo: int, hi: int, low: int | None, high: int | None, off: int, n: int) -> None:
        self.col, self.lo, self.hi, self.low, self.high, self.off, self.n = col, lo, hi, low, high, off, n
        self._window: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._fetched: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def ranks(self, y: int) -> tuple[int, int]:
        """(#{x < y}, #{x <= y}) among the piece's records, y in [lo, hi]."""
        if self.n == 0 or self.lo == self.hi:
            return 0, self.n
        if y == self.lo and self.low is not None:
            return 0, self.low
        if y == self.hi and self.high is not None:
            return self.n - self.high, self.n
        below, upto = self.col.ranks(y)
        return below - self.off, upto - self.off

    def global_ranks(self, lo_rank: int, hi_rank: int) -> tuple[int, int]:
        """The global rank range whose engine window holds the piece's window [lo_rank, hi_rank]."""
        return max(lo_rank, 0) + self.off, min(hi_rank, self.n) + self.off

    def window(self, lo_rank: int, hi_rank: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(offsets, counts, piece upto) of the piece's distinct values whose piece rank interval
        meets [lo_rank, hi_rank], sorted (module docstring); the engine's window from
        :func:`fetch_windows` when it was asked for already."""
        got = self._fetched.pop((lo_rank, hi_rank), None)
        if got is None:
            got = rank_window(self.col.counts, self.col.enc, self.col.cum, *self.global_ranks(lo_rank, hi_rank))
        offs, cnt, upto = got
        keep = (offs > _U64(self.lo)) & (offs < _U64(self.hi))
        if self.low is None:
            keep |= offs == _U64(self.lo)
        if self.high is None:
            keep |= offs == _U64(self.hi)
        offs, cnt, upto = offs[keep], cnt[keep], upto[keep] - self.off
        ends = [(self.lo, self.low or 0, self.low or 0, True), (self.hi, self.high or 0, self.n, False)]
        for at, share, top, first in ends:  # an end whose share the coins decided (None: kept above)
            if share and top >= lo_rank and top - share <= hi_rank:
                one = (np.array([at], _U64), np.array([share], np.int64), np.array([top], np.int64))
                offs, cnt, upto = (np.concatenate((e, a) if first else (a, e)) for e, a in zip(one, (offs, cnt, upto)))
        return offs, cnt, upto

    @property
    def is_point(self) -> bool:
        """A piece of one point or no record: its call needs no window."""
        return self.lo == self.hi or self.n == 0

    def rank_range(self, q: float, epsilon: float, neighbors: Relation) -> tuple[int, int]:
        """The piece rank range of the window of its call at level q."""
        _, center, slope = quantile_badness(quantile_level(q), self.n)
        return window_ranks(center, slope, exponential_base(epsilon, call_sensitivity(q, neighbors)))

    def sample(self, q: float, epsilon: float, src: RandomSource, neighbors: Relation) -> int:
        """:func:`~dptree.quantiles.approx.em_call` on the piece: the same candidates and draws."""
        level = quantile_level(q)
        base = exponential_base(epsilon, call_sensitivity(q, neighbors))
        if self.n == 0:  # the mechanism on no records, as in memory
            return sample_quantile_blocks(src, np.zeros(0, _U64), np.zeros(0, np.int64), self.lo, self.hi, level, base)
        badness, center, slope = quantile_badness(level, self.n)
        if self.is_point:
            offs, cnt, upto = np.array([self.lo], _U64), np.array([self.n], np.int64), np.array([self.n], np.int64)
        else:
            offs, cnt, upto = self.window(*window_ranks(center, slope, base))
        self._window = (offs, cnt, upto)
        blocks = Blocks(offs, upto, cnt, int(offs[0]), int(offs[-1]))
        return sample_windowed(src, blocks, badness, center, slope, base, n=self.n, domain=(self.lo, self.hi),
                               ranks=self.ranks)

    def _ranks_of(self, v: int) -> tuple[int, int]:
        """The piece ranks of the call's output v: from its window, else :meth:`ranks`."""
        if self._window is not None:
            offs, cnt, upto = self._window
            pos = int(np.searchsorted(offs, _U64(v), side="left"))
            if pos < offs.size and int(offs[pos]) == v:
                return int(upto[pos] - cnt[pos]), int(upto[pos])
            if 0 < pos < offs.size:  # a gap between two window values
                return int(upto[pos - 1]), int(upto[pos - 1])
        return self.ranks(v)

    def split(self, v: int, src: RandomSource) -> tuple[StagedPiece, StagedPiece]:
        below, upto = self._ranks_of(v)
        tie = upto - below
        k = _fair_coins(src, tie)
        left = StagedPiece(self.col, self.lo, v, self.low, k, self.off, below + k)
        right = StagedPiece(self.col, v, self.hi, tie - k, self.high, self.off + upto - (tie - k),
                            self.n - upto + tie - k)
        return left, right


def fetch_windows(calls: list[tuple[StagedPiece, float]], epsilon: float, neighbors: Relation) -> None:
    """Ask the engine for the windows of these calls (one layer of the recursion, or the m calls
    of ``"exponential"``) in one scan where it can (:func:`~dptree.interior.staged.rank_windows`);
    each piece keeps its engine windows until its call reads them."""
    todo = [(piece, piece.rank_range(q, epsilon, neighbors)) for piece, q in calls if not piece.is_point]
    if len(todo) < 2:
        return
    col = todo[0][0].col
    got = rank_windows(col.counts, col.enc, col.cum, [piece.global_ranks(*r) for piece, r in todo])
    for (piece, r), window in zip(todo, got):
        piece._fetched[r] = window


def staged_quantiles(values: Any, column: str | None, enc: Encoding, on_invalid: str, qs: np.ndarray, *,
                     method: str, epsilon_call: float, rng: RandomSource, neighbors: Relation) -> list[int] | None:
    """The offsets of ``method`` ``"approx"`` (:func:`~dptree.quantiles.approx.run_approx`) or
    ``"exponential"`` (one call per level on all the records) at ``epsilon_call`` per call, run on
    engine queries (module docstring), or None where the input has no staged session (the caller
    then counts in memory): the same law and draws as the in-memory path."""
    with staged_session(values, column, None, enc, on_invalid) as session:
        if session is None:
            return None
        cum = np.cumsum(session.buckets(BUCKETS))
        n = int(cum[-1])
        if max(quantile_level(float(q)).denominator for q in qs) * n >= 1 << 62:
            return None  # b n beyond int64: the in-memory list path (the same law)
        root = StagedPiece(_Column(session, enc, cum), 0, enc.size - 1, None, None, 0, n)
        def before(calls: list[tuple[Any, float]]) -> None:
            fetch_windows(calls, epsilon_call, neighbors)

        if method == "approx":
            return run_approx(root, qs, epsilon_call=epsilon_call, rng=rng, neighbors=neighbors, before_layer=before)
        before([(root, float(q)) for q in qs])
        return [root.sample(float(q), epsilon_call, rng, neighbors) for q in qs]
