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
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _child(task: str, path: str, n_groups: int) -> None:
    import dptree

    groups = [f"g{i}" for i in range(n_groups)]
    t0 = time.perf_counter()
    if task == "range_tree":
        dptree.range_tree(path, column="x", lower=-8.0, upper=8.0, width=2.0**-10, epsilon=1.0)
    else:
        kw = {"by": "g", "groups": groups} if task == "by_group" else {}
        dptree.quantiles(path, [0.1, 0.5, 0.9], column="x", lower=-8.0, upper=8.0, epsilon=1.0, method="approx",
                         **kw)  # type: ignore[arg-type]
    print(json.dumps({"seconds": time.perf_counter() - t0,
                      "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


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

    tasks = ("range_tree", "ungrouped", "by_group")
    with tempfile.TemporaryDirectory(prefix="dptree-groups-scale-") as tmp:
        path = str(Path(tmp) / "x.parquet")
        g = np.random.default_rng(1)
        names = np.array([f"g{i}" for i in range(args.groups)])
        pq.write_table(pa.table({"x": g.normal(0, 1, args.rows), "g": names[g.integers(0, args.groups, args.rows)]}),
                       path)
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        runs: dict[str, list[dict[str, float]]] = {t: [] for t in tasks}
        for _ in range(args.rounds):
            for t in tasks:
                out = subprocess.run([sys.executable, __file__, "--child", t, path, str(args.groups)],
                                     capture_output=True, text=True, env=env, check=True)
                runs[t].append(json.loads(out.stdout.strip().splitlines()[-1]))
    base = statistics.median(r["seconds"] for r in runs["range_tree"])
    print(f"# {args.rows:,} rows, {args.groups} groups, {args.rounds} rounds\n")
    print("| operation | time | ratio to the range tree | peak RSS |\n|---|---|---|---|")
    for t in tasks:
        sec = statistics.median(r["seconds"] for r in runs[t])
        rss = max(r["rss_mib"] for r in runs[t])
        print(f"| {t} | {sec:.2f} s | {sec / base:.2f}x | {rss:.0f} MiB |")


if __name__ == "__main__":
    main()
