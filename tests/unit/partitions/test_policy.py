"""The keep-or-drop policies of private partition selection: the exact law of the optimal policy
satisfies the (epsilon, delta)-DP constraints between every two neighbouring counts (brute force,
in rational arithmetic), a policy that thresholds the true count fails that audit, the exact
Bernoulli draws follow their probabilities, and the Gaussian policy's delta is what it states."""

from __future__ import annotations

import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest

from dptree.noise import SeededRandomSource, bernoulli_dyadic
from dptree.partitions.policy import (
    choose_policy,
    gaussian_policy,
    gaussian_tail_bound,
    optimal_policy,
)
from dptree.privacy.budget import discrete_gaussian_delta


def _exp_upper(epsilon: float) -> Fraction:
    """A rational >= e^epsilon, computed independently of the library (decimal, 60 digits, rounded up)."""
    getcontext().prec = 60
    return Fraction(Decimal(epsilon).exp()) + Fraction(1, 10**50)


def dp_violations(keep: list[Fraction], epsilon: float, delta: float, tail: int = 3) -> list[str]:
    """Every pair of neighbouring counts (n - 1, n) whose keep/drop laws break (epsilon, delta)-DP
    in either direction; counts past the list keep the last probability."""
    e, d = _exp_upper(epsilon), Fraction(delta)
    law = [Fraction(0)] + keep[1:] + [keep[-1]] * tail
    bad = []
    for n in range(1, len(law)):
        a, b = law[n - 1], law[n]
        for name, lhs, rhs in (("kept at n vs n-1", b, e * a + d), ("kept at n-1 vs n", a, e * b + d),
                               ("dropped at n-1 vs n", 1 - a, e * (1 - b) + d),
                               ("dropped at n vs n-1", 1 - b, e * (1 - a) + d)):
            if lhs > rhs:
                bad.append(f"n={n}: {name}")
    return bad


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-6), (0.1, 1e-9), (2.5, 0.01), (0.5, 1e-20), (1e-3, 1e-5)])
def test_the_exact_law_of_the_optimal_policy_is_dp(epsilon: float, delta: float) -> None:
    pol = optimal_policy(epsilon, delta)
    keep = [pol.keep_probability(n) for n in range(pol.always_kept + 1)]
    assert keep[0] == 0 and keep[-1] == 1 and all(a <= b for a, b in zip(keep, keep[1:]))
    assert dp_violations(keep, epsilon, delta) == []
    # and it is the optimal law (Desfontaines et al. 2022, Theorem 1) up to the rounding of each step
    pi = 0.0
    for n in range(1, min(pol.always_kept, 200) + 1):
        pi = min(math.exp(epsilon) * pi + delta, 1 - math.exp(-epsilon) * (1 - pi - delta), 1.0)
        assert abs(float(keep[n]) - pi) <= 1e-9 * max(pi, delta)


def test_a_threshold_on_the_true_count_fails_the_audit() -> None:
    """The planted bug: keep a key when its true count reaches 2 (no randomness)."""
    bug = [Fraction(0), Fraction(0), Fraction(1)]
    assert dp_violations(bug, 1.0, 1e-6) == ["n=2: kept at n vs n-1", "n=2: dropped at n-1 vs n"]
    # so does the optimal law with delta understated by a factor of 2
    pol = optimal_policy(1.0, 2e-6)
    assert dp_violations([pol.keep_probability(n) for n in range(pol.always_kept + 1)], 1.0, 1e-6)


def test_keys_are_kept_at_their_probabilities() -> None:
    pol = optimal_policy(2.0, 0.05)
    src = SeededRandomSource(11)
    n = 60_000
    for count in (0, 1, 2, 3, pol.always_kept, pol.always_kept + 5):
        p = float(pol.keep_probability(count))
        rate = pol.keep(src, np.full(n, count)).mean()
        assert abs(rate - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-12, (count, rate, p)


def test_bernoulli_dyadic_is_exact_at_the_digits() -> None:
    """A word equal to the probability's digit moves on to the next digit; all digits equal is U >= p."""

    class Words:
        private = False

        def __init__(self, words: list[int]) -> None:
            self.data = b"".join(w.to_bytes(4, "little") for w in words)

        def random_bytes(self, n: int) -> bytes:
            out, self.data = self.data[:n], self.data[n:]
            assert len(out) == n
            return out

    p = (5 << 32) | 7  # 64 bits: digits 5, 7
    assert bernoulli_dyadic(Words([4]), [p], 64, np.array([0])).tolist() == [True]
    assert bernoulli_dyadic(Words([6]), [p], 64, np.array([0])).tolist() == [False]
    assert bernoulli_dyadic(Words([5, 6]), [p], 64, np.array([0])).tolist() == [True]
    assert bernoulli_dyadic(Words([5, 7]), [p], 64, np.array([0])).tolist() == [False]
    assert bernoulli_dyadic(Words([]), [0, 1 << 64], 64, np.array([1, 1])).tolist() == [True, True]
    # bits not a multiple of 32: p = 3/4 at 2 bits is the digit 3 << 30
    assert bernoulli_dyadic(Words([(3 << 30) - 1, 3 << 30]), [3], 2, np.array([0, 0])).tolist() == [True, False]
    rate = bernoulli_dyadic(SeededRandomSource(3), [1, 2], 2, np.zeros(40_000, np.int64)).mean()
    assert abs(rate - 0.25) < 5 * math.sqrt(0.25 * 0.75 / 40_000)


def test_gaussian_tail_bound_is_an_upper_bound() -> None:
    for sigma2 in (0.5, 4.0, 38.8, 600.0):
        z = np.arange(-int(60 * math.sqrt(sigma2)) - 5, int(60 * math.sqrt(sigma2)) + 6)
        w = np.exp(-(z * z) / (2 * sigma2))
        w /= w.sum()
        for t in (1, 2, int(2 * math.sqrt(sigma2)) + 1, int(5 * math.sqrt(sigma2)) + 1):
            exact = w[z >= t].sum()
            bound = gaussian_tail_bound(sigma2, t)
            assert exact <= bound <= max(3 * exact, 1e-300) or exact == 0, (sigma2, t, exact, bound)


@pytest.mark.parametrize("m", [4, 16])
def test_the_gaussian_policy_states_its_exact_delta(m: int) -> None:
    pol = gaussian_policy(1.0, 1e-6, m)
    assert Fraction(pol.delta_gaussian) + Fraction(pol.delta_new) <= Fraction(1e-6)
    assert discrete_gaussian_delta(1.0, float(pol.sigma2), m) <= pol.delta_gaussian
    assert m * gaussian_tail_bound(float(pol.sigma2), pol.threshold - 1) <= pol.delta_new
    assert m * gaussian_tail_bound(float(pol.sigma2), pol.threshold - 2) > pol.delta_new * (1 - 1e-9)  # smallest
    src = SeededRandomSource(5)
    counts = np.full(20_000, pol.threshold)
    assert abs(pol.keep(src, counts).mean() - 0.5) < 0.03  # n + Z >= n: a little over one half


def test_the_policy_is_chosen_by_the_size_kept_with_probability_09() -> None:
    assert choose_policy(1.0, 1e-6, 1) is optimal_policy(1.0, 1e-6)
    two = choose_policy(1.0, 1e-6, 2)
    assert type(two).__name__ == "OptimalPolicy" and two.epsilon * 2 <= 1.0 and two.delta * 2 <= 1e-6
    assert type(choose_policy(1.0, 1e-6, 16)).__name__ == "GaussianPolicy"
