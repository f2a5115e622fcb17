"""Statistical helpers for the interior-point tests (binomial tails, Clopper-Pearson, exact EM laws)."""

from __future__ import annotations

import math

from scipy import stats

from dptree.interior.selection import interior_quality_intervals


def binom_sf(k: int, n: int, p: float) -> float:
    """P(Binomial(n, p) >= k)."""
    return float(stats.binom.sf(k - 1, n, p))


def eps_lower_bound(k1: int, k2: int, trials: int, alpha: float = 1e-6) -> float:
    """Audit: a (1 - alpha)-confidence lower bound on epsilon from counts of one event on D and D'
    (the shared Clopper-Pearson bound, :func:`dptree.testing.statistics.epsilon_lower_bound`)."""
    from dptree.testing.statistics import epsilon_lower_bound

    return max(0.0, epsilon_lower_bound(k1, k2, trials, alpha, 0.0)[0])


def em_interval_law(vals, cnt, lower, upper, log_base):
    """Exact law of the ordered exponential mechanism: [(start, end, probability)] (floats)."""
    iv = interior_quality_intervals(vals, cnt, lower, upper)
    logs = [math.log(e - s + 1) + q * log_base for s, e, q in iv]
    m = max(logs)
    w = [math.exp(x - m) for x in logs]
    z = sum(w)
    return [(s, e, wi / z) for (s, e, _), wi in zip(iv, w)]


def ln_int(x: int) -> float:
    b = x.bit_length()
    return math.log(x) if b < 1000 else math.log(x >> (b - 64)) + (b - 64) * math.log(2)


def pooled_chisquare_pvalue(counts, probs) -> float:
    """Chi-square goodness-of-fit p-value of observed ``counts`` against cell probabilities
    ``probs``, the cells with the smallest expectations pooled until each pooled cell expects at
    least 5 draws (the remainder joins the last pooled cell)."""
    import numpy as np

    counts = np.asarray(counts, dtype=np.float64)
    exp = np.asarray(probs, dtype=np.float64) * counts.sum()
    obs_cells, exp_cells, acc_o, acc_e = [], [], 0.0, 0.0
    for i in np.argsort(exp):
        acc_o += counts[i]
        acc_e += exp[i]
        if acc_e >= 5:
            obs_cells.append(acc_o)
            exp_cells.append(acc_e)
            acc_o = acc_e = 0.0
    exp_cells[-1] += acc_e
    obs_cells[-1] += acc_o
    return float(stats.chisquare(obs_cells, exp_cells).pvalue)
