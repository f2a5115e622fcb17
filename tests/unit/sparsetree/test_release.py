"""``sparse_range_tree``: queries, the release contract (statement, file round trip, tampering
refused), empty data, bad input and parameters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dptree
from dptree.errors import DataError, DomainError, InvalidParameterError, ReleaseFileError

EXACT = 1e9  # noise scale ~ 1e-8: the noisy counts are the true counts


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    return np.random.default_rng(7).lognormal(2.0, 1.5, 4000)


def test_huge_epsilon_answers_exactly(data: np.ndarray) -> None:
    r = dptree.sparse_range_tree(data, epsilon=EXACT, method="levels", rng=1)
    for x in (0.5, 7.0, 7.25, 1e3):
        assert r.cdf(x) == pytest.approx(np.sum(data <= x), abs=1e-6)
    assert r.count(2.0, 9.0) == pytest.approx(np.sum((data >= 2.0) & (data <= 9.0)), abs=1e-6)
    assert r.count(float(data[0]), float(data[0])) == pytest.approx(np.sum(data == data[0]), abs=1e-6)
    qs = [0.001, 0.1, 0.5, 0.77, 0.99, 1.0]
    assert np.array_equal(r.quantile(qs), np.quantile(data, qs, method="inverted_cdf"))
    h = r.histogram([0.0, 1.0, 5.0, 50.0])
    assert np.allclose(h.counts, np.histogram(data, [0.0, 1.0, 5.0, 50.0])[0] + [0, 0, np.sum(data == 50.0)])
    assert r.total() == pytest.approx(data.size)


def test_integers_and_timestamps_over_64_bits() -> None:
    ids = np.array([3, 2**62, 2**62 + 5, -(2**63), 2**63 - 1] * 20, dtype=np.int64)
    r = dptree.sparse_range_tree(ids, epsilon=EXACT, method="levels", rng=2)
    assert r.domain.bits == 64 and r.layout.depth == 16
    assert r.count(2**62, 2**62 + 5) == pytest.approx(40)
    assert r.quantile(0.5) == 2**62
    ts = np.datetime64("2024-03-01T00:00:00", "ns") + np.arange(0, 10**6, 997).astype("timedelta64[ns]")
    rt = dptree.sparse_range_tree(ts, epsilon=EXACT, method="levels", rng=3)
    assert rt.domain.kind == "datetime"
    assert rt.quantile(0.5) == np.quantile(ts.astype(np.int64), 0.5, method="inverted_cdf").astype("datetime64[ns]")
    assert rt.cdf(np.datetime64("2024-03-01T00:00:00.0005", "ns")) == pytest.approx(np.sum(ts <= np.datetime64(
        "2024-03-01T00:00:00.0005", "ns")))


@pytest.mark.parametrize("dtype, top", [(np.uint64, 2**64 - 1), (np.int64, 2**63 - 1)])
def test_wide_cells_place_the_largest_key_exactly(dtype: Any, top: int) -> None:
    """Cells wider than 2^53 keys: the point at a cell's last key is not confused with its
    neighbour (a float fraction rounds both to 1), cell ends and quantiles stay on the cell."""
    vals = np.array([top] * 10 + [1] * 10, dtype=dtype)
    for seed in range(5):
        r = dptree.sparse_range_tree(vals, epsilon=1.0, rng=seed)
        t = r._tree
        assert t.cell_width.max() > 2.0**53  # the case: a wide cell holds the top key
        lo, hi = r.ci(top, top)
        assert hi >= 10.0 and lo <= 0.0  # the cell's records may all sit at its last key
        assert 0.0 < r.count(top, top) < 1e-12  # its share of the cell: one key of > 2^53
        assert r.count(top - 1, top) == pytest.approx(2 * r.count(top, top), rel=1e-9)
        frame = r.to_frame()
        assert int(frame["cell_high"].iloc[-1]) == top
        assert [int(v) for v in frame["cell_low"].iloc[1:]] == [int(v) + 1 for v in frame["cell_high"].iloc[:-1]]
        assert int(r.quantile(1.0)) == top
        assert int(r.quantile_ci(1.0)[1]) == top


@pytest.mark.parametrize("method", ["privtree", "levels"])
def test_noisy_answers_have_honest_error_bars(data: np.ndarray, method: str) -> None:
    r = dptree.sparse_range_tree(data, epsilon=1.0, rng=4, method=method)
    assert r.private is False and "NOT PRIVATE" in r.summary()
    x = np.array([1.0, 5.0, 30.0])
    se = r.cdf_stderr(x)
    assert np.all(se > 0)
    lo, hi = r.cdf_ci(x, level=0.95)
    assert np.all(lo < r.cdf(x)) and np.all(r.cdf(x) < hi)
    assert np.all(hi - lo >= 2 * 1.9 * se)  # at least the normal width of the least-squares part
    q = r.quantiles([0.25, 0.5, 0.75])
    assert np.all(q.ci_low <= q.values) and np.all(q.values <= q.ci_high)
    ranks = np.array([np.sum(data <= v) for v in q.values])
    assert np.all(np.abs(ranks - np.array([0.25, 0.5, 0.75]) * data.size) < 400)
    frame = r.to_frame()
    assert {"cell_low", "cell_high", "estimate", "stderr"} <= set(frame.columns)
    assert frame["estimate"].sum() == pytest.approx(r.total())


@pytest.mark.parametrize("method", ["privtree", "levels"])
def test_file_round_trip_and_tampering(tmp_path: Path, data: np.ndarray, method: str) -> None:
    r = dptree.sparse_range_tree(data, epsilon=1.0, lower=0.0, upper=1e4, rng=5, method=method)
    path = tmp_path / "s.json"
    with pytest.raises(Exception, match="allow_nonprivate"):
        r.save(path)
    r.save(path, allow_nonprivate=True)
    back = dptree.load(path)
    assert isinstance(back, dptree.SparseRangeTree)
    assert np.array_equal(back.quantile([0.1, 0.5]), r.quantile([0.1, 0.5]))
    assert back.privacy == r.privacy

    def tampered(edit) -> Path:
        doc = json.loads(path.read_text())
        edit(doc)
        doc.pop("checksum")
        from dptree.io.release_file import canonical_checksum

        doc["checksum"] = canonical_checksum(doc)
        out = tmp_path / "t.json"
        out.write_text(json.dumps(doc))
        return out

    def drop_node(doc: dict) -> None:
        lv = next(lv for lv in reversed(doc["measurements"]["levels"]) if lv["index"])
        lv["index"].pop()
        if "noisy" in lv:
            lv["noisy"].pop()

    def drop_count(doc: dict) -> None:  # privtree: a count the shape's count tree does not have
        doc["measurements"]["counts"][-1].pop()

    def extra_depth(doc: dict) -> None:  # privtree: counts of a depth the count tree does not have
        doc["measurements"]["counts"].append([0])

    def raise_count(doc: dict) -> None:  # levels: a count that changes which nodes are expanded
        lv = doc["measurements"]["levels"][3]
        lv["noisy"][lv["noisy"].index(min(lv["noisy"]))] = 10**6

    def orphan(doc: dict) -> None:  # privtree: children under a node that is not in the level above
        levels = doc["measurements"]["levels"]
        d = next(i for i in range(len(levels) - 1, 0, -1) if levels[i]["index"] and levels[i - 1]["index"])
        b = doc["parameters"]["branching"]
        missing = max(levels[d - 1]["index"]) + 1
        levels[d]["index"] += [missing * b + j for j in range(b)]

    def deeper(doc: dict) -> None:
        doc["measurements"]["depth"] += 1

    def other_share(doc: dict) -> None:  # privtree, "auto": a total that picks another share
        doc["measurements"]["total"] = 10**9

    def no_total(doc: dict) -> None:
        del doc["measurements"]["total"]

    edits = [raise_count] if method == "levels" else [orphan, drop_count, extra_depth, other_share, no_total]
    for edit in (drop_node, *edits, deeper,
                 lambda d: d["measurements"].__setitem__("noise_parameters", "1/1"),
                 lambda d: d["privacy"].__setitem__("guarantee", "none"),
                 lambda d: d["parameters"]["budget"].__setitem__("epsilon", 10.0)):
        with pytest.raises(ReleaseFileError):
            dptree.load(tampered(edit))


def test_empty_data_is_released_not_refused() -> None:
    r = dptree.sparse_range_tree(np.array([], dtype=np.float64), epsilon=1.0, rng=6)
    assert np.isfinite(r.total()) and np.isfinite(r.cdf(1.0))
    r.quantile(0.5)  # an answer (data-independent), not an error
    r2 = dptree.sparse_range_tree(np.array([], dtype=np.float64), epsilon=1.0, rng=6)
    assert r2.to_document()["measurements"] == r.to_document()["measurements"]


def test_bad_input() -> None:
    with pytest.raises(DataError, match="on_invalid"):
        dptree.sparse_range_tree(np.array([1.0, np.nan]), epsilon=1.0, rng=1)
    r = dptree.sparse_range_tree(np.array([1.0, np.nan, np.inf, 2.0]), epsilon=EXACT, on_invalid="drop", rng=1)
    assert r.total() == pytest.approx(2.0)
    c = dptree.sparse_range_tree(np.array([-50, 5, 500]), lower=0, upper=100, epsilon=EXACT, dense_depth=2, rng=1)
    assert c.count(0, 0) == pytest.approx(1) and c.count(100, 100) == pytest.approx(1)  # clamped
    with pytest.raises(DomainError):
        dptree.sparse_range_tree([1, 2], lower=5, upper=1, epsilon=1.0)
    # a bad query point says what is wrong with it (it said "lo and hi must have the same length",
    # or suggested on_invalid='drop', a policy for records, for a query point)
    with pytest.raises(DataError, match="query points must be finite"):
        c.count(float("nan"), 5)
    with pytest.raises(DataError, match="query points must be numbers, got text"):
        c.count("a", "b")
    with pytest.raises(DataError, match="not None, NaN or infinities"):
        c.cdf(None)


@pytest.mark.parametrize("kw", [{"epsilon": 0.0}, {"epsilon": -1.0}, {"epsilon": float("nan")}, {"branching": 3},
                                {"branching": 512}, {"branching": True}, {"max_contributions": 0},
                                {"threshold": 0, "method": "levels"}, {"threshold": 1.5}, {"method": "dense"},
                                {"structure_share": 1.0}, {"structure_share": 0}, {"structure_share": "bogus"},
                                {"structure_share": True}, {"on_invalid": "skip"}])
def test_invalid_parameters_are_refused_before_the_data_is_read(kw: dict) -> None:
    args = {"epsilon": 1.0, **kw}
    with pytest.raises(InvalidParameterError):
        dptree.sparse_range_tree([1.0, np.nan, "x"], **args)  # the data would raise a DataError


@pytest.mark.parametrize("kw", [{"method": "levels"}, {"method": "privtree", "dense_depth": 3}])
def test_a_threshold_no_level_compares_is_refused(kw: dict) -> None:
    """2^10 keys at branching 16: 3 levels, all expanded (the levels method's default dense_depth on a
    small domain, or a dense_depth that reaches the last level), so no count meets the threshold."""
    with pytest.raises(InvalidParameterError, match="leave threshold out, or give dense_depth < 3"):
        dptree.sparse_range_tree([1.0, np.nan, "x"], lower=0, upper=1000, epsilon=1.0, threshold=50, **kw)
    r = dptree.sparse_range_tree(np.arange(1000), lower=0, upper=1000, epsilon=1.0, rng=1, **kw)  # no threshold
    assert r.plan.dense_depth == r.layout.depth == 3
    kept = dptree.sparse_range_tree(np.arange(1000), lower=0, upper=1000, epsilon=1.0, rng=1, threshold=50,
                                    method=kw["method"], dense_depth=2)  # a level decides: it applies
    assert kept.plan.threshold == 50


def test_an_unbounded_timestamp_tree_loads_back(tmp_path: Path) -> None:
    # its domain ends are the ns range's (1677-09-21 .. 2262-04-11), beyond the dates a caller may bound
    ts = np.datetime64("2024-03-01T00:00:00", "ns") + np.arange(0, 10**6, 997).astype("timedelta64[ns]")
    rel = dptree.sparse_range_tree(ts, epsilon=1.0, rng=3)
    rel.save(tmp_path / "t.json", allow_nonprivate=True)
    back = dptree.load(tmp_path / "t.json")
    assert back.domain == rel.domain and back.quantile(0.5) == rel.quantile(0.5)
    bounded = dptree.sparse_range_tree(ts, epsilon=1.0, lower="2024-01-01", upper="2024-12-31", rng=3)
    bounded.save(tmp_path / "b.json", allow_nonprivate=True)
    assert dptree.load(tmp_path / "b.json").domain == bounded.domain


def test_dptree_query_answers_from_a_sparse_tree_file(tmp_path: Path, data: np.ndarray, cli_run: Any) -> None:
    rel = dptree.sparse_range_tree(data, epsilon=1.0, rng=4)
    rel.save(tmp_path / "s.json", allow_nonprivate=True)
    code, out, err = cli_run(["query", str(tmp_path / "s.json"), "--count", "1:10", "--cdf", "5", "--quantile", "0.5",
                              "--total", "--histogram", "0,5,50", "--format", "json"])
    assert code == 0, err
    got = {a["query"]: a for a in json.loads(out)["answers"]}
    want = rel.answer(count=[(1.0, 10.0)], cdf=[5.0], quantile=[0.5], total=True).rows
    for row in want:
        assert got[row["query"]] == pytest.approx(row)
    h = rel.histogram([0.0, 5.0, 50.0])
    assert [got["bin[0.0, 5.0)"]["estimate"], got["bin[5.0, 50.0]"]["estimate"]] == pytest.approx(list(h.counts))
    assert got["total"]["ci_low"] < rel.total() < got["total"]["ci_high"]
    code, _, err = cli_run(["query", str(tmp_path / "s.json"), "--bins", "4"])
    assert code == 2 and "--histogram E0,E1" in err
