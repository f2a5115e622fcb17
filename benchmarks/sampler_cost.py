"""Random draws per sample of the exact samplers, and how they depend on the sampled value.

Prints two tables (used in docs/verification.md):

1. one sample at a time through a counting source: mean bytes and calls of random_bytes()
   per sample, grouped by |output| (in units of the scale); this is the timing side channel of
   rejection sampling (CKS 2020): more work for outputs far from 0;
2. batched (vectorised) calls: bytes per sample and total calls for growing batch sizes.

    PYTHONPATH=src python3 benchmarks/sampler_cost.py
"""

from __future__ import annotations

import math
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


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    one_at_a_time(noise.discrete_laplace, 3.0, 3.0, n)
    one_at_a_time(noise.discrete_gaussian, 9.0, 3.0, n)
    batched(noise.discrete_laplace, 3.0)
    batched(noise.discrete_laplace, 1 / 3)
    batched(noise.discrete_gaussian, 9.0)
    batched(noise.discrete_gaussian, 1000 / 3)


if __name__ == "__main__":
    main()
