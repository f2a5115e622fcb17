"""The records per user (the histogram a private contribution bound is chosen from): exact, the
same in every engine, each user once, missing ids refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dptree.data.histograms import records_per_user
from dptree.errors import DataError, InvalidParameterError
from dptree.rangetree.release import plan_range_tree

PLAN = plan_range_tree(lower=0, upper=49, epsilon=1.0)


def _data(seed: int, n_users: int = 200) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    per_user = np.minimum(np.floor(gen.pareto(1.2, n_users) + 1).astype(np.int64), 60)
    users = np.repeat(np.arange(n_users) * 3 + 7, per_user)
    values = gen.integers(-5, 60, size=users.size).astype(np.float64)  # some outside [0, 49]: clamped, counted
    values[gen.random(users.size) < 0.05] = np.nan  # invalid: dropped by the policy before counting
    groups = gen.choice(np.array(["a", "b", "z"]), users.size)
    perm = gen.permutation(users.size)
    return values[perm], users[perm], groups[perm]


def _brute(values: np.ndarray, users: np.ndarray, cap: int, keep: np.ndarray | None = None) -> np.ndarray:
    keep = ~np.isnan(values) if keep is None else keep & ~np.isnan(values)
    _, per_user = np.unique(users[keep], return_counts=True)
    return np.bincount(np.minimum(per_user, cap), minlength=cap + 1)


def _inputs(tmp_path: Path, values: np.ndarray, users: np.ndarray, groups: np.ndarray) -> dict[str, Any]:
    table = pa.table({"v": values, "u": users, "g": groups})
    pq.write_table(table, tmp_path / "d.parquet")
    frame = table.to_pandas()
    frame.to_csv(tmp_path / "d.csv", index=False)
    return {"pandas": frame, "parquet": str(tmp_path / "d.parquet"), "csv": str(tmp_path / "d.csv")}


@pytest.mark.parametrize("cap", [1, 5, 100])
def test_exact_and_the_same_in_every_engine(tmp_path: Path, cap: int) -> None:
    values, users, groups = _data(cap)
    want = _brute(values, users, cap)
    assert want[0] == 0 and want.sum() == np.unique(users[~np.isnan(values)]).size  # each user once
    np.testing.assert_array_equal(records_per_user(values, PLAN, user_id=users, cap=cap, on_invalid="drop"), want)
    for name, data in _inputs(tmp_path, values, users, groups).items():
        got = records_per_user(data, PLAN, user_id="u", column="v", cap=cap, on_invalid="drop")
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_by_group_counts_the_listed_groups_across_groups(tmp_path: Path) -> None:
    values, users, groups = _data(3)
    want = _brute(values, users, 20, keep=groups != "z")
    np.testing.assert_array_equal(records_per_user(values, PLAN, user_id=users, cap=20, on_invalid="drop", by=groups,
                                                   groups=["a", "b"], unknown="drop"), want)
    for name, data in _inputs(tmp_path, values, users, groups).items():
        got = records_per_user(data, PLAN, user_id="u", column="v", cap=20, on_invalid="drop", by="g",
                               groups=["a", "b"], unknown="drop")
        np.testing.assert_array_equal(got, want, err_msg=name)
    with pytest.raises(DataError, match="not in groups|unlisted|group"):
        records_per_user(values, PLAN, user_id=users, cap=20, on_invalid="drop", by=groups, groups=["a", "b"])


def test_missing_ids_and_invalid_values_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="user_id contains missing ids"):
        records_per_user([1, 2, 3], PLAN, user_id=[1, None, 2], cap=3)
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"v": [1, 2, 3], "u": pa.array([1.0, np.nan, 2.0])}), path)
    with pytest.raises(DataError, match="user column 'u' contains missing"):
        records_per_user(str(path), PLAN, user_id="u", column="v", cap=3)
    with pytest.raises(DataError, match="missing values"):
        records_per_user([1.0, np.nan], PLAN, user_id=[1, 2], cap=3)
    with pytest.raises(InvalidParameterError, match="user_id"):
        records_per_user([1, 2], PLAN, user_id=None, cap=3)
    with pytest.raises(InvalidParameterError, match="cap"):
        records_per_user([1, 2], PLAN, user_id=[1, 2], cap=0)


def test_no_rows_gives_no_users() -> None:
    out = records_per_user(np.zeros(0, np.int64), PLAN, user_id=np.zeros(0, np.int64), cap=4)
    np.testing.assert_array_equal(out, np.zeros(5, np.int64))
    frame = pd.DataFrame({"v": [np.nan], "u": [1]})
    np.testing.assert_array_equal(records_per_user(frame, PLAN, user_id="u", column="v", cap=4, on_invalid="drop"),
                                  np.zeros(5, np.int64))


@pytest.mark.slow
def test_spark_agrees() -> None:
    from _spark import spark_frame

    values, users, groups = _data(5)
    df = spark_frame({"v": values, "u": users, "g": groups})
    for cap in (1, 7):
        np.testing.assert_array_equal(records_per_user(df, PLAN, user_id="u", column="v", cap=cap, on_invalid="drop"),
                                      _brute(values, users, cap))
    np.testing.assert_array_equal(
        records_per_user(df, PLAN, user_id="u", column="v", cap=9, on_invalid="drop", by="g", groups=["a", "b"],
                         unknown="drop"),
        _brute(values, users, 9, keep=groups != "z"))
    with pytest.raises(DataError, match="contains missing"):
        records_per_user(spark_frame({"v": [1.0, 2.0], "u": [1.0, np.nan]}), PLAN, user_id="u", column="v", cap=3)
