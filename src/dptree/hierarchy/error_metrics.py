"""Error measures of Ghazi et al. 2023 (``001_4ad1135f2c911f1b.txt``) for tree counts.

All functions take estimates of shape (reps, nodes) -- ``reps`` independent runs of a mechanism
on the same input -- or (nodes,) for a single run, and the true counts (nodes,).

* :func:`rmse_alpha` -- Definition 1.4: RMSE_alpha(z~, z) = sqrt(E[max(|z~ - z| - alpha z, 0)^2])
  per node (alpha = 0 is the ordinary RMSE);
* :func:`mrmse_alpha` -- Definition 1.4's alpha-mRMSE on one input: the maximum over nodes
  (the definition also maximises over inputs; a simulation gives a lower bound of it);
* :func:`linf_error` -- E ||z~ - z||_inf; :func:`l2sq_error` -- sqrt(E ||z~ - z||_2^2 / m)
  (the "l2^2-error" of Section 1, with the square root);
* :func:`alpha_eta_accuracy` -- Problem 3.1: per node, the frequency of
  |z~_u - z_u| > alpha max{z_u, tau_u}, and whether every node stays below eta (with a
  Clopper-Pearson upper bound so that sampling error is accounted for).
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import Callable

import numpy as np

from dptree._validation import Interval, validate_params
from dptree.errors import InvalidParameterError

__all__ = [
    "rmse_alpha",
    "mrmse_alpha",
    "linf_error",
    "l2sq_error",
    "alpha_eta_accuracy",
    "AccuracyReport",
    "clopper_pearson_upper",
]


def _prep(estimates: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    est = np.asarray(estimates, dtype=np.float64)
    z = np.asarray(truth, dtype=np.float64)
    if est.ndim == 1:
        est = est[None, :]
    if est.ndim != 2 or est.shape[1] != z.size:
        raise InvalidParameterError(f"estimates must have shape (reps, {z.size}) or ({z.size},), got {est.shape}")
    if not np.isfinite(est).all() or not np.isfinite(z).all():
        raise InvalidParameterError("estimates and truth must be finite")
    return est, z


#: alpha of Definition 1.4 (0: the ordinary error)
_ALPHA = Interval(Real, 0, None)


@validate_params({"alpha": [_ALPHA]})
def rmse_alpha(estimates: np.ndarray, truth: np.ndarray, alpha: float = 0.0) -> np.ndarray:
    """Per-node alpha-RMSE (Definition 1.4), estimated over the rows of ``estimates``."""
    est, z = _prep(estimates, truth)
    a = float(alpha)
    excess = np.maximum(np.abs(est - z) - a * z, 0.0)
    return np.sqrt(np.mean(excess * excess, axis=0))


def mrmse_alpha(estimates: np.ndarray, truth: np.ndarray, alpha: float = 0.0) -> float:
    """alpha-mRMSE on this input: max over nodes of :func:`rmse_alpha` (Definition 1.4)."""
    return float(rmse_alpha(estimates, truth, alpha).max())


def linf_error(estimates: np.ndarray, truth: np.ndarray) -> float:
    """Expected l_inf error E ||z~ - z||_inf (Section 1), averaged over the rows."""
    est, z = _prep(estimates, truth)
    return float(np.abs(est - z).max(axis=1).mean())


def l2sq_error(estimates: np.ndarray, truth: np.ndarray) -> float:
    """The l2^2-error of Ghazi et al. 2023 on this input: sqrt(E ||z~ - z||_2^2 / m)."""
    est, z = _prep(estimates, truth)
    return float(np.sqrt(np.mean((est - z) ** 2)))


def clopper_pearson_upper(k: np.ndarray | int, n: int, confidence: float = 0.95) -> np.ndarray:
    """One-sided Clopper-Pearson upper bound on a binomial proportion (k successes of n), at
    ``confidence``: :func:`dptree.estimation.intervals.clopper_pearson_upper` at alpha = 1 - confidence."""
    from dptree.estimation.intervals import clopper_pearson_upper as upper_bound

    return upper_bound(k, n, 1.0 - confidence)


@dataclass
class AccuracyReport:
    """Result of :func:`alpha_eta_accuracy`."""

    failure_rate: np.ndarray  # per node, observed frequency of |error| > alpha max{w, tau}
    failure_upper: np.ndarray  # per node, Clopper-Pearson upper bound
    worst_rate: float
    worst_upper: float
    eta: float
    reps: int

    @property
    def accurate(self) -> bool:
        """True when no node's observed failure rate exceeds eta."""
        return bool(self.worst_rate <= self.eta)


@validate_params({"alpha": [_ALPHA], "eta": [Interval(Real, 0, 1, closed="left")],
                  "reps": [None, Interval(Integral, 1, None)], "confidence": [Interval(Real, 0, 1, closed="neither")]})
def alpha_eta_accuracy(
    run: Callable[[int], np.ndarray] | np.ndarray,
    truth: np.ndarray,
    *,
    alpha: float,
    eta: float,
    tau: float | np.ndarray,
    reps: int | None = None,
    confidence: float = 0.95,
) -> AccuracyReport:
    """(alpha, eta)-accuracy of Problem 3.1, estimated by simulation.

    ``run``: either a function ``seed -> estimates (nodes,)`` called ``reps`` times, or an array
    of estimates (reps, nodes). A node fails a run when |z~_u - z_u| > alpha max{z_u, tau_u};
    the mechanism is (alpha, eta)-accurate when every node fails with probability <= eta.
    """
    a = float(alpha)
    if callable(run):
        if reps is None:
            raise InvalidParameterError("reps must be a positive integer when run is a function")
        est = np.stack([np.asarray(run(s), dtype=np.float64) for s in range(reps)])
    else:
        est = np.asarray(run, dtype=np.float64)
    est, z = _prep(est, truth)
    t = np.broadcast_to(np.asarray(tau, dtype=np.float64), z.shape)
    fail = np.abs(est - z) > a * np.maximum(z, t)
    k = fail.sum(axis=0)
    n = est.shape[0]
    rate = k / n
    up = clopper_pearson_upper(k, n, confidence)
    return AccuracyReport(
        failure_rate=rate,
        failure_upper=up,
        worst_rate=float(rate.max()),
        worst_upper=float(up.max()),
        eta=float(eta),
        reps=n,
    )
