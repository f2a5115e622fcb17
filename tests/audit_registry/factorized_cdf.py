"""Audit registration of the factorised CDF (``range_tree(..., noise="gaussian",
levels="factorization")``, :mod:`dptree.rangetree.factorization`): 4 buckets, audited on the
released prefix counts; the neighbouring histograms differ in one record in the first bucket
(the column of C~int with the largest norm: the exact worst case) or in the last."""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from dptree.testing.registry import MechanismSpec, NeighborPair, register

#: the audited histogram over the buckets 0..3
BASE = [1, 0, 2, 1]


def post_matrix(plan: Any) -> np.ndarray:
    """B / 2^p as a dense matrix (lower-triangular Toeplitz of the plan's post-processing coefficients)."""
    from dptree.stream import toeplitz

    D = plan.domain.size
    b = toeplitz.post_coefficients(D, plan.bits)
    i, j = np.indices((D, D))
    return np.where(i >= j, np.asarray(b)[np.clip(i - j, 0, D - 1)], 0.0) / 2.0**plan.bits


def factorized_batch(plan: Any, counts: Any, n: int, seed: int) -> np.ndarray:
    """``n`` independent releases of ``plan`` on the histogram ``counts`` from the integer ``seed``:
    the library's lattice query and measurement core on n copies at once
    (:meth:`~dptree.rangetree.factorization.FactorizationPlan.measurement_copies`: one sampler call;
    n = 1 equals ``plan.release(counts, rng=seed)``), and the post-processing B / 2^p. Shape (n, D)."""
    y = plan.measurement_copies(np.asarray(counts, dtype=np.int64), n, seed)
    return np.asarray(y, dtype=np.float64) @ post_matrix(plan).T


def projection_statistic(plan: Any, c0: Any, c1: Any) -> Any:
    """The likelihood-ratio direction Delta^T Sigma^-1 y of the claimed Gaussian noise of the
    prefixes (Sigma = B B^T Var(w) / 4^p): public plan and the two histograms only."""
    B = post_matrix(plan)
    sigma = B @ B.T * (plan.unit_variance * 4.0**plan.bits)  # Var(w), the noise of one lattice count
    delta = np.cumsum(np.asarray(c1, dtype=np.float64) - np.asarray(c0, dtype=np.float64))
    direction = np.linalg.solve(sigma, delta)
    return lambda y: np.asarray(y, dtype=np.float64) @ direction


def factorized_spec(name: str, *, plan: Any, epsilon: float, delta: float, claimed: Any = None) -> MechanismSpec:
    """A spec auditing ``plan`` on :data:`BASE` against one record added to the first or the last
    bucket; the statistic uses the ``claimed`` plan's noise (default: ``plan``)."""
    claim = claimed or plan

    def worst_cases() -> Iterator[NeighborPair]:
        for label, where in (("one record added to the first bucket", 0), ("one record added to the last bucket", -1)):
            d1 = list(BASE)
            d1[where] += 1
            yield NeighborPair(label, list(BASE), d1, statistic=projection_statistic(claim, BASE, d1))

    def release(counts: Any, seed: int) -> Any:
        return plan.release(np.asarray(counts, dtype=np.int64), rng=seed)

    return MechanismSpec(name=name, covers=("range_tree", "plan_range_tree"), neighbors="add_remove",
                         epsilon=epsilon, delta=delta,
                         sample=lambda counts, n, seed: factorized_batch(plan, counts, n, seed),
                         worst_cases=worst_cases, release=release, extra={"plan": plan},
                         description=f"factorised CDF over {plan.domain.size} buckets, discrete Gaussian noise")


def register_factorized_cdf() -> None:
    """The factorised CDF over 4 buckets at (epsilon, delta) = (1, 1e-6)."""
    from dptree.rangetree.factorized_release import plan_factorized_cdf

    plan = plan_factorized_cdf(lower=0, upper=3, epsilon=1.0, delta=1e-6)
    register(factorized_spec("range_tree/factorization/gaussian/add_remove", plan=plan, epsilon=1.0, delta=1e-6))
