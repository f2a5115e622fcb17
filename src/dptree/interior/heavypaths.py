"""HeavyPaths, Algorithms 2-6 of Kaplan et al. 2020 (``002_2f350810784938f5.txt``), with its calibration.

ConstructPaths (Algorithm 2), StoppingPoint (3), OneRandomPath (4), LevelUp (5) and HeavyPaths
(6). :func:`heavypaths_parameters` derives every constant from a public size, privacy from
Lemmas 4.5, 4.6, 4.9 and 4.11 for add/remove-one neighbors (derivation: docs/notes/heavypaths.md).
"""

from __future__ import annotations

import math
from typing import Any

from dptree.interior.multisets import (
    BASE_DOMAIN,
    BASE_H,
    MS,
    best_of_four,
    choose_node,
    heavy_chooser,
    log_star_levels,
    path_and_D,
    random_chooser,
)
from dptree.interior.multisets import height as tree_height
from dptree.interior.sparse_vector import AboveThreshold, above_threshold_error_bound
from dptree.interior.selection import (
    choosing_error_bound,
    choosing_mechanism,
    effective_epsilon,
    exponential_base,
)
from dptree.noise import RandomSource

__all__ = ["construct_paths", "heavypaths_parameters", "heavypaths_privacy", "run_heavypaths"]


def _advanced(eps: float, k: int, dstar: float) -> float:
    """Advanced composition (Dwork-Rothblum-Vadhan 2010): k-fold (eps, d) is
    (eps sqrt(2k ln(1/d*)) + k eps (e^eps - 1), k d + d*)-DP; dptree takes the min with k eps."""
    if k == 0:
        return 0.0
    adv = eps * math.sqrt(2 * k * math.log(1 / dstar)) + k * eps * math.expm1(eps)
    return min(k * eps, adv)


def heavypaths_privacy(
    eps1: float, eps2: float, delta2: float, k: int, n: int, levels: int, delta: float
) -> tuple[float, float]:
    """(eps_bar, delta_bar) of HeavyPaths (Kaplan et al. 2020, Lemma 4.11 with explicit constants).

    For add/remove-one neighbors: the lemmas are stated for S, S' in X^n but proved with
    Lemma 3.6's path argument (S' = S + {x}); ``n`` is a public bound on the sizes.

    StoppingPoint: pure eps1 on the events d_hat <= d*(S), failure delta_sp = e^{-eps1 (k-2)/8}
    + e^{-eps1 (k-2)/16} (Lemma 4.5 via Lemma 4.4). OneRandomPath: (6 eps2 log2 n,
    4 delta2 n e^{4 eps2 log2 n}) (Lemma 4.6). At most J = levels - 2 LevelUps, each
    (2 eps2, 2 delta2) (Lemma 4.9), composed with advanced composition at delta* = delta/4 (or
    basic, whichever is smaller). Total: (eps1 + eps_hat, delta_sp + delta_hat) (docs/notes/heavypaths.md).
    """
    lg = math.log2(max(n, 2))
    e_orp = 6 * eps2 * lg
    d_orp = 4 * delta2 * n * math.exp(4 * eps2 * lg)
    j = max(levels - 2, 0)
    dstar = delta / 4
    e_lu = _advanced(2 * eps2, j, dstar)
    d_lu = 2 * delta2 * j + (dstar if j and e_lu < j * 2 * eps2 else 0.0)
    d_sp = math.exp(-eps1 * (k - 2) / 8) + math.exp(-eps1 * (k - 2) / 16)
    return eps1 + e_orp + e_lu, d_sp + d_orp + d_lu


def _hp_levels(n: int, h: int, t: int) -> list[int]:
    """Heights of the databases S_1, S_2, ... that ConstructPaths produces (public given n, |X|, t)."""
    hs = [h]
    nd = n
    while hs[-1] > BASE_H and nd > 10 * t:
        hs.append(tree_height(hs[-1] + 1))
        nd -= 3 * t
    return hs


def heavypaths_parameters(
    n: int, size: int, epsilon: float, delta: float, beta: float = 0.1, *, height: int | None = None
) -> dict[str, Any]:
    """Explicit parameters of HeavyPaths (Algorithm 6) on n records over |X| = size.

    ``n`` is a public size (declared), never the actual |S|; ``epsilon``/``delta`` the
    add/remove-one budget (interior_point passes the per-replacement budget).

    eps1 = eps/4 for StoppingPoint; eps2 the largest value with eps1 + eps_hat(eps2) <= eps;
    delta2 = min(eps2/(4(n+1)), (delta/2) / (4(n+1) e^{4 eps2 log2(n+1)} + 2J)); k >= 2 +
    (16/eps1) ln(8/delta) (so delta_sp <= delta/4) and the utility constraints of
    docs/notes/heavypaths.md section 4; t = 2k (Lemma 4.3 needs t >= 2k) and t >= (3/eps2) ln(1/delta2).
    """
    h = tree_height(size) if height is None else height
    nn = n + 1
    lg = math.log2(max(nn, 2))
    eps1 = epsilon / 4
    m_dom = len(log_star_levels(h))
    levels = m_dom
    j = max(levels - 2, 0)

    def eps_hat(e2: float) -> float:
        return 6 * e2 * lg + _advanced(2 * e2, j, delta / 4)

    lo, hi = 0.0, epsilon
    for _ in range(100):
        mid = (lo + hi) / 2
        if eps1 + eps_hat(mid) <= epsilon:
            lo = mid
        else:
            hi = mid
    eps2 = lo
    delta2 = min(eps2 / (4 * nn), (delta / 2) / (4 * nn * math.exp(4 * eps2 * lg) + 2 * j), math.exp(-1))
    b_each = beta / (4 + 2 * j)
    eps2_em = effective_epsilon(exponential_base(eps2))
    e_c = choosing_error_bound(eps2, delta2, b_each, nn)
    e_e = 2 / eps2_em * math.log(4 / b_each)
    k_priv = 2 + 16 / eps1 * math.log(8 / delta)
    k_at = 4 * above_threshold_error_bound(eps1, levels, b_each)  # alpha <= k/4
    k_util = 4 * (1 + 2 * e_c)
    t_util = e_c + e_e
    t_path = 3 * math.log(1 / delta2) / (eps2 * (1 - 1e-9))
    k = math.ceil(max(k_priv, k_at, k_util, t_util / 2, t_path / 2))
    t = 2 * k
    hs = _hp_levels(n, h, t)
    ok = len(hs) == m_dom and (n - 3 * t * (m_dom - 1)) >= max(BASE_DOMAIN * k, 10 * t + 1)
    return {
        "heights": hs,
        "n_public": n,
        "levels": levels,
        "eps1": eps1,
        "eps2": eps2,
        "delta2": delta2,
        "k": k,
        "t": t,
        "c": k / 2,
        "guarantee_applies": ok,
        "privacy": heavypaths_privacy(eps1, eps2, delta2, k, nn, levels, delta),
    }


def construct_paths(ms: MS, h: int, t: int, n_public: int | None = None) -> list[tuple[MS, int]]:
    """Algorithm 2 (ConstructPaths): the databases S_1 = S, S_2, ... with their tree heights.

    Step 1 halts when |S_d| <= 10t or the domain is O(1). Kaplan et al. 2020 state their lemmas for
    S, S' in X^n, where |S_d| = n - 3t(d - 1) is public. For add/remove neighbors the actual
    size is private and halting on it is not private: S with 10t records would stop after S_1 and
    S + {x} would go on to S_2, so StoppingPoint asks one more query and, on spread data,
    HeavyPaths returns bottom on one and a point on the other. With ``n_public`` (the
    declared size N, data capped at N) step 1 tests the public sizes N - 3t(d - 1) instead, so the
    number of databases is a function of (N, |X|, t) only (``heavypaths_parameters()["heights"]``);
    D keeps max(|S_d| - 3t, 0) records. Without ``n_public`` (tests), the actual size."""
    out = [(ms, h)]
    size = ms.n if n_public is None else n_public
    while out[-1][1] > BASE_H and size > 10 * t:
        cur, hh = out[-1]
        d = path_and_D(cur.trim(t), hh, t, cur.n, heavy_chooser)
        out.append((d, tree_height(hh + 1)))
        size = d.n if n_public is None else size - 3 * t
    return out


def run_heavypaths(ms: MS, h: int, p: dict[str, Any], src: RandomSource) -> int | None:
    """Algorithm 6 (HeavyPaths) on ``ms`` over [0, 2^h) with the parameters ``p`` of
    :func:`heavypaths_parameters`; None is the bottom output."""
    t, eps1, eps2, delta2 = p["t"], p["eps1"], p["eps2"], p["delta2"]
    dbs = construct_paths(ms, h, t, p["n_public"])
    levels = len(dbs)  # = len(p["heights"]): public (declared N, |X|, t)
    # Algorithm 3 (StoppingPoint): AboveThreshold on f_d = max multiplicity of S_d, threshold k/2
    at = AboveThreshold(threshold=p["c"], epsilon=eps1, rng=src)
    dhat = None
    for d in range(1, levels + 1):
        if at.query(dbs[d - 1][0].max_count()):
            dhat = d
            break
    if dhat is None:
        return None
    if dhat == 1:  # S itself has a heavy element: choose it (an element of S is an interior point)
        c = choosing_mechanism(ms.cnt, epsilon=eps2, delta=delta2, rng=src)
        return None if c is None else int(ms.vals[c])
    # Algorithm 4 (OneRandomPath) at d = dhat - 1
    sd, hd = dbs[dhat - 2]
    sd_hat = sd.trim(t)
    dr = path_and_D(sd_hat, hd, t, sd.n, random_chooser(eps2, src))
    c = choosing_mechanism(dr.cnt, epsilon=eps2, delta=delta2, rng=src)  # step 6
    if c is None:
        return None
    level = min(int(dr.vals[c]), hd)
    vstar = choose_node(sd_hat, hd, level, eps2, delta2, src)  # step 7
    if vstar is None:
        return None
    y = best_of_four(sd, hd, level, vstar, eps2, src)  # steps 8-9
    # Algorithm 5 (LevelUp) for d = dhat - 2 down to 1
    for d in range(dhat - 2, 0, -1):
        sd, hd = dbs[d - 1]
        sd_hat = sd.trim(t)
        level = min(y, hd)
        vstar = choose_node(sd_hat, hd, level, eps2, delta2, src)
        if vstar is None:
            return None
        y = best_of_four(sd, hd, level, vstar, eps2, src)
    return y
