"""Grouped range-tree releases against one release of as many leaves, in ns per tree node.

A grouped release of ``--groups`` groups over [0, 1023] (2^10 leaves each, epsilon = 1, Laplace
noise, the default branching) is timed two ways, each against one release whose domain has as
many leaves as all groups together ([0, groups * 1024 - 1]), measured in the same run:

* ``counts``: from histograms already in memory: ``release_groups(plan, hists, groups)`` against
  ``plan.release(hist)`` (noise, least squares and the release objects);
* ``rows``: end to end from ``--rows`` rows in numpy arrays: ``dptree.range_tree(values, by=g,
  groups=...)`` against ``dptree.range_tree(values)`` (binning included).

The calls run round-robin (grouped, then one release, per round, after a warm-up round); each
line shows the medians over rounds of wall (``perf_counter``) and CPU (``process_time``) time per
tree node and the median of the per-round ratio grouped / one. The noise is the OS CSPRNG (private
releases). ``--touch`` also times building every group's tree after the release (``release[g]``
for each group: the trees are built when first asked for).

    PYTHONPATH=src python3 benchmarks/grouped_release.py --groups 10000 --rows 1000000 --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable

import numpy as np


def _timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--touch", action="store_true", help="also time building every group's tree")
    args = ap.parse_args()

    import dptree
    from dptree.rangetree.groupby import release_groups
    from dptree.rangetree.plan import plan_range_tree

    G, leaves = args.groups, 1024
    names = list(range(G))
    gen = np.random.default_rng(1)
    values = gen.integers(0, leaves, args.rows)
    by = gen.integers(0, G, args.rows)
    plan_g = plan_range_tree(lower=0, upper=leaves - 1, epsilon=1.0)
    plan_1 = plan_range_tree(lower=0, upper=G * leaves - 1, epsilon=1.0)
    hists = np.zeros((G, plan_g.layout.padded_size), np.int64)
    np.add.at(hists, (by, values), 1)
    one_hist = np.zeros(plan_1.layout.padded_size, np.int64)
    one_hist[: G * leaves] = hists[:, :leaves].reshape(-1)
    one_values = by * leaves + values
    nodes_g, nodes_1 = G * plan_g.layout.num_nodes, plan_1.layout.num_nodes

    def touch(rel: Any) -> list[Any]:
        return [rel[g] for g in names]

    tasks: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
        "counts": (lambda: release_groups(plan_g, hists, names), lambda: plan_1.release(one_hist)),
        "rows": (lambda: dptree.range_tree(values, by=by, groups=names, lower=0, upper=leaves - 1, epsilon=1.0),
                 lambda: dptree.range_tree(one_values, lower=0, upper=G * leaves - 1, epsilon=1.0)),
    }
    times: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k in tasks}
    touched: list[tuple[float, float]] = []
    for r in range(args.rounds + 1):
        for name, (grouped, one) in tasks.items():
            wg, cg, rel = _timed(grouped)
            if args.touch and name == "counts":
                tw, tc, _ = _timed(lambda: touch(rel))
                if r:
                    touched.append((tw, tc))
            del rel
            w1, c1, _ = _timed(one)
            if r:  # round 0 warms up
                times[name].append((wg / nodes_g, cg / nodes_g, w1 / nodes_1, c1 / nodes_1))

    try:
        load = " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        load = "?"
    print(f"# {G:,} groups x {leaves} leaves ({nodes_g:,} nodes; one release: {plan_1.layout.padded_size:,} leaves, "
          f"{nodes_1:,} nodes), {args.rows:,} rows, {args.rounds} rounds, load {load}\n")
    print("| input | grouped ns/node wall | CPU | one release ns/node wall | CPU | ratio wall | ratio CPU |")
    print("|---|---|---|---|---|---|---|")
    med = statistics.median
    for name, rows in times.items():
        gw, gc, ow, oc = (med(r[i] for r in rows) for i in range(4))
        rw, rc = med(r[0] / r[2] for r in rows), med(r[1] / r[3] for r in rows)
        print(f"| {name} | {gw * 1e9:.1f} | {gc * 1e9:.1f} | {ow * 1e9:.1f} | {oc * 1e9:.1f} | {rw:.2f} | {rc:.2f} |")
    if touched:
        tw, tc = med(t[0] for t in touched), med(t[1] for t in touched)
        print(f"\nbuilding every group's tree after the release (counts): {tw * 1e9 / nodes_g:.1f} ns/node wall, "
              f"{tc * 1e9 / nodes_g:.1f} CPU ({tw * 1e6 / G:.0f} us per group)")


if __name__ == "__main__":
    main()
