"""The range tree's median as an interior-point method: the m = 1 column of the seed-002 study.

Same data sets and success criterion as ``benchmarks/interior_point.py`` (an output between the
data's minimum and maximum), eps = 1 (pure, Laplace, add/remove), default branching. A range tree
needs one bucket per domain element, so it only exists for |X| <= 2^26 (dptree refuses larger
domains); beyond that the column is "infeasible".

    PYTHONPATH=src python3 benchmarks/interior_rangetree.py --runs 30
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from interior_point import DATASETS, EPS, dataset  # noqa: E402

from dptree.rangetree.release import plan_range_tree  # noqa: E402


def success(h: int, name: str, n: int, runs: int, seed: int, plans: dict) -> float:
    size = 1 << h
    if h not in plans:
        plans[h] = plan_range_tree(lower=0, upper=size - 1, epsilon=EPS)
    plan = plans[h]
    vals, cnt = dataset(name, h, n)
    hist = np.zeros(plan.layout.padded_size, dtype=np.int64)
    np.add.at(hist, np.asarray(vals, dtype=np.int64), np.asarray(cnt, dtype=np.int64))
    lo, hi = min(v for v, c in zip(vals, cnt) if c), max(v for v, c in zip(vals, cnt) if c)
    ok = 0
    for r in range(runs):
        med = int(plan.release(hist, rng=seed * 100_003 + r).quantile(0.5))
        ok += lo <= med <= hi
    return ok / runs


def n90(h: int, name: str, runs: int, plans: dict, cap: int = 10**9) -> int | None:
    lo, hi, seed = 1, 2, 1
    while success(h, name, hi, runs, seed, plans) < 0.9:
        lo, hi, seed = hi, hi * 4, seed + 1
        if hi > cap:
            return None
    while hi > lo * 1.05 and hi - lo > 1:
        mid, seed = int(math.sqrt(lo * hi)), seed + 1
        if success(h, name, mid, runs, seed, plans) >= 0.9:
            hi = mid
        else:
            lo = mid
    return hi


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--heights", default="8,16,20")
    args = ap.parse_args()
    plans: dict = {}
    t0 = time.time()
    print("| |X| | data | range-tree median n90 (eps = 1) |")
    print("|---|---|---:|")
    for h in [int(x) for x in args.heights.split(",")]:
        for d in DATASETS:
            print(f"| 2^{h} | {d} | {n90(h, d, args.runs, plans):,} |", flush=True)
    print("| 2^32 and larger | any | infeasible (one bucket per element; dptree stops at 2^26) |")
    print(f"\n({time.time() - t0:.0f} s, --runs {args.runs})")


if __name__ == "__main__":
    main()
