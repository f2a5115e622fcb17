"""Non-negative and integer post-processing of hierarchy counts (DESIGN section 5).

Both functions work top-down, one level at a time, vectorised over all families of a level:

* :func:`project_families` -- each family of children is replaced by its Euclidean projection
  onto {c >= 0, sum c = parent} (the scaled simplex; Duchi et al. 2008's sort-based rule,
  O(k log k) per family of k children). The root is clipped at 0.
* :func:`round_families` -- sum-preserving rounding (largest remainder): each child is floored,
  and the parent's remaining units go to the children with the largest fractional parts, so the
  children of an integer parent are integers summing to it.

Both are post-processing of a private release and cost no privacy budget. They introduce bias
(a projected count is no longer unbiased; see docs/notes/hierarchy.md for the measured bias).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["project_families", "round_families", "simplex_project"]


def _segment_ranks(seg: np.ndarray, order: np.ndarray) -> np.ndarray:
    """0-based rank of each sorted position within its segment (seg sorted ascending)."""
    s = seg[order]
    n = s.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    start = np.ones(n, dtype=bool)
    start[1:] = s[1:] != s[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    return np.arange(n) - first


def simplex_project(values: np.ndarray, parent: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Project each family (children with the same ``parent`` index) onto
    {c >= 0, sum c = totals[parent]}; ``totals`` must be >= 0."""
    v = np.asarray(values, dtype=np.float64)
    par = np.asarray(parent, dtype=np.int64)
    tot = np.asarray(totals, dtype=np.float64)
    if v.size == 0:
        return v.copy()
    order = np.lexsort((-v, par))
    u = v[order]
    ps = par[order]
    rank = _segment_ranks(par, order)
    cs = np.cumsum(u)
    seg_start = np.maximum.accumulate(np.where(rank == 0, np.arange(u.size), 0))
    base = (cs - u)[seg_start]  # cumulative sum before the segment
    csum = cs - base  # within-segment cumulative sum
    k = rank + 1
    cond = u - (csum - tot[ps]) / k > 0
    n_par = tot.size
    rho = np.bincount(ps, weights=cond.astype(np.float64), minlength=n_par).astype(np.int64)
    # cumulative sum of the rho largest entries of each family
    take = cond & (k == rho[ps])
    theta = np.zeros(n_par)
    theta[ps[take]] = (csum[take] - tot[ps[take]]) / k[take]
    out = np.maximum(v - theta[par], 0.0)
    zero = rho[par] == 0  # total 0 (or no positive room): every child is 0
    out[zero] = 0.0
    return out


def project_families(x: Sequence[np.ndarray], parents: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """Top-down non-negative consistent counts: root clipped at 0, then every family projected
    onto the simplex scaled to its (already projected) parent."""
    out = [np.maximum(np.asarray(x[0], dtype=np.float64), 0.0)]
    for j in range(1, len(x)):
        out.append(simplex_project(x[j], np.asarray(parents[j]), out[j - 1]))
    return out


def round_families(x: Sequence[np.ndarray], parents: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """Top-down sum-preserving rounding of consistent counts (largest remainder).

    The root is rounded to the nearest integer; in each family the parent's integer value is
    split as floor(child) plus one extra unit for the children with the largest fractional
    parts. Non-negative inputs stay non-negative.
    """
    out = [np.rint(np.asarray(x[0], dtype=np.float64))]
    for j in range(1, len(x)):
        par = np.asarray(parents[j], dtype=np.int64)
        c = np.asarray(x[j], dtype=np.float64)
        fl = np.floor(c + 1e-9)
        frac = c - fl
        n_par = out[j - 1].size
        k = np.bincount(par, minlength=n_par)
        rem = np.rint(out[j - 1] - np.bincount(par, weights=fl, minlength=n_par)).astype(np.int64)
        rem = np.clip(rem, 0, k)
        order = np.lexsort((-frac, par))
        rank = np.empty(c.size, dtype=np.int64)
        rank[order] = _segment_ranks(par, order)
        out.append(fl + (rank < rem[par]))
    return out
