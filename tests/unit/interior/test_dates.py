"""Date domains for the point releases (median, quantile, interior_point) and dptree.quantiles.

A date domain's points are whole units of a public resolution ``width`` from ``lower``: a record
at time t has the offset floor((t - lower) / width). So every mechanism on dates must be the same
mechanism on those integer offsets: with the same seed the released offset is identical. These
tests compare each date release with the integer release of the offsets the definition gives.
"""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest

import dptree
from dptree.errors import DataError, DomainError, InvalidParameterError, ReleaseFileError

DAY = np.timedelta64(1, "D")
LOWER = np.datetime64("2024-01-01")
UPPER = np.datetime64("2024-12-31")


def _days(n: int = 600, seed: int = 0) -> np.ndarray:
    return LOWER + np.random.default_rng(seed).integers(0, 366, n) * DAY


def _as_date(offset: int, width: np.timedelta64 = DAY) -> np.datetime64:
    return np.datetime64(LOWER, "ns") + offset * width.astype("timedelta64[ns]")


def test_median_quantile_and_interior_point_on_dates_equal_the_same_mechanism_on_day_offsets() -> None:
    x = _days()
    offsets = ((x - LOWER) // DAY).astype(np.int64)
    for seed in range(4):
        got = dptree.median(x, lower=LOWER, upper=UPPER, epsilon=1.0, rng=seed).value
        want = dptree.median(offsets, lower=0, upper=365, epsilon=1.0, rng=seed).value
        assert isinstance(got, np.datetime64) and got == _as_date(want)
        got = dptree.quantile(x, 0.9, lower="2024-01-01", upper="2024-12-31", epsilon=0.5, rng=seed).value
        assert got == _as_date(dptree.quantile(offsets, 0.9, lower=0, upper=365, epsilon=0.5, rng=seed).value)
        for method, extra in (("exponential", {}), ("treelog", {"delta": 1e-6, "n": 600, "run_anyway": True})):
            got_ip = dptree.interior_point(x, lower=LOWER, upper=UPPER, epsilon=1.0, method=method, rng=seed, **extra)
            want_ip = dptree.interior_point(offsets, lower=0, upper=365, epsilon=1.0, method=method, rng=seed,
                                            **extra)
            assert got_ip.value == _as_date(want_ip.value) and got_ip.bottom == want_ip.bottom


def test_width_is_the_resolution_and_clamping_happens_in_units() -> None:
    """Timestamps count by whole units of width from lower; dates beyond the bounds (even years
    outside the nanosecond range) clamp to the first or last unit instead of wrapping around."""
    rng = np.random.default_rng(1)
    t = np.datetime64("2024-01-01T00:00:00") + rng.integers(0, 10 * 86400, 400) * np.timedelta64(1, "s")
    t = np.concatenate([t, np.array(["1500-01-01", "9999-12-31"], dtype="datetime64[s]")])
    width = dt.timedelta(hours=6)
    hi = np.datetime64("2024-01-11")
    units = np.clip((t.astype(np.int64) - LOWER.astype("datetime64[s]").astype(np.int64)) // (6 * 3600), 0, 40)
    for seed in range(3):
        got = dptree.quantile(t, 0.25, lower=LOWER, upper=hi, width=width, epsilon=1.0, rng=seed)
        want = dptree.quantile(units, 0.25, lower=0, upper=40, epsilon=1.0, rng=seed).value
        assert got.value == _as_date(want, np.timedelta64(6, "h"))
        assert got.upper == np.datetime64("2024-01-11T00:00", "ns") and got.width == np.timedelta64(6 * 3600 * 10**9,
                                                                                                      "ns")


@pytest.mark.parametrize("method", ["tree", "approx", "joint", "exponential", "auto"])
def test_quantiles_on_dates_equal_the_integer_release_and_round_trip(method: str) -> None:
    x = _days(2000, seed=2)
    offsets = ((x - LOWER) // DAY).astype(np.int64)
    qs = [0.1, 0.5, 0.9]
    got = dptree.quantiles(x, qs, lower=LOWER, upper=UPPER, epsilon=1.0, method=method, n=2000, rng=5)
    want = dptree.quantiles(offsets, qs, lower=0, upper=365, epsilon=1.0, method=method, n=2000, rng=5,
                            width=1 if method == "tree" else None)
    assert got.method == want.method
    for a, b in ((got.values, want.values), (got.ci_low, want.ci_low), (got.ci_high, want.ci_high)):
        assert all(isinstance(v, np.datetime64) for v in a)
        assert a == [_as_date(int(v)) for v in b]
    doc = json.loads(json.dumps(got.to_document()))
    assert doc["parameters"]["domain"] == {"kind": "datetime", "lower": "2024-01-01T00:00:00.000000000",
                                           "upper": "2024-12-31T00:00:00.000000000", "width": 86_400 * 10**9}
    back = type(got).from_document(doc)
    assert back.values == got.values and back.ci_low == got.ci_low and back.width == got.width


def test_point_releases_round_trip_and_refuse_a_value_off_the_grid() -> None:
    x = _days()
    releases = [dptree.median(x, lower=LOWER, upper=UPPER, epsilon=1.0, rng=1, width=dt.timedelta(hours=12)),
                dptree.interior_point(x, lower=LOWER, upper=UPPER, epsilon=1.0, rng=1)]
    for r in releases:
        doc = json.loads(json.dumps(r.to_document()))
        back = type(r).from_document(doc)
        assert back.value == r.value and back.lower == r.lower and back.width == r.width
        doc["measurements"]["value"] = str(np.datetime64(r.value, "ns") + np.timedelta64(1, "h"))  # off the grid
        with pytest.raises(ReleaseFileError, match="point of the domain"):
            type(r).from_document(doc)


def test_date_files_and_relations_count_like_arrays(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import duckdb
    import pandas as pd

    rng = np.random.default_rng(3)
    t = np.datetime64("2024-01-01T00:00:00") + rng.integers(0, 300 * 86400, 3000) * np.timedelta64(1, "s")
    path = tmp_path / "t.parquet"
    pd.DataFrame({"t": t}).to_parquet(path)
    kw = {"lower": "2024-01-01", "upper": "2024-12-31", "epsilon": 1.0, "rng": 4}
    want = dptree.median(t, **kw).value
    assert dptree.median(str(path), column="t", **kw).value == want
    assert dptree.median(duckdb.sql(f"SELECT * FROM '{path}'"), column="t", **kw).value == want
    want_q = dptree.quantiles(t, [0.25, 0.75], method="approx", **kw).values
    assert dptree.quantiles(str(path), [0.25, 0.75], method="approx", column="t", **kw).values == want_q


@pytest.mark.slow
def test_spark_date_column_counts_like_arrays() -> None:
    from _spark import spark_session

    spark = spark_session()
    x = _days(500, seed=4)
    days = [dt.date.fromisoformat(str(v)) for v in x]
    sdf = spark.createDataFrame([(d,) for d in days], "d date")
    kw = {"lower": LOWER, "upper": UPPER, "epsilon": 1.0, "rng": 6}
    assert dptree.median(sdf, column="d", **kw).value == dptree.median(x, **kw).value


def test_date_errors_are_clear() -> None:
    x = _days(50)
    with pytest.raises(DataError, match="need date bounds"):
        dptree.median(x, lower=0, upper=400, epsilon=1.0)
    with pytest.raises(DataError, match="date domain needs dates, datetimes or ISO date strings as values, got numbers"):
        dptree.median(np.arange(10), lower=LOWER, upper=UPPER, epsilon=1.0)
    with pytest.raises(DomainError, match="both be dates or both be numbers"):
        dptree.interior_point(x, lower=LOWER, upper=400, epsilon=1.0)
    with pytest.raises(DomainError, match="not a number, a date or a timestamp"):
        dptree.quantile(x, 0.5, lower="soon", upper=UPPER, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="resolution of a date domain"):
        dptree.median(np.arange(10), lower=0, upper=10, epsilon=1.0, width=2)
    with pytest.raises(DomainError, match="timedelta"):
        dptree.median(x, lower=LOWER, upper=UPPER, epsilon=1.0, width="1d")
    with pytest.raises(DomainError, match="must be before"):
        dptree.quantiles(x, [0.5], lower=UPPER, upper=LOWER, epsilon=1.0)
    with pytest.raises(DomainError, match="numeric domains"):
        dptree.learn_threshold(x, np.ones(50), lower=LOWER, upper=UPPER, epsilon=1.0)
    nat = np.array(["2024-03-01", "NaT", "2024-03-02"], dtype="datetime64[D]")
    with pytest.raises(DataError, match="missing") as err:
        dptree.median(nat, lower=LOWER, upper=UPPER, epsilon=1.0)
    assert "2024" not in str(err.value)  # names no value
    kept = dptree.median(nat, lower=LOWER, upper=UPPER, epsilon=1.0, on_invalid="drop", rng=1).value
    assert kept == dptree.median(nat[[0, 2]], lower=LOWER, upper=UPPER, epsilon=1.0, rng=1).value


def test_cli_median_of_a_date_column(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from dptree.cli.main import main

    x = _days(300, seed=7)
    f = tmp_path / "d.csv"
    f.write_text("day\n" + "\n".join(str(v) for v in x) + "\n")
    argv = ["median", str(f), "--column", "day", "--lower", "2024-01-01", "--upper", "2024-12-31", "--width", "12h",
            "--epsilon", "1", "--seed", "3", "--allow-nonprivate"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    want = dptree.median(x, lower=LOWER, upper=UPPER, epsilon=1.0, width=dt.timedelta(hours=12), rng=3).value
    assert f"median: {np.datetime_as_string(want, unit='auto')}" in out
