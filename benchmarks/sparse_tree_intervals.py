"""Coverage and width of ``SparseRangeTree.quantile_ci`` (docs/notes/sparse_tree.md, "What it answers"):
one release (epsilon = 1, defaults) on each of ``datasets`` fresh data sets of ``benchmarks/sparse_tree.py``
(seeds 100, 101, ...), levels 0.05 0.25 0.5 0.75 0.95. Prints per level the coverage of the true
quantile (the ceil(q n)-th record), the mean interval width in ranks (records inside it) and the mean
rank error of the point estimate.

    PYTHONPATH=src python3 benchmarks/sparse_tree_intervals.py "64-bit ids" 10000 40 [--grid 256]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from sparse_tree import DATASETS, dataset, dptree  # noqa: E402

QS = np.array([0.05, 0.25, 0.5, 0.75, 0.95])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name", choices=DATASETS)
    ap.add_argument("n", type=int)
    ap.add_argument("datasets", type=int)
    ap.add_argument("--grid", type=int, default=256)
    a = ap.parse_args()
    hit = np.zeros(QS.size)
    width, err = [], []
    for r in range(a.datasets):
        sx = np.sort(np.asarray(dataset(a.name, a.n, 100 + r)))
        rel = dptree.sparse_range_tree(sx, epsilon=1.0, rng=r)
        lo, hi = rel.quantile_ci(QS, grid=a.grid)
        true = sx[np.ceil(QS * a.n).astype(int) - 1]
        hit += (lo <= true) & (true <= hi)
        width.append(np.searchsorted(sx, hi, "right") - np.searchsorted(sx, lo, "left"))
        err.append(np.abs(np.searchsorted(sx, rel.quantile(QS), "right") - QS * a.n))
    print(f"{a.name}, n = {a.n}, {a.datasets} data sets, grid {a.grid}: coverage "
          + " ".join(f"{h:.3f}" for h in hit / a.datasets)
          + "; width in ranks " + " ".join(f"{w:.0f}" for w in np.mean(width, axis=0))
          + "; rank error " + " ".join(f"{e:.1f}" for e in np.mean(err, axis=0)))


if __name__ == "__main__":
    main()
