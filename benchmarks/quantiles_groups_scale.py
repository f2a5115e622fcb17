"""Percentile tables by group from a Parquet file: ``dptree.quantiles(path, qs, by=, groups=)``
against the ungrouped call and a range-tree release of the same column, each in a fresh process,
rounds interleaved, medians of the rounds (ratios to the range tree measured in the same run).

    PYTHONPATH=src python3 benchmarks/quantiles_groups_scale.py --rows 10000000 --groups 4 --rounds 3

The file holds float64 normal(0, 1) values ``x`` and a string group column ``g`` drawn uniformly
from ``--groups`` names; every call reads ``x`` over [-8, 8] at epsilon = 1, method approx, levels
0.1, 0.5, 0.9 (the range tree: width 2^-10).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fresh_process import report, rounds, table  # noqa: E402


def _child(task: str, path: str, n_groups: int) -> None:
    import dptree

    groups = [f"g{i}" for i in range(n_groups)]
    if task == "range_tree":
        report(lambda: dptree.range_tree(path, column="x", lower=-8.0, upper=8.0, width=2.0**-10, epsilon=1.0))
    else:
        kw = {"by": "g", "groups": groups} if task == "by_group" else {}
        report(lambda: dptree.quantiles(path, [0.1, 0.5, 0.9], column="x", lower=-8.0, upper=8.0, epsilon=1.0,
                                        method="approx", **kw))  # type: ignore[arg-type]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child[0], args.child[1], int(args.child[2]))
        return
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory(prefix="dptree-groups-scale-") as tmp:
        path = str(Path(tmp) / "x.parquet")
        g = np.random.default_rng(1)
        names = np.array([f"g{i}" for i in range(args.groups)])
        pq.write_table(pa.table({"x": g.normal(0, 1, args.rows), "g": names[g.integers(0, args.groups, args.rows)]}),
                       path)
        runs = rounds(__file__, ("range_tree", "ungrouped", "by_group"), [path, str(args.groups)], args.rounds)
    print(f"# {args.rows:,} rows, {args.groups} groups, {args.rounds} rounds\n")
    print(table(runs, "range_tree", "the range tree"))


if __name__ == "__main__":
    main()
