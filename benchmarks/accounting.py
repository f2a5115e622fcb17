"""What a year of releases costs under each accountant: range trees of D = 1024 (b = 2, uniform
levels) released n times at epsilon each, delta = 1e-6; the columns are basic composition (what the
ledger adds up), zCDP (the sum of exact rho, converted by Canonne, Kamath & Steinke 2020,
Cor. 13), Rényi (dptree.privacy.accounting.rdp_epsilon), PLD (pld_epsilon) and the one-order
Rényi filter tuned to the workload (RenyiFilter.for_workload: how many of the n trees it accepts
under a total of epsilon = 3).

    PYTHONPATH=src python benchmarks/accounting.py

``--levels 11`` replaces dptree's plan (10 noised levels at D = 1024) by 11 levels of sensitivity 1.
"""

import argparse
import time
from fractions import Fraction

import dptree
from dptree.privacy.accounting import RenyiFilter, pld_epsilon, rdp_epsilon, zcdp_rho
from dptree.privacy.budget import zcdp_epsilon
from dptree.privacy.loss import Laplace, PrivacyLoss
from dptree.privacy.statement import Neighbors

ROWS = [(12, 1.0), (52, 0.25), (365, 0.1), (365, 0.05)]
DELTA = 1e-6
TOTAL = 3.0


def tree(epsilon: float, levels: int | None) -> PrivacyLoss:
    if levels is None:
        return dptree.plan_range_tree(lower=0, upper=1023, epsilon=epsilon, branching=2).privacy_loss()
    return PrivacyLoss(Neighbors(), tuple(Laplace(Fraction(levels) / Fraction(epsilon), 1) for _ in range(levels)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--levels", type=int, default=None)
    args = ap.parse_args()
    print(f"range trees D = 1024, b = 2, delta = {DELTA}; filter total epsilon = {TOTAL}")
    print("| releases x eps | levels | basic | zCDP | Rényi | PLD | filter: trees accepted | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for n, eps in ROWS:
        t = time.perf_counter()
        loss = tree(eps, args.levels)
        losses = [loss] * n
        basic = n * loss.epsilon()
        zc = zcdp_epsilon(zcdp_rho(losses), DELTA)
        rdp = rdp_epsilon(losses, DELTA)
        pld = pld_epsilon(losses, DELTA)
        f = RenyiFilter.for_workload(TOTAL, DELTA, losses)
        accepted = 0
        while accepted < n and f.can_afford(loss):
            f.spend(loss)
            accepted += 1
        secs = time.perf_counter() - t
        print(f"| {n} x {eps} | {len(loss.measurements)} | {basic:.2f} | {zc:.2f} | {rdp:.2f} | {pld:.2f} "
              f"| {accepted} of {n} (order {f.orders[0]:g}) | {secs:.2f} |")


if __name__ == "__main__":
    main()
