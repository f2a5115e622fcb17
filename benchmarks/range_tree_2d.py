"""2-D range trees (dptree.range_tree_2d) against flat grids and a Kronecker strategy, in one run.

Prints four tables (docs/notes/spatial.md records them and the command):

1. Coverage of the 95% intervals: ``--sims`` releases of a 64 x 64 grid (Laplace, eps = 1) and
   ``--rects`` random rectangles per size class; the true counts are known.
2. The exact average variance over all rectangles of a 64 x 64 grid (continuous Laplace units,
   variance 2 b^2 per noisy count, eps = 1): the quadtree with each budget split; a flat Laplace
   grid (every cell noised at eps, parallel composition; Qardaji, Yang & Li 2013's UG at full
   resolution); and the Kronecker product of two 1-D least-squares range trees with the 1-D
   all-range split (the best branching of 2..64), a strategy of the family HDMM (McKenna et al.
   2018) optimises over (HDMM itself runs in benchmarks/range_tree_2d_hdmm.py), computed here
   exactly: for A = A1 (x) A1 with the 1-D tree's rows scaled by its shares, the L1 sensitivity is
   1 and the least-squares variance of w1 (x) w2 is the product of the 1-D variances over 2 / eps^2.
3. Rectangles covering a quarter of a 1024 x 1024 domain (512 x 512 cells at random positions):
   the quadtree's exact variance against the flat grid's.
4. Time of a 1024 x 1024 release from ``--points`` float points against 1-D range tree releases
   with the same number of nodes (4-ary over 4^10 leaves) from float values and from integer leaf
   codes, all from numpy arrays, best of ``--repeat``.

Run: ``PYTHONPATH=src python benchmarks/range_tree_2d.py``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import dptree
from dptree.rangetree.allocation import average_workload_variance, level_weights
from dptree.rangetree.layout import build_layout
from dptree.spatial.estimates import rectangle_variance
from dptree.spatial.plan import grid_weights

SPLITS = ("all_rectangles", "geometric", "uniform")


def continuous(weights: np.ndarray, eps: float) -> np.ndarray:
    """Per-level variance 2 (1 / (eps w))^2, inf where not measured (DESIGN's continuous units)."""
    with np.errstate(divide="ignore"):
        return np.where(weights > 0, 2.0 / (eps * weights) ** 2, np.inf)


def coverage(sims: int, rects: int, seed: int) -> None:
    side = 64
    rng = np.random.default_rng(seed)
    plan = dptree.plan_range_tree_2d(lower=(0, 0), upper=(side - 1, side - 1), epsilon=1.0)
    x = np.clip(rng.normal(20, 8, 20_000), 0, side - 1).astype(np.int64)
    y = np.clip(rng.normal(40, 12, 20_000), 0, side - 1).astype(np.int64)
    cells = np.zeros((side, side))
    np.add.at(cells, (x, y), 1)
    cum = np.zeros((side + 1, side + 1))
    cum[1:, 1:] = cells.cumsum(0).cumsum(1)
    from dptree.spatial.counting import as_table, grid_histogram

    table, names = as_table(x, y, None)
    hist = grid_histogram(table, plan, names)
    classes = {"1 cell": (1, 1), "2-4 cells wide": (2, 4), "5-16": (5, 16), "17-40": (17, 40), "41-64": (41, 64)}
    print("| rectangles (side) | intervals | coverage | normal multiplier's coverage |")
    print("|---|---|---|---|")
    from dptree.estimation.intervals import normal_multiplier

    z = normal_multiplier(0.95)
    for label, (lo, hi) in classes.items():
        wx, wy = rng.integers(lo, hi + 1, rects), rng.integers(lo, hi + 1, rects)
        x0, y0 = rng.integers(0, side - wx + 1), rng.integers(0, side - wy + 1)
        x1, y1 = x0 + wx - 1, y0 + wy - 1
        truth = cum[x1 + 1, y1 + 1] - cum[x0, y1 + 1] - cum[x1 + 1, y0] + cum[x0, y0]
        hit = hit_normal = 0
        for s in range(sims):
            rel = plan.release(hist, rng=seed * 100_000 + s)
            low, high = rel.ci((x0, x1), (y0, y1))
            est, sd = rel.count((x0, x1), (y0, y1)), rel.stderr((x0, x1), (y0, y1))
            hit += int(((low <= truth) & (truth <= high)).sum())
            hit_normal += int((np.abs(est - truth) <= z * sd).sum())
        n = sims * rects
        print(f"| {label} | {n} | {hit / n:.4f} | {hit_normal / n:.4f} |")


def average_variances(side: int, eps: float) -> dict[str, float]:
    depth = side.bit_length() - 1
    layout = build_layout(4**depth, 4)
    out = {}
    for split in SPLITS:
        out[f"quadtree, {split} split"] = average_workload_variance(
            layout, continuous(grid_weights(depth, split, "laplace", False), eps), "all_rectangles")
    mean_len = (side + 2) / 3  # the mean length of all ranges of [0, side)
    out["flat Laplace grid"] = 2.0 / eps**2 * mean_len**2
    best = np.inf
    for b in (2, 4, 8, 16, 32, 64):
        lay = build_layout(side, b)
        w = level_weights(lay, strategy="all_ranges", noise="laplace", root_exact=False)
        one_d = average_workload_variance(lay, continuous(w, eps), "all_ranges")
        best = min(best, one_d**2 * eps**2 / 2.0)
    out["Kronecker of 1-D least-squares trees"] = best
    return out


def quarter_rectangles(eps: float, n: int, seed: int) -> tuple[float, float]:
    plan = dptree.plan_range_tree_2d(lower=(0, 0), upper=(1023, 1023), epsilon=eps)
    rng = np.random.default_rng(seed)
    ax, ay = rng.integers(0, 513, n), rng.integers(0, 513, n)
    var = rectangle_variance(plan.grid, continuous(np.asarray(plan.tree.weights), eps), ax, ax + 511, ay, ay + 511)
    return float(var.mean()), 512 * 512 * 2.0 / eps**2


def timing(points: int, repeat: int, seed: int) -> None:
    """The 2-D release of float points (x, y) against 1-D releases over 4^10 leaves, 4-ary (the
    same nodes): of float values with the same kind of bucketing (one column read instead of two),
    and of integer codes that already are leaf indices (the 1-D tree's fastest read)."""
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(0, 1024, points), rng.uniform(0, 1024, points)
    v = rng.uniform(0, 1024.0**2, points)
    codes = rng.integers(0, 4**10, points)
    best = {"2d": np.inf, "1d float": np.inf, "1d codes": np.inf}
    runs = {
        "2d": lambda: dptree.range_tree_2d(x, y, lower=(0.0, 0.0), upper=(1024.0, 1024.0), width=1.0, epsilon=1.0),
        "1d float": lambda: dptree.range_tree(v, lower=0.0, upper=1024.0**2, width=1.0, branching=4, epsilon=1.0),
        "1d codes": lambda: dptree.range_tree(codes, lower=0, upper=4**10 - 1, branching=4, epsilon=1.0),
    }
    for _ in range(repeat):
        for name, run in runs.items():
            t = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - t)
    t2 = best["2d"]
    print(f"| {points:,} | {t2:.2f} | {best['1d float']:.2f} ({t2 / best['1d float']:.2f}x) | "
          f"{best['1d codes']:.2f} ({t2 / best['1d codes']:.2f}x) |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sims", type=int, default=200)
    ap.add_argument("--rects", type=int, default=100)
    ap.add_argument("--points", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    print("## 1. Coverage of the 95% intervals, 64 x 64 grid, Laplace, eps = 1\n")
    coverage(a.sims, a.rects, a.seed)
    print("\n## 2. Average variance over all rectangles (continuous Laplace units, eps = 1)\n")
    for side in (64, 1024):
        res = average_variances(side, 1.0)
        flat = res["flat Laplace grid"]
        print(f"\n{side} x {side}:\n\n| strategy | average variance | flat grid / this |\n|---|---|---|")
        for name, v in res.items():
            print(f"| {name} | {v:,.1f} | {flat / v:.2f} |")
    print("\n## 3. Rectangles of a quarter of a 1024 x 1024 domain (512 x 512 cells), eps = 1\n")
    q, flat = quarter_rectangles(1.0, 2000, a.seed)
    print(f"| quadtree (all-rectangles split) | flat Laplace grid | ratio |\n|---|---|---|\n| {q:,.0f} | {flat:,.0f} "
          f"| {flat / q:.0f} |")
    print("\n## 4. Release time, 1024 x 1024 grid vs a 1-D tree with the same nodes (seconds, best of "
          f"{a.repeat})\n")
    print("| points | 2-D release (floats) | 1-D release, float values (2-D / 1-D) | 1-D release, integer leaf codes "
          "(2-D / 1-D) |\n|---|---|---|---|")
    timing(a.points, a.repeat, a.seed)


if __name__ == "__main__":
    main()
