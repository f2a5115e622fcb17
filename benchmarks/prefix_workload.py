"""The prefix workload of range trees: levels="uniform", "all_ranges", "prefix".

Run from the repository root:

    PYTHONPATH=src python3 benchmarks/prefix_workload.py

Closed forms, no randomness. For each plan (epsilon = 1, Laplace, add/remove neighbors, one record
per person) the exact variances of dptree's discrete-Laplace noise at the dyadic scales the sampler
uses (``plan.level_variance``) go into the exact least-squares variance of DESIGN section 4:

* average prefix variance: the mean over the D prefixes [0, x], x = 0 .. D-1, of
  ``range_variance`` (one query at a time, O(L) each);
* average all-range variance: the mean over all D(D+1)/2 ranges (``average_range_variance``).

Units: 1/epsilon^2 (count variance). The time column is the first (uncached) planning time of the
``prefix`` plan. The last table compares the plans at D = 1024 with branching=None.
"""

from __future__ import annotations

import time

import numpy as np

from dptree.estimation.least_squares import range_variance
from dptree.rangetree.allocation import average_range_variance
from dptree.rangetree.release import RangeTreePlan, plan_range_tree

OPTIONS = ("uniform", "all_ranges", "prefix")


def prefix_average(plan: RangeTreePlan) -> float:
    D = plan.domain.size
    lo = np.zeros(D, dtype=np.int64)
    return float(range_variance(plan.layout.block_sizes, plan.level_variance, lo, np.arange(D)).mean())


def row(D: int, branching: int | None) -> tuple[list[str], float]:
    cells, seconds = [], 0.0
    plans = {}
    for lv in OPTIONS:
        t0 = time.perf_counter()
        plans[lv] = plan_range_tree(lower=0, upper=D - 1, epsilon=1.0, branching=branching, levels=lv)
        if lv == "prefix":
            seconds = time.perf_counter() - t0
    for lv in OPTIONS:
        cells.append(f"{prefix_average(plans[lv]):.1f}")
    for lv in OPTIONS:
        p = plans[lv]
        cells.append(f"{average_range_variance(p.layout, p.level_variance):.1f}")
    w = plans["prefix"].weights
    cells.append(" ".join(f"{x:.2f}" for x in w))
    return [str(plans["prefix"].layout.branching), "x".join(map(str, plans["prefix"].layout.fanouts))] + cells, seconds


def main() -> None:
    head = ["D", "b", "fan-outs", "prefix: uniform", "prefix: all_ranges", "prefix: prefix",
            "all-range: uniform", "all-range: all_ranges", "all-range: prefix", "prefix weights, root first",
            "prefix plan time"]
    print("## Average variance, prefix workload vs all ranges (epsilon = 1, exact discrete Laplace)\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for D in (64, 256, 1024, 4096):
        for b in (2, 4, 16):
            cells, secs = row(D, b)
            print("| " + " | ".join([str(D)] + cells + [f"{secs:.2f} s"]) + " |")
    print("\n## branching=None (each option picks its branching for its own workload)\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for D in (64, 256, 1024, 4096):
        cells, secs = row(D, None)
        print("| " + " | ".join([str(D)] + cells + [f"{secs:.2f} s"]) + " |")
    print("\n## The plans compared, D = 1024 (average prefix variance)\n")
    print("| plan | branching | average prefix variance |")
    print("|---|---|---|")
    for lv in ("uniform", "optimal", "prefix"):
        p = plan_range_tree(lower=0, upper=1023, epsilon=1.0, levels=lv)
        print(f"| levels={lv!r}, branching=None | {p.layout.branching} | {prefix_average(p):.2f} |")
    best_old = min((prefix_average(plan_range_tree(lower=0, upper=1023, epsilon=1.0, branching=b, levels=lv)), b, lv)
                   for b in (2, 3, 4, 5, 6, 8, 10, 12, 16, 32, 64) for lv in ("uniform", "optimal"))
    print(f"| best of uniform/optimal over b in 2..64 | {best_old[1]} ({best_old[2]}) | {best_old[0]:.2f} |")


if __name__ == "__main__":
    t = time.perf_counter()
    main()
    print(f"\n(total time {time.perf_counter() - t:.0f} s)")
