"""Coverage of the intervals of range sums and means (dptree.rangetree.sums_release) over many
releases of one data set: the sum's interval from the sum tree's exact least-squares variance, the
mean's Fieller interval from both trees' exact variances. 1 500 releases per noise family on
skewed data (geometric values, gamma weights; ranges from 23 to 3 000 records); each level-0.95
interval must cover in [0.93, 0.97] (standard error of a coverage about 0.006). The stated
standard error of a sum is checked against the spread of the estimates too."""

from __future__ import annotations

import numpy as np
import pytest

from dptree.data.histograms import leaf_sums
from dptree.rangetree.sums_release import plan_range_sums

RANGES = [(0, 63), (5, 9), (20, 40), (50, 63), (33, 33)]


@pytest.mark.parametrize("noise, budget", [("laplace", {"epsilon": 1.0}), ("gaussian", {"rho": 0.5})])
def test_sum_and_mean_intervals_cover(noise: str, budget: dict) -> None:
    rng = np.random.default_rng(1)
    x = np.minimum(rng.geometric(0.05, 3000), 63)
    w = np.round(rng.gamma(2.0, 10.0, 3000))
    plan = plan_range_sums(lower=0, upper=63, weight_bounds=(0, 100), noise=noise, **budget)
    h, s = leaf_sums(x, plan, plan.grid, weights=w)
    lo, hi = np.array([r[0] for r in RANGES]), np.array([r[1] for r in RANGES])
    sel = [(x >= a) & (x <= b) for a, b in RANGES]
    true_sum = np.array([np.clip(w, 0, 100)[m].sum() for m in sel])
    true_mean = np.array([np.clip(w, 0, 100)[m].mean() for m in sel])
    runs = 1500
    cover_sum, cover_mean = np.zeros(len(RANGES)), np.zeros(len(RANGES))
    sums = np.empty((runs, len(RANGES)))
    stated = None
    for seed in range(runs):
        r = plan.release(h, s, rng=seed)
        a, b = r.sum_ci(lo, hi)
        cover_sum += (a <= true_sum) & (true_sum <= b)
        a, b = r.mean_ci(lo, hi)
        cover_mean += (a <= true_mean) & (true_mean <= b)
        sums[seed] = r.sum(lo, hi)
        stated = r.sum_stderr(lo, hi)
    assert np.all((cover_sum / runs >= 0.93) & (cover_sum / runs <= 0.97)), cover_sum / runs
    assert np.all((cover_mean / runs >= 0.93) & (cover_mean / runs <= 0.97)), cover_mean / runs
    # the exact stderr against the spread of 1 500 estimates (the sample sd is within ~6% at 3 sigma
    # for normal errors; Laplace-tailed ranges vary more)
    assert np.allclose(sums.std(axis=0) / stated, 1.0, atol=0.1)
    assert np.allclose(sums.mean(axis=0), true_sum, atol=4 * stated / np.sqrt(runs))
