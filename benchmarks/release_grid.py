"""Release cost per tree node on a grid of D and n, as ratios to np.bincount.

Run from the repository root (``benchmarks/speed.py --grid`` runs the same):

    PYTHONPATH=src python3 benchmarks/release_grid.py                    # D = 2^16, 2^20, 2^24; n = 1e6, 1e7
    PYTHONPATH=src python3 benchmarks/release_grid.py --big              # adds D = 2^26 and n = 1e8 (memory allowing)
    PYTHONPATH=src python3 benchmarks/release_grid.py --log2-domains 20 --ns 1e7 --reps 5

Every round runs, on the same data and in this order, ``np.bincount(x, minlength=D)`` (the
baseline), a whole private release ``dptree.range_tree(x, lower=0, upper=D-1, epsilon=1,
branching=16)`` and its stages one by one, with the calls ``range_tree`` makes: histogram (the data
stage: clamping and counting), node counts per level, noise (:func:`dptree.privacy.measurement.measure`,
the real exact discrete Laplace from the OS CSPRNG), least squares (the fast regular passes), prefix
sums (``cum``); "other" is the whole release minus its measured stages in the same round. The reference
least squares (``tests/unit/estimation/reference_least_squares.py``) is timed in
the same rounds. Ratios are medians of per-round ratios to that round's bincount. "beyond the
histogram" is (release - histogram) per tree node; "without noise" also subtracts the noise
stage. "plan" is the public planning of the release
(validation, layout, calibration), "other" what is left (argument checks, the release object).

Times are this process's CPU time (``--wall`` for wall time): on a shared machine it is far less
disturbed by the other users than wall time, and every step runs in this one thread.

Peak memory: tracemalloc's peak of new allocations of each step, per tree node (one process;
the input and the measurements are already resident).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "unit" / "estimation"))

import reference_least_squares as old_ls  # noqa: E402
from _common import table

import dptree  # noqa: E402
from dptree import noise as _noise  # noqa: E402
from dptree.data.histograms import leaf_histogram  # noqa: E402
from dptree.estimation.least_squares import regular_passes  # noqa: E402
from dptree.privacy.measurement import measure  # noqa: E402
from dptree.rangetree.release import plan_range_tree  # noqa: E402

EPS = 1.0
STAGES = ("histogram", "node counts", "noise", "least squares", "prefix sums")


def old_estimates(plan: Any, meas: list[np.ndarray | None]) -> np.ndarray:
    """The reference estimator (reference_least_squares.py): float copies of every level, its two
    passes, the prefix sums."""
    sizes = plan.layout.level_sizes
    y = [np.zeros(n) if m is None else m.astype(np.float64) for m, n in zip(meas, sizes)]
    var = [float(v) for v in plan.level_variance]
    leaf = old_ls.consistent_estimates(y, var, [None] * len(y), fanouts=plan.layout.fanouts).x[-1]
    return np.concatenate([[0.0], np.cumsum(leaf)])


def prefix_sums(leaf: np.ndarray) -> np.ndarray:
    cum = np.empty(leaf.size + 1)
    cum[0] = 0.0
    np.cumsum(leaf, out=cum[1:])
    return cum


#: the clock: this process's CPU time (default; less disturbed by other users of a shared machine,
#: every step is single-threaded and the kernel's random bytes count as system time) or wall time
CLOCK: list[Callable[[], float]] = [time.process_time]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = CLOCK[0]()
    out = fn()
    return CLOCK[0]() - t0, out


def one_round(x: np.ndarray, D: int, b: int) -> dict[str, float]:
    """One round: bincount, the whole release, its stages, the old least squares (seconds)."""
    t: dict[str, float] = {}
    gc.collect()
    t["np.bincount"], _ = timed(lambda: np.bincount(x, minlength=D))
    gc.collect()
    t["release"], _ = timed(lambda: dptree.range_tree(x, lower=0, upper=D - 1, epsilon=EPS, branching=b))
    gc.collect()
    t0 = CLOCK[0]()
    plan = plan_range_tree(lower=0, upper=D - 1, epsilon=EPS, branching=b)
    src = _noise.make_source(None)
    t["plan"] = CLOCK[0]() - t0
    t["histogram"], hist = timed(lambda: leaf_histogram(x, plan, rng=src))
    t["node counts"], levels = timed(lambda: plan.layout.level_counts(hist))
    t["noise"], meas = timed(lambda: measure(levels, plan.noise_spec, src))
    var = [float(v) for v in plan.level_variance]
    t["least squares"], est = timed(lambda: regular_passes(meas, var, plan.layout.fanouts).x[0])
    t["prefix sums"], _ = timed(lambda: prefix_sums(est))
    t["other"] = t["release"] - t["plan"] - sum(t[k] for k in STAGES)
    del est, levels, hist
    gc.collect()
    t["old least squares + prefix sums"], _ = timed(lambda: old_estimates(plan, meas))
    return t


def peak(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    tracemalloc.start()
    out = fn()
    p = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return float(p), out


def memory(x: np.ndarray, D: int, b: int) -> dict[str, float]:
    """Peak new bytes per tree node of the release from a histogram and of the estimators."""
    plan = plan_range_tree(lower=0, upper=D - 1, epsilon=EPS, branching=b)
    nodes = plan.layout.num_nodes
    src = _noise.make_source(None)
    hist = leaf_histogram(x, plan, rng=src)
    out = {}
    p, _ = peak(lambda: plan.release(hist, src))
    out["plan.release(histogram), noise included"] = p / nodes
    meas = measure(plan.layout.level_counts(hist), plan.noise_spec, src)
    var = [float(v) for v in plan.level_variance]
    p, _ = peak(lambda: prefix_sums(regular_passes(meas, var, plan.layout.fanouts).x[0]))
    out["least squares + prefix sums (new)"] = p / nodes
    p, _ = peak(lambda: old_estimates(plan, meas))
    out["least squares + prefix sums (old)"] = p / nodes
    return out


def fits(D: int, n: int) -> bool:
    """Rough check that a run fits in half the available memory (input, histogram, old estimator)."""
    try:
        avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return True
    return 8 * n + 80 * D * 16 / 15 < avail / 2


def fmt_ms(s: float) -> str:
    return f"{s * 1e3:.1f}" if s < 10 else f"{s * 1e3:.0f}"


def run_grid(log2_domains: list[int], ns: list[int], reps: int, b: int, with_memory: bool = True) -> None:
    clock = "wall" if CLOCK[0] is time.perf_counter else "process CPU"
    print(f"# release grid: {clock} time, branching {b}, epsilon {EPS}, {os.cpu_count()} cpus, "
          f"load {os.getloadavg()[0]:.1f}, "
          f"numpy {np.__version__}; medians of {reps} rounds after one warm-up; ratios: medians of per-round "
          "ratios to that round's np.bincount")
    summary = []
    for k in log2_domains:
        D = 2**k
        nodes = plan_range_tree(lower=0, upper=D - 1, epsilon=EPS, branching=b).layout.num_nodes
        for n in ns:
            if not fits(D, n):
                print(f"\n(skipped D = 2^{k}, n = {n:.0e}: not enough free memory)")
                continue
            x = np.random.default_rng(12345).integers(0, D, size=n, dtype=np.int64)
            one_round(x, D, b)  # warm-up
            rounds = [one_round(x, D, b) for _ in range(reps)]
            names = ["np.bincount", "release", "plan", *STAGES, "other", "old least squares + prefix sums"]
            med = {k2: statistics.median(r[k2] for r in rounds) for k2 in names}

            def ratio(key: str, rounds: list[dict[str, float]] = rounds) -> float:
                return statistics.median(r[key] / r["np.bincount"] for r in rounds)

            print(f"\n## D = 2^{k}, n = {n:.0e} ({nodes:,} tree nodes)\n")
            print(table(["step", "ms", "ns per node", "/ bincount"],
                        [[k2, fmt_ms(med[k2]), f"{med[k2] / nodes * 1e9:.1f}", f"{ratio(k2):.2f}x"] for k2 in names]))
            beyond = [(r["release"] - r["histogram"]) / nodes * 1e9 for r in rounds]
            no_noise = [(r["release"] - r["histogram"] - r["noise"]) / nodes * 1e9 for r in rounds]
            rel_no_noise = [(r["release"] - r["noise"]) / r["np.bincount"] for r in rounds]
            speedup = [r["old least squares + prefix sums"] / (r["least squares"] + r["prefix sums"]) for r in rounds]
            summary.append([f"2^{k}", f"{n:.0e}", f"{nodes:,}", fmt_ms(med["np.bincount"]), f"{ratio('release'):.1f}x",
                            f"{statistics.median(rel_no_noise):.2f}x", f"{statistics.median(beyond):.0f}",
                            f"{statistics.median(no_noise):.1f}", f"{statistics.median(speedup):.1f}x"])
    print("\n## Summary\n")
    print(table(["D", "n", "nodes", "bincount ms", "release / bincount", "release without noise / bincount",
                 "ns/node beyond histogram", "ns/node beyond histogram, without noise",
                 "old / new least squares + prefix sums"], summary))
    if with_memory:
        print("\n## Peak new memory per tree node (tracemalloc)\n")
        rows = []
        for k in log2_domains:
            D = 2**k
            if not fits(D, 10**6):
                continue
            x = np.random.default_rng(1).integers(0, D, size=10**6, dtype=np.int64)
            for name, v in memory(x, D, b).items():
                rows.append([name, f"2^{k}", f"{v:.1f}"])
        print(table(["step", "D", "bytes per node"], rows))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2-domains", default="16,20,24")
    ap.add_argument("--ns", default="1e6,1e7")
    ap.add_argument("--big", action="store_true", help="also D = 2^26 and n = 1e8 (when memory allows)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--branching", type=int, default=16)
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--wall", action="store_true", help="wall time instead of this process's CPU time")
    args = ap.parse_args(argv)
    if args.wall:
        CLOCK[0] = time.perf_counter
    ks = [int(v) for v in args.log2_domains.split(",")]
    ns = [int(float(v)) for v in args.ns.split(",")]
    if args.big:
        ks, ns = sorted(set(ks) | {26}), sorted(set(ns) | {10**8})
    run_grid(ks, ns, args.reps, args.branching, not args.no_memory)


if __name__ == "__main__":
    main()
