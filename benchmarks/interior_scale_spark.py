"""The median and 19 approx quantiles of a Spark DataFrame: the staged path
(SparkOrderedCounts: a bucket histogram, the rank windows and the ranks of proposed points,
aggregates only) against collecting every distinct value and its count to the driver (the
value counts of ``SparkEngine.counts``) and a range-tree release of the same column, in one
Spark session (local mode), rounds interleaved, medians reported.

Per call: wall time; the peak of Python's heap (``tracemalloc``: what the driver process holds of
the collected values); and the peak of the JVM heap (local mode: driver and executors are one
JVM; the sum of the heap pools' peaks after a GC and a reset, an upper bound of the concurrent
peak). The data: ``--rows`` float64 normal(0, 2) values (all distinct), written to Parquet and
read by ``spark.read.parquet``.

Usage:

    PYTHONPATH=src nice python3 benchmarks/interior_scale_spark.py --rows 1000000 --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import tracemalloc
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

LOWER, UPPER, WIDTH = -8.0, 8.0, 2.0**-10  # 16384 leaves for the range tree


def _session(memory: str) -> Any:
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("dptree-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", memory).config("spark.sql.shuffle.partitions", "4").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _jvm_heap_peak(spark: Any, reset: bool) -> int:
    jvm = spark.sparkContext._jvm
    if reset:
        jvm.java.lang.System.gc()
    total = 0
    for pool in jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans():
        if pool.getType().toString() == "Heap memory":
            if reset:
                pool.resetPeakUsage()
            else:
                total += pool.getPeakUsage().getUsed()
    return total


def _measure(spark: Any, run: Callable[[], Any]) -> tuple[float, float, float]:
    _jvm_heap_peak(spark, True)
    tracemalloc.start()
    t0 = time.perf_counter()
    run()
    dt = time.perf_counter() - t0
    py_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return dt, py_peak / 2**20, _jvm_heap_peak(spark, False) / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10**6)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--driver-memory", default="2g")
    args = ap.parse_args()

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    import dptree
    from dptree.data.engines.base import Engine
    from dptree.data.engines.spark import SparkEngine

    spark = _session(args.driver_memory)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "x.parquet")
        x = np.random.default_rng(0).normal(0, 2, args.rows)
        pq.write_table(pa.table({"x": x}), path)
        del x
        df = spark.read.parquet(path)
        staged = SparkEngine.ordered_counts

        def median_staged() -> Any:
            SparkEngine.ordered_counts = staged  # type: ignore[method-assign]
            return dptree.median(df, column="x", lower=LOWER, upper=UPPER, epsilon=1.0)

        def median_collect() -> Any:  # the path before SparkOrderedCounts: no session, value_counts
            SparkEngine.ordered_counts = lambda self, *a, **k: nullcontext(None)  # type: ignore
            try:
                return dptree.median(df, column="x", lower=LOWER, upper=UPPER, epsilon=1.0)
            finally:
                SparkEngine.ordered_counts = staged  # type: ignore[method-assign]

        qs = [i / 20 for i in range(1, 20)]

        def quantiles_staged() -> Any:
            return dptree.quantiles(df, qs, column="x", lower=LOWER, upper=UPPER, epsilon=1.0, method="approx")

        def quantiles_collect() -> Any:  # the same without the staged session: value_counts
            SparkEngine.ordered_counts = lambda self, *a, **k: nullcontext(None)  # type: ignore
            try:
                return quantiles_staged()
            finally:
                SparkEngine.ordered_counts = staged  # type: ignore[method-assign]

        def range_tree() -> Any:
            return dptree.range_tree(df, column="x", lower=LOWER, upper=UPPER, width=WIDTH, epsilon=1.0)

        assert Engine.ordered_counts is not staged
        ops = {"range_tree (reference)": range_tree, "median, value_counts path (before)": median_collect,
               "median, staged path": median_staged,
               "quantiles 0.05 .. 0.95 (19 levels, approx), value_counts path": quantiles_collect,
               "quantiles 0.05 .. 0.95 (19 levels, approx), staged path": quantiles_staged}
        for run in ops.values():  # warm-up: JIT, code generation, the file in the page cache
            run()
        got: dict[str, list[tuple[float, float, float]]] = {k: [] for k in ops}
        for _ in range(args.rounds):
            for name, run in ops.items():
                got[name].append(_measure(spark, run))
    print(f"rows {args.rows}, rounds {args.rounds}, local[2], driver memory {args.driver_memory}; medians")
    print("| operation | time | Python heap peak | JVM heap peak |")
    print("|---|---|---|---|")
    for name, rows in got.items():
        t, py, jv = (statistics.median(r[i] for r in rows) for i in range(3))
        print(f"| {name} | {t:.2f} s | {py:.1f} MiB | {jv:.0f} MiB |")


if __name__ == "__main__":
    main()
