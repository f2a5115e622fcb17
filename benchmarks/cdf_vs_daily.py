"""When does a range tree's CDF beat summed daily counts? Exact standard errors, no simulation.

    PYTHONPATH=src python3 benchmarks/cdf_vs_daily.py       # prints the table of docs/notes/cdf-vs-daily.md

Both releases cover one year of days (365 buckets) at epsilon = 1 with discrete Laplace noise,
add/remove one record:

* **daily counts**: one noisy count per day. Each record is in one day, so the 365 counts cost
  epsilon = 1 together (parallel composition) and each has the discrete-Laplace variance of scale
  1/epsilon. The number of records in the first k days is the sum of k of them: variance k times
  that.
* **range tree**: ``dptree.range_tree`` with its default branching and uniform levels; the
  standard error of ``cdf(day k)`` and of a k-day window is the exact closed form of
  ``RangeTree.stderr`` (it depends on the public parameters only, not on the data).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

import dptree
from dptree import noise

DAYS = 365
EPSILON = 1.0
LENGTHS = (1, 3, 7, 14, 30, 90, 182, 365)


def table() -> list[dict[str, float]]:
    """One row per window length k: stderr of summed daily counts, of the tree's CDF at day k,
    and the root-mean-square stderr of the tree over every k-day window of the year."""
    plan = dptree.plan_range_tree(lower=0, upper=DAYS - 1, epsilon=EPSILON)
    rel = plan.release(np.zeros(DAYS, dtype=np.int64), rng=0)  # stderr does not depend on the counts
    daily_var = noise.discrete_laplace_variance(noise.laplace_scale_used(Fraction(1) / Fraction(EPSILON)))
    rows = []
    for k in LENGTHS:
        starts = np.arange(DAYS - k + 1)
        windows = np.asarray(rel.stderr(starts, starts + k - 1))
        rows.append({
            "k": k,
            "daily": float(np.sqrt(k * daily_var)),
            "cdf": float(rel.cdf_stderr(k - 1)),
            "window_rms": float(np.sqrt(np.mean(windows**2))),
        })
    return rows


def break_even(kind: str) -> int:
    """The smallest k from which the tree beats summed daily counts for every longer k: for the
    CDF at day k (``kind="cdf"``) or for k-day windows on average (``kind="window"``, RMS)."""
    plan = dptree.plan_range_tree(lower=0, upper=DAYS - 1, epsilon=EPSILON)
    rel = plan.release(np.zeros(DAYS, dtype=np.int64), rng=0)
    daily_var = noise.discrete_laplace_variance(noise.laplace_scale_used(Fraction(1) / Fraction(EPSILON)))
    better = []
    for k in range(1, DAYS + 1):
        if kind == "cdf":
            tree = float(rel.cdf_stderr(k - 1))
        else:
            starts = np.arange(DAYS - k + 1)
            tree = float(np.sqrt(np.mean(np.asarray(rel.stderr(starts, starts + k - 1)) ** 2)))
        better.append(tree < np.sqrt(k * daily_var))
    k = DAYS
    while k > 1 and better[k - 2]:
        k -= 1
    return k


def markdown() -> str:
    lines = ["| days k | summed daily counts | tree: CDF at day k | tree: any k-day window (RMS) |",
             "|---:|---:|---:|---:|"]
    for r in table():
        lines.append(f"| {r['k']} | {r['daily']:.1f} | {r['cdf']:.1f} | {r['window_rms']:.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    plan = dptree.plan_range_tree(lower=0, upper=DAYS - 1, epsilon=EPSILON)
    print(f"branching {plan.layout.branching}, fanouts {list(plan.layout.fanouts)}")
    print(markdown())
    print(f"break-even: the CDF from day {break_even('cdf')}, windows of {break_even('window')} days or more")
