"""JointExp's sampled output law against its exact law by enumeration (tiny domain), chi-square at
significance 1e-6, with power: the same sample is rejected against the law of the paper's
utility without the tie-aware rank, against the law at 1.5 epsilon, and (one level, add/remove
sensitivity 1) against the law at sensitivity 2."""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy.stats import chi2

from dptree.noise import make_source
from dptree.quantiles.joint import joint_exponential

ALPHA = 1e-6


def add_remove_sensitivity(qs: list[Fraction]) -> Fraction:
    """2 (1 - min(q_1, q_j - q_{j-1}, 1 - q_m)) (Gillenwater, Joseph & Kulesza 2021)."""
    return 2 * (1 - min(b - a for a, b in zip([Fraction(0)] + qs, qs + [Fraction(1)])))


def law(data: tuple[int, ...], qs: list[Fraction], span: int, eps: float, tie_aware: bool = True,
        delta: Fraction | None = None) -> dict:
    """P(o) proportional to exp(eps / (2 delta) u(o)) over sorted o (counting measure), delta the
    add/remove sensitivity unless given; no clamp binds here."""
    n = len(data)
    a = eps / (2 * float(add_remove_sensitivity(qs) if delta is None else delta))
    logw = {}
    for o in itertools.combinations_with_replacement(range(span), len(qs)):
        e = [Fraction(0)]
        for q, y in zip(qs, o):
            ties = sum(x == y for x in data) if tie_aware else 0
            e.append(sum(x < y for x in data) + q * ties - q * n)
        e.append(Fraction(0))
        logw[o] = a * float(-sum(abs(y - x) for x, y in zip(e, e[1:])))
    z = np.logaddexp.reduce(np.array(list(logw.values())))
    return {o: float(np.exp(w - z)) for o, w in logw.items()}


def chi2_pvalue(counts: Counter, probs: dict, total: int) -> float:
    """Cells sorted by probability, the smallest pooled until each expects >= 20."""
    cells, obs, exp_ = [], 0, 0.0
    for o in sorted(probs, key=probs.get):  # type: ignore[arg-type]
        obs += counts.get(o, 0)
        exp_ += probs[o] * total
        if exp_ >= 20:
            cells.append((obs, exp_))
            obs, exp_ = 0, 0.0
    if cells and exp_ > 0:
        o_last, e_last = cells.pop()
        cells.append((o_last + obs, e_last + exp_))
    stat = sum((o - e) ** 2 / e for o, e in cells)
    return float(chi2.sf(stat, len(cells) - 1))


def _sampled(total: int, span: int, eps: float, src: Any, dither: int = 1,
             qs: tuple[float, ...] = (0.5, 0.5)) -> Counter:
    """Counts of ``total`` JointExp outputs on the data (0, 0, 4) at the levels ``qs``."""
    counts: Counter = Counter()
    for _ in range(total):
        o = joint_exponential(np.array([0, 4]), np.array([2, 1]), np.array(qs), lower=0, upper=span - 1,
                              epsilon=eps, rng=src, dither=dither)
        counts[tuple(int(v) for v in o)] += 1
    return counts


@pytest.mark.slow
def test_sampled_law_matches_exact_law_with_power() -> None:
    # a tie block of 2 at 0, a gap of length 3 (runs of 2 outputs inside it), a value at 4
    data, span, eps = (0, 0, 4), 6, 3.0
    qs = [Fraction(1, 2), Fraction(1, 2)]
    total = 3000
    counts = _sampled(total, span, eps, make_source(20261123))
    exact = law(data, qs, span, eps * (1 - 1e-4))  # the run epsilon is within 1e-4 of eps
    assert chi2_pvalue(counts, exact, total) > ALPHA
    assert chi2_pvalue(counts, law(data, qs, span, eps, tie_aware=False), total) < ALPHA
    assert chi2_pvalue(counts, law(data, qs, span, 1.5 * eps), total) < ALPHA


@pytest.mark.slow
def test_sampled_law_at_the_add_remove_sensitivity() -> None:
    """One level 1/2: add/remove sensitivity 1, so P(o) ~ exp(eps u(o) / 2); the sample is rejected
    against the law at sensitivity 2 (exp(eps u(o) / 4))."""
    data, span, eps = (0, 0, 4), 6, 1.5
    qs = [Fraction(1, 2)]
    total = 3000
    counts = _sampled(total, span, eps, make_source(20261125), qs=(0.5,))
    assert chi2_pvalue(counts, law(data, qs, span, eps * (1 - 1e-4)), total) > ALPHA
    assert chi2_pvalue(counts, law(data, qs, span, eps, delta=Fraction(2)), total) < ALPHA


def dithered_law(data: tuple[int, ...], qs: list[Fraction], span: int, eps: float, k: int) -> dict:
    """The exact law of the dithered release: the average over all k^n draws u of the law of
    JointExp on the keys x k + u, its outputs mapped back to floor(o / k)."""
    out: dict = {}
    draws = list(itertools.product(range(k), repeat=len(data)))
    for u in draws:
        keys = tuple(sorted(x * k + d for x, d in zip(data, u)))
        for o, p in law(keys, qs, span * k, eps).items():
            back = tuple(v // k for v in o)
            out[back] = out.get(back, 0.0) + p / len(draws)
    return out


@pytest.mark.slow
def test_dithered_sampled_law_matches_exact_law_with_power() -> None:
    """joint_exponential(dither=2) against the exact average over every dither outcome; the same
    sample is rejected against the undithered law (the tie block at 0 is what differs)."""
    data, span, eps, k = (0, 0, 4), 6, 3.0, 2
    qs = [Fraction(1, 2), Fraction(1, 2)]
    total = 3000
    counts = _sampled(total, span, eps, make_source(20261124), dither=k)
    exact = dithered_law(data, qs, span, eps * (1 - 1e-4), k)
    assert chi2_pvalue(counts, exact, total) > ALPHA
    assert chi2_pvalue(counts, law(data, qs, span, eps), total) < ALPHA
