"""Audit registrations of the range tree (``range_tree``, ``plan_range_tree``): batched releases,
the spec builder and the DESIGN section 3 worst cases."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Iterator, Sequence

import numpy as np

from dptree.testing.registry import MechanismSpec, NeighborPair, register
from dptree.testing.statistics import gaussian_llr, laplace_llr


def range_tree_leaf_histogram(plan: Any, values: Any) -> np.ndarray:
    """The leaf histogram ``range_tree`` computes from ``values`` (same validation and clamping)."""
    from dptree.data.domain import coerce_values

    vals = coerce_values(values, plan.domain)
    leaves = plan.domain.to_leaves(vals)
    return np.bincount(leaves, minlength=plan.layout.padded_size)


def range_tree_noised_counts(plan: Any, hist: np.ndarray) -> np.ndarray:
    """True counts of the nodes a release noises (noised levels, root first, concatenated)."""
    levels = plan.layout.level_counts(np.asarray(hist, dtype=np.int64))
    return np.concatenate([c for c, p in zip(levels, plan.noise_parameters) if p is not None])


def range_tree_batch(plan: Any, hist: np.ndarray, n: int, seed: int) -> np.ndarray:
    """``n`` independent releases of ``plan`` on ``hist`` in one call of ``RangeTreePlan.release``.

    The ``n`` copies of the tree hang under a virtual super-root (not measured; exact under
    replace neighbors, like the root), so one call of the library's own release code draws the
    noise of all of them from ``rng=seed``. Returns the noisy counts of the noised levels, shape
    (n, nodes). With ``n = 1`` the draws happen in the same order as ``plan.release(hist, seed)``
    and the output is identical (tested).
    """
    tiled = np.tile(np.asarray(hist, dtype=np.int64), n)
    rel = forest_plan(plan, n).release(tiled, rng=seed)
    return forest_copies(plan, rel.measurements, n)


def forest_plan(plan: Any, n: int) -> Any:
    """``plan`` over ``n`` copies of its tree under a virtual super-root (not measured; exact under
    replace neighbors, like the root): one release of it draws the noise of every copy."""
    from dptree.rangetree.layout import TreeLayout

    lay = plan.layout
    forest = TreeLayout(
        domain_size=n * lay.padded_size, branching=max(lay.branching, n), fanouts=(n,) + tuple(lay.fanouts)
    )
    var = np.asarray(plan.level_variance, dtype=np.float64).copy()
    if plan.root_exact:
        var[0] = np.inf  # the copies' roots are not measured; the super-root is exact
        top = 0.0
    else:
        top = np.inf
    return dataclasses.replace(
        plan,
        layout=forest,
        noise_parameters=[None] + list(plan.noise_parameters),
        level_variance=np.concatenate([[top], var]),
        weights=np.concatenate([[0.0], np.asarray(plan.weights, dtype=np.float64)]),
    )


def forest_copies(plan: Any, measurements: Sequence[Any], n: int) -> np.ndarray:
    """The noisy values of the noised levels of each copy of a :func:`forest_plan` release, shape
    (n, nodes)."""
    cols = []
    for j, p in enumerate(plan.noise_parameters):
        if p is None:
            continue
        m = measurements[j + 1]
        assert m is not None
        cols.append(m.reshape(n, plan.layout.level_sizes[j]))
    return np.concatenate(cols, axis=1)


def _claimed_level_parameters(plan: Any) -> dict[int, float]:
    """Noise parameter of each noised level as stated in the privacy statement (the claim)."""
    key = "laplace_scale" if plan.noise == "laplace" else "gaussian_sigma2"
    return {int(lv["level"]): float(lv[key]) for lv in plan.statement["levels"]}


def range_tree_spec(
    name: str,
    *,
    plan: Any,
    epsilon: float,
    delta: float,
    pairs: Sequence[tuple[str, Any, Any]],
    neighbors: str | None = None,
    covers: tuple[str, ...] = ("range_tree", "plan_range_tree"),
    description: str = "",
) -> MechanismSpec:
    """A spec auditing the range-tree release made by ``plan`` (a :class:`RangeTreePlan`).

    ``pairs``: (label, values0, values1) of neighboring datasets, given as raw values (they go
    through the same validation, clamping and bucketing as :func:`dptree.range_tree`). The
    statistic of each pair is the log-likelihood ratio of the *claimed* noise (the scales in the
    plan's privacy statement) on the nodes whose counts differ.
    """

    def sample(values: Any, n: int, seed: int) -> np.ndarray:
        return range_tree_batch(plan, range_tree_leaf_histogram(plan, values), n, seed)

    def worst_cases() -> Iterator[NeighborPair]:
        claimed = _claimed_level_parameters(plan)
        per_node = np.concatenate(
            [
                np.full(size, claimed.get(j, np.nan))
                for j, (size, p) in enumerate(zip(plan.layout.level_sizes, plan.noise_parameters))
                if p is not None
            ]
        )
        for label, v0, v1 in pairs:
            c0 = range_tree_noised_counts(plan, range_tree_leaf_histogram(plan, v0))
            c1 = range_tree_noised_counts(plan, range_tree_leaf_histogram(plan, v1))
            llr = laplace_llr if plan.noise == "laplace" else gaussian_llr
            yield NeighborPair(label, v0, v1, statistic=llr(c0, c1, per_node))

    return MechanismSpec(
        name=name,
        covers=covers,
        neighbors=neighbors or plan.neighbors,
        epsilon=epsilon,
        delta=delta,
        sample=sample,
        worst_cases=worst_cases,
        description=description,
        extra={"plan": plan},
        release=lambda values, seed: plan.release(range_tree_leaf_histogram(plan, values), seed),
    )


def register_range_trees() -> None:
    """The range-tree configurations every test run audits (DESIGN section 3 worst cases).

    Small trees keep the audits fast: D = 6 leaves with b = 3 has fan-outs (3, 2), so the bottom
    fan-out differs from b, and 9 noised nodes (root not measured under the uniform rule).
    """
    from dptree.privacy.budget import zcdp_epsilon
    from dptree.rangetree.release import plan_range_tree

    base = [1, 2, 2, 4, 5, 5]  # records already present; the pairs differ by one person
    p = plan_range_tree(lower=0, upper=5, epsilon=1.0, branching=3)
    register(
        range_tree_spec(
            "range_tree/laplace/add_remove",
            plan=p,
            epsilon=1.0,
            delta=0.0,
            pairs=[
                ("add one record (changes every level)", base, base + [3]),
                ("add a record at the lower boundary leaf", base, base + [0]),
                ("add a record clamped into the upper boundary leaf", base, base + [10**9]),
            ],
            description="pure eps = 1, uniform levels",
        )
    )
    p = plan_range_tree(lower=0, upper=5, epsilon=1.0, branching=2, levels="optimal")
    register(
        range_tree_spec(
            "range_tree/laplace/add_remove/optimal_levels",
            plan=p,
            epsilon=1.0,
            delta=0.0,
            pairs=[
                ("add one record (changes every level)", base, base + [3]),
                ("empty dataset vs a record at the upper boundary leaf", [], [5]),
            ],
            description="pure eps = 1, per-level budgets from the closed form (unequal scales)",
        )
    )
    p = plan_range_tree(lower=0, upper=5, epsilon=1.0, branching=3, neighbors="replace")
    register(
        range_tree_spec(
            "range_tree/laplace/replace",
            plan=p,
            epsilon=1.0,
            delta=0.0,
            pairs=[
                ("replace: lowest leaf -> highest leaf", base + [0], base + [5]),
                ("replace: adjacent leaves in different subtrees", base + [1], base + [2]),
            ],
            description="pure eps = 1, n public (root exact)",
        )
    )
    p = plan_range_tree(lower=0, upper=5, epsilon=2.0, branching=3, max_contributions=3)
    register(
        range_tree_spec(
            "range_tree/laplace/user_k3",
            plan=p,
            epsilon=2.0,
            delta=0.0,
            neighbors="add_remove_user(k=3)",
            pairs=[
                ("user with 3 records in one leaf", base, base + [4, 4, 4]),
                ("user with 3 records in the boundary leaves", base, base + [0, 5, 5]),
            ],
            description="pure eps = 2, at most 3 records per person",
        )
    )
    p = plan_range_tree(lower=0.0, upper=1.0, width=0.25, epsilon=1.0, branching=2)
    register(
        range_tree_spec(
            "range_tree/laplace/float_domain",
            plan=p,
            epsilon=1.0,
            delta=0.0,
            pairs=[
                ("add a record at upper (closed last bucket)", [0.3, 0.5], [0.3, 0.5, 1.0]),
                ("add a record below lower (clamped)", [0.3, 0.5], [0.3, 0.5, -5.0]),
            ],
            description="pure eps = 1, float domain with 4 buckets",
        )
    )
    p = plan_range_tree(lower=0, upper=5, epsilon=1.0, delta=1e-6, branching=3, noise="gaussian")
    register(
        range_tree_spec(
            "range_tree/gaussian/add_remove",
            plan=p,
            epsilon=1.0,
            delta=1e-6,
            pairs=[
                ("add one record (changes every level)", base, base + [3]),
                ("add a record at the lower boundary leaf", base, base + [0]),
            ],
            description="(1, 1e-6)-DP by the exact discrete-Gaussian delta",
        )
    )
    p = plan_range_tree(lower=0, upper=5, rho=0.5, branching=3, noise="gaussian", neighbors="replace")
    register(
        range_tree_spec(
            "range_tree/gaussian/replace",
            plan=p,
            epsilon=zcdp_epsilon(0.5, 1e-6),
            delta=1e-6,
            pairs=[("replace: lowest leaf -> highest leaf", base + [0], base + [5])],
            description="rho = 0.5 zCDP, audited as the implied (eps, 1e-6)-DP",
        )
    )


# --------------------------------------------------------------------------- private bounds


def _log_cdf(x: np.ndarray, q: float) -> np.ndarray:
    """log P(X <= x) for the discrete Laplace P(x) ~ q^|x| (closed form, in logs)."""
    x = np.asarray(x, dtype=np.float64)
    lq, l1q = math.log(q), math.log1p(q)
    neg = -x * lq - l1q  # x < 0: q^-x / (1 + q)
    pos = np.log1p(-np.exp((np.maximum(x, 0) + 1) * lq - l1q))  # x >= 0: 1 - q^(x+1) / (1 + q)
    return np.where(x < 0, neg, pos)


def above_threshold_law(answers: np.ndarray, threshold: int, s_rho: Any, s_nu: Any) -> np.ndarray:
    """The exact law of AboveThreshold on fixed integer answers, in logs: log P(halt at k) for
    k = 0..m-1, then log P(no halt); rho ~ DLap(s_rho) once, nu_i ~ DLap(s_nu), top at the first
    a_i + nu_i >= threshold + rho (rho summed over |rho| <= 250 s_rho: the rest is < e^-250)."""
    from scipy.special import logsumexp

    q_rho, q_nu = math.exp(-1 / float(s_rho)), math.exp(-1 / float(s_nu))
    R = int(250 * float(s_rho)) + 10
    r = np.arange(-R, R + 1)
    log_p_rho = np.abs(r) * math.log(q_rho) + math.log((1 - q_rho) / (1 + q_rho))
    a = np.asarray(answers, dtype=np.int64)
    gap = threshold + r[:, None] - a[None, :]  # top at i  <=>  nu_i >= gap
    log_below = _log_cdf(gap - 1, q_nu)  # P(nu < gap)
    log_top = _log_cdf(-gap, q_nu)  # P(nu >= gap) = P(nu <= -gap)
    before = np.concatenate([np.zeros((r.size, 1)), np.cumsum(log_below, axis=1)], axis=1)
    terms = np.concatenate([before[:, :-1] + log_top, before[:, -1:]], axis=1) + log_p_rho[:, None]
    return np.asarray(logsumexp(terms, axis=0))


def bounds_search_laws(search: Any, values: Any, *, scales: Any = None) -> list[np.ndarray]:
    """The exact log-law of each end (low, high) of ``search`` on integer ``values``."""
    vals, counts = np.unique(np.asarray(values, dtype=np.int64), return_counts=True)
    s_rho, s_nu = scales or search.scales
    return [above_threshold_law(search.answers("integer", vals, counts, side)[1], -search.rank, s_rho, s_nu)
            for side in ("low", "high")]


def private_bounds_sample(search: Any) -> Any:
    """A batched ``sample`` of the bounds search (``range_tree(bounds="private")``'s first step):
    ``n`` independent runs of both ends through the library's :meth:`BoundsSearch.answers` and
    :meth:`BoundsSearch.halt`; shape (n, 2): the low and the high end's halting index (no halt:
    the number of candidates)."""
    from dptree.testing.audit import derive_seed

    def sample(values: Any, n: int, seed: int) -> np.ndarray:
        vals, counts = np.unique(np.asarray(values, dtype=np.int64), return_counts=True)
        out = []
        for side in ("low", "high"):
            _, answers = search.answers("integer", vals, counts, side)
            idx = search.halt(answers, derive_seed(seed, side), runs=n)
            out.append(np.where(idx < 0, answers.size, idx))
        return np.stack(out, axis=1)

    return sample


def private_bounds_spec(name: str, *, search: Any, claimed: Any, pairs: Sequence[tuple[str, Any, Any]],
                        description: str = "") -> MechanismSpec:
    """A spec auditing the bounds search ``search`` against the ``claimed`` search (a
    :class:`BoundsSearch`: its epsilon, the bounds budget, is the claim; the tree over the found
    bounds is audited by the specs above). The statistic of a pair is the log-likelihood ratio of
    the claimed search's exact law (both ends). ``release`` is the whole
    ``range_tree(bounds="private")`` release (the boundary test)."""
    import dptree

    share = 0.5
    k = search.max_contributions
    relation = f"add_remove_user(k={k})" if k > 1 else search.neighbors

    def release(values: Any, seed: int) -> Any:  # a typed array: bounds='private' refuses a list (no type)
        values = np.asarray(values, dtype=np.int64)
        return dptree.range_tree(values, bounds="private", bounds_share=share, epsilon=claimed.epsilon / share,
                                 neighbors=search.neighbors, max_contributions=k, rng=seed)

    def worst_cases() -> Iterator[NeighborPair]:
        for label, d0, d1 in pairs:
            l0, l1 = bounds_search_laws(claimed, d0), bounds_search_laws(claimed, d1)
            llr = [a - b for a, b in zip(l0, l1)]

            def stat(y: np.ndarray, llr: list[np.ndarray] = llr) -> np.ndarray:
                y = np.asarray(y, dtype=np.int64)
                return llr[0][y[:, 0]] + llr[1][y[:, 1]]

            yield NeighborPair(label, d0, d1, statistic=stat)

    return MechanismSpec(
        name=name,
        covers=("range_tree",),
        neighbors=relation,
        epsilon=float(claimed.epsilon),
        delta=0.0,
        sample=private_bounds_sample(search),
        worst_cases=worst_cases,
        description=description,
        extra={"bounds_search": search},
        release=release,
    )


def register_private_bounds() -> None:
    """The bounds search of ``range_tree(bounds="private")`` at a bounds budget of 1: pairs near
    the worst cases of the exact-law brute force (tests/unit/rangetree/test_private_bounds.py):
    a record added beyond the high end's threshold rank, and one moved across 0 (replace)."""
    from dptree.rangetree.bounds import BoundsSearch

    add_remove = BoundsSearch(epsilon=1.0)
    register(private_bounds_spec(
        "range_tree/private_bounds/add_remove",
        search=add_remove,
        claimed=add_remove,
        pairs=[("add a record far above a small mass", [33], [33, 33]),
               ("add a record below 0", [-5, 3, 3], [-5, -5, 3, 3])],
        description="Durfee's doubling search, eps = 1 per end (parallel: the ends read disjoint records)",
    ))
    replace = BoundsSearch(epsilon=1.0, neighbors="replace")
    register(private_bounds_spec(
        "range_tree/private_bounds/replace",
        search=replace,
        claimed=replace,
        pairs=[("move a record from below 0 to far above", [-9, 33], [33, 33]),
               ("move a record from below 0 onto a mass of 8 (the high end's rank)", [-9] + [33] * 8, [33] * 9)],
        description="Durfee's doubling search, eps / 2 per end (a replaced record can reach both ends)",
    ))
