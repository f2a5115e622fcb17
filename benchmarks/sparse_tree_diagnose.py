"""Where the sparse tree's quantile rank error comes from (a diagnostic, not a release).

For each data set of benchmarks/sparse_tree.py: the mean rank error of ``sparse_range_tree``, the
same release read off its least-squares cells without the last depth's smoothing ("LS read-off"),
the same tree with its noisy counts replaced by the exact counts of the same ranges (noise switched
off: what is left is the within-cell spreading and the shape), the dense tree with the oracle D of
benchmarks/sparse_tree_quick.py, the exact standard error of the least-squares prefix count at the
true quantiles for both trees ("noise sd": the sparse tree's from the adjoint of its two passes,
the dense tree's from the closed form ``estimation.least_squares.range_variance``; a mean absolute
error of about 0.8 sd), the count tree's height H, the counts' noise scale, the number of cells
and of counted ranges, and the mean absolute error of the sparse tree's counts of 100 random
ranges between data points (as in sparse_tree.py). Same seeds as sparse_tree_quick.py.

    PYTHONPATH=src python3 benchmarks/sparse_tree_diagnose.py N REPEATS [JSON kwargs] [--verbose]

``--verbose`` also prints the per-trial errors and heights.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sparse_tree import DATASETS, EPS, QS, dataset, dense, np, rank_error, ranges  # noqa: E402

import dptree  # noqa: E402
from dptree.sparsetree.estimates import MeasuredTree  # noqa: E402
from dptree.sparsetree.mechanism import range_counts  # noqa: E402


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    verbose = "--verbose" in sys.argv
    n, reps = int(args[0]), int(args[1])
    kw = json.loads(args[2]) if len(args) > 2 else {}
    oracle = {"lognormal latencies": 2**20, "pareto sizes": 2**20, "64-bit ids": 2**10 if n <= 10**5 else 2**12,
              "ns timestamps": 2**16 if n <= 10**5 else 2**20}
    for name in DATASETS:
        res: dict[str, list[float]] = {k: [] for k in ("sparse", "ls", "exact", "dense", "sd", "dense sd", "H", "scale",
                                                       "cells", "counted", "range")}
        for r in range(reps):
            x = dataset(name, n, 100 + r)
            sx = np.sort(x)
            s = dptree.sparse_range_tree(x, epsilon=EPS, rng=r, **kw)
            res["sparse"].append(rank_error(sx, s.quantile(QS)))
            qv = sx[np.minimum((QS * n).astype(np.int64), n - 1)]
            res["sd"].append(float(np.mean(s.stderr(sx[0], qv))))
            s._tree._smoothed, s._tree._monotone = s._tree.cell_est, None  # diagnostic: the least-squares read-off
            res["ls"].append(rank_error(sx, s.quantile(QS)))
            lo, hi, truth = ranges(sx, r)
            res["range"].append(float(np.mean(np.abs(s.count(lo, hi) - truth))))
            res["H"].append(s.depth)
            res["scale"].append(float(s.plan.count_scale(s.depth)))
            res["counted"].append(s.measured_nodes)
            keys = s.domain.offsets(x)
            keys.sort()
            for nd in s.nodes:  # diagnostic only: the exact counts of the same ranges
                nd.noisy = range_counts(keys, nd.start, nd.last)
            s._tree = MeasuredTree(s.nodes, [1.0] * len(s.nodes), s.domain.size)
            s._tree._smoothed = s._tree.cell_est  # exact counts: nothing to smooth
            res["exact"].append(rank_error(sx, s.quantile(QS)))
            res["cells"].append(s._tree.cell_est.size)
            d = dense(x, oracle[name], r)
            res["dense"].append(rank_error(sx, d.quantile(QS)))
            res["dense sd"].append(float(np.mean(d.stderr(sx[0], qv))))
        m = {k: float(np.mean(v)) for k, v in res.items()}
        print(f"{name[:12]:12s} n={n} sparse {m['sparse']:6.2f} LS read-off {m['ls']:6.2f} exact counts {m['exact']:6.2f} "
              f"dense {m['dense']:6.2f} ratio {m['sparse'] / m['dense']:5.3f} noise sd {m['sd']:5.1f} dense sd "
              f"{m['dense sd']:5.1f} H {m['H']:.1f} scale {m['scale']:.2f} cells {m['cells']:.0f} "
              f"counted {m['counted']:.0f} range error {m['range']:.1f}", flush=True)
        if verbose:
            print("  sparse", np.round(res["sparse"], 1).tolist(), "\n  H", [int(h) for h in res["H"]])


if __name__ == "__main__":
    main()
