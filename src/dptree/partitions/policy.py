"""Keep-or-drop policies of private partition selection: which keys to release, from their counts.

Neighbouring datasets differ by adding or removing one user (all their records). After bounding
(:mod:`dptree.data.bounding`: each user keeps at most ``max_groups`` = m of their distinct keys,
drawn uniformly), a key's count is its number of distinct users, so one user changes at most m
counts, each by one, and a key absent from one dataset has count 1 in the other. A policy decides
each key independently from its count; keys of count 0 (absent, or all of whose users kept other
keys) are never released, so no key that is not in the data can appear.

* :class:`OptimalPolicy` -- one key per user (m = 1): the optimal thresholding of Desfontaines,
  Voss, Gipson & Mandayam, "Differentially private partition selection" (PoPETs 2022, Theorem 1):
  keep a key of n users with probability pi_n, pi_0 = 0,
  pi_n = min(e^eps pi_{n-1} + delta, 1 - e^-eps (1 - pi_{n-1} - delta), 1). It is the largest
  keep probability at every n that satisfies, for every n >= 1, the two constraints of
  (eps, delta)-DP between counts n - 1 and n (the other two hold because pi is increasing):
  P[kept | n] <= e^eps P[kept | n-1] + delta and P[dropped | n-1] <= e^eps P[dropped | n] + delta.
  Computed exactly: e^eps is replaced by a rational beta <= e^eps
  (:func:`dptree.noise.exp_lower_rational`), delta by its exact binary value, and every pi_n is
  rounded *down* to a multiple of 2^-bits from the rounded pi_{n-1} (so the sequence actually
  sampled satisfies both constraints exactly, and stays increasing). The keep decision is an exact
  Bernoulli of that dyadic rational (:func:`dptree.noise.bernoulli_dyadic`). With m > 1 keys per
  user it runs at (eps / m, delta / m) per key: one user changes at most m keys' decisions, each
  (eps / m, delta / m)-DP, so all of them together are (eps, delta)-DP by basic composition
  (Dwork & Roth 2014, Thm 3.16).
* :class:`GaussianPolicy` -- m > 1 keys per user: the Gaussian thresholding of Gopi, Gulhane,
  Kulkarni, Shen, Shokouhi & Yekhanin, "Differentially private set union" (ICML 2020; Wilson et
  al. 2020), each kept key of a user adding 1: noisy count n + Z, Z ~ N_Z(0, sigma^2) (discrete
  Gaussian, :func:`dptree.noise.discrete_gaussian`), kept when n + Z >= tau (an integer). Exact
  delta, split in two (``split`` of delta for the first part):
  (1) the keys present on both sides: their counts move by at most one each, in at most m keys
  (L2 sensitivity sqrt(m)): sigma^2 is calibrated so that m unit shifts of independent discrete
  Gaussians are (eps, delta_1)-DP, by the exact convolution of
  :func:`dptree.privacy.budget.discrete_gaussian_sigma2_for` (or, past its range, the zCDP
  conversion of Canonne, Kamath & Steinke 2020); (2) the at most m keys present on one side only
  (count 1): each crosses tau with probability q = P[Z >= tau - 1], so the set of such keys
  released is (0, delta_2)-DP with delta_2 = m q (a union bound; q from the bound
  P[Z >= t] <= e^(-t^2 / (2 sigma^2)) / ((1 - e^(-t / sigma^2)) max(1, sqrt(2 pi sigma^2))), the
  numerator summed as a geometric series, the normaliser bounded below by Poisson summation).
  The two parts are independent mechanisms: (eps, delta_1 + delta_2)-DP by basic composition.
  sigma^2, tau and the split are chosen from public values only: the split among
  :data:`GAUSSIAN_SPLITS` whose key size kept with probability 0.9 (tau + 1.2816 sigma) is
  smallest.

:func:`choose_policy` picks, for m > 1, whichever of the two keeps a key with probability 0.9 at the
smaller size (public values only; docs/notes/partitions.md).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Union

import numpy as np

from dptree import noise as _noise
from dptree.errors import InvalidParameterError

__all__ = ["OptimalPolicy", "GaussianPolicy", "Policy", "optimal_policy", "gaussian_policy", "choose_policy",
           "gaussian_tail_bound", "GAUSSIAN_SPLITS", "MAX_STEPS"]

#: the most counts n with pi_n < 1 the optimal policy tabulates (epsilon = 10^-3, delta = 10^-20
#: needs about 9 * 10^4)
MAX_STEPS = 1 << 20
#: the shares of delta tried for the Gaussian policy's first part (keys present on both sides)
GAUSSIAN_SPLITS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
#: the standard normal's 0.9-quantile: a key of tau + 1.2816 sigma users is kept with probability ~0.9
_Z90 = 1.2815515655446004


@dataclass(frozen=True)
class OptimalPolicy:
    """Keep a key of n users with probability ``numerators[min(n, N)] / 2^bits`` (N = the last
    index, where the probability is 1): Desfontaines et al. 2022, rounded down exactly (module
    docstring). ``epsilon``, ``delta``: the per-key guarantee."""

    epsilon: float
    delta: float
    base: tuple[int, int]
    bits: int
    numerators: tuple[int, ...]

    def keep_probability(self, n: int) -> Fraction:
        """pi_n, exactly."""
        if n < 0:
            raise InvalidParameterError("a count is >= 0")
        return Fraction(self.numerators[min(n, len(self.numerators) - 1)], 1 << self.bits)

    @property
    def always_kept(self) -> int:
        """The smallest count kept with probability 1."""
        return len(self.numerators) - 1

    def size_kept_with(self, probability: float) -> int:
        """The smallest count kept with at least ``probability``."""
        target = Fraction(probability)
        return next(n for n in range(len(self.numerators)) if self.keep_probability(n) >= target)

    def keep(self, source: _noise.RandomSource, counts: np.ndarray) -> np.ndarray:
        """For each count (int64 >= 0), whether its key is released: exact Bernoulli(pi_n)."""
        n = np.minimum(np.asarray(counts, dtype=np.int64), len(self.numerators) - 1)
        return _noise.bernoulli_dyadic(source, self.numerators, self.bits, n)


@dataclass(frozen=True)
class GaussianPolicy:
    """Keep a key of n users when n + N_Z(0, ``sigma2``) >= ``threshold`` (module docstring);
    (epsilon, delta_gaussian + delta_new)-DP for one user's at most ``max_groups`` keys."""

    epsilon: float
    delta: float
    max_groups: int
    sigma2: Fraction
    threshold: int
    split: float
    delta_gaussian: float
    delta_new: float
    calibration: str

    def size_kept_with(self, probability: float) -> int:
        """About the count kept with ``probability`` (0.9: tau + 1.2816 sigma), rounded up."""
        z = {0.9: _Z90}.get(probability)
        if z is None:
            raise InvalidParameterError("size_kept_with knows probability 0.9")
        return self.threshold + math.ceil(z * math.sqrt(float(self.sigma2)))

    def keep(self, source: _noise.RandomSource, counts: np.ndarray) -> np.ndarray:
        """For each count, whether its key is released: count + Z >= threshold (integers: exact)."""
        n = np.asarray(counts, dtype=np.int64)
        return n + _noise.discrete_gaussian(source, self.sigma2, n.size) >= self.threshold


Policy = Union[OptimalPolicy, GaussianPolicy]


def _probability_bits(delta: Fraction) -> int:
    """Bits of the grid the optimal policy's probabilities are rounded down to: 64 below delta."""
    return 64 + max(0, math.ceil(math.log2(1 / delta)))


@functools.lru_cache(maxsize=64)
def optimal_policy(epsilon: float, delta: float) -> OptimalPolicy:
    """The optimal keep probabilities (Desfontaines et al. 2022), in integer arithmetic: with
    S = 2^bits, beta = p / q <= e^epsilon and delta = dn / dd exactly,
    N_n = min(floor((p N dd + dn S q) / (q dd)), S - ceil(q (S dd - N dd - dn S) / (p dd)), S)."""
    if not (isinstance(epsilon, float) and math.isfinite(epsilon) and epsilon > 0):
        raise InvalidParameterError(f"the selection's epsilon must be a finite float > 0, got {epsilon!r}")
    if not 0 < delta < 1:
        raise InvalidParameterError(f"the selection's delta must be in (0, 1), got {delta!r}")
    p, q = _noise.exp_lower_rational(epsilon)
    d = Fraction(delta)
    dn, dd = d.numerator, d.denominator
    bits = _probability_bits(d)
    s = 1 << bits
    nums = [0]
    while nums[-1] < s:
        if len(nums) > MAX_STEPS:
            raise InvalidParameterError(
                f"epsilon={epsilon:g} with delta={delta:g} keeps a key with certainty only past {MAX_STEPS:,} users; "
                "give the selection a larger epsilon or delta")
        n = nums[-1]
        up = (p * n * dd + dn * s * q) // (q * dd)
        rest = s * dd - n * dd - dn * s  # (1 - pi - delta) S dd
        down = s - (-(-q * rest // (p * dd))) if rest > 0 else s
        nums.append(min(up, down, s))
    return OptimalPolicy(float(epsilon), float(delta), (p, q), bits, tuple(nums))


def gaussian_tail_bound(sigma2: float, t: int) -> float:
    """An upper bound on P[Z >= t] for Z ~ N_Z(0, sigma2) and an integer t >= 1 (module
    docstring), with a relative margin of 2^-30 for the float evaluation."""
    if t < 1:
        return 1.0
    s2 = float(sigma2)
    num = math.exp(-t * t / (2.0 * s2)) / -math.expm1(-t / s2)
    return min(1.0, num / max(1.0, math.sqrt(2.0 * math.pi * s2)) * (1.0 + 2.0**-30))


def _gaussian_sigma2(epsilon: float, delta: float, m: int) -> tuple[Fraction, str]:
    """sigma^2 for m unit shifts at (epsilon, delta): exact convolution, else the zCDP route."""
    from dptree.privacy.budget import (
        EXACT_GAUSSIAN_MIN_DELTA,
        discrete_gaussian_exact_feasible,
        discrete_gaussian_sigma2_for,
        zcdp_rho_for,
    )

    if delta >= EXACT_GAUSSIAN_MIN_DELTA and discrete_gaussian_exact_feasible(epsilon, delta, m):
        return discrete_gaussian_sigma2_for(epsilon, delta, m), "exact"
    return _noise.gaussian_sigma2_used(m / (2.0 * zcdp_rho_for(epsilon, delta))), "zcdp"


def _threshold(sigma2: Fraction, m: int, delta_new: float) -> int:
    """The smallest integer tau >= 2 with m P[Z >= tau - 1] <= delta_new (by the tail bound)."""
    t = max(1, math.floor(math.sqrt(2.0 * float(sigma2) * max(math.log(m / delta_new), 0.0))) - 2)
    while m * gaussian_tail_bound(float(sigma2), t) > delta_new:
        t += 1
    return t + 1


@functools.lru_cache(maxsize=64)
def gaussian_policy(epsilon: float, delta: float, max_groups: int) -> GaussianPolicy:
    """The Gaussian policy for one user's at most ``max_groups`` keys at (epsilon, delta): for each
    split of :data:`GAUSSIAN_SPLITS`, sigma^2 at (epsilon, split delta) and the smallest threshold
    whose new-key bound is at most (1 - split) delta; the one with the smallest key size kept with
    probability 0.9."""
    m = int(max_groups)
    best: GaussianPolicy | None = None
    for split in GAUSSIAN_SPLITS:
        d1 = delta * split
        d2 = delta - d1
        while Fraction(d1) + Fraction(d2) > Fraction(delta):  # float rounding: the parts within delta
            d2 = math.nextafter(d2, 0.0)
        sigma2, how = _gaussian_sigma2(epsilon, d1, m)
        tau = _threshold(sigma2, m, d2)
        new = min(d2, m * gaussian_tail_bound(float(sigma2), tau - 1))
        pol = GaussianPolicy(float(epsilon), float(delta), m, sigma2, tau, split, d1, new, how)
        if best is None or pol.size_kept_with(0.9) < best.size_kept_with(0.9):
            best = pol
    assert best is not None
    return best


def _share(total: float, m: int) -> float:
    """The largest float x with m x <= ``total`` exactly (float division may round up)."""
    x = total / m
    while m * Fraction(x) > Fraction(total):
        x = math.nextafter(x, 0.0)
    return x


def choose_policy(epsilon: float, delta: float, max_groups: int) -> Policy:
    """The policy for users with at most ``max_groups`` keys at (epsilon, delta) in all: the
    optimal one for one key; for several, the optimal one per key at (epsilon / m, delta / m) or
    the Gaussian one, whichever keeps a key with probability 0.9 at the smaller size."""
    m = int(max_groups)
    if m == 1:
        return optimal_policy(float(epsilon), float(delta))
    per_key = optimal_policy(_share(float(epsilon), m), _share(float(delta), m))
    gauss = gaussian_policy(float(epsilon), float(delta), m)
    return per_key if per_key.size_kept_with(0.9) <= gauss.size_kept_with(0.9) else gauss
