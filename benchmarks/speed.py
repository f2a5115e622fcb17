"""Speed and memory of a dptree range-tree release, against np.bincount and OpenDP.

Run from the repository root:

    PYTHONPATH=src python3 benchmarks/speed.py            # D = 2^20, n = 10^7 (a few minutes)
    PYTHONPATH=src python3 benchmarks/speed.py --quick    # smoke run (D = 2^14, n = 10^5)
    PYTHONPATH=src python3 benchmarks/speed.py --grid     # release per node at D = 2^16..2^24, n = 1e6, 1e7

What is timed (all in one process, same data; the calls run round-robin, --reps rounds after one
warm-up round; wall time and this process's CPU time; ratios are medians of per-round ratios):

* ``np.bincount``: ``np.bincount(x, minlength=D)`` of the int64 input (the baseline).
* dptree: ``dptree.range_tree(x, lower=0, upper=D-1, epsilon=1, branching=b)`` -- validation,
  the per-level budget plan, clamping, leaf histogram, the b-ary node counts, exact discrete
  Laplace noise on every measured node (OS CSPRNG, i.e. a real private release), Honaker
  least squares and the cumulative sums that answer queries.
* OpenDP: ``make_count_by_categories`` (categories 0..D-1) >> ``make_b_ary_tree`` (same
  branching) >> ``make_laplace`` (discrete Laplace, scale = tree sensitivity / epsilon) and the
  ``make_consistent_b_ary_tree`` postprocessor (returns the consistent leaf counts). The
  numpy input array is passed directly; its conversion happens inside the first call.
  "build" is the constructors (data-independent, dominated by the D categories).

Both use one exact integer (discrete Laplace) sample per node. Differences in scope: OpenDP
also noises the root; dptree leaves the root out under add/remove (one node less) but does
more post-processing (generalised least squares with per-level variances, plus prefix sums).

Memory is measured in a fresh subprocess per measurement (``--no-memory`` to skip): the peak
resident set size during the release (``VmHWM`` from /proc/self/status, reset to the current RSS
through /proc/self/clear_refs just before the release) minus the RSS before it (imports and
input already loaded), and, for numpy code, ``tracemalloc``'s peak of new allocations during the
release. The target budget is input bytes + 64 bytes per tree node; the input is already
resident, so the release may allocate at most 64 bytes per node for the target to hold.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Callable

import numpy as np
from _common import table

import dptree
from dptree import noise as _noise
from dptree.data.domain import coerce_values
from dptree.rangetree.release import RangeTree, plan_range_tree

EPS = 1.0


# ----------------------------------------------------------------------------- helpers


class Clock:
    """Wall time (perf_counter) and CPU time of this process (process_time) of one call."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def run(self, fn: Callable[[], object]) -> object:
        gc.collect()
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        self.cpu.append(time.process_time() - c0)
        self.wall.append(time.perf_counter() - w0)
        return out

    def med(self, kind: str = "wall") -> float:
        return statistics.median(getattr(self, kind))


def interleaved(fns: dict[str, Callable[[], object]], reps: int, warmup: int = 1) -> dict[str, Clock]:
    """Run the calls round-robin (one of each per repetition) after ``warmup`` untimed rounds.

    Interleaving pairs the measurements in time, so that the paired ratios below are robust to
    load from other users of the machine changing during the run.
    """
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    clocks = {k: Clock() for k in fns}
    for _ in range(reps):
        for k, fn in fns.items():
            clocks[k].run(fn)
    return clocks


def paired_ratio(a: Clock, b: Clock, kind: str = "wall") -> float:
    """Median over repetitions of a_i / b_i (a and b timed in the same round)."""
    xa, xb = getattr(a, kind), getattr(b, kind)
    return statistics.median([p / q for p, q in zip(xa, xb)])


def num_nodes(D: int, b: int) -> int:
    from dptree.rangetree.layout import build_layout

    return build_layout(D, b).num_nodes


def fmt_s(x: float) -> str:
    return f"{x * 1e3:9.1f} ms" if x < 10 else f"{x:9.2f} s "


def make_data(D: int, n: int, seed: int = 12345) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, D, size=n, dtype=np.int64)


# ----------------------------------------------------------------------------- dptree stages


def dptree_release(x: np.ndarray, D: int, b: int | None) -> RangeTree:
    return dptree.range_tree(x, lower=0, upper=D - 1, epsilon=EPS, branching=b)


def dptree_breakdown(x: np.ndarray, D: int, b: int, reps: int) -> list[tuple[str, float, float]]:
    """Time the stages of ``range_tree`` separately (same calls ``range_tree`` makes)."""
    names = ("plan", "clamp + leaf index", "leaf histogram (bincount)", "node counts per level",
             "discrete Laplace noise", "least squares + prefix sums")
    clocks = {k: Clock() for k in names}
    for r in range(reps + 1):  # first round is a warm-up
        c = {k: (clocks[k] if r else Clock()) for k in names}
        plan = c["plan"].run(lambda: plan_range_tree(lower=0, upper=D - 1, epsilon=EPS, branching=b))
        leaves = c["clamp + leaf index"].run(lambda: plan.domain.to_leaves(coerce_values(x, plan.domain)))
        hist = c["leaf histogram (bincount)"].run(lambda: np.bincount(leaves, minlength=plan.layout.padded_size))
        levels = c["node counts per level"].run(lambda: plan.layout.level_counts(hist.astype(np.int64)))

        def noise() -> list[np.ndarray | None]:
            src = _noise.make_source(None)
            return [None if p is None else cnt + _noise.discrete_laplace(src, p, cnt.size)
                    for p, cnt in zip(plan.noise_parameters, levels)]

        meas = c["discrete Laplace noise"].run(noise)
        c["least squares + prefix sums"].run(
            lambda: RangeTree(plan=plan, measurements=meas, statement=dict(plan.statement)))
        del leaves
    return [(k, clocks[k].med("wall"), clocks[k].med("cpu")) for k in names]


# ----------------------------------------------------------------------------- OpenDP


def opendp_pipeline(D: int, b: int):  # type: ignore[no-untyped-def]
    import opendp.prelude as dp

    dp.enable_features("contrib")
    cnt = dp.t.make_count_by_categories(
        dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.symmetric_distance(),
        categories=list(range(D)), null_category=False,
    )
    tree = dp.t.make_b_ary_tree(cnt.output_domain, cnt.output_metric, leaf_count=D, branching_factor=b)
    sens = (cnt >> tree).map(1)
    lap = dp.m.make_laplace(tree.output_domain, tree.output_metric, scale=float(sens) / EPS)
    post = dp.t.make_consistent_b_ary_tree(branching_factor=b)
    assert abs(lap.map(sens) - EPS) < 1e-9 or lap.map(sens) <= EPS
    return cnt, tree, lap, post, sens


def opendp_warmup(b: int) -> None:
    """Load the OpenDP library and run its pipeline once on tiny data (not timed)."""
    cnt, tree, lap, post, _ = opendp_pipeline(b * b, b)
    post(lap(tree(cnt(np.arange(100, dtype=np.int64) % (b * b)))))


def opendp_times(x: np.ndarray, D: int, b: int, reps: int) -> dict[str, Clock]:
    """OpenDP pipeline stages, each round preceded by one np.bincount and one dptree release."""
    opendp_warmup(b)
    names = ("bincount", "dptree", "build", "count_by_categories", "b_ary_tree", "laplace",
             "consistent_b_ary_tree", "total", "total without build")
    clocks = {k: Clock() for k in names}
    for _ in range(reps):
        clocks["bincount"].run(lambda: np.bincount(x, minlength=D))
        clocks["dptree"].run(lambda: dptree_release(x, D, b))
        st = {k: Clock() for k in names[2:7]}
        cnt, tree, lap, post, _ = st["build"].run(lambda: opendp_pipeline(D, b))
        h = st["count_by_categories"].run(lambda: cnt(x))
        tr = st["b_ary_tree"].run(lambda: tree(h))
        noisy = st["laplace"].run(lambda: lap(tr))
        leaves = st["consistent_b_ary_tree"].run(lambda: post(noisy))
        assert len(leaves) == D
        for kind in ("wall", "cpu"):
            vals = {k: getattr(st[k], kind)[0] for k in st}
            for k, v in vals.items():
                getattr(clocks[k], kind).append(v)
            getattr(clocks["total"], kind).append(sum(vals.values()))
            getattr(clocks["total without build"], kind).append(sum(vals.values()) - vals["build"])
        del h, tr, noisy, leaves
    return clocks


def opendp_from_histogram(hist: np.ndarray, D: int, b: int, reps: int) -> dict[str, Clock]:
    """OpenDP's b_ary_tree >> laplace >> consistency on an existing histogram (list of i32),
    interleaved with dptree's ``plan.release(histogram)``."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    dom = dp.vector_domain(dp.atom_domain(T=dp.i32))
    tree = dp.t.make_b_ary_tree(dom, dp.l1_distance(T=dp.i32), leaf_count=D, branching_factor=b)
    lap = dp.m.make_laplace(tree.output_domain, tree.output_metric, scale=float(tree.map(1)) / EPS)
    post = dp.t.make_consistent_b_ary_tree(branching_factor=b)
    hl = hist.astype(np.int32).tolist()
    plan = plan_range_tree(lower=0, upper=D - 1, epsilon=EPS, branching=b)
    return interleaved({"dptree": lambda: plan.release(hist), "opendp": lambda: post(lap(tree(hl)))},
                       reps, warmup=0)


# ----------------------------------------------------------------------------- memory child


def _proc_status_bytes(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); ru_maxrss survives exec, so it is not used."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def memory_child(mode: str, D: int, n: int, b: int, use_tracemalloc: bool) -> dict[str, float]:
    if mode == "opendp":
        opendp_warmup(b)  # load the library (its code pages are not the release's memory)
    else:
        dptree_release(np.arange(10), 16, 2)  # import-time and first-call costs
    x = make_data(D, n)
    gc.collect()
    before = _proc_status_bytes("VmRSS")
    if not _reset_peak_rss():
        before = _proc_status_bytes("VmHWM")
    if use_tracemalloc:
        import tracemalloc

        tracemalloc.start()
    if mode == "bincount":
        res: object = np.bincount(x, minlength=D)
    elif mode == "dptree":
        res = dptree_release(x, D, b)
    elif mode == "opendp":
        cnt, tree, lap, post, _ = opendp_pipeline(D, b)
        res = post(lap(tree(cnt(x))))
    else:
        raise SystemExit(f"unknown mode {mode}")
    out = {"input_bytes": float(x.nbytes)}
    if use_tracemalloc:
        import tracemalloc

        out["traced_peak"] = float(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    after = _proc_status_bytes("VmHWM")
    out["rss_before"] = float(before)
    out["rss_peak_increase"] = float(after - before)
    del res
    return out


def stage_memory(D: int, n: int, b: int) -> list[tuple[str, float]]:
    """tracemalloc peak of new allocations in each stage of a dptree release (input resident)."""
    import tracemalloc

    x = make_data(D, n)
    out = []

    def peak(name: str, fn: Callable[[], object]) -> object:
        gc.collect()
        tracemalloc.start()
        res = fn()
        out.append((name, float(tracemalloc.get_traced_memory()[1])))
        tracemalloc.stop()
        return res

    plan = plan_range_tree(lower=0, upper=D - 1, epsilon=EPS, branching=b)
    leaves = peak("clamp + leaf index", lambda: plan.domain.to_leaves(coerce_values(x, plan.domain)))
    hist = peak("leaf histogram (bincount)", lambda: np.bincount(leaves, minlength=plan.layout.padded_size))
    del leaves
    levels = peak("node counts per level", lambda: plan.layout.level_counts(hist.astype(np.int64)))
    src = _noise.make_source(None)
    meas = peak("discrete Laplace noise", lambda: [None if p is None else c + _noise.discrete_laplace(src, p, c.size)
                                                   for p, c in zip(plan.noise_parameters, levels)])
    peak("least squares + prefix sums", lambda: RangeTree(plan=plan, measurements=meas, statement={}))
    return out


def run_memory(mode: str, D: int, n: int, b: int, use_tracemalloc: bool) -> dict[str, float]:
    cmd = [sys.executable, os.path.abspath(__file__), "--_memory-child", mode, "--log2-domain",
           str(D.bit_length() - 1), "--n", str(n), "--branching", str(b)]
    if use_tracemalloc:
        cmd.append("--_tracemalloc")
    res = subprocess.run(cmd, capture_output=True, text=True, check=True, env=os.environ.copy())
    return json.loads(res.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- queries


def query_bench(D: int, n: int, b: int, q: int, reps: int) -> list[list[str]]:
    x = make_data(D, n)
    tree = dptree_release(x, D, b)
    g = np.random.default_rng(7)
    u, v = g.integers(0, D, q), g.integers(0, D, q)
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    cum = np.concatenate([[0.0], np.cumsum(tree.leaf_estimates)])
    calls = {
        "numpy prefix-sum difference (baseline)": lambda: cum[hi + 1] - cum[lo],
        "count(lo, hi)": lambda: tree.count(lo, hi),
        "count(lo, hi) + stderr(lo, hi)": lambda: (tree.count(lo, hi), tree.stderr(lo, hi)),
        "ci(lo, hi) (count and stderr inside)": lambda: tree.ci(lo, hi),
    }
    clocks = interleaved(calls, reps)
    base = clocks["numpy prefix-sum difference (baseline)"]
    rows = []
    for name, c in clocks.items():
        rows.append([name, fmt_s(c.med()), fmt_s(c.med("cpu")), f"{q / c.med() / 1e6:8.2f} M/s",
                     f"{q / c.med('cpu') / 1e6:8.2f} M/s", f"{paired_ratio(c, base):7.1f}x"])
    return rows


# ----------------------------------------------------------------------------- main


def main() -> None:
    if "--grid" in sys.argv:  # the release grid, D = 2^16 .. 2^24 (its own options: release_grid.py --help)
        import release_grid

        release_grid.main([a for a in sys.argv[1:] if a != "--grid"])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2-domain", type=int, default=20, help="D = 2^k leaves (default 20)")
    ap.add_argument("--n", type=int, default=10**7, help="number of input integers (default 1e7)")
    ap.add_argument("--branching", type=int, default=16)
    ap.add_argument("--reps", type=int, default=5, help="repetitions for numpy/dptree timings")
    ap.add_argument("--opendp-reps", type=int, default=3)
    ap.add_argument("--queries", type=int, default=10**6)
    ap.add_argument("--scaling", type=str, default="",
                    help="comma-separated log2 domain sizes for an extra dptree-vs-OpenDP table (n fixed)")
    ap.add_argument("--skip-opendp", action="store_true")
    ap.add_argument("--profile", action="store_true",
                    help="only print a cProfile of one dptree release (top functions by own time)")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--memory-only", action="store_true", help="only the peak-memory tables")
    ap.add_argument("--quick", action="store_true", help="smoke run: D=2^14, n=1e5, 1e5 queries, 2 reps")
    ap.add_argument("--_memory-child", dest="memory_child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--_tracemalloc", dest="tracemalloc", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.log2_domain, args.n, args.queries, args.reps, args.opendp_reps = 14, 10**5, 10**5, 2, 1
    D, n, b = 2**args.log2_domain, args.n, args.branching
    if args.memory_child == "stages":
        print(json.dumps(stage_memory(D, n, b)))
        return
    if args.memory_child:
        print(json.dumps(memory_child(args.memory_child, D, n, b, args.tracemalloc)))
        return

    if args.profile:
        import cProfile
        import pstats

        x = make_data(D, n)
        dptree_release(x, D, b)  # warm-up
        prof = cProfile.Profile()
        prof.runcall(dptree_release, x, D, b)
        print(f"# cProfile of dptree.range_tree(x, branching={b}), D = 2^{args.log2_domain}, n = {n:,}")
        pstats.Stats(prof, stream=sys.stdout).strip_dirs().sort_stats("tottime").print_stats(18)
        return
    nodes = num_nodes(D, b)
    print(f"# dptree speed benchmark: D = 2^{args.log2_domain} = {D} leaves, n = {n:,} int64 values, "
          f"branching {b} ({nodes:,} nodes), epsilon = {EPS}")
    print(f"# python {sys.version.split()[0]}, numpy {np.__version__}, dptree {dptree.__version__}, "
          f"{os.cpu_count()} cpus, load average at start {os.getloadavg()[0]:.1f}; medians of {args.reps} "
          f"interleaved reps (OpenDP: {args.opendp_reps}); wall = perf_counter, cpu = process_time; "
          f"ratios are medians of per-round paired ratios\n")
    if not args.memory_only:
        run_timings(args, D, n, b)
    if not args.no_memory:
        run_memory_tables(args, D, n, b, nodes)


def run_timings(args: argparse.Namespace, D: int, n: int, b: int) -> None:
    x = make_data(D, n)

    # --- release times
    hist = np.bincount(x, minlength=D)
    plan = plan_range_tree(lower=0, upper=D - 1, epsilon=EPS, branching=b)
    default_b = plan_range_tree(lower=0, upper=D - 1, epsilon=EPS).layout.branching
    calls = {
        "np.bincount(x, minlength=D)": lambda: np.bincount(x, minlength=D),
        f"dptree.range_tree(x, branching={b})": lambda: dptree_release(x, D, b),
        f"dptree.range_tree(x) (default: branching={default_b})": lambda: dptree_release(x, D, None),
        "dptree plan.release(histogram) (no histogram step)": lambda: plan.release(hist),
    }
    clocks = interleaved(calls, args.reps)
    base = clocks["np.bincount(x, minlength=D)"]
    rows = [[k, fmt_s(c.med()), fmt_s(c.med("cpu")), f"{paired_ratio(c, base):.1f}x",
             f"{paired_ratio(c, base, 'cpu'):.1f}x", "", ""] for k, c in clocks.items()]
    od = None
    if not args.skip_opendp:
        od = opendp_times(x, D, b, args.opendp_reps)
        for k, label in (("total", f"OpenDP pipeline, total incl. build (b={b})"),
                         ("total without build", "OpenDP pipeline, without build")):
            c = od[k]
            rows.append([label, fmt_s(c.med()), fmt_s(c.med("cpu")), f"{paired_ratio(c, od['bincount']):.0f}x",
                         f"{paired_ratio(c, od['bincount'], 'cpu'):.0f}x",
                         f"{paired_ratio(c, od['dptree']):.1f}x", f"{paired_ratio(c, od['dptree'], 'cpu'):.1f}x"])
        rows.append(["(dptree.range_tree timed in the same rounds as OpenDP)", fmt_s(od["dptree"].med()),
                     fmt_s(od["dptree"].med("cpu")), f"{paired_ratio(od['dptree'], od['bincount']):.1f}x",
                     f"{paired_ratio(od['dptree'], od['bincount'], 'cpu'):.1f}x", "1.0x", "1.0x"])
        oh = opendp_from_histogram(hist, D, b, args.opendp_reps)
        rows.append(["OpenDP tree >> laplace >> consistency on the histogram", fmt_s(oh["opendp"].med()),
                     fmt_s(oh["opendp"].med("cpu")), "", "",
                     f"{paired_ratio(oh['opendp'], oh['dptree']):.1f}x vs plan.release",
                     f"{paired_ratio(oh['opendp'], oh['dptree'], 'cpu'):.1f}x"])
    print("## Release time\n")
    print(table(["what", "wall", "cpu", "wall / bincount", "cpu / bincount", "wall / dptree", "cpu / dptree"],
                rows))

    print("\n## dptree release breakdown (branching %d)\n" % b)
    br = dptree_breakdown(x, D, b, args.reps)
    tot = sum(t for _, t, _ in br)
    totc = sum(t for _, _, t in br)
    tb = base.med()
    print(table(["stage", "wall", "cpu", "share of wall", "wall / bincount median"],
                [[k, fmt_s(t), fmt_s(tc), f"{100 * t / tot:5.1f}%", f"{t / tb:.1f}x"] for k, t, tc in br]
                + [["sum of stages", fmt_s(tot), fmt_s(totc), "100.0%", f"{tot / tb:.1f}x"]]))

    if od is not None:
        print("\n## OpenDP pipeline breakdown (branching %d)\n" % b)
        ks = ["build", "count_by_categories", "b_ary_tree", "laplace", "consistent_b_ary_tree"]
        print(table(["stage", "wall", "cpu", "share of wall"],
                    [[k, fmt_s(od[k].med()), fmt_s(od[k].med("cpu")),
                      f"{100 * od[k].med() / od['total'].med():5.1f}%"] for k in ks]))

    if args.scaling and not args.skip_opendp:
        print(f"\n## Scaling with D (n = {n:,}, branching {b})\n")
        srows = []
        for k in [int(s) for s in args.scaling.split(",")]:
            Dk = 2**k
            xk = make_data(Dk, n)
            ok = opendp_times(xk, Dk, b, args.opendp_reps)
            srows.append([f"2^{k}", f"{num_nodes(Dk, b):,}", fmt_s(ok["bincount"].med()),
                          fmt_s(ok["dptree"].med()), fmt_s(ok["total"].med()),
                          f"{paired_ratio(ok['dptree'], ok['bincount']):.1f}x",
                          f"{paired_ratio(ok['total'], ok['dptree']):.1f}x",
                          f"{paired_ratio(ok['total'], ok['dptree'], 'cpu'):.1f}x"])
        print(table(["D", "nodes", "bincount", "dptree", "OpenDP (incl. build)", "dptree / bincount",
                     "OpenDP / dptree (wall)", "OpenDP / dptree (cpu)"], srows))

    print(f"\n## Queries: {args.queries:,} random ranges [lo, hi] (vectorised calls)\n")
    print(table(["call", "wall", "cpu", "queries/s (wall)", "queries/s (cpu)", "wall / baseline"],
                query_bench(D, n, b, args.queries, args.reps)))


def run_memory_tables(args: argparse.Namespace, D: int, n: int, b: int, nodes: int) -> None:
    if True:
        print(f"\n## Peak memory (fresh subprocess each; budget = input + 64 B/node = "
              f"{(8 * n + 64 * nodes) / 2**20:.1f} MiB)\n")
        mrows = []
        budget_extra = 64 * nodes
        for mode in ["bincount", "dptree"] + ([] if args.skip_opendp else ["opendp"]):
            r = run_memory(mode, D, n, b, False)
            line = [mode, f"{r['input_bytes'] / 2**20:.1f}", f"{r['rss_peak_increase'] / 2**20:.1f}"]
            if mode != "opendp":
                t = run_memory(mode, D, n, b, True)
                line.append(f"{t['traced_peak'] / 2**20:.1f}")
                extra = t["traced_peak"]
            else:
                line.append("n/a (Rust)")
                extra = r["rss_peak_increase"]
            line += [f"{(r['input_bytes'] + extra) / 2**20:.1f}", f"{extra / nodes:.0f}",
                     "yes" if extra <= budget_extra else "no"]
            mrows.append(line)
        print(table(["release", "input MiB", "RSS peak increase MiB", "tracemalloc peak MiB",
                     "input + new MiB", "new B/node", "<= input + 64 B/node"], mrows))
        print("\n(new = tracemalloc peak of allocations made during the release, or the RSS increase "
              "where tracemalloc cannot see them)")
        print("\n### dptree: peak new memory per stage (tracemalloc, fresh subprocess)\n")
        st = run_memory("stages", D, n, b, False)
        print(table(["stage", "peak new MiB", "bytes per node", "bytes per input value"],
                    [[k, f"{v / 2**20:.1f}", f"{v / nodes:.1f}", f"{v / n:.2f}"] for k, v in st]))


if __name__ == "__main__":
    main()
