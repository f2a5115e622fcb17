"""Which mechanism releases a CDF best: the prefix-tuned range tree or the factorisation.

``levels="factorization"`` always uses the square-root factorisation
(:mod:`dptree.rangetree.factorization`). ``levels="cdf"`` compares, for the public domain size,
neighbour relation, contribution bound and budget, the exact average variance of the D prefixes of
the two releases the call could make: the Gaussian range tree with ``levels="prefix"`` (its
branching chosen for prefixes; Honaker 2015 least squares, conditioned on the empty padding) and
the factorisation (Henzinger, Upadhyay & Upadhyay 2023), and plans the lower one (ties: the tree).
Only public quantities enter, so the choice spends nothing. Laplace noise has no factorisation:
``"cdf"`` then plans the tree. Where each wins: docs/notes/factorized_cdf.md.

Why a value of ``levels=``: ``levels`` already names how a release is tuned to the prefix
workload (``"prefix"``); the factorisation is another strategy for that same workload, with no
branching and no level split, so it takes the same place rather than a second option that could
contradict it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dptree.rangetree.factorization import FactorizationPlan, unit_average_prefix_variance
from dptree.rangetree.factorized_release import FactorizedCDFPlan, plan_factorized_cdf
from dptree.rangetree.release import RangeTreePlan, plan_range_tree

__all__ = ["FACTORIZATION_LEVELS", "choose_cdf_plan", "tree_average_prefix_variance",
           "factorized_average_prefix_variance"]

#: the values of ``levels=`` that may release through the factorisation
FACTORIZATION_LEVELS = ("factorization", "cdf")


def tree_average_prefix_variance(plan: RangeTreePlan) -> float:
    """The exact average variance of a range tree's D prefix counts [lower, x] (its ``stderr``)."""
    dom = plan.domain
    points = dom.values_at(np.arange(dom.size))
    return float(np.mean(np.asarray(plan.expected_error(dom.lower, points)) ** 2))


def factorized_average_prefix_variance(plan: FactorizationPlan) -> float:
    """The exact average variance of the factorisation's D prefix counts."""
    return unit_average_prefix_variance(plan.domain.size) * plan.unit_variance


def choose_cdf_plan(levels: str, *, lower: Any, upper: Any, epsilon: float | None, delta: float,
                    rho: float | None, width: Any, noise: str, neighbors: str,
                    max_contributions: int) -> FactorizedCDFPlan | RangeTreePlan:
    """The plan ``range_tree(levels=levels)`` releases (module docstring); public values only."""
    common = dict(lower=lower, upper=upper, epsilon=epsilon, delta=delta, rho=rho, width=width, noise=noise,
                  neighbors=neighbors, max_contributions=max_contributions)
    if levels == "cdf" and noise != "gaussian":
        return plan_range_tree(levels="prefix", **common)
    fact = plan_factorized_cdf(**common)
    if levels == "factorization":
        return fact
    tree = plan_range_tree(levels="prefix", **common)
    return fact if factorized_average_prefix_variance(fact) < tree_average_prefix_variance(tree) else tree
