"""Is a coverage shortfall the calibration's or the draw's? On the releases of
``quantile_ci_coverage.py`` (same data and release seeds), the coverage of the interval whose factor
is calibrated on the *true* CDF of the data (an oracle no release has: no plug-in, no phase), with
``high="last"``. By exchangeability this covers at least 0.95 on average over the noise for every
data set, so over the same releases it shows how far the benchmark's own draw of noise sits from
0.95 (docs/notes/quantiles.md, "Late-starting data: the draw").

    PYTHONPATH=src:benchmarks python3 benchmarks/quantile_ci_exact_oracle.py uniform_late 1000 1024 3000 --q 0.05
    PYTHONPATH=src:benchmarks python3 benchmarks/quantile_ci_exact_oracle.py uniform_late 1000 1024 600 --q 0.05 --start 0
"""

from __future__ import annotations

import math

import numpy as np

import dptree
from dptree.noise import make_source
from dptree.rangetree.quantile_calibration import critical_scales
from dptree.rangetree.quantile_pivot import tree_intervals, tree_pivot
from quantile_ci_coverage import make, release_arguments


def main() -> None:
    ap = release_arguments(__doc__.splitlines()[0])
    ap.add_argument("--q", type=float, default=0.05)
    ap.add_argument("--sims", type=int, default=199)
    ap.add_argument("--start", type=int, default=0, help="first release seed (the benchmark's: 0)")
    ap.add_argument("--blocks", type=int, default=5, help="print the coverage of this many consecutive blocks")
    a = ap.parse_args()
    n, D, q, qs = a.n, a.domain, a.q, np.array([a.q])
    order = min(a.sims, math.ceil(0.95 * (a.sims + 1))) - 1
    hits = []
    for s in range(a.start, a.start + a.trials):
        x = make(a.kind, n, D, np.random.default_rng(1000 + s // 5))  # quantile_ci_coverage.py's data
        F = np.searchsorted(x, np.arange(D), side="right")
        true = int(np.searchsorted(F, q * n, side="left"))
        t = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=1.0, rng=s)
        pv = tree_pivot(t, qs, 0.95)
        g, _, half = pv.level(0)
        est, plan = t._est, t.plan
        err = est.simulated_cdf_errors(plan.noise_spec, plan.root_exact, a.sims, make_source(10_000 + s),
                                       np.append(pv.idx + 1, D))
        piv = F[g][None, :] + err[:, pv.cols[0]] - q * (n + err[:, -1])[:, None]
        c = critical_scales(g, piv, half, np.full(a.sims, true), -np.inf, "last")
        scale = np.array([float(np.partition(c, order)[order])])
        lo, hi = tree_intervals(t, qs, 0.95, scale=scale, pivot=pv, high=("last",), contain=t.quantile_bucket(qs))
        hits.append(bool(lo[0] <= true <= hi[0]))
    h = np.array(hits, dtype=float)
    se = math.sqrt(0.95 * 0.05 / h.size)
    print(f"{a.kind} n={n} D={D} q={q} releases {a.start}..{a.start + a.trials - 1}: exact-oracle coverage "
          f"{h.mean():.3f} (0.95 +- {se:.3f})  per block of {h.size // a.blocks}: "
          + " ".join(f"{b.mean():.3f}" for b in np.array_split(h, a.blocks)))


if __name__ == "__main__":
    main()
