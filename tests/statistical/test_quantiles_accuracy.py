"""The paper's claim for ApproxQuantiles (Kaplan, Schnapp & Stemmer 2022): recursing over
floor(log2 m) + 1 layers of disjoint pieces beats one mechanism per level at epsilon / m (basic
composition), whose error grows linearly in m; and the error scales as 1 / epsilon."""

from __future__ import annotations

import numpy as np
import pytest

import dptree


def _mean_error(x, qs, method, eps, trials):
    n, out = x.size, []
    for s in range(trials):
        y = np.asarray(dptree.quantiles(x, qs, lower=0, upper=2**16 - 1, epsilon=eps, method=method, rng=s).values)
        below, upto = np.searchsorted(x, y, "left"), np.searchsorted(x, y, "right")
        out.append(np.maximum(0, np.maximum(below - qs * n, qs * n - upto)).mean())
    return float(np.mean(out))


@pytest.mark.slow
def test_approx_beats_basic_composition_and_scales_with_one_over_epsilon():
    x = np.sort(np.random.default_rng(2).choice(2**16, 1000, replace=False))
    qs = np.arange(1, 32) / 32  # m = 31: 5 layers against 31 shares
    approx = _mean_error(x, qs, "approx", 1.0, 8)
    basic = _mean_error(x, qs, "exponential", 1.0, 8)
    assert basic > 2.5 * approx, (basic, approx)
    approx4 = _mean_error(x, qs, "approx", 4.0, 8)
    assert 2.5 < approx / approx4 < 6.5, (approx, approx4)
