"""2-D PrivTree (``range_tree_2d(method="privtree")``) against the default quadtree, in one run.

Zhang, Xiao & Xie (2016) grow a data-dependent quadtree so that skewed spatial data gets fine
cells where the points are and coarse ones elsewhere. This script measures where that pays off
and where it does not: on a 1024 x 1024 grid (width 1), for a clustered dataset (points in a few
small Gaussian clusters, plus 2% spread uniformly) and a uniform one, ``--rects`` random squares
per side class, both methods released from the same points at the same epsilon, ``--seeds``
releases each. The table gives the average squared error over the squares of each side for both
methods and their ratio (privtree / quadtree: below 1, PrivTree wins), and the mean time of a
release (after one untimed warm-up release of each method).

Run: ``PYTHONPATH=src python benchmarks/range_tree_2d_privtree.py``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import dptree

SIDE = 1024
SIZES = (8, 32, 128, 512)


def clustered(n: int, rng: np.random.Generator) -> np.ndarray:
    centres = np.array([[150.0, 200.0], [600.0, 700.0], [820.0, 180.0], [300.0, 850.0], [512.0, 450.0]])
    spread = np.array([6.0, 12.0, 4.0, 20.0, 8.0])
    which = rng.integers(0, centres.shape[0], int(n * 0.98))
    pts = centres[which] + rng.normal(size=(which.size, 2)) * spread[which, None]
    return np.clip(np.concatenate([pts, rng.uniform(0, SIDE, (n - which.size, 2))]), 0.0, SIDE - 1e-6)


def uniform(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(0, SIDE, (n, 2))


def squares(rects: int, rng: np.random.Generator) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    return {s: (rng.integers(0, SIDE - s + 1, rects), rng.integers(0, SIDE - s + 1, rects)) for s in SIZES}


def truth(pts: np.ndarray, sq: dict[int, tuple[np.ndarray, np.ndarray]]) -> dict[int, np.ndarray]:
    cells = np.zeros((SIDE, SIDE))
    np.add.at(cells, (pts[:, 0].astype(np.int64), pts[:, 1].astype(np.int64)), 1)
    cum = np.zeros((SIDE + 1, SIDE + 1))
    cum[1:, 1:] = cells.cumsum(0).cumsum(1)
    return {s: cum[x + s, y + s] - cum[x, y + s] - cum[x + s, y] + cum[x, y] for s, (x, y) in sq.items()}


def run(name: str, pts: np.ndarray, eps: float, seeds: int, sq: dict, true: dict) -> None:
    err = {m: {s: [] for s in SIZES} for m in ("quadtree", "privtree")}
    secs = {m: [] for m in err}
    for seed in range(seeds):
        for m in err:
            t0 = time.perf_counter()
            rel = dptree.range_tree_2d(pts[:, 0], pts[:, 1], lower=(0.0, 0.0), upper=(float(SIDE), float(SIDE)),
                                       width=1.0, epsilon=eps, method=m, rng=1000 * seed + 7)
            secs[m].append(time.perf_counter() - t0)
            for s, (x, y) in sq.items():
                est = rel.count((x + 0.5, x + s - 0.5), (y + 0.5, y + s - 0.5))
                err[m][s].append(np.mean((est - true[s]) ** 2))
    for s in SIZES:
        q, p = np.mean(err["quadtree"][s]), np.mean(err["privtree"][s])
        print(f"| {name} | {eps:g} | {s}x{s} | {q:,.1f} | {p:,.1f} | {p / q:.2f} |")
    print(f"| {name} | {eps:g} | time (s) | {np.mean(secs['quadtree']):.2f} | {np.mean(secs['privtree']):.2f} | |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, nargs="+", default=[50_000, 2_000_000])
    ap.add_argument("--rects", type=int, default=400)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--eps", type=float, nargs="+", default=[0.1, 1.0])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    sq = squares(args.rects, rng)
    warm = uniform(100, rng)  # the first release pays the imports: not timed
    for m in ("quadtree", "privtree"):
        dptree.range_tree_2d(warm[:, 0], warm[:, 1], lower=(0.0, 0.0), upper=(float(SIDE), float(SIDE)), width=1.0,
                             epsilon=1.0, method=m, rng=1)
    print("| data | epsilon | square | quadtree MSE | privtree MSE | privtree / quadtree |")
    print("|---|---|---|---|---|---|")
    for n in args.points:
        for name, make in (("clustered", clustered), ("uniform", uniform)):
            pts = make(n, rng)
            true = truth(pts, sq)
            for eps in args.eps:
                run(f"{name}, n = {n:,}", pts, eps, args.seeds, sq, true)


if __name__ == "__main__":
    main()
