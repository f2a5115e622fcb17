"""The calibrated tree interval (dptree.rangetree.quantile_calibration): its closed-form critical factor
agrees with the interval it calibrates, the simulated releases have the release's error law
(forest passes, padding), the calibration reads the release only (a reloaded release gives the
same factors), and the API wires both interval constructions."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

import dptree
from dptree.errors import DPTreeError
from dptree.estimation.least_squares import regular_passes
from dptree.noise import make_source
from dptree.rangetree.quantile_calibration import (
    CALIBRATION,
    CALIBRATION_SIMS,
    MIN_SIMS,
    Calibration,
    calibrated_intervals,
    calibrated_scales,
    calibration_sims,
    critical_scales,
    data_end,
    flat_tail,
    plug_in_cdf,
    straight_window,
    tail_plug_ins,
    unresolved_levels,
)
from dptree.rangetree.quantile_pivot import pivot_ends, scaled, tree_intervals, tree_pivot
from dptree.rangetree.release import RangeTree

QS = np.array([0.05, 0.25, 0.5, 0.75, 0.95])


class _FlooredAtZero(Calibration):
    """The released calibration with its factors floored at 0 (no negative factors)."""

    def floor(self, high: str) -> float:
        return 0.0


def _tree(D=1024, n=2000, seed=1, data_seed=0):
    x = np.random.default_rng(data_seed).integers(0, D, n)
    return x, dptree.range_tree(x, lower=0, upper=D - 1, epsilon=1.0, levels="prefix", branching=8, rng=seed)


@pytest.mark.parametrize("high", ["last", "first", "end"])  # the rules for the high end
@pytest.mark.parametrize("monotone", [True, False])  # the calibrated read-off, and the raw pivot's
@pytest.mark.parametrize("D", [1024, 1000, 9000])  # 9000 > 4096: a coarser read-off grid
def test_critical_factor_is_where_the_interval_starts_to_cover(D, monotone, high):
    x, _ = _tree(D)
    F = np.searchsorted(np.sort(x), np.arange(D), side="right")
    checked = 0
    for s in range(12):
        _, t = _tree(D, seed=s)
        pv = tree_pivot(t, QS, 0.95, monotone=monotone)
        for i, q in enumerate(QS):
            for target in (int(np.searchsorted(F, q * x.size)), int(np.searchsorted(F, q * x.size)) + 3):
                g, piv, half = pv.level(i)
                c = float(critical_scales(g, piv[None, :], half, np.array([target]), high=high)[0])
                sc = np.ones(QS.size)
                sc[i] = c * (1 + 1e-9) + 1e-12
                lo, hi = tree_intervals(t, QS, 0.95, scale=sc, pivot=pv, high=high)
                assert lo[i] <= target <= hi[i]
                if c > 1e-6:
                    sc[i] = c * (1 - 1e-6)
                    lo, hi = tree_intervals(t, QS, 0.95, scale=sc, pivot=pv, high=high)
                    assert not lo[i] <= target <= hi[i]
                    checked += 1
    assert checked > 20


def test_critical_factors_of_many_rows_match_their_definition_row_by_row():
    """Each row has its own true bucket, so each reads its own stretch of the grid (the vectorised
    pass must not mix rows): against the definition, one row at a time -- the low end covers from
    min over j <= k of -P_j / w_j, "first" needs every j < k below c, "last" some j >= k - 1 above it
    (P = w = 0 never above), "end" only the low end; true buckets before the first and after the
    last grid point, zero half-widths and zero pivots included."""
    g = np.random.default_rng(11)
    for trial in range(200):
        m, sims = int(g.integers(1, 30)), int(g.integers(1, 12))
        idx = np.sort(g.choice(100, m, replace=False))
        piv = np.round(g.normal(0, 3, (sims, m)))
        w = np.abs(np.round(g.normal(0, 2, m))) if trial % 3 else np.full(m, 1.5)
        tb = g.integers(0, 110, sims)
        with np.errstate(divide="ignore", invalid="ignore"):
            # a noiseless bucket's test P >= 0 holds at every factor or at none
            r = np.where(w > 0, piv / np.where(w > 0, w, 1.0), np.where(piv >= 0, np.inf, -np.inf))
        for floor in (0.0, -np.inf):
            for high in ("last", "first", "end"):
                got = critical_scales(idx, piv, w, tb, floor, high)
                for s_ in range(sims):
                    k = int(np.searchsorted(idx, tb[s_]))
                    low = max(np.min(-r[s_, :k + 1]), floor)
                    if high == "end":
                        want = low
                    elif high == "first":
                        want = max(low, max(np.max(r[s_, :k]) if k else -np.inf, floor))
                    else:
                        want = low if k == 0 else max(low, max(np.min(r[s_, max(k - 1, 0):]), floor))
                    assert got[s_] == want, (high, floor, k)


def test_negative_factors_narrow_the_interval_where_the_pivot_wanders():
    """Sparse data (300 records over 2^16 buckets, 0.005 a bucket): the pivot crosses 0 many times
    around each quantile, so the interval still covers when narrowed below factor 0. The critical
    factor without a floor is then negative, the floored one is its maximum with 0, and the interval
    at the negative factor covers and is narrower than at 0."""
    D = 1 << 16
    x = np.sort(np.random.default_rng(3).integers(0, D, 300))
    F = np.searchsorted(x, np.arange(D), side="right")
    negative = 0
    for s in range(6):
        t = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=1.0, levels="prefix", branching=8, rng=s)
        pv = tree_pivot(t, QS, 0.95)
        np.testing.assert_array_equal(t.quantile_bucket(QS), t.quantile(QS))  # width 1 from 0: bucket = value
        zero_lo, zero_hi = tree_intervals(t, QS, 0.95, scale=np.zeros(QS.size), pivot=pv)
        for i, q in enumerate(QS):
            target = int(np.searchsorted(F, q * x.size))
            g, piv, half = pv.level(i)
            c = float(critical_scales(g, piv[None, :], half, np.array([target]), -np.inf)[0])
            assert float(critical_scales(g, piv[None, :], half, np.array([target]))[0]) == max(c, 0.0)
            if not -np.inf < c < 0:
                continue
            negative += 1
            sc = np.zeros(QS.size)
            sc[i] = c + abs(c) * 1e-9 + 1e-12
            lo, hi = tree_intervals(t, QS, 0.95, scale=sc, pivot=pv)
            assert lo[i] <= target <= hi[i]
            assert hi[i] - lo[i] <= zero_hi[i] - zero_lo[i]
            sc[i] = c - abs(c) * 1e-6 - 1e-9  # just below: the low end passes the target or the high end falls short
            lo2, hi2 = tree_intervals(t, QS, 0.95, scale=sc, pivot=pv)
            assert hi2[i] - lo2[i] <= hi[i] - lo[i]
    assert negative >= 10
    scales = calibrated_scales(t, QS, 0.95, source=make_source(0))
    assert (scales < 0).all()  # the simulated releases cover at a negative factor too
    floored = calibrated_scales(t, QS, 0.95, source=make_source(0), calibration=_FlooredAtZero())
    assert (floored == 0).all()


def test_the_two_high_end_rules():
    """The high end after the last bucket where the pivot is not significantly positive, or at the
    first where it is: they differ where the pivot dips below the band again after crossing it."""
    idx = np.array([10, 20, 30, 40])
    piv, half = np.array([-5.0, 2.0, -1.0, 6.0]), np.full(4, 1.5)
    assert pivot_ends(idx, piv, half, 100, "last") == (11, 40)
    assert pivot_ends(idx, piv, half, 100, "first") == (11, 20)
    assert pivot_ends(idx, np.array([-5.0, -4.0, -3.0, -2.0]), half, 100, "first") == (0, 99)  # never reached
    assert pivot_ends(idx, np.array([-5.0, -1.0, 0.0, 1.0]), half, 100, "first") == (11, 99)  # never established


def test_each_level_keeps_the_rule_narrower_in_simulation():
    """Sparse log-normal tail (1000 records over 2^16 buckets, q = 0.95): after the data the pivot
    stays near (1 - q) n with the suffix count's noise, so the last bucket where it is not
    significantly positive is near the domain's end, and the calibrated "first" rule is far
    narrower there; calibrated_intervals picks it for that level, and each level's factor is that
    rule's own calibrated factor."""
    D = 1 << 16
    x = np.minimum(np.random.default_rng(2).lognormal(5, 1, 1000).astype(np.int64), D - 1)
    t = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=1.0, rng=4)
    scale, ends = calibrated_intervals(t, QS, 0.95, source=make_source(9))
    assert ends[-1] == "first"
    for h in ("last", "first"):
        own = calibrated_scales(t, QS, 0.95, source=make_source(9), high=h)
        picked = np.array([e == h for e in ends])
        np.testing.assert_allclose(scale[picked], own[picked])
    last = tree_intervals(t, QS, 0.95, scale=calibrated_scales(t, QS, 0.95, source=make_source(9)))
    chosen = tree_intervals(t, QS, 0.95, scale=scale, high=ends)
    assert chosen[1][-1] - chosen[0][-1] < (last[1][-1] - last[0][-1]) / 4  # 10,476 against 64,385 buckets
    # the margin: "first" only where it is that many times narrower; an infinite one keeps "last"
    scale_inf, ends_inf = calibrated_intervals(t, QS, 0.95, source=make_source(9),
                                               calibration=replace(CALIBRATION, first_margin=np.inf))
    assert ends_inf == ("last",) * QS.size
    np.testing.assert_allclose(scale_inf, calibrated_scales(t, QS, 0.95, source=make_source(9)))
    assert ends[:-1] == ("last",) * (QS.size - 1)  # the data's core: the two rules within 2x


def test_levels_whose_last_ranks_the_release_cannot_place_keep_the_last_rule():
    """1000 log-normal records over 2^16 buckets: above q = 0.99 lie about 10 ranks, fewer than one
    standard deviation (about 17) of the suffix count above its estimate, so the release cannot tell
    where they lie; above q = 0.5, 525 ranks can be placed. unresolved_levels says so, with the
    suffix count's standard deviation checked against 2000 simulated releases, and
    calibrated_intervals keeps the "last" high end there, where with the check off
    (``unresolved_z=0``) it takes "first" in these releases (the "first" rule's calibration
    leans on the plug-in's shape of the last ranks; docs/notes/quantiles.md)."""
    D, qs = 1 << 16, np.array([0.5, 0.99])
    x = np.minimum(np.random.default_rng(2).lognormal(5, 1, 1000).astype(np.int64), D - 1)
    t = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=1.0, rng=4)
    n_hat, xb = t.total(), t.quantile_bucket(qs)
    err = t._est.simulated_cdf_errors(t.plan.noise_spec, t.plan.root_exact, 2000, make_source(3), np.append(xb + 1, D))
    sd = (err[:, -1:] - err[:, :-1]).std(axis=0)  # the suffix count's error above each estimate
    above = (1 - qs) * n_hat
    assert above[1] < 0.8 * sd[1] and above[0] > 10 * sd[0]
    assert unresolved_levels(t, qs, n_hat).tolist() == [False, True]
    assert unresolved_levels(t, qs, n_hat, z=0.5 * above[1] / sd[1]).tolist() == [False, False]
    assert unresolved_levels(t, qs, n_hat, z=0.0).tolist() == [False, False]
    firsts = 0
    for r in (0, 1, 2):
        t = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=1.0, rng=r)
        assert calibrated_intervals(t, qs, 0.95, source=make_source(9))[1][1] == "last"
        off = replace(CALIBRATION, unresolved_z=0.0)
        firsts += calibrated_intervals(t, qs, 0.95, source=make_source(9), calibration=off)[1][1] == "first"
    assert firsts >= 2


def test_a_reversed_interval_is_returned_in_order():
    """At a negative factor the first bucket significantly above the target can come after the last
    one significantly below it: the ends are returned in order (the band's crossing)."""
    idx = np.array([10, 20, 30])
    assert pivot_ends(idx, np.array([-5.0, 0.0, 5.0]), np.full(3, -1.0), 100) == (20, 21)
    assert pivot_ends(idx, np.array([-5.0, 0.0, 5.0]), np.full(3, 1.0), 100) == (11, 30)


def test_regular_passes_on_a_forest_are_the_passes_of_each_tree():
    fan, var = (4, 3, 2), [np.inf, 2.0, 5.0, 1.0]
    sizes = [1, 4, 12, 24]
    rs = np.random.default_rng(0)
    trees = [[None] + [rs.normal(size=k) for k in sizes[1:]] for _ in range(3)]
    forest = [None] + [np.concatenate([t[j] for t in trees]) for j in range(1, 4)]
    both = regular_passes(forest, var, fan).x[0].reshape(3, -1)
    for t, row in zip(trees, both):
        np.testing.assert_allclose(regular_passes(t, var, fan).x[0], row)


@pytest.mark.parametrize("D", [1024, 1000])  # 1000: padding buckets, conditioned on
def test_simulated_errors_have_the_release_variance_and_no_data(D):
    _, t = _tree(D)
    at = np.array([1, 37, 300, 512, 777, D])
    err = t._est.simulated_cdf_errors(t.plan.noise_spec, t.plan.root_exact, 3000, make_source(2), at)
    var = t._est.variances(np.zeros(at.size, np.int64), at - 1, np.zeros(at.size, bool))
    np.testing.assert_allclose(err.var(axis=0), var, rtol=0.08)
    assert abs(err.mean()) < 0.5  # errors, centred: no count of the data in them


def test_calibration_reads_the_release_only(tmp_path):
    """A release reloaded from its file (public parameters and noisy counts only) gives the same
    factors as the release itself; another data set's release gives other factors."""
    _, t = _tree()
    path = tmp_path / "t.json"
    t.save(str(path), allow_nonprivate=True)
    back = dptree.load(str(path))
    a = calibrated_scales(t, QS, 0.95, source=make_source(9))
    b = calibrated_scales(back, QS, 0.95, source=make_source(9))
    np.testing.assert_array_equal(a, b)
    same_noise = RangeTree(t.plan, [None if m is None else m.copy() for m in t.measurements], t.privacy)
    np.testing.assert_array_equal(a, calibrated_scales(same_noise, QS, 0.95, source=make_source(9)))
    _, other = _tree(data_seed=5, n=300)
    assert not np.array_equal(a, calibrated_scales(other, QS, 0.95, source=make_source(9)))


def test_plug_in_spreads_each_jump_between_block_centres():
    pos, val = plug_in_cdf(np.array([0.0, 0.0, 5.0, 5.0, 5.0, 9.0]))
    np.testing.assert_array_equal(pos, [0.5, 3.0, 5.0])
    np.testing.assert_array_equal(val, [0.0, 5.0, 9.0])


def test_scaled_half_widths_are_defined_at_infinite_factors():
    """A factor of -inf (every simulated interval covered at any factor) times a zero half-width (the
    pivot's last bucket at q = 1) is 0, not NaN, and raises no RuntimeWarning; elsewhere it is the
    product."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = scaled(-np.inf, np.array([0.0, 2.0]))
        np.testing.assert_array_equal(out, [0.0, -np.inf])
        np.testing.assert_array_equal(scaled(0.5, np.array([0.0, 2.0, 4.0])), [0.0, 1.0, 2.0])


def test_data_end_is_where_the_suffix_count_stops_being_significant():
    """Uniform records on [0, 256) of 1024 buckets: the suffix count n_hat - F_hat(x) is far above its
    noise inside the data, so the end found is within a few buckets of the last record (never deep
    in the empty tail, where the isotonic fit spreads its last ranks); it is the first bucket whose
    suffix passes the test, found through the coarse grid and the cell that holds it (a 64-point grid
    gives the same bucket as the full one); data reaching the domain's end end there."""
    D = 1024
    x = np.random.default_rng(3).integers(0, 256, 1000)
    for s in range(5):
        t = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=1.0, rng=s)
        est, n_hat = t._est, t.total()
        end = data_end(est, n_hat, D)
        assert 235 <= end <= 262, end
        idx = np.arange(D)
        F = est.counts(np.zeros_like(idx), idx, np.zeros(D, dtype=bool))
        empty = idx + 1 > D - 1
        sd = np.sqrt(est.variances(np.where(empty, 0, idx + 1), np.full(D, D - 1), empty))
        passed = n_hat - F <= 2.0 * sd
        assert passed[end] and not passed[:end].any()
        assert data_end(est, n_hat, D, grid=64) == end
        assert data_end(est, n_hat, D, z=0.5) >= end  # a stricter test ends no earlier
    full = dptree.range_tree(np.random.default_rng(4).integers(0, D, 5000), lower=0, upper=D - 1,
                             epsilon=1.0, rng=0)
    assert data_end(full._est, full.total(), D) >= D - 4


def test_flat_tail_puts_the_spread_ranks_at_the_density_inside_the_data():
    """A plug-in whose last 100 ranks are spread over an empty tail of 10^5 buckets, and a data end
    found at bucket 90: the knots up to it are kept, then a line at the density of the 60 ranks
    below (10 a bucket here) reaches the last value 10 buckets later, and the plug-in is flat after
    it; an end at the first or last value, or no ranks to measure, leaves the knots as they were."""
    pos = np.array([0.0, 90.0, 100_090.0])
    val = np.array([0.0, 900.0, 1000.0])
    p, v = flat_tail(pos, val, 90, 60.0)
    np.testing.assert_allclose(p, [0.0, 90.0, 100.0])
    np.testing.assert_allclose(v, [0.0, 900.0, 1000.0])
    assert float(np.interp(950.0, v, p)) == pytest.approx(95.0)  # the 0.95 point: 5 buckets, not 50,000
    p, v = flat_tail(pos, val, 50, 60.0)  # an end inside the steep part: 500 ranks at 10 a bucket
    np.testing.assert_allclose(p, [0.0, 50.0, 100.0])
    np.testing.assert_allclose(v, [0.0, 500.0, 1000.0])
    for end, ranks in ((0, 60.0), (200_000, 60.0), (90, 0.0)):
        same = flat_tail(pos, val, end, ranks)
        np.testing.assert_array_equal(same[0], pos)
        np.testing.assert_array_equal(same[1], val)


def test_flat_tail_reaches_its_last_value_no_earlier_than_last():
    """With ``last`` (the spread end), the same ranks reach the last value on a line ending at
    ``last`` where that is later than the abrupt end, and at the abrupt end where it is earlier."""
    pos = np.array([0.0, 90.0, 100_090.0])
    val = np.array([0.0, 900.0, 1000.0])
    p, v = flat_tail(pos, val, 90, 60.0, 400)
    np.testing.assert_allclose(p, [0.0, 90.0, 400.0])
    np.testing.assert_allclose(v, [0.0, 900.0, 1000.0])
    p, _ = flat_tail(pos, val, 90, 60.0, 95)
    np.testing.assert_allclose(p, [0.0, 90.0, 100.0])


def test_tail_plug_ins_are_the_abrupt_the_spread_and_the_isotonic_tail():
    """Uniform records on [0, 256) of 1024 buckets: three plug-ins that agree up to the data's end,
    the abrupt one reaching its last value within a few buckets of the data's end, the spread one
    no earlier, and the isotonic fit's own tail (its knots as they are) much later; data filling
    the domain give one plug-in, the isotonic fit's own knots."""
    D = 1024
    x = np.random.default_rng(3).integers(0, 256, 1000)
    t = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=1.0, rng=2)
    pos, val = plug_in_cdf(t._est.monotone_cdf())
    plugs = tail_plug_ins(pos, val, t._est, t.total(), D, t.total_stderr() ** 2)
    assert len(plugs) == 3
    reach = [float(np.interp(val[-1] - 1e-9, v, p)) for p, v in plugs]
    assert 240 <= reach[0] <= 300 and reach[0] <= reach[1] < reach[2] and reach[2] > 600, reach
    np.testing.assert_array_equal(plugs[2][0], pos)
    np.testing.assert_array_equal(plugs[2][1], val)
    assert all(v[-1] == val[-1] for _, v in plugs)
    for p, v in plugs[:2]:  # the same plug-in below the data's end
        np.testing.assert_allclose(np.interp(np.arange(200), p, v), np.interp(np.arange(200), pos, val))
    full = dptree.range_tree(np.random.default_rng(4).integers(0, D, 5000), lower=0, upper=D - 1,
                             epsilon=1.0, rng=0)
    fp, fv = plug_in_cdf(full._est.monotone_cdf())
    one = tail_plug_ins(fp, fv, full._est, full.total(), D, full.total_stderr() ** 2)
    assert len(one) == 1 and np.array_equal(one[0][0], fp)


def test_the_maximum_interval_runs_to_the_domain_end():
    """q = 1 (the maximum) takes the "end" rule whatever the simulated widths, and its interval ends
    at the domain's last bucket (calibrated or not, in RangeTree.quantile_ci and dptree.quantiles);
    the other levels keep one of the two high-end rules. Its factor
    is the low end's alone: on the same simulations it is at most the "last" rule's (which must
    also cover from above)."""
    x = np.random.default_rng(3).integers(0, 256, 1000)
    t = dptree.range_tree(x, lower=0, upper=1023, epsilon=1.0, rng=1)
    qs = np.array([0.5, 0.95, 1.0])
    scales, rules = calibrated_intervals(t, qs, 0.95, source=make_source(4))
    assert rules[2] == "end" and rules[0] in ("last", "first") and rules[1] in ("last", "first")
    lo, hi = t.quantile_ci(qs, rng=4)
    assert hi[2] == 1023 and lo[2] <= 300
    assert t.quantile_ci(qs, interval="pivot")[1][2] == 1023  # the uncalibrated interval too
    res = dptree.quantiles(x, qs, lower=0, upper=1023, epsilon=1.0, method="tree", rng=1)
    assert res.to_frame()["ci_high"].iloc[2] == 1023  # and dptree.quantiles' tree intervals
    end = calibrated_scales(t, qs[2:], 0.95, source=make_source(5), high="end")[0]
    last = calibrated_scales(t, qs[2:], 0.95, source=make_source(5), high="last")[0]
    assert end <= last


def test_split_line_is_no_flatter_than_the_plug_in_further_inside_the_data_at_the_first_rank_only():
    """Where the window reaches the plug-in's first rank (ranks spread over an empty head, the
    target among them), the split window's right line takes the density of the next window further
    inside the data (10 ranks a bucket here) instead of reaching the target far out in the head.
    At the last rank each line keeps its own slope: the target stays in the spread tail (past the
    data's end the three tails of ``tail_plug_ins`` take its place). A window inside the data is
    split at the plug-in's own point."""
    # ranks 0..900 at 10 a bucket over [0, 90], then 900..1000 spread over [90, 100_090]
    pos = np.array([0.0, 90.0, 100_090.0])
    val = np.array([0.0, 900.0, 1000.0])
    tail_p, tail_v = straight_window(pos, val, 950.0, 60.0)
    assert float(np.interp(950.0, tail_v, tail_p)) > 40_000  # a line of 0.001 records a bucket
    # the head: ranks 0..100 spread over [0, 100_000], then 10 a bucket
    hp, hv = np.array([0.0, 100_000.0, 100_090.0]), np.array([0.0, 100.0, 1000.0])
    kp, kv = straight_window(hp, hv, 50.0, 60.0)
    b = float(np.interp(110.0, hv, hp))
    assert float(np.interp(50.0, kv, kp)) == pytest.approx(b - 60.0 / 10.0)  # the density of ranks 110..170
    assert np.all(np.diff(kp) > 0) and np.all(np.diff(kv) > 0)
    # inside the data: knots at the window's ends and the plug-in's own point at the target
    inside_p, inside_v = straight_window(pos, val, 450.0, 60.0)
    assert float(np.interp(450.0, inside_v, inside_p)) == pytest.approx(45.0)
    assert {390.0, 450.0, 510.0} <= set(inside_v.tolist())


def test_the_window_is_two_lines_meeting_at_the_target():
    """Data that start late: the isotonic fit pools the head's noise (30 ranks) into a long low block
    over [0, 768), then the data rise at 3.9 records a bucket. The window around q n = 51.3 (+-45
    ranks) spans both; one straight line through it would put the plug-in quantile at bucket 473, in
    the empty head (benchmarks/_calibration_variants.py checks it); two lines meeting at the target
    keep it in the data, where the plug-in reaches it (773.5), with the data's density on that side.
    A straight plug-in is left straight (the two lines are collinear)."""
    pos, val = np.array([0.0, 768.0, 768.0 + 970 / 3.9]), np.array([0.0, 30.0, 1000.0])
    where = lambda knots: float(np.interp(51.3, knots[1], knots[0]))  # noqa: E731
    two = straight_window(pos, val, 51.3, 45.0)
    assert where(two) == pytest.approx(768 + 21.3 / 3.9)
    right = two[0] > where(two)
    assert np.diff(two[1][right]).sum() / np.diff(two[0][right]).sum() == pytest.approx(3.9)
    lp, lv = np.array([0.0, 1000.0]), np.array([0.0, 1000.0])
    grid = np.arange(0, 1001, 7.0)
    np.testing.assert_allclose(np.interp(grid, *straight_window(lp, lv, 500.0, 60.0)), grid)


def test_number_of_simulations_is_public_and_bounded():
    assert calibration_sims(1024) == CALIBRATION_SIMS == 199
    assert calibration_sims(2**16) == 199 and calibration_sims(2**18) == 64
    assert calibration_sims(2**20) == MIN_SIMS and calibration_sims(2**20 + 8) == 0


def test_api_calibrated_by_default_and_pivot_on_request():
    x, t = _tree()
    kw = dict(lower=0, upper=1023, epsilon=1.0, method="tree", rng=1)
    piv = dptree.quantiles(x, QS, interval="pivot", **kw)
    lo, hi = tree_intervals(t, QS, 0.95)
    assert piv.ci_low == list(lo) and piv.ci_high == list(hi)
    cal = dptree.quantiles(x, QS, **kw)
    assert cal.values == piv.values
    w_cal, w_piv = [np.subtract(cal.ci_high, cal.ci_low)], [np.subtract(piv.ci_high, piv.ci_low)]
    for s in (2, 3, 4):  # widths over four releases: one release's factors are a 199-simulation Monte Carlo
        kw["rng"] = s
        for r, w in ((dptree.quantiles(x, QS, **kw), w_cal), (dptree.quantiles(x, QS, interval="pivot", **kw), w_piv)):
            w.append(np.subtract(r.ci_high, r.ci_low))
    assert np.all(np.concatenate(w_cal) <= np.concatenate(w_piv))
    assert np.sum(w_cal) < 0.9 * np.sum(w_piv)  # the pivot over-covers


def test_the_release_records_its_interval_construction(tmp_path):
    x, _ = _tree()
    kw = dict(lower=0, upper=1023, epsilon=1.0, rng=1)
    for method, interval, want in (("tree", "calibrated", "calibrated"), ("tree", "pivot", "pivot"),
                                   ("approx", "bound", "bound"), ("approx", "counts", "counts")):
        r = dptree.quantiles(x, QS, method=method, interval=interval, **kw)
        assert r.interval == want
        path = tmp_path / f"{method}-{interval}.json"
        r.save(str(path), allow_nonprivate=True)
        assert dptree.load(str(path)).interval == want
    doc = json.loads(path.read_text())  # the approx release
    doc["parameters"]["interval"] = "pivot"  # a tree's interval on an approx release
    with pytest.raises(DPTreeError, match="interval"):
        dptree.QuantilesRelease.from_document(doc)
    doc["parameters"]["interval"] = "bootstrap"
    with pytest.raises(DPTreeError, match="interval"):
        dptree.QuantilesRelease.from_document(doc)


def test_read_off_is_refined_to_single_buckets_near_the_ends():
    """On a domain with more buckets than the grid, the interval ends (pivot and calibrated, factor
    up to FINE_FACTOR) are those read on every bucket: the coarse grid's spacing (32 buckets here)
    no longer widens them."""
    D = 2**14
    x = np.random.default_rng(3).integers(0, D, 100_000)
    t = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=1.0, levels="prefix", branching=8, rng=4)
    full = tree_pivot(t, QS, 0.95, grid=D)
    for sc in (np.ones(QS.size), np.full(QS.size, 0.7), np.full(QS.size, 1.9)):
        coarse = tree_intervals(t, QS, 0.95, grid=512, scale=sc)
        exact = tree_intervals(t, QS, 0.95, grid=D, scale=sc, pivot=full)
        np.testing.assert_array_equal(coarse, exact)
    lo, hi = exact
    assert np.all(hi - lo < 32)  # narrower than one coarse cell: a coarse read-off could not give these
    assert tree_pivot(t, QS, 0.95, grid=512).idx.size < 512 + QS.size * 64


def test_shifted_truth_reads_one_row_when_every_simulation_has_the_same_shift() -> None:
    """The worst-phase rule shifts every simulation alike: one interpolated row, broadcast, equal to
    the per-simulation rows; different shifts (the uniform-phase rule) keep one row each."""
    from dptree.rangetree.quantile_calibration import shifted_truth

    gen = np.random.default_rng(4)
    kp = np.sort(gen.uniform(0, 500, 40))
    kv = np.cumsum(gen.uniform(0, 9, 40))
    idx = np.unique(gen.integers(0, 520, 300)).astype(np.float64)
    for shift in (np.full(7, -0.25), np.full(7, 1e-9 - 0.6), gen.uniform(-1, 0, 7)):
        want = np.interp(idx[None, :] + shift[:, None], kp, kv)
        got = shifted_truth(idx, shift, kp, kv)
        assert got.shape[0] == (1 if np.ptp(shift) == 0 else shift.size)
        np.testing.assert_array_equal(np.broadcast_to(got, want.shape), want)


def test_critical_scales_at_a_noiseless_bucket_with_pivot_zero() -> None:
    """A bucket without noise (w = 0: the last bucket at q = 1) holds its test P >= 0 at every factor:
    where P = 0 there the low end covers at any factor (the floor), not NaN; where P < 0 it never
    helps, and the factor comes from the noisy buckets before it."""
    idx = np.arange(4)
    w = np.array([1.0, 1.0, 1.0, 0.0])
    piv = np.array([[-5.0, -3.0, -1.0, 0.0], [-5.0, -3.0, -1.0, -2.0]])
    tb = np.array([3, 3])
    for floor in (-np.inf, 0.0):
        c = critical_scales(idx, piv, w, tb, floor, "end")
        assert c[0] == floor and c[1] == 1.0
    assert not np.isnan(critical_scales(idx, piv, w, tb, -np.inf, "last")).any()
