"""An experiment for issue 12's n = 10^3 cells (m = 20, 50, 100): let ``auto`` look at the data
privately before it chooses.

JointExp's failure (docs/notes/quantiles_benchmark.md, sections 6.3, 8, 9) is mass in empty stretches
of the public domain at its ends; ApproxQuantiles' worst level on such data is its last call, the
top piece's median, whose exponential mechanism at epsilon / L weighs the same empty stretch.
Variants, all at epsilon = 1 in all (sequential composition):

* ``approx``, ``joint``: dptree's methods on the public domain (n declared);
* ``approx-deep``: ApproxQuantiles with layer l's calls at epsilon w_l / sum(w), w_l = 2^(l / (L - 1))
  (the deepest layer twice the root's; section 9's "sqrt-increasing" at m = 20);
* ``rule(s)``: spend s of epsilon on two noisy counts, the records in the bottom and in the top
  eighth of the domain (disjoint: one record moves one count under add/remove, so each count
  gets discrete Laplace noise of scale 1 / s), then JointExp if both exceed n / 16 (the data
  reach both ends of the domain) and m is in joint's range, else approx-deep, at 1 - s.

Same data sets as benchmarks/quantiles.py (``m20_data``; seed 12), tie-aware mean and max rank
error +- standard error over the data sets; ``ref-approx`` and ``ref-joint`` on the same data.

    PYTHONPATH=src:benchmarks python3 benchmarks/quantiles_end_test.py --data uniform --m 20 --trials 60
"""

from __future__ import annotations

import numpy as np
import quantiles as grid
from quantiles_layer_budgets import weighted_approx

import dptree
from dptree.noise import discrete_laplace, make_source
from dptree.quantiles import approx as A


def deep(x: np.ndarray, qs: np.ndarray, seed: int, epsilon: float = 1.0) -> np.ndarray:
    L = A.layers(len(qs))
    w = [2.0 ** (i / max(L - 1, 1)) for i in range(L)]
    return weighted_approx(x, qs, seed, w, epsilon=epsilon)


def filled_ends(x: np.ndarray, share: float, src) -> bool:  # type: ignore[no-untyped-def]
    size = grid.UPPER - grid.LOWER + 1
    low = int(np.count_nonzero(x < grid.LOWER + size // 8))
    high = int(np.count_nonzero(x >= grid.UPPER + 1 - size // 8))
    noisy = np.array([low, high]) + discrete_laplace(src, 1.0 / share, 2)
    return bool(np.all(noisy > x.size / 16))


def rule(x: np.ndarray, qs: np.ndarray, seed: int, share: float) -> np.ndarray:
    src = make_source(seed)
    if len(qs) <= 35 and filled_ends(x, share, src):
        return np.asarray(dptree.quantiles(x, qs, lower=grid.LOWER, upper=grid.UPPER, epsilon=1.0 - share,
                                           method="joint", n=x.size, rng=src).values, dtype=np.float64)
    return deep(x, qs, seed + 7919, epsilon=1.0 - share)


def main() -> None:
    ap = grid.m20_parser(__doc__)
    ap.add_argument("--share", type=float, default=0.05)
    ap.add_argument("--variants", default="approx,approx-deep,joint,rule,ref-approx,ref-joint")
    args = ap.parse_args()
    qs, xs = grid.m20_data(args)

    def lib(method: str):  # type: ignore[no-untyped-def]
        return lambda x, s: np.asarray(dptree.quantiles(x, qs, lower=grid.LOWER, upper=grid.UPPER, epsilon=1.0,
                                                        method=method, n=x.size, rng=s).values, dtype=np.float64)

    runs = {"approx": lib("approx"), "joint": lib("joint"), "approx-deep": lambda x, s: deep(x, qs, s),
            f"rule({args.share:g})": lambda x, s: rule(x, qs, s, args.share)}
    for ref in ("ref-approx", "ref-joint"):
        f = grid.runner(ref)
        runs[ref] = lambda x, s, f=f: np.asarray(f(x, qs, s), dtype=np.float64)  # type: ignore[misc]
    keep = args.variants.split(",")
    runs = {k: v for k, v in runs.items() if k.split("(")[0] in keep}
    grid.variant_table(runs, xs, qs, args.seed, f"# {args.data}, n = {args.n}, m = {args.m}, epsilon = 1, "
                       f"{args.trials} trials, seed {args.seed}")


if __name__ == "__main__":
    main()
