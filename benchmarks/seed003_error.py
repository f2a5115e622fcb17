"""The comparison of Smith & Ullman 2021: expected maximum error over all D(D+1)/2 intervals, at epsilon = 1.

Run from the repository root:

    PYTHONPATH=src python3 benchmarks/seed003_error.py           # D = 2^4 .. 2^16
    PYTHONPATH=src python3 benchmarks/seed003_error.py --quick   # D = 2^4 .. 2^10, few simulations

Mechanisms (neighbors: add/remove one record, so sensitivities are counts of affected queries):

* Laplace baseline (Smith & Ullman 2021, eq. 6): independent Laplace noise on every interval query. A record
  at position t lies in t(D-t+1) intervals, so the L1 sensitivity is max_t t(D-t+1) ~ D^2/4
  (Smith & Ullman use the looser binom(D,2)). |Lap(lam)| is exponential, so the expected maximum of
  K = D(D+1)/2 of them is exactly lam * H_K (harmonic number). Closed form.
* Prefix baseline (Smith & Ullman 2021, "A simple improvement"): Laplace(D/eps) on the D prefixes f_{1,t},
  intervals as differences (a_{1,0} = 0). Max interval error = max(Z u {0}) - min(Z u {0}), with
  expectation 2 lam (H_D - ln 2 + int_{1/2}^1 (1-v)^D / v dv) (exact; derivation in the code).
* Plain binary tree (Smith & Ullman 2021, section 2.2, no least squares): the noisy node counts of dptree's
  binary release (``branching=2, levels="uniform"``: log2 D levels, the root not measured, each
  level epsilon/log2 D, discrete Laplace) recombined by Smith & Ullman's canonical prefix decomposition
  (eq. 13/14; the full range, whose root is unmeasured, as the sum of its two children) and
  b_{s,t} = b_{1,t} - b_{1,s-1}. Simulated.
* dptree binary + least squares: the same release's consistent estimates. Simulated.
* dptree default: ``dptree.range_tree(..., epsilon=1)`` (automatic branching, uniform levels). Simulated.

The maximum over all D(D+1)/2 intervals of a prefix-difference estimator is exactly
max_t P_t - min_t P_t over the prefix errors P_0 = 0, P_1, ..., P_D, so each simulated release
costs O(D). Releases use the test-only ``rng`` hook (seeded; marked not private).
Theorem 2.5's bound is evaluated as in eq. 15 (times 2 for intervals):
2 log2(D) * E max_v |Z_v| = 2 log2(D) * lam * H_N over the N = 2D - 2 measured nodes (continuous
Laplace, lam = log2(D)/eps).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from _common import table
from scipy import integrate
from scipy.special import digamma

import dptree

EPS = 1.0


def harmonic(k: float) -> float:
    return float(digamma(k + 1.0) + np.euler_gamma)


def laplace_all_intervals(D: int) -> float:
    """E max over D(D+1)/2 independent Laplace errors (exact)."""
    sens = max(t * (D - t + 1) for t in (D // 2, (D + 1) // 2, (D + 2) // 2))
    lam = sens / EPS
    return lam * harmonic(D * (D + 1) / 2)


def prefix_baseline(D: int) -> float:
    """E[max(Z u {0}) - min(Z u {0})] for D iid Laplace(D/eps) (exact up to quadrature).

    E max(0, max Z) = int_0^inf 1 - F(x)^D dx with F(x) = 1 - e^{-x/lam}/2; substituting
    v = e^{-x/lam}/2 gives lam int_0^{1/2} (1 - (1-v)^D)/v dv = lam (H_D - ln 2 + int_{1/2}^1 (1-v)^D/v dv).
    The minimum is symmetric.
    """
    lam = D / EPS
    tail, _ = integrate.quad(lambda v: (1 - v) ** D / v, 0.5, 1.0)
    return 2 * lam * (harmonic(D) - math.log(2) + tail)


def max_interval_error(prefix_err: np.ndarray) -> float:
    """max over 0 <= i < j <= D of |P_j - P_i| with P_0 = 0."""
    return float(max(prefix_err.max(), 0.0) - min(prefix_err.min(), 0.0))


def plain_tree_prefix_errors(noise_levels: list[np.ndarray | None], D: int) -> np.ndarray:
    """Smith & Ullman's reconstruction: prefix [0, t) = sum of the canonical dyadic nodes (t = 1..D)."""
    L = D.bit_length() - 1
    t = np.arange(1, D + 1, dtype=np.int64)
    err = np.zeros(D)
    for k in range(L):  # block size 2^k lives on level L - k
        z = noise_levels[L - k]
        assert z is not None
        bit = ((t >> k) & 1).astype(bool)
        idx = np.where(bit, (t >> (k + 1)) * 2, 0)
        err += np.where(bit, z[idx], 0.0)
    # t = D needs the root, which is not measured: use its two children
    z1 = noise_levels[1]
    assert z1 is not None
    err[-1] = z1[0] + z1[1]
    return err


def simulate(D: int, sims: int, seed: int) -> dict[str, float]:
    g = np.random.default_rng(seed)
    x = g.integers(0, D, size=1000)
    hist = np.bincount(x, minlength=D)
    true_prefix = np.cumsum(hist)
    out = {"plain": [], "binary_ls": [], "default": []}
    default_b = None
    for _ in range(sims):
        r2 = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=EPS, branching=2, rng=g)
        truth = r2.layout.level_counts(hist.astype(np.int64))
        noise = [None if m is None else (m - c).astype(np.float64) for m, c in zip(r2.measurements, truth)]
        out["plain"].append(max_interval_error(plain_tree_prefix_errors(noise, D)))
        out["binary_ls"].append(max_interval_error(np.cumsum(r2.leaf_estimates) - true_prefix))
        rd = dptree.range_tree(x, lower=0, upper=D - 1, epsilon=EPS, rng=g)
        default_b = rd.layout.branching
        out["default"].append(max_interval_error(np.cumsum(rd.leaf_estimates) - true_prefix))
    res = {k: float(np.mean(v)) for k, v in out.items()}
    res.update({k + "_se": float(np.std(v, ddof=1) / math.sqrt(len(v))) for k, v in out.items()})
    res["default_b"] = default_b
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--min-log2", type=int, default=4)
    ap.add_argument("--max-log2", type=int, default=16)
    ap.add_argument("--sims", type=int, default=200, help="simulated releases per D (default 200)")
    ap.add_argument("--sims-large", type=int, default=100,
                    help="simulated releases for D >= 2^--large-from (default 100)")
    ap.add_argument("--large-from", type=int, default=15)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="D = 2^4..2^10, 20 simulations")
    args = ap.parse_args()
    if args.quick:
        args.max_log2, args.sims, args.sims_large = 10, 20, 20
    print(f"# Smith & Ullman 2021: expected max error, all D(D+1)/2 intervals, epsilon = {EPS}, add/remove neighbors")
    print(f"# simulations: {args.sims} releases per D (D >= 2^{args.large_from}: {args.sims_large}); "
          f"seed {args.seed}; +- is one standard error of the mean\n")
    rows = []
    ratio_rows = []
    t0 = time.perf_counter()
    for k in range(args.min_log2, args.max_log2 + 1):
        D = 2**k
        sims = args.sims if k < args.large_from else args.sims_large
        sim = simulate(D, sims, args.seed + k)
        lap = laplace_all_intervals(D)
        pre = prefix_baseline(D)
        L = k
        bound = 2 * L * (L / EPS) * harmonic(2 * D - 2)
        rows.append([f"2^{k}", f"{lap:,.0f}", f"{pre:,.1f}",
                     f"{sim['plain']:.1f} +- {sim['plain_se']:.1f}",
                     f"{sim['binary_ls']:.1f} +- {sim['binary_ls_se']:.1f}",
                     f"{sim['default']:.1f} +- {sim['default_se']:.1f} (b={sim['default_b']})",
                     f"{bound:,.0f}", str(sims)])
        ratio_rows.append([f"2^{k}", f"{sim['plain'] / bound:.3f}"]
                          + [f"{sim[key] / L**p:.3f}" for key in ("plain", "binary_ls", "default")
                             for p in (3, 2.5, 2)])
    print(table(["D", "Laplace, all intervals (exact)", "prefix baseline (exact)", "plain binary tree (sim)",
                 "dptree binary + LS (sim)", "dptree default (sim)", "Thm 2.5 bound (eq. 15 x2)", "sims"], rows))
    print("\nRatios (epsilon = 1, L = log2 D): error / bound and error / L^p for p = 3 (Theorem 2.5), "
          "2.5 (Smith & Ullman's refinement) and 2\n")
    print(table(["D", "plain / bound"] + [f"{m} / L^{p}" for m in ("plain", "binary+LS", "default")
                                          for p in (3, 2.5, 2)], ratio_rows))
    print(f"\n(total time {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
