"""Coverage of ``RangeTree.quantile_ci`` on the default tree (``dptree.range_tree`` defaults),
epsilon = 1, levels 0.05, 0.25, 0.5, 0.75, 0.95 (``--qs``), a fresh data set every 5 releases: the
calibrated interval (the default: factor and high-end rule per level), the calibrated interval with
the high end always after the last non-significant bucket (``last``: the default before Nov 24), the
calibrated interval with the isotonic fit's tail as the only plug-in (``spread``: before the three tails,
``CalibrationRules(tail_plug_ins=False)``), the calibrated interval whose top levels lean on the
plug-in's shape of the last ranks (``shape``: ``far_top=True``, ``unresolved_z=0``, one straight
window, the default before Nov 24 13:00 UTC), the calibrated interval with one straight window unless
it reaches the plug-in's ends (``straight``: ``split_everywhere=False``, the default from 13:00 to
14:00 UTC), and the uncalibrated pivot interval
(``interval="pivot"``). Prints the coverage over all levels, per level, and the mean width in
buckets, over all levels and per level (docs/notes/quantiles.md, "The high end", "Data that end before
the domain", "Ranks the release cannot place"). Data (``KINDS``): uniform over the domain,
log-normal(5, 1) capped at its end, two that end well before it and one that starts late.

    PYTHONPATH=src python3 benchmarks/quantile_ci_coverage.py lognormal 1000 1024 300
    PYTHONPATH=src python3 benchmarks/quantile_ci_coverage.py lognormal 1000 1024 200 --noise gaussian --variants calibrated
    PYTHONPATH=src python3 benchmarks/quantile_ci_coverage.py uniform_quarter 1000 1024 100 --variants calibrated,spread --qs 0.5,0.9,0.95,0.99,1
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np

import dptree
from dptree.noise import make_source
from dptree.rangetree.quantile_calibration import RULES, calibrated_scales, calibration_sims, released_intervals
from dptree.rangetree.quantile_pivot import tree_intervals

QS = np.array([0.05, 0.25, 0.5, 0.75, 0.95])
#: uniform over the domain; log-normal(5, 1) capped at its end; data that end well before it:
#: uniform on its first quarter, log-normal(3, 0.8) (largest values a few hundred); and data that
#: start late: uniform on its last quarter
KINDS = ("uniform", "lognormal", "uniform_quarter", "lognormal_early", "uniform_late")
#: earlier calibrations, for comparison: the isotonic tail alone (as before the three tails), the top's
#: high end leaning on the plug-in's shape (before the unresolved rule), one straight window unless it
#: reaches the plug-in's ends (as 13:00-14:00 UTC, Nov 24)
EARLIER = {
    "spread": replace(RULES, tail_plug_ins=False, far_top=True, unresolved_z=0.0, split_everywhere=False),
    "shape": replace(RULES, far_top=True, unresolved_z=0.0, split_everywhere=False),
    "straight": replace(RULES, split_everywhere=False),
}


def make(kind: str, n: int, D: int, g: np.random.Generator) -> np.ndarray:
    if kind == "uniform":
        x = g.integers(0, D, n)
    elif kind == "uniform_quarter":
        x = g.integers(0, max(D // 4, 1), n)
    elif kind == "uniform_late":
        x = g.integers(D - max(D // 4, 1), D, n)
    elif kind == "lognormal_early":
        x = g.lognormal(3, 0.8, n).astype(np.int64)
    else:
        x = g.lognormal(5, 1, n).astype(np.int64)
    return np.sort(np.minimum(x, D - 1))


def release_arguments(description: str) -> argparse.ArgumentParser:
    """The arguments every coverage script of these releases takes: kind, n, domain, trials."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("kind", choices=KINDS)
    ap.add_argument("n", type=int)
    ap.add_argument("domain", type=int)
    ap.add_argument("trials", type=int)
    return ap


def main() -> None:
    ap = release_arguments(__doc__.splitlines()[0])
    ap.add_argument("--variants", default="calibrated,last,pivot")
    ap.add_argument("--noise", default="laplace", choices=("laplace", "gaussian"))
    ap.add_argument("--delta", type=float, default=1e-6, help="with --noise gaussian")
    ap.add_argument("--qs", default=",".join(map(str, QS)), help="the levels, comma-separated")
    a = ap.parse_args()
    qs = np.array([float(q) for q in a.qs.split(",")])
    n, D = a.n, a.domain
    noise = {"noise": "gaussian", "delta": a.delta} if a.noise == "gaussian" else {}
    hits = {v: np.zeros(qs.size) for v in a.variants.split(",")}
    width: dict[str, list[float]] = {k: [] for k in hits}
    for s in range(a.trials):
        x = make(a.kind, n, D, np.random.default_rng(1000 + s // 5))
        F = np.searchsorted(x, np.arange(D), side="right")
        true = np.array([np.searchsorted(F, q * n, side="left") for q in qs])
        t = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=1.0, rng=s, **noise)
        for k in hits:
            if k in EARLIER:  # what t.quantile_ci(qs, rng=10_000 + s) gave under the earlier rules
                lo, hi = released_intervals(t, qs, 0.95, source=make_source(10_000 + s), rules=EARLIER[k],
                                            sims=calibration_sims(t.layout.padded_size))
            elif k == "last":
                sc = calibrated_scales(t, qs, 0.95, source=make_source(10_000 + s),
                                       sims=calibration_sims(t.layout.padded_size))
                lo, hi = tree_intervals(t, qs, 0.95, scale=sc, contain=t.quantile_bucket(qs))
            else:
                lo, hi = t.quantile_ci(qs, interval=k, rng=10_000 + s)
            hits[k] += (lo <= true) & (true <= hi)
            width[k].extend(hi - lo + 1)
    for k in hits:
        print(f"{a.kind} n={n} D={D} {a.noise} {k:>11}: {hits[k].sum() / (qs.size * a.trials):.3f}  per level "
              + " ".join(f"{h / a.trials:.3f}" for h in hits[k]) + f"  width {np.mean(width[k]):.1f}"
              + "  per level " + " ".join(f"{w:.0f}" for w in np.mean(np.reshape(width[k], (-1, qs.size)), axis=0)))


if __name__ == "__main__":
    main()
