"""Contribution bounding: one test suite for the numpy and the DuckDB engines."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

from dptree.data.histograms import leaf_histogram
from dptree.errors import DataError, InvalidParameterError
from dptree.noise import SeededRandomSource, uniform_subsets
from dptree.rangetree.release import plan_range_tree

P_FAIL = 1e-6  # a correct implementation fails a statistical check with probability < 1e-6

Engine = Callable[..., np.ndarray]


def _numpy_engine(tmp_path: Path) -> Engine:
    def run(values: Any, users: Any, plan: Any, **kw: Any) -> np.ndarray:
        return leaf_histogram(values, plan, user_id=users, **kw)
    return run


def _file_engine(tmp_path: Path, fmt: str) -> Engine:
    counter = itertools.count()

    def run(values: Any, users: Any, plan: Any, **kw: Any) -> np.ndarray:
        path = tmp_path / f"data{next(counter)}.{fmt}"
        table = pa.table({"v": pa.array(values), "u": pa.array(users)})
        if fmt == "parquet":
            pq.write_table(table, path)
        else:
            table.to_pandas().to_csv(path, index=False)
        return leaf_histogram(str(path), plan, column="v", user_id="u", **kw)
    return run


def _spark_engine() -> Engine:
    from _spark import spark_frame

    def run(values: Any, users: Any, plan: Any, **kw: Any) -> np.ndarray:
        return leaf_histogram(spark_frame({"v": values, "u": users}), plan, column="v", user_id="u", **kw)
    return run


@pytest.fixture(params=["numpy", "duckdb-parquet", "duckdb-csv", pytest.param("spark", marks=pytest.mark.slow)])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    if request.param == "numpy":
        return _numpy_engine(tmp_path)
    if request.param == "spark":
        return _spark_engine()
    return _file_engine(tmp_path, request.param.split("-")[1])


def _data(seed: int, n_users: int = 300) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    per_user = gen.geometric(0.15, size=n_users)  # many users above k, some far above
    users = np.repeat(np.arange(n_users) * 7 + 1000, per_user)
    values = gen.integers(-5, 60, size=users.size)  # some outside [0, 49]: clamped
    perm = gen.permutation(users.size)
    return values[perm], users[perm]


@pytest.mark.parametrize("k", [1, 3, 40])
def test_engines_agree_exactly_for_the_same_seed(engine: Engine, tmp_path: Path, k: int) -> None:
    values, users = _data(k)
    plan = plan_range_tree(lower=0, upper=49, epsilon=1.0, max_contributions=k)
    reference = leaf_histogram(values, plan, user_id=users, rng=123)
    got = engine(values, users, plan, rng=123)
    np.testing.assert_array_equal(got, reference)
    counts = np.bincount(np.unique(users, return_inverse=True)[1])
    assert got.sum() == np.minimum(counts, k).sum()
    # a different seed keeps a different subset (same size)
    other = engine(values, users, plan, rng=124)
    assert other.sum() == got.sum() and not np.array_equal(other, got)


def test_each_user_keeps_min_of_count_and_k(engine: Engine) -> None:
    gen = np.random.default_rng(1)
    counts = gen.integers(1, 12, size=50)
    users = np.repeat(np.arange(50), counts)  # value == user: the histogram shows each user's kept count
    plan = plan_range_tree(lower=0, upper=49, epsilon=1.0, max_contributions=4)
    hist = engine(users.copy(), users, plan, rng=5)
    np.testing.assert_array_equal(hist[:50], np.minimum(counts, 4))
    assert hist[50:].sum() == 0


@pytest.mark.parametrize("k", [2, 33])
def test_kept_records_are_uniform_over_positions(engine: Engine, k: int) -> None:
    # every user holds one record of each value 0..c-1; a biased choice (e.g. the k smallest)
    # would pile the kept counts on some values
    c, n_users = k + 4, 1500
    values = np.tile(np.arange(c), n_users)
    users = np.repeat(np.arange(n_users), c)
    plan = plan_range_tree(lower=0, upper=49, epsilon=1.0, max_contributions=k)
    hist = engine(values, users, plan, rng=7)[:c]
    assert hist.sum() == k * n_users
    # each value is kept by each user independently across users with probability k/c
    p = k / c
    z = (hist - n_users * p) / np.sqrt(n_users * p * (1 - p))
    assert np.max(np.abs(z)) < stats.norm.isf(P_FAIL / (2 * c))


def test_uniform_subsets_distribution_floyd_and_keys() -> None:
    src = SeededRandomSource(11)
    # Floyd branch: all C(6, 2) = 15 subsets equally likely
    sub = uniform_subsets(src, np.full(30000, 6), 2)
    cats = sub[:, 0] * 6 + sub[:, 1]
    observed = np.bincount(cats, minlength=36)[[a * 6 + b for a in range(6) for b in range(a + 1, 6)]]
    assert observed.sum() == 30000
    assert stats.chisquare(observed).pvalue > P_FAIL
    # key-ranking branch (k > 32): 33 of 35 kept, so the 2 dropped form a uniform 2-subset
    sub = uniform_subsets(src, np.full(12000, 35), 33)
    assert np.all(np.diff(sub, axis=1) > 0)
    dropped = np.array([sorted(set(range(35)) - set(r.tolist())) for r in sub])
    cats = dropped[:, 0] * 35 + dropped[:, 1]
    observed = np.bincount(cats, minlength=35 * 35)[[a * 35 + b for a in range(35) for b in range(a + 1, 35)]]
    assert observed.sum() == 12000
    assert stats.chisquare(observed).pvalue > P_FAIL
    # the test has teeth: "always the first k" is rejected
    biased = np.bincount(np.zeros(30000, dtype=np.int64) + 1, minlength=15)
    assert stats.chisquare(biased).pvalue < P_FAIL


def test_missing_values_dropped_before_bounding(engine: Engine) -> None:
    values = np.array([1.0, np.nan, 2.0, 3.0, np.nan, 4.0])
    users = np.array([1, 1, 1, 2, 2, 2])
    plan = plan_range_tree(lower=0, upper=9, epsilon=1.0, max_contributions=2)
    hist = engine(values, users, plan, on_invalid="drop", rng=0)
    np.testing.assert_array_equal(hist[:5], [0, 1, 1, 1, 1])
    with pytest.raises(DataError, match="missing"):
        engine(values, users, plan, rng=0)


def test_release_from_bounded_histogram() -> None:
    values, users = _data(3)
    plan = plan_range_tree(lower=0, upper=49, epsilon=1.0, max_contributions=3)
    rel = plan.release(leaf_histogram(values, plan, user_id=users, rng=1), rng=2)
    assert rel.privacy["max_contributions"] == 3 and rel.privacy["l1_sensitivity"] == 3 * len(rel.privacy["levels"])


def test_user_id_nulls_are_errors(tmp_path: Path) -> None:
    plan = plan_range_tree(lower=0, upper=9, epsilon=1.0, max_contributions=2)
    for users in (np.array([1.0, np.nan, 2.0]), [1, None, 2], pd.Series([1, None, 2], dtype="Int64"),
                  pd.Series(["a", None, "b"])):
        with pytest.raises(DataError, match="user_id contains missing ids"):
            leaf_histogram([1, 2, 3], plan, user_id=users)
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"v": [1, 2, 3], "u": pa.array([1, None, 2])}), path)
    with pytest.raises(DataError, match="user column 'u' contains missing"):
        leaf_histogram(str(path), plan, column="v", user_id="u")
    # NaN ids in a float column (Parquet statistics omit NaN: the check must not be pruned away)
    pq.write_table(pa.table({"v": [1, 2, 3], "u": pa.array(np.array([1.0, np.nan, 2.0]))}), path)
    with pytest.raises(DataError, match="user column 'u' contains missing"):
        leaf_histogram(str(path), plan, column="v", user_id="u")


def test_bad_bounds_and_shapes(tmp_path: Path) -> None:
    plan = plan_range_tree(lower=0, upper=9, epsilon=1.0, max_contributions=2)
    for k in (0, -1, 1.5, True):
        with pytest.raises(InvalidParameterError, match=">= 1"):
            leaf_histogram([1, 2], plan, user_id=[1, 1], max_contributions=k)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="exceeds the plan"):
        leaf_histogram([1, 2], plan, user_id=[1, 1], max_contributions=3)
    with pytest.raises(InvalidParameterError, match="max_contributions"):
        plan_range_tree(lower=0, upper=9, epsilon=1.0, max_contributions=0)
    with pytest.raises(DataError, match="one entry per value"):
        leaf_histogram([1, 2, 3], plan, user_id=[1, 1])
    # ids of two kinds are two people (it was a refusal, which one record's id could trigger)
    mixed = leaf_histogram([1, 2], plan, user_id=np.array([1, "a"], dtype=object), max_contributions=1, rng=1)
    assert np.array_equal(mixed, leaf_histogram([1, 2], plan, user_id=[1, 2], max_contributions=1, rng=1))
    with pytest.raises(DataError, match="numbers, text or dates"):
        leaf_histogram([1, 2], plan, user_id=np.array([[1], "a"], dtype=object))
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"v": [1, 2, 3], "u": [1, 1, 2]}), path)
    from dptree.errors import InputFormatError

    with pytest.raises(InputFormatError, match="column 'who' not found"):
        leaf_histogram(str(path), plan, column="v", user_id="who")
    # k smaller than the plan's is allowed (the noise then over-covers)
    assert leaf_histogram([1, 2, 3], plan, user_id=[1, 1, 1], max_contributions=1, rng=0).sum() == 1


def test_string_user_ids_agree_across_engines(tmp_path: Path) -> None:
    values, users = _data(9, n_users=80)
    names = np.array([f"user-{u:05d}-é" for u in users], dtype=object)
    plan = plan_range_tree(lower=0, upper=49, epsilon=1.0, max_contributions=2)
    ref = leaf_histogram(values, plan, user_id=names, rng=3)
    got = _file_engine(tmp_path, "parquet")(values, names, plan, rng=3)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("in_memory", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_duckdb_bounded_counts_match_the_previous_implementation(seed: int, in_memory: bool,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # the optimised bounded_counts keeps exactly the records the previous implementation (kept in
    # tests/_duckdb_bounded_oracle.py) kept, for the same random source: same law, same draws
    import duckdb
    from _duckdb_bounded_oracle import bounded_counts_oracle

    import dptree.data.engines.duckdb_bounded as eng_b

    gen = np.random.default_rng(seed)
    n_users, cells, k = int(gen.integers(1, 400)), int(gen.choice([7, 50, 1 << 12])), int(gen.integers(1, 9))
    per_user = gen.geometric(gen.uniform(0.05, 0.6), size=n_users)
    users = np.repeat(gen.permutation(10 * n_users)[:n_users] - 5 * n_users, per_user)  # ids not in row order
    leaf = gen.integers(0, cells, size=users.size)  # cells repeat inside users when cells is small
    perm = gen.permutation(users.size)
    con = duckdb.connect()
    con.register("rows_in", pa.table({"u": users[perm], "leaf": leaf[perm]}))
    monkeypatch.setattr(eng_b, "STREAM_BATCH", int(gen.integers(1, 40)))  # users straddle batches
    if not in_memory:  # past the row limit: DuckDB sorts
        monkeypatch.setattr(eng_b, "IN_MEMORY_ROWS", 0)
    got = eng_b.bounded_counts(con, "rows_in", k, cells, SeededRandomSource(seed))
    want = bounded_counts_oracle(con, "rows_in", k, cells, SeededRandomSource(seed))
    np.testing.assert_array_equal(got, want)
    assert got.sum() == np.minimum(per_user, k).sum()


@pytest.mark.parametrize("kind", ["int", "float", "string-users", "csv"])
def test_duckdb_engine_matches_the_previous_implementation(kind: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # through the engine: with integer columns the exact statistics are on, with a float column
    # off; either way the histogram is the previous implementation's for the same seed
    from _duckdb_bounded_oracle import bounded_counts_oracle

    import dptree.data.engines.duckdb as eng
    from dptree.data.engines.duckdb_bounded import bounded_stages

    values, users = _data(21, n_users=500)
    vals: Any = values
    if kind == "float":  # NaN dropped before bounding: the statistics must stay off for it
        vals = values.astype(np.float64)
        vals[::17] = np.nan
    ids: Any = np.array([f"u{u}" for u in users], dtype=object) if kind == "string-users" else users
    plan = plan_range_tree(lower=0, upper=49, epsilon=1.0, max_contributions=3)
    run = _file_engine(tmp_path, "csv" if kind == "csv" else "parquet")
    got = run(vals, ids, plan, rng=77, on_invalid="drop")
    def oracle(con: Any, table: str, k: int, cells: int, source: Any, report: Any) -> np.ndarray:
        for stage in bounded_stages(k):  # the engine's declared stages; only the histogram is compared
            report(stage)
        return bounded_counts_oracle(con, table, k, cells, source)

    monkeypatch.setattr(eng, "bounded_counts", oracle)
    np.testing.assert_array_equal(got, run(vals, ids, plan, rng=77, on_invalid="drop"))
    # the seed matters: the check has teeth
    assert not np.array_equal(got, run(vals, ids, plan, rng=78, on_invalid="drop"))


@pytest.mark.parametrize("span", [40, 62])
@pytest.mark.parametrize("seed", range(3))
def test_bound_cells_keeps_the_same_rows_whatever_the_id_spread(seed: int, span: int) -> None:
    # dense codes: the count array, the draws beside the packed sort. Ids spread over 2^40: the
    # packed sort, the counts from its runs. Over 2^62 (no room beside 12 cell bits): a lexsort.
    # The ids' order is the same, so the kept rows are.
    from dptree.data.engines.numpy import bound_cells

    gen = np.random.default_rng(seed)
    n_users, cells, k = 300, 1 << 12, 3
    codes = np.repeat(np.arange(n_users), gen.geometric(0.2, n_users))
    spread = np.sort(gen.choice(1 << span, n_users, replace=False)) - (1 << (span - 1))  # increasing with the code
    codes = codes[gen.permutation(codes.size)]
    leaf = gen.integers(0, cells, codes.size)
    dense = bound_cells(leaf, codes, k, cells, SeededRandomSource(seed))
    wide = bound_cells(leaf, spread[codes], k, cells, SeededRandomSource(seed))
    np.testing.assert_array_equal(dense, wide)
    assert dense.sum() == np.minimum(np.bincount(codes), k).sum()
    assert not np.array_equal(dense, bound_cells(leaf, codes, k, cells, SeededRandomSource(seed + 10)))


@pytest.mark.parametrize("n_users", [0, 40])
def test_duckdb_bounding_reports_the_same_stages_on_either_path(n_users: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # which path runs depends on the ids' range and the row count (private): the progress output
    # must not show it
    import duckdb

    import dptree.data.engines.duckdb_bounded as eng_b

    gen = np.random.default_rng(n_users)
    users = np.repeat(np.arange(n_users), gen.integers(1, 6, n_users)).astype(np.int64)
    con = duckdb.connect()
    con.register("rows_in", pa.table({"u": users, "leaf": gen.integers(0, 16, users.size)}))
    stages = []
    for limit in (eng_b.IN_MEMORY_ROWS, 0):
        monkeypatch.setattr(eng_b, "IN_MEMORY_ROWS", limit)
        said: list[str] = []
        eng_b.bounded_counts(con, "rows_in", 2, 16, SeededRandomSource(1), said.append)
        stages.append(said)
    assert stages[0] == stages[1] and "counting records per user" in stages[0]


def _bound_in_child(queue: Any) -> None:
    from dptree.data.engines.numpy import bound_cells

    codes, leaf = np.repeat(np.arange(50), 4), np.arange(200) % 8
    queue.put(bound_cells(leaf, codes, 2, 8, SeededRandomSource(1)).tolist())


def test_bounding_in_a_forked_child_starts_its_own_draw_thread() -> None:
    # the draws run on one kept worker thread (dptree.data.engines.numpy._draw_pool); a forked
    # child has no copy of that thread and must start its own, or its first bounding waits forever
    import multiprocessing
    import warnings

    from dptree.data.engines.numpy import bound_cells

    codes, leaf = np.repeat(np.arange(50), 4), np.arange(200) % 8
    expected = bound_cells(leaf, codes, 2, 8, SeededRandomSource(1)).tolist()  # the parent's pool exists
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_bound_in_child, args=(queue,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (Python >= 3.12)
        child.start()
    try:
        assert queue.get(timeout=60) == expected
    finally:
        child.join(10)
        if child.exitcode is None:
            child.kill()
