"""Private partition selection on Zipf-distributed keys against PipelineDP: recall per key size.

    PYTHONPATH=src python3 benchmarks/partition_selection.py --pipelinedp /tmp/pdp/bin/python

200,000 users with one record each, each record's key drawn from a Zipf law (exponent 1.3); the
selection at epsilon = 1, delta = 10^-6 for one key per user: dptree's
(:meth:`dptree.partitions.selection.SelectionPlan.select`: the optimal policy of Desfontaines et al.
2022, sampled exactly, the users counted per key by the numpy engine), and PipelineDP's
(``DPEngine.select_partitions`` with its truncated-geometric strategy, the same policy in floating
point; benchmarks/reference/pipelinedp_anchor.py, run under ``--pipelinedp``: a Python with
``pip install pipeline-dp``). Both on the same rows, ``--trials`` times each (dptree seeded by the
trial number; PipelineDP draws its own randomness).

Recall of a bucket: the share of its keys released, over all trials. Checks: every key of >= 300
users released and no key of one user released in any trial (the latter holds with probability
about (1 - delta)^(trials x keys of one user): about 0.88 for 10 trials of 12,610 such keys), and
dptree's recall within 10% of PipelineDP's in every bucket (relative where PipelineDP's is at least
0.1; an absolute 0.01 below, where a relative gap is noise: 2-9 users are kept with probability
< 10^-3). Writes the table (markdown) on stdout; exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BUCKETS = ((1, 1, "1"), (2, 9, "2-9"), (10, 29, "10-29"), (30, 99, "30-99"), (100, 299, "100-299"),
           (300, None, ">= 300"))


def zipf_rows(users: int, exponent: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(user ids, keys): one record per user, its key Zipf-distributed."""
    gen = np.random.default_rng(seed)
    return np.arange(users, dtype=np.int64), gen.zipf(exponent, users).astype(np.int64)


def recall(keys: np.ndarray, sizes: np.ndarray, runs: list[list[int]]) -> dict[str, tuple[int, float, int]]:
    """{bucket: (keys in it, recall over the runs, releases of its keys over the runs)}."""
    out = {}
    for lo, hi, name in BUCKETS:
        inside = (sizes >= lo) & (sizes <= (hi if hi is not None else sizes.max()))
        members = set(keys[inside].tolist())
        hits = sum(len(members.intersection(run)) for run in runs)
        out[name] = (len(members), hits / (len(members) * len(runs)) if members else float("nan"), hits)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=200_000)
    ap.add_argument("--exponent", type=float, default=1.3)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--seed", type=int, default=0, help="seed of the data (dptree's runs use seeds 1..trials)")
    ap.add_argument("--pipelinedp", default=sys.executable, help="a Python with pipeline-dp installed")
    args = ap.parse_args()

    from dptree.partitions.selection import plan_selection

    users, keys = zipf_rows(args.users, args.exponent, args.seed)
    distinct, sizes = np.unique(keys, return_counts=True)
    plan = plan_selection(epsilon=args.epsilon, delta=args.delta, max_groups=1)
    start = time.perf_counter()
    ours = [plan.select(keys, by=keys, user_id=users, rng=t + 1) for t in range(args.trials)]
    ours_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory(prefix="dptree-partitions-") as tmp:
        rows, out = Path(tmp) / "rows.npz", Path(tmp) / "pdp.json"
        np.savez(rows, users=users, keys=keys)
        anchor = Path(__file__).resolve().parent / "reference" / "pipelinedp_anchor.py"
        subprocess.run([args.pipelinedp, str(anchor), str(rows), str(args.trials), str(args.epsilon),
                        str(args.delta), str(out)], check=True)
        theirs = json.loads(out.read_text())
    a, b = recall(distinct, sizes, ours), recall(distinct, sizes, theirs["runs"])
    print(f"# {args.users:,} users, one key each, Zipf exponent {args.exponent}, {len(distinct):,} keys; "
          f"epsilon = {args.epsilon:g}, delta = {args.delta:g}; {args.trials} trials each\n")
    print("| users per key | keys | dptree recall | PipelineDP recall | dptree releases | PipelineDP releases |")
    print("|---|---|---|---|---|---|")
    failures = []
    for _, _, name in BUCKETS:
        n, ra, ha = a[name]
        _, rb, hb = b[name]
        print(f"| {name} | {n:,} | {ra:.4f} | {rb:.4f} | {ha:,} | {hb:,} |")
        close = abs(ra - rb) <= (0.1 * rb if rb >= 0.1 else 0.01)
        if not close:
            failures.append(f"{name}: recall {ra:.4f} vs PipelineDP {rb:.4f}")
    if a[">= 300"][1] != 1.0:
        failures.append("a key of >= 300 users was not released")
    if a["1"][2]:
        failures.append(f"{a['1'][2]} release(s) of a key of one user")
    print(f"\ndptree: {ours_s / args.trials:.3f} s per selection (counting included); PipelineDP "
          f"{theirs['version']}: {theirs['seconds'] / args.trials:.3f} s per selection (local backend)")
    for f in failures:
        print(f"CHECK FAILED: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
