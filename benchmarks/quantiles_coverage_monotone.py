"""Experiment for docs/quantiles.md (Coverage, "not fixed"): the calibrated interval read off a monotone
(isotonic) fit of F_hat on each level's read-off grid, the simulated releases fitted the same way and the
factor chosen as in dptree.quantiles.calibration (two extreme phases). Not the library's interval: a
measured proposal for the sparse cells where the pivot's factor-0 interval already over-covers.

    PYTHONPATH=src python3 benchmarks/quantiles_coverage_monotone.py KIND N DOMAIN TRIALS
"""
import math, sys, time
import numpy as np
from scipy.optimize import isotonic_regression
sys.path.insert(0, __import__("os").path.dirname(__file__))
import dptree
from dptree.noise import make_source
from dptree.quantiles.auto import TREE_BRANCHING, TREE_LEVELS
from dptree.quantiles.calibration import plug_in_cdf, straight_window, critical_scales, calibration_sims, WINDOW
from dptree.quantiles.intervals import tree_pivot, pivot_ends
from quantiles_coverage import make, QS

def iso_rows(a):
    return np.array([isotonic_regression(r).x for r in np.atleast_2d(a)])

kind, n, D, trials = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
x = make(kind, n, D, 0)
F = np.searchsorted(x, np.arange(D), side="right")
true = np.array([np.searchsorted(F, q * n, side="left") for q in QS])
sims = calibration_sims(dptree.plan_range_tree(lower=0, upper=D - 1, epsilon=1.0, levels=TREE_LEVELS, branching=TREE_BRANCHING).layout.padded_size)
order = min(sims, math.ceil(0.95 * (sims + 1))) - 1
hits = np.zeros(QS.size); wid = []; t0 = time.time(); facs = []
for s in range(trials):
    t = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=1.0, levels=TREE_LEVELS, branching=TREE_BRANCHING, rng=s)
    pv = tree_pivot(t, QS, 0.95)
    est = t._est
    pos, val = plug_in_cdf(est.monotone_cdf()); n_plug = float(val[-1])
    err = est.simulated_cdf_errors(t.plan.noise_spec, t.plan.root_exact, sims, make_source(10**7 + s), np.append(pv.idx + 1, D))
    n_sim = n_plug + err[:, -1]
    for i, q in enumerate(QS):
        g, _, half = pv.level(i)
        e = err[:, pv.cols[i]]
        tt = q * n_plug
        s_i = float(np.interp(np.interp(tt, val, pos), g, pv.sd(i)))
        kp, kv = straight_window(pos, val, tt, WINDOW * s_i)
        y = float(np.interp(tt, kv, kp)) if tt > kv[0] else 0.0
        c = 0.0
        for u in (1.0, 1e-9):
            shift = y - math.floor(y) - 1.0 + u
            truth = np.interp(g + shift, kp, kv)
            tb = np.full(sims, min(max(math.ceil(y - shift), 0), D - 1))
            M = iso_rows(truth[None, :] + e) - q * n_sim[:, None]
            cs = critical_scales(g, M, half, tb)
            c = max(c, float(np.partition(cs, order)[order]))
        facs.append(c)
        Mr = isotonic_regression(pv.F[pv.cols[i]]).x - q * pv.n_hat
        lo, hi = pivot_ends(g, Mr, c * half, D)
        hits[i] += lo <= true[i] <= hi; wid.append(hi - lo + 1)
cov = hits.sum() / (trials * QS.size)
print(f"iso {kind} n={n} D={D} trials={trials}: {cov:.3f} +- {math.sqrt(cov*(1-cov)/(trials*QS.size)):.3f} width {np.mean(wid):.1f} factor {np.mean(facs):.3f} per level", " ".join(f"{h/trials:.3f}" for h in hits), f"({time.time()-t0:.0f} s)", flush=True)
