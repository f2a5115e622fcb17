"""Sparse range trees: accuracy against dense trees, and time and memory against n.

Accuracy, on four data sets (log-normal latencies, Pareto sizes, 64-bit ids, ns timestamps), at
epsilon = 1, add/remove, Laplace: the mean quantile rank error over q = 0.01 .. 0.99 (distance,
in records, from q n to the rank interval of the returned value) and the mean absolute error of
random range counts, for

* ``sparse``: ``dptree.sparse_range_tree`` with no bounds and no width, ``method="privtree"`` (the
  default: PrivTree shape, then every node of it measured);
* ``levels``: the same with ``method="levels"`` (every level at eps / L, noisy-count expansion);
* ``leaf privtree``: PrivTree as published (Zhang, Xiao, Xie 2016, as read: the same shape at eps/2
  with delta = lambda ln b, then noisy counts of the leaves only at eps/2), written here, not shipped;
* ``dense oracle``: ``dptree.range_tree`` over the data's true [min, max] (non-private bounds) with the
  number of buckets D in 2^8 .. 2^20 that is best for that data set (oracle width);
* ``dense fixed``: the same with the one D that is best over all data sets (geometric mean).

Ratios are to the dense oracle in the same run. Time and peak memory (each release in a fresh
process: peak RSS minus the RSS with the data loaded) against n, as ratios to a dense
D = 2^20 release of the same n in the same run.

    PYTHONPATH=src python3 benchmarks/sparse_tree.py --quick     # about 2 minutes
    PYTHONPATH=src python3 benchmarks/sparse_tree.py             # n up to 10^7
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import dptree  # noqa: E402
from dptree import noise as _noise  # noqa: E402
from dptree.sparsetree.keys import key_domain  # noqa: E402
from dptree.sparsetree.mechanism import SparseLayout, children, node_counts  # noqa: E402

EPS = 1.0
QS = np.linspace(0.01, 0.99, 99)
DENSE_D = [2**k for k in range(8, 21, 2)]


def dataset(name: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if name == "lognormal latencies":
        return rng.lognormal(3.0, 2.0, n)  # ms, spanning about nine orders of magnitude
    if name == "pareto sizes":
        return ((rng.pareto(1.1, n) + 1.0) * 512).astype(np.int64)  # bytes
    if name == "64-bit ids":
        return rng.integers(0, 2**62, n, dtype=np.int64)  # dense trees refuse bounds beyond +-2^62
    if name == "ns timestamps":  # one day of events, busier in the afternoon, ns resolution
        t = (rng.beta(3.0, 2.0, n) * 86_400e9).astype(np.int64)
        return np.datetime64("2024-05-01T00:00:00", "ns") + t.astype("timedelta64[ns]")
    raise ValueError(name)


DATASETS = ["lognormal latencies", "pareto sizes", "64-bit ids", "ns timestamps"]


def rank_error(sorted_x: np.ndarray, values: np.ndarray, qs: np.ndarray = QS) -> float:
    lo = np.searchsorted(sorted_x, values, side="left")
    hi = np.searchsorted(sorted_x, values, side="right")
    target = qs * sorted_x.size
    return float(np.mean(np.maximum(0, np.maximum(lo - target, target - hi))))


def ranges(sorted_x: np.ndarray, seed: int, k: int = 100) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    i, j = np.sort(rng.integers(0, sorted_x.size, (2, k)), axis=0)
    lo, hi = sorted_x[i], sorted_x[j]
    truth = np.searchsorted(sorted_x, hi, side="right") - np.searchsorted(sorted_x, lo, side="left")
    return lo, hi, truth


def dense(x: np.ndarray, D: int, seed: int) -> dptree.RangeTree:
    lo, hi = x.min(), x.max()
    if x.dtype.kind == "f":
        return dptree.range_tree(x, lower=float(lo), upper=float(hi), width=(float(hi) - float(lo)) / D,
                                 epsilon=EPS, branching=16, rng=seed)
    if x.dtype.kind == "M":
        w = np.timedelta64(max(1, -(-int((hi - lo).astype(np.int64)) // D)), "ns")
        return dptree.range_tree(x, lower=lo, upper=hi, width=w, epsilon=EPS, branching=16, rng=seed)
    w = max(1, -(-(int(hi) - int(lo)) // D))
    return dptree.range_tree(x, lower=int(lo), upper=int(hi), width=w, epsilon=EPS, branching=16, rng=seed)


def privtree_quantiles(x: np.ndarray, seed: int, b: int = 16) -> np.ndarray:
    """The PrivTree-style variant (see the module docstring): a partition from biased noisy
    counts, noisy leaf counts, quantiles by uniform spread inside a leaf."""
    dom = key_domain(None, None, x.dtype.kind)
    keys = np.sort(dom.offsets(x))
    lay = SparseLayout(dom.bits, b)
    src = _noise.make_source(seed)
    lam = _noise.laplace_scale_used(Fraction(2 * b - 1, b - 1) / Fraction(EPS / 2))
    delta, theta = float(lam) * math.log(b), 0.0
    leaves_idx, leaves_depth = [], []
    parents = np.zeros(1, dtype=np.uint64)
    for d in range(1, lay.depth + 1):
        idx = children(parents, lay.fanout(d - 1))
        c = node_counts(keys, idx, lay.shifts[d]).astype(np.float64)
        biased = np.maximum(theta - delta, c - d * delta)
        noisy = biased + _noise.discrete_laplace(src, lam, idx.size)
        split = (noisy > theta) & (d < lay.depth)
        leaves_idx.append(idx[~split])
        leaves_depth.append(np.full(int((~split).sum()), d))
        parents = idx[split]
    depth = np.concatenate(leaves_depth)
    start = np.concatenate([ix << np.uint64(lay.shifts[d]) for ix, d in zip(leaves_idx, [int(v[0]) if v.size else 0
                                                                                           for v in leaves_depth])])
    width = np.ldexp(1.0, np.array(lay.shifts)[depth])
    order = np.argsort(start)
    start, width, depth = start[order], width[order], depth[order]
    lo_pos = np.searchsorted(keys, start)
    true = np.diff(np.append(lo_pos, keys.size))
    noisy = true + _noise.discrete_laplace(src, Fraction(1) / Fraction(EPS / 2), true.size)
    from scipy.optimize import isotonic_regression

    F = np.clip(isotonic_regression(np.cumsum(noisy).astype(np.float64)).x, 0, None)
    n_hat = float(np.sum(noisy))
    target = QS * n_hat
    i = np.clip(np.searchsorted(F, target), 0, F.size - 1)
    prev = np.where(i > 0, F[np.maximum(i - 1, 0)], 0.0)
    frac = np.clip(np.where(F[i] > prev, (target - prev) / np.maximum(F[i] - prev, 1e-300), 0.0), 0, 1)
    off = start[i] + np.minimum(np.floor(frac * width[i]), width[i] - 1).astype(np.uint64)
    return dom.values_at(off)


def accuracy(n: int, repeats: int) -> list[dict]:
    rows = []
    for name in DATASETS:
        res: dict[str, list[float]] = {}
        for r in range(repeats):
            x = dataset(name, n, 100 + r)
            sx = np.sort(x)
            lo, hi, truth = ranges(sx, r)
            s = dptree.sparse_range_tree(x, epsilon=EPS, rng=r)
            res.setdefault("sparse", []).append(rank_error(sx, s.quantile(QS)))
            res.setdefault("sparse range", []).append(float(np.mean(np.abs(s.count(lo, hi) - truth))))
            lv = dptree.sparse_range_tree(x, epsilon=EPS, method="levels", rng=r)
            res.setdefault("levels", []).append(rank_error(sx, lv.quantile(QS)))
            res.setdefault("privtree", []).append(rank_error(sx, privtree_quantiles(x, r)))
            for D in DENSE_D:
                t = dense(x, D, r)
                res.setdefault(f"dense {D}", []).append(rank_error(sx, t.quantile(QS)))
                res.setdefault(f"dense range {D}", []).append(float(np.mean(np.abs(t.count(lo, hi) - truth))))
        rows.append({"data": name, **{k: float(np.mean(v)) for k, v in res.items()}})
    return rows


def report_accuracy(rows: list[dict], n: int, repeats: int) -> None:
    geo = {D: math.exp(np.mean([math.log(max(r[f"dense {D}"], 1e-9)) for r in rows])) for D in DENSE_D}
    fixed = min(geo, key=lambda D: geo[D])
    print(f"\nAccuracy, n = {n}, epsilon = {EPS}, {repeats} repeats: mean quantile rank error (records), "
          f"mean |range error|; best fixed D = 2^{int(math.log2(fixed))}")
    print(f"{'data':20s} {'oracle D':>8s} {'dense oracle':>12s} {'dense fixed':>11s} {'sparse':>7s} "
          f"{'/oracle':>7s} {'/fixed':>6s} {'levels':>7s} {'/oracle':>7s} {'leaf privtree':>13s} {'/oracle':>7s} "
          f"{'range err: sparse/oracle':>24s}")
    for r in rows:
        D = min(DENSE_D, key=lambda d: r[f"dense {d}"])
        o, f = r[f"dense {D}"], r[f"dense {fixed}"]
        print(f"{r['data']:20s} {'2^' + str(int(math.log2(D))):>8s} {o:12.1f} {f:11.1f} {r['sparse']:7.1f} "
              f"{r['sparse'] / o:7.2f} {r['sparse'] / f:6.2f} {r['levels']:7.1f} {r['levels'] / o:7.2f} "
              f"{r['privtree']:13.1f} {r['privtree'] / o:7.2f} {r['sparse range'] / r[f'dense range {D}']:24.2f}")


_CHILD = r"""
import json, sys, time
import numpy as np
sys.path.insert(0, {src!r}); sys.path.insert(0, {bench!r})
import dptree
from sparse_tree import dataset
kind, n = {kind!r}, {n}
if kind == "dense":
    x = np.random.default_rng(0).integers(0, 2**20, n)
else:
    x = dataset(kind, n, 0)
import tracemalloc
def release():
    if kind == "dense":
        return dptree.range_tree(x, lower=0, upper=2**20 - 1, epsilon=1.0, branching=16, rng=1)
    return dptree.sparse_range_tree(x, epsilon=1.0, rng=1)
t = time.perf_counter()
r = release()
el = time.perf_counter() - t
del r
tracemalloc.start()  # a second release, traced: peak bytes allocated by it (numpy reports to tracemalloc)
r = release()
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({{"time": el, "mem": peak}}))
"""


def run_child(kind: str, n: int) -> dict:
    code = _CHILD.format(src=str(ROOT / "src"), bench=str(ROOT / "benchmarks"), kind=kind, n=n)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def scaling(ns: list[int], repeats: int) -> None:
    print("\nTime and peak traced memory (median of repeats, alternating runs, each in a fresh process), ratios to "
          "the dense D = 2^20 release of the same n")
    print(f"{'n':>10s} {'dense s':>8s} {'dense MiB':>10s} {'data':22s} {'sparse s':>9s} {'time ratio':>11s} "
          f"{'sparse MiB':>11s} {'mem ratio':>10s}")
    for n in ns:
        for kind in ("64-bit ids", "lognormal latencies"):
            d, s = [], []
            for _ in range(repeats):
                d.append(run_child("dense", n))
                s.append(run_child(kind, n))
            dt, dm = np.median([v["time"] for v in d]), np.median([v["mem"] for v in d]) / 2**20
            st, sm = np.median([v["time"] for v in s]), np.median([v["mem"] for v in s]) / 2**20
            print(f"{n:10d} {dt:8.2f} {dm:10.0f} {kind:22s} {st:9.2f} {st / dt:11.2f} {sm:11.0f} {sm / max(dm, 1):10.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="n = 10^5 accuracy, n <= 10^6 scaling (about 2 minutes)")
    ap.add_argument("--scaling-only", type=int, nargs="+", metavar="N",
                    help="only the time/memory table at these n (e.g. --scaling-only 10000000)")
    ap.add_argument("--repeats", type=int, default=3, help="fresh-process repeats per cell of --scaling-only")
    args = ap.parse_args()
    t0 = time.perf_counter()
    if args.scaling_only:
        scaling(args.scaling_only, args.repeats)
        print(f"\n({time.perf_counter() - t0:.0f} s)")
        return
    n_acc, reps = (10**5, 2) if args.quick else (10**6, 3)
    report_accuracy(accuracy(n_acc, reps), n_acc, reps)
    scaling([10**5, 10**6] if args.quick else [10**5, 10**6, 10**7], 1 if args.quick else 3)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
