"""ApproximateQuantiles as its paper defines it: a benchmark baseline, never shipped in the package.

Kaplan, Schnapp & Stemmer, "Differentially Private Approximate Quantiles", ICML 2022. Recursive
splitting: estimate the middle level q_mid = q_{floor(m/2)+1} of the current levels with the
single-quantile exponential mechanism on the current data and interval (a, b); send the data
below the estimate v with the levels below q_mid, rescaled to q / q_mid, to (a, v), and the data
above with the levels above, rescaled to (q - q_mid) / (1 - q_mid), to (v, b); recurse. Each
record is in one sub-problem per layer of the recursion, so each layer is epsilon_layer-DP by
parallel composition and the whole is epsilon-DP with epsilon_layer = epsilon / layers under
add/remove-one neighbours, layers = floor(log2 m) + 1 (the recursion depth;
ceil(log2 m) + 1 is a bound on it; the authors' code uses log2 m + 1).

Single quantile (Smith 2011, the paper's building block): with the sorted data clipped to (a, b)
and x_0 = a, x_{n+1} = b, interval I_i = [x_i, x_{i+1}] (i points below it) is chosen with weight
|I_i| exp(epsilon_layer u_i / (2 Delta)), u_i = -|i - q n|, Delta = max(q, 1 - q) under
add/remove; then a uniform point in it. Randomness: numpy (Gumbel-max), not private.
"""

from __future__ import annotations

import numpy as np


def single_quantile(xs: np.ndarray, q: float, a: float, b: float, epsilon: float, rng: np.random.Generator) -> float:
    """The exponential mechanism for the q-quantile of sorted ``xs`` on (a, b) (Smith 2011)."""
    n = xs.size
    edges = np.concatenate([[a], np.clip(xs, a, b), [b]])
    with np.errstate(divide="ignore"):
        logw = np.log(np.diff(edges)) - epsilon / (2 * max(q, 1 - q)) * np.abs(np.arange(n + 1) - q * n)
    i = int(np.argmax(logw + rng.gumbel(size=logw.size)))
    return float(rng.uniform(edges[i], edges[i + 1]))


def approx_quantiles(x: np.ndarray, qs: np.ndarray, lower: float, upper: float, epsilon: float,
                     rng: np.random.Generator) -> np.ndarray:
    """m estimates of the sorted levels ``qs`` (in (0, 1)) by ApproximateQuantiles."""
    qs = np.asarray(qs, dtype=np.float64)
    eps = epsilon / (len(qs).bit_length())  # floor(log2 m) + 1 layers

    def solve(xs: np.ndarray, levels: np.ndarray, a: float, b: float) -> list[float]:
        m = levels.size
        if m == 0:
            return []
        mid = m // 2
        qm = float(levels[mid])
        v = single_quantile(xs, qm, a, b, eps, rng)
        k = int(np.searchsorted(xs, v, side="left"))  # xs[:k] < v <= xs[k:]
        left = solve(xs[:k], levels[:mid] / qm, a, v) if mid else []
        right = solve(xs[k:], (levels[mid + 1:] - qm) / (1 - qm), v, b) if mid + 1 < m else []
        return left + [v] + right

    return np.array(solve(np.sort(np.asarray(x, dtype=np.float64)), qs, float(lower), float(upper)))


def approx_quantiles_jittered(x: np.ndarray, qs: np.ndarray, lower: float, upper: float, epsilon: float,
                              rng: np.random.Generator, scale: float = 1e-5) -> np.ndarray:
    """:func:`approx_quantiles` on data prepared as the authors' code prepares it (ShacharSchnapp/DP_AQ
    ``gaussian_noise``): every point plus N(0, scale^2) noise, the bounds widened by 4 scale. On a
    tied integer column this turns each tie block into a run of tiny intervals inside which the
    estimate can land; the estimates are rounded to the nearest integer, the column's own grid."""
    jittered = np.asarray(x, dtype=np.float64) + rng.normal(0.0, scale, size=np.size(x))
    return np.round(approx_quantiles(jittered, qs, lower - 4 * scale, upper + 4 * scale, epsilon, rng))
