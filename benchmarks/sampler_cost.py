"""Random draws per sample of the exact samplers, and how they depend on the sampled value.

Prints two tables (used in docs/notes/verification.md):

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

With ``--noise`` (issue 13, item 1; docs/notes/speed_noise.md) it prints the table-inversion sampler
(dptree.noise.inversion) against the pre-issue-13 sampler (tests/unit/noise/reference_laplace.py),
the bytes alone (ChaCha20 and os.urandom, 8 per sample) and numpy's non-private
``Generator.integers``, in ns/sample for scales 1, 10, 100, 10^4 and sizes 10^4..10^7; then the
noise step of a range-tree release (old vs new sampler, timed separately) and the whole release:

    PYTHONPATH=src python3 benchmarks/sampler_cost.py --noise [--reps 3] [--max-size 10000000]
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
    if a[:, 2].std() == 0:
        print(f"  calls per sample constant ({a[0, 2]:.0f}): no correlation with |x|")
    else:
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


def _old_sampler():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "tests" / "unit" / "noise"))
    import reference_laplace  # type: ignore[import-not-found]

    return reference_laplace.discrete_laplace


def _ratio(t: dict[str, list[float]], a: str, b: str) -> float:
    return float(np.median(np.array(t[a]) / np.array(t[b])))


def noise_speed(reps: int, max_size: int) -> None:
    """ns/sample of the new and old discrete Laplace against bytes and numpy, same interleaved run."""
    old_laplace = _old_sampler()
    chacha, urandom = noise.SystemRandomSource(), UrandomSource()
    gen = np.random.default_rng(1)
    print(f"# discrete Laplace, ns/sample; {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}, medians of "
          f"{reps} interleaved rounds; ratios are medians of per-round ratios")
    print("| scale | samples | new | old | ChaCha 8 B | urandom 8 B | numpy integers | new/numpy | new/ChaCha | old/new |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for scale in (1.0, 10.0, 100.0, 1e4):
        for size in (10**4, 10**5, 10**6, 10**7):
            if size > max_size:
                continue
            fns = {"new": lambda: noise.discrete_laplace(chacha, scale, size),
                   "old": lambda: old_laplace(chacha, scale, size),
                   "chacha": lambda: np.frombuffer(chacha.random_bytes(8 * size), dtype=np.uint64),
                   "urandom": lambda: np.frombuffer(urandom.random_bytes(8 * size), dtype=np.uint64),
                   "numpy": lambda: gen.integers(-1000, 1000, size=size)}
            t = _interleaved(fns, reps)
            ns = {k: np.median(v) / size * 1e9 for k, v in t.items()}
            print(f"| {scale:g} | {size:.0e} | {ns['new']:.1f} | {ns['old']:.1f} | {ns['chacha']:.1f} | "
                  f"{ns['urandom']:.1f} | {ns['numpy']:.1f} | {_ratio(t, 'new', 'numpy'):.2f}x | "
                  f"{_ratio(t, 'new', 'chacha'):.2f}x | {_ratio(t, 'old', 'new'):.1f}x |")


def release_noise(reps: int, cases: list[tuple[int, int]]) -> None:
    """The noise step of dptree.range_tree (epsilon 1, default branching), old vs new sampler, and the
    whole release with each, against np.bincount of the same data, interleaved."""
    import dptree
    from dptree.data.domain import coerce_values
    from dptree.rangetree.release import plan_range_tree

    old_laplace = _old_sampler()
    new_laplace = noise.discrete_laplace
    print("\n| D | n | samples | scales | bincount | noise new | noise old | old/new | release new | "
          "release old | release new / bincount |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for d, n in cases:
        x = np.random.default_rng(12345).integers(0, d, size=n, dtype=np.int64)
        plan = plan_range_tree(lower=0, upper=d - 1, epsilon=1.0)
        hist = np.bincount(plan.domain.to_leaves(coerce_values(x, plan.domain)), minlength=plan.layout.padded_size)
        levels = plan.layout.level_counts(hist.astype(np.int64))
        src = noise.SystemRandomSource()
        pairs = [(p, c) for p, c in zip(plan.noise_parameters, levels) if p is not None]
        samples = sum(c.size for _, c in pairs)
        scales = sorted({float(p) for p, _ in pairs})

        def release(sampler):  # type: ignore[no-untyped-def]
            noise.discrete_laplace = sampler  # measurement.py reads dptree.noise.discrete_laplace per call
            try:
                return dptree.range_tree(x, lower=0, upper=d - 1, epsilon=1.0)
            finally:
                noise.discrete_laplace = new_laplace

        fns = {"bincount": lambda: np.bincount(x, minlength=d),
               "noise new": lambda: [c + new_laplace(src, p, c.size) for p, c in pairs],
               "noise old": lambda: [c + old_laplace(src, p, c.size) for p, c in pairs],
               "release new": lambda: release(new_laplace),
               "release old": lambda: release(old_laplace)}
        t = _interleaved(fns, reps)
        med = {k: float(np.median(v)) for k, v in t.items()}
        sc = ", ".join(f"{s:g}" for s in scales[:3]) + (" ..." if len(scales) > 3 else "")
        print(f"| 2^{d.bit_length() - 1} | {n:.0e} | {samples:.2e} | {sc} | {med['bincount'] * 1e3:.0f} ms | "
              f"{med['noise new'] * 1e3:.0f} ms | {med['noise old'] * 1e3:.0f} ms | {_ratio(t, 'noise old', 'noise new'):.1f}x | "
              f"{med['release new'] * 1e3:.0f} ms | {med['release old'] * 1e3:.0f} ms | "
              f"{_ratio(t, 'release new', 'bincount'):.1f}x |")


def main() -> None:
    if "--noise" in sys.argv:
        reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 3
        max_size = int(sys.argv[sys.argv.index("--max-size") + 1]) if "--max-size" in sys.argv else 10**7
        noise_speed(reps, max_size)
        release_noise(reps, [(2**20, 10**7), (2**24, 10**7)] if max_size >= 10**7 else [(2**16, 10**6)])
        return
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
