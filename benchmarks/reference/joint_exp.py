"""JointExp as its paper defines it: a benchmark baseline, never shipped in the package.

Gillenwater, Joseph & Kulesza, "Differentially Private Quantiles", ICML 2021. Continuous data
clipped to [lower, upper], sorted x_1 <= ... <= x_n, x_0 = lower, x_{n+1} = upper; the n + 1
intervals I_i = [x_i, x_{i+1}] (length 0 between tied points: never chosen). Output: sorted
o_1 <= ... <= o_m with density proportional to exp(epsilon u(o) / (2 Delta)), where

    u(o) = -sum_{j=1}^{m+1} | #{x : o_{j-1} <= x < o_j} - (q_j - q_{j-1}) n |,  o_0 = lower, o_{m+1} = upper,

Delta = 2 (the paper's sensitivity for swap neighbours; add/remove: 2 (1 - min gap of the levels)).
An output in I_i has i points below it, so the count between outputs in I_i' and I_i is i - i'.
Sampling (the paper's Algorithm 2): a forward table over (output j, interval i) of the total
weight of prefixes ending in I_i, with the volume |I|^k / k! of k sorted outputs sharing an
interval, then backward draws of the intervals and run lengths, and uniform points inside.

Implementation notes (ours, not the paper's): log space with numpy floats; the transition sum
over earlier intervals splits at the target count: a cumulative log-sum below it and dyadic
range log-sums for the window above it (no subtraction of nearly equal sums); the runs are kept as in dptree
(a table of run starts and cumulative stay terms), so memory is O(m n) instead of the paper's
O(m^2 n); time stays O(m^2 n). Randomness: numpy (Gumbel-max draws), not private.
"""

from __future__ import annotations

import numpy as np


def _lse(a: np.ndarray, axis: int = 0) -> np.ndarray:
    top = np.max(a, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(top, axis=axis) + np.log(np.sum(np.exp(a - top), axis=axis))


def _range_lse(v: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """log sum_{t in [lo, hi)} exp(v[t]) for each query, from dyadic blocks (no subtraction)."""
    levels = [v]
    while 2 ** len(levels) <= v.size:
        w = 2 ** (len(levels) - 1)
        levels.append(np.logaddexp(levels[-1][:-w], levels[-1][w:]))
    acc = np.full(lo.size, -np.inf)
    pos = lo.copy()
    for i in range(len(levels) - 1, -1, -1):
        take = (hi - pos) >= 2**i
        acc[take] = np.logaddexp(acc[take], levels[i][pos[take]])
        pos[take] += 2**i
    return acc


def _gumbel_argmax(logw: np.ndarray, rng: np.random.Generator) -> int:
    return int(np.argmax(logw + rng.gumbel(size=logw.size)))


def joint_exp(x: np.ndarray, qs: np.ndarray, lower: float, upper: float, epsilon: float,
              rng: np.random.Generator, sensitivity: float = 2.0) -> np.ndarray:
    """m sorted estimates of the levels ``qs`` (sorted, in (0, 1)) by JointExp."""
    xs = np.sort(np.clip(np.asarray(x, dtype=np.float64), lower, upper))
    n, m = xs.size, len(qs)
    edges = np.concatenate([[lower], xs, [upper]])
    with np.errstate(divide="ignore"):
        loglen = np.log(np.diff(edges))  # n + 1 intervals
    q = np.concatenate([[0.0], np.asarray(qs, dtype=np.float64), [1.0]])
    tau = np.diff(q) * n  # target counts between consecutive outputs, j = 1..m+1
    a = epsilon / (2.0 * sensitivity)
    idx = np.arange(n + 1, dtype=np.float64)
    a1 = np.full((m + 1, n + 1), -np.inf)
    h = np.full((m + 1, n + 1), -np.inf)
    cum = np.zeros(m + 1)  # stay terms do not depend on the interval: -a tau_j per extra output
    a1[1] = loglen - a * np.abs(idx - tau[0])
    h[1] = a1[1]
    runs = np.full((m + 1, n + 1), -np.inf)
    runs[1] = a1[1]
    for j in range(2, m + 1):
        t = tau[j - 1]
        prev = h[j - 1]
        up = np.logaddexp.accumulate(prev + a * idx)  # sum over i' <= p of H e^{a i'}
        p = np.minimum(np.floor(idx - t), idx - 1).astype(np.int64)  # i' <= i - t (and i' < i)
        below = np.where(p >= 0, up[np.clip(p, 0, n)] - a * (idx - t), -np.inf)
        win = _range_lse(prev - a * idx, np.clip(p + 1, 0, n + 1), np.arange(n + 1)) + a * (idx - t)
        a1[j] = loglen + np.logaddexp(below, win)
        stay = -a * t
        cum[j] = cum[j - 1] + stay
        ks = np.arange(2, j + 1, dtype=np.float64)[:, None]
        runs[2: j + 1] = runs[1:j] + stay + loglen - np.log(ks)
        runs[1] = a1[j]
        h[j] = _lse(runs[1: j + 1])
    out = np.empty(m)
    j, nxt = m, -1
    while j >= 1:
        if nxt < 0:
            logw = h[j] - a * np.abs(n - idx - tau[m])
        else:
            logw = h[j, :nxt] - a * np.abs(nxt - idx[:nxt] - tau[j])
        i = _gumbel_argmax(logw, rng)
        ks = np.arange(1, j + 1)
        lw = a1[j - ks + 1, i] + cum[j] - cum[j - ks + 1] + (ks - 1) * loglen[i] - np.cumsum(np.log(ks))
        k = int(ks[_gumbel_argmax(lw, rng)])
        out[j - k: j] = np.sort(rng.uniform(edges[i], edges[i + 1], size=k))
        j, nxt = j - k, i
    return out
