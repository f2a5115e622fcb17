"""dptree.quantiles: every method runs from arrays, tables and files, returns sorted estimates in
the domain with intervals, round-trips through dptree.load (tampering refused), validates its
parameters, and auto chooses from public quantities only."""

from __future__ import annotations

import json
from typing import Any
import math

import numpy as np
import pandas as pd
import pytest

import dptree
from dptree.errors import DataError, InvalidParameterError, ReleaseFileError
from dptree.quantiles.auto import JOINT_AUTO_MAX_M, choose_method, joint_eligible, predicted_errors
from dptree.quantiles.intervals import joint_radius
from dptree.quantiles.joint import JOINT_MAX_CELLS, float_slack, sensitivity

X = np.random.default_rng(3).integers(0, 1000, 3000)
QS = [0.1, 0.5, 0.9]


@pytest.mark.parametrize("method", ["tree", "approx", "exponential"])
def test_methods_estimate_near_the_truth_with_intervals(method):
    r = dptree.quantiles(X, QS, lower=0, upper=1023, epsilon=2.0, method=method, n=X.size, rng=5)
    truth = np.quantile(X, QS)
    assert r.method == method and len(r.values) == 3
    assert np.all(np.abs(np.asarray(r.values) - truth) < 60), (r.values, truth)
    assert all(lo <= hi for lo, hi in zip(r.ci_low, r.ci_high))
    assert all(0 <= v <= 1023 for v in r.values + r.ci_low + r.ci_high)
    if method != "exponential":
        assert r.values == sorted(r.values)
    frame = r.to_frame()
    assert list(frame.columns[:4]) == ["q", "estimate", "ci_low", "ci_high"] and set(frame["method"]) == {method}
    assert r.interval == ("calibrated" if method == "tree" else "counts") and r.rank_radius is None
    assert all(lo <= v <= hi for lo, v, hi in zip(r.ci_low, r.values, r.ci_high))
    assert all(hi - lo < 200 for lo, hi in zip(r.ci_low, r.ci_high))  # informative: a fifth of the domain at most
    if method != "tree":  # the stated bound: a rank radius per level
        b = dptree.quantiles(X, QS, lower=0, upper=1023, epsilon=2.0, method=method, n=X.size, rng=5, interval="bound")
        assert b.interval == "bound" and b.rank_radius is not None and b.interval_counts is None


def test_tree_intervals_hold_their_estimates_on_sparse_data():
    """150 records over 2^14 buckets: the calibrated factors are negative (the interval narrower
    than where the pivot crosses 0), and such an interval can miss its own estimate (about one
    release in three here without the widening); dptree.quantiles widens it to hold it."""
    x = np.sort(np.random.default_rng(5).integers(0, 2**14, 150))
    for s in range(8):
        r = dptree.quantiles(x, [0.05, 0.25, 0.5, 0.75, 0.95], lower=0, upper=2**14 - 1, epsilon=1.0,
                             method="tree", rng=s)
        assert all(lo <= v <= hi for lo, v, hi in zip(r.ci_low, r.values, r.ci_high)), s


def test_levels_are_sorted_and_auto_reports_the_method_it_ran():
    r = dptree.quantiles(X, [0.9, 0.1], lower=0, upper=1023, epsilon=1.0, rng=1)
    assert list(r.q) == [0.1, 0.9]
    assert r.method == choose_method(2, lower=0, upper=1023, epsilon=1.0)


def test_auto_reads_only_public_quantities():
    """The choice is the same for any data: choose_method has no data argument, and two very
    different data sets give the same method."""
    a = dptree.quantiles(X, QS, lower=0, upper=1023, epsilon=1.0, rng=1).method
    b = dptree.quantiles(np.zeros(5, dtype=int), QS, lower=0, upper=1023, epsilon=1.0, rng=1).method
    assert a == b
    many = choose_method(2000, lower=0, upper=2**20 - 1, epsilon=1.0)
    few = choose_method(1, lower=0, upper=2**20 - 1, epsilon=1.0)
    assert (few, many) == ("approx", "tree")  # the tree's error is flat in m, approx grows with log m
    p = predicted_errors(4, lower=0, upper=2**20 - 1, epsilon=1.0)
    q = predicted_errors(4, lower=0, upper=2**20 - 1, epsilon=2.0)
    assert q["approx"] == pytest.approx(p["approx"] / 2) and q["tree"] == pytest.approx(p["tree"] / 2, rel=0.01)


def test_replace_calibration_is_stated():
    kw = {"lower": 0, "upper": 1023, "epsilon": 1.0, "method": "approx", "rng": 1}
    r = dptree.quantiles(X, QS, neighbors="replace", interval="bound", **kw)
    assert r.privacy["neighbors"] == "replace" and r.privacy["epsilon_per_call"] == pytest.approx(1.0 / 3)
    r = dptree.quantiles(X, QS, interval="bound", **kw)
    assert r.privacy["neighbors"] == "add_remove" and r.privacy["epsilon_per_call"] == pytest.approx(1.0 / 2)
    # the interval counts' share: the estimates get the rest; a replaced record moves between two cells
    r = dptree.quantiles(X, QS, neighbors="replace", **kw)
    assert r.privacy["epsilon_mechanism"] == pytest.approx(0.9) and "L1 sensitivity 2" in r.privacy["intervals"]
    assert r.privacy["epsilon_per_call"] == pytest.approx(0.9 / 3)


@pytest.mark.parametrize("method", ["tree", "approx"])
def test_tables_and_files(tmp_path, method):
    df = pd.DataFrame({"v": X})
    a = dptree.quantiles(df, QS, lower=0, upper=1023, epsilon=1.0, method=method, column="v", rng=2)
    path = tmp_path / "x.csv"
    df.to_csv(path, index=False)
    b = dptree.quantiles(str(path), QS, lower=0, upper=1023, epsilon=1.0, method=method, column="v", rng=2)
    c = dptree.quantiles(X, QS, lower=0, upper=1023, epsilon=1.0, method=method, rng=2)
    assert a.values == b.values == c.values


@pytest.mark.parametrize("method", ["tree", "approx", "exponential"])
def test_duckdb_relations_and_parquet_give_the_arrays_answer(tmp_path, method):
    # every method reads a relation and a Parquet file (the mechanism methods through distinct
    # values and counts counted by DuckDB) and gives the in-memory answer for the same seed
    duckdb = pytest.importorskip("duckdb")
    rel = duckdb.sql("SELECT range % 1000 AS v FROM range(3000)")
    want = dptree.quantiles(np.arange(3000) % 1000, QS, lower=0, upper=1023, epsilon=1.0, method=method, rng=2)
    r = dptree.quantiles(rel, QS, lower=0, upper=1023, epsilon=1.0, method=method, column="v", rng=2)
    pd.DataFrame({"v": np.arange(3000) % 1000}).to_parquet(tmp_path / "x.parquet")
    f = dptree.quantiles(str(tmp_path / "x.parquet"), QS, lower=0, upper=1023, epsilon=1.0, method=method,
                         column="v", rng=2)
    assert r.method == f.method == method and r.values == f.values == want.values
    assert r.values != dptree.quantiles(rel, QS, lower=0, upper=1023, epsilon=1.0, method=method, column="v",
                                        rng=3).values
    if method == "approx":  # values outside the domain are clamped to its ends, as in memory
        wide = duckdb.sql("SELECT range AS v FROM range(3000)")
        got = dptree.quantiles(wide, QS, lower=0, upper=1023, epsilon=1.0, method=method, column="v", rng=2)
        assert got.values == dptree.quantiles(np.arange(3000), QS, lower=0, upper=1023, epsilon=1.0, method=method,
                                              rng=2).values
        with pytest.raises(DataError, match="missing"):  # a NULL is refused (on_invalid='error') as in memory
            dptree.quantiles(duckdb.sql("SELECT NULL::BIGINT AS v UNION ALL SELECT 5"), QS, lower=0, upper=1023,
                             epsilon=1.0, method=method, column="v", rng=2)


@pytest.mark.slow
def test_spark_dataframes_with_the_mechanism_methods():
    from _spark import spark_session

    spark = spark_session()
    x = (np.arange(3000) % 1000).tolist()
    sdf = spark.createDataFrame([(int(v),) for v in x], "v long")
    want = dptree.quantiles(x, QS, lower=0, upper=1023, epsilon=1.0, method="approx", rng=2)
    got = dptree.quantiles(sdf, QS, lower=0, upper=1023, epsilon=1.0, method="approx", column="v", rng=2)
    assert got.values == want.values
    # the interval counts on the same session: the same exact counts, noise and intervals
    assert got.interval_counts == want.interval_counts and got.to_frame().equals(want.to_frame())


def test_float_domain_and_ties():
    xf = np.round(np.random.default_rng(0).normal(size=400), 1)
    for method in ("tree", "approx"):
        r = dptree.quantiles(xf, [0.25, 0.5, 0.75], lower=-4.0, upper=4.0, epsilon=2.0, method=method,
                             width=0.1 if method == "tree" else None, rng=1)
        assert all(isinstance(v, float) for v in r.values)
        assert np.all(np.abs(np.asarray(r.values) - np.quantile(xf, [0.25, 0.5, 0.75])) < 0.3), r.values
    # a point mass: every level is the tied value (the fair-coin split keeps the block on both sides)
    r = dptree.quantiles([7] * 2000, [0.1, 0.3, 0.5, 0.7, 0.9], lower=0, upper=2**20, epsilon=1.0, method="approx",
                         rng=3)
    assert r.values == [7] * 5


@pytest.mark.parametrize("method", ["tree", "approx", "exponential"])
def test_round_trip_and_tampering(tmp_path, method):
    r = dptree.quantiles(X, QS, lower=0, upper=1023, epsilon=1.0, method=method, n=X.size, rng=4)
    path = tmp_path / "q.json"
    r.save(path, allow_nonprivate=True)
    back = dptree.load(path)
    assert isinstance(back, dptree.QuantilesRelease)
    assert (back.values, back.ci_low, back.ci_high, back.method) == (r.values, r.ci_low, r.ci_high, r.method)
    doc = json.loads(path.read_text())
    for edit in ("epsilon", "method", "radius", "value"):
        bad = json.loads(json.dumps(doc))
        if edit == "epsilon":
            bad["parameters"]["epsilon"] = 5.0
        elif edit == "method":
            bad["parameters"]["method"] = "exponential" if method != "exponential" else "approx"
        elif edit == "radius":
            bad["measurements"]["rank_radius"] = [1.0, 1.0, 1.0]
        else:
            bad["measurements"]["values"][0] = 5000
        with pytest.raises(ReleaseFileError):
            dptree.QuantilesRelease.from_document(bad)


@pytest.mark.parametrize("kw", [
    {"qs": []}, {"qs": [0.5, 1.5]}, {"qs": [float("nan")]}, {"epsilon": 0}, {"method": "best"},
    {"level": 1.0}, {"n": 0}, {"neighbors": "swap"}, {"method": "approx", "width": 4},
])
def test_bad_parameters_raise_clear_errors(kw):
    args = {"qs": QS, "lower": 0, "upper": 1023, "epsilon": 1.0, **kw}
    qs = args.pop("qs")
    with pytest.raises(InvalidParameterError):
        dptree.quantiles(X, qs, **args)


def test_joint_is_dispatched_to_its_module():
    import importlib.util

    if importlib.util.find_spec("dptree.quantiles.joint") is None:
        with pytest.raises(InvalidParameterError, match="joint"):
            dptree.quantiles(X, QS, lower=0, upper=1023, epsilon=1.0, method="joint", rng=1)
        return
    r = dptree.quantiles(X[:300], QS, lower=0, upper=1023, epsilon=1.0, method="joint", n=300, rng=1,
                         interval="bound")
    assert r.method == "joint" and r.values == sorted(r.values)
    # dithered with K = 2048 (the smallest power of two >= 4 n): the radius is the one for 1024 K keys
    assert r.privacy["dither_factor"] == 2048
    # at the add/remove sensitivity of 0.1, 0.5, 0.9: 2 (1 - 0.1) = 1.8
    assert r.privacy["sensitivity"] == 1.8
    assert r.rank_radius == [joint_radius(3, size=1024 * 2048, epsilon=1.0, level=0.95, sensitivity=1.8)] * 3
    # radius ~80 ranks: the 0.5 estimate (150 - 80 >= 30) bounds the 0.1 quantile from above, nothing from below
    assert r.ci_low[0] == 0 and r.ci_high[0] == r.values[1] and r.ci_high[2] == 1023


def test_joint_radius_is_the_stated_bound_and_releases_round_trip(tmp_path):
    """U / 2 with U = 2m + (ln C(|X| + m - 1, m) + ln(1 / (1 - level)) + slack) / a, a = (eps - slack) /
    (2 Delta) (dptree.quantiles.intervals); not established (None, the domain as interval) past psi's
    linear range, whose C = A / a shrinks with Delta; a joint release saves and loads (its statement
    keeps the release's relation)."""
    slack, _ = float_slack(4, 2**20, 1.0)
    a = (1.0 - slack) / (2 * 1.6)
    log_tuples = math.log(math.comb(2**20 + 3, 4))
    want = (8 + (log_tuples + math.log(20) + slack) / a) / 2
    assert joint_radius(4, size=2**20, epsilon=1.0, level=0.95, sensitivity=1.6) == pytest.approx(want, rel=1e-9)
    assert joint_radius(4, size=2**20, epsilon=1.0, level=0.99, sensitivity=1.6) > want
    assert joint_radius(4, size=2**20, epsilon=1.0, level=0.95, sensitivity=2.0) > want
    assert math.isinf(joint_radius(20, size=2**20, epsilon=1.0, level=0.95, sensitivity=float(sensitivity(
        np.arange(1, 21) / 21))))
    # the check uses the C of the a that ran: at epsilon = 80, m = 2 the bound is within C for the
    # sensitivity 2 but not for 1 (C = A / a halves while the bound's 2m stays)
    assert math.isfinite(joint_radius(2, size=2**20, epsilon=80.0, level=0.95, sensitivity=2.0))
    assert math.isinf(joint_radius(2, size=2**20, epsilon=80.0, level=0.95, sensitivity=1.0))
    x = np.random.default_rng(0).choice(2**16, 1000, replace=False)
    for m, finite in ((4, True), (20, False)):
        qs = np.arange(1, m + 1) / (m + 1)
        r = dptree.quantiles(x, qs, lower=0, upper=2**16 - 1, epsilon=1.0, method="joint", n=1000, rng=1,
                             interval="bound")
        assert (r.rank_radius is not None) == finite and r.privacy["neighbors"] == "add_remove"
        if not finite:
            assert (r.ci_low, r.ci_high) == ([0] * m, [2**16 - 1] * m)
        path = tmp_path / f"j{m}.json"
        r.save(path, allow_nonprivate=True)
        back = dptree.load(path)
        assert back.rank_radius == r.rank_radius and back.values == r.values


def test_auto_offers_joint_only_where_its_conditions_hold():
    """joint needs a declared n, add/remove, 2 <= m <= JOINT_AUTO_MAX_M and the empty-gap margin
    epsilon n / (4 (m + 1)) >= JOINT_GAP_FACTOR ln |X|; where offered it is taken when its measured
    (mean, max) beat approx's by the worse ratio to the better (docs/notes/quantiles.md)."""
    kw = {"lower": 0, "upper": 2**20 - 1, "epsilon": 1.0}
    assert choose_method(4, n=1000, **kw) == "joint"
    assert "joint" not in predicted_errors(4, **kw)  # no declared n
    assert choose_method(4, n=1000, neighbors="replace", **kw) == "approx"
    assert choose_method(4, n=100, **kw) == "approx"  # 0.25 * 100 / 5 < 2 ln 2^20
    assert "joint" not in predicted_errors(JOINT_AUTO_MAX_M + 1, n=10**6, **kw)
    assert "joint" in predicted_errors(JOINT_AUTO_MAX_M, n=30_000, **kw)
    r = dptree.quantiles(X, [0.2, 0.4, 0.6, 0.8], lower=0, upper=2**20 - 1, epsilon=1.0, n=X.size, rng=1,
                         interval="bound")
    assert r.method == "joint" and r.rank_radius is not None


def test_auto_on_a_real_domain_considers_the_tree_only_with_a_width():
    """Without a bucket width the tree cannot run on real-valued bounds, so auto leaves it out (it
    used to fail in the tree's plan); with one, the width is used when the tree is picked and
    dropped otherwise (it used to be refused for the other methods)."""
    x = np.random.default_rng(0).normal(size=500)
    kw = {"lower": -5.0, "upper": 5.0, "epsilon": 1.0}
    assert "tree" not in predicted_errors(500, **kw) and choose_method(500, **kw) == "approx"
    assert choose_method(500, width=0.001, **kw) == "tree"
    a = dptree.quantiles(x, [0.25, 0.75], width=0.001, rng=1, **kw)
    b = dptree.quantiles(x, np.arange(1, 501) / 501, width=0.001, rng=1, interval="pivot", **kw)  # not calibrated: 38 s with it
    assert (a.method, a.width) == ("approx", None) and (b.method, b.width) == ("tree", 0.001)
    assert "joint" not in predicted_errors(4, n=10**5, **kw)  # a float domain has >= 2^62 points: joint refuses it
    assert joint_eligible(4, domain_size=2**61, epsilon=1.0, neighbors="add_remove", n=10**5)


def test_joint_release_files_state_the_dither_and_older_files_still_load(tmp_path):
    """A joint release states its public dither factor and its sensitivity (2 (1 - g), with the
    rule); files of a release capped at the declared size and priced at sensitivity 2 (no
    sensitivity_rule in the statement), dithered or not (no dither_factor, radius for |X| points),
    load under their own statements and radii; a changed factor or sensitivity is refused."""
    import json

    from dptree.errors import ReleaseFileError
    from dptree.io.release_file import canonical_checksum

    x = np.random.default_rng(1).choice(2**16, 500, replace=False)
    r = dptree.quantiles(x, [0.25, 0.5, 0.75], lower=0, upper=2**16 - 1, epsilon=1.0, method="joint", n=500, rng=2,
                         interval="bound")
    assert r.privacy["dither_factor"] == 2048 and "floor(o / K)" in r.privacy["dithering"]
    assert r.privacy["sensitivity"] == 1.5 and r.privacy["sensitivity_relations"] == "add/remove-one"
    path = tmp_path / "j.json"
    r.save(path, allow_nonprivate=True)
    doc = json.loads(path.read_text())

    def write(d: dict) -> None:
        d["checksum"] = canonical_checksum(d)
        path.write_text(json.dumps(d))

    def capped(dithered: bool) -> dict:
        old = json.loads(json.dumps(doc))
        del old["privacy"]["sensitivity_rule"]
        old["privacy"].update(sensitivity=2, sensitivity_relations="add/remove-one and replace-one")
        if not dithered:
            del old["privacy"]["dither_factor"], old["privacy"]["dithering"]
        size = 2**16 * (2048 if dithered else 1)
        old["measurements"]["rank_radius"] = [joint_radius(3, size=size, epsilon=1.0, level=0.95, sensitivity=2.0)] * 3
        return old

    for dithered in (True, False):
        write(capped(dithered))
        assert dptree.load(path).values == r.values
    bad = capped(True)
    bad["measurements"]["rank_radius"] = doc["measurements"]["rank_radius"]  # the radius at 1.5, not 2
    write(bad)
    with pytest.raises(ReleaseFileError, match="rank_radius"):
        dptree.load(path)
    for field, value in (("dither_factor", 1024), ("sensitivity", 1.2)):
        changed = json.loads(json.dumps(doc))
        changed["privacy"][field] = value
        write(changed)
        with pytest.raises(ReleaseFileError, match="statement"):
            dptree.load(path)
    claims_cap = json.loads(json.dumps(doc))  # the rule dropped, sensitivity 1.5 kept: not what a capped release stated
    del claims_cap["privacy"]["sensitivity_rule"]
    write(claims_cap)
    with pytest.raises(ReleaseFileError, match="statement"):
        dptree.load(path)


def test_joint_preferred_is_the_worse_ratio_rule_on_the_measured_curve():
    """joint_preferred(m) compares each method's worse ratio of (mean, max) to the better of the two
    at the measured points (epsilon cancels). On the worst-case curve of the mix joint wins at m = 4
    (mean and max below approx's) and loses at m = 20, where the worst cell is a JointExp collapse
    (distance over [0, 2^20), n = 10^4, epsilon = 0.5)."""
    from dptree.quantiles.auto import joint_curve, joint_preferred
    from dptree.quantiles.fitted import JOINT_CURVE

    for m, jm, jx, am, ax in JOINT_CURVE:
        assert joint_curve(m) == pytest.approx((jm, jx, am, ax))
        worse_j, worse_a = max(jm / min(jm, am), jx / min(jx, ax)), max(am / min(jm, am), ax / min(jx, ax))
        assert joint_preferred(m) == (worse_j < worse_a)
    jm, jx, am, ax = joint_curve(4)
    assert jm < am and jx < ax and joint_preferred(4)
    jm, jx, am, ax = joint_curve(20)
    assert jm > 2 * am and jx > ax and not joint_preferred(20)


def test_auto_choice_table():
    """auto's choice over [0, 2^20) at epsilon = 1 (all of it for the mechanisms, as with
    interval="bound") by declared n and m (docs/notes/quantiles.md's table): joint at m = 2 .. 4,
    where the worst-case curve of the mix prefers it and the gap margin holds, the tree from m = 128;
    with the interval counts' share (mechanism epsilon 0.9) the tree from m = 64."""
    kw = {"lower": 0, "upper": 2**20 - 1, "epsilon": 1.0}
    ms = (1, 2, 4, 8, 16, 20, 21, 32, 50, 64, 128)
    table = {n: "".join(choose_method(m, n=n, **kw)[0] for m in ms) for n in (None, 1000, 10_000, 100_000)}
    assert table == {None: "aaaaaaaaaat", 1000: "ajjaaaaaaat", 10_000: "ajjaaaaaaat", 100_000: "ajjaaaaaaat"}
    shared = "".join(choose_method(m, n=10_000, mechanism_epsilon=0.9, **kw)[0] for m in ms)
    assert shared == "ajjaaaaaatt"
    assert choose_method(4, n=100, **kw) == "approx"  # the gap margin: 0.25 * 100 / 5 < 2 ln 2^20
    # the size limit: offered (though not preferred) at m = 20 with n = 10^5, not at 21
    assert "joint" in predicted_errors(20, n=100_000, **kw) and "joint" not in predicted_errors(21, n=100_000, **kw)
    assert 20 * (100_000 + 1) <= JOINT_MAX_CELLS < 21 * (100_000 + 1)


def test_approx_works_on_arrays_without_a_python_object_per_value():
    """approx on 10^6 distinct values keeps its pieces as slices of the sorted arrays, not as Python
    lists (a list per piece traced 615 MiB and took 135 s)."""
    import tracemalloc

    from dptree.noise import make_source
    from dptree.quantiles.approx import approx_quantiles, layer_epsilon

    v = np.unique(np.random.default_rng(0).integers(0, 2**40, 10**6)).astype(np.uint64)
    c = np.ones(v.size, dtype=np.int64)
    qs = np.linspace(0.05, 0.95, 19)
    tracemalloc.start()
    try:
        out = approx_quantiles(v, c, qs, lower=0, upper=2**40, epsilon_call=layer_epsilon(1.0, 19), rng=make_source(1))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20, peak / 2**20  # the arrays themselves are 16 MiB
    ranks = np.searchsorted(v, np.asarray(out, dtype=np.uint64), side="right")
    assert np.all(np.abs(ranks - qs * v.size) < 100), ranks - qs * v.size


def test_approx_on_domains_beyond_int64_and_negative_offsets():
    """Offsets that do not fit uint64 (or are negative, when called directly) run on exact Python
    ints, with the same tie-aware answers."""
    from dptree.noise import make_source
    from dptree.quantiles.approx import approx_quantiles

    x = list(range(0, 2**66, 2**60)) * 10
    r = dptree.quantiles(x, [0.25, 0.5, 0.75], lower=0, upper=2**70, epsilon=2.0, method="approx", rng=1)
    want = np.quantile(np.array(x, dtype=float), [0.25, 0.5, 0.75])
    assert np.all(np.abs(np.array(r.values, dtype=float) - want) < 4 * 2**60), (r.values, want)
    out = approx_quantiles([-5, -3, 0, 4], [30, 30, 30, 30], [0.25, 0.5, 0.75], lower=-10, upper=10,
                           epsilon_call=5.0, rng=make_source(1))
    assert out == [-5, -3, 0]  # each level inside its tie block


def test_the_summary_says_why_mechanism_intervals_are_the_domain_and_how_to_narrow_them() -> None:
    x = np.random.default_rng(8).integers(0, 1000, 2000)
    kw = {"lower": 0, "upper": 1023, "epsilon": 1.0, "rng": 1, "interval": "bound"}
    bare = dptree.quantiles(x, [0.25, 0.5, 0.75], method="approx", **kw)
    assert bare.ci_low == [0, 0, 0] and bare.ci_high == [1023] * 3  # no declared size: ranks give no values
    assert "the domain's ends: declare the size, n= or --n" in bare.summary()
    assert "domain's ends" in dptree.quantiles(x, [0.5], method="approx", n_max=5000, **kw).summary()
    declared = dptree.quantiles(x, [0.25, 0.5, 0.75], method="approx", n=2000, **kw)
    assert declared.ci_low[1] > 0 and "domain's ends" not in declared.summary()
    assert "domain's ends" not in dptree.quantiles(x, [0.5], method="tree", rng=1, lower=0, upper=1023,
                                                   epsilon=1.0).summary()
    # the default: measured, informative without a declared size
    measured = dptree.quantiles(x, [0.25, 0.5, 0.75], method="approx", rng=1, lower=0, upper=1023, epsilon=1.0)
    assert "measured by noisy counts at 0.1 of epsilon" in measured.summary() and "domain's ends" not in measured.summary()
    assert all(0 < lo <= v <= hi < 1023 for lo, v, hi in zip(measured.ci_low, measured.values, measured.ci_high))


@pytest.mark.parametrize("method", ["approx", "exponential"])
def test_a_lower_bound_on_n_gives_intervals_like_the_exact_n_and_never_narrower(method: str) -> None:
    x = np.random.default_rng(9).integers(0, 1000, 3000)
    kw = {"lower": 0, "upper": 1023, "epsilon": 1.0, "method": method, "interval": "bound"}
    qs = [0.1, 0.25, 0.5, 0.75, 0.9]
    exact = dptree.quantiles(x, qs, n=3000, rng=4, **kw)
    same = dptree.quantiles(x, qs, n_min=3000, n_max=4000, rng=4, **kw)  # the same draws: n only shapes intervals
    assert same.values == exact.values and (same.ci_low, same.ci_high) == (exact.ci_low, exact.ci_high)
    assert same.n_min == 3000 and "domain's ends" not in same.summary()
    loose = dptree.quantiles(x, qs, n_min=400, rng=4, **kw)
    assert loose.values == exact.values
    assert all(a <= b for a, b in zip(loose.ci_low, exact.ci_low)) and all(
        a >= b for a, b in zip(loose.ci_high, exact.ci_high))  # a smaller bound: intervals contain the exact n's
    assert any(a < b for a, b in zip(loose.ci_low, exact.ci_low)) or any(
        a > b for a, b in zip(loose.ci_high, exact.ci_high))
    assert loose.ci_low[2] > 0 and loose.ci_high[2] < 1023  # still narrower than the domain


def test_n_min_is_refused_with_an_exact_n_or_above_n_max_and_kept_in_the_file(tmp_path: Any) -> None:
    import json

    from dptree.errors import ReleaseFileError
    from dptree.io.release_file import canonical_checksum

    x = np.arange(500) % 100
    kw = {"lower": 0, "upper": 99, "epsilon": 1.0, "method": "approx"}
    with pytest.raises(InvalidParameterError, match="drop n_min="):
        dptree.quantiles(x, [0.5], n=500, n_min=100, **kw)
    with pytest.raises(InvalidParameterError, match="n_min=600 exceeds n_max=500"):
        dptree.quantiles(x, [0.5], n_max=500, n_min=600, **kw)
    rel = dptree.quantiles(x, [0.25, 0.75], n_min=400, rng=2, **kw)
    rel.save(tmp_path / "q.json", allow_nonprivate=True)
    back = dptree.load(tmp_path / "q.json")
    assert back.n_min == 400 and back.ci_low == rel.ci_low
    doc = json.loads((tmp_path / "q.json").read_text())
    doc["parameters"]["n_declared"] = 500  # an exact n beside n_min: not what any call writes
    doc["checksum"] = canonical_checksum(doc)
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(ReleaseFileError, match="n_min"):
        dptree.load(tmp_path / "bad.json")


def test_joint_on_a_domain_of_2_to_the_62_points_is_refused_before_the_data_is_read() -> None:
    class Unread:  # any touch of the data fails the test
        def __getattr__(self, name: str) -> Any:
            raise AssertionError("the data was read")

    with pytest.raises(InvalidParameterError, match="fewer than 2\\^62 points; this float domain"):
        dptree.quantiles(Unread(), [0.5], lower=0.0, upper=1e6, epsilon=1.0, method="joint", n_max=30000)
    rel = dptree.quantiles(np.arange(100) * 1.5, [0.5], lower=0.0, upper=1e6, epsilon=1.0, n_max=30000, rng=1)
    assert rel.method != "joint"  # auto never offers it there


def test_too_many_levels_for_calibrated_intervals_are_refused_before_the_data() -> None:
    """10^5 levels: auto picks the tree, whose calibrated intervals cost about a millisecond per
    level (two minutes; a user waited past 95 s). Refused at once with the way out; the pivot
    intervals take any number of levels."""
    from dptree.quantiles.api import CALIBRATED_MAX_LEVELS

    qs = np.linspace(1e-4, 0.9999, CALIBRATED_MAX_LEVELS + 1)
    with pytest.raises(InvalidParameterError, match="interval='pivot'"):
        dptree.quantiles(object(), qs, lower=0, upper=127, epsilon=1.0, method="tree")  # refused before reading
    rel = dptree.quantiles(np.arange(128), qs, lower=0, upper=127, epsilon=1.0, method="tree", interval="pivot",
                           rng=1)
    assert rel.interval == "pivot" and len(rel.values) == qs.size


def test_the_trees_interval_option_is_refused_beside_a_method_without_it() -> None:
    """interval='pivot' with method='approx' was silently ignored (approx states rank radii)."""
    for method in ("approx", "exponential", "joint"):
        with pytest.raises(InvalidParameterError, match="leave interval out"):
            dptree.quantiles(np.arange(100), [0.5], lower=0, upper=127, epsilon=1.0, method=method, n=100,
                             interval="pivot")
    # with auto the caller cannot know the method: the option applies when the tree runs
    rel = dptree.quantiles(np.arange(100), [0.5], lower=0, upper=127, epsilon=1.0, interval="pivot", rng=1)
    assert rel.interval == ("pivot" if rel.method == "tree" else "counts")
    # and the mechanism methods' options beside the tree: refused when it is named, the tree's default under auto
    with pytest.raises(InvalidParameterError, match="'calibrated' \\(default\\) or 'pivot'"):
        dptree.quantiles(np.arange(100), [0.5], lower=0, upper=127, epsilon=1.0, method="tree", interval="bound")
    many = np.linspace(0.01, 0.99, 2000)
    rel = dptree.quantiles(np.arange(100), many, lower=0, upper=127, epsilon=1.0, interval="bound", rng=1)
    assert rel.method == "tree" and rel.interval == "calibrated"
    with pytest.raises(InvalidParameterError, match="drop interval_share="):
        dptree.quantiles(np.arange(100), [0.5], lower=0, upper=127, epsilon=1.0, method="approx", interval="bound",
                         interval_share=0.2)


def test_the_trees_grid_is_refused_beside_a_method_without_it() -> None:
    for method in ("approx", "exponential", "joint"):
        with pytest.raises(InvalidParameterError, match="leave grid out"):
            dptree.quantiles(np.arange(100), [0.5], lower=0, upper=127, epsilon=1.0, method=method, n=100, grid=64)
    for method in ("tree", "auto"):
        rel = dptree.quantiles(np.arange(100), [0.5], lower=0, upper=127, epsilon=1.0, method=method, grid=64, rng=1)
        assert len(rel.values) == 1


@pytest.mark.parametrize("method", ["approx", "tree", "exponential"])
def test_a_file_edited_to_lower_above_upper_is_refused(method: str, tmp_path: Any) -> None:
    from dptree.io.release_file import canonical_checksum

    path = tmp_path / "q.json"
    dptree.quantiles(np.arange(200) % 50, [0.5], lower=0, upper=60, epsilon=1.0, method=method).save(path)
    doc = json.loads(path.read_text())
    doc["parameters"]["domain"].update(lower=60, upper=0)
    del doc["checksum"]
    doc["checksum"] = canonical_checksum(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(ReleaseFileError, match="lower must be <= upper"):
        dptree.load(path)
