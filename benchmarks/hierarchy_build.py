"""Speed of Hierarchy.from_paths on random 3-level paths (target: 10^6 leaves <= 1 s).

Paths 'A<i>/B<j>/C<k>' with i < 50, j < 200 and k a permutation of the leaves (so every leaf is
distinct and the leaf labels arrive unsorted). Baselines timed in the same rounds: np.unique of
the path strings (an object array) and a sorted pandas groupby of the three label columns
(object strings, already split). ``--old`` also times the list-and-tuple reference builder
(tests/unit/hierarchy/reference_building.py). Times are medians of interleaved rounds.

    PYTHONPATH=src python3 benchmarks/hierarchy_build.py [--leaves 100000 1000000] [--reps 5] [--old]
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

from dptree.hierarchy.structure import Hierarchy  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--leaves", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--old", action="store_true", help="also time the old builder (slow)")
    args = ap.parse_args()
    old = None
    if args.old:
        sys.path.insert(0, str(ROOT / "tests" / "unit" / "hierarchy"))
        import reference_building as old  # type: ignore[import-not-found, no-redef]
    print(f"# Hierarchy.from_paths, random 3-level paths; {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}; "
          f"medians of {args.reps} interleaved rounds")
    head = f"\n  {'leaves':>9s} {'from_paths s':>12s} {'np.unique s':>11s} {'groupby s':>9s} {'/unique':>8s} {'/groupby':>9s}"
    print(head + (f" {'old s':>7s} {'old/new':>8s}" if old else ""))
    for n in args.leaves:
        rng = np.random.default_rng(n)
        a, b, c = rng.integers(0, 50, n), rng.integers(0, 200, n), rng.permutation(n)
        l1 = [f"A{x}" for x in a]
        l2 = [f"B{x}" for x in b]
        l3 = [f"C{x}" for x in c]
        paths = [f"{x}/{y}/{z}" for x, y, z in zip(l1, l2, l3)]
        frame = pd.DataFrame({"l1": l1, "l2": l2, "l3": l3})
        obj = np.array(paths, dtype=object)
        fns: dict[str, Callable[[], Any]] = {
            "new": lambda: Hierarchy.from_paths(paths),
            "unique": lambda: np.unique(obj),
            "groupby": lambda: frame.groupby(["l1", "l2", "l3"], sort=True).size(),
        }
        if old is not None:
            fns["old"] = lambda: old.build(Hierarchy, old.path_columns(paths), levels=None, other=None,
                                           root_label="(all)")
        h = Hierarchy.from_paths(paths)
        assert h.n_leaves == n and h.depth == 4
        times: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(args.reps):
            for k, f in fns.items():
                times[k].append(timed(f))
        med = {k: float(np.median(v)) for k, v in times.items()}
        r_u = float(np.median(np.array(times["new"]) / np.array(times["unique"])))
        r_g = float(np.median(np.array(times["new"]) / np.array(times["groupby"])))
        line = (f"  {n:>9,d} {med['new']:>12.3f} {med['unique']:>11.3f} {med['groupby']:>9.3f} "
                f"{r_u:>7.2f}x {r_g:>8.2f}x")
        if old is not None:
            line += f" {med['old']:>7.3f} {float(np.median(np.array(times['old']) / np.array(times['new']))):>7.2f}x"
        print(line, flush=True)


if __name__ == "__main__":
    main()
