"""How a range tree's budget is split over its levels, and the branching factor it uses.

* ``"uniform"``: every noised level gets the same share (Honaker 2015, Algorithm 1: eps' = eps / lg n
  per level, which is this rule for a binary tree).
* a workload: the shares that minimise the exact average variance of the
  least-squares estimate over the workload's queries, computed from the closed form of DESIGN
  section 4 (a small smooth problem over L variables):

  - ``"all_ranges"`` (alias ``"optimal"``): all D(D+1)/2 ranges [l, r];
  - ``"prefix"``: the D prefixes [lower, x] (the CDF / threshold workload);
  - ``"all_rectangles"``: all rectangles of a 2^k x 2^k grid whose cells are the leaves of a
    4-ary tree in Morton order (the quadtree of :mod:`dptree.spatial`). A rectangle's a_j is the
    product of its two sides' 1-D a_j over binary blocks, and the x and y ranges of all
    rectangles are independent, so abar_j is the square of the 1-D all-range abar_j of the side.

The workload averages are exact: by linearity, avg Var = sum_j (abar_j - abar_{j-1}) / Lambda_j
where abar_j is the average of a_j over the workload's queries, computed in O(1) per level, in
exact integers, for all ranges (:func:`mean_block_sums`) and for prefixes
(:func:`mean_prefix_block_sums`). Everything here depends only on public parameters (the domain
size, the fan-outs, the noise family and whether the root is exact), never on data.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from dptree._validation import Options, validate_params
from dptree.rangetree.layout import TreeLayout, build_layout
from dptree.rangetree.support_search import MIN_LEVEL_WEIGHT, search_supports, strided_supports

__all__ = [
    "mean_block_sums",
    "mean_prefix_block_sums",
    "average_range_variance",
    "average_prefix_variance",
    "average_workload_variance",
    "canonical_levels",
    "LEVEL_OPTIONS",
    "WORKLOADS",
    "level_weights",
    "choose_branching",
    "BRANCHING_CANDIDATES",
    "PREFIX_BRANCHING_CANDIDATES",
    "workload_description",
]

BRANCHING_CANDIDATES = (2, 4, 8, 16, 32, 64)
#: the prefix workload's optimum is often at a branching that is not a power of two (b = 10 at
#: D = 1024: 117.6 vs 117.8 at b = 4, exact discrete Laplace, eps = 1)
PREFIX_BRANCHING_CANDIDATES = (2, 3, 4, 5, 6, 8, 10, 12, 16, 32, 64)
NoiseKind = Literal["laplace", "gaussian"]
#: the workloads a budget split can be optimised for
WORKLOADS = ("all_ranges", "prefix")
#: every accepted value of ``levels=`` ("optimal": an alias of "all_ranges")
LEVEL_OPTIONS = ("uniform", "all_ranges", "prefix", "optimal")
#: the workload of a quadtree's leaves in Morton order (:mod:`dptree.spatial`), not of a 1-D tree
GRID_WORKLOAD = "all_rectangles"
_ALIASES = {"optimal": "all_ranges"}


def canonical_levels(levels: str) -> str:
    """The canonical name of a ``levels=`` value (``"optimal"`` is ``"all_ranges"``)."""
    return _ALIASES.get(levels, levels)


def workload_description(levels: str) -> str:
    """The workload a budget split was chosen for, in words (for the privacy statement)."""
    w = canonical_levels(levels)
    if w == "prefix":
        return "the prefixes [lower, x] of the domain: shares minimise their exact average variance"
    if w == "all_ranges":
        return "all ranges [l, r] of the domain: shares minimise their exact average variance"
    return "none: equal shares on the noised levels"


def _workload(strategy: str) -> str:
    """The workload whose average variance a strategy is judged by (uniform: all ranges)."""
    w = canonical_levels(strategy)
    return w if w in WORKLOADS or w == GRID_WORKLOAD else "all_ranges"


@lru_cache(maxsize=64)
def mean_block_sums(domain_size: int, fanouts: tuple[int, ...]) -> tuple[float, ...]:
    """abar_j: the average over all ranges [l, r] of [0, D) of sum_B |q cap B|^2 / s_j, per level.

    Uses sum_q |q cap B|^2 = sum_{i,k in B} (min(i,k)+1)(D - max(i,k)): the diagonal i = k gives
    sum_k (k+1)(D-k), and a block [t, t+m) adds twice sum_{0<=p<q<m} (t+p+1)(D-t-q), a polynomial
    in t summed over the blocks in closed form. O(1) per level, in exact integers (it was O(D) per
    level in floats: 0.5 s at D = 2^20 when choosing a branching).
    """
    D = domain_size
    layout = TreeLayout(domain_size=D, branching=max(fanouts), fanouts=fanouts)
    n_ranges = Fraction(D * (D + 1), 2)
    diag = (D + 1) * D * (D + 1) // 2 - D * (D + 1) * (2 * D + 1) // 6  # sum_{j=1..D} j (D + 1 - j)

    def powers(m: int) -> tuple[int, int, int]:  # sums of q, q^2, q^3 over q = 0..m-1
        s1 = m * (m - 1) // 2
        return s1, (m - 1) * m * (2 * m - 1) // 6, s1 * s1

    def pairs(sum_a: int, sum_b: int, sum_ab: int, blocks: int, m: int) -> Fraction:
        """sum over blocks of sum_{p<q<m} (A+p)(B-q) = (AB - B/2) S1 + (B/2 - A + 1/2) S2 - S3/2,
        given the blocks' sums of A = t + 1, B = D - t and A B."""
        s1, s2, s3 = powers(m)
        return (Fraction(2 * sum_ab - sum_b, 2) * s1 + Fraction(sum_b - 2 * sum_a + blocks, 2) * s2
                - Fraction(blocks * s3, 2))

    out = []
    for s in layout.block_sizes:
        nb, rest = divmod(D, s)  # nb full blocks at t = c s, then one block of `rest` leaves
        c1, c2 = nb * (nb - 1) // 2, (nb - 1) * nb * (2 * nb - 1) // 6
        sum_a, sum_b = s * c1 + nb, nb * D - s * c1
        sum_ab = D * s * c1 + nb * D - s * s * c2 - s * c1  # sum_c (D - c s)(c s + 1)
        total = diag + 2 * pairs(sum_a, sum_b, sum_ab, nb, s)
        if rest:
            t = nb * s
            total += 2 * pairs(t + 1, D - t, (t + 1) * (D - t), 1, rest)
        out.append(float(total / s / n_ranges))
    return tuple(out)


@lru_cache(maxsize=64)
def mean_prefix_block_sums(domain_size: int, fanouts: tuple[int, ...]) -> tuple[float, ...]:
    """abar_j: the average over the D prefixes [0, x] of sum_B |q cap B|^2 / s_j, per level.

    With n = x + 1 leaves and r = n mod s, a prefix covers n - r leaves in full blocks (s each, so
    n - r in all) and one partial block of r leaves: a_j = n - r + r^2 / s. Summed over
    n = 1..D in exact integers (the residues run through whole cycles 0..s-1 and one partial cycle).
    """
    D = domain_size
    layout = TreeLayout(domain_size=D, branching=max(fanouts), fanouts=fanouts)
    out = []
    for s in layout.block_sizes:
        cycles, rest = divmod(D + 1, s)  # n = 0..D: `cycles` full residue cycles, then 0..rest-1
        sum_r = cycles * (s * (s - 1) // 2) + rest * (rest - 1) // 2
        sum_r2 = cycles * ((s - 1) * s * (2 * s - 1) // 6) + (rest - 1) * rest * (2 * rest - 1) // 6
        total = Fraction(D * (D + 1) // 2 - sum_r) + Fraction(sum_r2, s)
        out.append(float(total / D))
    return tuple(out)


def _block_sums(domain_size: int, fanouts: tuple[int, ...], workload: str) -> np.ndarray:
    if workload == "prefix":
        return np.asarray(mean_prefix_block_sums(domain_size, fanouts))
    if workload == GRID_WORKLOAD:
        depth = len(fanouts)
        if set(fanouts) != {4} or domain_size != 4**depth:
            raise ValueError("the all-rectangles workload needs a 4-ary tree over 4^k leaves")
        return np.asarray(mean_block_sums(2**depth, (2,) * depth)) ** 2
    return np.asarray(mean_block_sums(domain_size, fanouts))


def _information(weights: np.ndarray, noise: NoiseKind) -> np.ndarray:
    """1/sigma^2 per level up to a common factor (continuous approximation of the noise)."""
    if noise == "laplace":
        return weights**2  # sigma^2 = 2 (Delta / (eps w))^2
    return weights  # sigma^2 = Delta^2 / (2 rho w)


def average_range_variance(layout: TreeLayout, level_var: ArrayLike) -> float:
    """Exact average variance of the GLS estimate over all ranges of the real domain."""
    return average_workload_variance(layout, level_var, "all_ranges")


def average_prefix_variance(layout: TreeLayout, level_var: ArrayLike) -> float:
    """Exact average variance of the GLS estimate over the D prefixes [0, x] of the real domain."""
    return average_workload_variance(layout, level_var, "prefix")


def average_workload_variance(layout: TreeLayout, level_var: ArrayLike, workload: str) -> float:
    """Exact average variance of the GLS estimate over a workload's queries (:data:`WORKLOADS`)."""
    abar = _block_sums(layout.domain_size, layout.fanouts, canonical_levels(workload))
    s = np.asarray(layout.block_sizes, dtype=np.float64)
    v = np.asarray(level_var, dtype=np.float64)
    with np.errstate(divide="ignore"):
        info = np.where(np.isfinite(v), s / v, 0.0)
    lam = np.cumsum(info[::-1])[::-1]
    c = np.diff(abar, prepend=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.where(np.isinf(lam), 0.0, c / lam).sum())


def _objective(layout: TreeLayout, measurable: np.ndarray, noise: NoiseKind, root_exact: bool,  # type: ignore[no-untyped-def]
               workload: str):
    """The workload's average variance (up to a constant factor) and its gradient in the free weights."""
    abar = _block_sums(layout.domain_size, layout.fanouts, workload)
    c = np.diff(abar, prepend=0.0)
    if root_exact:
        c[0] = 0.0  # Lambda_0 is infinite: the root term vanishes
    s = np.asarray(layout.block_sizes, dtype=np.float64)

    def f(w_free: np.ndarray) -> tuple[float, np.ndarray]:
        w = np.zeros(len(s))
        w[measurable] = w_free
        info = s * _information(w, noise)
        lam = np.cumsum(info[::-1])[::-1]
        val = float((c / lam).sum())
        # d val / d w_l = -sum_{j <= l} c_j / lam_j^2 * s_l * d info_l/d w_l
        g_lam = np.cumsum(c / lam**2)  # sum over j <= l
        dinfo = 2.0 * w if noise == "laplace" else np.ones_like(w)
        grad = -g_lam * s * dinfo
        return val, grad[measurable]

    return f


@validate_params({"strategy": [Options(LEVEL_OPTIONS + (GRID_WORKLOAD,))], "noise": [Options(("laplace", "gaussian"))]})
def level_weights(
    layout: TreeLayout,
    *,
    strategy: str,
    noise: NoiseKind,
    root_exact: bool,
) -> np.ndarray:
    """Budget share of each level (root first); 0 means the level is not measured.

    Under add/remove neighbors the uniform rule leaves the root out (its budget is better spent
    on the other levels, DESIGN section 4); under replace neighbors the root is the public total
    and is never noised. A workload (``"all_ranges"``/``"optimal"``, ``"prefix"``) may measure the
    root if that lowers the workload's average variance. The optimisation sees only public
    quantities: the domain size, the fan-outs, the noise family and ``root_exact``.
    """
    L = layout.depth
    w = np.zeros(L + 1)
    if strategy == "uniform":
        w[1:] = 1.0 / L
        return w
    measurable = np.ones(L + 1, dtype=bool)
    measurable[0] = not root_exact
    return np.asarray(
        _optimal_weights_cached(layout.domain_size, layout.fanouts, noise, tuple(measurable.tolist()), root_exact,
                                _workload(strategy))
    )


@lru_cache(maxsize=64)
def _optimal_weights_cached(
    domain_size: int, fanouts: tuple[int, ...], noise: NoiseKind, measurable: tuple[bool, ...], root_exact: bool,
    workload: str = "all_ranges",
) -> tuple[float, ...]:
    from scipy.optimize import minimize

    layout = TreeLayout(domain_size=domain_size, branching=max(fanouts), fanouts=fanouts)
    m = np.asarray(measurable)
    k = int(m.sum())
    f = _objective(layout, m, noise, root_exact, workload)
    lower = np.full(k, 0.0)
    lower[-1] = 1e-3  # the leaves must be measured
    bounds = list(zip(lower, np.ones(k)))
    constraint = {"type": "eq", "fun": lambda x: x.sum() - 1.0, "jac": lambda x: np.ones_like(x)}
    # The Laplace problem is not convex (information grows as w^2): deterministic multi-start
    # from uniform, power-law profiles over the block sizes, and every "one level + leaves" split.
    s_free = np.asarray(layout.block_sizes, dtype=np.float64)[m]
    starts = [np.full(k, 1.0 / k)]
    starts += [s_free**g / (s_free**g).sum() for g in (-0.5, -0.25, 0.25, 0.5)]
    for i in range(k - 1):
        x = np.full(k, 0.02 / k)
        x[i] += 0.5
        x[-1] += 0.5
        starts.append(x / x.sum())
    if measurable[0] and len(measurable) > 2:
        # the problem with the root left out is a face of this one: solve it and start from it
        # (a local search with the root allowed can miss it: measured 161.3 vs 157.5 at b = 4)
        no_root = _optimal_weights_cached(domain_size, fanouts, noise, (False,) + tuple(measurable[1:]), root_exact,
                                          workload)
        starts.append(np.asarray(no_root)[m])
        starts.append(np.asarray(no_root)[m] * 0.98 + 0.02 / k)
    best_x, best_v = starts[0], f(starts[0])[0]
    for x0 in starts:
        res = minimize(
            f,
            x0,
            jac=True,
            method="SLSQP",
            bounds=bounds,
            constraints=[constraint],
            options={"maxiter": 500, "ftol": 1e-13},
        )
        x = np.clip(res.x, 0.0, None)
        x[x < MIN_LEVEL_WEIGHT] = 0.0
        x = x / x.sum()
        v = f(x)[0]
        if np.isfinite(v) and v < best_v:
            best_x, best_v = x, v
    if workload == "prefix":
        # the prefix optimum measures a few well-spaced levels (blocks of 256, 16, 1 at
        # D = 1024): local search over supports from every evenly spaced set and the best above
        # (the all-range split keeps its multi-start, so "optimal" files re-plan to the same noise)
        supports = strided_supports(k) + [tuple(int(i) for i in np.flatnonzero(best_x > 0))]
        x = search_supports(f, k, supports)
        if f(x)[0] < best_v:
            best_x = x
    w = np.zeros(len(m))
    w[m] = best_x
    return tuple(w.tolist())


def relative_level_variances(weights: np.ndarray, noise: NoiseKind) -> np.ndarray:
    """Level noise variances up to a common factor, inf for unmeasured levels."""
    with np.errstate(divide="ignore"):
        return np.where(weights > 0, 1.0 / _information(weights, noise), np.inf)


@lru_cache(maxsize=64)
def choose_branching(domain_size: int, noise: NoiseKind, strategy: str, root_exact: bool) -> int:
    """The branching factor among ``BRANCHING_CANDIDATES`` (``PREFIX_BRANCHING_CANDIDATES`` for
    ``"prefix"``) with the lowest average variance over the strategy's workload (all ranges for
    ``"uniform"`` and ``"all_ranges"``, prefixes for ``"prefix"``).

    Data-independent (depends on D and the settings only). Candidates larger than D are skipped.
    """
    best_b, best_v = 16, np.inf
    candidates = PREFIX_BRANCHING_CANDIDATES if _workload(strategy) == "prefix" else BRANCHING_CANDIDATES
    for b in candidates:
        if b > max(domain_size, 2):
            break
        layout = build_layout(domain_size, b)
        w = level_weights(layout, strategy=strategy, noise=noise, root_exact=root_exact)
        lv = relative_level_variances(w, noise)
        if root_exact:
            lv[0] = 0.0
        v = average_workload_variance(layout, lv, _workload(strategy))
        if v < best_v:
            best_b, best_v = b, v
    return best_b
