"""The staged exponential mechanisms on files and DuckDB relations (dptree.interior.staged, issue 12
item 3): a bucket histogram, the rank window's distinct values and the ranks of proposed points,
counted in DuckDB; the same law -- and the same draws -- as the in-memory path."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from _staged_calls import count_staged_queries
from interior_stats import pooled_chisquare_pvalue

from dptree import interior_point, median, noise, quantile
from dptree.data.domain import point_domain
from dptree.data.engines import duckdb as duckdb_engine
from dptree.data.engines import duckdb_ordered
from dptree.data.histograms import ordered_counts
from dptree.errors import DataError
from dptree.interior import blocks as blocks_module
from dptree.interior.selection import exponential_base, interior_badness, quantile_badness, quantile_level
from dptree.interior.staged import sample_staged


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts the engine's staged queries; the whole-column sort (value_counts) must not run."""
    return count_staged_queries(monkeypatch, duckdb_ordered.DuckDBOrderedCounts, duckdb_engine.DuckDBEngine)


def _frame() -> pd.DataFrame:
    gen = np.random.default_rng(3)
    x = np.concatenate([np.round(gen.normal(0, 3, 400), 1), [-0.0, 0.0, 0.0, -20.0, 30.0]])  # ties, +-0, clamped
    return pd.DataFrame({"x": x, "k": gen.integers(-100, 5000, x.size), "f": gen.normal(0, 1, x.size).astype(np.float32)})


#: (column, lower, upper): float and integer domains, values outside them (clamped), a float
#: domain whose width overflows (one bucket), an integer column on a float domain, float32
DOMAINS = [("x", -10.0, 10.0), ("k", -50, 4000), ("x", -1e308, 1e308), ("k", -200.0, 6000.0), ("f", -1.0, 1.0)]


@pytest.mark.parametrize("window_bits", [2, 160])
def test_files_and_relations_give_the_in_memory_point_seed_by_seed(tmp_path: Path, calls, monkeypatch,
                                                                   window_bits: int) -> None:
    """Same candidates, same draws, same ranks: the staged path must return the in-memory path's
    point for every seed -- with a 2-bit window the prefix and suffix carry most of the mass, so
    outside proposals (engine rank queries and the acceptance step) happen often."""
    monkeypatch.setattr(blocks_module, "_WINDOW_BITS", window_bits)
    df = _frame()
    path = tmp_path / "d.parquet"
    df.to_parquet(path)
    rel = duckdb.from_df(df)
    releases = 0
    for col, lo, hi in DOMAINS:
        if window_bits == 2 and isinstance(lo, float):
            continue  # a 2-bit window on ~2^62 float keys rejects thousands of times (one rank query each)
        arr = df[col].to_numpy()
        seeds = range(25) if window_bits == 2 else range(2)
        for seed in seeds:
            for kind in ("median", "quantile", "interior"):
                def run(data, **kw):  # type: ignore[no-untyped-def]
                    if kind == "median":
                        return median(data, lower=lo, upper=hi, epsilon=1.0, rng=seed, **kw).value
                    if kind == "quantile":
                        return quantile(data, 0.1, lower=lo, upper=hi, epsilon=2.0, rng=seed, **kw).value
                    return interior_point(data, lower=lo, upper=hi, epsilon=1.0, rng=seed, method="exponential",
                                          **kw).value

                want = run(arr)
                assert run(path, column=col) == want, (col, lo, seed, kind)
                assert run(rel, column=col) == want, (col, lo, seed, kind)
                releases += 2
    assert calls["buckets"] == calls["window"] == releases  # two scans per release
    if window_bits == 2:
        assert calls["ranks"] > 0  # the outside proposals were exercised
    else:
        assert calls["ranks"] == 0  # 2^-160: never in practice


def test_no_data_and_dropped_rows_give_the_in_memory_point(tmp_path: Path, calls) -> None:
    """n = 0 (every row dropped): the mechanism on no data, as in memory; the checks refuse NaN
    with the in-memory message by default."""
    df = pd.DataFrame({"x": [np.nan, np.inf, np.nan]})
    path = tmp_path / "nan.parquet"
    df.to_parquet(path)
    for seed in range(5):
        want = median(np.array([], np.float64), lower=-1.0, upper=1.0, epsilon=1.0, rng=seed).value
        assert median(path, column="x", lower=-1.0, upper=1.0, epsilon=1.0, rng=seed, on_invalid="drop").value == want
    with pytest.raises(DataError) as mem:
        median(df["x"].to_numpy(), lower=-1.0, upper=1.0, epsilon=1.0)
    with pytest.raises(DataError) as staged:
        median(path, column="x", lower=-1.0, upper=1.0, epsilon=1.0)
    assert str(staged.value) == str(mem.value)


def _reference_window(v: np.ndarray, first: int, last: int, lo_rank: int, hi_rank: int, count: int,
                      bucket_of) -> tuple[list, list, list]:  # type: ignore[no-untyped-def]
    vals, cnt = np.unique(v, return_counts=True)
    upto = np.cumsum(cnt)
    b = bucket_of(vals, count)
    keep = (b >= first) & (b <= last) & (upto >= lo_rank) & (upto - cnt <= hi_rank)
    return vals[keep].tolist(), cnt[keep].tolist(), upto[keep].tolist()


def test_engine_counts_are_exact_and_the_bucketing_monotone(tmp_path: Path) -> None:
    """The engine's buckets are runs of the sorted clamped values (monotone), and its windows and
    ranks equal a numpy reference computed from those runs."""
    gen = np.random.default_rng(5)
    x = np.concatenate([gen.normal(0, 2, 3000), [-0.0, 0.0, 7.999999999, -8.0, 8.0, 1e300, -1e300]])
    path = tmp_path / "v.parquet"
    pd.DataFrame({"x": x}).to_parquet(path)
    lo, hi = -8.0, 8.0
    c = np.clip(x, lo, hi) + 0.0  # -0.0 -> 0.0
    with ordered_counts(str(path), column="x", lower=lo, upper=hi) as s:
        assert s is not None
        hist = s.buckets(64)
        assert hist.sum() == x.size
        cum = np.concatenate([[0], np.cumsum(hist)])
        srt = np.sort(c)
        # monotone: bucket j holds the sorted values cum[j] .. cum[j+1]-1, so every bucket's values
        # lie below the next bucket's -- read back through windows of single buckets
        buckets_of = []
        for j in range(64):
            vals, cnt, upto = s.window(j, j, int(cum[j]), -1, x.size + 1)
            assert cnt.sum() == hist[j]
            if cnt.size:
                np.testing.assert_array_equal(np.repeat(vals, cnt), srt[cum[j]:cum[j + 1]])
                np.testing.assert_array_equal(upto, cum[j] + np.cumsum(cnt))
            buckets_of.append(vals)
        for point in (-8.0, -1.5, 0.0, float(srt[1500]), 8.0):
            assert s.ranks(point) == (int((c < point).sum()), int((c <= point).sum()))
        # a rank-filtered window over several buckets
        bucket = {float(v): j for j, vs in enumerate(buckets_of) for v in vs.tolist()}
        want = _reference_window(c, 20, 40, 1000, 1400, 64, lambda vs, _: np.array([bucket[float(v)] for v in vs]))
        got = s.window(20, 40, int(cum[20]), 1000, 1400)
        assert [g.tolist() for g in got] == [want[0], want[1], want[2]]
    # integer domains: offsets from lower, exact near 2^64
    k = np.array([0, 5, 5, 2**63, 2**64 - 1, 2**64 - 1], dtype=np.uint64)
    ipath = tmp_path / "k.parquet"
    pd.DataFrame({"k": k}).to_parquet(ipath)
    with ordered_counts(str(ipath), column="k", lower=3, upper=2**64 - 1) as s:
        assert s is not None
        assert s.buckets(8).sum() == k.size
        vals, cnt, upto = s.window(0, 7, 0, 0, 10)
        assert vals.tolist() == [0, 2, 2**63 - 3, 2**64 - 4] and cnt.tolist() == [1, 2, 1, 2]
        assert upto.tolist() == [1, 3, 4, 6]
        assert s.ranks(2) == (1, 3) and s.ranks(2**64 - 4) == (4, 6)


@pytest.mark.slow
@pytest.mark.parametrize("which", ["interior", "quantile"])
def test_staged_law_is_the_exponential_mechanism_and_a_wrong_base_is_rejected(tmp_path: Path, which,
                                                                              monkeypatch) -> None:
    """Brute force: with a 2-bit window the outside regions carry most of the mass; draws of the
    staged sampler on a DuckDB session must follow P(y) ~ beta^score(y) point by point, and a
    30% wrong base must be rejected (power; the seed-by-seed test above compares with the in-memory
    path, whose law test rejects 10%)."""
    monkeypatch.setattr(blocks_module, "_WINDOW_BITS", 2)
    data = [3, 3, 7, 12, 12, 12, 20, 21, 30, 31, 33, 40, 41, 41, 50, 55]
    upper, eps, n = 60, 1.0, len(data)
    level = quantile_level(0.3)
    sens = 1 if which == "interior" else level.denominator
    base = exponential_base(eps, sens)
    beta = base[0] / base[1]

    def score(y: int) -> int:
        lo, up = sum(x < y for x in data), sum(x <= y for x in data)
        if which == "interior":
            return min(up, n - lo)
        a, b = level.numerator, level.denominator
        return -max(b * lo - a * n, 0, a * n - b * up)

    def law(bb: float) -> np.ndarray:
        s = np.array([score(y) for y in range(upper + 1)], float)
        w = bb ** (s - s.max())
        return w / w.sum()

    path = tmp_path / "s.parquet"
    pd.DataFrame({"x": np.array(data, np.int64)}).to_parquet(path)
    enc = point_domain(0, upper)
    src = noise.make_source(17)
    draws = 2500
    badness_of = interior_badness if which == "interior" else (lambda m: quantile_badness(level, m))
    with ordered_counts(str(path), column="x", lower=0, upper=upper) as s:
        assert s is not None
        out = [sample_staged(src, s, enc, badness_of, base, lambda: -1) for _ in range(draws)]
    counts = np.bincount(out, minlength=upper + 1)

    def pvalue(probs) -> float:
        return pooled_chisquare_pvalue(counts, probs)

    assert pvalue(law(beta)) > 1e-6
    assert pvalue(law(math.exp(1.3 * math.log(beta)))) < 1e-6
