"""``max_contributions="private"`` against every fixed bound chosen with hindsight.

Heavy-tailed users: records per user drawn from a discrete Pareto law (floor(Pareto(alpha)) + 1,
at most 10^4; "pareto": alpha = 1.5, "pareto-A": alpha = A, e.g. the lighter tail "pareto-3") or a
Zipf law (numpy's ``zipf(2.5)``); values integers in [0, 999],
normal(500, 150) independent of the user, or around a mean of the user's own ("user-correlated":
a user's records are normal(mu_u, 40), mu_u normal(500, 150)). The error of a release is the
root mean squared error of its counts of *all* ranges [a, b] of the domain (D (D + 1) / 2 ranges,
exactly, from the prefix sums) against the true counts of every record, dropped ones included:
the bias of bounding and the noise together.

* fixed k (with hindsight), for every k in 1..cap at the whole epsilon: the expected squared error
  of ``range_tree(values, user_id=users, max_contributions=k, epsilon)`` is the mean squared error
  of the bounded counts (the engine's own bounding, ``--reps`` draws) plus the exact average
  variance of the tree's estimate over all ranges at k (public,
  :func:`dptree.rangetree.allocation.average_workload_variance`): no noise is drawn, so the best k
  is not the luckiest of many noisy estimates;
* private: ``range_tree(..., max_contributions="private", epsilon)`` (``--share`` of it, default
  0.15, chooses k; the tree gets the rest), ``--trials`` releases, data fixed, choice and noise redrawn;
  its expected error is the same expression at each chosen k with the tree's budget, averaged
  over the trials ("private RMSE"); "releases" is the RMSE the releases themselves had (noisy:
  a check of the expected one).

Ratio = RMSE(private) / RMSE(best fixed k), the target being at most 1.2. "rule k" is the bound
the choice aims at (the least candidate with at most m users above it, read from the true counts:
a diagnostic, not private) and its RMSE at the whole epsilon.

    PYTHONPATH=src python3 benchmarks/private_contributions.py            # about a minute on 2 cores
    PYTHONPATH=src python3 benchmarks/private_contributions.py --epsilon 0.3 --scenarios pareto,zipf
    PYTHONPATH=src python3 benchmarks/private_contributions.py --scenarios pareto-2,pareto-3  # lighter tails
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import dptree
from dptree.data.histograms import leaf_histogram
from dptree.rangetree.allocation import average_workload_variance
from dptree.rangetree.api import plan_private_contributions
from dptree.rangetree.contributions import DEFAULT_SHARE, candidate_bounds

D = 1000


def range_rmse(estimate: np.ndarray, truth: np.ndarray) -> float:
    """RMSE over all D (D + 1) / 2 ranges [a, b]: the error of a range is E_b - E_(a-1), E the
    cumulative error, so the sum of squares over pairs of prefix points is n S2 - S1^2."""
    e = np.concatenate([[0.0], np.cumsum(np.asarray(estimate, dtype=np.float64) - truth)])
    n = e.size
    return float(np.sqrt((n * np.sum(e**2) - np.sum(e) ** 2) / (n * (n - 1) / 2)))


def scenario(name: str, users: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    if name.startswith("zipf"):
        per_user = np.minimum(gen.zipf(2.5, users), 10_000)
    else:  # "pareto" (alpha 1.5), or "pareto-A" (alpha A)
        alpha = float(name.split()[0].partition("-")[2] or 1.5)
        per_user = np.minimum(np.floor(gen.pareto(alpha, users) + 1).astype(np.int64), 10_000)
    ids = np.repeat(np.arange(users), per_user)
    if name.endswith("user-correlated"):
        centre = gen.normal(500, 150, users)[ids]
        values = gen.normal(centre, 40)
    else:
        values = gen.normal(500, 150, ids.size)
    values = np.clip(np.rint(values), 0, D - 1).astype(np.int64)
    perm = gen.permutation(ids.size)
    return values[perm], ids[perm]


def run(name: str, users: int, epsilon: float, cap: int, reps: int, trials: int, seed: int, share: float) -> dict:
    values, ids = scenario(name, users, seed)
    truth = np.bincount(values, minlength=D).astype(np.float64)
    common = dict(lower=0, upper=D - 1, epsilon=epsilon, user_id=ids)

    t0 = time.perf_counter()
    plan = plan_private_contributions(lower=0, upper=D - 1, epsilon=epsilon, user_id=ids, cap=cap, share=share)
    bias2, noise_full, noise_tree = {}, {}, {}
    for k in range(1, cap + 1):
        tree = dptree.plan_range_tree(lower=0, upper=D - 1, epsilon=epsilon, max_contributions=k)
        bias2[k] = np.mean([range_rmse(leaf_histogram(values, tree, user_id=ids, rng=1000 * k + r)[:D], truth) ** 2
                            for r in range(reps)])
        noise_full[k] = average_workload_variance(tree.layout, tree.level_variance, "all_ranges")
        at_k = plan.tree_at(k)
        noise_tree[k] = average_workload_variance(at_k.layout, at_k.level_variance, "all_ranges")
    fixed = {k: float(np.sqrt(bias2[k] + noise_full[k])) for k in range(1, cap + 1)}
    best = min(fixed, key=fixed.get)  # type: ignore[arg-type]
    chosen, mse = [], []
    for s in range(trials):
        rel = dptree.range_tree(values, max_contributions="private", contributions_cap=cap, contributions_share=share,
                                rng=10**7 + s, **common)
        chosen.append(rel.max_contributions)
        mse.append(range_rmse(rel.leaf_estimates, truth) ** 2)
    private = float(np.sqrt(np.mean([bias2[k] + noise_tree[k] for k in chosen])))
    counts = np.bincount(ids)
    rule = next((int(g) for g in candidate_bounds(cap) if (counts > g).sum() <= plan.above), cap)
    return {"scenario": name, "users": users, "records": int(values.size), "max per user": int(counts.max()),
            "m": plan.above, "best k": best, "best RMSE": fixed[best], "rule k": rule, "rule RMSE": fixed[rule],
            "private RMSE": private, "releases": float(np.sqrt(np.mean(mse))), "ratio": private / fixed[best],
            "chosen k (q25, median, q75)": tuple(int(v) for v in np.percentile(chosen, [25, 50, 75])),
            "seconds": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=20_000)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--cap", type=int, default=100, help="the largest bound: fixed k in 1..cap, the private cap")
    ap.add_argument("--reps", type=int, default=8, help="releases per fixed k")
    ap.add_argument("--trials", type=int, default=100, help="private releases")
    ap.add_argument("--scenarios", default="pareto,pareto user-correlated,zipf")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--share", type=float, default=DEFAULT_SHARE, help="contributions_share of the private releases")
    args = ap.parse_args()
    rows = [run(name, args.users, args.epsilon, args.cap, args.reps, args.trials, args.seed, args.share)
            for name in args.scenarios.split(",")]
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        cells = [f"{v:.3g}" if isinstance(v, float) and k != "seconds" else f"{v:.0f}" if k == "seconds"
                 else str(v) for k, v in r.items()]
        print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
