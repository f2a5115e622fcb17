"""Coverage of the range tree's confidence intervals, measured by simulation (exact noise,
many independent releases at once)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dptree import noise
from dptree.estimation.least_squares import consistent_estimates
from dptree.rangetree.release import plan_range_tree


def simulated_errors(plan, lo: np.ndarray, hi: np.ndarray, reps: int, seed: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Errors of ``reps`` independent releases at once (errors do not depend on the data).

    The replicas form a forest under an unmeasured super-root: least squares then decouples into
    independent trees, so one call of the estimator handles all of them.
    """
    lay = plan.layout
    src = noise.make_source(seed)
    y: list[np.ndarray] = [np.zeros(1)]
    var: list[np.ndarray] = [np.array([np.inf])]
    parents: list[np.ndarray | None] = [None]
    for j, size in enumerate(lay.level_sizes):
        p = plan.noise_parameters[j]
        n = reps * size
        if p is None:
            y.append(np.zeros(n))
        elif plan.noise == "laplace":
            y.append(noise.discrete_laplace(src, p, n).astype(float))
        else:
            y.append(noise.discrete_gaussian(src, p, n).astype(float))
        var.append(np.full(n, plan.level_variance[j]))
        parents.append(np.zeros(n, np.int64) if j == 0 else np.arange(n) // lay.fanouts[j - 1])
    leaves = consistent_estimates(y, var, parents).x[-1].reshape(reps, lay.padded_size)
    cum = np.concatenate([np.zeros((reps, 1)), np.cumsum(leaves, axis=1)], axis=1)
    return cum[:, hi + 1] - cum[:, lo]


RANGES = [(5, 5), (0, 99), (16, 31), (37, 200), (0, 255)]


def coverage(noise_kind: str, branching: int, reps: int, seed: int = 0) -> np.ndarray:
    kw = dict(epsilon=1.0) if noise_kind == "laplace" else dict(epsilon=1.0, delta=1e-6)
    plan = plan_range_tree(lower=0, upper=255, noise=noise_kind, branching=branching, **kw)
    lo = np.array([a for a, _ in RANGES])
    hi = np.array([b for _, b in RANGES])
    rel = plan.release(np.zeros(plan.layout.padded_size, np.int64), rng=seed)
    low, high = rel.ci(lo, hi, level=0.95)
    half = (high - low) / 2  # does not depend on the data or the noise
    err = simulated_errors(plan, lo, hi, reps, seed + 1)
    return (np.abs(err) <= half).mean(axis=0)


def test_simulated_errors_match_real_releases() -> None:
    plan = plan_range_tree(lower=0, upper=255, epsilon=1.0, branching=4)
    lo, hi = np.array([3, 0]), np.array([3, 255])
    err = simulated_errors(plan, lo, hi, 3000, 5)
    sd = plan.release(np.zeros(plan.layout.padded_size, np.int64), rng=0).stderr(lo, hi)
    np.testing.assert_allclose(err.std(axis=0), sd, rtol=0.08)
    assert np.all(np.abs(err.mean(axis=0)) < 5 * sd / np.sqrt(3000))


@pytest.mark.slow
@pytest.mark.parametrize("noise_kind,branching", [("laplace", 16), ("laplace", 2), ("gaussian", 16)])
def test_95_percent_intervals_cover_95_percent(noise_kind: str, branching: int) -> None:
    reps = 40_000
    cov = coverage(noise_kind, branching, reps)
    # 5 standard errors (false alarm < 1e-6 per range); the plain normal interval covered the
    # single leaf (5, 5) of a 16-ary Laplace tree only 93.5% of the time and fails this bound.
    tol = 5 * math.sqrt(0.95 * 0.05 / reps)
    assert np.all(np.abs(cov - 0.95) < tol), cov


def test_coverage_smoke() -> None:
    cov = coverage("laplace", 16, 2000, seed=10_000)
    assert np.all(np.abs(cov - 0.95) < 0.025), cov
