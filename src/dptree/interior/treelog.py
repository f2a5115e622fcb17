"""TreeLog, Algorithm 1 of Kaplan et al. 2020 (``002_2f350810784938f5.txt``), with its calibration.

:func:`treelog_parameters` derives the per-step (eps0, delta0) and the trimming t from a public
size (Lemma 3.7, add/remove-one neighbors) and checks the success guarantee (Lemma 3.8 with
explicit constants, docs/notes/heavypaths.md section 3); :func:`run_treelog` is the algorithm.
"""

from __future__ import annotations

import math
from typing import Any

from dptree.interior.multisets import (
    BASE_H,
    MS,
    best_of_four,
    choose_node,
    log_star_levels,
    path_and_D,
    random_chooser,
)
from dptree.interior.multisets import height as tree_height
from dptree.interior.selection import (
    choosing_error_bound,
    effective_epsilon,
    exponential_base,
    ordered_exponential_mechanism,
)
from dptree.noise import RandomSource

__all__ = ["run_treelog", "treelog_parameters", "treelog_privacy"]


def treelog_privacy(eps0: float, delta0: float, n: int, n_calls: int) -> tuple[float, float]:
    """Kaplan et al. 2020, Lemma 3.6/3.7: TreeLog with per-step (eps0, delta0) and N recursive calls is
    (5 eps0 N log n, 3 delta0 n N e^{3 eps0 N log n})-DP for **add/remove-one** neighbors
    (the proof takes S' = S + {x'}; n the larger size, a public bound), log in base 2 (the conservative base:
    the proof of Claim 3.5 bounds the number of ambiguous steps by log_{3/2} n <= 2 log2 n)."""
    ln = math.log2(max(n, 2))
    return 5 * eps0 * n_calls * ln, 3 * delta0 * n * n_calls * math.exp(3 * eps0 * n_calls * ln)


def treelog_parameters(
    n: int, size: int, epsilon: float, delta: float, beta: float = 0.1, *, height: int | None = None
) -> dict[str, Any]:
    """Per-step (eps0, delta0), trimming t and the utility check for TreeLog on n records, |X| = size.

    ``n`` is a public size (the caller's declaration, see :func:`~dptree.interior.api.interior_point`),
    never the actual |S|; ``epsilon``/``delta`` are the add/remove-one budget (interior_point passes
    the per-replacement budget of :func:`~dptree.interior.calibration.swap_budget`).
    Privacy (Lemma 3.7, add/remove-one, with n + 1 for a neighbor and N = number of calls including the base):
    eps0 = eps / (5 N log2(n+1)); delta0 = min(eps0 / (4(n+1)), delta e^{-3eps/5} / (3 (n+1) N)),
    so that (5 eps0 N log n, 3 delta0 n N e^{3 eps0 N log n}) <= (eps, delta) and
    delta0 <= eps0/(4n) (Claim 3.5). t >= (3/eps0) ln(1/delta0) >= (2/eps0) log2(1/delta0)
    (Claim 3.5 needs the weight to shrink by 1/3 at every ambiguous step, which t >= 3 g gives).
    Utility (Lemma 3.8 with explicit constants, docs/notes/heavypaths.md section 3): t is also large
    enough that a score t + 1 - (2/eps0) ln(4/beta') survives the Choosing Mechanism one level up.
    """
    hs = log_star_levels(tree_height(size) if height is None else height)
    n_calls = len(hs)
    nn = n + 1
    lg = math.log2(max(nn, 2))
    eps0 = epsilon / (5 * n_calls * lg)
    delta0 = min(eps0 / (4 * nn), delta * math.exp(-3 * epsilon / 5) / (3 * nn * n_calls), math.exp(-1))
    eps_em = effective_epsilon(exponential_base(eps0))
    b_each = beta / (2 * n_calls)
    e_choose = choosing_error_bound(eps0, delta0, b_each, nn)
    e_em4 = 2 / eps_em * math.log(4 / b_each)
    t_priv = math.ceil(3 * math.log(1 / delta0) / (eps0 * (1 - 1e-9)))
    t_util = math.ceil(e_choose + e_em4)
    t = max(t_priv, t_util)
    need = 1 + e_choose  # score the level above needs from its recursive call
    ok = True
    for i in range(n_calls - 1):
        if n - 3 * t * i <= 3 * t + 1:
            ok = False
    n_base = n - 3 * t * (n_calls - 1)
    base_need = 1 if n_calls == 1 else need
    if n_base <= 0 or math.ceil(n_base / 2) - 2 / eps_em * (hs[-1] * math.log(2.0) - math.log(b_each)) < base_need:
        ok = False
    return {
        "heights": hs,
        "n_calls": n_calls,
        "eps0": eps0,
        "delta0": delta0,
        "t": t,
        "t_privacy": t_priv,
        "t_utility": t_util,
        "guarantee_applies": ok,
        "privacy": treelog_privacy(eps0, delta0, nn, n_calls),
    }


def run_treelog(ms: MS, h: int, p: dict[str, Any], src: RandomSource, depth: int = 0) -> int | None:
    """Algorithm 1 on ``ms`` over [0, 2^h); None is the bottom of the Choosing Mechanism in Step 7."""
    eps0, delta0, t = p["eps0"], p["delta0"], p["t"]
    n = ms.n
    if h <= BASE_H or depth + 1 >= p["n_calls"]:
        # Step 1: |X| = O(1) -> the exponential mechanism. The recursion depth depends only on |X|
        # (public). There is no "n <= 3t" shortcut (it is not in Kaplan et al. 2020 and is not private: a
        # point mass of 3t records and one of 3t + 1 then behave completely differently); with
        # n <= 3t, Step 5 gives an empty D and the recursion runs on it as the paper says.
        return ordered_exponential_mechanism(ms.vals, counts=ms.cnt, lower=0, upper=(1 << h) - 1, epsilon=eps0, rng=src)
    ms_hat = ms.trim(t)  # Step 2
    d = path_and_D(ms_hat, h, t, n, random_chooser(eps0, src))  # Steps 3-5
    h_next = tree_height(h + 1)
    # Step 6 (clamp padding: post-processing); a bottom one call down is read as level 0
    inner = run_treelog(d, h_next, p, src, depth + 1)
    lstar = min(0 if inner is None else inner, h)
    vstar = choose_node(ms_hat, h, lstar, eps0, delta0, src)  # Step 7
    if vstar is None:
        return None  # bottom (the guarantee has failed); the caller releases a data-independent 0
    return best_of_four(ms, h, lstar, vstar, eps0, src)  # Steps 8-9
