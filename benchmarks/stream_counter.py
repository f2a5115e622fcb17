"""Continual counters (dptree.stream): exact error bars, accuracy against the tree, speed.

(a) The reported standard errors are exact: the Monte Carlo variance of the released totals
    (``run_copies``: many runs, the library's online core) against the reported variance at every
    step, for the three counters.
(b) Gaussian counters at rho: the average variance of the T prefixes, in units of 1/rho, for the
    square-root Toeplitz counter as released (the factorisation rounded to the lattice 2^-p, the
    discrete Gaussian's exact variance) and for the binary-tree counter with Honaker's online
    estimate under the same Gaussian budget (the baseline, same run); and the ratio of the
    released Toeplitz figure to the exact square-root factorisation's, sigma^2 sum_{k<t} c_k^2
    with sigma^2 = sum_{k<T} c_k^2 / (2 rho), for T = 2^8 .. 2^20.
(c) Time per step at T = 2^20 (amortised, counts appended in one batch, and one step per call for
    the tree) against numpy's cumulative sum of the same counts (no privacy: the floor).

    PYTHONPATH=src python benchmarks/stream_counter.py [--quick]

``--quick``: fewer Monte Carlo runs, T = 2^16 for (c). Results: docs/notes/stream.md.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from dptree.stream import Counter, plan_counter, toeplitz
from dptree.stream.counter import run_copies

COUNTERS = {
    "tree, Laplace, epsilon = 1": dict(epsilon=1.0),
    "tree, Gaussian, rho = 0.5": dict(rho=0.5, noise="gaussian", mechanism="tree"),
    "Toeplitz, Gaussian, rho = 0.5": dict(rho=0.5, noise="gaussian"),
}


def exact_errors(T: int, runs: int) -> None:
    print(f"(a) Monte Carlo variance / reported variance, T = {T}, {runs} runs, counts 0..3")
    print(f"{'counter':32} {'min ratio':>10} {'max ratio':>10} {'max |ratio - 1|':>16} {'3 sd of ratio':>14}")
    counts = list(np.random.default_rng(0).integers(0, 4, T))
    for name, kw in COUNTERS.items():
        plan = plan_counter(horizon=T, **kw)
        noise = run_copies(plan, counts, runs, rng=1) - np.cumsum(counts)
        ratio = noise.var(axis=0) / plan.stderrs(T) ** 2
        # the sample variance's relative sd is sqrt((kurtosis - 1) / runs); Laplace tails: kurtosis <= 6
        sd = np.sqrt(5.0 / runs) if plan.family == "laplace" else np.sqrt(2.0 / runs)
        print(f"{name:32} {ratio.min():10.4f} {ratio.max():10.4f} {np.abs(ratio - 1).max():16.4f} {3 * sd:14.4f}")


def average_variances(rho: float = 1.0) -> None:
    T = 1 << 10
    tz = plan_counter(horizon=T, rho=rho, noise="gaussian")
    tree = plan_counter(horizon=T, rho=rho, noise="gaussian", mechanism="tree")
    v_tz, v_tree = (float(np.mean(p.stderrs(T) ** 2)) * rho for p in (tz, tree))
    offline = {lv: offline_prefix_average(T, rho, lv) for lv in ("uniform", "prefix")}
    print("\n(b) average prefix variance x rho at T = 2^10 (target <= 5.3)")
    print(f"{'counter':44} {'avg var x rho':>14}")
    print(f"{'square-root Toeplitz, as released':44} {v_tz:14.4f}")
    print(f"{'binary tree, Honaker online estimate':44} {v_tree:14.4f}")
    print(f"{'ratio Toeplitz / online tree':44} {v_tz / v_tree:14.4f}")
    print(f"{'offline binary range tree, uniform levels':44} {offline['uniform']:14.4f}")
    print(f"{'offline binary range tree, levels=prefix':44} {offline['prefix']:14.4f}")
    print("(offline: dptree.range_tree over the T steps released once at the end, least squares with every "
          "level;\n not a continual counter: a prefix's estimate uses blocks that complete after it)")
    print(f"\n{'T':>8} {'p':>3} {'released x rho':>15} {'exact sqrt x rho':>17} {'ratio':>8} {'tree x rho':>11}")
    for e in range(8, 21, 2):
        T = 1 << e
        c = toeplitz.sqrt_coefficients(T)
        cum = np.cumsum(c * c)
        exact = float(np.mean(cum)) * cum[-1] / 2.0
        released = float(np.mean(plan_counter(horizon=T, rho=rho, noise="gaussian").stderrs(T) ** 2)) * rho
        tree_v = float(np.mean(plan_counter(horizon=T, rho=rho, noise="gaussian", mechanism="tree").stderrs(T) ** 2))
        print(f"2^{e:<6} {toeplitz.lattice_bits(T):3} {released:15.4f} {exact:17.4f} {released / exact:8.5f} "
              f"{tree_v * rho:11.4f}")


def offline_prefix_average(T: int, rho: float, levels: str) -> float:
    """The average variance of the T prefixes of dptree's binary range tree over the T steps
    (Gaussian, rho), released once with every count known (exact least-squares variances)."""
    from dptree.estimation.least_squares import range_variance
    from dptree.rangetree.release import plan_range_tree

    plan = plan_range_tree(lower=0, upper=T - 1, rho=rho, noise="gaussian", levels=levels, branching=2)
    lo = np.zeros(T, dtype=np.int64)
    return float(range_variance(plan.layout.block_sizes, plan.level_variance, lo, np.arange(T)).mean()) * rho


def speed(T: int) -> None:
    counts = np.random.default_rng(0).integers(0, 5, T)
    print(f"\n(c) time per step at T = 2^{T.bit_length() - 1} (amortised, microseconds)")
    runs = []
    for _ in range(5):  # the fastest of five: one call is at the mercy of the shared cores
        t0 = time.perf_counter()
        np.cumsum(counts)
        runs.append(time.perf_counter() - t0)
    base = min(runs) / T * 1e6
    print(f"{'what':44} {'us/step':>10} {'x cumsum':>10}")
    print(f"{'numpy cumsum (no privacy)':44} {base:10.4f} {1.0:10.1f}")
    rows = [("tree, Laplace, one batch", dict(epsilon=1.0), True),
            ("tree, Laplace, one step per call", dict(epsilon=1.0), False),
            ("Toeplitz, Gaussian rho = 0.5, one batch", dict(rho=0.5, noise="gaussian"), True)]
    for name, kw, batch in rows:
        c = Counter(T, **kw)  # private randomness, as released
        t0 = time.perf_counter()
        if batch:
            c.append(counts)
        else:
            append = c.append
            for x in counts.tolist():
                append(x)
        us = (time.perf_counter() - t0) / T * 1e6
        print(f"{name:44} {us:10.3f} {us / base:10.1f}")


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    exact_errors(64, 4_000 if quick else 40_000)
    average_variances()
    speed(1 << (16 if quick else 20))
