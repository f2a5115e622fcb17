"""The distinct users of each key of a group-by found from the data (Partition keys): numpy,
DuckDB (CSV, Parquet, relations) and Spark give the same keys and counts for the same random
source, each user keeps a uniform subset of at most max_groups distinct keys, and the errors name
no key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest

from dptree.data.histograms import partition_counts
from dptree.errors import DataError


def _data(seed: int = 0, n: int = 4000) -> pd.DataFrame:
    gen = np.random.default_rng(seed)
    keys = [f"k{v}" for v in gen.zipf(1.6, n)] + ["é", "z", "Z", "ä", "k1"]  # code-point order, not locale
    users = np.concatenate([gen.integers(0, 700, n), [1, 2, 3, 4, 10**12]])
    return pd.DataFrame({"g": keys, "u": users, "i": [int(k[1:]) % 50 if k[1:].isdigit() else 7 for k in keys]})


def _same(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> bool:
    return list(a[0]) == list(b[0]) and np.array_equal(a[1], b[1])


@pytest.mark.parametrize("max_groups", [1, 3])
def test_files_relations_and_arrays_agree(tmp_path: Path, max_groups: int) -> None:
    df = _data()
    csv, parquet = tmp_path / "d.csv", tmp_path / "d.parquet"
    df.to_csv(csv, index=False)
    df.to_parquet(parquet)
    for by in ("g", "i"):
        want = partition_counts(df[by].to_numpy(), by=df[by].to_numpy(), user_id=df["u"].to_numpy(),
                                max_groups=max_groups, rng=5)
        assert want[1].min() > 0 and len(want[0]) > 10
        assert _same(partition_counts(df, by=by, user_id="u", max_groups=max_groups, rng=5), want)
        assert _same(partition_counts(str(parquet), by=by, user_id="u", max_groups=max_groups, rng=5), want)
        rel = duckdb.sql(f"SELECT * FROM read_parquet('{parquet}')")
        assert _same(partition_counts(rel, by=by, user_id="u", max_groups=max_groups, rng=5), want)
        if by == "g":  # a CSV's keys are its text (integer keys come back as text: another key type)
            assert _same(partition_counts(str(csv), by=by, user_id="u", max_groups=max_groups, rng=5), want)
    # without user ids: the records of each key
    records = partition_counts(str(csv), by="g")
    assert _same(records, (np.array(sorted(set(df["g"])), dtype=object), df["g"].value_counts()[sorted(set(df["g"]))]
                           .to_numpy()))


@pytest.mark.slow
def test_spark_agrees_with_numpy() -> None:
    from _spark import spark_session

    df = _data(1, 2000)
    sdf = spark_session().createDataFrame(df)
    for by in ("g", "i"):
        for m in (1, 2):
            want = partition_counts(df, by=by, user_id="u", max_groups=m, rng=9)
            assert _same(partition_counts(sdf, by=by, user_id="u", max_groups=m, rng=9), want)
        assert _same(partition_counts(sdf, by=by), partition_counts(df, by=by))


def test_each_user_keeps_a_uniform_subset_of_their_distinct_keys() -> None:
    # one user with four distinct keys (one of them twice) keeps two: each key with probability 1/2,
    # the pairs uniformly; a user with one key always keeps it
    by = np.array(["a", "b", "b", "c", "d", "a"], dtype=object)
    users = np.array([1, 1, 1, 1, 1, 2])
    seen: dict[tuple[str, ...], int] = {}
    runs = 3000
    for seed in range(runs):
        keys, counts = partition_counts(by, by=by, user_id=users, max_groups=2, rng=seed)
        assert counts.sum() == 3 and dict(zip(keys, counts))["a"] >= 1
        kept = tuple(k for k, c in zip(keys, counts) if c - (k == "a") > 0)
        seen[kept] = seen.get(kept, 0) + 1
    assert len(seen) == 6 and all(abs(v / runs - 1 / 6) < 5 * np.sqrt(1 / 6 * 5 / 6 / runs) for v in seen.values())


def test_missing_keys_and_users_and_other_key_types(tmp_path: Path) -> None:
    by = np.array(["secret-key", None, "other"], dtype=object)
    users = np.array([1, 2, 3])
    with pytest.raises(DataError, match="no group") as err:
        partition_counts(by, by=by, user_id=users)
    assert "secret" not in str(err.value)
    keys, counts = partition_counts(by, by=by, user_id=users, unknown="drop")
    assert list(keys) == ["other", "secret-key"] and counts.tolist() == [1, 1]
    with pytest.raises(DataError, match="user"):
        partition_counts(by, by=by, user_id=np.array([1.0, np.nan, 2.0]), unknown="drop")
    for bad in (np.array([1.5, 2.5]), np.array(["a", 3], dtype=object), np.array([True, False])):
        with pytest.raises(DataError, match="text or integers") as err:
            partition_counts(bad, by=bad)
        assert "1.5" not in str(err.value) and "'a'" not in str(err.value)
    path = tmp_path / "f.parquet"
    pd.DataFrame({"g": [1.5, 2.5], "u": [1, 2]}).to_parquet(path)
    with pytest.raises(DataError, match="text or integers"):
        partition_counts(str(path), by="g", user_id="u")
    csv = tmp_path / "m.csv"
    csv.write_text("g,u\nsecret-key,1\n,2\n")
    with pytest.raises(DataError, match="no group") as err:
        partition_counts(str(csv), by="g", user_id="u")
    assert "secret" not in str(err.value)


def test_empty_input(tmp_path: Path) -> None:
    empty: Any = np.array([], dtype=object)
    keys, counts = partition_counts(empty, by=empty, user_id=np.array([], dtype=np.int64))
    assert keys.size == 0 and counts.size == 0
