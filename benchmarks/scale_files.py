"""A release from a Parquet file through DuckDB (and Spark) against the
engine's own GROUP BY count of the same bucket expression (``SELECT least(greatest(v, 0), D-1) AS
bucket, count(*) ... GROUP BY bucket``, DuckDB's default settings), in the same run; peak memory
of each. DuckDB uses all cores (its default ``threads``; printed).

    PYTHONPATH=src python3 benchmarks/scale_files.py --rows 100000000          # DuckDB (the 10^8-row target)
    PYTHONPATH=src python3 benchmarks/scale_files.py --rows 10000000 --bounded # plus user_id bounding, k = 5
    PYTHONPATH=src python3 benchmarks/scale_files.py --rows 10000000 --spark   # plus local[2] Spark

``duckdb-histogram`` is the exact leaf histogram alone; ``duckdb-release`` adds planning, noise and
least squares (a fixed cost of the 2^20-leaf tree, independent of the rows).

Every measurement runs in a fresh process (peak RSS = that process's ru_maxrss, plus the peak RSS
of its live children, i.e. the Spark JVM); the table shows
the median of --repeat runs, alternating the contenders. The data: int64 values uniform on
[0, 2^20) (D = 2^20 leaves) and user ids uniform on [0, rows/10), written once by DuckDB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

D = 1 << 20


def make_data(path: Path, rows: int) -> None:
    import duckdb

    if path.exists():
        return
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT CAST(floor(random() * {D}) AS BIGINT) AS v, "
        f"CAST(floor(random() * {max(rows // 10, 1)}) AS BIGINT) AS u FROM range({rows})) "
        f"TO '{path}' (FORMAT parquet)"
    )


def measure(what: str, path: str) -> dict[str, float]:
    import duckdb  # noqa: F401  (imports outside the timed part, for every contender)

    if what.startswith("duckdb-"):
        import dptree.data.engines.duckdb  # noqa: F401
        import dptree.data.histograms  # noqa: F401
        import dptree.rangetree.release  # noqa: F401
    t0 = time.perf_counter()
    if what == "duckdb-groupby":
        import duckdb

        con = duckdb.connect()
        out = con.execute(f"SELECT least(greatest(v, 0), {D - 1}) AS bucket, count(*) AS n "
                          f"FROM read_parquet('{path}') GROUP BY bucket").fetchnumpy()
        assert len(out["n"]) > 0
    elif what == "duckdb-histogram":
        from dptree.data.histograms import leaf_histogram
        from dptree.rangetree.release import plan_range_tree

        plan = plan_range_tree(lower=0, upper=D - 1, epsilon=1.0)
        t0 = time.perf_counter()
        leaf_histogram(path, plan, column="v")
    elif what == "duckdb-bounded-histogram":
        from dptree.data.histograms import leaf_histogram
        from dptree.rangetree.release import plan_range_tree

        plan = plan_range_tree(lower=0, upper=D - 1, epsilon=1.0, max_contributions=5)
        t0 = time.perf_counter()
        leaf_histogram(path, plan, column="v", user_id="u")
    elif what == "duckdb-release":
        from dptree.data.histograms import leaf_histogram
        from dptree.rangetree.release import plan_range_tree

        plan = plan_range_tree(lower=0, upper=D - 1, epsilon=1.0)
        hist = leaf_histogram(path, plan, column="v")
        plan.release(hist)
    elif what == "duckdb-bounded-release":
        from dptree.data.histograms import leaf_histogram
        from dptree.rangetree.release import plan_range_tree

        plan = plan_range_tree(lower=0, upper=D - 1, epsilon=1.0, max_contributions=5)
        plan.release(leaf_histogram(path, plan, column="v", user_id="u"))
    elif what.startswith("spark"):
        from pyspark.sql import SparkSession

        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        df = spark.read.parquet(path)
        t0 = time.perf_counter()  # session start-up excluded for both Spark contenders
        if what == "spark-groupby":
            rows = df.groupBy("v").count().collect()
            assert rows
        else:
            from dptree.data.histograms import leaf_histogram
            from dptree.rangetree.release import plan_range_tree

            plan = plan_range_tree(lower=0, upper=D - 1, epsilon=1.0)
            plan.release(leaf_histogram(df, plan, column="v"))
    else:
        raise SystemExit(f"unknown measurement {what}")
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # MiB (Linux: KiB)
    peak += _children_peak_mib()  # Spark: the JVM started by this process
    return {"seconds": seconds, "peak_mib": peak}


def _children_peak_mib() -> float:
    """Sum of the peak RSS (VmHWM) of the live child processes (the Spark JVM), from /proc."""
    me, total = os.getpid(), 0.0
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            status = (d / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("PPid", "").strip() == str(me) and "VmHWM" in fields:
            total += float(fields["VmHWM"].split()[0]) / 1024
    return total


def run_child(what: str, path: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--measure", what, "--path", path],
                         check=True, capture_output=True, text=True, env=os.environ)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=float, default=1e8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--spark", action="store_true")
    ap.add_argument("--bounded", action="store_true", help="also time the user-bounded DuckDB release")
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--measure")
    ap.add_argument("--path")
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.path)))
        return
    rows = int(args.rows)
    path = Path(args.dir) / f"dptree-bench-{rows}.parquet"
    t = time.perf_counter()
    make_data(path, rows)
    size = path.stat().st_size / 2**20
    print(f"data: {path} ({rows:,} rows, {size:,.0f} MiB, ready in {time.perf_counter() - t:.0f} s)")
    import duckdb

    threads = duckdb.connect().execute("SELECT current_setting('threads')").fetchall()[0][0]
    print(f"DuckDB {duckdb.__version__}, threads = {threads} ({os.cpu_count()} cores), "
          f"load {os.getloadavg()[0]:.1f}")
    pairs = [("duckdb-groupby", "duckdb-histogram"), ("duckdb-groupby", "duckdb-release")]
    if args.bounded:
        pairs += [("duckdb-groupby", "duckdb-bounded-histogram"), ("duckdb-groupby", "duckdb-bounded-release")]
    if args.spark:
        pairs.append(("spark-groupby", "spark-release"))
    print("\n| rows | baseline | dptree | baseline s | dptree s | ratio | baseline peak MiB | dptree peak MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for base, ours in pairs:
        b_runs, o_runs = [], []
        for _ in range(args.repeat):
            b_runs.append(run_child(base, str(path)))
            o_runs.append(run_child(ours, str(path)))
        bs = statistics.median(r["seconds"] for r in b_runs)
        os_ = statistics.median(r["seconds"] for r in o_runs)
        ratio = statistics.median(o["seconds"] / b["seconds"] for o, b in zip(o_runs, b_runs))
        bm = max(r["peak_mib"] for r in b_runs)
        om = max(r["peak_mib"] for r in o_runs)
        print(f"| {rows:.0e} | {base} | {ours} | {bs:.2f} | {os_:.2f} | {ratio:.2f} | {bm:,.0f} | {om:,.0f} |")


if __name__ == "__main__":
    main()
