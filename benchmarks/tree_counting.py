"""Seed 001's Table 1, empirically: alpha-mRMSE of tree-counting mechanisms as the depth grows.

    PYTHONPATH=src python3 benchmarks/tree_counting.py            # default run (< 10 min, 2 cores)
    PYTHONPATH=src python3 benchmarks/tree_counting.py --quick    # smoke run

What it measures (Ghazi et al., ``001_4ad1135f2c911f1b.txt``):

1. alpha-mRMSE (Definition 1.4) at alpha in {0, 0.1, 0.5} on complete binary trees of depth
   d = 4..20 (d = nodes on a root-leaf path) and on one irregular geography-shaped tree, with
   heavy-tailed leaf counts, for: Laplace (eps-DP), Gaussian, Gaussian + consistency (GLS) and
   the multiplicative algorithm of Theorem 4.1 (alpha = 0.1, 0.5) with the paper's tau_min and
   with a calibrated tau_min (chosen on a public synthetic pilot tree, never on the data).
   Estimator of the max over nodes (issue 16: no Monte Carlo where the law is known):
   raw Laplace / Gaussian: every node has the same exact error law (discrete Laplace, discrete
   Gaussian) and RMSE_alpha decreases in w, so the max is E[(|X| - alpha w_min)_+^2]^(1/2)
   summed exactly over the integer pmf (no sampling error); Gaussian + consistency: exact node
   variances (checked against simulated errors in the consistency table) with a normal law for
   the sum of independent discrete Gaussians; the multiplicative algorithm has no closed form:
   R repetitions, the worst node is selected on the first half and its RMSE_alpha estimated on
   the independent second half (no max-over-nodes selection bias), reported with its standard
   error (delta method). Rounds: the mean number of Reduction rounds ell (rounds in which
   Classification/Sparse run) per release.
   Gaussian columns: the zCDP calibration (sigma = 4.53 sqrt(d) at (1, 1e-6)) and the exact
   discrete-Gaussian calibration (dptree's default since issue 16, 4.22 sqrt(d)).
6. Large counts, where Algorithms 1-3 actually run (root >> alpha tau_min).
2. Growth in d: least-squares fit of log(error) against log(a f(d)) for f = d, sqrt d, log d.
3. Consistency: measured mean variance reduction against the exact formula's prediction.
4. Bias of the non-negative / integer post-processing.
5. Speed: a 10^6-node hierarchy release against pandas groupby().size() on the same rows.

Results go to stdout (markdown) and, with --write, to docs/notes/hierarchy_results.md and
docs/notes/hierarchy_table1.png.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

from dptree.estimation.least_squares import consistent_estimates, node_variances
from dptree.hierarchy import Hierarchy, hierarchy_counts, node_weights
from dptree.hierarchy.multiplicative import Tree, mrmse_wrapper, theorem_4_1_tau_min
from dptree.noise import (
    discrete_gaussian,
    discrete_gaussian_variance,
    discrete_laplace,
    discrete_laplace_variance,
    gaussian_sigma2_used,
    laplace_scale_used,
    make_source,
)
from dptree.privacy.budget import discrete_gaussian_sigma2_for, zcdp_rho_for

EPS, DELTA = 1.0, 1e-6
ALPHAS = (0.0, 0.1, 0.5)
BIAS_REPS = 40
ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------ trees and data


def complete_binary(depth: int) -> tuple[list, list[int]]:
    parents: list = [None]
    sizes = [1]
    for _ in range(1, depth):
        parents.append(np.repeat(np.arange(sizes[-1]), 2))
        sizes.append(sizes[-1] * 2)
    return parents, sizes


def geography_tree(rng: np.random.Generator) -> Hierarchy:
    """country -> 51 states -> counties (heavy-tailed count) -> tracts; some counties are leaves."""
    paths = []
    for s in range(51):
        n_c = max(1, int(rng.lognormal(3.7, 0.8)))
        for c in range(n_c):
            if rng.random() < 0.15:
                paths.append(f"S{s}/C{c}")
                continue
            for t in range(max(1, int(rng.lognormal(2.2, 0.9)))):
                paths.append(f"S{s}/C{c}/T{t}")
    return Hierarchy.from_paths(paths, levels=["state", "county", "tract"])


def heavy_tailed_leaves(rng: np.random.Generator, n: int) -> np.ndarray:
    """Pareto(1) counts with about 40% zeros: a few huge leaves, many tiny or empty ones."""
    x = np.floor(rng.pareto(1.0, n) * 3.0)
    x[rng.random(n) < 0.4] = 0
    return np.minimum(x, 1e9).astype(np.int64)


def weights_of(parents: list, sizes: list[int], leaf_level_counts: list[np.ndarray]) -> list[np.ndarray]:
    return node_weights(leaf_level_counts, parents)


# ------------------------------------------------------------------------------ mechanisms


def gauss_sigma2(d: int, calibration: str = "zcdp") -> float:
    if calibration == "exact":
        return float(discrete_gaussian_sigma2_for(EPS, DELTA, d))
    return float(gaussian_sigma2_used(d / (2.0 * zcdp_rho_for(EPS, DELTA))))


def raw_errors(method: str, d: int, n: int, reps: int, src) -> tuple[np.ndarray, float]:  # type: ignore[no-untyped-def]
    """Noise of the raw baselines (Corollary 2.7), as drawn by dptree.noise: (reps, n), variance."""
    if method == "laplace":
        return discrete_laplace(src, d / EPS, reps * n).reshape(reps, n), discrete_laplace_variance(d / EPS)
    s2 = gauss_sigma2(d, "exact" if method == "gaussian-exact" else "zcdp")
    return discrete_gaussian(src, s2, reps * n).reshape(reps, n), discrete_gaussian_variance(s2)


def exact_raw_mrmse(method: str, d: int, wmin: float, alpha: float) -> float:
    """alpha-mRMSE of a raw baseline, exactly: E[(|X| - alpha w_min)_+^2]^(1/2) over the pmf."""
    if method == "laplace":
        lam = float(laplace_scale_used(d / EPS))
        H = int(60 * lam) + 10
        z = np.arange(-H, H + 1, dtype=np.float64)
        p = np.exp(-np.abs(z) / lam)
    else:
        s2 = gauss_sigma2(d, "exact" if method == "gaussian-exact" else "zcdp")
        H = int(40 * math.sqrt(s2)) + 10
        z = np.arange(-H, H + 1, dtype=np.float64)
        p = np.exp(-z * z / (2 * s2))
    p /= p.sum()
    return float(np.sqrt((p * np.maximum(np.abs(z) - alpha * wmin, 0.0) ** 2).sum()))


def gls_errors(parents: list, sizes: list[int], noise: np.ndarray, var: float) -> tuple[np.ndarray, np.ndarray]:
    """GLS error of each rep (the estimator is linear, so errors = GLS(noise)) and exact variances."""
    out = np.empty_like(noise, dtype=np.float64)
    vs = [np.full(s, var) for s in sizes]
    cuts = np.cumsum(sizes)[:-1]
    for r in range(noise.shape[0]):
        est = consistent_estimates(np.split(noise[r].astype(np.float64), cuts), vs, parents)
        out[r] = np.concatenate(est.x)
    est = consistent_estimates([np.zeros(s) for s in sizes], vs, parents)
    exact = np.concatenate(node_variances(vs, parents, est.V))
    return out, exact


def pooled_mrmse(err: np.ndarray, w: np.ndarray, classes: np.ndarray, alpha: float) -> float:
    """max over exchangeable classes of RMSE_alpha at the class's smallest true count."""
    best = 0.0
    for c in np.unique(classes):
        sel = classes == c
        wmin = float(w[sel].min())
        e = np.abs(err[:, sel]).ravel()
        best = max(best, float(np.sqrt(np.mean(np.maximum(e - alpha * wmin, 0.0) ** 2))))
    return best


def normal_mrmse(var: np.ndarray, w: np.ndarray, alpha: float) -> float:
    """max over nodes of RMSE_alpha for errors N(0, var) (GLS errors are sums of independent
    discrete Gaussians; their variance is the exact formula): E[(|X| - c)_+^2] =
    2((var + c^2) Q(c/sd) - c sd phi(c/sd)) with c = alpha w."""
    from scipy.stats import norm

    sd = np.sqrt(var)
    c = alpha * w
    k = c / sd
    val = 2.0 * ((var + c * c) * norm.sf(k) - c * sd * norm.pdf(k))
    return float(np.sqrt(np.maximum(val, 0.0)).max())


def per_node_mrmse(err: np.ndarray, w: np.ndarray, alpha: float) -> float:
    ex = np.maximum(np.abs(err) - alpha * w[None, :], 0.0)
    return float(np.sqrt((ex**2).mean(axis=0)).max())


def split_mrmse(err: np.ndarray, w: np.ndarray, alpha: float) -> tuple[float, float]:
    """max over nodes of RMSE_alpha without selection bias: the worst node is chosen on the first
    half of the reps, its RMSE_alpha estimated on the second half; returns (estimate, SE)."""
    R = err.shape[0]
    h = R // 2
    ex2 = np.maximum(np.abs(err) - alpha * w[None, :], 0.0) ** 2
    u = int(np.argmax(ex2[:h].mean(axis=0)))
    x = ex2[h:, u]
    m = float(x.mean())
    if m <= 0:
        return 0.0, 0.0
    se = float(x.std(ddof=1) / math.sqrt(x.size)) / (2.0 * math.sqrt(m)) if x.size > 1 else math.nan
    return math.sqrt(m), se


def multiplicative_errors(
    parents: list, sizes: list[int], w: list[np.ndarray], alpha: float, tau_min: float, reps: int, src,
    rounds: list | None = None,
) -> np.ndarray:  # type: ignore[no-untyped-def]
    tree = Tree(parents, sizes)
    truth = np.concatenate(w).astype(np.float64)
    out = np.empty((reps, truth.size))
    for r in range(reps):
        res = mrmse_wrapper(src, tree, w, alpha=alpha, epsilon=EPS, delta=DELTA, tau_min=tau_min)
        out[r] = np.concatenate(res.estimate) - truth
        if rounds is not None:
            rounds.append(int(res.info["ell"]))
    return out


# ------------------------------------------------------------------------------ experiments


def calibrate(alpha: float, src, quick: bool) -> float:  # type: ignore[no-untyped-def]
    """Pick tau_min / tau_default from a grid on a public synthetic pilot (complete tree, d=10,
    fresh synthetic counts): the factor with the smallest alpha-mRMSE."""
    d = 8 if quick else 10
    parents, sizes = complete_binary(d)
    rng = np.random.default_rng(12345)
    x = [np.zeros(s, dtype=np.int64) for s in sizes]
    x[-1] = heavy_tailed_leaves(rng, sizes[-1])
    w = node_weights(x, parents)
    truth = np.concatenate(w).astype(float)
    base = theorem_4_1_tau_min(alpha, EPS, DELTA, d)
    best = (math.inf, 1.0)
    for f in (1.0, 1e-1, 1e-2, 1e-3, 1e-4):
        err = multiplicative_errors(parents, sizes, w, alpha, base * f, 2, src)
        best = min(best, (per_node_mrmse(err, truth, alpha), f))
    return best[1]


def fit_growth(ds: list[int], ys: list[float]) -> tuple[str, dict[str, float]]:
    """Least squares in log space of y = a f(d), f in {d, sqrt d, log d}; returns best and RMS residuals."""
    res = {}
    ly = np.log(ys)
    for name, f in (("d", lambda d: d), ("sqrt(d)", lambda d: math.sqrt(d)), ("log d", lambda d: math.log(d))):
        lf = np.log([f(d) for d in ds])
        a = float(np.mean(ly - lf))
        res[name] = float(np.sqrt(np.mean((ly - lf - a) ** 2)))
    return min(res, key=res.get), res  # type: ignore[arg-type]


RAW = ("laplace", "gaussian", "gaussian-exact")


def baseline_cells(row: dict, parents: list, sizes: list[int], truth: np.ndarray, d: int, reps: int, src) -> None:  # type: ignore[no-untyped-def]
    """Exact raw and GLS alpha-mRMSE of the baselines, and the Monte Carlo check of the GLS variance."""
    wmin = float(truth.min())
    n = truth.size
    for method in RAW:
        for a in ALPHAS:
            row[method, a] = exact_raw_mrmse(method, d, wmin, a)
            row[method, a, "se"] = 0.0
    for method in ("gaussian", "gaussian-exact"):
        s2 = gauss_sigma2(d, "exact" if method == "gaussian-exact" else "zcdp")
        var = discrete_gaussian_variance(s2)
        vs = [np.full(k, var) for k in sizes]
        est = consistent_estimates([np.zeros(k) for k in sizes], vs, parents)
        exact = np.concatenate(node_variances(vs, parents, est.V))
        for a in ALPHAS:  # exact node variances, normal law (sum of independent discrete Gaussians)
            row[method + "+gls", a] = normal_mrmse(exact, truth, a)
            row[method + "+gls", a, "se"] = 0.0
        if method == "gaussian":
            noise, var = raw_errors(method, d, n, reps, src)
            g_err, exact2 = gls_errors(parents, sizes, noise, var)
            row["vr_pred"] = float(exact2.mean() / var)
            row["vr_meas"] = float((g_err**2).mean() / (noise.astype(float) ** 2).mean())
            row["vr_reps"] = reps


def mult_cells(row: dict, parents: list, sizes: list[int], w: list, truth: np.ndarray, d: int, reps: int, cal: dict, src) -> None:  # type: ignore[no-untyped-def]
    for a in (0.1, 0.5):
        tau = theorem_4_1_tau_min(a, EPS, DELTA, d)
        for key, t in (("mult-paper", tau), ("mult-calibrated", tau * cal[a])):
            rounds: list[int] = []
            err = multiplicative_errors(parents, sizes, w, a, t, reps, src, rounds)
            row[key, a], row[key, a, "se"] = split_mrmse(err, truth, a)
            row[key, a, "rounds"] = float(np.mean(rounds))
            row[key, a, "reps"] = reps
        row["tau", a] = tau


def run_table(depths: list[int], mc_reps: int, mult_reps, cal: dict[float, float], src) -> dict:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(7)
    rows = {}
    for d in depths:
        t0 = time.time()
        parents, sizes = complete_binary(d)
        n = sum(sizes)
        x = [np.zeros(s, dtype=np.int64) for s in sizes]
        x[-1] = heavy_tailed_leaves(rng, sizes[-1])
        w = node_weights(x, parents)
        truth = np.concatenate(w).astype(float)
        reps = max(2, min(mc_reps, 400_000 // n))
        row: dict = {"nodes": n}
        baseline_cells(row, parents, sizes, truth, d, reps, src)
        mult_cells(row, parents, sizes, w, truth, d, mult_reps(n), cal, src)
        row["secs"] = time.time() - t0
        rows[d] = row
        print(f"  d={d:2d} nodes={n:8d} mult reps={mult_reps(n)} ({row['secs']:.1f}s)", file=sys.stderr)
    return rows


def run_large_counts(depths: list[int], reps: int, src) -> dict:  # type: ignore[no-untyped-def]
    """The regime where Classification/Reduction/Sparse execute: leaf counts scaled so the root is
    far above alpha tau_min (Pareto(1) x scale, ~40% zeros kept), paper tau_min."""
    rng = np.random.default_rng(13)
    out = {}
    for d in depths:
        parents, sizes = complete_binary(d)
        base = heavy_tailed_leaves(rng, sizes[-1])
        for a, scale in ((0.5, 10**6), (0.1, 10**8)):
            x = [np.zeros(s, dtype=np.int64) for s in sizes]
            x[-1] = base * scale
            w = node_weights(x, parents)
            truth = np.concatenate(w).astype(float)
            tau = theorem_4_1_tau_min(a, EPS, DELTA, d)
            rounds: list[int] = []
            t0 = time.time()
            err = multiplicative_errors(parents, sizes, w, a, tau, reps, src, rounds)
            v, se = split_mrmse(err, truth, a)
            big = truth >= tau
            acc = float((np.abs(err[:, big]) <= a * truth[big]).mean()) if big.any() else math.nan
            row = {
                "d": d, "alpha": a, "nodes": truth.size, "root": int(truth[0]), "tau": tau, "reps": reps,
                "mult": v, "mult_se": v and se, "rounds": float(np.mean(rounds)),
                "frac_above_tau": float(big.mean()), "acc_above_tau": acc,
                "gauss": exact_raw_mrmse("gaussian", d, float(truth.min()), a),
                "gauss_exact": exact_raw_mrmse("gaussian-exact", d, float(truth.min()), a),
                "secs": time.time() - t0,
            }
            out[d, a] = row
            print(f"  large counts d={d} alpha={a} rounds={row['rounds']:.1f} ({row['secs']:.1f}s)", file=sys.stderr)
    return out


def run_irregular(reps: int, mult_reps: int, cal: dict[float, float], src) -> dict:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(11)
    h = geography_tree(rng)
    d, n = h.depth, h.n_nodes
    x = [np.zeros(s, dtype=np.int64) for s in h.sizes]
    for j in range(d):
        leaf = h.is_leaf[j]
        x[j][leaf] = heavy_tailed_leaves(rng, int(leaf.sum()))
    w = node_weights(x, h.parents)
    truth = np.concatenate(w).astype(float)
    row: dict = {"nodes": n, "depth": d, "leaves": h.n_leaves}
    baseline_cells(row, h.parents, list(h.sizes), truth, d, reps, src)
    mult_cells(row, h.parents, list(h.sizes), w, truth, d, mult_reps, cal, src)
    # bias of the non-negative / integer post-processing (Laplace, consistent), on the same tree
    leaves_rows = {}
    for p, c in zip(h.all_paths(), np.concatenate(x)):
        if c:
            leaves_rows[p] = int(c)
    errs_nn, errs_ls = [], []
    for s in range(BIAS_REPS):
        rel = hierarchy_counts(leaves_rows, h, epsilon=EPS, nonnegative=True, integer=True, rng=10_000 + s)
        errs_nn.append(rel.counts - truth)
        errs_ls.append(rel.estimates - truth)
    nn, ls = np.array(errs_nn), np.array(errs_ls)
    zero = truth == 0
    R = nn.shape[0]

    def per_node(e: np.ndarray) -> dict:
        b = e.mean(axis=0)  # per-node bias estimate
        se = e.std(axis=0, ddof=1) / math.sqrt(R)
        k = int(np.argmax(np.abs(b) / np.maximum(se, 1e-12)))
        return {
            "zero": float(b[zero].mean()),
            "zero_se": float(e[:, zero].mean(axis=1).std(ddof=1) / math.sqrt(R)),
            "pos": float(b[~zero].mean()),
            "pos_se": float(e[:, ~zero].mean(axis=1).std(ddof=1) / math.sqrt(R)),
            "abs_mean": float(np.abs(b).mean()),
            "se_mean": float(se.mean()),
            "frac_sig": float((np.abs(b) > 4 * np.maximum(se, 1e-12)).mean()),
            "worst": float(b[k]),
            "worst_se": float(se[k]),
            "worst_truth": float(truth[k]),
        }

    row["bias"] = {
        "nn": per_node(nn),
        "ls": per_node(ls),
        "rmse_nn": float(np.sqrt((nn**2).mean())),
        "rmse_ls": float(np.sqrt((ls**2).mean())),
        "frac_zero": float(zero.mean()),
        "reps": R,
    }
    return row


def run_speed(rows: int, src) -> dict:  # type: ignore[no-untyped-def]
    import pandas as pd

    a, b, c = 100, 100, 99  # 1 + 100 + 10^4 + 9.9 10^5 = 1,000,101 nodes
    A = np.repeat(np.arange(a), b * c)
    B = np.tile(np.repeat(np.arange(b), c), a)
    C = np.tile(np.arange(c), a * b)
    h = Hierarchy.from_frame(
        pd.DataFrame({"x": [f"a{i}" for i in A], "y": [f"b{i}" for i in B], "z": [f"c{i}" for i in C]}), ["x", "y", "z"]
    )
    rng = np.random.default_rng(3)
    leaf = np.minimum((rng.pareto(1.0, rows) * 1000).astype(np.int64), a * b * c - 1)
    ax = np.array([f"a{i}" for i in range(a)], dtype=object)
    by = np.array([f"b{i}" for i in range(b)], dtype=object)
    cz = np.array([f"c{i}" for i in range(c)], dtype=object)
    df = pd.DataFrame({"x": ax[leaf // (b * c)], "y": by[(leaf // c) % b], "z": cz[leaf % c]})
    t0 = time.perf_counter()
    g = df.groupby(["x", "y", "z"]).size()
    t_pd = time.perf_counter() - t0
    t0 = time.perf_counter()
    rel = hierarchy_counts(df, h, epsilon=EPS, delta=DELTA, method="gaussian", rng=src)
    t_rel = time.perf_counter() - t0
    assert abs(rel.count("") - rows) < 50 * math.sqrt(h.depth) * 10 + 1000  # sanity
    del g
    return {"nodes": h.n_nodes, "rows": rows, "pandas_s": t_pd, "release_s": t_rel, "ratio": t_rel / t_pd}


# ------------------------------------------------------------------------------ report


def fmt(v: float) -> str:
    return f"{v:.3g}" if v < 1e4 else f"{v:.2e}"


METHODS = [
    ("laplace", "Laplace (eps-DP)"),
    ("gaussian", "Gaussian, zCDP calib."),
    ("gaussian-exact", "Gaussian, exact calib."),
    ("gaussian+gls", "Gaussian + GLS, zCDP calib."),
    ("gaussian-exact+gls", "Gaussian + GLS, exact calib."),
    ("mult-paper", "Multiplicative, paper tau_min"),
    ("mult-calibrated", "Multiplicative, calibrated tau_min"),
]


def cell(r: dict, m: str, a: float) -> str:
    if (m, a) not in r:
        return "n/a"
    v = fmt(r[m, a])
    if m.startswith("mult"):
        return f"{v} ± {fmt(r[m, a, 'se'])} ({r[m, a, 'rounds']:.1f})"
    return v


def report(table: dict, irr: dict, large: dict, speed: dict | None, cal: dict[float, float], args: argparse.Namespace) -> str:
    L = []
    L.append(f"eps = {EPS}, delta = {DELTA}; complete binary trees; heavy-tailed leaf counts (Pareto(1), ~40% zeros).")
    L.append(
        f"Calibrated tau_min = tau_default x {cal[0.1]:g} (alpha 0.1), x {cal[0.5]:g} (alpha 0.5), chosen on a public pilot tree.\n"
    )
    L.append(
        "How each cell is computed. Laplace and Gaussian (raw): exact, from the integer pmf of the noise "
        "(no sampling error). Gaussian + GLS: exact node variances, normal law. Multiplicative: "
        f"`value ± standard error (mean Reduction rounds run)`, over R repetitions ({args.mult_reps_small} for trees of "
        f"< 70,000 nodes, {args.mult_reps_big} above), worst node selected on the first R/2 and estimated on the "
        "other R/2. Rounds = ell, the number of Reduction rounds in which Classification (Algorithm 1) and Sparse "
        "(Algorithm 3) run; 0 means the output is M_0 = alpha tau_min clamped into the Lemma 3.3 window.\n"
    )
    ds = sorted(table)
    for a in ALPHAS:
        L.append(f"### alpha = {a}: alpha-mRMSE\n")
        L.append("| d | nodes | " + " | ".join(m[1] for m in METHODS) + " |")
        L.append("|---|---|" + "---|" * len(METHODS))
        for d in ds:
            r = table[d]
            L.append(f"| {d} | {r['nodes']} | " + " | ".join(cell(r, m, a) for m, _ in METHODS) + " |")
        L.append(
            f"| irregular d={irr['depth']} | {irr['nodes']} | " + " | ".join(cell(irr, m, a) for m, _ in METHODS) + " |"
        )
        L.append("")
    L.append("### Gain of the exact Gaussian calibration (same (eps, delta), same sampler)\n")
    L.append("| d | sigma^2 zCDP | sigma^2 exact | variance ratio | sigma / sqrt(d), zCDP | sigma / sqrt(d), exact |")
    L.append("|---|---|---|---|---|---|")
    for d in ds:
        z, e = gauss_sigma2(d, "zcdp"), gauss_sigma2(d, "exact")
        L.append(f"| {d} | {z:.2f} | {e:.2f} | {e / z:.3f} | {math.sqrt(z / d):.3f} | {math.sqrt(e / d):.3f} |")
    L.append("")
    L.append("### Growth in d (best of a*d, a*sqrt(d), a*log(d); RMS log-residual of each)\n")
    L.append("| method | alpha | best fit | d | sqrt(d) | log d |")
    L.append("|---|---|---|---|---|---|")
    for m, name in METHODS:
        for a in ALPHAS:
            if (m, a) not in table[ds[0]]:
                continue
            ys = [table[d][m, a] for d in ds]
            if min(ys) <= 0:
                continue
            best, res = fit_growth(ds, ys)
            L.append(f"| {name} | {a} | {best} | {res['d']:.3f} | {res['sqrt(d)']:.3f} | {res['log d']:.3f} |")
    L.append("")
    L.append("### Ratio multiplicative / best Gaussian baseline (exact calibration, with or without GLS)\n")
    L.append("| d | alpha 0.1, paper | alpha 0.1, calibrated | alpha 0.5, paper | alpha 0.5, calibrated |")
    L.append("|---|---|---|---|---|")
    ratios = []
    for d in ds + ["irr"]:
        r = table[d] if d != "irr" else irr
        cells = []
        for a in (0.1, 0.5):
            g = min(r["gaussian-exact", a], r["gaussian-exact+gls", a])
            for m in ("mult-paper", "mult-calibrated"):
                q = r[m, a] / g
                ratios.append(q)
                cells.append(f"{q:.1f}")
        L.append(f"| {d if d != 'irr' else 'irregular'} | " + " | ".join(cells) + " |")
    L.append(f"\nRange of the ratio over all cells: {min(ratios):.1f}x to {max(ratios):.1f}x.\n")
    L.append("### Where does the multiplicative algorithm beat the Gaussian baseline?\n")
    wins = []
    for d in ds:
        for a in (0.1, 0.5):
            for m in ("mult-paper", "mult-calibrated"):
                g = min(table[d]["gaussian-exact", a], table[d]["gaussian-exact+gls", a])
                if table[d][m, a] < g:
                    wins.append(f"d={d}, alpha={a}, {m}: {fmt(table[d][m, a])} < {fmt(g)}")
    L.append("Nowhere in this range." if not wins else "\n".join(f"- {w}" for w in wins))
    L.append("")
    ys = [table[d]["gaussian-exact+gls", 0.1] for d in ds]
    aG = float(np.exp(np.mean(np.log(ys) - 0.5 * np.log(ds))))
    L.append(
        f"Extrapolation. Gaussian + GLS (exact calibration) fits {aG:.2f} sqrt(d). With the paper's tau_min the "
        "multiplicative algorithm's error is at most about alpha tau_min(d) (a zero count is estimated "
        "as M_0 = alpha tau_min; Lemma 3.3), which grows like log d; in this table it is capped by the "
        "Lemma 3.3 window (~2B, linear in d). The depth where alpha tau_min(d) falls below the Gaussian error:"
    )
    for a in (0.1, 0.5):
        lo, hi = 2.0, 1e40
        for _ in range(400):
            mid = math.sqrt(lo * hi)
            if a * theorem_4_1_tau_min(a, EPS, DELTA, int(min(mid, 1e300))) > aG * math.sqrt(mid):
                lo = mid
            else:
                hi = mid
        L.append(
            f"- alpha = {a}: d ~ {hi:.2g} levels (alpha tau_min at d = 20: {a * theorem_4_1_tau_min(a, EPS, DELTA, 20):.3g})."
        )
    L.append("")
    L.append("### Large counts: where Classification / Reduction / Sparse run (paper tau_min)\n")
    L.append(
        "Leaf counts = the heavy-tailed counts above x 10^6 (alpha 0.5) or x 10^8 (alpha 0.1), so the root is far "
        "above alpha tau_min and Reduction runs many rounds; ~40% of the leaves stay 0. "
        "'accurate above tau_min': share of (node, rep) pairs with w >= tau_min and |error| <= alpha w "
        "(Problem 3.1 asks >= 1 - eta per node). Gaussian columns: exact raw alpha-mRMSE.\n"
    )
    L.append(
        "| d | alpha | nodes | root count | tau_min | reps | rounds run | nodes >= tau_min | accurate above tau_min "
        "| Multiplicative alpha-mRMSE ± SE | Gaussian zCDP | Gaussian exact |"
    )
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (d, a), r in sorted(large.items()):
        L.append(
            f"| {d} | {a} | {r['nodes']} | {r['root']:.3g} | {r['tau']:.3g} | {r['reps']} | {r['rounds']:.1f} | "
            f"{r['frac_above_tau']:.0%} | {r['acc_above_tau']:.4f} | {fmt(r['mult'])} ± {fmt(r['mult_se'])} | "
            f"{fmt(r['gauss'])} | {fmt(r['gauss_exact'])} |"
        )
    L.append("")
    L.append("### Consistency: mean node variance, GLS / raw (exact formula vs Monte Carlo)\n")
    L.append("| tree | reps | predicted | measured | rel. diff |")
    L.append("|---|---|---|---|---|")
    for d in ds:
        r = table[d]
        L.append(
            f"| binary d={d} | {r['vr_reps']} | {r['vr_pred']:.4f} | {r['vr_meas']:.4f} | {abs(r['vr_meas'] / r['vr_pred'] - 1):.2%} |"
        )
    L.append(
        f"| irregular d={irr['depth']} | {irr['vr_reps']} | {irr['vr_pred']:.4f} | {irr['vr_meas']:.4f} | {abs(irr['vr_meas'] / irr['vr_pred'] - 1):.2%} |"
    )
    L.append("")
    b = irr["bias"]
    nn, ls = b["nn"], b["ls"]
    L.append(
        f"### Per-node bias of non-negative integer post-processing (Laplace + GLS, irregular tree, {b['reps']} releases)\n"
    )
    L.append(
        "Bias of node u = mean over releases of (released count - true count). (The mean over all leaves or all "
        "nodes is not reported: leaf errors sum to the root error, so it says nothing per node.)\n"
    )
    L.append("| quantity | least squares | non-negative integer |")
    L.append("|---|---|---|")
    L.append(
        f"| mean bias of nodes with true count 0 ({b['frac_zero']:.0%} of nodes) | {ls['zero']:.3f} ± {ls['zero_se']:.3f} | {nn['zero']:.3f} ± {nn['zero_se']:.3f} |"
    )
    L.append(
        f"| mean bias of nodes with true count > 0 | {ls['pos']:.3f} ± {ls['pos_se']:.3f} | {nn['pos']:.3f} ± {nn['pos_se']:.3f} |"
    )
    L.append(
        f"| mean over nodes of abs(per-node bias) (noise floor: mean per-node SE) | {ls['abs_mean']:.3f} ({ls['se_mean']:.3f}) | {nn['abs_mean']:.3f} ({nn['se_mean']:.3f}) |"
    )
    L.append(f"| share of nodes with abs(bias) > 4 SE | {ls['frac_sig']:.1%} | {nn['frac_sig']:.1%} |")
    L.append(
        f"| most significant per-node bias (true count) | {ls['worst']:.2f} ± {ls['worst_se']:.2f} ({ls['worst_truth']:.0f}) | {nn['worst']:.2f} ± {nn['worst_se']:.2f} ({nn['worst_truth']:.0f}) |"
    )
    L.append(f"| RMSE, all nodes | {b['rmse_ls']:.3f} | {b['rmse_nn']:.3f} |")
    L.append("")
    if speed:
        L.append("### Speed (same run)\n")
        L.append(
            f"{speed['nodes']:,}-node hierarchy, {speed['rows']:,} rows: pandas groupby().size() {speed['pandas_s']:.2f} s; "
            f"hierarchy_counts (Gaussian + consistency, includes its own group-by) {speed['release_s']:.2f} s; "
            f"ratio {speed['ratio']:.2f}."
        )
    return "\n".join(L)


def plot(table: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ds = sorted(table)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, a in zip(axes, ALPHAS):
        for m, style in (
            ("laplace", "o-"),
            ("gaussian", "s:"),
            ("gaussian-exact", "s-"),
            ("gaussian+gls", "^:"),
            ("gaussian-exact+gls", "^-"),
            ("mult-paper", "x--"),
            ("mult-calibrated", "d--"),
        ):
            if (m, a) in table[ds[0]]:
                ys = [table[d][m, a] for d in ds]
                if m.startswith("mult"):
                    ax.errorbar(ds, ys, yerr=[2 * table[d][m, a, "se"] for d in ds], fmt=style, label=m, capsize=2)
                else:
                    ax.plot(ds, ys, style, label=m)
        ax.set_yscale("log")
        ax.set_xlabel("depth d")
        ax.set_title(f"alpha = {a}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("alpha-mRMSE (eps=1, delta=1e-6)")
    fig.suptitle("Seed 001 Table 1, empirically: complete binary trees, heavy-tailed counts")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small depths and reps (smoke test)")
    ap.add_argument("--rows", type=int, default=3_000_000, help="rows for the speed comparison")
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--mult-reps-small", type=int, default=40, help="multiplicative reps, trees < 70k nodes")
    ap.add_argument("--mult-reps-big", type=int, default=8, help="multiplicative reps, larger trees")
    ap.add_argument("--large-reps", type=int, default=20, help="reps in the large-counts regime")
    ap.add_argument("--write", action="store_true", help="write docs/notes/hierarchy_results.md and the PNG")
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()
    if args.quick:
        args.mult_reps_small, args.mult_reps_big, args.large_reps = 6, 4, 4
    src = make_source(args.seed)
    t0 = time.time()
    cal = {a: calibrate(a, src, args.quick) for a in (0.1, 0.5)}
    print(f"calibration done ({time.time() - t0:.0f}s): {cal}", file=sys.stderr)
    depths = [4, 6, 8, 10] if args.quick else [4, 6, 8, 10, 12, 14, 16, 18, 20]

    def mult_reps(n: int) -> int:
        return args.mult_reps_small if n < 70_000 else args.mult_reps_big

    table = run_table(depths, 40 if not args.quick else 6, mult_reps, cal, src)
    irr = run_irregular(60 if not args.quick else 6, args.mult_reps_small, cal, src)
    large = run_large_counts([4, 8] if args.quick else [4, 8, 12], args.large_reps, src)
    speed = None if args.no_speed else run_speed(args.rows if not args.quick else 200_000, src)
    text = report(table, irr, large, speed, cal, args)
    text += f"\n\nTotal time {time.time() - t0:.0f} s.\n"
    print(text)
    if args.write:
        cmd = "PYTHONPATH=src python3 benchmarks/tree_counting.py --write" + (
            "" if (args.mult_reps_small, args.mult_reps_big, args.large_reps) == (40, 8, 20)
            else f" --mult-reps-small {args.mult_reps_small} --mult-reps-big {args.mult_reps_big} --large-reps {args.large_reps}"
        ) + (" --no-speed" if args.no_speed else "") + (" --quick" if args.quick else "")
        (ROOT / "docs" / "notes").mkdir(parents=True, exist_ok=True)
        (ROOT / "docs" / "notes" / "hierarchy_results.md").write_text(
            f"# Hierarchy counts: benchmark output\n\nGenerated by `{cmd}`.\n\n" + text
        )
        plot(table, ROOT / "docs" / "notes" / "hierarchy_table1.png")


if __name__ == "__main__":
    main()
