"""Speed of RangeTree.ci against count + stderr on random ranges.

One release per branching factor, then the calls are timed in interleaved rounds on the same
random ranges; ratios are medians of per-round ratios (time / (count + stderr) time). "old ci" is
``ci`` with the reference error moments (tests/unit/estimation/reference_least_squares.py,
O(L^2) class sums per side), timed in the same rounds.

    PYTHONPATH=src python3 benchmarks/ci_speed.py [--log2-domain 20] [--queries 100000] [--reps 7]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "unit" / "estimation"))

import reference_least_squares as old_ls  # noqa: E402

import dptree  # noqa: E402
from dptree.rangetree import estimates  # noqa: E402


def old_ci(tree: dptree.RangeTree, lo: np.ndarray, hi: np.ndarray) -> object:
    """tree.ci with the old moments (swapped in for this call only)."""
    new = estimates.range_error_moments
    estimates.range_error_moments = old_ls.range_error_moments
    try:
        return tree.ci(lo, hi)
    finally:
        estimates.range_error_moments = new


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2-domain", type=int, default=20)
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    D, q = 2**args.log2_domain, args.queries
    x = np.random.default_rng(1).integers(0, D, 10**6)
    g = np.random.default_rng(7)
    u, v = g.integers(0, D, q), g.integers(0, D, q)
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    print(f"# D = 2^{args.log2_domain}, {q:,} random ranges, epsilon = 1 (Laplace), {os.cpu_count()} cpus, "
          f"load {os.getloadavg()[0]:.1f}; medians of {args.reps} interleaved rounds\n")
    print("| branching | levels | count+stderr M/s | ci M/s | ci / (count+stderr) | old ci M/s | old ci / (count+stderr) |")
    print("|---|---|---|---|---|---|---|")
    for b in (None, 16, 4, 2):
        tree = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=1.0, branching=b, rng=5)
        low, high = tree.ci(lo, hi)
        old_low, old_high = old_ci(tree, lo, hi)  # type: ignore[misc]
        np.testing.assert_allclose(low, old_low, rtol=1e-9)  # the same intervals
        np.testing.assert_allclose(high, old_high, rtol=1e-9)
        fns = {"cs": lambda: (tree.count(lo, hi), tree.stderr(lo, hi)), "ci": lambda: tree.ci(lo, hi),
               "old": lambda: old_ci(tree, lo, hi)}
        times: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(args.reps):
            for k, f in fns.items():
                t0 = time.perf_counter()
                f()
                times[k].append(time.perf_counter() - t0)
        cs, ci, old = (np.array(times[k]) for k in ("cs", "ci", "old"))
        lay = tree.layout
        name = f"{lay.branching} (default)" if b is None else str(b)
        print(f"| {name} | {len(lay.fanouts)} | {q / np.median(cs) / 1e6:.2f} | {q / np.median(ci) / 1e6:.2f} | "
              f"{np.median(ci / cs):.2f}x | {q / np.median(old) / 1e6:.2f} | {np.median(old / cs):.2f}x |")


if __name__ == "__main__":
    main()
