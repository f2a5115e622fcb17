"""Quantile rank error of dptree against diffprivlib and a plain exponential mechanism.

Run from the repository root:

    PYTHONPATH=src python3 benchmarks/quantiles.py            # 20 trials per cell (4 at n = 10^5)
    PYTHONPATH=src python3 benchmarks/quantiles.py --quick    # 3 trials, n <= 10^4

Setting. Integer domain [0, 2^16 - 1] (D = 65536 leaves of width 1). Data: log-normal
(round(exp(N(7, 1))), median about 1100, clamped into the domain) and uniform integers on the
domain. m evenly spaced levels q_i = i/(m+1), i = 1..m. Total epsilon = 1 for the m quantiles:

* dptree: one ``dptree.range_tree(x, lower=0, upper=65535, epsilon=1)`` release (default
  branching and levels) answers all m with ``quantile(q)``.
* diffprivlib: ``diffprivlib.tools.quantile(x, q, epsilon=1, bounds=(0, 65535))`` with the array
  of m levels; diffprivlib splits epsilon evenly, eps/m per quantile (exponential mechanism,
  Smith 2011, on the continuous interval).
* plain EM: the exponential mechanism on the integers of the domain, written here with numpy:
  score(y) = -|#{x < y} - q n| (sensitivity 1 under add/remove), P(y) ~ exp(eps/m * score / 2),
  sampled exactly per block of equal rank with the Gumbel-max trick. eps/m per quantile.

Rank error of an answer y for level q: the distance from q n to the interval of ranks
[#{x < y}, #{x <= y}] (0 when y is an exact q-quantile; equal to |F(y) - q| n when y is not a
data value). Reported: the maximum over the m levels, averaged over trials (and in % of n).
Signed rank bias (rank above q n is positive) at epsilon = 10^4 on log-normal data is in the last
table. dptree runs with the test-only ``rng`` hook (seeded); numpy's RNG drives the baselines.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import dptree

LOWER, UPPER = 0, 2**16 - 1
MS = (1, 6, 20, 99)


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.ljust(w) if i <= 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
            + " |" for r in rows]
    return "\n".join([line, sep, *body])


def make_data(kind: str, n: int, g: np.random.Generator) -> np.ndarray:
    if kind == "lognormal":
        return np.clip(np.round(g.lognormal(7.0, 1.0, size=n)), LOWER, UPPER).astype(np.int64)
    return g.integers(LOWER, UPPER + 1, size=n, dtype=np.int64)


def signed_rank_error(sorted_x: np.ndarray, y: np.ndarray, q: np.ndarray) -> np.ndarray:
    n = sorted_x.size
    below = np.searchsorted(sorted_x, y, side="left")  # #{x < y}
    upto = np.searchsorted(sorted_x, y, side="right")  # #{x <= y}
    target = q * n
    return np.where(target < below, below - target, np.where(target > upto, upto - target, 0.0))


def em_quantile(sorted_x: np.ndarray, q: float, eps: float, g: np.random.Generator) -> int:
    """Exponential mechanism on the integers [LOWER, UPPER] with score -|#{x < y} - q n|."""
    n = sorted_x.size
    # integers y with #{x < y} = i: max(LOWER, s_{i-1} + 1) <= y <= min(UPPER, s_i)
    prev = np.concatenate([[LOWER - 1], sorted_x]) + 1
    nxt = np.concatenate([sorted_x, [UPPER]])
    start = np.maximum(prev, LOWER)
    stop = np.minimum(nxt, UPPER)
    size = stop - start + 1
    i = np.arange(n + 1)
    with np.errstate(divide="ignore"):
        logw = np.log(np.maximum(size, 0)) - eps * np.abs(i - q * n) / 2.0
    pick = int(np.argmax(logw + g.gumbel(size=logw.size)))
    return int(start[pick] + g.integers(0, size[pick]))


def run_trial(kind: str, n: int, eps: float, g: np.random.Generator, methods: tuple[str, ...]):  # type: ignore[no-untyped-def]
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.tools import quantile as dpl_quantile

    x = make_data(kind, n, g)
    sx = np.sort(x)
    out: dict[tuple[str, int], np.ndarray] = {}
    if "dptree" in methods:
        tree = dptree.range_tree(x, lower=LOWER, upper=UPPER, epsilon=eps, rng=g)
    for m in MS:
        qs = np.arange(1, m + 1) / (m + 1)
        if "dptree" in methods:
            out[("dptree", m)] = signed_rank_error(sx, np.asarray(tree.quantile(qs)), qs)
        if "diffprivlib" in methods:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                y = dpl_quantile(x, qs, epsilon=eps, bounds=(LOWER, UPPER),
                                 random_state=int(g.integers(2**31)), accountant=BudgetAccountant())
            out[("diffprivlib", m)] = signed_rank_error(sx, np.atleast_1d(y), qs)
        if "plain EM" in methods:
            y = np.array([em_quantile(sx, q, eps / m, g) for q in qs])
            out[("plain EM", m)] = signed_rank_error(sx, y, qs)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=20, help="trials per cell for n < --large-n (default 20)")
    ap.add_argument("--trials-large", type=int, default=4,
                    help="trials per cell for n >= --large-n (default 4; diffprivlib takes ~0.1-0.4 s per quantile there)")
    ap.add_argument("--large-n", type=int, default=100_000)
    ap.add_argument("--ns", type=str, default="1000,10000,100000")
    ap.add_argument("--bias-trials", type=int, default=30)
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.trials, args.trials_large, args.ns, args.bias_trials = 3, 3, "1000,10000", 3
    ns = [int(s) for s in args.ns.split(",")]
    g = np.random.default_rng(args.seed)
    methods = ("dptree", "diffprivlib", "plain EM")
    probe = dptree.range_tree([1, 2, 3], lower=LOWER, upper=UPPER, epsilon=1.0, rng=0)
    print(f"# Quantile rank error, integer domain [{LOWER}, {UPPER}], total epsilon = 1, {args.trials} trials "
          f"per cell ({args.trials_large} for n >= {args.large_n:,}), seed {args.seed}")
    print(f"# dptree default release: branching {probe.layout.branching}, levels uniform, discrete Laplace\n")
    rows = []
    wins = []
    t0 = time.perf_counter()
    for kind in ("lognormal", "uniform"):
        for n in ns:
            acc: dict[tuple[str, int], list[np.ndarray]] = {}
            for _ in range(args.trials if n < args.large_n else args.trials_large):
                for key, err in run_trial(kind, n, 1.0, g, methods).items():
                    acc.setdefault(key, []).append(err)
            for m in MS:
                cells = []
                maxes = {}
                for meth in methods:
                    e = np.abs(np.array(acc[(meth, m)]))  # trials x m
                    maxes[meth] = e.max(axis=1).mean()
                    cells.append(f"{maxes[meth]:.1f} ({100 * maxes[meth] / n:.2f}%)")
                for meth in methods:
                    e = np.abs(np.array(acc[(meth, m)]))
                    cells.append(f"{e.mean():.1f}")
                rows.append([kind, f"{n:,}", str(m)] + cells)
                if m == 20:
                    se = {meth: np.abs(np.array(acc[(meth, m)])).max(axis=1).std(ddof=1)
                          / np.sqrt(len(acc[(meth, m)])) for meth in methods}
                    wins.append((kind, n, maxes["dptree"], se["dptree"], maxes["diffprivlib"], se["diffprivlib"],
                                 len(acc[(meth, m)])))
    print("## Rank error (mean over trials of the maximum over the m levels; mean over all levels)\n")
    print(table(["data", "n", "m", "dptree max", "diffprivlib max", "plain EM max",
                 "dptree mean", "diffprivlib mean", "plain EM mean"], rows))
    print("\n## Target: m = 20 at equal total epsilon, dptree's maximum rank error below diffprivlib's\n")
    print(table(["data", "n", "m", "trials", "dptree (+- s.e.)", "diffprivlib (+- s.e.)", "dptree lower?"],
                [[k, f"{n:,}", "20", str(t), f"{a:.1f} +- {sa:.1f}", f"{b:.1f} +- {sb:.1f}", "yes" if a < b else "NO"]
                 for k, n, a, sa, b, sb, t in wins]))

    print(f"\n## Signed rank bias of dptree, log-normal data, m = 99 levels ({args.bias_trials} releases per row; "
          "the target is at epsilon = 10^4, epsilon = 1 shown for contrast)\n")
    brows = []
    for eps in (1e4, 1.0):
        for n in ns:
            errs = []
            for _ in range(args.bias_trials):
                errs.append(run_trial("lognormal", n, eps, g, ("dptree",))[("dptree", 99)])
            e = np.array(errs)
            per_level = e.mean(axis=0)
            se = e.mean(axis=1).std(ddof=1) / np.sqrt(e.shape[0]) if e.shape[0] > 1 else float("nan")
            verdict = ("yes" if np.abs(per_level).max() <= 0.001 * n else "NO") if eps >= 1e4 else "- (not a target)"
            brows.append([f"{eps:g}", f"{n:,}", f"{e.mean():+.3f} +- {se:.3f}", f"{100 * e.mean() / n:+.4f}%",
                          f"{np.abs(per_level).max():.3f}", f"{100 * np.abs(per_level).max() / n:.4f}%",
                          f"{np.abs(e).max():.1f}", verdict])
    print(table(["epsilon", "n", "mean signed rank error (+- s.e.)", "% of n", "max |mean| over the 99 levels", "% of n",
                 "max |error| seen", "max |bias| <= 0.1% n"], brows))
    print(f"\n(total time {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
