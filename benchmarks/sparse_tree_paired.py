"""One sparse-vs-dense cell of issue 15 on a chosen seed set, with the paired difference: the
quantile rank error of ``sparse_range_tree`` against the dense tree at the oracle D of
docs/notes/sparse_tree.md (the data sets, levels and epsilon of benchmarks/sparse_tree.py), data set r
and both releases seeded ``offset + r``; prints the ratio of the means and sparse - 1.5 x dense
with its standard error (negative: inside the 1.5x target).

    PYTHONPATH=src python3 benchmarks/sparse_tree_paired.py "64-bit ids" 1000000 20000 120
"""
import sys

import numpy as np

sys.path.insert(0, __import__("os").path.dirname(__file__))
from sparse_tree import DATASETS, EPS, QS, dataset, dense, dptree, rank_error  # noqa: E402

name, n, offset, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
if name not in DATASETS:
    sys.exit(f"unknown data set {name!r}; one of {', '.join(DATASETS)}")
ORACLE = {"lognormal latencies": 2**20, "pareto sizes": 2**20, "64-bit ids": 2**10 if n <= 10**5 else 2**12,
          "ns timestamps": 2**16 if n <= 10**5 else 2**20}  # as benchmarks/sparse_tree_quick.py
s_err, d_err = [], []
for r in range(offset, offset + reps):
    x = dataset(name, n, r)
    sx = np.sort(x)
    s_err.append(rank_error(sx, dptree.sparse_range_tree(x, epsilon=EPS, rng=r).quantile(QS)))
    d_err.append(rank_error(sx, dense(x, ORACLE[name], r).quantile(QS)))
s, d = np.array(s_err), np.array(d_err)
diff = s - 1.5 * d
print(f"{name}, n = {n}, seeds {offset}..{offset + reps - 1}: sparse {s.mean():.2f} dense {d.mean():.2f} "
      f"ratio {s.mean() / d.mean():.3f}; sparse - 1.5 dense = {diff.mean():.2f} +- {diff.std(ddof=1) / np.sqrt(reps):.2f}")
