"""Speed of RangeTree.ci against count + stderr on random ranges (issue 13, item 3).

One release per branching factor, then the calls are timed in interleaved rounds on the same
random ranges; ratios are medians of per-round ratios (ci time / (count + stderr) time).

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

import dptree  # noqa: E402


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
          f"load {os.getloadavg()[0]:.1f}; medians of {args.reps} interleaved rounds")
    print(f"\n  {'branching':>9s} {'levels':>6s} {'count+stderr M/s':>17s} {'ci M/s':>8s} {'ci / (count+stderr)':>20s}")
    for b in (None, 16, 4, 2):
        tree = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=1.0, branching=b, rng=5)
        fns = {"cs": lambda: (tree.count(lo, hi), tree.stderr(lo, hi)), "ci": lambda: tree.ci(lo, hi)}
        times: dict[str, list[float]] = {k: [] for k in fns}
        for f in fns.values():
            f()
        for _ in range(args.reps):
            for k, f in fns.items():
                t0 = time.perf_counter()
                f()
                times[k].append(time.perf_counter() - t0)
        cs, ci = np.array(times["cs"]), np.array(times["ci"])
        lay = tree.layout
        name = f"{lay.branching} (default)" if b is None else str(b)
        print(f"  {name:>9s} {len(lay.fanouts):>6d} "
              f"{q / np.median(cs) / 1e6:>17.2f} {q / np.median(ci) / 1e6:>8.2f} {np.median(ci / cs):>19.2f}x")


if __name__ == "__main__":
    main()
