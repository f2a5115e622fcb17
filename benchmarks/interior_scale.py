"""Interior points and medians at scale, as ratios to baselines
measured in the same run:

* ``interior_point`` (exponential mechanism) on 10^6 uint64 values over [0, 2^64) against
  ``np.sort`` of the same values (target <= 3x);
* ``dptree.median``, ``dptree.quantile`` (q = 0.9) and ``dptree.interior_point`` (exponential) of
  a float column of a Parquet file -- the staged engine path, :mod:`dptree.interior.staged` -- and
  ``dptree.quantiles`` (approx with 3 and with 19 levels: every call staged on its piece,
  :mod:`dptree.quantiles.staged`) --
  against a range-tree release of the same column from the same file (``dptree.range_tree(path, column=..., lower=, upper=, width=)``;
  target <= 2x), each in a fresh process, with its peak RSS (``ru_maxrss``).

Rounds are interleaved (baseline, dptree, baseline, ...) and the median of each is reported.

Usage (``--quick``: 5*10^6 rows; the default file has 5*10^7 rows, ~400 MB):

    PYTHONPATH=src python3 benchmarks/interior_scale.py --quick
    PYTHONPATH=src python3 benchmarks/interior_scale.py --rows 50000000 --rounds 2
    PYTHONPATH=src python3 benchmarks/interior_scale.py --rows 10000000 --no-memory --tasks treelog,heavypaths
    PYTHONPATH=src python3 benchmarks/interior_scale.py --rows 50000000 --rounds 3 --no-memory --tasks floor,treelog

``floor`` is not a dptree operation: it times what any TreeLog that keeps the column in numpy must do
at least (read it, key it, select the two trimming ranks without sorting), to show how far such a
design could get against the range tree.
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
sys.path.insert(0, str(ROOT / "src"))

LOWER, UPPER, WIDTH = -8.0, 8.0, 2.0**-10  # 16384 leaves for the range tree


def _child(task: str, path: str) -> None:
    """One timed operation in this (fresh) process; prints JSON with its time and peak RSS."""
    import dptree

    t0 = time.perf_counter()
    if task == "range_tree":
        dptree.range_tree(path, column="x", lower=LOWER, upper=UPPER, width=WIDTH, epsilon=1.0)
    elif task == "quantile":
        dptree.quantile(path, 0.9, column="x", lower=LOWER, upper=UPPER, epsilon=1.0)
    elif task == "interior_point":
        dptree.interior_point(path, column="x", lower=LOWER, upper=UPPER, epsilon=1.0, method="exponential")
    elif task == "quantiles":
        dptree.quantiles(path, [0.1, 0.5, 0.9], column="x", lower=LOWER, upper=UPPER, epsilon=1.0, method="approx")
    elif task in ("treelog", "heavypaths"):
        import pyarrow.parquet as pq

        n = pq.ParquetFile(path).metadata.num_rows  # the benchmark's declared public size
        dptree.interior_point(path, column="x", lower=LOWER, upper=UPPER, epsilon=1.0, delta=1e-6, method=task, n=n,
                              run_anyway=True)
    elif task == "floor":  # what any in-memory TreeLog must do at least: read, key, select ranks t and n - t
        import duckdb
        import numpy as np

        from dptree.data.engines.duckdb_sql import arrow_table
        from dptree.data.sorting import float_keys

        con = duckdb.connect()
        col = arrow_table(con.sql(f"SELECT x FROM read_parquet('{path}')")).column(0)
        keys = float_keys(np.asarray(col.to_numpy()))
        t = keys.size // 14  # TreeLog's t is a fixed share of the declared n here (694,663 of 10^7)
        np.partition(keys, [t, keys.size - t - 1])
    elif task == "quantiles19":
        dptree.quantiles(path, [i / 20 for i in range(1, 20)], column="x", lower=LOWER, upper=UPPER, epsilon=1.0,
                         method="approx")
    else:
        dptree.median(path, column="x", lower=LOWER, upper=UPPER, epsilon=1.0)
    dt = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # MiB (Linux reports KiB)
    print(json.dumps({"seconds": dt, "rss_mib": rss}))


def _run_child(task: str, path: str) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    out = subprocess.run([sys.executable, __file__, "--child", task, path], capture_output=True, text=True,
                         env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def in_memory(rounds: int) -> list[str]:
    import numpy as np

    from dptree import interior_point

    x = np.random.default_rng(0).integers(0, 2**64 - 1, 10**6, dtype=np.uint64, endpoint=True)
    base, ours = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        np.sort(x)
        base.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        interior_point(x, lower=0, upper=2**64 - 1, epsilon=1.0, method="exponential")
        ours.append(time.perf_counter() - t0)
    b, o = statistics.median(base), statistics.median(ours)
    return ["| interior_point, exponential, 10^6 uint64 over [0, 2^64) | np.sort | "
            f"{b * 1e3:.0f} ms | {o * 1e3:.0f} ms | {o / b:.2f}x | - |"]


SHOWN = {
    "median": "dptree.median",
    "quantile": "dptree.quantile(q=0.9)",
    "interior_point": "dptree.interior_point (exponential)",
    "quantiles": "dptree.quantiles(0.1, 0.5, 0.9; approx)",
    "quantiles19": "dptree.quantiles(0.05, 0.1, .., 0.95; approx)",
    "treelog": "dptree.interior_point (treelog, n declared)",
    "heavypaths": "dptree.interior_point (heavypaths, n declared)",
    "floor": "floor of an unsorted TreeLog: read into numpy, keys, one selection of ranks t and n - t",
}
STAGED = ("median", "quantile", "interior_point", "quantiles", "quantiles19")


def from_file(rows: int, rounds: int, tasks: tuple[str, ...] = STAGED) -> list[str]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory(prefix="dptree-interior-scale-") as tmp:
        path = str(Path(tmp) / "x.parquet")
        gen = np.random.default_rng(1)
        with pq.ParquetWriter(path, pa.schema([("x", pa.float64())])) as w:
            for start in range(0, rows, 5_000_000):  # written in chunks: bounded memory here too
                w.write_table(pa.table({"x": gen.normal(0, 1, min(5_000_000, rows - start))}))
        runs: dict[str, list[dict[str, float]]] = {t: [] for t in ("range_tree",) + tasks}
        for _ in range(rounds):  # interleaved: baseline, then each operation, every round
            for t in runs:
                runs[t].append(_run_child(t, path))
        b = statistics.median(r["seconds"] for r in runs["range_tree"])
        rb = max(r["rss_mib"] for r in runs["range_tree"])
        lines = []
        for t in tasks:
            shown = SHOWN[t]
            o = statistics.median(r["seconds"] for r in runs[t])
            ro = max(r["rss_mib"] for r in runs[t])
            lines.append(f"| {shown}, {rows:.0e} float64 rows from Parquet | range_tree of the same file "
                         f"(width 2^-10, 16384 leaves) | {b:.2f} s ({rb:.0f} MiB) | {o:.2f} s ({ro:.0f} MiB) | "
                         f"{o / b:.2f}x | {ro / rb:.2f}x |")
        return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5*10^6 rows in the file benchmark")
    ap.add_argument("--rows", type=int, default=50_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tasks", default=",".join(STAGED),
                    help=f"comma-separated file tasks (of {', '.join(SHOWN)}); default: the staged ones")
    ap.add_argument("--no-memory", action="store_true", help="skip the in-memory uint64 row")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return
    rows = 5_000_000 if args.quick else args.rows
    print("| operation | baseline | baseline time | dptree time | ratio | peak RSS ratio |")
    print("|---|---|---|---|---|---|")
    tasks = tuple(t for t in args.tasks.split(",") if t)
    unknown = [t for t in tasks if t not in SHOWN]
    if unknown:
        ap.error(f"unknown task(s) {unknown}; choose from {', '.join(SHOWN)}")
    first = [] if args.no_memory else in_memory(max(args.rounds, 3))
    for line in first + from_file(rows, args.rounds, tasks):
        print(line, flush=True)


if __name__ == "__main__":
    main()
