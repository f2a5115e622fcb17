"""Range trees with sums (dptree.rangetree.sums, sums_release): the weight grid, the sensitivity of
the sum tree by brute force through the data path, the budget split's claim, exact answers at a
huge budget, save/load and the refusals. Coverage over many releases: test_sums_coverage.py."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

import dptree
from dptree.data.histograms import leaf_histogram, leaf_sums
from dptree.data.weights import WeightGrid
from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.noise import make_source
from dptree.rangetree.sums import sum_share_for
from dptree.rangetree.sums_release import RangeSums, plan_range_sums


# --------------------------------------------------------------------------- the grid
def test_grid_rounds_halves_up_and_clamps() -> None:
    g = WeightGrid.of(-2, 10, 0.5)
    assert (g.lower_units, g.upper_units, g.sensitivity, g.cells) == (-4, 20, 20, 25)
    w = np.array([0.24, 0.25, 0.26, -0.25, 3.0, 1e9, -1e9, 9.99])
    assert g.units(w).tolist() == [0, 1, 1, 0, 6, 20, -4, 20]
    cents = WeightGrid.of(0, 100, 0.01)
    assert cents.units(np.array([0.07, 19.99, 100.004])).tolist() == [7, 1999, 10000]


@pytest.mark.parametrize("bounds, res", [((0, 10.25), 0.5), ((5, 5), 1), ((3, 1), 1), ((0, 1), 0), ((0, 2**50), 1)])
def test_grid_refuses_bounds_off_the_grid_or_empty(bounds: tuple, res: float) -> None:
    with pytest.raises(InvalidParameterError):
        WeightGrid.of(*bounds, res)


# --------------------------------------------------------------------------- sensitivity, by brute force
def _level_values(plan, hist: np.ndarray) -> list[np.ndarray]:  # type: ignore[no-untyped-def]
    return plan.layout.level_counts(np.asarray(hist, dtype=np.int64))


@pytest.mark.parametrize("bounds", [(0, 3), (-5, 2), (1, 4)])
def test_sum_tree_sensitivity_is_tight_over_all_record_neighbors(bounds: tuple) -> None:
    """Every dataset of up to two records (values 0..3, raw weights at, inside and far beyond the
    bounds) and every added record: the largest change of each level of the sum tree, computed
    through leaf_sums (grid, clamp), equals the stated k * M units, and no pair exceeds it."""
    plan = plan_range_sums(lower=0, upper=3, branching=2, epsilon=1.0, weight_bounds=bounds)
    raw = [bounds[0], bounds[1], 0.4, -1e6, 1e6]
    records = [(v, w) for v in range(4) for w in raw]
    worst = np.zeros(plan.layout.depth + 1)
    for n in range(3):
        for base in itertools.combinations_with_replacement(records, n):
            for extra in records:
                sums = []
                for rows in (list(base), list(base) + [extra]):
                    x = np.array([r[0] for r in rows], dtype=np.int64)
                    w = np.array([r[1] for r in rows], dtype=np.float64)
                    sums.append(_level_values(plan, leaf_sums(x, plan, plan.grid, weights=w)[1]))
                for j, (a, b) in enumerate(zip(*sums)):
                    worst[j] = max(worst[j], np.abs(a - b).sum())
    m = max(abs(bounds[0]), abs(bounds[1]))
    assert worst.tolist() == [m] * (plan.layout.depth + 1)
    assert plan.statement["weights"]["sum_level_sensitivity_units"] == m
    # the privacy loss lists the same sensitivity on every sum level
    sums_steps = [s for s in plan.privacy_loss().measurements if s.label.startswith("sum level")]
    assert sums_steps and all(float(s.sensitivity) == m for s in sums_steps)


def test_sum_tree_sensitivity_of_one_user_is_k_times_m() -> None:
    """One user with up to 4 records at the weight bounds, bounded to k = 2: each sum level moves
    by at most k * M; the count levels by at most k."""
    k, bounds = 2, (-3, 5)
    plan = plan_range_sums(lower=0, upper=3, branching=2, epsilon=1.0, weight_bounds=bounds, max_contributions=k)
    base = ([0, 3, 1], [5.0, -3.0, 2.0], [1, 2, 3])
    worst_s, worst_c = 0.0, 0.0
    for size in range(1, 5):
        for user in itertools.combinations_with_replacement([(v, w) for v in range(4) for w in (-3.0, 5.0, 1e3)],
                                                            size):
            x1 = base[0] + [r[0] for r in user]
            w1 = base[1] + [r[1] for r in user]
            u1 = base[2] + [9] * size
            for seed in (0, 1):
                h0, s0 = leaf_sums(np.array(base[0]), plan, plan.grid, weights=np.array(base[1]),
                                   user_id=np.array(base[2]), rng=seed)
                h1, s1 = leaf_sums(np.array(x1), plan, plan.grid, weights=np.array(w1), user_id=np.array(u1), rng=seed)
                for a, b in zip(_level_values(plan, s0), _level_values(plan, s1)):
                    worst_s = max(worst_s, float(np.abs(a - b).sum()))
                for a, b in zip(_level_values(plan, h0), _level_values(plan, h1)):
                    worst_c = max(worst_c, float(np.abs(a - b).sum()))
    assert worst_s == k * 5 and worst_c == k
    assert plan.sums.statement["levels"][0]["l1_sensitivity"] == k * 5


# --------------------------------------------------------------------------- the budget split
def test_split_spends_the_budget_and_follows_the_rule() -> None:
    plan = plan_range_sums(lower=0, upper=99, epsilon=1.0, weight_bounds=(0, 100))
    assert plan.share == sum_share_for(plan.grid, "laplace") == Fraction(614, 1000)
    assert plan.privacy_loss().epsilon() <= 1.0
    assert plan.statement["budget_spent"]["epsilon"] == pytest.approx(1.0, abs=1e-5)
    g = plan_range_sums(lower=0, upper=99, rho=0.5, noise="gaussian", weight_bounds=(0, 100))
    assert g.share == Fraction(667, 1000) and g.privacy_loss().rho() <= 0.5
    assert sum_share_for(WeightGrid.of(-10, 10), "laplace") == Fraction(9, 10)  # mean 0: capped


@pytest.mark.parametrize("noise, budget", [("laplace", {"epsilon": 1.0}), ("gaussian", {"rho": 0.5})])
def test_default_split_minimises_the_typical_mean_variance(noise: str, budget: dict) -> None:
    """The claim of the rule: at a range whose mean is the bounds' midpoint, the delta-method
    variance of the mean from the plans' exact variances is smallest at the chosen share (against
    shares 0.05 either side)."""
    def mean_var(share: float | None) -> float:
        p = plan_range_sums(lower=0, upper=255, weight_bounds=(0, 100), sum_share=share, noise=noise,
                            branching=4, **budget)
        ns, ss = p.counts.expected_error(10, 99) ** 2, p.sums.expected_error(10, 99) ** 2
        return ss + 50.0**2 * ns  # times 1 / N^2, the same for every share

    best = plan_range_sums(lower=0, upper=255, weight_bounds=(0, 100), noise=noise, branching=4, **budget).share
    v = mean_var(None)
    assert v < mean_var(float(best) - 0.05) and v < mean_var(float(best) + 0.05)


# --------------------------------------------------------------------------- answers
def _data(n: int = 20_000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 100, n)
    return x, np.round(rng.uniform(0, 40, n) + 0.5 * x, 2)


def test_huge_budget_answers_the_exact_sums_and_means() -> None:
    x, w = _data()
    r = dptree.range_tree(x, lower=0, upper=99, epsilon=1e6, weights=w, weight_bounds=(0, 100),
                          weight_resolution=0.01, rng=3)
    assert isinstance(r, RangeSums)
    for lo, hi in [(0, 99), (10, 19), (37, 37)]:
        sel = (x >= lo) & (x <= hi)
        assert r.sum(lo, hi) == pytest.approx(w[sel].sum(), abs=0.05)
        assert r.mean(lo, hi) == pytest.approx(w[sel].mean(), abs=1e-4)
        lo_ci, hi_ci = r.mean_ci(lo, hi)
        assert lo_ci - 1e-9 <= w[sel].mean() <= hi_ci + 1e-9
    h = r.histogram([0, 50, 100]).to_frame()
    assert h["sum"].tolist() == pytest.approx([w[x < 50].sum(), w[x >= 50].sum()], abs=0.05)
    f = r.to_frame()
    assert list(f.columns[-8:]) == ["sum", "sum_stderr", "sum_ci_low", "sum_ci_high", "mean", "mean_stderr",
                                    "mean_ci_low", "mean_ci_high"]
    assert f["sum"].sum() == pytest.approx(w.sum(), abs=0.5)


def test_weights_beyond_the_bounds_are_clamped_and_invalid_ones_follow_the_policy() -> None:
    x = np.array([1, 2, 3, 4])
    w = np.array([-5.0, 50.0, 250.0, np.nan])
    with pytest.raises(dptree.errors.DataError):
        dptree.range_tree(x, lower=0, upper=9, epsilon=1e6, weights=w, weight_bounds=(0, 100), rng=0)
    r = dptree.range_tree(x, lower=0, upper=9, epsilon=1e6, weights=w, weight_bounds=(0, 100), on_invalid="drop",
                          rng=0)
    assert round(r.sum(0, 9)) == 150 and round(r.count(0, 9)) == 3


def test_dataframe_column_and_user_bounding() -> None:
    import pandas as pd

    df = pd.DataFrame({"age": [20, 20, 20, 30, 40], "revenue": [10, 10, 10, 5, 7], "user": [1, 1, 1, 2, 3]})
    r = dptree.range_tree(df, column="age", weights="revenue", weight_bounds=(0, 10), user_id="user",
                          max_contributions=2, lower=0, upper=99, epsilon=1e6, rng=1)
    assert round(r.count(0, 99)) == 4 and round(r.sum(0, 99)) == 32
    assert r.weights == "revenue"


def test_count_release_without_weights_is_unchanged() -> None:
    """range_tree without weights draws exactly the noise of the count plan's own measurement from
    the same seed (the sum tree adds nothing to it)."""
    x, _ = _data(2_000)
    r = dptree.range_tree(x, lower=0, upper=99, epsilon=1.0, rng=11)
    assert type(r) is dptree.RangeTree
    plan = dptree.plan_range_tree(lower=0, upper=99, epsilon=1.0)
    src = make_source(11)
    meas = plan.measure(leaf_histogram(x, plan, rng=src), src)
    for a, b in zip(r.measurements, meas):
        assert (a is None and b is None) or np.array_equal(a, b)


def test_sum_tree_draws_after_the_count_tree_from_one_source() -> None:
    x, w = _data(2_000)
    plan = plan_range_sums(lower=0, upper=99, epsilon=1.0, weight_bounds=(0, 100))
    h, s = leaf_sums(x, plan, plan.grid, weights=w)
    r = plan.release(h, s, rng=4)
    src = make_source(4)
    counts = plan.counts.measure(h, src)
    sums = plan.sums.measure(s, src)
    assert all(np.array_equal(a, b) for a, b in zip(r.measurements[1:], counts[1:]))
    assert all(np.array_equal(a, b) for a, b in zip(r.sum_measurements[1:], sums[1:]))


def test_negative_sums_of_a_unit_grid_are_measured() -> None:
    """Bounds (-1, 1): one record moves a sum by one unit, as a count, and sums may be negative."""
    x, w = np.array([1, 1, 2]), np.array([-1.0, -1.0, 1.0])
    r = dptree.range_tree(x, lower=0, upper=3, epsilon=1e6, weights=w, weight_bounds=(-1, 1), rng=0)
    assert round(r.sum(0, 1)) == -2 and round(r.sum(0, 3)) == -1 and r.mean(1, 1) == pytest.approx(-1.0)
    assert all(s.label.startswith(("level", "sum level")) for s in r.sum_plan.privacy_loss().measurements)
    assert sum(s.label.startswith("sum level") for s in r.sum_plan.privacy_loss().measurements) == \
        sum(p is not None for p in r.sum_plan.sums.noise_parameters)


def test_mean_interval_is_the_bounds_without_a_significant_count() -> None:
    r = dptree.range_tree(np.array([5]), lower=0, upper=999, epsilon=0.01, weights=np.array([3.0]),
                          weight_bounds=(0, 10), rng=2)
    lo, hi = r.mean_ci(5, 5)
    assert (lo, hi) == (0.0, 10.0)
    assert 0.0 <= r.mean(5, 5) <= 10.0


# --------------------------------------------------------------------------- files
def test_save_and_load_round_trip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    x, w = _data(3_000)
    r = dptree.range_tree(x, lower=0, upper=99, epsilon=1.0, weights=w, weight_bounds=(0, 100),
                          weight_resolution=0.5, sum_share=0.7, rng=5)
    path = tmp_path / "r.json"
    r.save(path, allow_nonprivate=True)
    back = dptree.load(path)
    assert isinstance(back, RangeSums) and back.privacy == r.privacy
    assert back.sum(10, 40) == r.sum(10, 40) and back.mean_ci(0, 9) == r.mean_ci(0, 9)
    assert back.count(3, 70) == r.count(3, 70)


def test_load_refuses_an_edited_sensitivity(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from dptree.io.release_file import canonical_checksum, read_release

    x, w = _data(500)
    r = dptree.range_tree(x, lower=0, upper=99, epsilon=1.0, weights=w, weight_bounds=(0, 100), rng=5)
    path = tmp_path / "r.json"
    r.save(path, allow_nonprivate=True)
    doc = read_release(path)
    doc["parameters"]["weights"]["bounds"] = [0, 50]  # claims half the sensitivity
    doc["checksum"] = canonical_checksum(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(ReleaseFileError):
        dptree.load(path)


# --------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("kwargs", [
    {"neighbors": "replace"},
    {"by": "g", "groups": [1]},
    {"bounds": "private"},
    {"max_contributions": "private", "user_id": np.zeros(3)},
])
def test_refused_combinations(kwargs: dict) -> None:
    lim = {} if kwargs.get("bounds") else {"lower": 0, "upper": 9}
    with pytest.raises(InvalidParameterError):
        dptree.range_tree(np.array([1, 2, 3]), epsilon=1.0, weights=np.ones(3), weight_bounds=(0, 1), **lim,
                          **kwargs)


def test_weights_need_bounds_and_cells_are_limited() -> None:
    with pytest.raises(InvalidParameterError, match="weight_bounds"):
        dptree.range_tree(np.array([1]), lower=0, upper=9, epsilon=1.0, weights=np.ones(1))
    with pytest.raises(InvalidParameterError, match="weight_resolution"):
        dptree.range_tree(np.array([1]), lower=0, upper=9, epsilon=1.0, weight_resolution=0.5)
    with pytest.raises(InvalidParameterError, match="coarser weight_resolution"):
        plan_range_sums(lower=0, upper=9999, epsilon=1.0, weight_bounds=(0, 100), weight_resolution=0.01)
