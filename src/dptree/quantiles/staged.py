"""ApproxQuantiles and the per-level exponential mechanism on data an engine counts (files, DuckDB
relations, Spark DataFrames): every call runs staged on its piece, so no sort of the column.

:mod:`dptree.interior.staged` samples one exponential mechanism over the whole column from three
kinds of exact engine counts (a bucket histogram, the distinct values of a rank window with their
global ranks, the two ranks of one point). ApproxQuantiles' calls run on *pieces*: the records
strictly between the two split values around them, plus the share of each split value's tie
block that its split sent to this side (:class:`~dptree.quantiles.approx.Cut`).
:class:`StagedPiece` holds a piece as public split values and exact counts that only the mechanism
reads:

* ``lo``/``hi``: the piece's domain; ``low``/``high``: how many records equal to ``lo``/``hi`` the
  piece holds when a split decided it, or None where the end is the domain's own end (the
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
the privacy proof of :mod:`dptree.quantiles.approx`, is unchanged. With dithered ties the call
is :func:`~dptree.quantiles.approx.dithered_call` on that window and rank rule, as in memory (the
keys of the window's values drawn first, those of a value outside it when a proposal lands there).
The split value's ranks in the piece come from the window (or the ``ranks`` answers already
asked), its tie block's coins from the same random source as in memory.

Queries: one bucket histogram; one scan for the windows around every level's target rank
(q n +- 3 R global ranks, R a bound on a window's half width, :func:`_ahead`), which hold the
window of every call whose ancestors erred by less than 2 R ranks in all; one scan per layer
of the recursion for the windows not held (rare); one ``ranks`` scan per proposal outside a
window (rare: the window carries all but 2^-160 of the weight unless it reaches the piece's
ends) and at most one for a split value's ranks. How many scans run depends on the data only
through the mechanism's own draws, as in :mod:`dptree.interior.staged`; the points do not depend
on it. Nothing the engine returns leaves the mechanism. Memory: the bucket histogram and the
windows (at most :data:`AHEAD_RANKS` read ahead), independent of n.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

import numpy as np

from dptree.data.domain import Domain
from dptree.data.engines.base import OrderedCounts
from dptree.interior.blocks import Blocks, sample_windowed, window_ranks
from dptree.interior.selection import exponential_base, quantile_badness, quantile_level, sample_quantile_blocks
from dptree.interior.staged import BUCKETS, engine_ranks, rank_windows, staged_session
from dptree.noise import RandomSource
from dptree.quantiles.approx import Cut, Relation, _fair_coins, call_sensitivity, dithered_call, run_approx

__all__ = ["StagedPiece", "fetch_windows", "staged_quantiles"]

_U64 = np.uint64

#: (offsets, counts, upto) of consecutive distinct values with their exact ranks
Window = tuple[np.ndarray, np.ndarray, np.ndarray]


class _Column:
    """The engine session, the domain's encoding, the bucket histogram's cumulative counts, the
    engine windows read so far and a memo of the ``ranks`` answers (shared by every piece of one
    release)."""

    def __init__(self, counts: OrderedCounts, enc: Domain, cum: np.ndarray, dither: int = 1) -> None:
        self.counts, self.enc, self.cum, self.dither = counts, enc, cum, dither
        self._ask = engine_ranks(counts, enc)
        self._memo: dict[int, tuple[int, int]] = {}
        self._read: list[tuple[int, int, Window]] = []  # (lo_rank, hi_rank, the engine's window)

    def ranks(self, y: int) -> tuple[int, int]:
        if y not in self._memo:
            self._memo[y] = self._ask(y)
        return self._memo[y]

    def held(self, lo_rank: int, hi_rank: int) -> Window | None:
        """The engine window of the global ranks [lo_rank, hi_rank] from one read before whose
        range contains it (the values meeting a range are those of any wider range's window that
        meet it, with the same exact ranks), or None."""
        for a, b, (offs, cnt, upto) in self._read:
            if a <= lo_rank and hi_rank <= b:
                keep = (upto >= lo_rank) & (upto - cnt <= hi_rank)
                return offs[keep], cnt[keep], upto[keep]
        return None

    def read(self, ranges: list[tuple[int, int]]) -> None:
        """Read the windows of these global rank ranges that no earlier read holds, in one scan
        where the engine can (:func:`~dptree.interior.staged.rank_windows`)."""
        todo = sorted({r for r in ranges if self.held(*r) is None})
        if todo:
            got = rank_windows(self.counts, self.enc, self.cum, todo)
            self._read += [(a, b, w) for (a, b), w in zip(todo, got)]

    def window(self, lo_rank: int, hi_rank: int) -> Window:
        got = self.held(lo_rank, hi_rank)
        if got is None:
            self.read([(lo_rank, hi_rank)])
            got = self.held(lo_rank, hi_rank)
            assert got is not None
        return got


class StagedPiece:
    """A piece of ApproxQuantiles' recursion as engine queries (module docstring; the protocol
    :class:`~dptree.quantiles.approx.Piece`)."""

    def __init__(self, col: _Column, lo: int, hi: int, low: int | None, high: int | None, off: int, n: int) -> None:
        self.col, self.lo, self.hi, self.low, self.high, self.off, self.n = col, lo, hi, low, high, off, n
        self._window: Window | None = None

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
        meets [lo_rank, hi_rank], sorted (module docstring), from the engine's windows read so far
        when one holds it."""
        offs, cnt, upto = self.col.window(*self.global_ranks(lo_rank, hi_rank))
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

    def sample(self, q: float, epsilon: float, src: RandomSource, neighbors: Relation) -> Cut:
        """:func:`~dptree.quantiles.approx.em_call` on the piece (:func:`~dptree.quantiles.approx.dithered_call`
        when the release dithers): the same candidates and draws as in memory."""
        level = quantile_level(q)
        base = exponential_base(epsilon, call_sensitivity(q, neighbors))
        if self.n == 0:  # the mechanism on no records, as in memory
            return Cut(sample_quantile_blocks(src, np.zeros(0, _U64), np.zeros(0, np.int64), self.lo, self.hi, level,
                                              base))
        badness, center, slope = quantile_badness(level, self.n)
        if self.is_point:
            offs, cnt, upto = np.array([self.lo], _U64), np.array([self.n], np.int64), np.array([self.n], np.int64)
        else:
            offs, cnt, upto = self.window(*window_ranks(center, slope, base))
        self._window = (offs, cnt, upto)
        if self.col.dither > 1:
            return dithered_call(src, offs, cnt, upto, n=self.n, lo=self.lo, hi=self.hi, level=level, base=base,
                                 k=self.col.dither, ranks=self.ranks)
        blocks = Blocks(offs, upto, cnt, int(offs[0]), int(offs[-1]))
        return Cut(sample_windowed(src, blocks, badness, center, slope, base, n=self.n, domain=(self.lo, self.hi),
                                   ranks=self.ranks))

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

    def split(self, cut: Cut, src: RandomSource) -> tuple[StagedPiece, StagedPiece]:
        v = cut.value
        below, upto = self._ranks_of(v)
        tie = upto - below
        k = cut.below + _fair_coins(src, tie - cut.below - cut.above) if tie else 0
        left = StagedPiece(self.col, self.lo, v, self.low, k, self.off, below + k)
        right = StagedPiece(self.col, v, self.hi, tie - k, self.high, self.off + upto - (tie - k),
                            self.n - upto + tie - k)
        return left, right


def fetch_windows(calls: list[tuple[StagedPiece, float]], epsilon: float, neighbors: Relation) -> None:
    """Read the engine windows of these calls (one layer of the recursion) that no earlier read
    holds, in one scan."""
    todo = [piece.global_ranks(*piece.rank_range(q, epsilon, neighbors)) for piece, q in calls if not piece.is_point]
    if todo:
        calls[0][0].col.read(todo)


def _ahead(qs: np.ndarray, n: int, epsilon: float) -> list[tuple[int, int]] | None:
    """Global rank ranges read with the first window scan: a n / b +- 3 R for every level q ~ a / b, R
    a bound on a window's half width (:func:`~dptree.interior.blocks.window_ranks`' rho is
    WINDOW_BITS / (slope log2 beta), slope log2 beta ~ epsilon / (2 s ln 2) b >= epsilon / (2 ln 2)
    as the sensitivity s <= b: R = the rho of b = s = 1, plus 2 for the bases' rounding), merged where they overlap (at most min(m 6 R, n + 1) ranks); None when both m 6 R and n
    exceed :data:`AHEAD_RANKS`. A call's window lies inside its level's range unless the calls above
    it erred by more than 2 R ranks in all (then it is read in its layer's scan): the ranges decide
    only how many scans run, never a point."""
    half = 3 * (window_ranks(Fraction(0), 1, exponential_base(epsilon, 1))[1] + 2)
    if qs.size * 2 * half > AHEAD_RANKS and n > AHEAD_RANKS:
        return None
    ranges: list[list[int]] = []
    for q in np.sort(qs):
        level = quantile_level(float(q))  # the calls' target: a n / b
        center = level.numerator * n // level.denominator
        lo, hi = max(center - half, 0), min(center + half, n)
        if ranges and lo <= ranges[-1][1]:
            ranges[-1][1] = max(ranges[-1][1], hi)
        else:
            ranges.append([lo, hi])
    return [(a, b) for a, b in ranges]


#: at most this many ranks read ahead (the windows of all levels in one scan; memory ~ 24 bytes a
#: distinct value)
AHEAD_RANKS = 1 << 22


def staged_quantiles(values: Any, column: str | None, enc: Domain, on_invalid: str, qs: np.ndarray, *,
                     method: str, epsilon_call: float, rng: RandomSource, neighbors: Relation,
                     dither: int = 1, finish: Callable[[list[int], Any], Any] | None = None) -> Any:
    """The offsets of ``method`` ``"approx"`` (:func:`~dptree.quantiles.approx.run_approx`) or
    ``"exponential"`` (one call per level on all the records) at ``epsilon_call`` per call, run on
    engine queries (module docstring), or None where the input has no staged session (the caller
    then counts in memory): the same law and draws as the in-memory path. ``dither``: approx's K
    (:func:`~dptree.quantiles.dither.approx_dither_factor`; 1: fair coins at the splits).
    ``finish(offsets, session)``, when given, runs on the same session (one read of the data) and
    its result is returned instead of the offsets."""
    with staged_session(values, column, None, enc, on_invalid) as session:
        if session is None:
            return None
        offsets = _staged_offsets(session, enc, qs, method=method, epsilon_call=epsilon_call, rng=rng,
                                  neighbors=neighbors, dither=dither)
        if offsets is None or finish is None:
            return offsets
        return finish(offsets, session)


def _staged_offsets(session: Any, enc: Domain, qs: np.ndarray, *, method: str, epsilon_call: float,
                    rng: RandomSource, neighbors: Relation, dither: int) -> list[int] | None:
    """The offsets of :func:`staged_quantiles` on an open session (None: b n beyond int64)."""
    cum = np.cumsum(session.buckets(BUCKETS))
    n = int(cum[-1])
    if max(quantile_level(float(q)).denominator for q in qs) * n >= 1 << 62:
        return None  # b n beyond int64: the in-memory list path (the same law)
    col = _Column(session, enc, cum, dither if method == "approx" else 1)
    root = StagedPiece(col, 0, enc.size - 1, None, None, 0, n)
    ahead = _ahead(np.asarray(qs, dtype=float), n, epsilon_call) if n else None
    if ahead is not None:
        col.read(ahead)  # every level's window, likely all the calls will need: one scan

    def before(calls: list[tuple[Any, float]]) -> None:
        fetch_windows(calls, epsilon_call, neighbors)

    if method == "approx":
        return run_approx(root, qs, epsilon_call=epsilon_call, rng=rng, neighbors=neighbors, before_layer=before)
    before([(root, float(q)) for q in qs])
    return [root.sample(float(q), epsilon_call, rng, neighbors).value for q in qs]
