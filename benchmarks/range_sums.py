"""Sums and means over ranges: dptree's range tree with sums against OpenDP's and PipelineDP's
private mean, on the same data and budget; and the coverage of dptree's intervals.

Data: ``--n`` records (default 20 000), an age in [0, 99] (normal(45, 18), rounded and clipped) and
a revenue (gamma(2, 8 + age / 4), rounded to an integer; some above the bound); every method clamps
the revenue to [0, ``--bound``] (default 100), and errors are against the true mean (sum) of the
clamped revenues of the range. Pure epsilon-DP with Laplace noise, add/remove one record, one
record per person, epsilon ``--epsilon`` (default 1).

* dptree: ``range_tree(age, weights=revenue, weight_bounds=(0, B), epsilon)``: one release answers
  every range (the count tree gets 1 - f of epsilon, the sum tree f = 0.614 by the default rule).
* OpenDP (``opendp.prelude``, Context API): the records of the range, then a clamped integer sum
  and a count, each with (discrete) Laplace noise at epsilon / 2 (``split_evenly_over=2``); the mean
  is their ratio (clamped to [0, B]; B / 2 when the noisy count is <= 0). One release per range.
* PipelineDP (``Metrics.MEAN`` on the local backend, Laplace noise, public partitions, delta 0):
  one partition per range (a record in every range that holds it); its budget accounting spreads
  epsilon over the ``max_partitions_contributed`` = L ranges one record can reach (L: the public
  number of workload ranges over the most covered age).

Per range: one range (ages 30-39), each baseline at the whole epsilon. Workload: ``--ranges``
random ranges (ages a..b, seeded, width at least 3): OpenDP answers each at epsilon / R
(sequential composition over the R releases), PipelineDP all R in one aggregation as above,
dptree from its one release. RMSE over ``--trials`` runs (``--opendp-trials``, ``--pipelinedp-trials``
for the baselines, which take seconds per workload run); ratio = baseline / dptree (> 1: dptree
is more accurate). Coverage: the fraction of ``--coverage-runs`` dptree releases whose level-0.95
``sum_ci`` / ``mean_ci`` holds the truth, per workload range (min, median, max over ranges).

    PYTHONPATH=src python3 benchmarks/range_sums.py             # about 5 minutes on 2 shared cores
    PYTHONPATH=src python3 benchmarks/range_sums.py --epsilon 0.3 --trials 100

OpenDP and PipelineDP are not dptree dependencies: ``pip install opendp pipeline-dp`` to run them
(without them the rows are left out and the script says so).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import table

import dptree
from dptree.data.histograms import leaf_sums


def make_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    age = np.clip(np.round(rng.normal(45, 18, n)), 0, 99).astype(np.int64)
    revenue = np.round(rng.gamma(2.0, 8.0 + age / 4.0)).astype(np.int64)
    return age, revenue


def workload(r: int, seed: int) -> list[tuple[int, int]]:
    rng = np.random.default_rng(seed + 1)
    out = []
    while len(out) < r:
        a, b = sorted(rng.integers(0, 100, 2).tolist())
        if b - a >= 2:
            out.append((a, b))
    return out


def truth(age: np.ndarray, rev: np.ndarray, bound: int, ranges: list[tuple[int, int]]) -> tuple[np.ndarray, ...]:
    w = np.clip(rev, 0, bound)
    sel = [(age >= a) & (age <= b) for a, b in ranges]
    return np.array([w[m].sum() for m in sel], float), np.array([w[m].mean() for m in sel])


def rmse(est: np.ndarray, true: np.ndarray) -> float:
    """Root mean squared error over trials (axis 0) and ranges."""
    return float(np.sqrt(np.mean((np.asarray(est) - true) ** 2)))


def dptree_runs(age: np.ndarray, rev: np.ndarray, bound: int, eps: float, ranges: list[tuple[int, int]],
                trials: int) -> tuple[np.ndarray, np.ndarray, float]:
    lo, hi = np.array([r[0] for r in ranges]), np.array([r[1] for r in ranges])
    s, m = np.empty((trials, len(ranges))), np.empty((trials, len(ranges)))
    t = time.perf_counter()
    for i in range(trials):
        rel = dptree.range_tree(age, lower=0, upper=99, epsilon=eps, weights=rev, weight_bounds=(0, bound),
                                rng=1000 + i)
        s[i], m[i] = rel.sum(lo, hi), rel.mean(lo, hi)
    return s, m, (time.perf_counter() - t) / trials


def opendp_runs(age: np.ndarray, rev: np.ndarray, bound: int, eps: float, ranges: list[tuple[int, int]],
                trials: int) -> tuple[np.ndarray, np.ndarray, float] | None:
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    parts = [[int(v) for v in rev[(age >= a) & (age <= b)]] for a, b in ranges]
    s, m = np.empty((trials, len(ranges))), np.empty((trials, len(ranges)))
    t = time.perf_counter()
    for i in range(trials):
        for j, data in enumerate(parts):
            ctx = dp.Context.compositor(data=data, privacy_unit=dp.unit_of(contributions=1),
                                        privacy_loss=dp.loss_of(epsilon=eps / len(ranges)), split_evenly_over=2)
            total = ctx.query().clamp((0, bound)).sum().laplace().release()
            count = ctx.query().count().laplace().release()
            s[i, j] = total
            m[i, j] = min(max(total / count, 0.0), bound) if count > 0 else bound / 2
    return s, m, (time.perf_counter() - t) / trials


def pipelinedp_runs(age: np.ndarray, rev: np.ndarray, bound: int, eps: float, ranges: list[tuple[int, int]],
                    trials: int) -> tuple[np.ndarray, float, int] | None:
    try:
        import pipeline_dp
    except ImportError:
        return None
    cover = np.zeros(100, np.int64)
    for a, b in ranges:
        cover[a:b + 1] += 1
    reach = int(cover.max())  # public: from the ranges alone
    rows = [(i, j, float(v)) for j, (a, b) in enumerate(ranges)
            for i, v in zip(np.flatnonzero((age >= a) & (age <= b)).tolist(), rev[(age >= a) & (age <= b)].tolist())]
    m = np.empty((trials, len(ranges)))
    t = time.perf_counter()
    for i in range(trials):
        acct = pipeline_dp.NaiveBudgetAccountant(total_epsilon=eps, total_delta=0)
        engine = pipeline_dp.DPEngine(acct, pipeline_dp.LocalBackend())
        params = pipeline_dp.AggregateParams(noise_kind=pipeline_dp.NoiseKind.LAPLACE, metrics=[pipeline_dp.Metrics.MEAN],
                                             max_partitions_contributed=reach, max_contributions_per_partition=1,
                                             min_value=0, max_value=bound)
        ext = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0], partition_extractor=lambda r: r[1],
                                         value_extractor=lambda r: r[2])
        out = engine.aggregate(rows, params, ext, public_partitions=list(range(len(ranges))))
        acct.compute_budgets()
        for key, metrics in out:
            m[i, key] = metrics.mean
    return m, (time.perf_counter() - t) / trials, reach


def coverage(age: np.ndarray, rev: np.ndarray, bound: int, eps: float, ranges: list[tuple[int, int]],
             runs: int) -> tuple[np.ndarray, np.ndarray]:
    plan = dptree.plan_range_sums(lower=0, upper=99, epsilon=eps, weight_bounds=(0, bound))
    h, s = leaf_sums(age, plan, plan.grid, weights=rev)
    ts, tm = truth(age, rev, bound, ranges)
    lo, hi = np.array([r[0] for r in ranges]), np.array([r[1] for r in ranges])
    cs, cm = np.zeros(len(ranges)), np.zeros(len(ranges))
    for i in range(runs):
        rel = plan.release(h, s, rng=50_000 + i)
        a, b = rel.sum_ci(lo, hi)
        cs += (a <= ts) & (ts <= b)
        a, b = rel.mean_ci(lo, hi)
        cm += (a <= tm) & (tm <= b)
    return cs / runs, cm / runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--bound", type=int, default=100)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--ranges", type=int, default=20)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--opendp-trials", type=int, default=50)
    ap.add_argument("--pipelinedp-trials", type=int, default=30)
    ap.add_argument("--coverage-runs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    age, rev = make_data(args.n, args.seed)
    eps, bound = args.epsilon, args.bound
    missing = []
    for title, ranges in (("one range (ages 30-39), each method at the whole epsilon", [(30, 39)]),
                          (f"a workload of {args.ranges} ranges", workload(args.ranges, args.seed))):
        ts, tm = truth(age, rev, bound, ranges)
        ds, dm, dt = dptree_runs(age, rev, bound, eps, ranges, args.trials)
        rows = [["dptree (one release)", f"{rmse(dm, tm):.4f}", "1.00", f"{rmse(ds, ts):.1f}", "1.00",
                 f"{1e3 * dt:.1f}"]]
        od = opendp_runs(age, rev, bound, eps, ranges, args.opendp_trials)
        if od is None:
            missing.append("opendp")
        else:
            os_, om, ot = od
            rows.append([f"OpenDP sum/count, epsilon/{len(ranges)} per range", f"{rmse(om, tm):.4f}",
                         f"{rmse(om, tm) / rmse(dm, tm):.2f}", f"{rmse(os_, ts):.1f}",
                         f"{rmse(os_, ts) / rmse(ds, ts):.2f}", f"{1e3 * ot:.1f}"])
        pd_ = pipelinedp_runs(age, rev, bound, eps, ranges, args.pipelinedp_trials)
        if pd_ is None:
            missing.append("pipeline_dp")
        else:
            pm, pt, reach = pd_
            rows.append([f"PipelineDP MEAN, {len(ranges)} partitions, L = {reach}", f"{rmse(pm, tm):.4f}",
                         f"{rmse(pm, tm) / rmse(dm, tm):.2f}", "-", "-", f"{1e3 * pt:.1f}"])
        print(f"\n{title}: n = {args.n}, epsilon = {eps:g}, revenue clamped to [0, {bound}], "
              f"{args.trials} trials ({args.opendp_trials} for OpenDP, {args.pipelinedp_trials} for PipelineDP); records per range "
              f"{int(min(((age >= a) & (age <= b)).sum() for a, b in ranges))}.."
              f"{int(max(((age >= a) & (age <= b)).sum() for a, b in ranges))}\n")
        print(table(["method", "mean RMSE", "ratio", "sum RMSE", "ratio", "ms per run"], rows))
    ranges = workload(args.ranges, args.seed)
    cs, cm = coverage(age, rev, bound, eps, ranges, args.coverage_runs)
    print(f"\ncoverage of dptree's 0.95 intervals, {args.coverage_runs} releases, {len(ranges)} workload ranges\n")
    print(table(["interval", "min", "median", "max"],
                [[name, f"{c.min():.3f}", f"{np.median(c):.3f}", f"{c.max():.3f}"]
                 for name, c in (("sum_ci", cs), ("mean_ci (Fieller)", cm))]))
    if missing:
        print(f"\nnot installed, rows left out: {', '.join(sorted(set(missing)))}")


if __name__ == "__main__":
    main()
