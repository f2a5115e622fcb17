"""ApproxQuantiles' splits for the first S layers, then JointExp inside each final piece, at
m = 20, n = 10^3 (issue 12's last missed max cell): does a hybrid keep JointExp's small worst-level
error without its empty-gap failure? (It does not: docs/notes/quantiles_benchmark.md, section 10.)

    PYTHONPATH=src:benchmarks python3 benchmarks/quantiles_hybrid.py --data uniform --trials 40

Same data sets and seeds as benchmarks/quantiles.py (seed 12), epsilon = 1 over [0, 2^20), levels
i / 21. Variant ``hS``: S layers of dptree's ApproxQuantiles recursion (its pieces, its tie-aware
exponential mechanism, its fair coins at a split) at epsilon / (S + 1) each, then dptree's dithered
JointExp on each final piece's remaining levels at the last epsilon / (S + 1) (a piece's records
change by at most one per layer under add/remove-one, so the product-form argument of
``dptree.quantiles.approx`` gives epsilon in all). Tie-aware mean and max rank error +- standard
error over trials, with dptree's approx and joint on the same data sets.
"""

from __future__ import annotations


import numpy as np
import quantiles as grid

from dptree.noise import make_source
from dptree.quantiles import approx as A
from dptree.quantiles.joint import dither_factor, joint_exponential


def hybrid(x: np.ndarray, qs: np.ndarray, seed: int, split_layers: int, epsilon: float = 1.0) -> np.ndarray:
    """S = ``split_layers`` layers of ApproxQuantiles' splits, then JointExp in each piece (module docstring)."""
    u, c = np.unique(x, return_counts=True)
    src = make_source(seed)
    per_layer = epsilon / (split_layers + 1)
    out: dict[int, int] = {}

    def walk(piece: A.ArrayPiece, idx: list[int], levels: list[float], depth: int) -> None:
        if not idx:
            return
        if depth == split_layers:
            k = dither_factor(x.size, piece.hi - piece.lo + 1)
            y = joint_exponential(piece.vals.astype(np.int64), piece.cnt, np.asarray(levels), lower=piece.lo,
                                  upper=piece.hi, epsilon=per_layer, rng=src, dither=k)
            out.update(zip(idx, (int(v) for v in y)))
            return
        mid = (len(idx) - 1) // 2
        p = levels[mid]
        v = piece.sample(p, per_layer, src, "add_remove")
        out[idx[mid]] = v
        left, right = piece.split(v, src)
        walk(left, idx[:mid], [min(max(q / p, 0.0), 1.0) for q in levels[:mid]], depth + 1)
        walk(right, idx[mid + 1:], [min(max((q - p) / (1 - p), 0.0), 1.0) for q in levels[mid + 1:]], depth + 1)

    root = A.ArrayPiece(u.astype(np.uint64), c.astype(np.int64), grid.LOWER, grid.UPPER)
    walk(root, list(range(len(qs))), [float(q) for q in qs], 0)
    return np.array([out[i] for i in range(len(qs))], dtype=np.float64)


def main() -> None:
    ap = grid.m20_parser(__doc__)
    args = ap.parse_args()
    qs, xs = grid.m20_data(args)
    runs = {}
    for method in ("approx", "joint"):
        f = grid.runner(method)
        runs[method] = lambda x, s, f=f: np.asarray(f(x, qs, s), dtype=np.float64)  # type: ignore[misc]
    for s_layers in (1, 2, 3):
        runs[f"h{s_layers}"] = lambda x, s, k=s_layers: hybrid(x, qs, s, k)
    grid.variant_table(runs, xs, qs, args.seed,
                       f"# {args.data}, n = {args.n}, m = {args.m}, epsilon = 1, {args.trials} trials, seed {args.seed}")


if __name__ == "__main__":
    main()
