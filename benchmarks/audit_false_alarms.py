"""Measure the audit's false-alarm rate and its power (target: zero false alarms in 100 runs).

Runs ``--runs`` independent audits (seeds 1000, 1001, ...) of every registered mechanism and of
the four planted bugs of tests/statistical/test_audit.py, with the configured sample sizes (a spec's own
``extra["fast"]``/``extra["slow"]`` config where it has one, else audit.FAST unless
--slow), and prints one line per mechanism: failures / runs and the range of the epsilon lower
bounds. Correct mechanisms should never fail; planted bugs should always fail.

    PYTHONPATH=src python3 benchmarks/audit_false_alarms.py --runs 100 | tee out/audit_false_alarms.txt
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "statistical"))

import audit_registry  # noqa: E402, F401  (registers every mechanism)

from dptree.testing import audit  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--slow", action="store_true", help="use audit.SLOW (10x samples)")
    ap.add_argument("--only", default="", help="comma-separated substrings: audit only matching mechanism names")
    ap.add_argument("--no-bugs", action="store_true")
    ap.add_argument("--bugs-only", action="store_true")
    args = ap.parse_args()
    config = audit.SLOW if args.slow else audit.FAST
    specs = [] if args.bugs_only else [(s, True) for s in audit.registered()]
    if not args.no_bugs:
        from test_audit import PLANTED

        specs += [(make(), False) for _, make in sorted(PLANTED.items())]
    print(f"# config: n_select={config.n_select}, n_eval={config.n_eval}, alpha={config.alpha}, runs={args.runs}")
    print(f"# {'mechanism':48s} {'correct':>7s} {'fails':>7s} {'pairs':>5s} {'min eps_lb':>10s} {'max eps_lb':>10s} {'claim':>7s} {'sec':>6s}")
    for spec, correct in specs:
        if args.only and not any(o in spec.name for o in args.only.split(",")):
            continue
        t0 = time.perf_counter()
        fails = 0
        bounds = []
        npairs = 0
        for r in range(args.runs):
            cfg = spec.extra.get("slow" if args.slow else "fast", config)  # per-spec sample sizes
            rep = audit.audit(spec, config=cfg, seed=1000 + r)
            fails += not rep.passed
            bounds.append(rep.epsilon_lower_bound)
            npairs = len(rep.pairs)
        dt = time.perf_counter() - t0
        print(f"  {spec.name:48s} {str(correct):>7s} {fails:>3d}/{args.runs:<3d} {npairs:>5d} "
              f"{min(bounds):>10.3f} {max(bounds):>10.3f} {spec.epsilon:>7.3f} {dt:>6.0f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
