"""``dptree.quantiles(..., user_id=, max_contributions=k)``: quantiles per person (at most k records each)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dptree
from dptree.errors import InvalidParameterError
from dptree.noise import make_source
from dptree.quantiles import api
from dptree.quantiles.auto import TREE_BRANCHING, TREE_LEVELS


def _people(heavy: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """400 people with one or two records over [0, 1023]; ``heavy`` more records of one person at 1000."""
    g = np.random.default_rng(5)
    users = np.repeat(np.arange(400), g.integers(1, 3, 400))
    x = g.integers(0, 800, users.size)
    return np.concatenate([x, np.full(heavy, 1000)]), np.concatenate([users, np.full(heavy, 10_000)])


@pytest.mark.parametrize("method", ["approx", "exponential", "joint"])
def test_within_the_bound_the_release_is_the_record_level_release_at_epsilon_over_k(method: str) -> None:
    x, users = _people()  # nobody has more than 2 records: bounding keeps every record and draws nothing
    extra = {"n_max": 1000} if method == "joint" else {}
    per_user = dptree.quantiles(x, [0.5], lower=0, upper=1023, epsilon=1.0, method=method, user_id=users,
                                max_contributions=2, rng=make_source(9), **extra)
    per_record = dptree.quantiles(x, [0.5], lower=0, upper=1023, epsilon=0.5, method=method, rng=make_source(9),
                                  **extra)
    assert per_user.values == per_record.values and per_user.rank_radius == per_record.rank_radius
    assert per_user.max_contributions == 2 and per_user.privacy["max_contributions"] == 2
    assert per_user.privacy["budget_spent"]["epsilon"] == 1.0 and per_user.privacy["epsilon_per_record"] == 0.5


def test_a_person_with_many_records_counts_at_most_k_times() -> None:
    x, users = _people(heavy=500)
    p = api.plan_quantiles([0.5], lower=0, upper=1023, epsilon=1.0, method="approx", max_contributions=3, user_id=users)
    ((vals, cnt),) = api._bounded_points(x, p, None, users, "error", make_source(1))
    assert cnt[vals == 1000].tolist() == [3]  # the heavy person's 500 records at 1000, bounded to 3
    assert cnt.sum() == x.size - 497  # everyone else is within the bound
    tops = [dptree.quantiles(x, [0.5, 0.9], lower=0, upper=1023, epsilon=1.0, user_id=users, max_contributions=3,
                             method="approx", rng=s).values[1] for s in range(5)]
    assert np.median(tops) < 800  # bounded: about 720; unbounded, the 500 records put the 0.9-quantile at 1000


def test_the_tree_method_bounds_users_like_range_tree(tmp_path: Path) -> None:
    x, users = _people(heavy=50)
    frame = pd.DataFrame({"v": x, "u": users})
    rel = dptree.quantiles(frame, [0.25, 0.75], lower=0, upper=1023, epsilon=1.0, method="tree", column="v",
                           user_id="u", max_contributions=2, rng=make_source(4))
    tree = dptree.range_tree(frame, column="v", user_id="u", max_contributions=2, lower=0, upper=1023, epsilon=1.0,
                             levels=TREE_LEVELS, branching=TREE_BRANCHING, rng=make_source(4))
    assert rel.values == [int(v) for v in tree.quantile([0.25, 0.75])]
    assert rel.privacy["max_contributions"] == 2


def test_file_round_trip_keeps_k_and_refuses_a_changed_k(tmp_path: Path) -> None:
    import json

    from dptree.errors import ReleaseFileError
    from dptree.io.release_file import canonical_checksum

    x, users = _people(heavy=20)
    rel = dptree.quantiles(x, [0.1, 0.9], lower=0, upper=1023, epsilon=1.0, method="approx", user_id=users,
                           max_contributions=2, rng=3)
    rel.save(tmp_path / "q.json", allow_nonprivate=True)
    back = dptree.load(tmp_path / "q.json")
    assert back.max_contributions == 2 and back.values == rel.values and back.rank_radius == rel.rank_radius
    doc = json.loads((tmp_path / "q.json").read_text())
    doc["parameters"]["max_contributions"] = 1  # the statement (and the radii) say k = 2
    doc["checksum"] = canonical_checksum(doc)
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(ReleaseFileError, match="quantiles"):
        dptree.load(tmp_path / "bad.json")


@pytest.mark.parametrize("kw, match", [
    ({"neighbors": "replace"}, "add/remove"),
    ({"n": 500}, "n_max"),
    ({"lower": 0.0, "upper": 1023.0}, "integer domain"),
    ({"upper": 2**30}, "2\\^24"),
    ({"by": ["a", "b", "c"], "groups": ["a", "b", "c"], "upper": 2**24 - 1}, "3 groups x 16,777,216 points"),
    ({"by": ["a", "b", "c"], "groups": ["a", "b", "c"], "neighbors": "replace"}, "add/remove"),
    ({"max_contributions": 0}, "max_contributions"),
])
def test_per_person_parameters_are_refused_before_the_data_is_read(kw: dict, match: str) -> None:
    args = {"lower": 0, "upper": 1023, "epsilon": 1.0, "method": "approx", "user_id": [1, 1, 2],
            "max_contributions": 2, **kw}
    with pytest.raises(InvalidParameterError, match=match):
        dptree.quantiles(np.array([1, 2, 3]), [0.5], **args)


def test_missing_values_name_quantiles_own_policy() -> None:
    from dptree.errors import DataError

    x = np.array([1.0, np.nan, 3.0])
    with pytest.raises(DataError, match="on_invalid='drop'"):
        dptree.quantiles(x, [0.5], lower=0, upper=15, epsilon=1.0, user_id=[1, 2, 3])
    kept = dptree.quantiles(x, [0.5], lower=0, upper=15, epsilon=1.0, user_id=[1, 2, 3], on_invalid="drop", rng=1)
    assert 0 <= kept.values[0] <= 15


# --------------------------------------------------------------------------- by group, per person


def _grouped_people(heavy: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_people`` with a group per record; the heavy person's records are split between groups a and b."""
    x, users = _people(heavy)
    g = np.array(["a", "b", "c"])[np.random.default_rng(6).integers(0, 3, x.size)]
    g[x.size - heavy:] = np.where(np.arange(heavy) % 2 == 0, "a", "b")
    return x, users, g


@pytest.mark.parametrize("method", ["approx", "exponential", "joint"])
def test_by_group_per_person_within_the_bound_is_the_record_level_release_at_epsilon_over_k(method: str) -> None:
    x, users, g = _grouped_people()
    extra = {"n_max": 1000} if method == "joint" else {}
    kw = {"lower": 0, "upper": 1023, "method": method, "by": g, "groups": ["a", "b", "c"], **extra}
    per_user = dptree.quantiles(x, [0.25, 0.5], epsilon=1.0, user_id=users, max_contributions=2, rng=make_source(7),
                                **kw)
    per_record = dptree.quantiles(x, [0.25, 0.5], epsilon=0.5, rng=make_source(7), **kw)
    for group in ("a", "b", "c"):
        assert per_user[group].values == per_record[group].values
        assert per_user[group].rank_radius == per_record[group].rank_radius
    assert per_user.privacy["max_contributions"] == 2 and per_user.privacy["epsilon_per_record"] == 0.5
    assert per_user.privacy["budget_spent"]["epsilon"] == 1.0 and "parallel" in per_user.privacy["composition"]


def test_by_group_a_person_counts_at_most_k_times_across_all_groups() -> None:
    x, users, g = _grouped_people(heavy=600)  # 300 records in a and 300 in b, all at 1000
    p = api.plan_quantiles([0.5], lower=0, upper=1023, epsilon=1.0, method="approx", max_contributions=3, user_id=users)
    parts = api._bounded_points(x, p, None, users, "error", make_source(1), by=g, groups=["a", "b", "c"])
    heavy = [int(cnt[vals == 1000].sum()) for vals, cnt in parts]
    assert sum(heavy) == 3 and heavy[2] == 0  # 3 in all, not 3 per group
    assert sum(int(c.sum()) for _, c in parts) == x.size - 597


def test_by_group_per_person_tree_reads_the_grouped_bounded_range_tree(tmp_path: Path) -> None:
    x, users, g = _grouped_people(heavy=40)
    frame = pd.DataFrame({"v": x, "u": users, "g": g})
    rel = dptree.quantiles(frame, [0.5, 0.9], column="v", by="g", groups=["a", "b", "c"], user_id="u",
                           max_contributions=2, lower=0, upper=1023, epsilon=1.0, method="tree", rng=make_source(3))
    trees = dptree.range_tree(frame, column="v", by="g", groups=["a", "b", "c"], user_id="u", max_contributions=2,
                              lower=0, upper=1023, epsilon=1.0, levels=TREE_LEVELS, branching=TREE_BRANCHING,
                              rng=make_source(3))
    for group in ("a", "b", "c"):
        assert rel[group].values == [int(v) for v in trees[group].quantile([0.5, 0.9])]
    rel.save(tmp_path / "g.json", allow_nonprivate=True)
    back = dptree.load(tmp_path / "g.json")
    assert back["b"].max_contributions == 2 and back["b"].values == rel["b"].values


def test_by_group_per_person_from_parquet_and_csv_is_the_frames_release(tmp_path: Path) -> None:
    x, users, g = _grouped_people(heavy=30)
    frame = pd.DataFrame({"v": x, "u": users, "g": g})
    frame.to_parquet(tmp_path / "d.parquet")
    frame.to_csv(tmp_path / "d.csv", index=False)
    kw = {"column": "v", "by": "g", "groups": ["a", "b", "c"], "user_id": "u", "max_contributions": 2, "lower": 0,
          "upper": 1023, "epsilon": 1.0, "method": "approx"}
    want = dptree.quantiles(frame, [0.25, 0.75], rng=make_source(8), **kw)
    for data in (str(tmp_path / "d.parquet"), str(tmp_path / "d.csv")):
        got = dptree.quantiles(data, [0.25, 0.75], rng=make_source(8), **kw)
        assert [got[k].values for k in "abc"] == [want[k].values for k in "abc"], data


def test_auto_runs_the_tree_where_only_the_tree_bounds_users() -> None:
    x, users = _people()
    rel = dptree.quantiles(x.astype(float), [0.5], lower=0.0, upper=1023.0, width=1.0, epsilon=1.0, user_id=users,
                           max_contributions=2, rng=1)
    assert rel.method == "tree" and rel.max_contributions == 2  # float domain: the mechanisms cannot bound users
    wide = dptree.quantiles(x, [0.5], lower=0, upper=2**30 - 1, width=1024, epsilon=1.0, user_id=users, rng=1)
    assert wide.method == "tree"  # more than 2^24 points: likewise
    from dptree.errors import DomainError

    with pytest.raises(DomainError, match="bucket width"):  # the tree's own refusal, before the data
        dptree.quantiles(x.astype(float), [0.5], lower=0.0, upper=1023.0, epsilon=1.0, user_id=users)
