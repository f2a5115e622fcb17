"""The regular-tree fast path against the general two passes and the reference estimator."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import reference_least_squares as ref

from dptree.errors import InvalidParameterError
from dptree.estimation.least_squares import block_sums, consistent_estimates, regular_passes
from dptree.rangetree.estimates import LeafEstimates
from dptree.rangetree.layout import build_layout


def parents_of(fanouts: tuple[int, ...]) -> list[np.ndarray | None]:
    out: list[np.ndarray | None] = [None]
    n = 1
    for f in fanouts:
        out.append(np.arange(n * f) // f)
        n *= f
    return out


@pytest.mark.parametrize("seed", range(16))
def test_fast_path_equals_general_path_on_random_regular_trees(seed: int) -> None:
    rng = np.random.default_rng(seed)
    b = int(rng.integers(2, 17))
    lay = build_layout(int(rng.integers(b + 1, b**3 + 2)), b)  # ragged last level when D is not a power
    sizes = lay.level_sizes
    var = rng.uniform(0.2, 4.0, len(sizes))
    var[0] = [np.inf, 0.0, 1.0][seed % 3]  # root not measured, exact (replace), or noised
    if seed % 4 == 3 and len(sizes) > 2:
        var[1] = np.inf  # an unmeasured level below the root
    y = [rng.integers(-20, 60, s) for s in sizes]
    general = consistent_estimates([a.astype(float) for a in y], [np.full(s, v) for s, v in zip(sizes, var)],
                                   parents_of(lay.fanouts))
    leaves = regular_passes([None if not np.isfinite(v) else a for a, v in zip(y, var)], var, lay.fanouts)
    np.testing.assert_allclose(leaves.x[0], general.x[-1], rtol=1e-11, atol=1e-10)
    every = regular_passes(y, var, lay.fanouts, all_levels=True)
    for name in ("x", "z", "V"):
        for fast, slow in zip(getattr(every, name), getattr(general, name)):
            np.testing.assert_allclose(fast, slow, rtol=1e-11, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("f", [2, 3, 4, 5, 16])
def test_block_sums(f: int) -> None:
    v = np.random.default_rng(f).integers(-9, 9, 6 * f)
    np.testing.assert_array_equal(block_sums(v, f), v.reshape(-1, f).sum(axis=1).astype(float))


def test_fast_path_refuses_what_it_cannot_do() -> None:
    with pytest.raises(InvalidParameterError, match="one variance per level"):
        regular_passes([np.zeros(1), np.zeros(2)], [1.0], (2,))
    with pytest.raises(InvalidParameterError, match="leaf must be measured"):
        regular_passes([np.zeros(1), np.zeros(2)], [1.0, np.inf], (2,))
    with pytest.raises(InvalidParameterError, match="needs its measurements"):
        regular_passes([None, np.zeros(2)], [1.0, 1.0], (2,))


def old_leaf_estimates(est: LeafEstimates, meas: list[np.ndarray | None]) -> np.ndarray:
    """The reference estimator: its two passes, then the padding correction leaf by leaf."""
    lay, D = est.layout, est.size
    y = [np.zeros(n) if m is None else m.astype(float) for m, n in zip(meas, lay.level_sizes)]
    leaf = ref.consistent_estimates(y, list(est.level_variance), [None] * len(y), fanouts=lay.fanouts).x[-1]
    if lay.padded_size > D:
        idx = np.arange(D)
        leaf = leaf[:D] - est._cov_with_padding_direct(idx, idx) / est._pad_var * leaf[D:].sum()
    return leaf


@pytest.mark.parametrize("D,b,root", [(1000, 16, np.inf), (77, 3, 0.0), (300, 7, 2.0), (64, 4, np.inf), (513, 2, 1.0)])
def test_leaf_estimates_equal_the_old_estimator(D: int, b: int, root: float) -> None:
    lay = build_layout(D, b)
    rng = np.random.default_rng(D)
    var = np.r_[root, rng.uniform(0.5, 3.0, lay.depth)]
    meas = [None if not np.isfinite(v) else rng.integers(-5, 40, n) for v, n in zip(var, lay.level_sizes)]
    est = LeafEstimates(lay, D, "laplace", var, meas)
    np.testing.assert_allclose(est.leaf, old_leaf_estimates(est, meas), rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(est.cum, np.r_[0.0, np.cumsum(est.leaf)], rtol=1e-12, atol=1e-9)
    if lay.padded_size > D:  # the segment covariances equal the direct ones on every range
        u, w = rng.integers(0, D, 400), rng.integers(0, D, 400)
        a, c = np.minimum(u, w), np.maximum(u, w)
        np.testing.assert_allclose(est._cov_with_padding(a, c), est._cov_with_padding_direct(a, c),
                                   rtol=1e-9, atol=1e-9 * est._pad_var)


@pytest.mark.parametrize("b", [2, 16])
def test_peak_memory_is_at_most_24_bytes_per_node(b: int) -> None:
    """Target <= 48 B/node; the estimates and their prefix sums take 16 B per leaf (the reference
    estimator takes 38 to 54)."""
    lay = build_layout(2**16, b)
    var = np.r_[np.inf, np.full(lay.depth, 2.0)]
    meas = [None if not np.isfinite(v) else np.zeros(n, np.int64) for v, n in zip(var, lay.level_sizes)]
    LeafEstimates(lay, 2**16, "laplace", var, meas)  # warm-up (imports, caches)
    tracemalloc.start()
    est = LeafEstimates(lay, 2**16, "laplace", var, meas)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert est.cum.size == 2**16 + 1
    assert peak <= 24 * lay.num_nodes, peak / lay.num_nodes


@pytest.mark.parametrize("seed", range(12))
def test_moments_equal_the_old_class_sums(seed: int) -> None:
    """range_error_moments in O(L) per range (both paths at once, sums as polynomials in S_m) gives
    the numbers of the old O(L^2) class sums (which the dense tests of test_estimation pin)."""
    from dptree.estimation.least_squares import range_error_moments

    rng = np.random.default_rng(100 + seed)
    b = int(rng.integers(2, 17))
    lay = build_layout(int(rng.integers(2, 6000)), b)
    Dp = lay.padded_size
    var = rng.uniform(0.05, 8.0, lay.depth + 1)
    var[0] = [np.inf, 0.0, 1.0][seed % 3]
    if seed % 4 == 3 and lay.depth > 1:
        var[1] = [np.inf, 0.0][(seed // 4) % 2]  # an unmeasured or exact level below the root
    u, v = rng.integers(0, Dp, 2000), rng.integers(0, Dp, 2000)
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    lo[:4], hi[:4] = [0, 0, Dp - 1, Dp // 2], [Dp - 1, 0, Dp - 1, Dp // 2]
    old = ref.range_error_moments(lay.fanouts, var, lo, hi)
    new = range_error_moments(lay.fanouts, var, lo, hi)
    for a, c in zip(old, new):
        np.testing.assert_allclose(c, a, rtol=1e-11, atol=1e-300)


def test_out_buffer_receives_the_leaf_estimates() -> None:
    rng = np.random.default_rng(3)
    f = [4, 16]
    y = [rng.normal(size=1), rng.integers(-5, 5, 4), rng.integers(-5, 5, 64)]
    var = [2.0, 3.0, 5.0]
    want = regular_passes(y, var, f).x[0]
    buf = np.full(65, np.nan)
    got = regular_passes(y, var, f, out=buf[1:]).x[0]
    assert np.shares_memory(got, buf)
    np.testing.assert_array_equal(buf[1:], want)
    with pytest.raises(InvalidParameterError):
        regular_passes(y, var, f, out=np.empty(63))
