"""Diagnostic for docs/notes/quantiles.md (Coverage, the split plug-in window): per release of the
benchmark's log-normal data (n = 1000 over 2^20, epsilon = 1), the calibration's plug-in at one level
(default q = 0.95): its total, the pivot's standard deviation, the window's left end a, the plug-in
quantile y, the left line's density 3 sd / (y - a) (records a bucket; the truth's is printed first),
the calibrated factor and whether the interval covers.

    PYTHONPATH=src python3 benchmarks/quantiles_coverage_tail.py RELEASES [LEVEL_INDEX]
"""

from __future__ import annotations

import sys

import numpy as np

import dptree
from dptree.noise import make_source
from dptree.quantiles.auto import TREE_BRANCHING, TREE_LEVELS
from dptree.rangetree.quantile_calibration import RULES, calibrated_scales, plug_in_cdf, straight_window
from dptree.rangetree.quantile_pivot import tree_intervals, tree_pivot
from quantiles_coverage import QS, make  # benchmarks/ is on the path when run as a script


def main() -> None:
    releases, i = int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 4
    D, n, q = 2**20, 1000, float(QS[i])
    x = make("lognormal", n, D, 0)
    F = np.searchsorted(x, np.arange(D), side="right")
    true = int(np.searchsorted(F, q * n, side="left"))
    lo_r = int(np.searchsorted(F, q * n - 90))
    print(f"true quantile {true}; true density left of it {90 / (true - lo_r):.4f} (ranks {q * n - 90:.0f}-{q * n:.0f})")
    for s in range(releases):
        t = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=1.0, levels=TREE_LEVELS, branching=TREE_BRANCHING, rng=s)
        pv = tree_pivot(t, QS, 0.95)
        sc = calibrated_scales(t, QS, 0.95, source=make_source(10**7 + s), sims=39, pivot=pv)
        lo, hi = tree_intervals(t, QS, 0.95, scale=sc, pivot=pv)
        pos, val = plug_in_cdf(t._est.monotone_cdf())
        tt = q * val[-1]
        s_i = float(np.interp(np.interp(tt, val, pos), pv.level(i)[0], pv.sd(i)))
        kp, kv = straight_window(pos, val, tt, RULES.window * s_i)
        y, a = float(np.interp(tt, kv, kp)), float(np.interp(tt - RULES.window * s_i, val, pos))
        print(f"release {s}: total {val[-1]:.0f} sd {s_i:.0f} a {a:.0f} y {y:.0f} density {RULES.window * s_i / (y - a):.4f} "
              f"factor {sc[i]:.2f} interval [{lo[i]}, {hi[i]}] covers {lo[i] <= true <= hi[i]}")


if __name__ == "__main__":
    main()
