"""Gain of the exact discrete-Gaussian (epsilon, delta) calibration over the zCDP route.

    PYTHONPATH=src python3 benchmarks/gaussian_calibration.py

No sampling: every number is computed from the plans (exact noise parameters and exact variances).

1. sigma / sqrt(m) for m unit shifts at (epsilon, 1e-6): zCDP (CKS 2020 Cor. 13), the continuous
   analytic Gaussian mechanism (Balle & Wang 2018, for reference) and the exact discrete Gaussian
   (dptree.privacy.budget.discrete_gaussian_sigma2_for, dptree's default), with the coarsening slack.
2. Range trees (uniform levels, k = 1): all-range average variance with each calibration.
3. Hierarchies: noise variance per node (raw Gaussian baseline) with each calibration.
"""

from __future__ import annotations

import math
import time

from dptree.noise import gaussian_sigma2_used
from dptree.privacy.budget import (
    _continuous_gaussian_sigma2,
    discrete_gaussian_delta_slack,
    discrete_gaussian_sigma2_for,
    zcdp_rho_for,
)
from dptree.rangetree.allocation import average_range_variance
from dptree.rangetree.release import plan_range_tree

DELTA = 1e-6


def main() -> None:
    t0 = time.time()
    print(f"delta = {DELTA}\n")
    print("### sigma / sqrt(m), m unit shifts\n")
    print("| eps | m | zCDP | analytic (continuous) | exact discrete | variance exact / zCDP | slack / eps |")
    print("|---|---|---|---|---|---|---|")
    for eps in (0.1, 0.5, 1.0, 2.0):
        for m in (4, 10, 20):
            z = float(gaussian_sigma2_used(m / (2 * zcdp_rho_for(eps, DELTA))))
            a = _continuous_gaussian_sigma2(eps, DELTA, m)
            e = float(discrete_gaussian_sigma2_for(eps, DELTA, m))
            print(
                f"| {eps} | {m} | {math.sqrt(z / m):.3f} | {math.sqrt(a / m):.3f} | {math.sqrt(e / m):.3f} | "
                f"{e / z:.3f} | {discrete_gaussian_delta_slack(e, m) / eps:.4f} |"
            )
    print("\n### Range trees (levels='uniform', add/remove, k = 1): all-range average variance\n")
    print("| domain size | eps | branching | noised levels | zCDP | exact | ratio |")
    print("|---|---|---|---|---|---|---|")
    for D in (1024, 2**16):
        for eps in (0.5, 1.0):
            pe = plan_range_tree(lower=0, upper=D - 1, epsilon=eps, delta=DELTA, noise="gaussian")
            pz = plan_range_tree(
                lower=0, upper=D - 1, epsilon=eps, delta=DELTA, noise="gaussian", gaussian_calibration="zcdp",
                branching=pe.layout.branching,
            )
            ve = average_range_variance(pe.layout, pe.level_variance)
            vz = average_range_variance(pz.layout, pz.level_variance)
            m = sum(p is not None for p in pe.noise_parameters)
            print(f"| {D} | {eps} | {pe.layout.branching} | {m} | {vz:.1f} | {ve:.1f} | {ve / vz:.3f} |")
    print(f"\nTotal time {time.time() - t0:.0f} s.")


if __name__ == "__main__":
    main()
