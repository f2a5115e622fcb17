"""The noise step of hierarchy counts (Ghazi, Kamath, Kumar, Manurangsi, Wu 2023, "On
Differentially Private Counting on Trees", ``001_4ad1135f2c911f1b.txt``).

* :func:`calibrate` derives from public parameters alone everything a release states: the
  sensitivity of the node counts (Corollary 2.7), the noise parameter, the guarantee. Loading a
  file runs it again on the stated parameters and compares.
* :func:`measure_nodes` is the only step that reads the node counts. Laplace and Gaussian noise go
  through the shared measurement core (:func:`dptree.privacy.measurement.measure`); the
  multiplicative algorithm draws its own noise (:func:`dptree.hierarchy.multiplicative.mrmse_wrapper`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any, Sequence

import numpy as np

from dptree.hierarchy.multiplicative import Tree, mrmse_wrapper, theorem_4_1_tau_min
from dptree.hierarchy.structure import Hierarchy
from dptree.noise import (
    RandomSource,
    discrete_gaussian_variance,
    discrete_laplace_variance,
    gaussian_sigma2_used,
    laplace_scale_used,
    noise_scale_of,
    truncated_laplace_bound,
)
from dptree.privacy.budget import (
    discrete_gaussian_delta,
    discrete_gaussian_exact_feasible,
    discrete_gaussian_sigma2_for,
    zcdp_rho_for,
)
from dptree.privacy.measurement import NoiseSpec, measure
from dptree.privacy.statement import Neighbors, make_statement

__all__ = [
    "METHODS",
    "NodeMechanism",
    "Calibration",
    "calibrate",
    "measure_nodes",
    "l1_sensitivity",
    "l2sq_sensitivity",
    "gaussian_sigma2",
    "calibration_of",
]

METHODS = ("laplace", "gaussian", "multiplicative")
SOURCE = "Ghazi, Kamath, Kumar, Manurangsi & Wu 2023, On Differentially Private Counting on Trees"


@dataclass(frozen=True)
class NodeMechanism:
    """The public parameters of the noise step: ``method``, the budget (``epsilon``, ``delta``),
    ``max_contributions`` k (records per person, bounded by the caller; add/remove neighbors)
    and, for the multiplicative method, ``alpha`` and ``tau_min`` (None: Theorem 4.1's value)."""

    method: str
    epsilon: float
    delta: float = 0.0
    max_contributions: int = 1
    alpha: float | None = None
    tau_min: float | None = None

    @property
    def neighbors(self) -> Neighbors:
        return Neighbors("add_remove", self.max_contributions)

    def run_budget(self) -> tuple[float, float]:
        """(epsilon, delta) the multiplicative algorithm runs at: group privacy (Fact 2.2) gives
        (epsilon, delta) for k records from (epsilon/k, delta (e^(epsilon/k)-1)/(e^epsilon-1))."""
        eps, dlt, k = self.epsilon, self.delta, self.max_contributions
        if k > 1:
            return eps / k, dlt * math.expm1(eps / k) / math.expm1(eps)
        return eps, dlt


@dataclass(frozen=True)
class Calibration:
    """What :func:`calibrate` derives. ``spec``: the per-node noise (Laplace/Gaussian; None for
    the multiplicative method, whose window half-width is ``window``). ``statement``: the
    mechanism's fields of the privacy statement; ``parameters``: public parameters it adds."""

    mechanism: NodeMechanism
    depth: int
    description: str
    guarantee: str
    spec: NoiseSpec | None = None
    noise_variance: float | None = None
    window: int | None = None
    statement: dict[str, Any] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)

    def privacy(self, *, private: bool) -> dict[str, Any]:
        """The release's privacy statement (:func:`dptree.privacy.statement.make_statement`)."""
        return make_statement(mechanism=self.description, neighbors=self.mechanism.neighbors,
                              guarantee=self.guarantee, private=private, **self.statement)


def l1_sensitivity(depth: int, k: int) -> int:
    """L1 sensitivity of all node counts (Corollary 2.7): one record changes the d counts on its
    leaf's path by 1; a user with k records changes each by at most k (brute-forced in tests)."""
    return k * depth


def l2sq_sensitivity(depth: int, k: int) -> int:
    """Squared L2 sensitivity of all node counts: k^2 d (worst case: all k records on one leaf)."""
    return k * k * depth


@lru_cache(maxsize=256)
def _rho_for(eps: float, dlt: float) -> float:
    return zcdp_rho_for(eps, dlt)


@lru_cache(maxsize=256)
def _gauss_var(sigma2: float) -> float:
    return discrete_gaussian_variance(sigma2)


@lru_cache(maxsize=256)
def _lap_var(scale: float) -> float:
    return discrete_laplace_variance(scale)


def gaussian_sigma2(d: int, k: int, eps: float, dlt: float, calibration: str = "exact") -> tuple[Fraction, str]:
    """sigma^2 of the Gaussian baseline and the calibration used.

    ``exact`` (default) when one record per person (k = 1): a neighbor moves the d counts of one
    root-leaf path by exactly 1 (a shallower leaf: fewer counts, a marginal of the full path, so no
    larger delta); sigma^2 is the smallest grid value with the exact discrete-Gaussian
    delta(epsilon) <= delta over those d unit shifts (:func:`dptree.privacy.budget.discrete_gaussian_sigma2_for`).
    With k > 1 the shifts are not all equal (k records can spread over leaves) and the discrete
    Gaussian's delta is not a function of the L2 norm alone, so the zCDP calibration
    sigma^2 = k^2 d / (2 zcdp_rho_for(epsilon, delta)) (sound for every shift of that L2 norm) is used.
    """
    if calibration == "exact" and k == 1 and discrete_gaussian_exact_feasible(eps, dlt, d):
        return discrete_gaussian_sigma2_for(eps, dlt, d), "exact"
    return gaussian_sigma2_used(l2sq_sensitivity(d, k) / (2.0 * _rho_for(eps, dlt))), "zcdp"


def calibration_of(privacy: dict[str, Any]) -> str:
    """The Gaussian calibration a release states (``"zcdp"`` where the statement names none)."""
    cal = privacy.get("calibration")
    return "exact" if isinstance(cal, dict) and cal.get("kind") == "exact" else "zcdp"


def _laplace(mech: NodeMechanism, d: int) -> Calibration:
    eps, k = mech.epsilon, mech.max_contributions
    scale = l1_sensitivity(d, k) / eps
    used = laplace_scale_used(scale)
    return Calibration(
        mech, d, "discrete Laplace on every node (Ghazi et al. 2023, Corollary 2.7 / Lemma 2.5)", "pure epsilon-DP",
        spec=NoiseSpec("laplace", (used,)), noise_variance=_lap_var(scale),
        statement={"epsilon": eps, "delta": 0.0, "sensitivity": {"l1": l1_sensitivity(d, k), "depth": d},
                   "noise": {"scale": float(used)}, "source": SOURCE},
    )


def _gaussian(mech: NodeMechanism, d: int, calibration: str) -> Calibration:
    eps, dlt, k = mech.epsilon, mech.delta, mech.max_contributions
    l2sq = l2sq_sensitivity(d, k)
    sigma2, cal = gaussian_sigma2(d, k, eps, dlt, calibration)
    if cal == "exact":
        how: dict[str, Any] = {
            "kind": "exact",
            "method": "exact discrete Gaussian (epsilon, delta): delta(epsilon) of the privacy loss "
            "of d unit shifts, by exact convolution (Canonne, Kamath, Steinke 2020, Theorem 7, "
            "extended to d coordinates; dptree.privacy.budget.discrete_gaussian_delta)",
            "delta_at_epsilon": discrete_gaussian_delta(eps, float(sigma2), d),
        }
        guarantee = "(epsilon, delta)-DP (exact discrete-Gaussian accounting)"
    else:
        how = {
            "kind": "zcdp",
            "method": "zCDP: sigma^2 = k^2 d / (2 rho), rho = zcdp_rho_for(epsilon, delta) (CKS 2020 "
            "Cor. 13); used with max_contributions > 1",
        }
        guarantee = "rho-zCDP, implies (epsilon, delta)-DP"
    return Calibration(
        mech, d, "discrete Gaussian on every node (Ghazi et al. 2023, Corollary 2.7 / Lemma 2.6; Canonne, "
        "Kamath, Steinke 2020)", guarantee,
        spec=NoiseSpec("gaussian", (sigma2,)), noise_variance=_gauss_var(float(sigma2)),
        # rho: the zCDP this noise gives (<= the requested one for the zCDP calibration)
        statement={"epsilon": eps, "delta": dlt, "rho": l2sq / (2.0 * float(sigma2)), "calibration": how,
                   "sensitivity": {"l2": math.sqrt(l2sq), "l2_squared": l2sq, "depth": d},
                   "noise": {"sigma2": float(sigma2)}, "source": SOURCE},
    )


def _multiplicative(mech: NodeMechanism, d: int) -> Calibration:
    assert mech.alpha is not None
    eps_run, dlt_run = mech.run_budget()
    k = mech.max_contributions
    default_tau = theorem_4_1_tau_min(mech.alpha, eps_run, dlt_run, d)
    tm = default_tau if mech.tau_min is None else mech.tau_min
    holds = "which holds" if tm >= default_tau else f"which does NOT hold (tau_min = {tm:.6g})"
    return Calibration(
        mech, d, "multiplicative-error algorithm of Ghazi et al. 2023, Theorem 4.1 (Lemma 3.3 wrapper around "
        "Estimation, Algorithm 4; truncated discrete Laplace, Lemma 2.8; Sparse, Algorithm 3)",
        "(epsilon, delta)-DP" + (" by group privacy (Fact 2.2)" if k > 1 else ""),
        window=truncated_laplace_bound(eps_run / (2.0 * d), dlt_run / (2.0 * d)),
        statement={"epsilon": mech.epsilon, "delta": mech.delta,
                   "sensitivity": {"per_node_count": k, "depth": d, "group_privacy_k": k},
                   "run_at": {"epsilon": eps_run, "delta": dlt_run},
                   "tau_min_note": "privacy does not depend on tau_min; the accuracy guarantee of Theorem 4.1 "
                   f"needs tau_min >= {default_tau:.6g} (Corollary 4.7), {holds}", "source": SOURCE},
        parameters={"tau_min": tm, "tau_min_default": default_tau, "eta": 1.0 / d**2},
    )


def calibrate(mech: NodeMechanism, depth: int, *, gaussian: str = "exact") -> Calibration:
    """Everything public about the noise step for a tree of ``depth`` d (root included).

    * laplace: discrete Laplace of scale k d / epsilon per node, (epsilon, 0)-DP (Corollary 2.7 /
      Lemma 2.5; L1 sensitivity k d).
    * gaussian: discrete Gaussian with :func:`gaussian_sigma2` (``gaussian``: "exact" or "zcdp",
      the calibration to re-derive for a loaded file), (epsilon, delta)-DP (Lemma 2.6; CKS 2020).
    * multiplicative: Theorem 4.1's algorithm at :meth:`NodeMechanism.run_budget`; its window
      B = TruncLap bound at (eps'/(2d), delta'/(2d)) (Lemma 3.3); (epsilon, delta)-DP for every tau_min.
    """
    if mech.method == "laplace":
        with noise_scale_of("max_contributions", mech.max_contributions, 1, given=f"epsilon={mech.epsilon!r}"):
            return _laplace(mech, depth)
    if mech.method == "gaussian":
        with noise_scale_of("max_contributions", mech.max_contributions, 2, given=f"epsilon={mech.epsilon!r}"):
            return _gaussian(mech, depth, gaussian)
    if mech.method == "multiplicative":
        return _multiplicative(mech, depth)
    raise ValueError(f"unknown method {mech.method!r}")


def measure_nodes(src: RandomSource, h: Hierarchy, w: Sequence[np.ndarray], cal: Calibration) -> dict[str, Any]:
    """The only step that reads the private node counts ``w`` (one array per level): returns the
    measurements. Everything after it is post-processing."""
    if cal.spec is not None:
        (y,) = measure([np.concatenate(w)], cal.spec, src)
        return {"y": y, "noise_variance": cal.noise_variance}
    mech = cal.mechanism
    assert mech.alpha is not None
    eps_run, dlt_run = mech.run_budget()
    res = mrmse_wrapper(src, Tree(h.parents, list(h.sizes)), w, alpha=mech.alpha, epsilon=eps_run, delta=dlt_run,
                        tau_min=cal.parameters["tau_min"], eta=cal.parameters["eta"])
    return {
        "estimation": np.concatenate(res.w_est),
        "window_center": np.concatenate(res.window_center).astype(np.int64),
        "window": int(res.window),
        "M": int(res.M),
        "rounds": int(res.info["ell"]),
    }
