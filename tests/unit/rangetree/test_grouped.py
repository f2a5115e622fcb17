"""Group-by releases: numpy and DuckDB agree, absent groups are released, unknown groups handled."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dptree
from dptree.data.histograms import leaf_histogram
from dptree.errors import DataError, InputFormatError, InvalidParameterError, ReleaseFileError
from dptree.io.contract import CountRelease
from dptree.rangetree.api import range_tree_by
from dptree.rangetree.groupby import GroupedRelease, release_groups
from dptree.rangetree.release import plan_range_tree

GROUPS = ["north", "south", "east", "west"]  # "west" never occurs in the data


def _data(seed: int = 0, n: int = 3000) -> pd.DataFrame:
    gen = np.random.default_rng(seed)
    return pd.DataFrame({
        "v": gen.integers(0, 100, n),
        "g": gen.choice(["north", "south", "east"], n),
        "u": gen.integers(0, 400, n),
    })


def _parquet(df: pd.DataFrame, tmp_path: Path) -> str:
    path = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)
    return str(path)


@pytest.mark.parametrize("bounded", [False, True])
def test_numpy_and_duckdb_agree(tmp_path: Path, bounded: bool) -> None:
    df = _data()
    plan = plan_range_tree(lower=0, upper=99, epsilon=1.0, max_contributions=3)
    kw = dict(user_id=df["u"], rng=5) if bounded else {}
    ref = leaf_histogram(df["v"], plan, by=df["g"], groups=GROUPS, **kw)  # type: ignore[arg-type]
    fkw = dict(user_id="u", rng=5) if bounded else {}
    got = leaf_histogram(_parquet(df, tmp_path), plan, column="v", by="g", groups=GROUPS, **fkw)  # type: ignore[arg-type]
    np.testing.assert_array_equal(got, ref)
    assert ref.shape == (4, plan.layout.padded_size) and ref[3].sum() == 0  # the absent group: empty
    if not bounded:
        for i, g in enumerate(GROUPS[:3]):
            np.testing.assert_array_equal(ref[i][:100], np.bincount(df["v"][df["g"] == g], minlength=100))
    else:  # bounding is across groups: each user keeps at most 3 records in total
        assert ref.sum() == np.minimum(df["u"].value_counts().to_numpy(), 3).sum()


def test_unknown_groups(tmp_path: Path) -> None:
    df = _data()
    plan = plan_range_tree(lower=0, upper=99, epsilon=1.0)
    path = _parquet(df, tmp_path)
    for run in (lambda **kw: leaf_histogram(df["v"], plan, by=df["g"], **kw),
                lambda **kw: leaf_histogram(path, plan, column="v", by="g", **kw)):
        with pytest.raises(DataError, match="not in groups.*unknown='drop'"):
            run(groups=["north", "south"])
        h = run(groups=["north", "south"], unknown="drop")
        assert h.sum() == (df["g"] != "east").sum()


def test_missing_group_values_are_unknown() -> None:
    plan = plan_range_tree(lower=0, upper=9, epsilon=1.0)
    by = pd.Series(["a", None, "b"])
    with pytest.raises(DataError, match="some rows have a group that is not in groups"):
        leaf_histogram([1, 2, 3], plan, by=by, groups=["a", "b"])
    assert leaf_histogram([1, 2, 3], plan, by=by, groups=["a", "b"], unknown="drop").sum() == 2


def test_integer_groups_and_type_mismatch(tmp_path: Path) -> None:
    df = pd.DataFrame({"v": [1, 2, 3, 4], "g": [10, 20, 10, 30]})
    plan = plan_range_tree(lower=0, upper=9, epsilon=1.0)
    h = leaf_histogram(df["v"], plan, by=df["g"], groups=[10, 20, 30])
    np.testing.assert_array_equal(h.sum(axis=1), [2, 1, 1])
    path = _parquet(df, tmp_path)
    np.testing.assert_array_equal(leaf_histogram(path, plan, column="v", by="g", groups=[10, 20, 30]), h)
    with pytest.raises(DataError, match="groups of the column's type"):
        leaf_histogram(path, plan, column="v", by="g", groups=["10", "20", "30"])
    with pytest.raises(InputFormatError, match="not found"):
        leaf_histogram(path, plan, column="v", by="grp", groups=[10])


@pytest.mark.parametrize("groups", [[], ["a", "a"], ["a", 1], ["a", None], "ab", None, [True, False]])
def test_bad_groups(groups: object) -> None:
    plan = plan_range_tree(lower=0, upper=9, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="groups"):
        leaf_histogram([1], plan, by=["a"], groups=groups)  # type: ignore[arg-type]


def test_bad_unknown_and_shapes() -> None:
    plan = plan_range_tree(lower=0, upper=9, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="unknown must be"):
        leaf_histogram([1], plan, by=["a"], groups=["a"], unknown="ignore")
    with pytest.raises(DataError, match="one entry per value"):
        leaf_histogram([1, 2], plan, by=["a"], groups=["a"])
    with pytest.raises(InvalidParameterError, match="one histogram per group"):
        release_groups(plan, np.zeros((1, plan.layout.padded_size)), ["a", "b"])


def test_range_tree_by_end_to_end(tmp_path: Path) -> None:
    df = _data(1)
    rel = range_tree_by(df["v"], by=df["g"], groups=GROUPS, lower=0, upper=99, epsilon=20.0, rng=3)
    assert list(rel) == GROUPS and len(rel) == 4 and not rel.private
    for g in GROUPS[:3]:
        true = int((df["g"] == g).sum())
        assert abs(rel[g].total() - true) < 6 * rel[g].total_stderr() + 1
    assert abs(rel["west"].total()) < 6 * rel["west"].total_stderr() + 1  # released although absent
    # noise is independent across groups: two identical (empty) inputs get different measurements
    rel2 = range_tree_by([], by=[], groups=["x", "y"], lower=0, upper=99, epsilon=1.0, rng=3)
    assert not np.array_equal(rel2["x"].measurements[-1], rel2["y"].measurements[-1])
    assert "parallel over 4 public groups" in rel.privacy["composition"]
    with pytest.raises(InvalidParameterError, match="not one of the released groups"):
        rel["nowhere"]
    paths = rel.save(str(tmp_path / "age-{group}.json"), allow_nonprivate=True)
    assert [Path(p).name for p in paths] == [f"age-{g}.json" for g in GROUPS]
    back = dptree.load(paths[0])
    assert back.total() == pytest.approx(rel["north"].total())
    with pytest.raises(InvalidParameterError, match="cannot be part of a file name"):
        range_tree_by([1], by=["a b"], groups=["a b"], lower=0, upper=9, epsilon=1.0).save(str(tmp_path / "{group}"))
    with pytest.raises(InvalidParameterError, match="add/remove"):
        range_tree_by([1], by=["a"], groups=["a"], lower=0, upper=9, epsilon=1.0, neighbors="replace")


def test_bounded_range_tree_by() -> None:
    df = _data(2)
    rel = range_tree_by(df["v"], by=df["g"], groups=GROUPS, user_id=df["u"], max_contributions=2,
                        lower=0, upper=99, epsilon=1.0, rng=4)
    assert rel.privacy["max_contributions"] == 2
    with pytest.raises(DataError, match="user_id contains missing ids"):
        range_tree_by([1, 2], by=["north", "north"], groups=GROUPS, user_id=[1, None], lower=0, upper=9, epsilon=1.0)


@pytest.mark.slow
def test_spark_agrees_with_numpy() -> None:
    from _spark import spark_frame


    df = _data(4, n=1500)
    sdf = spark_frame({"v": df["v"].to_numpy(), "g": df["g"].to_numpy(dtype=object), "u": df["u"].to_numpy()})
    plan = plan_range_tree(lower=0, upper=99, epsilon=1.0, max_contributions=2)
    for kw, skw in (({}, {}), (dict(user_id=df["u"], rng=9), dict(user_id="u", rng=9))):
        ref = leaf_histogram(df["v"], plan, by=df["g"], groups=GROUPS, **kw)  # type: ignore[arg-type]
        got = leaf_histogram(sdf, plan, column="v", by="g", groups=GROUPS, **skw)  # type: ignore[arg-type]
        np.testing.assert_array_equal(got, ref)
    with pytest.raises(DataError, match="not in groups"):
        leaf_histogram(sdf, plan, column="v", by="g", groups=["north"])
    h = leaf_histogram(sdf, plan, column="v", by="g", groups=["north"], unknown="drop")
    assert h.sum() == (df["g"] == "north").sum()
    with pytest.raises(DataError, match="groups of the column's type"):
        leaf_histogram(sdf, plan, column="v", by="g", groups=[1, 2])
    with pytest.raises(InputFormatError, match="not found"):
        leaf_histogram(sdf, plan, column="v", by="region", groups=GROUPS)


# --------------------------------------------------------------------------- range_tree(by=), one file


def test_range_tree_with_by_is_range_tree_by() -> None:
    df = _data(5)
    kw: dict[str, Any] = dict(groups=GROUPS, lower=0, upper=99, epsilon=1.0, rng=8)
    a = dptree.range_tree(df["v"], by=df["g"], **kw)
    b = dptree.range_tree_by(df["v"], by=df["g"], **kw)
    assert isinstance(a, GroupedRelease) and isinstance(a, CountRelease)
    for g in GROUPS:
        for m, n in zip(a[g].measurements, b[g].measurements):
            assert (m is None and n is None) or np.array_equal(m, n)
    assert a.count("north", 10, 20) == a["north"].count(10, 20)
    assert a.stderr("north", 10, 20) == a["north"].stderr(10, 20)
    assert a.ci("north", 10, 20) == a["north"].ci(10, 20)
    assert a.summary().startswith("GroupedRelease of 4 groups (north, south, east, west)")
    with pytest.raises(InvalidParameterError, match="by and groups go together"):
        dptree.range_tree(df["v"], by=df["g"], lower=0, upper=99, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="unknown must be one of"):
        dptree.range_tree(df["v"], by=df["g"], groups=GROUPS, lower=0, upper=99, epsilon=1.0, unknown="skip")


def _same(a: GroupedRelease, b: GroupedRelease) -> None:
    assert a.groups == b.groups and a.privacy == b.privacy
    for g in a.groups:
        for m, n in zip(a[g].measurements, b[g].measurements):
            assert (m is None and n is None) or np.array_equal(m, n)


@pytest.mark.parametrize("bounded", [False, True])
def test_dataframes_and_files_like_range_tree(tmp_path: Path, bounded: bool) -> None:
    """range_tree_by used to refuse column= (a TypeError); tables and files now work as in range_tree."""
    df = _data(6)
    kw: dict[str, Any] = dict(groups=GROUPS, lower=0, upper=99, epsilon=1.0, max_contributions=2, rng=11)
    arrays = range_tree_by(df["v"], by=df["g"], user_id=df["u"] if bounded else None, **kw)
    user = "u" if bounded else None
    frame = range_tree_by(df, column="v", by="g", user_id=user, **kw)
    _same(frame, arrays)
    path = _parquet(df, tmp_path)
    from_file = dptree.range_tree(path, column="v", by="g", user_id=user, **kw)
    _same(from_file, arrays)
    assert from_file.metadata["source"] == path and from_file.metadata["column"] == "v"
    assert from_file["north"].metadata["source"] == path
    csv = tmp_path / "d.csv"
    df.to_csv(csv, index=False)
    _same(range_tree_by(csv, column="v", by="g", user_id=user, **kw), arrays)
    with pytest.raises(InvalidParameterError, match="by must be a column name"):
        range_tree_by(path, column="v", by=df["g"], groups=GROUPS, lower=0, upper=99, epsilon=1.0)
    with pytest.raises(DataError, match="by names a column"):
        range_tree_by(df["v"], by="g", groups=GROUPS, lower=0, upper=99, epsilon=1.0)


def test_one_file_round_trips_through_load(tmp_path: Path) -> None:
    df = _data(7)
    rel = range_tree_by(df, column="v", by="g", groups=GROUPS, lower=0, upper=99, epsilon=1.0, rng=2)
    path = tmp_path / "groups.json"
    assert rel.save(path, allow_nonprivate=True) == [str(path)]
    back = dptree.load(path)
    assert isinstance(back, GroupedRelease) and back.metadata == rel.metadata
    _same(back, rel)
    assert back.count("east", 0, 50) == pytest.approx(rel.count("east", 0, 50))
    assert back.to_frame().equals(rel.to_frame())
    doc = json.loads(path.read_text())
    assert doc["kind"] == "range_tree_groups" and doc["parameters"]["groups"] == GROUPS
    assert len(doc["measurements"]["levels"]) == len(GROUPS)
    assert GroupedRelease.from_document(rel.to_document()).groups == GROUPS
    with pytest.raises(ReleaseFileError, match="seed"):
        rel.save(tmp_path / "again.json")  # a seeded release needs allow_nonprivate


def _tampered(rel: GroupedRelease, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    doc = copy.deepcopy(rel.to_document())
    change(doc)
    return doc


def test_a_tampered_file_is_refused() -> None:
    df = _data(8)
    rel = range_tree_by(df["v"], by=df["g"], groups=GROUPS, lower=0, upper=99, epsilon=1.0, rng=2)

    def more_groups(d: dict[str, Any]) -> None:
        d["parameters"]["groups"] = GROUPS + ["x"]

    def fewer_levels(d: dict[str, Any]) -> None:
        d["measurements"]["levels"] = d["measurements"]["levels"][:2]

    def cheaper_noise(d: dict[str, Any]) -> None:
        d["parameters"]["tree"]["budget"]["epsilon"] = 10.0

    def private_flag(d: dict[str, Any]) -> None:
        d["privacy"]["private"] = "yes"

    for change in (more_groups, fewer_levels, cheaper_noise, private_flag):
        with pytest.raises(ReleaseFileError):
            GroupedRelease.from_document(_tampered(rel, change))


@pytest.mark.slow
def test_range_tree_by_on_a_spark_dataframe() -> None:
    from _spark import spark_frame

    df = _data(9, n=800)
    sdf = spark_frame({"v": df["v"].to_numpy(), "g": df["g"].to_numpy(dtype=object), "u": df["u"].to_numpy()})
    kw: dict[str, Any] = dict(groups=GROUPS, lower=0, upper=99, epsilon=1.0, max_contributions=2, rng=4)
    _same(range_tree_by(sdf, column="v", by="g", **kw), range_tree_by(df, column="v", by="g", **kw))
    _same(dptree.range_tree(sdf, column="v", by="g", user_id="u", **kw),
          range_tree_by(df["v"], by=df["g"], user_id=df["u"], **kw))


@pytest.mark.parametrize("noise,upper,groups", [("laplace", 99, 5), ("gaussian", 99, 3), ("laplace", 15, 4)])
def test_groups_are_measured_and_estimated_together_as_each_alone(noise: str, upper: int, groups: int) -> None:
    """release_groups draws each level of all groups in one sampler call (row i: group i) and
    estimates the forest at once: each group's tree is the tree of its own measurements."""
    from dptree.noise import discrete_gaussian, discrete_laplace, make_source
    from dptree.rangetree.release import RangeTree

    kw = dict(delta=1e-6) if noise == "gaussian" else {}
    plan = plan_range_tree(lower=0, upper=upper, epsilon=1.0, noise=noise, branching=4, **kw)
    assert plan.layout.padded_size > plan.domain.size or upper == 15  # 100 buckets: padded to 128
    gen = np.random.default_rng(groups)
    hist = gen.integers(0, 30, size=(groups, plan.layout.padded_size))
    hist[:, plan.domain.size:] = 0
    names = [f"g{i}" for i in range(groups)]
    rel = release_groups(plan, hist, names, 17)
    src, draw = make_source(17), (discrete_laplace if noise == "laplace" else discrete_gaussian)
    true = plan.layout.level_counts(hist)
    expected = [None if p is None else t + draw(src, p, t.size).reshape(t.shape)
                for t, p in zip(true, plan.noise_parameters)]
    for i, g in enumerate(names):
        tree = rel[g]
        for got, want in zip(tree.measurements, expected):
            assert (got is None and want is None) or np.array_equal(got, want[i])
        alone = RangeTree(plan, [None if m is None else m[i].copy() for m in expected], dict(tree.privacy))
        np.testing.assert_allclose(tree.leaf_estimates, alone.leaf_estimates, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(tree.count([0, 3], [upper, 9]), alone.count([0, 3], [upper, 9]), atol=1e-9)
        assert tree.stderr(2, 7) == alone.stderr(2, 7) and tree.quantile(0.5) == alone.quantile(0.5)
        assert tree.metadata == rel.metadata and tree.metadata is not rel.metadata
        assert not tree.private and tree.privacy == {**plan.statement, "private": False}
    assert rel[names[0]] is rel[names[0]]  # built once
    doc = rel.to_document()
    assert doc["measurements"]["levels"][1] == [None if m is None else m[1].tolist() for m in expected]
