"""The same rows give the same exact counts in every container and engine (the cross-engine review
of Dec 7): each disagreement below was a silently wrong release in one of them, and those that
depended on another row (a null) a privacy leak as well."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dptree.data.histograms import leaf_histogram, value_counts
from dptree.rangetree.plan import plan_range_tree
from dptree.data.domain import key_domain

B = 2**53


def _parquet(tmp_path: Path, sql: str) -> str:
    path = str(tmp_path / "d.parquet")
    duckdb.connect().execute(f"COPY ({sql}) TO '{path}'")
    return path


@pytest.mark.parametrize(("lower", "upper", "width", "value", "leaf"), [
    (B + 1, B + 20, 1, 0.0, 0),          # lower rounded as a DOUBLE: leaf -1, read as missing (dropped or refused)
    (B + 3, B + 20, 1, 0.0, 0),          # lower rounded up: the record fell in leaf 1
    (2**62 - 20, 2**62 - 1, 3, 0.0, 0),  # the last leaf instead of the first
    (B - 3, B + 9, 1, 2.0**63, 12),      # upper rounded: leaf 11
])
def test_integer_bounds_past_2_53_are_exact_over_a_double_column(tmp_path: Path, lower: int, upper: int, width: int,
                                                                 value: float, leaf: int) -> None:
    plan = plan_range_tree(lower=lower, upper=upper, width=width, epsilon=1.0)
    path = _parquet(tmp_path, f"SELECT CAST({value!r} AS DOUBLE) AS v")
    want = leaf_histogram(np.array([value]), plan)
    assert want[leaf] == 1
    for missing in ("error", "drop"):
        assert np.array_equal(leaf_histogram(path, plan, column="v", on_invalid=missing), want)
        assert np.array_equal(leaf_histogram(duckdb.sql(f"SELECT CAST({value!r} AS DOUBLE) AS v"), plan,
                                             column="v", on_invalid=missing), want)


def test_whole_decimals_past_2_53_are_exact(tmp_path: Path) -> None:
    """DECIMAL columns (Arrow decimal128, Parquet, DuckDB) went through float64: 2^53 + 1 was 2^53."""
    plan = plan_range_tree(lower=B - 3, upper=B + 9, epsilon=1.0)
    want = leaf_histogram(np.array([B + 1]), plan)
    assert want[4] == 1
    arrow = pa.array([Decimal(B + 1), None], pa.decimal128(38, 0))
    assert np.array_equal(leaf_histogram(arrow, plan, on_invalid="drop"), want)
    for precision in (18, 38):
        path = _parquet(tmp_path, f"SELECT CAST({B + 1} AS DECIMAL({precision},0)) AS v")
        assert np.array_equal(leaf_histogram(path, plan, column="v"), want)
        values, counts = value_counts(path, column="v", domain=("integer", B - 3, B + 9))
        assert [int(v) for v in values] == [B + 1] and counts.tolist() == [1]


def test_an_unsigned_arrow_column_with_a_null_keeps_its_large_values() -> None:
    """uint64 with a null was cast to int64: 2^64 - 1 became -1 (another bucket) and 2^63 an
    overflow, so one null row moved or broke another row."""
    from dptree.interior.encoding import prepare

    plan = plan_range_tree(lower=-3, upper=5, epsilon=1.0)
    for big in (2**64 - 1, 2**63):
        without = leaf_histogram(pa.array([big], pa.uint64()), plan, on_invalid="drop")
        with_null = leaf_histogram(pa.array([big, None], pa.uint64()), plan, on_invalid="drop")
        assert without[8] == 1 and np.array_equal(with_null, without)  # upper's leaf (the array is padded)
        keys = key_domain(-3, 5, "i").read_positions(pa.array([big, None], pa.uint64()), on_invalid="drop")
        assert keys.tolist() == [8]
    _, offsets, cnts = prepare(pa.array([2**63, B, None], pa.uint64()), -3, 5, None, on_invalid="drop")
    assert list(offsets) == [8] and list(cnts) == [2]  # both past upper: clamped to it, no OverflowError


def test_nanosecond_timestamps_are_floored_not_rounded(tmp_path: Path) -> None:
    """A TIMESTAMP_NS column was cast to microseconds, rounding 23:59:59.9999995 into the next day."""
    plan = plan_range_tree(lower="1970-01-01", upper="1970-01-10", epsilon=1.0)
    t = np.array(["1970-01-01T23:59:59.999999999"], dtype="datetime64[ns]")
    want = leaf_histogram(t, plan)
    assert want[0] == 1
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"t": pa.array(t, pa.timestamp("ns"))}), path)
    assert np.array_equal(leaf_histogram(path, plan, column="t"), want)


def test_a_sparse_date_domain_reads_iso_text_and_no_rows() -> None:
    """A list of ISO strings was refused unless it held a None (which made it an object array)."""
    dom = key_domain(np.datetime64("1970-01-01"), np.datetime64("1970-01-10"), "M")
    assert dom.read_positions(["1970-01-02"], on_invalid="drop").tolist() == [86_400 * 10**9]
    assert dom.read_positions(["1970-01-02", None], on_invalid="drop").tolist() == [86_400 * 10**9]
    assert dom.read_positions([], on_invalid="drop").tolist() == []
