"""ApproxQuantiles with unequal per-layer budgets at m = 20, n = 10^3 (issue 12's last missed max cell):
does moving budget between the recursion's layers lower the worst level's error? (It does not:
docs/notes/quantiles_benchmark.md, section 9.)

    PYTHONPATH=src:benchmarks python3 benchmarks/quantiles_layer_budgets.py --data uniform --trials 40
    PYTHONPATH=src:benchmarks python3 benchmarks/quantiles_layer_budgets.py --data distance --show-levels 12

Same data sets and seeds as benchmarks/quantiles.py (seed 12), epsilon = 1 over [0, 2^20), levels
i / 21. Each variant runs dptree's ApproxQuantiles recursion (``dptree.quantiles.approx``: same pieces,
same tie-aware exponential mechanism) with layer l's calls at epsilon w_l / sum(w) instead of
epsilon / L; the privacy argument of the module docstring holds for any split that sums to epsilon
(add/remove-one: one piece per layer changes). Tie-aware mean and max rank error +- standard error
over trials; ``ref-joint`` (the reference JointExp) on the same data sets for comparison.
"""

from __future__ import annotations


import numpy as np
import quantiles as grid

from dptree.noise import make_source
from dptree.quantiles import approx as A

WEIGHTS = {"equal (the paper)": [1] * 8, "increasing": [1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7],
           "decreasing": [1.4, 1.3, 1.2, 1.1, 1.0, 1, 1, 1], "sqrt-increasing": [1, 2**0.25, 2**0.5, 2**0.75, 2, 2, 2, 2],
           "top-heavy": [2, 1, 1, 1, 1, 1, 1, 1]}


class _LayerPiece:
    """A piece whose calls take the budget of the layer the recursion is in (``state["layer"]``,
    advanced by :func:`~dptree.quantiles.approx.run_approx`'s ``before_layer`` hook), so the
    library's own recursion runs with unequal layer budgets."""

    def __init__(self, piece: A.Piece, state: dict) -> None:
        self.piece, self.state, self.lo, self.hi = piece, state, piece.lo, piece.hi

    def sample(self, q: float, epsilon: float, src, neighbors):  # type: ignore[no-untyped-def]
        return self.piece.sample(q, self.state["eps"][self.state["layer"]], src, neighbors)

    def split(self, v: int, src):  # type: ignore[no-untyped-def]
        left, right = self.piece.split(v, src)
        return _LayerPiece(left, self.state), _LayerPiece(right, self.state)


def weighted_approx(x: np.ndarray, qs: np.ndarray, seed: int, weights: list[float], epsilon: float = 1.0
                    ) -> np.ndarray:
    """:func:`dptree.quantiles.approx.run_approx` with layer l's calls at epsilon w_l / sum(w)."""
    u, c = np.unique(x, return_counts=True)
    w = np.asarray(weights[: A.layers(len(qs))], dtype=np.float64)
    state = {"eps": list(epsilon * w / w.sum()), "layer": -1}

    def next_layer(calls: list) -> None:
        state["layer"] += 1

    root = _LayerPiece(A.ArrayPiece(u.astype(np.uint64), c.astype(np.int64), grid.LOWER, grid.UPPER), state)
    return np.asarray(A.run_approx(root, qs, epsilon_call=float("nan"), rng=make_source(seed),
                                   before_layer=next_layer), dtype=np.float64)


def show_levels(xs: list[np.ndarray], qs: np.ndarray, seed: int) -> None:
    """Per-level tie-aware errors of ``dptree.quantiles`` approx and joint (n declared), data set by data set."""
    import dptree

    for i, x in enumerate(xs):
        for method in ("approx", "joint"):
            y = dptree.quantiles(x, qs, lower=grid.LOWER, upper=grid.UPPER, epsilon=1.0, n=x.size, method=method,
                                 rng=seed * 1000 + i).values
            err = grid.errors(np.sort(x), np.asarray(y, dtype=np.float64), qs)[1]
            top = "above the data's maximum" if y[-1] > x.max() else "inside the data"
            print(f"data set {i} {method:6s} mean {err.mean():5.1f} max {err.max():5.1f}; top level {top}; "
                  f"per level {np.round(err).astype(int).tolist()}")


def main() -> None:
    ap = grid.m20_parser(__doc__)
    ap.add_argument("--show-levels", type=int, default=0, metavar="K",
                    help="instead: each level's tie-aware error of dptree's approx and joint on the first K data sets")
    args = ap.parse_args()
    qs, xs = grid.m20_data(args)
    if args.show_levels:
        show_levels(xs[: args.show_levels], qs, args.seed)
        return
    runs = {name: (lambda x, s, w=w: weighted_approx(x, qs, s, w)) for name, w in WEIGHTS.items()}
    ref = grid.runner("ref-joint")
    runs["ref-joint"] = lambda x, s: np.asarray(ref(x, qs, s), dtype=np.float64)  # type: ignore[misc]
    grid.variant_table(runs, xs, qs, args.seed,
                       f"# {args.data}, n = {args.n}, m = {args.m}, epsilon = 1, {args.trials} trials, seed {args.seed}")


if __name__ == "__main__":
    main()
