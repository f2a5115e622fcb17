"""A small privacy-audit harness (same form as the planned shared harness, DESIGN.md section 8).

Run a mechanism many times on two neighboring datasets, choose an output event on a *pilot* run
(single outputs and their complements/prefixes), count it on fresh runs, and turn the counts into a
Clopper-Pearson (1 - alpha) lower bound on epsilon. A correct epsilon-DP mechanism exceeds its
claimed epsilon only with probability <= alpha (up to the delta term, negligible here).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from typing import Any

from interior_stats import eps_lower_bound

from dptree.noise import make_source


def _events(outputs1: list[Hashable], outputs2: list[Hashable]) -> list[Callable[[Any], bool]]:
    keys = sorted(set(outputs1) | set(outputs2), key=repr)
    ev: list[Callable[[Any], bool]] = []
    for k in keys:
        ev.append(lambda o, k=k: o == k)
        ev.append(lambda o, k=k: o != k)
    nums = sorted(k for k in keys if isinstance(k, int))
    for k in nums:
        ev.append(lambda o, k=k: isinstance(o, int) and o <= k)
        ev.append(lambda o, k=k: not (isinstance(o, int) and o <= k))
    return ev


def audit_epsilon(
    mech: Callable[[Any, Any], Hashable],
    d1: Any,
    d2: Any,
    trials: int,
    *,
    alpha: float = 1e-6,
    seed: int = 0,
) -> float:
    """Clopper-Pearson lower bound on the epsilon of ``mech`` from the neighbors d1, d2."""
    src = make_source(seed)
    pilot = max(200, trials // 4)
    p1 = [mech(d1, src) for _ in range(pilot)]
    p2 = [mech(d2, src) for _ in range(pilot)]
    best, best_ev, flip = -math.inf, None, False
    for ev in _events(p1, p2):
        c1 = sum(map(ev, p1))
        c2 = sum(map(ev, p2))
        for a, b, f in ((c1, c2, False), (c2, c1, True)):
            if a >= 10:
                r = math.log(a / max(b, 0.5))
                if r > best:
                    best, best_ev, flip = r, ev, f
    assert best_ev is not None
    f1 = [mech(d1, src) for _ in range(trials)]
    f2 = [mech(d2, src) for _ in range(trials)]
    k1 = sum(map(best_ev, f1))
    k2 = sum(map(best_ev, f2))
    if flip:
        k1, k2 = k2, k1
    return eps_lower_bound(k1, k2, trials, alpha)
