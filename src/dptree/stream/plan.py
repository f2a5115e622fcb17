"""The plan of a continual counter: everything decided from public parameters, before any count.

A counter releases, after each of the T steps of its public horizon, a noisy running total of the
counts appended so far. The whole horizon is one release: its noise is calibrated for all T
outputs at once, the privacy loss is stated (and charged to a ledger) when the counter is made,
and every output is post-processing of noise drawn once.

**Neighbours.** Add or remove one user's events: a user participates in at most
``max_participations`` = k steps (default 1: event level) and adds at most one event to each of
them (a step's count moves by at most 1 per user). The caller bounds both.

**Mechanisms.**

* ``"tree"`` (default for ``noise="laplace"``): the binary mechanism with Honaker's online least
  squares (:mod:`dptree.stream.tree`). Discrete Laplace of scale k L / epsilon on every block
  (L1 sensitivity k L): pure epsilon-DP (Canonne, Kamath & Steinke 2020, Prop. 7; Dwork et al.
  2010; Chan, Shi & Song 2011); or discrete Gaussian, sigma^2 = Delta_2^2 / (2 rho): rho-zCDP.
* ``"toeplitz"`` (default for ``noise="gaussian"``): the square-root factorisation on the lattice
  2^-p Z (:mod:`dptree.stream.toeplitz`): the discrete Gaussian mechanism on the integer vector
  q = C~int x (CKS 2020, Theorem 4), sigma_w^2 = Delta_q^2 / (2 rho), post-processed by
  B / 2^p: rho-zCDP (Henzinger, Upadhyay & Upadhyay 2023; Fichtenberger, Henzinger & Upadhyay 2023).

An (epsilon, delta) budget for Gaussian noise is converted to the largest rho that implies it
(CKS 2020, Cor. 13). Every noise parameter is rounded up to the samplers' dyadic value, so the
spend is at most the budget; an L2 sensitivity is replaced by a rational upper bound of its
square root (relative 1e-12) before calibration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Integral, Real
from typing import Any

import numpy as np

from dptree import noise as _noise
from dptree._validation import Interval, Options, validate_params
from dptree.errors import InvalidParameterError
from dptree.privacy.budget import RANGE_TREE_BUDGET_RANGE, Budget, check_release_budget
from dptree.privacy.loss import Gaussian, Laplace, PrivacyLoss
from dptree.privacy.statement import Neighbors, make_statement
from dptree.stream import toeplitz
from dptree.stream.tree import honaker_weights, levels_of, prefix_variance, tree_sensitivities

__all__ = ["StreamPlan", "plan_counter", "MECHANISMS", "MAX_HORIZON"]

MECHANISMS = ("tree", "toeplitz")
#: the longest horizon: the Toeplitz counter keeps O(T) coefficients and noise, and FFTs of up to 4T
MAX_HORIZON = 1 << 22


def _sqrt_upper(square: int) -> Fraction:
    """A rational >= sqrt(square), within a relative 2^-40 (exact for a perfect square)."""
    scaled = square << 80
    root = math.isqrt(scaled)
    return Fraction(root + (root * root != scaled), 1 << 40)


@dataclass(frozen=True)
class StreamPlan:
    """A counter's public parameters and its calibration."""

    horizon: int
    mechanism: str
    family: str
    participations: int
    budget: Budget
    parameter: Fraction  # discrete Laplace scale or discrete Gaussian sigma^2 (dyadic, as sampled)
    sensitivity: Fraction  # L1 (Laplace) or an upper bound of L2 (Gaussian) of the noised query
    statement: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def unit(self) -> Neighbors:
        return Neighbors("add_remove", self.participations)

    def privacy_loss(self) -> PrivacyLoss:
        """One measurement: every block of the tree, or the whole lattice query q, noised at once."""
        if self.family == "laplace":
            step: Any = Laplace(self.parameter, self.sensitivity, "every block of the tree")
        else:
            what = "every block of the tree" if self.mechanism == "tree" else "the lattice query q = C~int x"
            step = Gaussian(self.parameter, self.sensitivity, what)
        return PrivacyLoss(self.unit, (step,))

    @property
    def noise_variance(self) -> float:
        """The exact variance of one noise draw (a block, or one coordinate of w)."""
        if self.family == "laplace":
            return _noise.discrete_laplace_variance(self.parameter)
        return _noise.discrete_gaussian_variance(self.parameter)

    def stderrs(self, steps: int) -> np.ndarray:
        """The exact standard errors of the released totals of steps 1..``steps`` (public)."""
        t = np.arange(1, steps + 1)
        if self.mechanism == "tree":
            _, v = honaker_weights(levels_of(self.horizon), self.noise_variance)
            return np.sqrt(prefix_variance(t, v))
        bits = toeplitz.lattice_bits(self.horizon)
        return np.sqrt(toeplitz.cumulative_squares(self.horizon, bits)[:steps] * (self.noise_variance / 4.0**bits))

    def parameters(self) -> dict[str, Any]:
        """The public keywords that rebuild this plan (:func:`plan_counter`)."""
        b = self.budget
        return {"horizon": self.horizon, "noise": self.family, "mechanism": self.mechanism,
                "max_participations": self.participations, "epsilon": b.epsilon,
                "delta": b.delta if b.kind == "approx" else None, "rho": b.rho}


def _statement(plan: StreamPlan) -> dict[str, Any]:
    k, T = plan.participations, plan.horizon
    loss = plan.privacy_loss()
    b = plan.budget
    requested: dict[str, Any] = {"rho": b.as_rho()} if plan.family == "gaussian" else {"epsilon": b.epsilon}
    if b.kind == "approx":
        requested.update(epsilon=b.epsilon, delta=b.delta)
    if plan.family == "laplace":
        spent: dict[str, float] = {"epsilon": loss.epsilon(), "delta": 0.0}
        guarantee = "pure epsilon-DP"
        noise = {"family": "discrete laplace", "scale": str(plan.parameter), "l1_sensitivity": str(plan.sensitivity)}
    else:
        spent = {"rho": loss.rho()}
        guarantee = "rho-zCDP"
        noise = {"family": "discrete gaussian", "sigma2": str(plan.parameter), "l2_sensitivity": str(plan.sensitivity)}
    if plan.mechanism == "tree":
        what = (f"binary-tree counter over {T} steps, {levels_of(T)} levels, every block noised once "
                "(Dwork, Naor, Pitassi & Rothblum 2010; Chan, Shi & Song 2011); each prefix the online "
                "least-squares estimate from the completed blocks (Honaker 2015)")
    else:
        p = toeplitz.lattice_bits(T)
        what = (f"square-root Toeplitz counter over {T} steps (Henzinger, Upadhyay & Upadhyay 2023; "
                f"Fichtenberger, Henzinger & Upadhyay 2023) on the lattice 2^-{p}: the discrete "
                "Gaussian mechanism (Canonne, Kamath & Steinke 2020) on the integer vector q = C~int x, "
                f"post-processed by B / 2^{p}, A = B C~")
    return make_statement(
        mechanism=what, neighbors=plan.unit, guarantee=guarantee, private=True,
        budget_requested=requested, budget_spent=spent, horizon=T, counter=plan.mechanism, noise=noise,
        participation=f"a user takes part in at most {k} step(s) and adds at most one event to each "
                      "(bounded by the caller)",
        composition="the whole horizon is one release: charged once, when the counter is made")


@validate_params({
    "horizon": [Interval(Integral, 1, MAX_HORIZON, hint="the number of steps, e.g. horizon=1024")],
    "epsilon": [None, Interval(Real, 0, None, closed="neither", hint="e.g. epsilon=1.0")],
    "delta": [None, Interval(Real, 0, 1, closed="left", hint="e.g. delta=1e-6")],
    "rho": [None, Interval(Real, 0, None, closed="neither", hint="e.g. rho=0.5")],
    "noise": [Options(("laplace", "gaussian"))],
    "mechanism": [None, Options(MECHANISMS)],
    "max_participations": [Interval(Integral, 1, None, hint="steps one user may take part in, e.g. 1")],
})
def plan_counter(*, horizon: int, epsilon: float | None = None, delta: float | None = None,
                 rho: float | None = None, noise: str = "laplace", mechanism: str | None = None,
                 max_participations: int = 1) -> StreamPlan:
    """Plan a continual counter from public parameters only (the module docstring has the
    mechanisms): validate, calibrate the noise (a parameter the samplers cannot draw fails here)
    and derive its privacy loss and statement.

        >>> plan = plan_counter(horizon=1024, epsilon=1.0)
        >>> plan.mechanism, plan.privacy_loss().epsilon() <= 1.0
        ('tree', True)
    """
    mech = mechanism or ("tree" if noise == "laplace" else "toeplitz")
    k = int(max_participations)
    if noise == "laplace":
        if rho is not None or delta:
            raise InvalidParameterError("noise='laplace' is pure epsilon-DP: give epsilon= alone (or noise='gaussian' "
                                        "for a rho or (epsilon, delta) budget)", parameter="rho" if rho else "delta")
        if epsilon is None:
            raise InvalidParameterError("give epsilon=, e.g. epsilon=1.0", parameter="epsilon")
        if mech == "toeplitz":
            raise InvalidParameterError("mechanism='toeplitz' needs noise='gaussian' (its columns' L1 norm grows like "
                                        "sqrt(T)); use mechanism='tree' with Laplace noise", parameter="mechanism")
        eps = check_release_budget(epsilon, "epsilon", RANGE_TREE_BUDGET_RANGE)
        l1, _ = tree_sensitivities(horizon, k)
        with _noise.noise_scale_of("epsilon", eps):
            scale = _noise.laplace_scale_used(Fraction(l1) / Fraction(eps))
        budget = Budget.pure(eps)
        plan = StreamPlan(int(horizon), mech, "laplace", k, budget, scale, Fraction(l1))
    else:
        if rho is not None and (epsilon is not None or delta):
            raise InvalidParameterError("give rho= or epsilon= with delta=, not both", parameter="rho")
        if rho is not None:
            budget = Budget.zcdp(check_release_budget(rho, "rho", RANGE_TREE_BUDGET_RANGE))
        elif epsilon is not None and delta:
            budget = Budget.approx(epsilon, delta)
        else:
            raise InvalidParameterError("noise='gaussian' needs rho=, or epsilon= with delta= > 0",
                                        parameter="rho")
        r = check_release_budget(budget.as_rho() if budget.kind == "approx" else budget.rho, "rho",
                                 RANGE_TREE_BUDGET_RANGE)
        if mech == "tree":
            sens = _sqrt_upper(tree_sensitivities(horizon, k)[1])
        else:
            sens = _sqrt_upper(toeplitz.lattice_sensitivity_squared(int(horizon), k, toeplitz.lattice_bits(horizon)))
        with _noise.noise_scale_of("rho", r, -2.0):
            sigma2 = _noise.gaussian_sigma2_used(sens * sens / (2 * Fraction(r)))
        plan = StreamPlan(int(horizon), mech, "gaussian", k, budget, sigma2, sens)
    object.__setattr__(plan, "statement", _statement(plan))
    return plan

