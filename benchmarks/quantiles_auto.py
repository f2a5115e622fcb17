"""Fit the error curve of ApproxQuantiles that ``dptree.quantiles(method="auto")`` uses.

Measures the mean tie-aware rank error dist(q n, [#{x < y}, #{x <= y}]) of the approx method on
uniform integer data (n records over [0, D)), levels i / (m + 1), at several m and epsilon, fits
err = a * L^b / epsilon (L = floor(log2 m) + 1) by least squares on logs, measures the tree
method beside it (with its predicted error from the plan), prints the table with ratios and
writes the fitted constants to src/dptree/quantiles/fitted.py (``--write``), then prints the
crossover table (the smallest m at which the tree is predicted to win) by epsilon and domain.

    PYTHONPATH=src python3 benchmarks/quantiles_auto.py --trials 6 --write

``--coverage`` instead measures the coverage of the 95% intervals (docs/quantiles.md): the tree's
pivot interval (:func:`dptree.quantiles.intervals.tree_intervals`) beside
``RangeTree.quantile_ci``, and the rank radius of the exponential-mechanism methods.
"""

from __future__ import annotations

import argparse
import importlib
import math
import pathlib
import time

import numpy as np

import dptree
from dptree.noise import make_source
from dptree.quantiles.approx import approx_quantiles, layer_epsilon, layers
from dptree.quantiles.auto import TREE_BRANCHING, TREE_LEVELS, tree_error


def rank_errors(x_sorted: np.ndarray, qs: np.ndarray, est: np.ndarray) -> np.ndarray:
    n = x_sorted.size
    below = np.searchsorted(x_sorted, est, side="left")
    upto = np.searchsorted(x_sorted, est, side="right")
    t = qs * n
    return np.maximum(0, np.maximum(below - t, t - upto))


def coverage(trials: int) -> None:
    from dptree.quantiles.intervals import tree_intervals

    qs = np.array([0.05, 0.25, 0.5, 0.75, 0.95])
    D = 1024
    print(f"tree, 95% intervals, [0, {D}), epsilon = 1, {trials} trials x 5 levels (0.05 .. 0.95)")
    print(f"{'data':>10} {'n':>7} {'quantile_ci':>12} {'pivot':>8}   per level (pivot)")
    for kind in ("uniform", "lognormal"):
        for n in (1000, 10_000):
            rs = np.random.default_rng(0)
            x = rs.integers(0, D, n) if kind == "uniform" else np.minimum(rs.lognormal(5, 1, n).astype(int), D - 1)
            x = np.sort(x)
            F = np.searchsorted(x, np.arange(D), side="right")
            true = np.array([np.searchsorted(F, q * n, side="left") for q in qs])
            old = np.zeros(qs.size)
            new = np.zeros(qs.size)
            for s in range(trials):
                t = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=1.0, levels=TREE_LEVELS,
                                      branching=TREE_BRANCHING, rng=s)
                lo, hi = t.quantile_ci(qs, 0.95)
                old += (lo <= true) & (true <= hi)
                lo, hi = tree_intervals(t, qs, 0.95)
                new += (lo <= true) & (true <= hi)
            print(f"{kind:>10} {n:7d} {old.mean() / trials:12.3f} {new.mean() / trials:8.3f}   "
                  + " ".join(f"{v:.3f}" for v in new / trials))
    print("exponential-mechanism methods: P(every level's rank error <= its radius), 95% radius")
    D = 2**16
    x = np.sort(np.random.default_rng(1).choice(D, 1000, replace=False))
    q10 = np.linspace(0.05, 0.95, 10)
    for method in ("exponential", "approx"):
        ok, ratio = 0, []
        for s in range(trials // 5):
            r = dptree.quantiles(x, q10, lower=0, upper=D - 1, epsilon=1.0, method=method, rng=s)
            errs = rank_errors(x, q10, np.asarray(r.values))
            ok += bool(np.all(errs <= np.asarray(r.rank_radius)))
            ratio.append(float(np.max(errs / np.asarray(r.rank_radius))))
        print(f"{method:>12}: spread data n = 1000 over 2^16, m = 10: coverage {ok / (trials // 5):.3f}, "
              f"largest error / radius {max(ratio):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--coverage", action="store_true")
    ap.add_argument("--trials", type=int, default=6)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--D", type=int, default=2**20)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    if a.coverage:
        coverage(max(a.trials, 50))
        return
    rs = np.random.default_rng(1)
    x = np.sort(rs.integers(0, a.D, a.n))
    vals, cnt = np.unique(x, return_counts=True)
    rows, tree_rows = [], []
    print(f"uniform n={a.n} over [0, {a.D}), {a.trials} trials; rank error = tie-aware distance in ranks")
    print(f"{'eps':>5} {'m':>5} {'L':>3} {'approx mean':>12} {'approx max':>11} {'tree mean':>10} {'tree pred':>10} "
          f"{'tree/approx':>12} {'s/trial':>8}")
    for eps in (0.5, 1.0, 4.0):
        for m in (1, 2, 4, 8, 16, 32, 64, 128):
            if eps != 1.0 and m not in (1, 8, 64):
                continue
            qs = np.arange(1, m + 1) / (m + 1)
            errs, mx, t0 = [], [], time.perf_counter()
            for s in range(a.trials):
                est = approx_quantiles(vals.tolist(), cnt.tolist(), qs, lower=0, upper=a.D - 1,
                                       epsilon_call=layer_epsilon(eps, m), rng=make_source(1000 * m + s))
                e = rank_errors(x, qs, np.asarray(est))
                errs.append(e.mean())
                mx.append(e.max())
            dt = (time.perf_counter() - t0) / a.trials
            terr = []
            for s in range(4 if m in (1, 8, 64) else 0):
                tr = dptree.range_tree(x, lower=0, upper=a.D - 1, epsilon=eps, levels=TREE_LEVELS,
                                       branching=TREE_BRANCHING, rng=s)
                terr.append(rank_errors(x, qs, np.floor(np.atleast_1d(tr.quantile(qs)))).mean())
            plan = dptree.plan_range_tree(lower=0, upper=a.D - 1, epsilon=eps, levels=TREE_LEVELS, branching=TREE_BRANCHING)
            am, tm, tp = float(np.mean(errs)), float(np.mean(terr)) if terr else float("nan"), tree_error(plan)
            rows.append((eps, m, am))
            if terr:
                tree_rows.append(tm / tp)
            print(f"{eps:5g} {m:5d} {layers(m):3d} {am:12.2f} {np.mean(mx):11.2f} {tm:10.2f} {tp:10.2f} "
                  f"{tm / am:12.2f} {dt:8.2f}")
    L = np.array([layers(m) for _, m, _ in rows], dtype=float)
    y = np.log(np.array([e * eps for eps, _, e in rows]))
    b, loga = np.polyfit(np.log(L), y, 1)
    A, B = float(math.exp(loga)), float(b)
    T = float(np.mean(tree_rows))
    print(f"fit: approx mean rank error = {A:.3f} * L^{B:.3f} / epsilon; tree measured / closed form = {T:.3f}")
    if a.write:
        path = pathlib.Path(__file__).resolve().parents[1] / "src/dptree/quantiles/fitted.py"
        path.write_text(
            '"""The error curve of ApproxQuantiles used by ``method="auto"`` (:mod:`dptree.quantiles.auto`):\n'
            "mean rank error ~ APPROX_A * L^APPROX_B / epsilon, and the tree's measured mean rank error over\n"
            "its closed-form prediction, TREE_FACTOR. Written by ``benchmarks/quantiles_auto.py``\n"
            f'(uniform n = {a.n} over [0, {a.D}), {a.trials} trials per point)."""\n\n'
            f"APPROX_A = {A:.4f}\nAPPROX_B = {B:.4f}\nTREE_FACTOR = {T:.4f}\n")
        print(f"wrote {path}")
        importlib.reload(importlib.import_module("dptree.quantiles.fitted"))
    auto = importlib.reload(importlib.import_module("dptree.quantiles.auto"))
    print("crossover: smallest m at which the tree is predicted to beat approx (auto's rule)")
    print(f"{'domain':>8} " + " ".join(f"eps={e:<6g}" for e in (0.1, 1.0, 10.0)))
    for logd in (10, 16, 20, 24, 30):
        cells = []
        for eps in (0.1, 1.0, 10.0):
            cross = next((m for m in range(1, 5000) if (lambda p: p["tree"] < p["approx"])(
                auto.predicted_errors(m, lower=0, upper=2**logd - 1, epsilon=eps, width=max(1, 2 ** (logd - 24))))), None)
            cells.append(f"{cross!s:>10}")
        print(f"{'2^' + str(logd):>8} " + " ".join(cells))


if __name__ == "__main__":
    main()
