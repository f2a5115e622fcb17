"""Coverage of ``RangeTree.quantile_ci`` on the default tree (``dptree.range_tree`` defaults),
epsilon = 1, levels 0.05, 0.25, 0.5, 0.75, 0.95, a fresh data set every 5 releases: the calibrated
interval (the default: factor and high-end rule per level), the calibrated interval with the high
end always after the last non-significant bucket (``last``: the default before Nov 24), and the
uncalibrated pivot interval (``interval="pivot"``). Prints the coverage over all levels, per level,
and the mean width in buckets, over all levels and per level (docs/quantiles.md, "The high end").

    PYTHONPATH=src python3 benchmarks/quantile_ci_coverage.py lognormal 1000 1024 300
    PYTHONPATH=src python3 benchmarks/quantile_ci_coverage.py lognormal 1000 1024 200 --noise gaussian --variants calibrated
"""

from __future__ import annotations

import argparse

import numpy as np

import dptree
from dptree.noise import make_source
from dptree.rangetree.quantile_calibration import calibrated_scales, calibration_sims
from dptree.rangetree.quantile_pivot import tree_intervals

QS = np.array([0.05, 0.25, 0.5, 0.75, 0.95])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=("uniform", "lognormal"))
    ap.add_argument("n", type=int)
    ap.add_argument("domain", type=int)
    ap.add_argument("trials", type=int)
    ap.add_argument("--variants", default="calibrated,last,pivot")
    ap.add_argument("--noise", default="laplace", choices=("laplace", "gaussian"))
    ap.add_argument("--delta", type=float, default=1e-6, help="with --noise gaussian")
    a = ap.parse_args()
    n, D = a.n, a.domain
    noise = {"noise": "gaussian", "delta": a.delta} if a.noise == "gaussian" else {}
    hits = {v: np.zeros(QS.size) for v in a.variants.split(",")}
    width: dict[str, list[float]] = {k: [] for k in hits}
    for s in range(a.trials):
        g = np.random.default_rng(1000 + s // 5)
        x = g.integers(0, D, n) if a.kind == "uniform" else np.minimum(g.lognormal(5, 1, n).astype(int), D - 1)
        x = np.sort(x)
        F = np.searchsorted(x, np.arange(D), side="right")
        true = np.array([np.searchsorted(F, q * n, side="left") for q in QS])
        t = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=1.0, rng=s, **noise)
        for k in hits:
            if k == "last":
                sc = calibrated_scales(t, QS, 0.95, source=make_source(10_000 + s),
                                       sims=calibration_sims(t.layout.padded_size))
                lo, hi = tree_intervals(t, QS, 0.95, scale=sc, contain=t.quantile_bucket(QS))
            else:
                lo, hi = t.quantile_ci(QS, interval=k, rng=10_000 + s)
            hits[k] += (lo <= true) & (true <= hi)
            width[k].extend(hi - lo + 1)
    for k in hits:
        print(f"{a.kind} n={n} D={D} {a.noise} {k:>11}: {hits[k].sum() / (QS.size * a.trials):.3f}  per level "
              + " ".join(f"{h / a.trials:.3f}" for h in hits[k]) + f"  width {np.mean(width[k]):.1f}"
              + "  per level " + " ".join(f"{w:.0f}" for w in np.mean(np.reshape(width[k], (-1, QS.size)), axis=0)))


if __name__ == "__main__":
    main()
