"""ApproxQuantiles' dithered ties (dptree.quantiles.approx, dptree.quantiles.dither): the public
dither factor, the split following the target rank inside a tie block, and the statement a
release carries (files without a dither factor load under the coin-split statement). The law
and the privacy proof are checked in test_approx_privacy.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

import dptree
from dptree.errors import ReleaseFileError
from dptree.io.release_file import canonical_checksum
from dptree.noise import make_source
from dptree.quantiles.approx import approx_quantiles, layer_epsilon
from dptree.quantiles.dither import APPROX_DITHER, approx_dither_factor
from dptree.quantiles.intervals import em_radii


def test_the_dither_factor_depends_on_the_domain_only():
    assert APPROX_DITHER == 128
    assert approx_dither_factor(2) == approx_dither_factor(2**20) == approx_dither_factor(2**57) == 128
    assert approx_dither_factor(2**57 + 1) == 64  # |X| K <= 2^64: the keys are uint64 offsets
    assert approx_dither_factor(2**62) == 4 and approx_dither_factor(2**63) == 2
    assert approx_dither_factor(2**63 + 1) == approx_dither_factor(2**80) == 1  # fair coins
    with pytest.raises(dptree.DPTreeError, match="dither"):
        approx_quantiles([1], [1], [0.5], lower=0, upper=2**60, epsilon_call=1.0, rng=make_source(1), dither=128)


def _tie_aware_errors(x: np.ndarray, y: list[int], qs: np.ndarray) -> np.ndarray:
    sx = np.sort(x)
    below, upto = np.searchsorted(sx, y, "left"), np.searchsorted(sx, y, "right")
    t = qs * sx.size
    return np.maximum(np.maximum(below - t, 0.0), t - upto)


def test_the_split_inside_a_tie_block_follows_the_target_rank():
    """800 records at 10, then 200 distinct values: the median lands in the block and the 0.85
    level just above it. The first call's key inside the block sends about 500 records left, so
    the right piece's target (0.7 of its 500) falls just past the block; fair coins for the whole
    block send about 400 left instead, and the 0.85 estimate stays in the block, about 0.7 x 100
    ranks short (measured means over 20 seeds: 2.9 dithered, 31 with coins)."""
    x = np.concatenate([np.full(800, 10), np.arange(20, 220)])
    u, c = np.unique(x, return_counts=True)
    qs = np.array([0.5, 0.85])
    kw = {"lower": 0, "upper": 255, "epsilon_call": layer_epsilon(1.0, 2)}
    errs = {k: np.mean([_tie_aware_errors(x, approx_quantiles(u, c, qs, rng=make_source(s), dither=k, **kw), qs)
                        for s in range(20)], axis=0) for k in (1, APPROX_DITHER)}
    assert errs[1][0] == errs[APPROX_DITHER][0] == 0.0  # the median: any point of the block is exact
    assert errs[APPROX_DITHER][1] < 8 and errs[1][1] > 20, errs
    api = [_tie_aware_errors(x, dptree.quantiles(x, qs, lower=0, upper=255, epsilon=1.0, method="approx",
                                                 rng=s).values, qs) for s in range(20)]
    assert np.mean(api, axis=0)[1] < 8  # the release dithers


def test_release_files_state_the_dither_and_files_without_it_load(tmp_path):
    """An approx release states its dither factor (public: the domain's size) and its rank radii
    are those for |X| K points; a file without the factor (coins for the whole tie block, radii for
    |X| points) loads under that statement; a changed factor is refused."""
    x = np.random.default_rng(1).integers(0, 1024, 500)
    qs = [0.25, 0.5, 0.75]
    r = dptree.quantiles(x, qs, lower=0, upper=1023, epsilon=1.0, method="approx", n=500, rng=2, interval="bound")
    assert r.privacy["dither_factor"] == 128 and "floor(key / K)" in r.privacy["mechanism"]
    want = em_radii("approx", np.array(qs), size=1024, epsilon=1.0, neighbors="add_remove", level=0.95, dither=128)
    assert r.rank_radius == [float(v) for v in want]
    path = tmp_path / "a.json"
    r.save(path, allow_nonprivate=True)
    doc = json.loads(path.read_text())
    old = json.loads(path.read_text())
    del old["privacy"]["dither_factor"]
    old["privacy"]["mechanism"] = ("ApproxQuantiles (Kaplan, Schnapp & Stemmer, ICML 2022, Algorithm 1): 2 layers of "
                                   "tie-aware exponential mechanisms on disjoint pieces (parallel composition within a "
                                   "layer), ties at a split sent to one side by a fair coin")
    old["measurements"]["rank_radius"] = [float(v) for v in em_radii("approx", np.array(qs), size=1024, epsilon=1.0,
                                                                      neighbors="add_remove", level=0.95)]
    old["checksum"] = canonical_checksum(old)
    path.write_text(json.dumps(old))
    assert dptree.load(path).values == r.values
    doc["privacy"]["dither_factor"] = 64
    doc["checksum"] = canonical_checksum(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(ReleaseFileError, match="statement"):
        dptree.load(path)
