"""An experiment for issue 12's m = 20, n = 10^3 cells (not a dptree method): JointExp or
ApproxQuantiles after a private range search, against both on the public domain.

JointExp fails on data concentrated far inside a wide public domain (the empty-gap failure of
docs/notes/quantiles.md: moving outputs into the empty gap gains ln |X| nats of counting measure), which
is why ``auto`` does not run it at n = 10^3, m = 20 over [0, 2^20). Here ``bounds+joint`` spends
``--share`` of epsilon on dptree's private range search (``BoundsSearch``: doubling candidates from
0, AboveThreshold at each end, as ``range_tree(bounds="private")``), clamps the records to the
range found and runs JointExp (dithered, n declared) on it with the rest of epsilon: sequential
composition, epsilon in all. Same data sets as benchmarks/quantiles.py (seed 12 by default, so
trial t's data set is that grid's), tie-aware mean and max rank error over the m levels.

    PYTHONPATH=src:benchmarks python3 benchmarks/quantiles_joint_bounds.py --trials 40
"""

from __future__ import annotations

import argparse

import numpy as np
from quantiles import DATA, LOWER, UPPER, errors, make_data

import dptree
from dptree.noise import make_source
from dptree.rangetree.bounds import BoundsSearch


def bounds_then(method: str, x: np.ndarray, qs: np.ndarray, seed: int, share: float) -> np.ndarray:
    """``method`` (joint or approx) on the records clamped to the range a private search found."""
    src = make_source(seed)
    u, c = np.unique(x, return_counts=True)
    lo, hi = BoundsSearch(epsilon=share).find("integer", u, c, src)
    lo, hi = max(int(lo), LOWER), min(int(hi), UPPER)
    if lo >= hi:
        lo, hi = LOWER, UPPER
    y = np.clip(x, lo, hi)
    return np.asarray(dptree.quantiles(y, qs, lower=lo, upper=hi, epsilon=1.0 - share, method=method, n=x.size,
                                       rng=src).values)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--m", type=int, default=20)
    ap.add_argument("--share", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--data", default=",".join(DATA))
    ap.add_argument("--methods", default="approx,joint,bounds", help="approx, joint, bounds (both bounds variants)")
    args = ap.parse_args()
    qs = np.arange(1, args.m + 1) / (args.m + 1)
    methods = {
        "approx": lambda x, s: np.asarray(dptree.quantiles(x, qs, lower=LOWER, upper=UPPER, epsilon=1.0,
                                                           method="approx", n=x.size, rng=s).values),
        "joint": lambda x, s: np.asarray(dptree.quantiles(x, qs, lower=LOWER, upper=UPPER, epsilon=1.0,
                                                          method="joint", n=x.size, rng=s).values),
        f"bounds({args.share:g})+joint": lambda x, s: bounds_then("joint", x, qs, s, args.share),
        f"bounds({args.share:g})+approx": lambda x, s: bounds_then("approx", x, qs, s, args.share),
    }
    methods = {k: v for k, v in methods.items() if k.split("(")[0] in args.methods.split(",")}
    print(f"# n = {args.n}, m = {args.m}, epsilon = 1 over [{LOWER}, {UPPER}], {args.trials} trials, seed {args.seed}; "
          "tie-aware rank error, mean +- standard error over trials\n")
    print("| data | method | mean | max over levels |")
    print("|---|---|---:|---:|")
    for kind in args.data.split(","):
        g = np.random.default_rng([args.seed, DATA.index(kind), args.n])
        xs = [make_data(kind, args.n, g) for _ in range(args.trials)]
        for name, f in methods.items():
            mean, mx = [], []
            for t, x in enumerate(xs):
                _, tie = errors(np.sort(x), f(x, t), qs)
                mean.append(tie.mean())
                mx.append(tie.max())
            se = lambda v: np.std(v, ddof=1) / np.sqrt(len(v))  # noqa: E731
            print(f"| {kind} | {name} | {np.mean(mean):.2f} +- {se(mean):.2f} | {np.mean(mx):.2f} +- {se(mx):.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
