"""Group-by releases: numpy and DuckDB agree, absent groups are released, unknown groups handled."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dptree
from dptree.errors import DataError, InputFormatError, InvalidParameterError
from dptree.rangetree.groupby import file_grouped_histograms, grouped_histograms, range_tree_by, release_groups
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
    kw = dict(user_ids=df["u"], rng=5) if bounded else {}
    ref = grouped_histograms(df["v"], df["g"], plan, groups=GROUPS, **kw)  # type: ignore[arg-type]
    fkw = dict(user_column="u", rng=5) if bounded else {}
    got = file_grouped_histograms(_parquet(df, tmp_path), "v", "g", plan, groups=GROUPS, **fkw)  # type: ignore[arg-type]
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
    for run in (lambda **kw: grouped_histograms(df["v"], df["g"], plan, **kw),
                lambda **kw: file_grouped_histograms(path, "v", "g", plan, **kw)):
        with pytest.raises(DataError, match="not in groups.*unknown='drop'"):
            run(groups=["north", "south"])
        h = run(groups=["north", "south"], unknown="drop")
        assert h.sum() == (df["g"] != "east").sum()


def test_missing_group_values_are_unknown() -> None:
    plan = plan_range_tree(lower=0, upper=9, epsilon=1.0)
    by = pd.Series(["a", None, "b"])
    with pytest.raises(DataError, match="some rows have a group that is not in groups"):
        grouped_histograms([1, 2, 3], by, plan, groups=["a", "b"])
    assert grouped_histograms([1, 2, 3], by, plan, groups=["a", "b"], unknown="drop").sum() == 2


def test_integer_groups_and_type_mismatch(tmp_path: Path) -> None:
    df = pd.DataFrame({"v": [1, 2, 3, 4], "g": [10, 20, 10, 30]})
    plan = plan_range_tree(lower=0, upper=9, epsilon=1.0)
    h = grouped_histograms(df["v"], df["g"], plan, groups=[10, 20, 30])
    np.testing.assert_array_equal(h.sum(axis=1), [2, 1, 1])
    path = _parquet(df, tmp_path)
    np.testing.assert_array_equal(file_grouped_histograms(path, "v", "g", plan, groups=[10, 20, 30]), h)
    with pytest.raises(DataError, match="groups of the column's type"):
        file_grouped_histograms(path, "v", "g", plan, groups=["10", "20", "30"])
    with pytest.raises(InputFormatError, match="not found"):
        file_grouped_histograms(path, "v", "grp", plan, groups=[10])


@pytest.mark.parametrize("groups", [[], ["a", "a"], ["a", 1], ["a", None], "ab", None, [True, False]])
def test_bad_groups(groups: object) -> None:
    plan = plan_range_tree(lower=0, upper=9, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="groups"):
        grouped_histograms([1], ["a"], plan, groups=groups)  # type: ignore[arg-type]


def test_bad_unknown_and_shapes() -> None:
    plan = plan_range_tree(lower=0, upper=9, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="unknown must be"):
        grouped_histograms([1], ["a"], plan, groups=["a"], unknown="ignore")
    with pytest.raises(DataError, match="one entry per value"):
        grouped_histograms([1, 2], ["a"], plan, groups=["a"])
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
    with pytest.raises(InvalidParameterError, match="must contain"):
        rel.save(str(tmp_path / "age.json"), allow_nonprivate=True)
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

    from dptree.data.engines.spark import spark_grouped_histograms

    df = _data(4, n=1500)
    sdf = spark_frame({"v": df["v"].to_numpy(), "g": df["g"].to_numpy(dtype=object), "u": df["u"].to_numpy()})
    plan = plan_range_tree(lower=0, upper=99, epsilon=1.0, max_contributions=2)
    for kw, skw in (({}, {}), (dict(user_ids=df["u"], rng=9), dict(user_column="u", rng=9))):
        ref = grouped_histograms(df["v"], df["g"], plan, groups=GROUPS, **kw)  # type: ignore[arg-type]
        got = spark_grouped_histograms(sdf, "v", "g", plan, groups=GROUPS, **skw)  # type: ignore[arg-type]
        np.testing.assert_array_equal(got, ref)
    with pytest.raises(DataError, match="not in groups"):
        spark_grouped_histograms(sdf, "v", "g", plan, groups=["north"])
    h = spark_grouped_histograms(sdf, "v", "g", plan, groups=["north"], unknown="drop")
    assert h.sum() == (df["g"] == "north").sum()
    with pytest.raises(DataError, match="groups of the column's type"):
        spark_grouped_histograms(sdf, "v", "g", plan, groups=[1, 2])
    with pytest.raises(InputFormatError, match="not found"):
        spark_grouped_histograms(sdf, "v", "region", plan, groups=GROUPS)
