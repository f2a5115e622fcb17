"""The top-rank tie-aware exponential mechanism: sensitivity 1 and epsilon-DP by brute force over
all neighbouring multisets of small domains, and the sampler follows the stated law exactly."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dptree.interior.selection import effective_epsilon, exponential_base, rank_blocks
from dptree.interior.top_rank import top_rank_law, top_rank_mechanism
from dptree.noise import make_source

LO, HI = 0, 4


def _multisets(size: int, top: int):
    for n in range(size + 1):
        yield from itertools.combinations_with_replacement(range(LO, top + 1), n)


def _badness(values: tuple[int, ...], above: int) -> np.ndarray:
    vals, cnt = np.unique(np.asarray(values, dtype=np.int64), return_counts=True)
    out = np.zeros(HI - LO + 1, np.int64)
    rank = len(values) - above
    for s, e, below, upto in rank_blocks(vals.tolist(), cnt.tolist(), LO, HI):
        out[s - LO:e - LO + 1] = max(below - rank, 0, rank - upto)
    return out


@pytest.mark.parametrize("above", [0, 1, 2, 5])
def test_the_score_moves_by_at_most_one_when_a_value_is_added(above: int) -> None:
    attained = False
    for d0 in _multisets(5, HI):
        b0 = _badness(d0, above)
        for v in range(LO, HI + 1):
            b1 = _badness(tuple(sorted(d0 + (v,))), above)
            move = np.abs(b1 - b0).max()
            assert move <= 1, (d0, v)
            attained |= move == 1
            # the score at y is -dist(above, [#{x > y}, #{x >= y}])
            d = np.asarray(d0, dtype=np.int64)
            for y in range(LO, HI + 1):
                gt, ge = int((d > y).sum()), int((d >= y).sum())
                assert b0[y - LO] == max(gt - above, 0, above - ge)
    assert attained


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("above", [0, 2, 4])
def test_epsilon_dp_by_brute_force(epsilon: float, above: int) -> None:
    """The exact law on every multiset of up to 5 values in [0, 4] and every neighbour (one value
    added): max |log P0(y) / P1(y)| <= epsilon' (the spent epsilon, <= epsilon), and the bound is
    approached on some pair."""
    spent = effective_epsilon(exponential_base(epsilon, 1), 1)
    assert spent <= epsilon
    worst = 0.0
    for d0 in _multisets(5, HI):
        p0 = top_rank_law(np.asarray(d0, dtype=np.int64), above=above, lower=LO, upper=HI, epsilon=epsilon)
        for v in range(LO, HI + 1):
            d1 = np.asarray(sorted(d0 + (v,)), dtype=np.int64)
            p1 = top_rank_law(d1, above=above, lower=LO, upper=HI, epsilon=epsilon)
            worst = max(worst, float(np.abs(np.log(p0) - np.log(p1)).max()))
    assert worst <= spent + 1e-9
    assert worst > 0.4 * spent


def test_the_law_is_beta_to_the_score() -> None:
    p, q = exponential_base(1.0, 1)
    law = top_rank_law(np.array([0, 1, 1, 3], np.int64), above=1, lower=0, upper=4, epsilon=1.0)
    # #{x > y}, #{x >= y} for y = 0..4: (3,4) (1,3) (1,1) (0,1) (0,0); distance to 1: 2 0 0 0 1
    w = np.array([(q / p) ** b for b in (2, 0, 0, 0, 1)])
    np.testing.assert_allclose(law, w / w.sum(), rtol=1e-12)


@pytest.mark.parametrize("vector", [True, False])
def test_the_sampler_follows_the_law(vector: bool) -> None:
    values = np.array([0, 1, 2, 5, 9], np.int64)
    counts = np.array([40, 25, 9, 3, 1], np.int64)
    args = dict(above=5, lower=0, upper=11, epsilon=0.8)
    law = top_rank_law(values, counts=counts, **args)
    src = make_source(11)
    vals = values if vector else values.tolist()  # the vectorised blocks, and the list path
    cnts = counts if vector else counts.tolist()
    n = 20_000
    draws = np.bincount([top_rank_mechanism(vals, counts=cnts, rng=src, **args) for _ in range(n)], minlength=12)
    keep = law * n >= 5
    observed = np.append(draws[keep], draws[~keep].sum())
    expected = np.append(law[keep] * n, law[~keep].sum() * n)
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    assert stats.chisquare(observed, expected).pvalue > 1e-4


def test_no_values_is_uniform_and_bad_arguments_are_refused() -> None:
    law = top_rank_law(np.zeros(0, np.int64), above=3, lower=2, upper=6, epsilon=1.0)
    np.testing.assert_allclose(law, np.full(5, 0.2))
    assert 2 <= top_rank_mechanism(np.zeros(0, np.int64), above=3, lower=2, upper=6, epsilon=1.0, rng=1) <= 6
    from dptree.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="above"):
        top_rank_mechanism([1], above=-1, lower=0, upper=3, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="lower"):
        top_rank_mechanism([1], above=1, lower=3, upper=0, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="epsilon"):
        top_rank_mechanism([1], above=1, lower=0, upper=3, epsilon=0.0)
    assert math.isclose(top_rank_law([1], above=0, lower=1, upper=1, epsilon=1.0)[0], 1.0)
