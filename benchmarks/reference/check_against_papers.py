"""The two reference implementations in the experimental settings of their papers.

Run from the repository root:

    PYTHONPATH=src:benchmarks python3 benchmarks/reference/check_against_papers.py [--trials 40]
    # optionally with the authors' code for a side-by-side run (not part of dptree):
    PYTHONPATH=src:benchmarks:/path/with/dp_multiq python3 benchmarks/reference/check_against_papers.py --authors

Settings (from the papers' experiment sections and the authors' published experiment scripts):

* JointExp (Gillenwater, Joseph & Kulesza 2021, Section 6): n = 1000 draws of Uniform(-5, 5)
  or N(0, 5^2), bounds [-100, 100], epsilon = 1, swap neighbours (sensitivity 2), levels
  j / (m + 1); error = mean over the m levels of the number of data points between the estimate
  and the true quantile (numpy 'lower' quantile) -- "average # misclassified points".
* ApproximateQuantiles (Kaplan, Schnapp & Stemmer 2022, Section 6): 1000 points resampled from
  10^4 draws of Uniform(-5, 5) or N(0, 5^2), bounds [-100, 100], epsilon = 1, add/remove,
  levels j / (m + 1); error = the *sum* over the m levels of the points strictly between the
  estimate and the true quantile (numpy's linear quantile) -- "missed points".

The papers report these as figures (curves over m), whose values are not in the stored paper
texts available here, so the check is against the authors' own implementations run in the same
setting when ``--authors`` is given (google-research/dp_multiq ``joint_exp.joint_exp`` and
ShacharSchnapp/DP_AQ ``approximate_quantiles_algo``, whose layer count is log2(m) + 1 unrounded and
which jitters the data by Gaussian noise of standard deviation 10^-5), and otherwise prints ours alone.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from reference.approx_quantiles import approx_quantiles
from reference.joint_exp import joint_exp

LOW, HIGH = -100.0, 100.0


def misclassified_mean(xs: np.ndarray, true_q: np.ndarray, est: np.ndarray) -> float:
    """JointExp paper: mean over levels of |#{x > true} - #{x > est}|."""
    return float(np.mean([abs(np.sum(xs > t) - np.sum(xs > e)) for t, e in zip(true_q, est)]))


def missed_sum(xs: np.ndarray, true_q: np.ndarray, est: np.ndarray) -> float:
    """ApproximateQuantiles paper: sum over levels of #{x strictly between estimate and truth}."""
    return float(sum(np.sum((xs > min(t, e)) & (xs < max(t, e))) for t, e in zip(true_q, est)))


def run(setting: str, dist: str, ms: list[int], trials: int, methods: dict[str, Callable], seed: int) -> None:
    g = np.random.default_rng(seed)
    print(f"\n## {setting}: {dist}, n = 1000, epsilon = 1, {trials} trials\n")
    print("| m | " + " | ".join(f"{k} error | {k} s" for k in methods) + " |")
    print("|---:|" + "---:|---:|" * len(methods))
    for m in ms:
        qs = np.arange(1, m + 1) / (m + 1)
        acc = {k: [] for k in methods}
        tim = {k: 0.0 for k in methods}
        for _ in range(trials):
            if setting == "JointExp paper":
                xs = np.sort(g.uniform(-5, 5, 1000) if dist == "uniform" else g.normal(0, 5, 1000))
                true_q = np.quantile(xs, qs, method="lower")
                err = misclassified_mean
            else:
                pop = g.uniform(-5, 5, 10_000) if dist == "uniform" else g.normal(0, 5, 10_000)
                xs = np.sort(g.choice(pop, 1000))
                true_q = np.quantile(xs, qs)
                err = missed_sum
            for k, f in methods.items():
                t0 = time.perf_counter()
                est = np.sort(f(xs, qs, g))
                tim[k] += time.perf_counter() - t0
                acc[k].append(err(xs, true_q, est))
        print(f"| {m} | " + " | ".join(f"{np.mean(acc[k]):.2f} +- {np.std(acc[k], ddof=1) / np.sqrt(trials):.2f} | "
                                      f"{tim[k] / trials:.4f}" for k in methods) + " |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--seed", type=int, default=2021)
    ap.add_argument("--authors", action="store_true",
                    help="also run the authors' dp_multiq.joint_exp and algorithms.approximate_quantiles_algo "
                         "(google-research/dp_multiq, ShacharSchnapp/DP_AQ; must be importable)")
    args = ap.parse_args()
    joint = {"ours JointExp": lambda xs, qs, g: joint_exp(xs, qs, LOW, HIGH, 1.0, g, sensitivity=2.0)}
    aq = {"ours AQ": lambda xs, qs, g: approx_quantiles(xs, qs, LOW, HIGH, 1.0, g),
          "ours JointExp": lambda xs, qs, g: joint_exp(xs, qs, LOW, HIGH, 1.0, g, sensitivity=2.0)}
    if args.authors:
        import warnings

        from dp_multiq.joint_exp import joint_exp as authors_joint  # the authors' code, not shipped

        warnings.simplefilter("ignore")

        def theirs(xs: np.ndarray, qs: np.ndarray, g: np.random.Generator) -> np.ndarray:
            np.random.seed(int(g.integers(2**31)))
            return authors_joint(xs, LOW, HIGH, qs, 1.0, True)

        joint["authors' JointExp"] = theirs
        try:
            from algorithms.approximate_quantiles_algo import approximate_quantiles_algo as authors_aq
        except ImportError:
            authors_aq = None
        if authors_aq is not None:
            def theirs_aq(xs: np.ndarray, qs: np.ndarray, g: np.random.Generator) -> np.ndarray:
                np.random.seed(int(g.integers(2**31)))
                return np.array(authors_aq(xs, qs, (LOW, HIGH), 1.0))

            aq["authors' AQ"] = theirs_aq
    for dist in ("uniform", "gaussian"):
        run("JointExp paper", dist, [1, 5, 10, 20, 29], args.trials, joint, args.seed)
    for dist in ("uniform", "gaussian"):
        run("ApproximateQuantiles paper", dist, [1, 10, 30, 60, 120], max(4, args.trials // 2), aq, args.seed)


if __name__ == "__main__":
    main()
