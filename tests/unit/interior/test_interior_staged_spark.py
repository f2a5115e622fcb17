"""The staged exponential mechanisms on Spark DataFrames (dptree.interior.staged):
the bucket histogram, the rank window and the ranks of proposed points counted in Spark
(SparkOrderedCounts), with the same buckets, keys and counts as DuckDB's, and therefore the
same point as the in-memory path for the same seed. Spark runs in local[2] (tests/_spark.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _staged_calls import count_staged_queries

from dptree import interior_point, median, quantile
from dptree.data.engines import spark as spark_engine
from dptree.data.engines import spark_ordered
from dptree.data.histograms import ordered_counts
from dptree.errors import DataError
from dptree.interior import blocks as blocks_module

L = 1 << 63


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts the Spark session's staged queries; collecting every distinct value (value_counts)
    must not run."""
    return count_staged_queries(monkeypatch, spark_ordered.SparkOrderedCounts, spark_engine.SparkEngine)


def _columns() -> dict[str, np.ndarray]:
    gen = np.random.default_rng(3)
    n = 300
    x = np.concatenate([np.round(gen.normal(0, 3, n - 5), 1), [-0.0, 0.0, 0.0, -20.0, 30.0]])  # ties, +-0, clamped
    big = gen.integers(-L, L - 1, n, dtype=np.int64, endpoint=True)  # the whole 64-bit range
    big[:4] = [-L, -L, L - 1, 5]
    return {"x": x, "k": gen.integers(-100, 5000, n), "big": big}


#: (column, lower, upper): a float domain (values beyond it clamped, -0.0), one whose bucket width
#: overflows (one bucket: both window ends in it), an integer column on a float domain (an integer
#: domain: the 2-bit window release of the next test), the largest domain of BIGINT offsets (2^63
#: points, values above it clamped) and a 2^64-point domain beyond the long range (DECIMAL offsets)
DOMAINS = [("x", -10.0, 10.0), ("x", -1e308, 1e308), ("k", -200.0, 6000.0), ("big", -L, -1),
           ("big", -L - 10, L - 11)]


@pytest.mark.slow
def test_spark_gives_the_in_memory_point_seed_by_seed(calls) -> None:
    """Same candidates, same draws, same ranks: a Spark DataFrame gives the point of the same
    data as an array, for median, quantile and interior point, without value_counts."""
    from _spark import spark_frame

    cols = _columns()
    df = spark_frame(cols)
    releases = 0
    for col, lo, hi in DOMAINS:
        kinds = {-10.0: ("median", "quantile"), -1e308: ("interior",), -L - 10: ("quantile",)}.get(lo, ("median",))
        for kind in kinds:
            def run(data, **kw):  # type: ignore[no-untyped-def]
                if kind == "median":
                    return median(data, lower=lo, upper=hi, epsilon=1.0, rng=releases, **kw).value
                if kind == "quantile":
                    return quantile(data, 0.1, lower=lo, upper=hi, epsilon=2.0, rng=releases, **kw).value
                return interior_point(data, lower=lo, upper=hi, epsilon=1.0, rng=releases, method="exponential",
                                      **kw).value

            assert run(df, column=col) == run(cols[col]), (col, lo, kind)
            releases += 1
    # a FloatType column: read as DOUBLE, as value_counts and DuckDB read a float32 column
    f = df.selectExpr("CAST(x AS FLOAT) AS f")
    assert median(f, column="f", lower=-1.0, upper=1.0, epsilon=1.0, rng=7).value == \
        median(cols["x"].astype(np.float32), lower=-1.0, upper=1.0, epsilon=1.0, rng=7).value
    assert calls["buckets"] == calls["window"] == releases + 1  # two queries per release


@pytest.mark.slow
def test_spark_counts_equal_duckdb_and_proposals_outside_the_window(tmp_path: Path, calls, monkeypatch) -> None:
    """The same bucket histogram, windows (keys: 0.0 for -0.0; uint64 offsets near 2^64) and
    ranks as DuckDB's session on the same values; with a 2-bit window the sampler proposes
    outside points (Spark rank queries) and still returns the in-memory point."""
    from _spark import spark_frame

    cols = _columns()
    df = spark_frame(cols)
    path = tmp_path / "d.parquet"
    pd.DataFrame(cols).to_parquet(path)
    for col, lo, hi in [("x", -10.0, 10.0), ("big", -L - 10, L - 11)]:
        with ordered_counts(df, column=col, lower=lo, upper=hi) as s, \
                ordered_counts(str(path), column=col, lower=lo, upper=hi) as d:
            assert s is not None and d is not None
            hist = s.buckets(64)
            np.testing.assert_array_equal(hist, d.buckets(64))
            cum = np.cumsum(hist)
            # buckets 20 .. 40 rank-filtered to the values of buckets 25 .. 35 and one each of 25
            # and 36 (rank filters inside two buckets); on x also every bucket, and a few ranks
            windows = [(20, 40, int(cum[19]), int(cum[25]), int(cum[35]))]
            if col == "x":
                windows += [(0, 63, 0, -1, 10**6), (30, 33, int(cum[29]), int(cum[29]) + 1, int(cum[29]) + 3)]
            for args in windows:
                got, want = s.window(*args), d.window(*args)
                for g, w in zip(got, want):
                    assert g.dtype == w.dtype
                    np.testing.assert_array_equal(g, w)
                assert got[1].sum() > 0
                if col == "x" and args[0] == 0:
                    assert 0.0 in got[0] and not np.signbit(got[0][got[0] == 0]).any()  # -0.0 read as 0.0
            for p in [got[0][0], 0.0 if col == "x" else hi - lo]:
                assert s.ranks(p) == d.ranks(p), (col, p)
    monkeypatch.setattr(blocks_module, "_WINDOW_BITS", 2)
    asked = calls["ranks"]
    assert median(df, column="k", lower=-50, upper=4000, epsilon=1.0, rng=1).value == \
        median(cols["k"], lower=-50, upper=4000, epsilon=1.0, rng=1).value
    assert calls["ranks"] > asked  # the outside proposals were exercised


@pytest.mark.slow
def test_missing_and_infinite_values_are_refused_or_dropped_as_in_memory(calls) -> None:
    """NaN, NULL and +-inf are refused with the in-memory message (naming no value or count),
    or dropped record by record with on_invalid="drop"; all dropped gives the mechanism on no data."""
    from _spark import spark_frame

    x = np.array([1.5, np.nan, 2.5, np.inf, None, -np.inf, 2.5, 7.0], dtype=object)
    df = spark_frame({"x": x, "nan": np.array([np.nan, None, np.inf], dtype=object).repeat(3)[:8]})
    clean = np.array([1.5, 2.5, 2.5, 7.0])
    with pytest.raises(DataError) as mem:
        median(np.array([1.5, np.nan]), lower=0.0, upper=10.0, epsilon=1.0)
    for col in ("x", "nan"):
        with pytest.raises(DataError) as staged:
            median(df, column=col, lower=0.0, upper=10.0, epsilon=1.0)
        assert str(staged.value) == str(mem.value)
    assert median(df, column="x", lower=0.0, upper=10.0, epsilon=1.0, rng=4, on_invalid="drop").value == \
        median(clean, lower=0.0, upper=10.0, epsilon=1.0, rng=4).value
    assert median(df, column="nan", lower=0.0, upper=10.0, epsilon=1.0, rng=4, on_invalid="drop").value == \
        median(np.array([], np.float64), lower=0.0, upper=10.0, epsilon=1.0, rng=4).value
    assert calls["window"] == 2


@pytest.mark.slow
def test_spark_quantiles_give_the_in_memory_points(calls) -> None:
    """``dptree.quantiles`` with approx and exponential on a Spark DataFrame run staged
    (dptree.quantiles.staged: windows read ahead, one Spark window query each) and give the
    array's points seed by seed, integer and float domains."""
    import dptree
    from _spark import spark_frame

    cols = _columns()
    df = spark_frame(cols)
    qs = [0.1, 0.25, 0.5, 0.9]
    for col, lo, hi in (("x", -10.0, 10.0), ("k", -50, 4000)):
        for method, seed in (("approx", 1), ("exponential", 2)):
            kw = dict(lower=lo, upper=hi, epsilon=2.0, method=method, rng=seed)
            assert dptree.quantiles(df, qs, column=col, **kw).values == dptree.quantiles(cols[col], qs, **kw).values
    assert calls["buckets"] == 4


@pytest.mark.slow
def test_spark_batched_windows_equal_one_window_each() -> None:
    """SparkOrderedCounts.windows (one job for many windows: buckets kept whole or cut by any
    request's rank range) against window() per request: overlapping bucket ranges, a one-bucket
    request, rank ranges cutting into buckets, integer and float domains."""
    from _spark import spark_frame

    gen = np.random.default_rng(1)
    cols = {"k": gen.integers(-5, 100, 3000), "x": gen.normal(0, 1, 3000)}
    df = spark_frame(cols)
    for col, lo, hi in (("k", 0, 90), ("x", -2.0, 2.0)):
        with ordered_counts(df, column=col, lower=lo, upper=hi) as session:
            assert session is not None
            cum = np.cumsum(session.buckets(64))
            reqs = [(0, 3, 0, 0, 40), (2, 10, int(cum[1]), int(cum[1]) + 3, int(cum[1]) + 200),
                    (20, 63, int(cum[19]), 2000, 2990), (5, 5, int(cum[4]), int(cum[4]), int(cum[4])),
                    (2, 10, int(cum[1]), int(cum[1]) + 150, int(cum[1]) + 160)]
            many = session.windows(reqs)
            assert len(many) == len(reqs)
            for req, got in zip(reqs, many):
                want = session.window(*req)
                assert got[0].size > 0
                assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(want, got)), (col, req)
