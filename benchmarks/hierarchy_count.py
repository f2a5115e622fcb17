"""Speed of hierarchy counting against a pandas groupby of the same columns
(target: <= 1.2x ``df.groupby(levels, observed=True).size()``).

A 3-level hierarchy with L leaves (fan-outs 10, 10, L/100; level-3 labels repeat under every
level-2 node, so the leaf label alone does not name the leaf); n rows drawn uniformly over the
leaves, as a pandas DataFrame of object (str) columns. Timed in interleaved rounds, same data:

* ``groupby``: ``df.groupby(levels, observed=True).size()`` (the baseline);
* ``leaf_counts``: :func:`dptree.hierarchy.counting.leaf_counts` (exact counts per leaf);
* ``release``: the whole ``hierarchy_counts(df, h, epsilon=1.0)`` (counting, noise, least squares).

Ratios are medians over rounds of (contender / groupby in the same round).

    PYTHONPATH=src python3 benchmarks/hierarchy_count.py [--rows 1e6 1e7] [--leaves 1000 1000000] [--reps 3]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from _common import timed  # noqa: E402

from dptree.hierarchy.api import hierarchy_counts  # noqa: E402
from dptree.hierarchy.counting import leaf_counts  # noqa: E402
from dptree.hierarchy.structure import Hierarchy  # noqa: E402

LEVELS = ["l1", "l2", "l3"]


def leaf_labels(leaves: int) -> list[np.ndarray]:
    """The three label columns of the leaves (one row per leaf)."""
    f3 = max(leaves // 100, 1)
    i = np.arange(10 * 10 * f3)
    return [np.array([f"{p}{v}" for v in vals], dtype=object)
            for p, vals in (("A", i // (10 * f3)), ("B", (i // f3) % 10), ("C", i % f3))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=float, nargs="+", default=[1e6, 1e7])
    ap.add_argument("--leaves", type=int, nargs="+", default=[1000, 1_000_000])
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    print(f"# hierarchy counting vs pandas groupby; {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}; "
          f"pandas {pd.__version__}, numpy {np.__version__}; medians of {args.reps} interleaved rounds\n")
    print("| rows | leaves | groupby s | leaf_counts s | release s | leaf_counts / groupby | release / groupby |")
    print("|---|---|---|---|---|---|---|")
    for leaves in args.leaves:
        cols = leaf_labels(leaves)
        h = Hierarchy.from_frame(pd.DataFrame(dict(zip(LEVELS, cols))), LEVELS)
        for rows in (int(r) for r in args.rows):
            pick = np.random.default_rng(rows + leaves).integers(0, cols[0].size, rows)
            df = pd.DataFrame({lev: c[pick] for lev, c in zip(LEVELS, cols)})
            x = leaf_counts(df, h)
            assert int(sum(a.sum() for a in x)) == rows
            fns: dict[str, Callable[[], Any]] = {
                "groupby": lambda: df.groupby(LEVELS, observed=True).size(),
                "leaf_counts": lambda: leaf_counts(df, h),
                "release": lambda: hierarchy_counts(df, h, epsilon=1.0),
            }
            times: dict[str, list[float]] = {k: [] for k in fns}
            for _ in range(args.reps):
                for k, f in fns.items():
                    times[k].append(timed(f))
            med = {k: float(np.median(v)) for k, v in times.items()}
            base = np.array(times["groupby"])
            r_c = float(np.median(np.array(times["leaf_counts"]) / base))
            r_r = float(np.median(np.array(times["release"]) / base))
            print(f"| {rows:.0e} | {leaves:,d} | {med['groupby']:.3f} | {med['leaf_counts']:.3f} | "
                  f"{med['release']:.3f} | {r_c:.2f}x | {r_r:.2f}x |", flush=True)
            del df


if __name__ == "__main__":
    main()
