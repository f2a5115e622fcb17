"""Accuracy cost of private bounds: ``range_tree(bounds="private")`` against a
tree over the oracle bounds (the data's true min and max: not private, the best a declared range
can do) and over a generous declared range (1000 times the data's scale), at the same epsilon.

Every tree gets its width from the same rule (:func:`dptree.rangetree.bounds.private_domain`: at
most 2^20 buckets; width 1 for integers when the range fits), so the columns differ only in the
range and, for the private bounds, in the budget left for the tree (1 - bounds_share).

Metrics per release: the quantile rank error, dist(q n, [#{x < x_q}, #{x <= x_q}]) in records,
mean and max over q in QS; the range error |count(a, b) - true| in records, mean over 200 ranges
whose ends are random records; the records clamped (outside the tree's range). Means over trials.

    nice python3 benchmarks/private_bounds.py --trials 5 [--ns 1000 10000 100000] [--share 0.1]

``--ladder``: the float candidates below 1 (the exponent halving, dptree's ladder) against every power
2^-126..2^-1 (the baseline), on the same data and noise: records clamped per search and the range found,
for data around the origin (normal), above it (log-normal) and at a tiny scale (uniform 1e-7..1e-6).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import dptree
from dptree.rangetree import bounds_search
from dptree.rangetree.bounds import private_domain

QS = np.array([0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99])


def data(kind: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, tuple[float, float]]:
    """The data and its generous declared range."""
    if kind == "lognormal":  # latencies in ms: median 20, a long right tail
        return rng.lognormal(3.0, 1.0, n), (0.0, 1e6)
    return rng.integers(1_000, 50_001, n), (-50_000_000, 50_000_000)  # uniform integers


def rank_errors(x_sorted: np.ndarray, est: np.ndarray, n: int) -> np.ndarray:
    lo = np.searchsorted(x_sorted, est, side="left")
    hi = np.searchsorted(x_sorted, est, side="right")
    target = QS * n
    return np.where(target < lo, lo - target, np.where(target > hi, target - hi, 0.0))


def release(x: np.ndarray, how: str, generous: tuple[float, float], eps: float, share: float, seed: int) -> object:
    if how == "private":
        return dptree.range_tree(x, bounds="private", bounds_share=share, epsilon=eps, rng=seed)
    kind = "float" if x.dtype.kind == "f" else "integer"
    lo, hi = (x.min(), x.max()) if how == "oracle" else generous
    if kind == "integer":
        lo, hi = int(lo), int(hi)
    dom = private_domain(kind, lo, hi)  # the same width rule as the private bounds
    return dptree.range_tree(x, lower=dom.lower, upper=dom.upper, width=dom.width, epsilon=eps, rng=seed)


def every_power_below_one(kind: str, side: str, origin: float = 0.0) -> np.ndarray:
    """The baseline float candidates: o +- 2^j for every j in -126..1022."""
    o, big = float(origin), float(np.finfo(np.float64).max)
    steps = np.ldexp(1.0, np.arange(-126, 1023))
    with np.errstate(over="ignore"):
        return np.minimum(o + steps, big) if side == "high" else np.concatenate([[o], np.maximum(o - steps, -big)])


def ladder_table(ns: list[int], trials: int, epsilon: float, share: float) -> None:
    kinds = {"normal": lambda g, n: g.normal(size=n), "lognormal": lambda g, n: g.lognormal(3.0, 1.0, n),
             "tiny": lambda g, n: g.uniform(1e-7, 1e-6, n)}
    search = bounds_search.BoundsSearch(epsilon=epsilon * share)
    ladders = {"every power (baseline)": every_power_below_one, "halving exponent (dptree)": bounds_search.candidates}
    print(f"end rank t = {search.rank}; {trials} searches per cell; 'over 4t': share of searches clamping > 4t")
    print("| data | n | candidates below 1 | clamped mean | clamped median | over 4t | range / data span (median) |")
    print("|---|---|---|---|---|---|---|")
    for kind, make in kinds.items():
        for n in ns:
            for name, ladder in ladders.items():
                clamped, widths = [], []
                for trial in range(trials):
                    x = make(np.random.default_rng([trial, n]), n)
                    v, c = np.unique(x, return_counts=True)
                    saved, bounds_search.candidates = bounds_search.candidates, ladder
                    try:
                        lo, hi = search.find("float", v, c, dptree.noise.make_source(trial))
                    finally:
                        bounds_search.candidates = saved
                    clamped.append(int(np.sum(x < lo) + np.sum(x > hi)))
                    widths.append((hi - lo) / (x.max() - x.min()))
                cl = np.asarray(clamped)
                print(f"| {kind} | {n} | {name} | {cl.mean():.1f} | {np.median(cl):.0f} | "
                      f"{np.mean(cl > 4 * search.rank):.3f} | {np.median(widths):.3g} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ns", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--share", type=float, default=0.1)
    ap.add_argument("--ladder", action="store_true", help="compare the float candidate ladders (see the docstring)")
    args = ap.parse_args()
    print(f"epsilon = {args.epsilon}, bounds_share = {args.share}, trials = {args.trials}")
    if args.ladder:
        ladder_table(args.ns, args.trials, args.epsilon, args.share)
        return
    print("| data | n | bounds | range (median) | buckets | clamped | rank err mean | rank err max | "
          "range err mean | s/release |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kind in ("lognormal", "uniform"):
        for n in args.ns:
            for how in ("private", "oracle", "generous"):
                stats: dict[str, list[float]] = {k: [] for k in ("rm", "rx", "re", "cl", "lo", "hi", "D", "t")}
                for trial in range(args.trials):
                    g = np.random.default_rng([trial, n, kind == "lognormal"])
                    x, generous = data(kind, n, g)
                    xs = np.sort(x)
                    t0 = time.perf_counter()
                    rel = release(x, how, generous, args.epsilon, args.share, seed=1000 + trial)
                    stats["t"].append(time.perf_counter() - t0)
                    dom = rel.domain  # type: ignore[attr-defined]
                    r = rank_errors(xs, np.asarray(rel.quantile(QS), dtype=np.float64), n)  # type: ignore[attr-defined]
                    a, b = np.sort(g.choice(x, size=(2, 200)), axis=0)
                    true = np.searchsorted(xs, b, side="right") - np.searchsorted(xs, a, side="left")
                    est = rel.count(a, b)  # type: ignore[attr-defined]
                    stats["rm"].append(float(r.mean()))
                    stats["rx"].append(float(r.max()))
                    stats["re"].append(float(np.mean(np.abs(est - true))))
                    stats["cl"].append(float(np.sum((x < dom.lower) | (x > dom.upper))))
                    stats["lo"].append(float(dom.lower))
                    stats["hi"].append(float(dom.upper))
                    stats["D"].append(float(dom.size))
                    m = {k: float(np.mean(v)) for k, v in stats.items()}
                rng_txt = f"[{np.median(stats['lo']):.4g}, {np.median(stats['hi']):.4g}]"
                print(f"| {kind} | {n} | {how} | {rng_txt} | {m['D']:.0f} | {m['cl']:.1f} | {m['rm']:.1f} | "
                      f"{m['rx']:.1f} | {m['re']:.1f} | {m['t']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
