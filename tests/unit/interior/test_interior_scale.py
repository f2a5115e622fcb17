"""Interior points and quantiles at scale: engine-side counting, vectorised encoding and blocks, and
the vectorised exact exponential sampler (issue 12 item 3, issue 13 item 4)."""

from __future__ import annotations

import collections
import math
import struct
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from interior_stats import pooled_chisquare_pvalue
from scipy import stats

from dptree import interior_point, median, noise, quantile
from dptree.errors import DataError, InvalidParameterError
from dptree.interior import blocks as blocks_module
from dptree.interior.blocks import block_arrays, group_arrays
from dptree.interior.encoding import prepare
from dptree.interior.selection import (
    _group,
    exponential_base,
    ordered_exponential_mechanism,
    quantile_exponential_mechanism,
    quantile_level,
    rank_blocks,
)
from dptree.noise import exponential as noise_exponential

# ------------------------------------------------------------------ the vectorised sampler

LENGTHS = [1, 3, 2, 5, 1, 2**63 + 12345, 2**64 - 1, 7]
EXPONENTS = [0, 1, 2, 4, 7, 64, 66, 3]


def _law(bb: float) -> list[float]:
    w = [a * bb ** (-r) for a, r in zip(LENGTHS, EXPONENTS)]
    return [x / sum(w) for x in w]


def _counts(draw, n: int) -> list[int]:
    c = collections.Counter(draw() for _ in range(n))
    return [c[i] for i in range(len(LENGTHS))]


def _pvalue(counts: list[int], probs: list[float]) -> float:
    n = sum(counts)
    keep = [i for i, p in enumerate(probs) if p * n >= 5]  # pool the rare cells
    obs = [counts[i] for i in keep] + [n - sum(counts[i] for i in keep)]
    exp = [probs[i] * n for i in keep] + [n * (1 - sum(probs[i] for i in keep))]
    if exp[-1] < 5:
        obs, exp = obs[:-2] + [obs[-2] + obs[-1]], exp[:-2] + [exp[-2] + exp[-1]]
    return float(stats.chisquare(obs, exp).pvalue)


def test_array_sampler_has_the_exact_law_like_the_list_sampler_and_catches_a_10pct_wrong_scale() -> None:
    """The old (list) and new (array) samplers against the exact law, on weights spanning 2^64
    lengths and many levels; a 10% wrong base is rejected (the test has power)."""
    base = noise.exp_lower_rational(0.5)
    b = base[0] / base[1]
    n = 30000
    src_new, src_old = noise.make_source(21), noise.make_source(22)
    lens, expo = np.array(LENGTHS, dtype=np.uint64), np.array(EXPONENTS, dtype=np.int64)
    new = _counts(lambda: noise.sample_exponential_index(src_new, lens, expo, base), n)
    old = _counts(lambda: noise.sample_exponential_index(src_old, LENGTHS, EXPONENTS, base), n)
    assert _pvalue(new, _law(b)) > 1e-6
    assert _pvalue(old, _law(b)) > 1e-6
    wrong = math.exp(1.1 * math.log(b))
    assert _pvalue(new, _law(wrong)) < 1e-6
    # and the two samplers agree with each other (two-sample chi-square on the pooled table)
    table = np.array([new, old])
    table = table[:, table.sum(axis=0) >= 10]
    assert stats.chi2_contingency(table).pvalue > 1e-6


def test_array_sampler_tail_branch_and_bad_input(monkeypatch: pytest.MonkeyPatch) -> None:
    base = noise.exp_lower_rational(0.5)
    src = noise.make_source(4)
    lens, expo = np.array([1, 5, 3], np.uint64), np.array([0, 100000, 100001], np.int64)
    real = noise_exponential.uniform_int
    calls = {"n": 0}

    def fake(s, lo, hi):  # the first draw lands in the far tail's bound
        calls["n"] += 1
        return hi if calls["n"] == 1 else real(s, lo, hi)

    monkeypatch.setattr(noise_exponential, "uniform_int", fake)
    assert noise.sample_exponential_index(src, lens, expo, base) in (0, 1, 2)
    assert calls["n"] >= 2
    monkeypatch.undo()
    with pytest.raises(InvalidParameterError):
        noise.sample_exponential_index(src, np.zeros(2, np.uint64), np.zeros(2, np.int64), base)
    with pytest.raises(InvalidParameterError):
        noise.sample_exponential_index(src, np.ones(2, np.int64), np.array([0, -1]), base)
    with pytest.raises(InvalidParameterError):
        noise.sample_exponential_index(src, np.ones(2, np.uint64), np.zeros(3, np.int64), base)
    # zero lengths are never drawn
    out = {noise.sample_exponential_index(src, np.array([0, 1, 0, 1], np.uint64), np.zeros(4, np.int64), base)
           for _ in range(200)}
    assert out == {1, 3}


# ------------------------------------------------------------------ blocks and grouping


@pytest.mark.parametrize("seed", range(6))
def test_block_arrays_are_the_rank_blocks(seed: int) -> None:
    gen = np.random.default_rng(seed)
    upper = [9, 40, 2**64 - 1][seed % 3]
    values = gen.integers(0, min(upper, 30), 25, endpoint=True).tolist() + [0, upper][: seed // 3 + 1]
    vals, cnt = _group(values, None)
    got = block_arrays(np.array(vals, np.uint64), np.array(cnt, np.int64), 0, upper)
    assert got is not None
    below = got.per_block(lambda lo, up, out: np.copyto(out, lo)).tolist()
    upto = got.per_block(lambda lo, up, out: np.copyto(out, up)).tolist()
    blocks = sorted((s, s + ln - 1, b, u) for s, ln, b, u in zip(got.starts(), got.lengths.tolist(), below, upto)
                    if ln > 0)
    assert blocks == rank_blocks(vals, cnt, 0, upper)


def test_group_arrays_match_the_list_grouping() -> None:
    gen = np.random.default_rng(2)
    values = gen.integers(0, 50, 300)
    counts = gen.integers(0, 4, 300)
    want = _group(values.tolist(), counts.tolist())
    got = group_arrays(values.astype(np.uint64), counts)
    assert got[0].tolist() == want[0] and got[1].tolist() == want[1]
    with pytest.raises(InvalidParameterError):
        group_arrays(values.astype(np.uint64), -counts - 1)


# ------------------------------------------------------------------ encoding


@pytest.mark.parametrize(("values", "lower", "upper"), [
    (np.array([-5, 3, 3, 2**62, -(2**63)], np.int64), -10, 10),
    (np.array([0, 2**64 - 1, 2**63, 5, 5], np.uint64), 0, 2**64 - 1),
    (np.array([0, 2**64 - 1, 7], np.uint64), 2**70, 2**70 + 5),  # all below the domain
    (np.array([-3.0, 4.0, 4.0, 1e30, -1e19, 2.0**63], np.float64), -(2**63), 2**64),  # whole floats, huge
    (np.array([-0.0, 0.0, 1.5, -2.25, 1e300, -1e-300], np.float64), -3.0, 3.0),
    (np.array([1, 7, -4], np.int64), -1.5, 2.5),  # ints in a float domain
])
def test_positions_are_the_clamped_offsets_in_the_domain_order(values, lower, upper) -> None:
    def order(x: float | int) -> int:  # integers as they are, floats by their bits (negatives mirrored)
        if isinstance(lower, int) and isinstance(upper, int):
            return int(x)
        i = struct.unpack(">q", struct.pack(">d", float(x)))[0]
        return -(i & 0x7FFFFFFFFFFFFFFF) if i < 0 else i

    enc, vals, cnt = prepare(values, lower, upper, None)
    want = _group([min(max(order(v), order(lower)), order(upper)) - order(lower) for v in values.tolist()], None)
    assert np.asarray(vals).tolist() == want[0] and np.asarray(cnt).tolist() == want[1]
    assert enc.size == order(upper) - order(lower) + 1


def test_prepare_keeps_the_policies_and_messages() -> None:
    with pytest.raises(DataError, match="on_invalid='drop'"):
        prepare(np.array([1.0, np.nan]), 0.0, 9.0, None)
    with pytest.raises(DataError, match="float bounds"):
        prepare(np.array([1.0, 2.5]), 0, 9, None)
    enc, vals, cnt = prepare(np.array([1.0, 2.5, np.inf, 1.0]), 0, 9, None, "drop")
    assert vals.tolist() == [1] and cnt.tolist() == [2]
    enc, vals, cnt = prepare(np.array([3, 1, 3]), 0, 9, [2, 0, 5])
    assert vals.tolist() == [3] and cnt.tolist() == [7]
    with pytest.raises(DataError, match="counts"):
        prepare(np.array([3, 1]), 0, 9, [1])
    enc, vals, cnt = prepare([10**30, 2], 0, 10**40, None)  # beyond 64 bits: Python ints
    assert list(vals) == [2, 10**30]


# ------------------------------------------------------------------ every input, one answer


def test_files_relations_and_tables_release_what_the_array_releases(tmp_path: Path) -> None:
    gen = np.random.default_rng(9)
    df = pd.DataFrame({"x": np.round(gen.normal(0, 3, 5000), 2), "k": gen.integers(0, 2**40, 5000)})
    path = tmp_path / "d.parquet"
    df.to_parquet(path)
    inputs = (df, path, str(path), duckdb.from_df(df))
    for col, lo, hi in (("x", -10.0, 10.0), ("k", 0, 2**40)):
        arr = df[col].to_numpy()
        want = (median(arr, lower=lo, upper=hi, epsilon=1.0, rng=5).value,
                quantile(arr, 0.9, lower=lo, upper=hi, epsilon=1.0, rng=6).value,
                interior_point(arr, lower=lo, upper=hi, epsilon=1.0, rng=7, method="exponential").value)
        for data in inputs:
            got = (median(data, lower=lo, upper=hi, epsilon=1.0, rng=5, column=col).value,
                   quantile(data, 0.9, lower=lo, upper=hi, epsilon=1.0, rng=6, column=col).value,
                   interior_point(data, lower=lo, upper=hi, epsilon=1.0, rng=7, method="exponential",
                                  column=col).value)
            assert got == want, type(data)
    # a median of a large sample is close to the true one (the vectorised path is used and is right)
    assert abs(median(df, column="x", lower=-10.0, upper=10.0, epsilon=1.0, rng=1).value - df["x"].median()) < 0.3


def test_interior_point_on_a_million_values_over_2_64_is_interior() -> None:
    gen = np.random.default_rng(0)
    x = gen.integers(2**40, 2**63, 10**6, dtype=np.uint64)
    r = interior_point(x, lower=0, upper=2**64 - 1, epsilon=1.0, method="exponential", rng=1)
    assert int(x.min()) <= r.value <= int(x.max())
    q = quantile(x, 0.25, lower=0, upper=2**64 - 1, epsilon=1.0, rng=2)
    rank = np.searchsorted(np.sort(x), q.value) / x.size
    assert abs(rank - 0.25) < 1e-3


# ------------------------------------------------------------------ the window around the best rank


@pytest.mark.parametrize("which", ["interior", "quantile"])
def test_windowed_sampling_has_the_exact_law_when_the_outside_carries_mass(which, monkeypatch) -> None:
    """With a window of ~3 ranks, the prefix and suffix candidates (over-weighted, then accepted
    with probability beta^-(badness - bound)) carry most of the mass: the output must still follow
    the exponential mechanism's law point by point (brute force over the domain), and a 10% wrong
    base must be rejected."""
    monkeypatch.setattr(blocks_module, "_WINDOW_BITS", 2)
    data = [3, 3, 7, 12, 12, 12, 20, 21, 30, 31, 33, 40, 41, 41, 50, 55]
    upper, eps, n = 60, 1.0, len(data)
    level = quantile_level(0.3)
    base = exponential_base(eps, 1 if which == "interior" else level.denominator)
    beta = base[0] / base[1]

    def score(y: int) -> int:
        lo, up = sum(x < y for x in data), sum(x <= y for x in data)
        if which == "interior":
            return min(up, n - lo)
        a, b = level.numerator, level.denominator
        return -max(b * lo - a * n, 0, a * n - b * up)

    def law(bb: float) -> list[float]:
        w = [bb ** (score(y) - max(score(z) for z in range(upper + 1))) for y in range(upper + 1)]
        return [x / sum(w) for x in w]

    src = noise.make_source(31)
    draws = 12000
    vals, cnt = np.array(sorted(set(data)), np.uint64), np.array([data.count(v) for v in sorted(set(data))])
    if which == "interior":
        out = [ordered_exponential_mechanism(vals, counts=cnt, lower=0, upper=upper, epsilon=eps, rng=src)
               for _ in range(draws)]
    else:
        out = [quantile_exponential_mechanism(vals, counts=cnt, q=0.3, lower=0, upper=upper, epsilon=eps, rng=src)
               for _ in range(draws)]
    counts = np.bincount(out, minlength=upper + 1).tolist()

    def pvalue(probs) -> float:
        return pooled_chisquare_pvalue(counts, probs)

    assert pvalue(law(beta)) > 1e-6
    assert pvalue(law(math.exp(1.1 * math.log(beta)))) < 1e-6, pvalue(law(math.exp(1.1 * math.log(beta))))


def test_lists_of_integers_beyond_2_53_stay_exact() -> None:
    """numpy would read [1, 2^64 - 3] as float64 and round the large value."""
    s = 2**64
    enc, vals, cnt = prepare([1, 2, s - 3, s - 2], 0, s - 1, [5, 5, 5, 6])
    assert list(vals) == [1, 2, s - 3, s - 2] and list(cnt) == [5, 5, 5, 6]
    enc, vals, cnt = prepare([2**53 + 1, 2**53 + 1, 3], 0, 2**60, None)
    assert list(vals) == [3, 2**53 + 1] and list(cnt) == [1, 2]
