"""Exact table inversion from 64-bit random words: a law on finitely many cells at a few ns per draw.

A law on the cells 0..C-1 is given by its CDF F_0 < F_1 < ... < F_{C-1} = 1, where every F_c is
known only through integer bounds lo <= F_c 2^P <= hi at any precision P (exact rational bounds
on exp(-r), :func:`exp_fixed`). The draw is the cell of a uniform U on [0, 1): the smallest c with
U < F_c (inversion). Only the first 64 bits w of U are drawn at first: U lies in [w, w + 1) 2^-64.

**The decision is exactly "U lies in cell c"** (the proof of :class:`InversionTable`). With
T_c <= F_c 2^64 <= H_c integers (T made non-decreasing by suffix minima and H by prefix maxima,
which keeps both bounds valid because F is increasing) and j = #{c : T_c <= w}:

* every c >= j has w < T_c, so U < (w + 1) 2^-64 <= T_c 2^-64 <= F_c: U is below all of them;
* if j = 0 or w >= H_{j-1}, then U >= w 2^-64 >= F_{j-1} >= F_c for every c < j.

So when j = 0 or w >= H_{j-1}, the smallest c with U < F_c is j, whatever the later bits of U.
Otherwise (w in [T_{j-1}, H_{j-1}), probability about C 2^-64) the same U is extended with further
random words and compared with F at growing precision until it is decided (:func:`_exact_cell`);
no floating-point value ever decides an outcome. A guide table on the top 16-20 bits of w holds j
for every block of words on which j is constant and decided, so that a draw is one gather;
the other words (near a threshold) take a binary search, and the undecided ones the exact path.
The random bytes used are 8 per draw, whatever the outcome, except on the exact path and in the
tails of unbounded laws (probability < 2^-40 per draw by the choice of the table's size).
"""

from __future__ import annotations

import decimal
import functools
import math
from fractions import Fraction
from typing import Callable

import numpy as np

from dptree.noise.sources import RandomSource

__all__ = ["InversionTable", "GeometricLaw", "TruncatedGeometricLaw", "TwoSidedGeometricLaw", "exp_fixed"]

Interval = tuple[int, int]  # lo <= value * 2^P <= hi, for a precision P known from the context

GUIDE_BITS = 16  # at least; up to 20 for tables of more than 2^11 cells
_PREC = 192  # bits of the fixed-point bounds the tables are built from
_TAIL_BITS = 40  # unbounded laws: the table covers all but < 2^-40 of the mass (tails stay exact)
_FORCE_EXACT = False  # tests: send every draw through the exact path (its law is tested alone)


def _exp_neg_bounds(x: Fraction, digits: int) -> tuple[Fraction, Fraction]:
    """Rational bounds lo <= exp(-x) <= hi from correctly rounded decimal arithmetic."""
    ctx = decimal.Context(prec=digits)
    xd = ctx.divide(decimal.Decimal(x.numerator), decimal.Decimal(x.denominator))
    val = ctx.exp(-xd)
    # relative error of val: argument rounding (<= x * 10^(1-P)) plus result rounding (10^(1-P))
    rel = Fraction(1, 10 ** (digits - 1)) * (1 + x + 1)
    v = Fraction(val)
    return v * (1 - rel), v * (1 + rel)


@functools.lru_cache(maxsize=8192)
def exp_fixed(r: Fraction, prec: int) -> Interval:
    """Integers lo <= exp(-r) 2^prec <= hi for a rational r >= 0 (width a few units)."""
    one = 1 << prec
    if r == 0:
        return one, one
    digits = math.ceil(prec * 0.30103 + math.log10(float(r) + 2)) + 4
    lo, hi = _exp_neg_bounds(r, digits)
    return max(0, (lo.numerator << prec) // lo.denominator), min(one, -((-hi.numerator << prec) // hi.denominator))


def _mul(x: Interval, y: Interval, p: int) -> Interval:
    return (x[0] * y[0]) >> p, -((-(x[1] * y[1])) >> p)


def _div(x: Interval, y: Interval, p: int) -> Interval:
    return (x[0] << p) // y[1], -((-(x[1] << p)) // y[0])


def _one_minus(x: Interval, p: int) -> Interval:
    return (1 << p) - x[1], (1 << p) - x[0]


class _Law:
    """A law on cells 0..ncells-1, P(cell <= c) = F_c, built from powers of rho = exp(-a)."""

    ncells: int
    a: Fraction
    k: int = 0
    tail_cells: tuple[int, ...] = ()
    exact_tails = False  # True: tail cells are resolved by the exact search with the same U
    offset = 0  # value = cell - offset

    def _cdf(self, c: int, p: int, pw: Callable[[int], Interval]) -> Interval:
        """Bounds on F_c 2^p, given bounds pw(j) on rho^j 2^p."""
        raise NotImplementedError

    def cdf_at(self, c: int, p: int) -> Interval:
        """Bounds on F_c 2^p, from exp bounds at a precision of p + 16 bits."""
        g = p + 16
        lo, hi = self._cdf(c, g, lambda j: exp_fixed(j * self.a, g))
        return max(0, lo >> 16), min(1 << p, -((-hi) >> 16))

    def cdf_table(self, p: int) -> list[Interval]:
        """Bounds on F_c 2^p for c < ncells - 1, from one chain of interval powers of rho."""
        rho = exp_fixed(self.a, p)
        powers = [(1 << p, 1 << p)]

        def pw(j: int) -> Interval:
            while len(powers) <= j:
                powers.append(_mul(powers[-1], rho, p))
            return powers[j]

        out = []
        for c in range(self.ncells - 1):
            lo, hi = self._cdf(c, p, pw)
            out.append((max(0, lo), min(1 << p, hi)))
        return out

    def finish(self, src: RandomSource, cells: np.ndarray) -> np.ndarray:
        """Values of (rare) cells drawn outside the guide table: cell - offset, tails resolved."""
        return cells


def _tail_count(a: Fraction) -> int:
    """K with rho^K <= 2^-_TAIL_BITS (rho = exp(-a)); only speed depends on it, never the law."""
    return max(1, math.ceil(_TAIL_BITS * math.log(2) / float(a)))


class GeometricLaw(_Law):
    """P(G >= g) = rho^g on g = 0, 1, ...: cells 0..K are the values, cell K+1 the tail G > K,
    resolved as K + 1 + a fresh draw of G (memorylessness: P(G = K + 1 + g | G > K) = P(G = g))."""

    def __init__(self, a: Fraction) -> None:
        self.a = a
        self.k = _tail_count(a)
        self.ncells = self.k + 2
        self.tail_cells = (self.k + 1,)
        self.table: InversionTable | None = None

    def _cdf(self, c: int, p: int, pw: Callable[[int], Interval]) -> Interval:
        return _one_minus(pw(c + 1), p)  # F_c = P(G <= c) = 1 - rho^(c+1)

    def finish(self, src: RandomSource, cells: np.ndarray) -> np.ndarray:
        out = cells.astype(np.int64)
        tail = np.flatnonzero(out == self.k + 1)
        if tail.size:
            assert self.table is not None
            out[tail] += self.table.draw(src, tail.size)
        return out


class TruncatedGeometricLaw(_Law):
    """P(D = d) proportional to rho^d on d = 0..R-1: F_c = (1 - rho^(c+1)) / (1 - rho^R)."""

    def __init__(self, a: Fraction, r: int) -> None:
        self.a, self.r, self.ncells = a, r, r

    def _cdf(self, c: int, p: int, pw: Callable[[int], Interval]) -> Interval:
        return _div(_one_minus(pw(c + 1), p), _one_minus(pw(self.r), p), p)


class TwoSidedGeometricLaw(_Law):
    """P(A = x) proportional to rho^x for x >= 0 and to q rho^(|x|-1) for x <= -1 (rho = exp(-a),
    q = exp(-b)); with a = b it is the discrete Laplace, P(x) ~ q^|x|. Cells 1..2K+1 are
    x = -K..K, cell 0 the tail x < -K and cell 2K+2 the tail x > K, resolved as -(K + 1) - G and
    K + 1 + G with G ~ :class:`GeometricLaw` (memorylessness of both tails).
    P(A <= x) = q rho^(|x|-1) / (1 + q) for x <= -1, and 1 - rho^(x+1) / (1 + q) for x >= 0."""

    def __init__(self, a: Fraction, b: Fraction) -> None:
        self.a, self.b = a, b
        self.k = _tail_count(a)
        self.offset = self.k + 1
        self.ncells = 2 * self.k + 3
        self.tail_cells = (0, 2 * self.k + 2)
        self._geometric: InversionTable | None = None  # built at the first tail draw
        self._q: dict[int, Interval] = {}

    def _cdf(self, c: int, p: int, pw: Callable[[int], Interval]) -> Interval:
        q = self._q.get(p)
        if q is None:
            q = self._q[p] = exp_fixed(self.b, p)
        one_plus_q = ((1 << p) + q[0], (1 << p) + q[1])
        if c <= self.k:  # x = c - 1 - K <= -1, and the left tail (c = 0)
            return _div(_mul(q, pw(self.k - c), p), one_plus_q, p)
        return _one_minus(_div(pw(c - self.k), one_plus_q, p), p)

    def finish(self, src: RandomSource, cells: np.ndarray) -> np.ndarray:
        out = cells.astype(np.int64) - self.offset
        tail = np.flatnonzero(np.abs(out) == self.k + 1)
        if tail.size:
            if self._geometric is None:
                self._geometric = InversionTable(GeometricLaw(self.a))
            g = self._geometric.draw(src, tail.size)
            out[tail] += np.where(out[tail] < 0, -g, g)
        return out


def _exact_cell(src: RandomSource, word: int, law: _Law, guess: int) -> int:
    """The smallest c with U < F_c, exactly, for U whose first 64 bits are ``word``.

    Further 64-bit words of U are drawn while a comparison is undecided; F_c is bounded at 32 bits
    beyond U's current precision each time, so every comparison ends with probability one (U has
    a continuous law, P(U = F_c) = 0). With ``law.exact_tails`` the cells are all integers (F_c
    for c < 0 and c >= ncells - 1 too): the tails are searched with the same U.
    """
    a, k = word, 64

    def below(c: int) -> bool:  # is U < F_c ?
        nonlocal a, k
        if c >= law.ncells - 1 and not law.exact_tails:
            return True
        while True:
            p = k + 32
            lo, hi = law.cdf_at(c, p)
            if (a + 1) << 32 <= lo:
                return True
            if a << 32 >= hi:
                return False
            a = (a << 64) | int.from_bytes(src.random_bytes(8), "little")
            k += 64

    c = guess if law.exact_tails else min(max(guess, 0), law.ncells - 1)
    while (c > 0 or law.exact_tails) and below(c - 1):
        c -= 1
    while not below(c):
        c += 1
    return c


class InversionTable:
    """Exact inversion sampler of a :class:`_Law` from 64-bit words (proof: module docstring).

    ``t`` holds T_c and ``h1`` holds H_c - 1 (so that the bound H_c = 2^64 fits a uint64);
    ``guide`` holds, per value of the top 16-20 bits of w, the decided value, or ``slow`` where
    the words of that block straddle a threshold or fall in a tail cell.
    """

    def __init__(self, law: _Law) -> None:
        self.law = law
        if isinstance(law, GeometricLaw):
            law.table = self
        shift = _PREC - 64
        bounds = law.cdf_table(_PREC)
        # bounds at or past 1 (scales far below 1) clip to the last word: a word in [t, h1] is never
        # decided by the table, so the last word then goes to the exact path, as any undecided word;
        # an upper bound at 0 clips to word 0 the same way (undecided, hence exact)
        top = (1 << 64) - 1
        t = np.array([min(lo >> shift, top) for lo, _ in bounds], dtype=np.uint64)
        h1 = np.array([min(max(-((-hi) >> shift) - 1, 0), top) for _, hi in bounds], dtype=np.uint64)
        self.t = np.minimum.accumulate(t[::-1])[::-1].copy()
        self.h1 = np.maximum.accumulate(h1)
        bits = min(20, max(GUIDE_BITS, law.ncells.bit_length() + 5))
        self.shift = np.uint64(64 - bits)
        starts = np.arange(1 << bits, dtype=np.uint64) << self.shift
        j = np.searchsorted(self.t, starts, side="right")
        same = j == np.searchsorted(self.t, starts + ((np.uint64(1) << self.shift) - np.uint64(1)), side="right")
        decided = same & ((j == 0) | (starts > self.h1[np.maximum(j - 1, 0)]))
        decided &= ~np.isin(j, law.tail_cells)
        span = max(law.offset, law.ncells)
        self.dtype = np.int16 if span < (1 << 15) - 1 else np.int32
        self.slow = int(np.iinfo(self.dtype).min)
        self.top = int(np.iinfo(self.dtype).max)
        self.guide = np.where(decided, j.astype(np.int64) - law.offset, self.slow).astype(self.dtype)

    def draw(self, src: RandomSource, n: int) -> np.ndarray:
        """``n`` independent exact draws (int16/int32 values of the law, tails resolved)."""
        w = np.frombuffer(src.random_bytes(8 * n), dtype=np.uint64)
        out = np.take(self.guide, (w >> self.shift).view(np.int64), mode="clip")  # indices < guide size
        slow = np.arange(n) if _FORCE_EXACT else np.flatnonzero(out == self.slow)
        if slow.size == 0:
            return out
        ws = w[slow]
        cells = np.searchsorted(self.t, ws, side="right")
        undecided = (cells > 0) & (ws <= self.h1[np.maximum(cells - 1, 0)])
        if self.law.exact_tails:
            undecided |= np.isin(cells, self.law.tail_cells)
        for i in np.flatnonzero(undecided | _FORCE_EXACT):
            cells[i] = _exact_cell(src, int(ws[i]), self.law, int(cells[i]))
        values = self.law.finish(src, cells)
        if out.dtype != np.int64 and (values.min() <= self.slow or values.max() > self.top):
            out = out.astype(np.int64)  # a tail value beyond the guide's integer type
        out[slow] = values
        return out
