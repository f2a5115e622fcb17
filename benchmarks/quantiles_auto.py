"""Fit the error curve of ApproxQuantiles that ``dptree.quantiles(method="auto")`` uses.

Measures the mean tie-aware rank error dist(q n, [#{x < y}, #{x <= y}]) of the approx method on
uniform integer data (n records over [0, D)), levels i / (m + 1), at several m and epsilon, fits
err = a * L^b / epsilon (L = floor(log2 m) + 1) by least squares on logs, measures the tree
method beside it (with its predicted error from the plan), prints the table with ratios and
writes the fitted constants to src/dptree/quantiles/fitted.py (``--write``), then prints the
crossover table (the smallest m at which the tree is predicted to win) by epsilon and domain.
``--joint`` measures JointExp's curve instead (mean tie-aware rank error times epsilon at m = 2, 4, 8,
16, epsilon = 1, same data; approx measured beside it on the same data), keeping the other
constants; the final table then shows the method auto picks by m, n and epsilon.

    PYTHONPATH=src python3 benchmarks/quantiles_auto.py --trials 6 --write
    PYTHONPATH=src python3 benchmarks/quantiles_auto.py --joint --trials 60 --write

``--coverage`` instead measures the coverage of the 95% intervals (docs/notes/quantiles.md): the tree's
calibrated interval (``dptree.quantiles``' default, :mod:`dptree.rangetree.quantile_calibration`) beside the
pivot interval (``interval="pivot"``) and ``RangeTree.quantile_ci``, with widths, the time per call
by domain size, and the rank radius of the exponential-mechanism methods and JointExp
(``--em-only``: those alone).
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


def coverage(trials: int, em_only: bool = False) -> None:
    qs = np.array([0.05, 0.25, 0.5, 0.75, 0.95])
    D = 1024
    if not em_only:
        print(f"tree, 95% intervals, [0, {D}), epsilon = 1, {trials} trials x 5 levels (0.05 .. 0.95); "
              "coverage (+- its binomial standard error over the 5 x trials intervals), mean width in buckets")
        print(f"{'data':>10} {'n':>6} {'quantile_ci':>11} {'pivot':>6} {'calibrated':>16} {'w pivot':>8} "
              f"{'w calib':>8} {'s/call':>7}   per level (calibrated) | per level (pivot)")
    for kind in () if em_only else ("uniform", "lognormal"):
        for n in (1000, 10_000):
            rs = np.random.default_rng(0)
            x = rs.integers(0, D, n) if kind == "uniform" else np.minimum(rs.lognormal(5, 1, n).astype(int), D - 1)
            x = np.sort(x)
            F = np.searchsorted(x, np.arange(D), side="right")
            true = np.array([np.searchsorted(F, q * n, side="left") for q in qs])
            old, piv, cal = np.zeros(qs.size), np.zeros(qs.size), np.zeros(qs.size)
            w_piv, w_cal, dt = [], [], 0.0
            kw = dict(lower=0, upper=D - 1, epsilon=1.0, method="tree")
            for s in range(trials):
                t = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=1.0, levels=TREE_LEVELS,
                                      branching=TREE_BRANCHING, rng=s)
                lo, hi = t.quantile_ci(qs, 0.95)
                old += (lo <= true) & (true <= hi)
                r = dptree.quantiles(x, qs, interval="pivot", rng=s, **kw)  # the same release (same seed)
                lo, hi = np.asarray(r.ci_low), np.asarray(r.ci_high)
                piv += (lo <= true) & (true <= hi)
                w_piv.append(hi - lo + 1)
                t0 = time.perf_counter()
                r = dptree.quantiles(x, qs, interval="calibrated", rng=s, **kw)
                dt += time.perf_counter() - t0
                lo, hi = np.asarray(r.ci_low), np.asarray(r.ci_high)
                cal += (lo <= true) & (true <= hi)
                w_cal.append(hi - lo + 1)
            c = cal.mean() / trials
            se = math.sqrt(c * (1 - c) / (qs.size * trials))
            print(f"{kind:>10} {n:6d} {old.mean() / trials:11.3f} {piv.mean() / trials:6.3f} {c:9.3f} +- {se:.3f} "
                  f"{np.mean(w_piv):8.1f} {np.mean(w_cal):8.1f} {dt / trials:7.3f}   "
                  + " ".join(f"{v:.3f}" for v in cal / trials) + " | "
                  + " ".join(f"{v:.3f}" for v in piv / trials), flush=True)
        if not em_only and kind == "lognormal":
            _calibration_cost()
    print("exponential-mechanism methods: P(every level's rank error <= its radius), 95% radius")
    D = 2**16
    x = np.sort(np.random.default_rng(1).choice(D, 1000, replace=False))
    q10 = np.linspace(0.05, 0.95, 10)
    for method in ("exponential", "approx", "joint"):
        ok, ratio = 0, []
        for s in range(trials // 5):
            r = dptree.quantiles(x, q10, lower=0, upper=D - 1, epsilon=1.0, method=method, n=x.size, rng=s)
            errs = rank_errors(x, q10, np.asarray(r.values))
            ok += bool(np.all(errs <= np.asarray(r.rank_radius)))
            ratio.append(float(np.max(errs / np.asarray(r.rank_radius))))
        print(f"{method:>12}: spread data n = 1000 over 2^16, m = 10: coverage {ok / (trials // 5):.3f}, "
              f"largest error / radius {max(ratio):.3f}")


def _calibration_cost() -> None:
    """Time per dptree.quantiles(method="tree") call, pivot and calibrated intervals (private source),
    n = 10^4 uniform records, 5 levels, by domain size."""
    from dptree.rangetree.quantile_calibration import calibration_sims

    qs = np.array([0.05, 0.25, 0.5, 0.75, 0.95])
    print("time per call (private source, n = 10^4 uniform, 5 levels; best of 3)")
    for D in (2**10, 2**13, 2**16, 2**18, 2**20):
        x = np.random.default_rng(0).integers(0, D, 10_000)
        best = {}
        for interval in ("pivot", "calibrated", "pivot", "calibrated", "pivot", "calibrated"):
            t0 = time.perf_counter()
            dptree.quantiles(x, qs, lower=0, upper=D - 1, epsilon=1.0, method="tree", interval=interval)
            best[interval] = min(best.get(interval, math.inf), time.perf_counter() - t0)
        sims = calibration_sims(dptree.plan_range_tree(lower=0, upper=D - 1, epsilon=1.0, levels=TREE_LEVELS,
                                                       branching=TREE_BRANCHING).layout.padded_size)
        print(f"  D = 2^{int(math.log2(D)):<3d} {sims:4d} simulations: pivot {best['pivot']:.3f} s, "
              f"calibrated {best['calibrated']:.3f} s", flush=True)


def write_fitted(a: argparse.Namespace, *, approx: tuple[float, float] | None = None, tree: float | None = None,
                 joint: tuple[tuple[int, float], ...] | None = None) -> None:
    """Rewrite src/dptree/quantiles/fitted.py: the curves given, the others kept as they are."""
    fitted = importlib.reload(importlib.import_module("dptree.quantiles.fitted"))
    A, B = approx or (fitted.APPROX_A, fitted.APPROX_B)
    T = tree if tree is not None else fitted.TREE_FACTOR
    jc = joint or fitted.JOINT_CURVE
    ms = ", ".join(str(int(r[0])) for r in jc)
    path = pathlib.Path(__file__).resolve().parents[1] / "src/dptree/quantiles/fitted.py"
    path.write_text(
        '"""The error curves used by ``method="auto"`` (:mod:`dptree.quantiles.auto`): ApproxQuantiles\'s\n'
        "mean rank error ~ APPROX_A * L^APPROX_B / epsilon, the tree's measured mean rank error over its\n"
        "closed-form prediction, TREE_FACTOR, and JOINT_CURVE: rows (m, JointExp mean, JointExp max,\n"
        "approx mean, approx max), the tie-aware rank errors (max: over the m levels, averaged over\n"
        f"releases) times epsilon, measured on the same data at m = {ms} (interpolated in log m).\n"
        "Written by ``benchmarks/quantiles_auto.py`` (uniform data over [0, 2^20): approx and tree with\n"
        "``--trials 6`` at n = 10000; joint, dithered as method='joint' runs it, with\n"
        "``--joint --trials 60`` at n = 10000).\"\"\"\n\n"
        f"APPROX_A = {A:.4f}\nAPPROX_B = {B:.4f}\nTREE_FACTOR = {T:.4f}\n"
        "JOINT_CURVE = (\n" + "".join(f"    {(int(r[0]), *(round(float(e), 3) for e in r[1:]))!r},\n" for r in jc)
        + ")\n")
    print(f"wrote {path}")
    importlib.reload(importlib.import_module("dptree.quantiles.fitted"))


def fit_joint(a: argparse.Namespace, x: np.ndarray) -> None:
    """Measure JointExp and approx (tie-aware mean rank error) on the fit data at epsilon = 1 and
    write JointExp's curve (m, error * epsilon)."""
    from dptree.quantiles.joint import dither_factor, joint_exponential

    vals, cnt = np.unique(x, return_counts=True)
    k = 1 if a.no_dither else dither_factor(x.size, a.D)  # as dptree.quantiles(method="joint") runs it
    curve = []
    print(f"{'m':>5} {'joint mean':>11} {'+- se':>7} {'joint max':>10} {'approx mean':>12} {'+- se':>7} "
          f"{'approx max':>11} {'approx curve':>13} {'joint s':>8}")
    auto = importlib.import_module("dptree.quantiles.auto")
    for m in (int(v) for v in a.joint_ms.split(",")):
        qs = np.arange(1, m + 1) / (m + 1)
        res: dict[str, tuple[list[float], list[float]]] = {"joint": ([], []), "approx": ([], [])}
        t0 = time.perf_counter()
        for s in range(a.trials):
            est = joint_exponential(vals, cnt, qs, lower=0, upper=a.D - 1, epsilon=1.0, rng=make_source(2000 * m + s),
                                    dither=k)
            e = rank_errors(x, qs, np.asarray(est))
            res["joint"][0].append(e.mean())
            res["joint"][1].append(e.max())
        dt = (time.perf_counter() - t0) / a.trials
        for s in range(a.trials):
            est = approx_quantiles(vals.tolist(), cnt.tolist(), qs, lower=0, upper=a.D - 1,
                                   epsilon_call=layer_epsilon(1.0, m), rng=make_source(3000 * m + s))
            e = rank_errors(x, qs, np.asarray(est))
            res["approx"][0].append(e.mean())
            res["approx"][1].append(e.max())
        (jm, jx), (am, ax) = res["joint"], res["approx"]
        curve.append((m, float(np.mean(jm)), float(np.mean(jx)), float(np.mean(am)), float(np.mean(ax))))
        pred = auto.predicted_errors(m, lower=0, upper=a.D - 1, epsilon=1.0)["approx"]
        print(f"{m:5d} {np.mean(jm):11.2f} {np.std(jm, ddof=1) / np.sqrt(a.trials):7.2f} {np.mean(jx):10.2f} "
              f"{np.mean(am):12.2f} {np.std(am, ddof=1) / np.sqrt(a.trials):7.2f} {np.mean(ax):11.2f} {pred:13.2f} "
              f"{dt:8.2f}", flush=True)
    if a.write:
        write_fitted(a, joint=tuple(curve))


def choice_table() -> None:
    """The method auto runs by m, declared n and epsilon over [0, 2^20)."""
    auto = importlib.reload(importlib.import_module("dptree.quantiles.auto"))
    ms = (1, 2, 4, 8, 12, 20, 50, 100, 128, 300, 1000)
    print("auto's choice over [0, 2^20) by m (columns), declared n and epsilon (rows)")
    print("| epsilon | n | " + " | ".join(map(str, ms)) + " |")
    print("|---:|---:|" + "---|" * len(ms))
    for eps in (0.1, 1.0, 10.0):
        for n in (None, 1000, 10_000, 100_000):
            cells = [auto.choose_method(m, lower=0, upper=2**20 - 1, epsilon=eps, n=n) for m in ms]
            print(f"| {eps:g} | {n if n else 'none'} | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--coverage", action="store_true")
    ap.add_argument("--em-only", action="store_true", help="with --coverage: only the mechanism methods' radii")
    ap.add_argument("--trials", type=int, default=6)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--D", type=int, default=2**20)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--joint", action="store_true", help="fit JointExp's curve (keeps the other constants)")
    ap.add_argument("--joint-ms", default="2,4,8,16,20,32,50", help="with --joint: the m at which to measure")
    ap.add_argument("--no-dither", action="store_true", help="with --joint: JointExp without dithered ties")
    a = ap.parse_args()
    if a.coverage:
        coverage(max(a.trials, 50), a.em_only)
        return
    rs = np.random.default_rng(1)
    x = np.sort(rs.integers(0, a.D, a.n))
    if a.joint:
        fit_joint(a, x)
        choice_table()
        return
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
        write_fitted(a, approx=(A, B), tree=T)
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
    choice_table()


if __name__ == "__main__":
    main()
