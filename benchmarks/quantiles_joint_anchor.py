"""dptree's JointExp against its anchor on one fixed data set: the ratio of mean rank errors.

Run from the repository root (about 15 s at 100 releases on a shared 2-core machine):

    PYTHONPATH=src:benchmarks python3 benchmarks/quantiles_joint_anchor.py --releases 100 --ms 1,4,20

The anchor is benchmarks/reference/joint_exp.py, the paper's JointExp (Gillenwater, Joseph & Kulesza
2021) as google-research ``dp_multiq`` runs it under add/remove neighbours: continuous outputs,
sensitivity 2 (1 - min(q_1, q_j - q_{j-1}, 1 - q_m)). dptree runs ``dptree.quantiles(method="joint",
n=n)`` (dithered ties, the declared n the true n), and beside it the same mechanism priced at the
replace-one sensitivity 2 (``joint_exponential(neighbors="replace")``, same dither factor): the
calibration the add/remove one improves on. One uniform data set of n integers on
[0, 2^20) (``--seed``), epsilon = 1, levels i / (m + 1); each method releases ``--releases`` times on
it. Error of a release: the mean over the levels of the rank error |#{x <= y} - q n|, and of the
tie-aware error dist(q n, [#{x < y}, #{x <= y}]) (the two differ by at most one rank here, where an
output lands on a record); the table shows their means over the releases +- standard errors and the
ratios dptree / anchor of the rank errors with their standard errors (delta method).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from reference.joint_exp import joint_exp

import dptree
from dptree.noise import make_source
from dptree.quantiles.joint import dither_factor, joint_exponential

LOWER, UPPER = 0, 2**20 - 1


def add_remove_sensitivity(qs: np.ndarray) -> float:
    """dp_multiq's add/remove sensitivity 2 (1 - min(q_1, the gaps, 1 - q_m))."""
    gaps = np.diff(np.concatenate([[0.0], qs, [1.0]]))
    return 2.0 * (1.0 - float(gaps.min()))


def errors(sx: np.ndarray, y: np.ndarray, qs: np.ndarray) -> tuple[float, float]:
    """(mean rank error, mean tie-aware error) of one release y over the levels."""
    below = np.searchsorted(sx, y, side="left")
    upto = np.searchsorted(sx, y, side="right")
    t = qs * sx.size
    return float(np.abs(upto - t).mean()), float(np.maximum(np.maximum(below - t, 0.0), t - upto).mean())


def stats(v: list[float]) -> tuple[float, float]:
    a = np.asarray(v)
    return float(a.mean()), float(a.std(ddof=1) / np.sqrt(a.size))


def ratio(num: tuple[float, float], den: tuple[float, float]) -> str:
    r = num[0] / den[0]
    return f"{r:.2f} ± {r * float(np.hypot(num[1] / num[0], den[1] / den[0])):.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--ms", default="1,4,20")
    ap.add_argument("--releases", type=int, default=100)
    ap.add_argument("--seed", type=int, default=41)
    args = ap.parse_args()
    x = np.random.default_rng(args.seed).integers(LOWER, UPPER + 1, size=args.n)
    sx = np.sort(x)
    print(f"# one uniform data set, n = {args.n} on [0, 2^20), seed {args.seed}; epsilon = 1; "
          f"{args.releases} releases per cell; mean over releases +- standard error\n")
    u, c = np.unique(x, return_counts=True)
    k = dither_factor(args.n, UPPER - LOWER + 1)
    print("| m | sensitivity 2 (1 - g) | dptree | dptree at 2 | anchor | ratio dptree / anchor | ratio at 2 | "
          "dptree tie-aware | anchor tie-aware | dptree s | anchor s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for m in map(int, args.ms.split(",")):
        qs = np.arange(1, m + 1) / (m + 1)
        sens = add_remove_sensitivity(qs)
        res: dict[str, list[tuple[float, float]]] = {"dptree": [], "at 2": [], "anchor": []}
        secs = {"dptree": 0.0, "anchor": 0.0}
        g = np.random.default_rng([args.seed, m])
        for i in range(args.releases):
            t0 = time.perf_counter()
            y = dptree.quantiles(x, qs, lower=LOWER, upper=UPPER, epsilon=1.0, method="joint", n=args.n,
                                 rng=1000 * m + i).values
            secs["dptree"] += time.perf_counter() - t0
            res["dptree"].append(errors(sx, np.sort(np.asarray(y, dtype=np.float64)), qs))
            y = joint_exponential(u, c, qs, lower=LOWER, upper=UPPER, epsilon=1.0, rng=make_source(1000 * m + i),
                                  dither=k, neighbors="replace")
            res["at 2"].append(errors(sx, np.asarray(y, dtype=np.float64), qs))
            t0 = time.perf_counter()
            y = joint_exp(x, qs, LOWER, UPPER + 1, 1.0, g, sensitivity=sens)
            secs["anchor"] += time.perf_counter() - t0
            res["anchor"].append(errors(sx, np.sort(y), qs))
        d, d2, a = (stats([r[0] for r in res[key]]) for key in ("dptree", "at 2", "anchor"))
        (td, tsd), (ta, tsa) = (stats([r[1] for r in res[key]]) for key in ("dptree", "anchor"))
        print(f"| {m} | {sens:.3g} | {d[0]:.2f} ± {d[1]:.2f} | {d2[0]:.2f} ± {d2[1]:.2f} | "
              f"{a[0]:.2f} ± {a[1]:.2f} | **{ratio(d, a)}** | {ratio(d2, a)} | {td:.2f} ± {tsd:.2f} | {ta:.2f} ± {tsa:.2f} | "
              f"{secs['dptree'] / args.releases:.3f} | {secs['anchor'] / args.releases:.3f} |", flush=True)


if __name__ == "__main__":
    main()
