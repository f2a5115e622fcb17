"""Random draws per sample of the exact samplers, and how they depend on the sampled value.

Prints two tables (used in docs/verification.md):

1. one sample at a time through a counting source: mean bytes and calls of random_bytes()
   per sample, grouped by |output| (in units of the scale); this is the timing side channel of
   rejection sampling (CKS 2020): more work for outputs far from 0;
2. batched (vectorised) calls: bytes per sample and total calls for growing batch sizes.

    PYTHONPATH=src python3 benchmarks/sampler_cost.py

With ``--speed`` it prints instead (issue 13) the throughput of the private source
(SystemRandomSource: ChaCha20 keyed from the OS, dptree.noise.chacha) against ``os.urandom``
(the source before issue 13), per request size, and the discrete Laplace sampler's time per
sample with each source; rounds are interleaved and ratios are medians of per-round ratios:

    PYTHONPATH=src python3 benchmarks/sampler_cost.py --speed [--reps 5]
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dptree import noise  # noqa: E402

CountingSource = noise.CountingRandomSource


def one_at_a_time(sampler, param: float, scale: float, n: int) -> None:
    src = CountingSource(1)
    rows = []
    for _ in range(n):
        b0, c0 = src.bytes, src.calls
        t0 = time.perf_counter_ns()
        v = int(sampler(src, param, 1)[0])
        rows.append((abs(v) / scale, src.bytes - b0, src.calls - c0, time.perf_counter_ns() - t0))
    a = np.array(rows, dtype=np.float64)
    print(f"\n{sampler.__name__}({param}): one sample per call, n = {n}")
    print(f"  {'|x|/scale':>12s} {'samples':>8s} {'bytes':>8s} {'calls':>8s} {'time us':>8s}")
    edges = [0, 1e-9, 0.5, 1, 2, 3, 5, math.inf]
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = (a[:, 0] >= lo) & (a[:, 0] < hi) if lo > 0 else a[:, 0] == 0
        if sel.sum() == 0:
            continue
        label = "0" if lo == 0 else f"[{lo:g}, {hi:g})"
        print(f"  {label:>12s} {int(sel.sum()):>8d} {a[sel, 1].mean():>8.1f} {a[sel, 2].mean():>8.1f} {a[sel, 3].mean() / 1000:>8.1f}")
    print(f"  correlation(|x|, calls) = {np.corrcoef(a[:, 0], a[:, 2])[0, 1]:.3f}")


def batched(sampler, param: float) -> None:
    print(f"\n{sampler.__name__}({param}): batched")
    print(f"  {'size':>9s} {'bytes/sample':>13s} {'calls':>7s}")
    for size in (1_000, 10_000, 100_000, 1_000_000):
        src = CountingSource(2)
        sampler(src, param, size)
        print(f"  {size:>9d} {src.bytes / size:>13.1f} {src.calls:>7d}")


class UrandomSource:
    """The private source before issue 13: every byte straight from the kernel (os.urandom)."""

    def random_bytes(self, n: int) -> bytes:
        return os.urandom(n)


def _interleaved(fns: dict, reps: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {k: [] for k in fns}
    for f in fns.values():  # warm-up
        f()
    for _ in range(reps):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    return times


def speed(reps: int) -> None:
    print(f"# random sources and the discrete Laplace sampler; {os.cpu_count()} cpus, load "
          f"{os.getloadavg()[0]:.1f}, medians of {reps} interleaved rounds")
    print(f"\n  {'request':>10s} {'calls':>7s} {'urandom MB/s':>13s} {'ChaCha MB/s':>12s} {'ChaCha / urandom':>17s}")
    new, old = noise.SystemRandomSource(), UrandomSource()
    for size, calls in ((16, 20_000), (4096, 2_000), (1 << 20, 40), (80_000_000, 1)):
        t = _interleaved({"old": lambda: [old.random_bytes(size) for _ in range(calls)],
                          "new": lambda: [new.random_bytes(size) for _ in range(calls)]}, reps)
        o, w = np.median(t["old"]), np.median(t["new"])
        ratio = np.median(np.array(t["old"]) / np.array(t["new"]))
        print(f"  {size:>10d} {calls:>7d} {size * calls / o / 1e6:>13.0f} {size * calls / w / 1e6:>12.0f} "
              f"{ratio:>16.2f}x")
    print(f"\n  {'samples':>10s} {'scale':>6s} {'urandom ns/sample':>18s} {'ChaCha ns/sample':>17s} {'old / new':>10s}")
    for size in (10**6, 10**7):
        for scale in (3.0, 1000.0):
            t = _interleaved({"old": lambda: noise.discrete_laplace(old, scale, size),
                              "new": lambda: noise.discrete_laplace(new, scale, size)}, reps)
            o, w = np.median(t["old"]), np.median(t["new"])
            ratio = np.median(np.array(t["old"]) / np.array(t["new"]))
            print(f"  {size:>10d} {scale:>6g} {o / size * 1e9:>18.1f} {w / size * 1e9:>17.1f} {ratio:>9.2f}x")


def main() -> None:
    if "--speed" in sys.argv:
        reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 5
        speed(reps)
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    one_at_a_time(noise.discrete_laplace, 3.0, 3.0, n)
    one_at_a_time(noise.discrete_gaussian, 9.0, 3.0, n)
    batched(noise.discrete_laplace, 3.0)
    batched(noise.discrete_laplace, 1 / 3)
    batched(noise.discrete_gaussian, 9.0)
    batched(noise.discrete_gaussian, 1000 / 3)


if __name__ == "__main__":
    main()
