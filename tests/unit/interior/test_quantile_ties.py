"""The tie-aware exponential mechanism for quantiles:
dptree.interior.selection.quantile_exponential_mechanism and the quantile/median paths on it.

* the score -dist(a n, [b #{x < y}, b #{x <= y}]) against a brute-force definition;
* its sensitivity b, by brute force over all neighboring pairs (add/remove and replace) of small
  data sets on tiny domains: the bound holds and is attained;
* the output law of ``quantile`` against the closed form P(y) ~ beta^score(y) computed exactly
  with dptree's rational base (chi-square), with power against the legacy score;
* on tied data the tied value whose block holds the target rank is returned;
* saved releases: the new statement round-trips, the legacy one still loads, others are refused.
"""

from __future__ import annotations

import collections
import copy
import itertools
from fractions import Fraction

import pytest
from scipy import stats

from dptree import load
from dptree.errors import DPTreeError, ReleaseFileError
from dptree.interior import quantiles as QM
from dptree.interior.quantiles import median, quantile
from dptree.interior.selection import (
    exponential_base,
    quantile_exponential_mechanism,
    quantile_level,
    quantile_score_intervals,
)
from dptree.noise import make_source

LEVELS = (Fraction(1, 2), Fraction(1, 10), Fraction(9, 10), Fraction(1, 3), Fraction(0), Fraction(1))


def _score(data, y, level):
    """The tie-aware score from its definition: -b * dist(q n, [#{x < y}, #{x <= y}])."""
    a, b = level.numerator, level.denominator
    lo, hi = b * sum(x < y for x in data), b * sum(x <= y for x in data)
    t = a * len(data)
    return 0 if lo <= t <= hi else -min(abs(t - lo), abs(t - hi))


def _grouped(data):
    vals = sorted(set(data))
    return vals, [data.count(v) for v in vals]


def _neighbors(data, dom, relation):
    if relation == "add_remove":
        for x in dom:
            yield data + [x]
        for i in range(len(data)):
            yield data[:i] + data[i + 1 :]
    else:
        for i in range(len(data)):
            for x in dom:
                yield data[:i] + [x] + data[i + 1 :]


@pytest.mark.parametrize("level", LEVELS)
def test_score_blocks_match_the_definition(level):
    dom = range(-1, 6)
    for m in range(0, 5):
        for data in itertools.combinations_with_replacement(range(5), m):
            data = list(data)
            vals, cnt = _grouped(data)
            covered = []
            for s, e, sc in quantile_score_intervals(vals, cnt, -1, 5, level):
                for y in range(s, e + 1):
                    assert sc == _score(data, y, level), (data, y)
                    covered.append(y)
            assert covered == list(dom)


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_score_sensitivity_is_the_denominator_brute_force(relation):
    """|score(D, y) - score(D', y)| <= b for all neighbors D, D' and all y: the sensitivity
    quantile() calibrates with (exponential_base(eps, b)) under both relations. Tight: = b under
    replace; under add/remove exactly max(a, b - a) (the proof's bound, which the calibration does
    not use so that one statement covers both relations)."""
    dom = range(4)
    for level in LEVELS:
        b = level.denominator
        worst = 0
        for m in range(0, 6):
            for data in itertools.combinations_with_replacement(dom, m):
                data = list(data)
                for nb in _neighbors(data, dom, relation):
                    for y in range(-1, 5):
                        worst = max(worst, abs(_score(data, y, level) - _score(nb, y, level)))
        a = level.numerator
        assert worst <= b
        assert worst == (b if relation == "replace" else max(a, b - a)), (relation, level, worst)


def _exact_law(data, level, lower, upper, eps):
    """P(y) ~ (p/q)^score(y) over [lower, upper], exactly, with the base quantile() uses."""
    p, q = exponential_base(eps, level.denominator)
    beta = Fraction(p, q)
    sc = {y: _score(data, y, level) for y in range(lower, upper + 1)}
    top = max(sc.values())
    w = {y: beta ** (s - top) for y, s in sc.items()}
    z = sum(w.values())
    return {y: wy / z for y, wy in w.items()}


def _legacy_law(data, level, lower, upper, eps):
    a, b = level.numerator, level.denominator
    p, q = exponential_base(eps, b)
    sc = {y: -abs(b * sum(x <= y for x in data) - a * len(data)) for y in range(lower, upper + 1)}
    top = max(sc.values())
    w = {y: Fraction(p, q) ** (s - top) for y, s in sc.items()}
    z = sum(w.values())
    return {y: wy / z for y, wy in w.items()}


@pytest.mark.parametrize("q,eps", [(0.5, 1.0), (0.3, 2.0)])
def test_quantile_output_law_is_the_closed_form(q, eps):
    data = [1, 2, 2, 2, 5, 5, 6]
    lower, upper = 0, 9
    level = quantile_level(q)
    law = _exact_law(data, level, lower, upper, eps)
    draws, src = 20000, make_source(7)
    c = collections.Counter(
        quantile_exponential_mechanism(data, q=q, lower=lower, upper=upper, epsilon=eps, rng=src) for _ in range(draws)
    )
    ys = list(range(lower, upper + 1))
    assert set(c) <= set(ys)
    expected = [draws * float(law[y]) for y in ys]
    assert stats.chisquare([c[y] for y in ys], expected).pvalue > 1e-6
    # power: the legacy score's law is rejected by the same test on the same draws
    old = _legacy_law(data, level, lower, upper, eps)
    assert stats.chisquare([c[y] for y in ys], [draws * float(old[y]) for y in ys]).pvalue < 1e-12


def test_mechanism_with_counts_matches_the_closed_form():
    """Direct call with multiplicities (how the engines hand data over): P(tied value) exactly."""
    vals, cnt = [3, 7], [40, 60]
    eps, draws = 0.5, 4000
    data = [3] * 40 + [7] * 60
    law = _exact_law(data, Fraction(1, 2), 0, 9, eps)
    hits = sum(
        quantile_exponential_mechanism(vals, counts=cnt, q=0.5, lower=0, upper=9, epsilon=eps, rng=s) == 7
        for s in range(draws)
    )
    p7 = float(law[7])
    assert 0.5 < p7 < 0.9  # the gap [4, 6] next to the block is 10 ranks from q n: a real alternative
    assert stats.binomtest(hits, draws, p7).pvalue > 1e-6


def test_tied_value_holding_the_target_rank_is_returned():
    """Three tie blocks on a wide domain, q n = 150 inside the block of 10: the legacy score gave
    10 and the empty gap above it (rank 200) the same score as [5, 9] (rank 100); now 10 wins."""
    data = [5] * 100 + [10] * 100 + [20] * 100
    outs = [median(data, lower=0, upper=2**20, epsilon=1.0, rng=s).value for s in range(200)]
    assert outs.count(10) == 200
    # q n = 100 at the edge of two blocks: every y with rank interval touching 100 scores 0
    outs = [quantile(data, 1 / 3, lower=0, upper=30, epsilon=1.0, rng=s).value for s in range(200)]
    assert all(5 <= y <= 10 for y in outs)


def test_empty_data_and_extreme_levels():
    assert 0 <= quantile([], 0.5, lower=0, upper=10, epsilon=1.0, rng=1).value <= 10
    data = [4] * 50 + [8] * 50
    assert {quantile(data, 0.0, lower=0, upper=10, epsilon=1.0, rng=s).value for s in range(50)} <= set(range(5))
    assert {quantile(data, 1.0, lower=0, upper=10, epsilon=1.0, rng=s).value for s in range(50)} <= set(range(8, 11))


def test_mechanism_validates_its_parameters():
    with pytest.raises(DPTreeError, match="q must be"):
        quantile_exponential_mechanism([1], q=1.5, lower=0, upper=3, epsilon=1.0, rng=1)
    with pytest.raises(DPTreeError):
        quantile_exponential_mechanism([5], q=0.5, lower=0, upper=3, epsilon=1.0, rng=1)
    with pytest.raises(DPTreeError):
        quantile_exponential_mechanism([1], q=0.5, lower=3, upper=0, epsilon=1.0, rng=1)


def test_every_quantile_path_uses_the_one_mechanism(monkeypatch):
    calls = []
    orig = QM.quantile_exponential_mechanism

    def spy(*args, **kwargs):
        calls.append(kwargs["q"])
        return orig(*args, **kwargs)

    monkeypatch.setattr(QM, "quantile_exponential_mechanism", spy)
    median([1, 2, 3], lower=0, upper=9, epsilon=1.0, rng=1)
    quantile([1, 2, 3], 0.25, lower=0, upper=9, epsilon=1.0, rng=1)
    assert calls == [0.5, 0.25]


def test_saved_statement_round_trips_and_legacy_statement_loads(tmp_path):
    r = quantile([1, 2, 2, 3] * 10, 0.5, lower=0, upper=9, epsilon=1.0, rng=1)
    assert "tie-aware" in r.privacy["mechanism"]
    doc = copy.deepcopy(r.to_document())
    assert QM.QuantileRelease.from_document(doc).value == r.value
    doc["privacy"]["mechanism"] = QM._LEGACY_MECHANISM
    assert QM.QuantileRelease.from_document(doc).privacy["mechanism"] == QM._LEGACY_MECHANISM
    doc["privacy"]["mechanism"] = "single quantile: something else"
    with pytest.raises(ReleaseFileError, match="statement"):
        QM.QuantileRelease.from_document(doc)
    path = tmp_path / "q.json"
    r.save(path, allow_nonprivate=True)
    assert load(path).value == r.value
