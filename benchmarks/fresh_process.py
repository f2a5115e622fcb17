"""The harness of the benchmarks that time each call in a fresh process: the child runs one task
and prints its time and peak RSS as JSON; the parent runs every task once per round, alternating,
and keeps each task's runs (``medians`` then summarises them)."""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

ROOT = Path(__file__).resolve().parents[1]


def report(call: Callable[[], Any]) -> None:
    """In the child: run ``call`` and print {"seconds", "rss_mib"} (this process's peak RSS)."""
    t0 = time.perf_counter()
    call()
    emit(time.perf_counter() - t0)


def emit(seconds: float) -> None:
    """In the child: print {"seconds", "rss_mib"} for a time measured by the caller (a child that
    times its own imports must measure before it imports this module)."""
    print(json.dumps({"seconds": seconds, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def rounds(script: str, tasks: Sequence[str], child_args: Sequence[str], n_rounds: int) -> dict[str, list[dict]]:
    """In the parent: ``n_rounds`` rounds of ``script --child TASK *child_args`` for every task, in
    order, each in a fresh process with this checkout's ``src`` on PYTHONPATH."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    runs: dict[str, list[dict]] = {t: [] for t in tasks}
    for _ in range(n_rounds):
        for t in tasks:
            out = subprocess.run([sys.executable, script, "--child", t, *child_args], capture_output=True, text=True,
                                 env=env, check=True)
            runs[t].append(json.loads(out.stdout.strip().splitlines()[-1]))
    return runs


def table(runs: dict[str, list[dict]], baseline: str, what: str) -> str:
    """A markdown table: each task's median time, its ratio to ``baseline``'s and its peak RSS."""
    base = statistics.median(r["seconds"] for r in runs[baseline])
    lines = [f"| operation | time | ratio to {what} | peak RSS |", "|---|---|---|---|"]
    for t, rs in runs.items():
        sec = statistics.median(r["seconds"] for r in rs)
        lines.append(f"| {t} | {sec:.2f} s | {sec / base:.2f}x | {max(r['rss_mib'] for r in rs):.0f} MiB |")
    return "\n".join(lines)
