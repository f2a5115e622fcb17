"""A sparse range tree read from a Parquet file against a dense range tree of the same column, each
call in a fresh process, rounds interleaved, medians (ratios to the dense tree of the same run).

    PYTHONPATH=src python3 benchmarks/sparse_from_files.py --rows 10000000 --rounds 3

The file holds log-normal(8, 1.5) float64 values clipped to [0, 10^6]; the dense tree reads them
over [0, 10^6] with 2^20 buckets; the sparse tree over every float64 key (no bounds, no width);
``sparse_numpy`` is the same sparse tree from the column already read by pyarrow (the in-memory
path), for comparison.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fresh_process import report, rounds, table  # noqa: E402

TASKS = ("dense", "sparse_file", "sparse_numpy")


def _child(task: str, path: str) -> None:
    import dptree

    if task == "dense":
        report(lambda: dptree.range_tree(path, column="x", lower=0.0, upper=1e6, width=1e6 / 2**20, epsilon=1.0))
    elif task == "sparse_file":
        report(lambda: dptree.sparse_range_tree(path, column="x", epsilon=1.0))
    else:
        import pyarrow.parquet as pq

        report(lambda: dptree.sparse_range_tree(pq.read_table(path).column("x").to_numpy(), epsilon=1.0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory(prefix="dptree-sparse-files-") as tmp:
        path = str(Path(tmp) / "x.parquet")
        pq.write_table(pa.table({"x": np.random.default_rng(1).lognormal(8, 1.5, args.rows).clip(0, 1e6)}), path)
        runs = rounds(__file__, TASKS, [path], args.rounds)
    print(f"# {args.rows:,} rows, {args.rounds} rounds\n")
    print(table(runs, "dense", "the dense tree"))


if __name__ == "__main__":
    main()
