"""RangeTree.quantile_ci: the calibrated pivot interval of dptree.rangetree.quantile_calibration,
with the pivot interval as an option (its coverage: tests/statistical/test_quantiles_intervals.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dptree
from dptree import InvalidParameterError
from dptree.rangetree.quantile_calibration import calibration_sims

QS = np.array([0.05, 0.25, 0.5, 0.75, 0.95])


def _lognormal(n: int, D: int, seed: int = 0) -> np.ndarray:
    return np.minimum(np.random.default_rng(seed).lognormal(5, 1, n).astype(np.int64), D - 1)


def test_intervals_hold_their_estimates_and_the_true_quantiles_at_large_epsilon() -> None:
    x = _lognormal(5000, 1024)
    rel = dptree.range_tree(x, lower=0, upper=1023, epsilon=50.0, rng=1)
    lo, hi = rel.quantile_ci(QS, rng=2)
    est = rel.quantile(QS)
    true = np.quantile(x, QS, method="inverted_cdf")
    assert np.all((lo <= est) & (est <= hi))
    assert np.all((lo <= true) & (true <= hi))
    assert np.all(hi - lo <= 8)  # nearly exact counts: a few buckets, not the whole domain


def test_a_seed_reproduces_the_interval_and_the_default_is_kept_per_release() -> None:
    """The calibration's simulation draws noise (post-processing): a seed fixes it; without one,
    the first call's interval is returned again for the same query."""
    rel = dptree.range_tree(_lognormal(1000, 1 << 14), lower=0, upper=(1 << 14) - 1, epsilon=1.0, rng=3)
    a = rel.quantile_ci(QS, rng=11)
    b = rel.quantile_ci(QS, rng=11)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    first = rel.quantile_ci(QS)
    again = rel.quantile_ci(QS)
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    res = rel.quantiles(QS)
    np.testing.assert_array_equal(res.ci_low, first[0])  # quantiles() reads the same intervals
    scalar = rel.quantile_ci(0.5, rng=11)
    assert (scalar[0], scalar[1]) == (a[0][2], a[1][2])


def test_the_default_interval_is_the_same_in_every_process(tmp_path: Any) -> None:
    """Without ``rng`` the simulation is seeded from the release's noisy counts (post-processing): the
    release read back from its file (a new object, as in another process or ``dptree query``) gives
    the same intervals, where two simulation seeds give different ones on this release."""
    g = np.random.default_rng(0)
    rel = dptree.range_tree(g.lognormal(5, 1, 2000).astype(int), lower=0, upper=65535, epsilon=1.0, rng=1)
    qs = [0.05, 0.25, 0.5, 0.75, 0.95]
    seeded = [rel.quantile_ci(qs, rng=100 + r) for r in range(2)]
    assert any(not np.array_equal(seeded[0][i], seeded[1][i]) for i in (0, 1))  # the test has power
    rel.save(tmp_path / "r.json", allow_nonprivate=True)
    back = dptree.load(tmp_path / "r.json")
    for got, want in zip(back.quantile_ci(qs), rel.quantile_ci(qs)):
        np.testing.assert_array_equal(got, want)


def test_calibration_narrows_the_pivot_interval_on_spread_data() -> None:
    """The pivot interval over-covers (an end fails only when a run of tests errs); the calibrated
    one is narrower on average over the levels of spread data (docs/notes/quantiles.md)."""
    x = np.random.default_rng(4).integers(0, 1024, 1000)
    width = {"calibrated": 0.0, "pivot": 0.0}
    for r in range(6):
        rel = dptree.range_tree(x, lower=0, upper=1023, epsilon=1.0, rng=r)
        for k in width:
            lo, hi = rel.quantile_ci(QS, interval=k, rng=100 + r)
            width[k] += float(np.sum(hi - lo + 1))
    assert width["calibrated"] < 0.9 * width["pivot"], width


def test_past_the_calibration_limit_the_pivot_interval_is_kept() -> None:
    D = 1 << 21
    assert calibration_sims(D) == 0
    rel = dptree.range_tree(_lognormal(2000, D), lower=0, upper=D - 1, epsilon=1.0, rng=5)
    cal, piv = rel.quantile_ci(QS, rng=6), rel.quantile_ci(QS, interval="pivot")
    np.testing.assert_array_equal(cal[0], piv[0])
    np.testing.assert_array_equal(cal[1], piv[1])


def test_bad_interval_options_are_refused_by_name() -> None:
    rel = dptree.range_tree([1, 2, 3], lower=0, upper=9, epsilon=1.0, rng=0)
    with pytest.raises(InvalidParameterError, match="interval"):
        rel.quantile_ci(0.5, interval="band")
    with pytest.raises(InvalidParameterError, match="rng"):
        rel.quantile_ci(0.5, rng="seed")
    with pytest.raises(InvalidParameterError, match="reproducibility only") as bad_seed:
        rel.quantile_ci(0.5, rng=-1)
    assert "not private" not in str(bad_seed.value)  # the simulation's seed does not touch the release


def test_intervals_hold_their_estimates_on_sparse_data() -> None:
    """150 records over 2^14 buckets: the calibrated factors are negative, and such an interval
    can miss its own estimate without the widening (several of these releases do)."""
    x = np.sort(np.random.default_rng(5).integers(0, 2**14, 150))
    for s in range(8):
        rel = dptree.range_tree(x, lower=0, upper=2**14 - 1, epsilon=1.0, rng=s)
        lo, hi = rel.quantile_ci(QS, rng=s)
        est = rel.quantile(QS)
        assert np.all((lo <= est) & (est <= hi)), s
