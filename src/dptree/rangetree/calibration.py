"""The noise of each level of a range tree: sensitivities, the budget and its per-level parameters.

Privacy (DESIGN section 3). With k = ``max_contributions`` records per person:

===========================  =====================  ======================
neighbors                    L1 per level            squared L2 per level
===========================  =====================  ======================
``add_remove`` (default)      k                       k^2
``replace``                   2k (root: 0, public n)  2k^2 (root: 0)
===========================  =====================  ======================

One record changes one node per level (its ancestors; Smith & Ullman 2021, Claim 2.2). Level l gets a share
w_l of the budget: Laplace noise with scale (L1 sensitivity) / (epsilon w_l) gives epsilon w_l-DP
per level, and discrete Gaussian noise with sigma^2 = (L2 sensitivity)^2 / (2 rho w_l) gives
rho w_l-zCDP per level; basic composition over levels gives epsilon-DP, resp. rho-zCDP (and
(epsilon, delta)-DP through CKS 2020 Cor. 13 when the budget is given as (epsilon, delta)).
With one record per person and equal shares, an (epsilon, delta) budget is instead met exactly
by the discrete-Gaussian privacy-loss convolution (CKS 2020 Thm 7 over all unit shifts). Every
parameter is rounded up to the dyadic value the exact samplers use (:mod:`dptree.noise`).
Everything here depends only on public parameters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from dptree import noise as _noise
from dptree.errors import InvalidParameterError
from dptree.privacy.budget import (
    RANGE_TREE_BUDGET_RANGE,
    Budget,
    check_delta,
    check_epsilon,
    check_release_budget,
    check_rho,
    discrete_gaussian_delta,
    discrete_gaussian_exact_feasible,
    discrete_gaussian_sigma2_for,
    zcdp_epsilon,
)

__all__ = [
    "NoiseKind",
    "LevelNoise",
    "level_sensitivities",
    "resolve_budget",
    "check_budget_range",
    "exact_shares",
    "calibrate_laplace",
    "calibrate_gaussian",
    "check_noise_range",
    "LAPLACE_SCALE_RANGE",
    "GAUSSIAN_SIGMA2_RANGE",
]

NoiseKind = Literal["laplace", "gaussian"]

# Noise parameters outside these ranges make every answer meaningless (or exact to 1e-400) and
# push integers past int64: such budgets are refused with an explanation.
LAPLACE_SCALE_RANGE = (1e-9, 1e12)
GAUSSIAN_SIGMA2_RANGE = (1e-18, 1e24)


def level_sensitivities(neighbors: str, max_contributions: int, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """(L1, squared L2) sensitivity of each level's vector of counts, root first (the table above)."""
    k = max_contributions
    l1 = np.full(depth + 1, float(k))
    l2sq = np.full(depth + 1, float(k * k))
    if neighbors == "replace":
        l1[:] = 2.0 * k
        l2sq[:] = 2.0 * k * k
        l1[0] = 0.0
        l2sq[0] = 0.0
    return l1, l2sq


def resolve_budget(noise: str, epsilon: object, delta: object, rho: object) -> Budget:
    """The budget the caller means: pure epsilon (Laplace), rho-zCDP or (epsilon, delta) (Gaussian).
    The combinations of the three parameters are checked here; their ranges by the signature."""
    if noise == "laplace":
        if rho is not None:
            raise InvalidParameterError("rho is a zCDP budget for noise='gaussian'; Laplace noise takes epsilon")
        if epsilon is None:
            raise InvalidParameterError("epsilon is required, e.g. epsilon=1.0")
        if check_delta(delta) != 0.0:
            raise InvalidParameterError(
                "Laplace noise is pure epsilon-DP and spends no delta; pass delta=0 or use noise='gaussian'",
                parameter="delta"
            )
        return Budget.pure(check_epsilon(epsilon))
    if rho is not None:
        if epsilon is not None or (delta not in (None, 0, 0.0)):
            raise InvalidParameterError("give the Gaussian budget either as rho or as (epsilon, delta), not both")
        return Budget.zcdp(check_rho(rho))
    if epsilon is None:
        raise InvalidParameterError("noise='gaussian' needs rho, or epsilon together with delta > 0")
    return Budget.approx(check_epsilon(epsilon), check_delta(delta, required=True))


def check_budget_range(epsilon: object, rho: object) -> None:
    """Refuse a budget too extreme to compute with (before any exact arithmetic): the one range
    check of every mechanism, :func:`dptree.privacy.budget.check_release_budget`."""
    for name, v in (("epsilon", epsilon), ("rho", rho)):
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 and (isinstance(v, int) or math.isfinite(v)):
            check_release_budget(v, name, RANGE_TREE_BUDGET_RANGE)  # an int past the doubles is named there


def exact_shares(weights: np.ndarray) -> list[Fraction]:
    """Budget shares as exact fractions that sum to exactly one (zero stays zero)."""
    fr = [Fraction(float(w)).limit_denominator(1 << 40) if w > 0 else Fraction(0) for w in weights]
    total = sum(fr, Fraction(0))
    return [f / total for f in fr]


@dataclass
class LevelNoise:
    """The noise of every level (root first): ``parameters[l]`` the exact discrete-Laplace scale or
    discrete-Gaussian sigma^2 (None: not noised), ``variances[l]`` its exact variance (0 for the
    exact root, inf for an unmeasured level), ``per_level`` and ``spent`` for the statement, and
    ``calibration`` (Gaussian noise: how sigma^2 was chosen)."""

    parameters: list[Fraction | None]
    variances: np.ndarray
    per_level: list[dict[str, Any]]
    spent: dict[str, Any]
    calibration: dict[str, Any] = field(default_factory=dict)

    @property
    def exact_gaussian(self) -> bool:
        """True when an (epsilon, delta) budget is met by the exact discrete-Gaussian accounting."""
        return "implied_rho" in self.calibration


def _skipped(j: int, shares: list[Fraction], root_exact: bool) -> bool:
    return (j == 0 and root_exact) or shares[j] == 0


def _unfilled(shares: list[Fraction], root_exact: bool) -> tuple[list[Fraction | None], np.ndarray, list[int]]:
    """The per-level noise parameters (None until set; a level :func:`_skipped` keeps None), the
    noise variances (0 for the exact root, inf for an unmeasured level, the others set by the
    caller) and the noised levels, in order."""
    levels = range(len(shares))
    variances = np.array([0.0 if (j == 0 and root_exact) else np.inf for j in levels])
    return [None] * len(shares), variances, [j for j in levels if not _skipped(j, shares, root_exact)]


def calibrate_laplace(budget: Budget, shares: list[Fraction], l1: np.ndarray, root_exact: bool) -> LevelNoise:
    """Scale L1_l / (epsilon w_l) on level l, rounded up: epsilon w_l-DP per level, epsilon-DP in all."""
    eps = Fraction(budget.epsilon)  # type: ignore[arg-type]
    spent = Fraction(0)
    params, variances, noised = _unfilled(shares, root_exact)
    per_level = []
    for j in noised:
        scale = _noise.laplace_scale_used(Fraction(int(l1[j])) / (eps * shares[j]))
        params[j] = scale
        variances[j] = _noise.discrete_laplace_variance(scale)
        eps_j = Fraction(int(l1[j])) / scale
        spent += eps_j
        per_level.append({"level": j, "epsilon": float(eps_j), "l1_sensitivity": float(l1[j]),
                          "laplace_scale": float(scale), "noise_variance": float(variances[j])})
    return LevelNoise(params, variances, per_level, {"epsilon": float(spent), "delta": 0.0})


def calibrate_gaussian(budget: Budget, shares: list[Fraction], l2sq: np.ndarray, root_exact: bool, *,
                       calibration: str, max_contributions: int) -> LevelNoise:
    """sigma^2 per level: the exact (epsilon, delta) calibration where it applies (see the module
    docstring), else L2_l^2 / (2 rho w_l) rounded up (rho-zCDP; rho = zcdp_rho_for(epsilon, delta))."""
    rho_total = Fraction(budget.as_rho())
    spent = Fraction(0)
    params, variances, noised = _unfilled(shares, root_exact)
    m_units = int(sum(int(l2sq[j]) for j in noised))
    exact = (
        budget.kind == "approx"
        and calibration == "exact"
        and max_contributions == 1
        and len({shares[j] for j in noised}) == 1
        and len({int(l2sq[j]) for j in noised}) == 1
        and discrete_gaussian_exact_feasible(float(budget.epsilon), float(budget.delta), m_units)  # type: ignore[arg-type]
    )
    exact_sigma2 = (
        discrete_gaussian_sigma2_for(float(budget.epsilon), float(budget.delta), m_units)  # type: ignore[arg-type]
        if exact
        else None
    )
    per_level = []
    for j in noised:
        if exact_sigma2 is not None:
            sigma2 = exact_sigma2
        else:
            sigma2 = _noise.gaussian_sigma2_used(Fraction(int(l2sq[j])) / (2 * rho_total * shares[j]))
        params[j] = sigma2
        variances[j] = _noise.discrete_gaussian_variance(sigma2)
        rho_j = Fraction(int(l2sq[j])) / (2 * sigma2)
        spent += rho_j
        per_level.append({"level": j, "rho": float(rho_j), "l2_sensitivity": math.sqrt(l2sq[j]),
                          "gaussian_sigma2": float(sigma2), "noise_variance": float(variances[j])})
    if exact_sigma2 is not None:
        # (epsilon, delta) by the exact discrete-Gaussian delta over all m unit shifts; the
        # noise is also sum(rho_j)-zCDP, but that is not what is claimed or charged.
        total: dict[str, Any] = {"epsilon": float(budget.epsilon), "delta": budget.delta}  # type: ignore[arg-type]
        how = {
            "method": "exact discrete Gaussian (epsilon, delta): delta(epsilon) of the m-fold "
            "privacy-loss convolution (CKS 2020 Thm 7 extended to m coordinates; "
            "dptree.privacy.budget.discrete_gaussian_delta)",
            "unit_shifts": m_units,
            "delta_at_epsilon": discrete_gaussian_delta(float(budget.epsilon), float(exact_sigma2), m_units),  # type: ignore[arg-type]
            "implied_rho": float(spent),
        }
    else:
        total = {"rho": float(spent)}
        if budget.kind == "approx":
            total["epsilon"] = zcdp_epsilon(float(spent), budget.delta)
            total["delta"] = budget.delta
        how = {
            "method": "zCDP: sigma^2 = L2^2 / (2 rho w_l)"
            + (", rho = zcdp_rho_for(epsilon, delta) (CKS 2020 Cor. 13)" if budget.kind == "approx" else "")
        }
    return LevelNoise(params, variances, per_level, total, how)


def check_noise_range(noise_kind: str, params: list[Fraction | None]) -> None:
    """Refuse per-level noise outside :data:`LAPLACE_SCALE_RANGE` / :data:`GAUSSIAN_SIGMA2_RANGE`."""
    lo, hi = LAPLACE_SCALE_RANGE if noise_kind == "laplace" else GAUSSIAN_SIGMA2_RANGE
    what = "Laplace scale" if noise_kind == "laplace" else "Gaussian variance"
    for p in params:
        if p is None:
            continue
        if p > hi:
            raise InvalidParameterError(
                f"the {what} per level would be {float(p):.3g} (> {hi:g}): every answer would be noise. "
                "Use a larger budget, a smaller max_contributions, or fewer levels (larger branching)."
            )
        if p < lo:
            raise InvalidParameterError(
                f"the {what} per level would be {float(p):.3g} (< {lo:g}): the budget is so large that the "
                "release is not meaningfully private; use a smaller epsilon/rho."
            )
