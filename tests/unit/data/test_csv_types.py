"""A CSV column is read as its domain needs, not as DuckDB guesses from a sample of its first rows.

DuckDB infers a CSV column's type from a sample (about 20,000 rows). A column guessed to be BIGINT
reads a later "5.25" as 5 without an error, and one guessed to be DATE drops a later time of day:
silently wrong counts. Every file below puts the value that breaks the guess after 30,000 rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dptree
from dptree.data.domain import Domain, make_domain
from dptree.data.engines.base import Bucket
from dptree.data.engines.duckdb import DuckDBEngine, csv_value_types
from dptree.errors import DataError, DPTreeError, InputFormatError

HEAD = 30_000  # rows before the value that breaks DuckDB's guess


def _csv(tmp_path: Path, name: str, tail: list[str], head: list[str] | None = None) -> str:
    rows = head if head is not None else [str(i % 100) for i in range(HEAD)]
    path = tmp_path / name
    path.write_text("x\n" + "\n".join(rows + tail) + "\n")
    return str(path)


def _histogram(path: str, dom: Domain) -> np.ndarray:
    counted = DuckDBEngine().counts(path, [Bucket("x", dom)])
    hist = np.zeros(dom.size, np.int64)
    hist[counted.keys] = counted.n
    return hist


def test_decimals_after_the_sample_are_counted_in_their_own_bucket(tmp_path: Path) -> None:
    path = _csv(tmp_path, "late.csv", ["5.25"] * 500)
    dom = make_domain(0.0, 120.0, 0.25)
    hist = _histogram(path, dom)
    assert hist[21] == 500  # [5.25, 5.5): DuckDB's guess (BIGINT) put all 500 at 5.0
    assert hist[20] == HEAD // 100  # 5.0 itself: 300 records, not 800
    assert hist.sum() == HEAD + 500


def test_a_late_non_integer_is_refused_on_an_integer_domain(tmp_path: Path) -> None:
    path = _csv(tmp_path, "late_int.csv", ["5.5"])
    with pytest.raises(DataError, match="integer"):
        dptree.range_tree(path, column="x", lower=0, upper=120, epsilon=1.0, rng=1)
    for run in (lambda: dptree.median(path, column="x", lower=0, upper=120, epsilon=1.0, rng=1),
                lambda: dptree.interior_point(path, column="x", lower=0, upper=120, epsilon=1.0, rng=1)):
        with pytest.raises(DataError, match="not integers"):
            run()
    clean = _csv(tmp_path, "ints.csv", [])
    assert dptree.median(clean, column="x", lower=0, upper=120, epsilon=5.0, rng=1).value in range(121)


def test_wide_integer_domains_stay_exact_and_refuse_fractions_beyond_two_to_the_53(tmp_path: Path) -> None:
    big = 2**60
    ids = [str(big + i) for i in range(HEAD)]
    assert csv_value_types("x", "integer", 0, 2**64 - 1) == ({}, {"x": "HUGEINT"})
    frac = _csv(tmp_path, "frac.csv", [f"{big + 1}.5"], head=ids)  # DOUBLE would read it as an integer
    with pytest.raises(DataError, match="not integers"):
        dptree.interior_point(frac, column="x", lower=0, upper=2**64 - 1, epsilon=1.0, rng=1)
    exact = _csv(tmp_path, "ids.csv", [str(big + 2**40 + 1)], head=ids)
    vals, counts = dptree.data.histograms.value_counts(exact, column="x", domain=("integer", 0, 2**64 - 1))
    assert int(vals[-1]) == big + 2**40 + 1 and counts.sum() == HEAD + 1


def test_a_late_time_of_day_is_kept_on_a_date_domain(tmp_path: Path) -> None:
    days = [f"2024-01-{i % 28 + 1:02d}" for i in range(HEAD)]
    path = _csv(tmp_path, "times.csv", ["2024-02-01 10:30:00"], head=days)
    dom = make_domain(np.datetime64("2024-01-01"), np.datetime64("2024-02-02"), np.timedelta64(1, "h"))
    hist = _histogram(path, dom)
    assert hist[31 * 24 + 10] == 1 and hist[31 * 24] == 0  # 10:00 on Feb 1, not midnight (a guessed DATE)


def test_a_headerless_csv_never_shows_its_first_line(tmp_path: Path) -> None:
    path = tmp_path / "nohdr.csv"
    path.write_text("alice_smith_ssn_123\n")
    for run in (lambda: dptree.range_tree(str(path), column="age", lower=0, upper=120, epsilon=1.0),
                lambda: dptree.median(str(path), column="age", lower=0, upper=120, epsilon=1.0)):
        with pytest.raises(InputFormatError, match="header row") as err:
            run()
        assert "alice" not in str(err.value)


def test_text_in_a_numeric_column_says_what_to_fix_without_the_value(tmp_path: Path) -> None:
    path = _csv(tmp_path, "text.csv", ["secret_text_42"])
    with pytest.raises(DPTreeError, match="not a number") as err:
        dptree.range_tree(path, column="x", lower=0.0, upper=120.0, width=1.0, epsilon=1.0)
    assert "secret" not in str(err.value) and "30001" not in str(err.value)


def test_an_all_empty_column_is_all_missing(tmp_path: Path) -> None:
    """DuckDB guesses VARCHAR for a column of empty fields; read as numbers they are missing values,
    dropped under the declared policy (whether any value is present is not revealed by an error)."""
    path = tmp_path / "empty.csv"
    path.write_text("x,y\n,1\n,2\n")
    assert dptree.range_tree(str(path), column="x", lower=0, upper=9, epsilon=1.0, on_invalid="drop", rng=1).private is False
    assert dptree.median(str(path), column="x", lower=0, upper=9, epsilon=1.0, on_invalid="drop", rng=1).value in range(10)
    with pytest.raises(DataError, match="missing"):
        dptree.range_tree(str(path), column="x", lower=0, upper=9, epsilon=1.0, rng=1)


def test_a_malformed_row_is_named_by_kind_never_quoted(tmp_path: Path) -> None:
    """A row with a stray field, after the sample: DuckDB's error quotes the line. Every path (the
    histogram, the guard scan of integer domains, the staged and sorted interior paths) says what
    is wrong without it."""
    path = tmp_path / "stray.csv"
    path.write_text("x,y\n" + "".join(f"{i % 100},1\n" for i in range(HEAD)) + "77777,1,secret\n")
    runs = (lambda: dptree.range_tree(str(path), column="x", lower=0, upper=120, epsilon=1.0),
            lambda: dptree.median(str(path), column="x", lower=0, upper=120, epsilon=1.0),
            lambda: dptree.median(str(path), column="x", lower=0.0, upper=120.0, epsilon=1.0),
            lambda: dptree.interior_point(str(path), column="x", lower=0, upper=2**64 - 1, epsilon=1.0))
    for run in runs:
        with pytest.raises(InputFormatError, match="different number of fields") as err:
            run()
        assert "secret" not in str(err.value) and "77777" not in str(err.value)
