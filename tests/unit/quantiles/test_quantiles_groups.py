"""``dptree.quantiles(..., by=, groups=)``: one release per public group (parallel composition)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

import dptree
from dptree.data.histograms import grouped_value_counts, value_counts
from dptree.errors import DataError, InvalidParameterError, ReleaseFileError
from dptree.io.release_file import canonical_checksum
from dptree.noise import make_source
from dptree.quantiles.auto import TREE_BRANCHING, TREE_LEVELS
from dptree.quantiles.groups import GroupedQuantiles

GROUPS = ["low", "high", "none"]  # "none" has no records
QS = [0.1, 0.5, 0.9]


def _data(n: int = 600) -> tuple[np.ndarray, np.ndarray]:
    """Two groups far apart over [0, 1023], so a record counted in the wrong group moves its quantiles."""
    g = np.random.default_rng(4)
    grp = g.choice(["low", "high"], n)
    x = np.where(grp == "low", g.integers(0, 200, n), g.integers(700, 1024, n))
    return x.astype(np.int64), grp


def _grouped(data: object, method: str, seed: int, **kw: object) -> GroupedQuantiles:
    out = dptree.quantiles(data, QS, lower=0, upper=1023, epsilon=1.0, method=method, groups=GROUPS,
                           rng=make_source(seed), **kw)  # type: ignore[arg-type]
    assert isinstance(out, GroupedQuantiles)
    return out


@pytest.mark.parametrize("method", ["approx", "exponential", "joint"])
def test_each_group_is_the_release_of_its_own_records_draw_for_draw(method: str) -> None:
    x, grp = _data()
    # joint: the stated bound (its whole budget to the mechanism: at 0.9 epsilon this seed's low group,
    # 300 records under n_max = 1000, is one of JointExp's empty-gap draws)
    extra: dict[str, object] = {"n_max": 1000, "interval": "bound"} if method == "joint" else {}
    rel = _grouped(x, method, 11, by=grp, **extra)
    src = make_source(11)  # the same stream, consumed group after group by single releases
    for g in GROUPS:
        one = dptree.quantiles(x[grp == g], QS, lower=0, upper=1023, epsilon=1.0, method=method, rng=src, **extra)
        assert rel[g].values == one.values and rel[g].ci_low == one.ci_low and rel[g].ci_high == one.ci_high
        assert rel[g].method == method and rel[g].epsilon == 1.0  # the whole budget in every group
    assert np.all(np.asarray(rel["low"].values[1:]) < 400) and np.all(np.asarray(rel["high"].values[:2]) > 500)


def test_the_tree_method_reads_off_the_grouped_range_tree() -> None:
    x, grp = _data()
    rel = _grouped(x, "tree", 3, by=grp)
    trees = dptree.range_tree(x, by=grp, groups=GROUPS, lower=0, upper=1023, epsilon=1.0, levels=TREE_LEVELS,
                              branching=TREE_BRANCHING, rng=make_source(3))  # the trees' noise is drawn first
    for g in GROUPS:
        assert rel[g].values == [int(v) for v in trees[g].quantile(QS)]
        assert all(lo <= v <= hi for lo, v, hi in zip(rel[g].ci_low, rel[g].values, rel[g].ci_high))
        assert rel[g].interval == "calibrated"


def test_files_relations_and_tables_give_the_arrays_release(tmp_path: Path) -> None:
    x, grp = _data()
    frame = pd.DataFrame({"v": x, "g": grp})
    frame.to_parquet(tmp_path / "d.parquet")
    frame.to_csv(tmp_path / "d.csv", index=False)
    want = _grouped(x, "approx", 5, by=grp)
    for data in (frame, str(tmp_path / "d.parquet"), str(tmp_path / "d.csv"),
                 duckdb.sql(f"SELECT * FROM '{tmp_path / 'd.parquet'}'")):
        got = _grouped(data, "approx", 5, by="g", column="v")
        assert [got[g].values for g in GROUPS] == [want[g].values for g in GROUPS], type(data)


def test_spark_dataframes_give_the_arrays_release() -> None:
    from _spark import spark_session

    spark = spark_session()
    x, grp = _data(200)
    sdf = spark.createDataFrame([(int(v), str(g)) for v, g in zip(x, grp)], "v long, g string")
    want = _grouped(x, "approx", 6, by=grp)
    got = _grouped(sdf, "approx", 6, by="g", column="v")
    assert [got[g].values for g in GROUPS] == [want[g].values for g in GROUPS]


def test_grouped_value_counts_are_each_groups_value_counts() -> None:
    x = np.array([3.0, 1.0, np.nan, 2.0, 2.0, 5.0, 1.0])
    grp = np.array(["a", "b", "a", "a", "a", "b", "b"])
    got = grouped_value_counts(x, column=None, by=grp, groups=["a", "b", "c"], on_invalid="drop")
    for (vals, cnt), g in zip(got, ["a", "b", "c"]):
        want = value_counts(x[grp == g], on_invalid="drop")
        np.testing.assert_array_equal(vals, want[0])
        np.testing.assert_array_equal(cnt, want[1])
    rel = duckdb.sql("SELECT * FROM (VALUES (3.0, 'a'), (1.0, 'b'), (NULL, 'a'), (2.0, 'a'), (2.0, 'a')) t(x, g)")
    (va, ca), (vb, cb) = grouped_value_counts(rel, column="x", by="g", groups=["a", "b"], on_invalid="drop")
    assert va.tolist() == [2.0, 3.0] and ca.tolist() == [2, 1] and vb.tolist() == [1.0] and cb.tolist() == [1]
    with pytest.raises(DataError, match="missing"):
        grouped_value_counts(rel, column="x", by="g", groups=["a", "b"])


def test_unlisted_groups_are_refused_or_dropped() -> None:
    x, grp = _data()
    with pytest.raises(DataError, match="not in groups"):
        dptree.quantiles(x, QS, lower=0, upper=1023, epsilon=1.0, by=grp, groups=["low"], rng=1)
    dropped = dptree.quantiles(x, QS, lower=0, upper=1023, epsilon=1.0, by=grp, groups=["low"], unknown="drop",
                               method="approx", rng=make_source(2))
    alone = dptree.quantiles(x[grp == "low"], QS, lower=0, upper=1023, epsilon=1.0, method="approx",
                             rng=make_source(2))
    assert dropped["low"].values == alone.values and list(dropped) == ["low"]


@pytest.mark.parametrize("kw, match", [
    ({"by": "g"}, "by and groups go together"),
    ({"groups": ["a"]}, "by and groups go together"),
    ({"by": "g", "groups": ["a"], "neighbors": "replace"}, "add/remove"),
    ({"by": "g", "groups": ["a", "a"]}, "distinct"),
    ({"by": "g", "groups": ["a"], "unknown": "keep"}, "unknown"),
])
def test_bad_group_parameters_are_refused_before_the_data_is_read(kw: dict, match: str) -> None:
    frame = pd.DataFrame({"v": [1, 2, 3], "g": ["a", "a", "b"]})
    with pytest.raises(InvalidParameterError, match=match):
        dptree.quantiles(frame, [0.5], lower=0, upper=10, epsilon=1.0, column="v", **kw)


def test_statement_file_round_trip_and_tampering(tmp_path: Path) -> None:
    x, grp = _data()
    rel = _grouped(x, "approx", 8, by=grp)
    assert rel.privacy["groups"] == GROUPS and "parallel over 3 public groups" in rel.privacy["composition"]
    assert rel.privacy["budget_spent"]["epsilon"] == 1.0 and rel.privacy["private"] is False
    frame = rel.to_frame()
    assert list(frame.columns[:3]) == ["group", "q", "estimate"] and len(frame) == 3 * len(QS)
    path = tmp_path / "q.json"
    rel.save(path, allow_nonprivate=True)
    back = dptree.load(path)
    assert isinstance(back, GroupedQuantiles) and back.to_frame().equals(frame)
    paths = rel.save(str(tmp_path / "q-{group}.json"), allow_nonprivate=True)
    assert dptree.load(paths[1]).values == rel["high"].values
    doc = json.loads(path.read_text())
    for edit in (lambda d: d["privacy"].update(groups=["low", "high", "other"]),
                 lambda d: d["measurements"]["values"][0].__setitem__(0, 5000),  # outside the domain
                 lambda d: d["measurements"]["values"].pop()):
        bad = json.loads(json.dumps(doc))
        edit(bad)
        bad["checksum"] = canonical_checksum(bad)  # a consistent file: only the validation can refuse it
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        with pytest.raises(ReleaseFileError, match="quantiles"):
            dptree.load(tmp_path / "bad.json")
