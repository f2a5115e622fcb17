"""``dptree.quantiles`` with ``method="approx"`` and ``"exponential"`` on files and DuckDB relations
(dptree.quantiles.staged): every call of the recursion runs staged on its piece
(engine windows of global ranks, shifted to the piece, with the tie shares at its ends) and must
give the in-memory path's points seed by seed -- the same candidates, the same draws."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from _staged_calls import count_staged_queries

import dptree
from dptree import noise
from dptree.data.domain import point_domain
from dptree.data.engines import duckdb as duckdb_engine
from dptree.data.engines import duckdb_ordered
from dptree.interior import blocks as blocks_module
from dptree.interior.staged import BUCKETS, staged_session
from dptree.quantiles import staged as staged_module
from dptree.quantiles.approx import ArrayPiece, Cut
from dptree.quantiles.staged import StagedPiece, _Column


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts the staged queries; the whole-column sort (value_counts) must not run."""
    return count_staged_queries(monkeypatch, duckdb_ordered.DuckDBOrderedCounts, duckdb_engine.DuckDBEngine)


def _frame() -> pd.DataFrame:
    gen = np.random.default_rng(7)
    # heavy ties (a tie block straddles many levels' targets), values clamped at both ends, +-0
    k = np.concatenate([gen.integers(-20, 60, 300), np.full(120, 17), [-500, -500, 900, 900, 900]])
    x = np.concatenate([np.round(gen.normal(0, 2, 420), 1), [-0.0, 0.0, 0.0, -50.0, 50.0]])
    return pd.DataFrame({"k": k, "x": x})


#: (column, lower, upper): an integer domain the data overflows at both ends, a tiny integer
#: domain (pieces of one point, splits at the domain's ends), a float domain
DOMAINS = [("k", -10, 40), ("k", 15, 19), ("x", -5.0, 5.0)]
LEVELS = [[0.5], [0.1, 0.5, 0.9], [0.05, 0.2, 0.25, 0.5, 0.5, 0.51, 0.75, 0.99], list(np.linspace(0.01, 0.99, 21))]


@pytest.mark.parametrize("window_bits", [1, 160])
def test_staged_quantiles_give_the_in_memory_points_seed_by_seed(tmp_path: Path, calls, monkeypatch,
                                                                 window_bits: int) -> None:
    """With a 1-bit window the pieces' prefixes and suffixes carry most of the mass, so proposals
    outside the window (engine rank queries, the shares at the pieces' ends) happen often."""
    monkeypatch.setattr(blocks_module, "_WINDOW_BITS", window_bits)
    df = _frame()
    path = tmp_path / "d.parquet"
    df.to_parquet(path)
    rel = duckdb.from_df(df)
    compared = 0
    for col, lo, hi in DOMAINS:
        if window_bits == 1 and isinstance(lo, float):
            continue  # a 1-bit window on ~2^62 float keys rejects thousands of times (one rank query each)
        arr = df[col].to_numpy()
        for qs in LEVELS:
            for method in ("approx", "exponential"):
                for seed in range(2 if window_bits == 1 else 1):
                    for neighbors in (("add_remove", "replace")[(seed + len(qs)) % 2],):
                        kw = dict(lower=lo, upper=hi, epsilon=2.0, method=method, neighbors=neighbors, rng=seed)
                        want = dptree.quantiles(arr, qs, **kw).values
                        assert dptree.quantiles(path, qs, column=col, **kw).values == want, (col, qs, method, seed)
                        assert dptree.quantiles(rel, qs, column=col, **kw).values == want, (col, qs, method, seed)
                        compared += 1
    assert compared >= (32 if window_bits == 1 else 24)
    assert calls["buckets"] == 2 * compared  # one histogram per release, never a sort
    assert calls["window"] + calls["windows"] >= calls["buckets"]
    if window_bits == 1:
        assert calls["ranks"] > 0  # outside proposals were asked of the engine


def test_windows_read_ahead_in_one_scan(tmp_path: Path, calls, monkeypatch) -> None:
    """Every level's window is read with one scan after the bucket histogram, so approx with 19
    levels (5 layers) runs in 2 scans; without the read-ahead, one scan per layer (1 + 5)."""
    gen = np.random.default_rng(5)
    path = tmp_path / "s.parquet"
    pd.DataFrame({"x": gen.normal(0, 1, 200_000)}).to_parquet(path)
    qs = [i / 20 for i in range(1, 20)]
    points = {}
    for ahead, method, scans in ((True, "approx", 2), (True, "exponential", 2), (False, "approx", 6)):
        monkeypatch.setattr(staged_module, "AHEAD_RANKS", 1 << 22 if ahead else 0)
        for name in calls:
            calls[name] = 0
        got = dptree.quantiles(path, qs, column="x", lower=-4.0, upper=4.0, epsilon=1.0, method=method, rng=1,
                               interval="bound")  # the estimates' scans alone (the interval counts: below)
        points[ahead, method] = got.values
        assert calls["buckets"] == 1 and calls["ranks"] == 0
        assert calls["buckets"] + calls["window"] + calls["windows"] == scans, (ahead, method, calls)
    assert points[True, "approx"] == points[False, "approx"]  # the read-ahead decides scans, not points
    for name in calls:
        calls[name] = 0
    got = dptree.quantiles(path, qs, column="x", lower=-4.0, upper=4.0, epsilon=1.0, method="approx", rng=1)
    assert got.interval == "counts" and got.interval_counts is not None
    # the interval counts: one query on the estimates' session for every cut and the total
    assert calls["upto"] == 1 and calls["ranks"] == 0 and len(got.interval_counts) > 100


def test_empty_pieces_and_empty_data(tmp_path: Path, calls) -> None:
    """All records in one tie block at the domain's top: most pieces are empty, splits land at the
    block, and a column with no rows in the domain's sense (every row dropped) runs the
    mechanism on no data -- still the in-memory points."""
    df = pd.DataFrame({"k": np.full(50, 40), "x": np.full(50, np.nan)})
    path = tmp_path / "e.parquet"
    df.to_parquet(path)
    qs = [0.1, 0.3, 0.5, 0.7, 0.9]
    for seed in range(5):
        kw = dict(lower=0, upper=40, epsilon=1.0, method="approx", rng=seed)
        assert dptree.quantiles(path, qs, column="k", **kw).values == dptree.quantiles(df["k"].to_numpy(), qs,
                                                                                      **kw).values
        kw = dict(kw, lower=0.0, upper=40.0)
        assert dptree.quantiles(path, qs, column="x", on_invalid="drop", **kw).values == dptree.quantiles(
            np.zeros(0), qs, **kw).values


def test_refusals_match_the_in_memory_path(tmp_path: Path) -> None:
    df = pd.DataFrame({"x": [1.0, np.nan, 3.0]})
    path = tmp_path / "m.parquet"
    df.to_parquet(path)
    with pytest.raises(dptree.DPTreeError, match="on_invalid='drop'"):
        dptree.quantiles(path, [0.5], column="x", lower=0.0, upper=4.0, epsilon=1.0, method="approx")
    with pytest.raises(dptree.DPTreeError, match="column="):
        dptree.quantiles(path, [0.5], lower=0.0, upper=4.0, epsilon=1.0, method="approx")


def _array_ranks(piece: ArrayPiece, y: int) -> tuple[int, int]:
    vals, cnt = piece.vals.astype(np.int64), piece.cnt
    return int(cnt[vals < y].sum()), int(cnt[vals <= y].sum())


def test_staged_pieces_have_the_in_memory_pieces_ranks_and_windows() -> None:
    """Split both representations at the same points (data values, gaps, the pieces' ends, with the
    same coins) and compare, in every piece, the ranks of every domain point and the rank windows."""
    gen = np.random.default_rng(11)
    data = np.concatenate([gen.integers(0, 30, 80), np.full(25, 12), np.full(9, 0), np.full(7, 29)])
    rel = duckdb.from_df(pd.DataFrame({"k": data}))
    enc = point_domain(0, 29)
    values, counts = np.unique(data, return_counts=True)
    checked = 0
    for seed in range(3):
        src_a, src_b = noise.make_source(seed), noise.make_source(seed)
        with staged_session(rel, "k", None, enc, "error") as session:
            cum = np.cumsum(session.buckets(BUCKETS))
            staged: object = StagedPiece(_Column(session, enc, cum), 0, 29, None, None, 0, int(cum[-1]))
            pieces = [(ArrayPiece(values.astype(np.uint64), counts.astype(np.int64), 0, 29), staged)]
            while pieces:
                a, b = pieces.pop()
                assert isinstance(b, StagedPiece) and (a.lo, a.hi) == (b.lo, b.hi)
                assert b.n == int(a.cnt.sum())
                for y in range(a.lo, a.hi + 1):
                    assert b.ranks(y) == _array_ranks(a, y), (seed, a.lo, a.hi, y)
                    checked += 1
                if a.lo < a.hi and b.n:
                    for lo_rank, hi_rank in [(-3, 2), (0, b.n), (b.n // 3, b.n // 2), (b.n - 1, b.n + 4)]:
                        offs, cnt, upto = b.window(lo_rank, hi_rank)
                        meet = [(int(v), int(c)) for v, c, u in zip(a.vals, a.cnt, np.cumsum(a.cnt))
                                if u >= lo_rank and u - c <= hi_rank]
                        assert list(zip(offs.tolist(), cnt.tolist())) == meet, (seed, a.lo, a.hi, lo_rank)
                        assert upto.tolist() == [_array_ranks(a, v)[1] for v, _ in meet]
                if a.lo == a.hi or len(pieces) > 12:
                    continue
                v = int(gen.choice([a.lo, a.hi, int(gen.integers(a.lo, a.hi + 1))]))
                lo_r, up_r = _array_ranks(a, v)
                below = int(gen.integers(0, up_r - lo_r + 1))  # a dithered cut: some sure to each side
                cut = Cut(v, below, int(gen.integers(0, up_r - lo_r - below + 1))) if seed else Cut(v)
                b._window = None  # the split value's ranks from ranks(), not a window
                pieces += list(zip(a.split(cut, src_a), b.split(cut, src_b)))
    assert checked > 300


@pytest.mark.parametrize("max_pairs", [1 << 16, 13, 1])
def test_batched_windows_equal_one_window_each(tmp_path: Path, monkeypatch, max_pairs: int) -> None:
    """DuckDB's ``windows`` (one scan, a join on the requests; past MAX_PAIRS in chunks, 13: two
    requests, then one alone beyond it)
    against ``window`` per request, with overlapping bucket ranges, a one-bucket request and rank
    ranges cutting into buckets."""
    monkeypatch.setattr(duckdb_ordered, "MAX_PAIRS", max_pairs)
    gen = np.random.default_rng(1)
    path = tmp_path / "w.parquet"
    pd.DataFrame({"k": gen.integers(-5, 100, 3000), "x": gen.normal(0, 1, 3000)}).to_parquet(path)
    for col, enc in (("k", point_domain(0, 90)), ("x", point_domain(-2.0, 2.0))):
        with staged_session(path, col, None, enc, "error") as session:
            cum = np.cumsum(session.buckets(64))
            reqs = [(0, 3, 0, 0, 40), (2, 10, int(cum[1]), int(cum[1]) + 3, int(cum[1]) + 200),
                    (20, 63, int(cum[19]), 2000, 2990), (5, 5, int(cum[4]), int(cum[4]), int(cum[4]))]
            many = session.windows(reqs)
            assert len(many) == len(reqs)
            for req, got in zip(reqs, many):
                want = session.window(*req)
                assert got[0].size > 0
                assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(want, got)), req
