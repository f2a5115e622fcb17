"""One record changes the exact counts by that record only, whatever the others hold: group keys
match exactly (never through DOUBLE), a CSV's group keys and user ids are read as their text
(never as a type DuckDB guesses from the rows), and a CSV value column is read as its domain
needs, its non-integers handled by the declared policy wherever they sit in the file."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dptree
from dptree.data import histograms
from dptree.errors import DataError, unknown_groups_error

B = 2**53
PLAN = dptree.plan_range_tree(lower=0, upper=7, epsilon=1.0)


def _csv(path: Path, header: str, rows: list[str]) -> str:
    path.write_text(header + "\n" + "".join(r + "\n" for r in rows))
    return str(path)


def _totals(data, **kw) -> list[int]:
    return histograms.leaf_histogram(data, PLAN, column="v", by="g", **kw).sum(axis=1).tolist()


def test_a_double_by_column_matches_integer_groups_above_2_53_exactly(tmp_path: Path) -> None:
    """DOUBLE 2^53 is group 2^53 only: compared as doubles it also matched 2^53 + 1 ([2, 2])."""
    frame = pd.DataFrame({"v": [1, 2, 3], "g": [float(B), float(B), 1.5]})
    pq.write_table(pa.Table.from_pandas(frame), tmp_path / "g.parquet")
    groups = [B, B + 1]
    want = _totals(frame, groups=groups, unknown="drop")
    assert want == [2, 0]
    for data in (str(tmp_path / "g.parquet"), duckdb.from_df(frame)):
        assert _totals(data, groups=groups, unknown="drop") == want
        parts = histograms.grouped_value_counts(data, column="v", by="g", groups=groups, unknown="drop")
        assert [int(c.sum()) for _, c in parts] == [2, 0]


def test_a_csv_by_column_is_text_so_one_row_changes_one_count(tmp_path: Path) -> None:
    """One field "x" used to turn a guessed BIGINT column VARCHAR: the by-group release was then
    refused, naming the guessed type; a group "007" was read as 7."""
    base = ["1,1", "2,2", "3,1"]
    d = _csv(tmp_path / "d.csv", "v,g", base)
    d1 = _csv(tmp_path / "d1.csv", "v,g", base + ["4,x"])
    assert _totals(d, groups=[1, 2], unknown="drop") == _totals(d1, groups=[1, 2], unknown="drop") == [2, 1]
    assert _totals(d1, groups=["1", "2", "x"]) == [2, 1, 1]  # string groups: the text
    assert _totals(d, groups=["1", "x"], unknown="drop") == [2, 0]
    with pytest.raises(DataError) as err:  # the declared policy's refusal, naming no row
        _totals(d1, groups=[1, 2])
    assert str(err.value) == str(unknown_groups_error())
    # the rule for integer groups, the same for every field: an integer numeral of that value
    rule = _csv(tmp_path / "r.csv", "v,g", ["1,1", "2,+1", "3,1.0", "4, 1 ", "5,1.5", "6,1e0", "7,", "0,007"])
    assert _totals(rule, groups=[1, 7], unknown="drop") == [4, 1]
    wide = _csv(tmp_path / "w.csv", "v,g", [f"1,{B}", f"2,{B}", "3,1.5"])
    assert _totals(wide, groups=[B, B + 1], unknown="drop") == [2, 0]


def test_numpy_object_by_columns_of_mixed_kinds_drop_the_unknown_values() -> None:
    """[1, 2, 1, "x"] was refused as not "of one comparable type": a refusal one record decided."""
    v = np.array([1, 2, 3, 4])
    mixed = pd.Series([1, 2, 1, "x"], dtype=object)
    hist = histograms.leaf_histogram(v, PLAN, by=mixed, groups=[1, 2], unknown="drop")
    np.testing.assert_array_equal(hist, histograms.leaf_histogram(v[:3], PLAN, by=mixed[:3], groups=[1, 2]))
    with pytest.raises(DataError, match="not in groups"):
        histograms.leaf_histogram(v, PLAN, by=mixed, groups=[1, 2])
    odd = pd.Series([1, True, 2.0, 2.5, float("inf"), "1"], dtype=object)
    assert histograms.leaf_histogram(np.arange(6), PLAN, by=odd, groups=[1, 2], unknown="drop").sum(axis=1).tolist() \
        == [1, 1]


def test_csv_user_ids_are_their_text(tmp_path: Path) -> None:
    """Users "1" and "1.0" are two people: read as DOUBLE they were one (total 2 under k=1), and
    one added "z" made the column text and split them (total 4 for one added record)."""
    plan = dptree.plan_range_tree(lower=0, upper=7, epsilon=1.0, max_contributions=1)
    rows = ["1,1", "2,1.0", "3,2"]
    totals = []
    for name, extra in (("u.csv", []), ("u1.csv", ["4,z"])):
        path = _csv(tmp_path / name, "v,u", rows + extra)
        got = histograms.leaf_histogram(path, plan, column="v", user_id="u", rng=1)
        want = histograms.leaf_histogram(pd.read_csv(path, dtype={"u": str}), plan, column="v", user_id="u", rng=1)
        np.testing.assert_array_equal(got, want)
        totals.append(int(got.sum()))
    assert totals == [3, 4]
    zeros = _csv(tmp_path / "z.csv", "v,u", ["1,0", "2,-0"])  # two texts: two people, never one integer
    assert histograms.leaf_histogram(zeros, plan, column="v", user_id="u", rng=1).sum() == 2


HEAD = 30_000  # past DuckDB's type-detection sample


@pytest.mark.parametrize("upper", [100, 2**64 - 1])
def test_a_csv_non_integer_is_dropped_wherever_it_sits(tmp_path: Path, upper: int) -> None:
    """Under on_invalid="drop" a "2.5" first was dropped but the same row after the sample refused
    ("not integers"); on a domain wider than 2^53 a "2.5" first also made every value a double."""
    base = 2**60 if upper > B else 0
    head = [str(base + i % 100 + (i % 3) * 2**40 * (upper > B)) for i in range(HEAD)]
    late = _csv(tmp_path / "late.csv", "x", head + ["2.5"])
    early = _csv(tmp_path / "early.csv", "x", ["2.5"] + head)
    dom = ("integer", 0, upper)
    want = histograms.value_counts(np.array([int(h) for h in head], dtype=object if upper > B else np.int64),
                                   domain=dom, on_invalid="drop")
    for path in (late, early):
        vals, counts = histograms.value_counts(path, column="x", domain=dom, on_invalid="drop")
        keep = vals == np.floor(vals) if vals.dtype.kind == "f" else np.ones(vals.size, bool)
        assert [int(v) for v in vals[keep]] == [int(v) for v in want[0]]
        np.testing.assert_array_equal(counts[keep], want[1])
        kw = dict(column="x", lower=0, upper=upper, epsilon=1.0, rng=3)
        assert dptree.median(path, on_invalid="drop", **kw).value == dptree.median(late, on_invalid="drop", **kw).value
        assert dptree.interior_point(path, on_invalid="drop", **kw).value \
            == dptree.interior_point(late, on_invalid="drop", **kw).value
        with pytest.raises(DataError, match="integers"):
            dptree.median(path, **kw)
    mem = np.array([int(h) for h in head] + [2.5], dtype=object)
    kw = dict(lower=0, upper=upper, epsilon=1.0, rng=3, on_invalid="drop")
    assert dptree.median(late, column="x", **kw).value == dptree.median(mem, **kw).value


def test_cli_format_csv_reads_types_from_the_domain_not_the_guess(tmp_path: Path, cli_run) -> None:
    """``--format csv`` read a relation with DuckDB's guessed types: a BIGINT guess rounded a later
    2.5 without a word, where the same row first was refused."""
    head = [str(i % 100) for i in range(HEAD)]
    args = ["--format", "csv", "--column", "x", "--lower", "0", "--upper", "100", "--epsilon", "1", "--seed", "1",
            "--allow-nonprivate"]
    outs = []
    for name, rows in (("late.dat", head + ["2.5"]), ("early.parquet", ["2.5"] + head), ("clean.csv", head)):
        path = _csv(tmp_path / name, "x", rows)
        refused = cli_run(["median", path, *args])
        assert (refused.code == 2 and "not integers" in refused.err) or name == "clean.csv", refused
        dropped = cli_run(["median", path, *args, "--on-invalid", "drop"])
        assert dropped.code == 0, dropped
        outs.append(dropped.out)
    assert outs[0] == outs[1] == outs[2]
