"""Privacy audits of the seed-002 mechanisms, each with a deliberately broken variant it must flag."""

from __future__ import annotations

import math

import pytest
from interior_audit import audit_epsilon

from dptree.interior import quantile
from dptree.interior.multisets import MS as _MS
from dptree.interior.sparse_vector import AboveThreshold
from dptree.interior.selection import (
    choosing_mechanism,
    exponential_mechanism,
    ordered_exponential_mechanism,
)
from dptree.interior.treelog import run_treelog as _treelog
from dptree.interior.treelog import treelog_privacy

EPS = 1.0


def _em(scores, src, eps=EPS):
    return exponential_mechanism(scores, epsilon=eps, rng=src)


@pytest.mark.slow
def test_audit_exponential_mechanism_and_flags_doubled_epsilon():
    # scores of sensitivity 1: candidate 0 gains one, every other candidate loses one
    d1 = [0] + [1] * 29
    d2 = [1] + [0] * 29
    assert audit_epsilon(lambda d, s: _em(d, s), d1, d2, 10000, seed=1) <= EPS
    def broken(d, s):
        return _em(d, s, 2 * EPS)
    assert audit_epsilon(broken, d1, d2, 10000, seed=2) > EPS


@pytest.mark.slow
def test_audit_interior_point_em_and_flags_broken_weights():
    d1, d2 = [5], [5, 4]  # add one record; found by exact search as the worst pair on [0, 5]

    def mech(d, s, eps=EPS):
        return ordered_exponential_mechanism(d, lower=0, upper=5, epsilon=eps, rng=s)

    assert audit_epsilon(mech, d1, d2, 10000, seed=3) <= EPS
    def broken(d, s):
        return mech(d, s, 4 * EPS)
    assert audit_epsilon(broken, d1, d2, 10000, seed=4) > EPS


def test_audit_median():
    d1, d2 = [2, 3, 3], [2, 3, 3, 0]

    def mech(d, s):
        return quantile(d, 0.5, lower=0, upper=5, epsilon=EPS, rng=s).value

    assert audit_epsilon(mech, d1, d2, 8000, seed=5) <= EPS


@pytest.mark.slow
def test_audit_choosing_mechanism():
    eps, delta = 1.0, 0.01
    # OPT right at the bottom threshold so that the bottom event is as sensitive as possible
    q = 42

    def mech(d, s):
        return choosing_mechanism(d, epsilon=eps, delta=delta, rng=s)

    assert audit_epsilon(mech, [q, q - 1, 3], [q + 1, q - 1, 3], 4000, seed=6) <= eps + 0.0  # delta ~ 0


@pytest.mark.slow
def test_audit_above_threshold_and_flags_noiseless_variant():
    def run(queries, src, eps=EPS):
        at = AboveThreshold(threshold=3, epsilon=eps, rng=src)
        for i, v in enumerate(queries):
            if at.query(v):
                return i
        return None

    d1 = [3, 3, 3, 3]
    d2 = [2, 2, 2, 4]  # every query moves by 1
    assert audit_epsilon(run, d1, d2, 3000, seed=7) <= EPS

    def noiseless(queries, src):
        for i, v in enumerate(queries):
            if v >= 3:
                return i
        return None

    assert audit_epsilon(noiseless, d1, d2, 1000, seed=8) > EPS


def test_audit_treelog_against_lemma_3_6():
    # a real TreeLog run (one path level + the base EM) with parameters that satisfy Lemma 3.6's
    # conditions (delta0 <= eps0/(4n), t >= (3/eps0) ln(1/delta0)); the claim is the lemma's bound.
    # The bound is loose, so this audit has little power against subtle bugs, but it catches leaks.
    eps0, delta0 = 0.05, 5e-6
    t = 750
    n = 2401  # the larger neighbor
    assert delta0 <= eps0 / (4 * n) and t >= 3 / eps0 * math.log(1 / delta0) and n - 1 > 3 * t
    p = {"eps0": eps0, "delta0": delta0, "t": t, "n_calls": 2}
    d1 = _MS([3, 40], [1200, 1200])
    d2 = _MS([3, 40, 41], [1200, 1200, 1])

    def mech(ms, s):
        return _treelog(ms, 6, p, s)

    claimed, _ = treelog_privacy(eps0, delta0, n, p["n_calls"])
    assert claimed < 6
    assert audit_epsilon(mech, d1, d2, 2000, seed=9) <= claimed

    def leaky(ms, s):  # broken: releases the largest record
        return ms.vals[-1]

    assert audit_epsilon(leaky, d1, d2, 20000, seed=10) > claimed
