"""Diagnostic for docs/notes/quantiles.md ("More trials, and where the over-coverage comes from"): on the same
releases, the coverage of the calibrated interval with the factor chosen by several rules:
``worst`` (the default: larger factor of the two extreme phases), ``uniform`` (phase drawn per
simulation), ``own`` (the plug-in's own phase), ``p1``/``p0`` (one extreme phase), ``oracle`` (the
TRUE CDF and phase as the simulated truth: not available to a release; it shows whether the Monte
Carlo test itself is on target), ``pivot`` (factor 1).

    PYTHONPATH=src python3 benchmarks/quantiles_coverage_oracle.py KIND N DOMAIN TRIALS [PER_DATA]

e.g. ``uniform 10000 1024 1000 5`` (a fresh data set every 5 releases), ``dep_delay 10000 1048576 60``.
"""
import math, sys, time
import numpy as np
import dptree
from dptree.noise import make_source
from dptree.noise.integers import uniform_below
from dptree.quantiles.auto import TREE_BRANCHING, TREE_LEVELS
from dptree.rangetree.quantile_calibration import plug_in_cdf, straight_window, critical_scales, calibration_sims, RULES
from dptree.rangetree.quantile_pivot import tree_pivot, pivot_ends
from quantiles_coverage import coverage_line, make  # the coverage benchmark's data sets and rows

QS = np.array([0.05, 0.25, 0.5, 0.75, 0.95])

def variants(tree, qs, level, src, sims, F_true, grid=4096):
    pv = tree_pivot(tree, qs, level, grid=grid)
    est, plan, D = tree._est, tree.plan, pv.size
    pos, val = plug_in_cdf(est.monotone_cdf())
    n_plug = float(val[-1])
    err = est.simulated_cdf_errors(plan.noise_spec, plan.root_exact, sims, src, np.append(pv.idx + 1, D))
    n_true = float(F_true[-1])
    order = min(sims, math.ceil(level * (sims + 1))) - 1
    u = (uniform_below(src, 1 << 52, sims) + 0.5) / float(1 << 52)
    out = {k: np.zeros(len(qs)) for k in ("worst", "uniform", "own", "p1", "p0", "oracle")}
    for i, q in enumerate(qs):
        g, _, w = pv.level(i)
        e = err[:, pv.cols[i]]
        def crit(truth, n0, tb):
            n_sim = n0 + err[:, -1]
            c = critical_scales(g, truth + e - q * n_sim[:, None], w, tb)
            c[n_sim <= 0] = 0.0
            return float(np.partition(c, order)[order])
        t = q * n_plug
        s_i = float(np.interp(np.interp(t, val, pos), g, pv.sd(i)))
        kp, kv = straight_window(pos, val, t, RULES.window * s_i)
        y = float(np.interp(t, kv, kp)) if t > kv[0] else 0.0
        cs = []
        for shift in (y - math.floor(y), y - math.floor(y) - 1 + 1e-9):
            truth = np.interp(g + shift, kp, kv)[None, :]
            cs.append(crit(truth, n_plug, np.full(sims, min(max(math.ceil(y - shift), 0), D - 1))))
        out["p1"][i], out["p0"][i] = cs
        out["worst"][i] = max(cs)
        out["own"][i] = crit(np.interp(g, kp, kv)[None, :], n_plug, np.full(sims, min(max(math.ceil(y), 0), D - 1)))
        # uniform phase: q n at fraction u of the bucket: shift = y - floor(y) - 1 + u ... per sim
        shift = (y - math.floor(y)) - 1 + u  # u in (0,1): u=1 -> top (p1), u->0 -> bottom (p0)
        truth = np.interp(g[None, :] + shift[:, None], kp, kv)
        tb = np.clip(np.ceil(y - shift), 0, D - 1).astype(np.int64)
        out["uniform"][i] = crit(truth, n_plug, tb)
        # oracle: the true CDF
        tb = np.full(sims, int(np.searchsorted(F_true, q * n_true, side="left")))
        out["oracle"][i] = crit(F_true[g][None, :], n_true, tb)
    return pv, out

def main(kind, n, D, trials, start=0, per_data=0):
    x = make(kind, n, D, 0)
    F = np.searchsorted(x, np.arange(D), side="right").astype(float)
    true = np.array([np.searchsorted(F, q * n, side="left") for q in QS])
    ph = [(q * n - (F[t - 1] if t else 0)) / (F[t] - (F[t - 1] if t else 0)) for q, t in zip(QS, true)]
    print("phases", np.round(ph, 2), "bucket counts", [F[t] - (F[t - 1] if t else 0) for t in true])
    sims = calibration_sims(dptree.plan_range_tree(lower=0, upper=D - 1, epsilon=1.0, levels=TREE_LEVELS,
                                                   branching=TREE_BRANCHING).layout.padded_size)
    hits, width, facs = {}, {}, {}
    t0 = time.time()
    for s in range(start, start + trials):
        if per_data and (s - start) % per_data == 0:
            x = make(kind, n, D, 1000 + s)
            F = np.searchsorted(x, np.arange(D), side="right").astype(float)
            true = np.array([np.searchsorted(F, q * n, side="left") for q in QS])
        t = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=1.0, levels=TREE_LEVELS, branching=TREE_BRANCHING, rng=s)
        pv, out = variants(t, QS, 0.95, make_source(10**7 + s), sims, F)
        for k, sc in list(out.items()) + [("pivot", np.ones(QS.size))]:
            h = hits.setdefault(k, np.zeros(QS.size)); wd = width.setdefault(k, [])
            facs.setdefault(k, []).append(sc)
            for i, q in enumerate(QS):
                g, piv, half = pv.level(i)
                lo, hi = pivot_ends(g, piv, sc[i] * half, pv.size)
                h[i] += lo <= true[i] <= hi
                wd.append(hi - lo + 1)
    print(f"{kind} n={n} D={D} trials={trials} sims={sims} {time.time()-t0:.0f}s")
    for k in hits:
        print(coverage_line(k, hits[k], width[k], trials, f"factor {np.mean(facs[k]):.3f}  "), flush=True)

if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), per_data=int(sys.argv[5]) if len(sys.argv) > 5 else 0)
