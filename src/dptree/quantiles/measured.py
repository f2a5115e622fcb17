"""Measured intervals for the exponential-mechanism quantile methods (``interval="counts"``): one
noisy histogram, at a stated share of epsilon, over cells cut at public functions of the released
estimates, and two tests per level read off it.

**Cut points** (:func:`cut_points`, public: a function of the released offsets and the domain's
size only). Around each distinct released offset o: the cells {x < o}, {x = o}, {x > o} (a tie
block at o is measured alone), then a geometric ladder o + d, o + 2d, o + 4d, ... to the right and
o - d, o - 2d, ... to the left, each side up to half-way to the next distinct released offset (or
to the domain's end). The finest step d is 1/64 of the distance to the nearest other released
offset (the estimates' spacing, a scale of the data's spread), at least one point and at least
|X| / 2^30 (a single estimate: the domain's resolution). A cut c bounds the prefix {x <= c}.

**Measurement** (:func:`measure_cells`). The records per cell, plus independent discrete Laplace
noise of scale Delta / (s epsilon) (the scale the sampler uses, rounded up), Delta the histogram's
L1 sensitivity: k under add/remove one person of at most k records (each record sits in one
cell), 2 under replace-one (a record moves between two cells). The cells partition the domain
whatever the cut points, so the histogram is (s epsilon)-DP whatever the estimates; the
cut points are post-processing of the estimates, which are (1 - s) epsilon-DP: epsilon in all by
sequential composition.

**Tests** (:func:`interval_ends`). Level q's target is x_q = min{x : F(x) >= q n} (F(x) = #{records
<= x}, n the number of records; x_0 is the domain's start). At a cut c, T(c) = F(c) - q n is
estimated without n as T_hat(c) = (1 - q) F_hat(c) - q S_hat(c) (F_hat, S_hat: the noisy
counts of the cells at or below c and above it), and with an exact declared n as
(1 - l) F_hat(c) - l S_hat(c) + (l - q) n with l = (cells <= c) / (cells), the unbiased
combination of least variance. Either way T_hat(c) = T(c) + W(c), W(c) = (1 - l) A - l B with A
and B the sums of the noise of the a cells at or below c and the b cells above it: its law is
known exactly (A and B are sums of independent discrete Laplace variables; their probabilities
come from the characteristic function by an inverse FFT, or, past :data:`EXACT_POINTS` points, a
Chernoff bound stands in, which is valid and wider). The p-values p_hi(c) = P(W(c) >= T_hat(c))
and p_lo(c) = P(W(c) <= T_hat(c)) say "x_q <= c" (certified when p_hi(c) <= (1 - level) / 2)
and "x_q > c" (p_lo(c) <= (1 - level) / 2). The high end is the first cut from which every cut
up is certified "x_q <= c" (the domain's end if the last one is not); the low end is one past the
last cut up to which every cut is certified "x_q > c" (the domain's start if the first one is
not). Then the interval is widened to hold the level's estimate.

**Guarantee.** For every data set and every value of the estimates: each level's interval
contains x_q with probability at least ``level`` over the histogram's noise (n the number of
records the mechanism saw: after the per-person bounding with ``user_id``, the group's records
with ``by``; with a declared exact ``n`` the guarantee assumes it is the true one). Proof, high
end: let c- be the largest cut below x_q. The high end falls below x_q only if c- was certified;
F(c-) < q n makes T(c-) < 0, so that requires G(T(c-) + W) <= (1 - level) / 2 with G(w) =
P(W(c-) >= w) non-increasing, hence G(W) <= (1 - level) / 2, which has probability at most
(1 - level) / 2 (the p-value of a continuous-or-discrete statistic at its own law). c- is fixed
by the estimates, which are independent of the histogram's noise. The low end likewise, at the
smallest cut c+ >= x_q (T(c+) >= 0). A union bound over the two ends gives ``level``. No other
assumption: ties, empty cells, the mechanism's own error and the number of cuts do not enter. The
interval over-covers by construction where the cut nearest x_q lies well below the noise from it
(the ladder's steps), which is the common case: about 0.98-1.00 at 95% (docs/notes/quantiles.md).

The tests read only the noisy counts and public parameters: post-processing.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable, Sequence

import numpy as np

from dptree.noise import RandomSource, discrete_laplace_variance, laplace_scale_used
from dptree.privacy.measurement import NoiseSpec, measure

__all__ = ["cut_points", "prefix_counts", "session_upto", "counts_intervals", "measure_cells", "interval_ends",
           "counts_scale", "INTERVAL_SHARE",
           "EXACT_POINTS", "noise_tail"]

#: the default share of epsilon the interval counts spend (``interval_share=``)
INTERVAL_SHARE = 0.1
#: the finest ladder step is the distance to the nearest other estimate divided by 2^GAP_BITS
GAP_BITS = 6
#: the finest ladder step is at least the domain's size divided by 2^FINEST_BITS
FINEST_BITS = 30
#: the noise sums' probabilities are computed exactly on at most this many points (an inverse FFT);
#: a wider law (tiny epsilon) uses a Chernoff bound
EXACT_POINTS = 1 << 20


def counts_scale(epsilon: float, share: float, sensitivity: int) -> Fraction:
    """The discrete Laplace scale of the interval counts: sensitivity / (share epsilon), rounded up
    to the scale the sampler uses (so the counts spend at most share x epsilon)."""
    return laplace_scale_used(Fraction(sensitivity) / (Fraction(share) * Fraction(epsilon)))


def cut_points(offsets: Sequence[int], size: int) -> list[int]:
    """The cells' upper ends c (a cell ends after point c, 0 <= c < size - 1), sorted: a public
    function of the released offsets and the domain's size (module docstring)."""
    u = sorted({int(o) for o in offsets})
    last = size - 2
    floor = max(1, size >> FINEST_BITS)
    cuts: set[int] = set()
    for i, o in enumerate(u):
        gaps = ([o - u[i - 1]] if i else []) + ([u[i + 1] - o] if i + 1 < len(u) else [])
        step = max(floor, min(gaps) >> GAP_BITS) if gaps else floor
        right = (o + u[i + 1]) // 2 if i + 1 < len(u) else last
        left = (u[i - 1] + o) // 2 if i else -1
        cuts.update(c for c in (o - 1, o) if 0 <= c <= last)
        d = step
        while o + d <= min(right, last):
            cuts.add(o + d)
            d *= 2
        d = step
        while o - 1 - d > left and o - 1 - d >= 0:
            cuts.add(o - 1 - d)
            d *= 2
    return sorted(cuts)


def prefix_counts(vals: Any, cnt: Any, cuts: Sequence[int]) -> np.ndarray:
    """The records at or below each cut, then all the records, of sorted distinct offsets ``vals``
    with counts ``cnt`` (in memory): exact, private (only :func:`measure_cells` reads them)."""
    cum = np.concatenate([[0], np.cumsum(np.asarray(cnt, dtype=np.int64))])
    v = np.asarray(vals)
    if v.dtype.kind not in "ui" or (len(cuts) and max(cuts) >= 1 << 63):  # offsets past int64: Python ints
        v = np.asarray([int(x) for x in v], dtype=object)
    c = np.asarray(cuts, dtype=v.dtype)
    upto = cum[np.searchsorted(v, c, side="right")] if c.size else np.zeros(0, np.int64)
    return np.concatenate([upto, cum[-1:]]).astype(np.int64)


def session_upto(session: Any, enc: Any) -> Callable[[Sequence[int]], np.ndarray]:
    """:func:`prefix_counts` of data an engine counts (files, DuckDB relations, Spark DataFrames),
    from the session the estimates ran on: one query for every cut and the total (exact, private:
    only :func:`measure_cells` reads them)."""

    def upto(cuts: Sequence[int]) -> np.ndarray:
        offsets = [int(c) for c in cuts] + [enc.size - 1]
        return session.upto([o if enc.kind == "integer" else enc.value_at(o) for o in offsets])

    return upto


def measure_cells(counts: np.ndarray, scale: Fraction, source: RandomSource) -> np.ndarray:
    """The cells' counts plus independent discrete Laplace noise of ``scale`` (the one noise step)."""
    (noisy,) = measure([np.asarray(counts, dtype=np.int64)], NoiseSpec("laplace", (scale,)), source)
    assert noisy is not None
    return noisy


class _SumLaw:
    """The law of sums of k independent discrete Laplace variables of one scale, k = 0 .. cells:
    probabilities on [-L/2, L/2) from the characteristic function ((1-p)^2 / (1 - 2p cos t + p^2))^k
    by an inverse FFT (None where L would exceed :data:`EXACT_POINTS`)."""

    def __init__(self, scale: Fraction, cells: int) -> None:
        self.p = math.exp(-1.0 / float(scale))
        self.var = discrete_laplace_variance(scale)
        sd = math.sqrt(max(cells, 1) * self.var)
        span = 2 * int(14.0 * sd + 80.0 * float(scale) + 64)
        self.size = 1 << max(8, span.bit_length())
        self.exact = self.size <= EXACT_POINTS
        self._pmf: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._base: np.ndarray | None = None

    def law(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(probabilities, cumulative probabilities) of the sum of k, at the values arange(L) - L/2."""
        if k not in self._pmf:
            L, p = self.size, self.p
            if self._base is None:  # the characteristic function of one variable, on the FFT grid
                t = 2.0 * np.pi * np.arange(L) / L
                self._base = (1.0 - p) ** 2 / (1.0 - 2.0 * p * np.cos(t) + p * p)
            phi = self._base ** k
            pmf = np.roll(np.maximum(np.fft.ifft(phi).real, 0.0), L // 2)
            self._pmf[k] = (pmf, np.cumsum(pmf))
        return self._pmf[k]

    def tail(self, a: int, b: int, lam: float, w: float) -> float:
        """P((1 - lam) A - lam B >= w), A and B sums of a and b variables (rounded up: boundary
        values count as meeting w); the Chernoff bound where the law is not computed exactly."""
        if not self.exact:
            return self.chernoff(a, b, lam, w)
        L = self.size
        x = np.arange(L, dtype=np.float64) - L // 2
        pa, _ = self.law(a)
        if lam <= 0.0:
            return float(min(1.0, pa[x >= w - 1e-9].sum() + 1e-12))
        _, cb = self.law(b)
        with np.errstate(over="ignore"):  # a tiny lam: the quotient may overflow to +-inf, clipped below
            jf = np.floor(((1.0 - lam) * x - w) / lam + 1e-9)
        j = np.clip(jf, -L, L).astype(np.int64) + L // 2
        cdf = np.where(j < 0, 0.0, cb[np.clip(j, 0, L - 1)])
        return float(min(1.0, float(pa @ cdf) + 1e-12))

    def chernoff(self, a: int, b: int, lam: float, w: float) -> float:
        """min over theta of exp(-theta w) E exp(theta W): an upper bound on P(W >= w), W = (1 - lam) A
        - lam B. Every theta in (0, r / max(1 - lam, lam)) gives a valid bound; the minimum is taken
        over a fixed grid of :data:`CHERNOFF_GRID` of them at once (the exponent is convex, so the
        grid's minimum is within one grid step of the optimum)."""
        p = self.p
        r = -math.log(p)  # E exp(u Z) is finite for |u| < r
        theta = _CHERNOFF_STEPS * (r / max(1.0 - lam, lam) * (1.0 - 1e-9))
        out = -theta * w
        for k, c in ((a, 1.0 - lam), (b, lam)):
            if k and c:
                u = c * theta
                out = out + k * (2.0 * math.log1p(-p) - np.log1p(-p * np.exp(u)) - np.log1p(-p * np.exp(-u)))
        return min(1.0, math.exp(min(0.0, float(out.min()))))


#: the number of theta values :meth:`_SumLaw.chernoff` minimises over
CHERNOFF_GRID = 512
_CHERNOFF_STEPS = np.arange(1, CHERNOFF_GRID + 1, dtype=np.float64) / (CHERNOFF_GRID + 1)


def noise_tail(scale: Fraction, a: int, b: int, lam: float, w: float) -> float:
    """P(W >= w) for W = (1 - lam) A - lam B, A and B sums of a and b independent discrete Laplace
    variables of ``scale`` (exact, or a Chernoff bound past :data:`EXACT_POINTS`): the p-value of
    the tests (module docstring)."""
    return _SumLaw(scale, a + b).tail(a, b, lam, w)


def interval_ends(qs: np.ndarray, noisy: np.ndarray, cuts: Sequence[int], size: int, scale: Fraction,
                  level: float, n: int | None = None) -> list[tuple[int, int]]:
    """Each level's (low, high) offsets from the noisy cell counts (module docstring): the tests
    at each cut, read from the far side inwards. ``n``: an exact declared size (None: estimated
    from the cells). Post-processing: reads noisy counts and public parameters only."""
    cells = int(noisy.size)
    law = _SumLaw(scale, cells)
    half = (1.0 - float(level)) / 2.0
    y = noisy.astype(np.float64)
    pre = np.cumsum(y)[:-1]  # noisy F at each cut
    suf = float(y.sum()) - pre  # noisy S above it
    below = np.arange(1, cells, dtype=np.float64)  # cells at or below each cut
    cantelli = math.sqrt(1.0 / half - 1.0)  # P(W >= k sd) <= 1 / (1 + k^2) <= half: certified at once
    out = []
    for q in np.asarray(qs, dtype=np.float64):
        lam = np.full(below.size, q) if n is None else below / cells
        t_hat = (1.0 - lam) * pre - lam * suf + (0.0 if n is None else (lam - q) * n)
        sd = np.sqrt(law.var * ((1.0 - lam) ** 2 * below + lam**2 * (cells - below)))

        def certified(j: int, sign: float, t_hat: np.ndarray = t_hat, sd: np.ndarray = sd,
                      lam: np.ndarray = lam) -> bool:
            w = sign * t_hat[j]  # sign +1: "x_q <= c" needs T_hat large; -1: "x_q > c" needs it small
            if w <= 0.0:
                return False
            if w >= cantelli * sd[j]:
                return True
            a, b, l_j = int(below[j]), cells - int(below[j]), float(lam[j])
            if law.chernoff(a, b, l_j, float(w)) <= half:
                return True
            return law.exact and law.tail(a, b, l_j, float(w)) <= half

        high = size - 1
        for j in range(cells - 2, -1, -1):
            if not certified(j, 1.0):
                break
            high = int(cuts[j])
        low = 0
        for j in range(cells - 1):
            if not certified(j, -1.0):
                break
            low = int(cuts[j]) + 1
        out.append((low, high))
    return out


def counts_intervals(qs: np.ndarray, offsets: Sequence[int], size: int, upto: Callable[[list[int]], np.ndarray],
                     scale: Fraction, source: RandomSource, level: float,
                     n: int | None = None) -> tuple[list[int], list[int], np.ndarray]:
    """(low offsets, high offsets, noisy cell counts) of every level: the cut points of the
    released ``offsets``, the exact F at each (``upto``: records at or below each cut; private,
    read here only), the noisy cells and the tests; each interval widened to hold its estimate.
    ``upto(cuts)``: the records at or below each cut, then all the records (len(cuts) + 1 numbers)."""
    cuts = cut_points(offsets, size)
    counts = np.diff(np.asarray(upto(cuts), dtype=np.int64), prepend=0)
    noisy = measure_cells(counts, scale, source)
    ends = interval_ends(qs, noisy, cuts, size, scale, level, n)
    low = [min(a, int(o)) for (a, _), o in zip(ends, offsets)]
    high = [max(b, int(o)) for (_, b), o in zip(ends, offsets)]
    return low, high, noisy
