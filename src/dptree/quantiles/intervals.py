"""The stated bound of the exponential-mechanism quantile methods (``interval="bound"``), from the
mechanism's utility tail (no data involved, no extra budget; their default intervals are measured,
:mod:`dptree.quantiles.measured`). The range tree's intervals, from its exact CDF band and
calibrated by simulation, are :mod:`dptree.rangetree.quantile_pivot` and
:mod:`dptree.rangetree.quantile_calibration`.

Exponential mechanism (:func:`~dptree.quantiles.approx.call_radius`). With probability >= 1 - t
one call returns a y with dist(q n, [#{x < y}, #{x <= y}]) <= (2 s / (b epsilon'))(ln |X| + ln(1 / t))
(McSherry & Talwar 2007's utility tail for P(y) ~ exp(epsilon' b u(y) / (2 s)), s the score's
sensitivity). A union bound over the m calls
(t = (1 - level) / m) gives a rank radius holding for all levels at once. Turned into values with
no extra budget (:func:`value_intervals`): on that event, when n is declared, an estimate y_j with
q_j n + r_j <= q_i n is below the true q_i-quantile and one with q_j n - r_j >= q_i n is above it.

JointExp (:func:`joint_radius`). One exponential mechanism over the C(|X| + m - 1, m) sorted
m-tuples, P(o) ~ exp(a u(o)), a = epsilon' / (2 Delta), Delta the utility's sensitivity at the
levels (2 (1 - g) under add/remove-one: :func:`dptree.quantiles.joint.sensitivity`; the clamp
C = A / a is smaller where Delta is, so the bound below is checked against the C of the a that
ran): with probability
>= 1 - t, -u(o) <= -OPT + (ln C(|X| + m - 1, m) + ln(1 / t) + slack) / a, where slack = 4 m (rho + eta)
covers the sampler's float64 deviation from the exact law (its probabilities are within
exp(+-slack / 2) of the mechanism's). On data whose values are distinct, -OPT <= 2 m: the tuple
o_j = the (floor(q_j n) + 1)-th smallest record (the largest when q_j = 1) has |e_j| <= 1 for every
j, so the m + 1 terms sum to at most 1 + 2 (m - 1) + 1. Where the bound U = 2 m + (...) / a is within
psi's linear range C, every term is its distance, so sum_j |e_j - e_{j-1}| <= U and, the walk e
starting and ending at 0, |e_j| <= U / 2; the tie-aware rank error of o_j is at most |e_j| (its
rank r_j lies in [#{x < o_j}, #{x <= o_j}]). The radius U / 2 holds for all levels at once; past C,
or on data with ties (where -OPT has no public bound), it is not established.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dptree.quantiles.approx import Relation, call_radius, layer_epsilon, path_radii

__all__ = ["value_intervals", "em_radii", "joint_radius", "release_radii"]


def value_intervals(qs: np.ndarray, estimates: list[Any], radii: np.ndarray, n: int | None,
                    lower: Any, upper: Any) -> tuple[list[Any], list[Any]]:
    """Value bounds from the other estimates, at no extra budget (module docstring): the largest
    estimate certainly below the q_i-quantile and the smallest certainly above it, on the event
    that every rank error is within its radius; the domain's ends otherwise (and without a
    declared ``n``)."""
    low, high = [lower] * len(qs), [upper] * len(qs)
    if n is None:
        return low, high
    for i, qi in enumerate(qs):
        for j, qj in enumerate(qs):
            if qj * n + radii[j] < qi * n:
                low[i] = max(low[i], estimates[j])
            if qj * n - radii[j] >= qi * n:
                high[i] = min(high[i], estimates[j])
    return low, high


def em_radii(method: str, qs: np.ndarray, *, size: int, epsilon: float, neighbors: str, level: float,
             dither: int = 1) -> np.ndarray:
    """The rank radius of each level's interval for an exponential-mechanism method (public: a
    function of the parameters only; :mod:`dptree.quantiles.intervals`). ``dither``: the dither
    factor K of JointExp or ApproxQuantiles (:mod:`dptree.quantiles.dither`): the mechanism runs on
    |X| K keys, and an output mapped back to floor(o / K) has a tie-aware rank error at most its
    key's (the value's rank interval contains the key's), so the radius is the one for |X| K points."""
    m, tail = qs.size, 1.0 - level
    rel: Relation = "replace" if neighbors == "replace" else "add_remove"
    if method == "approx":
        return path_radii(qs, size=size * dither, epsilon_call=layer_epsilon(epsilon, m, rel), tail=tail, neighbors=rel)
    if method == "exponential":
        return np.array([call_radius(float(q), size=size, epsilon=epsilon / m, tail=tail / m, neighbors=rel)
                         for q in qs])
    if method == "joint":
        from dptree.quantiles.joint import sensitivity

        return np.full(m, joint_radius(m, size=size * dither, epsilon=epsilon, level=level,
                                       sensitivity=float(sensitivity(qs, rel))))
    raise ValueError(f"no rank radius is derived for method {method!r}")


def release_radii(method: str, qs: np.ndarray, **kw: Any) -> list[float] | None:
    """The ``rank_radius`` a release carries: :func:`em_radii` as floats, None for the tree and where
    a radius is not established (JointExp past psi's linear range)."""
    if method == "tree":
        return None
    r = em_radii(method, qs, **kw)
    return [float(x) for x in r] if np.all(np.isfinite(r)) else None


def joint_radius(m: int, *, size: int, epsilon: float, level: float, sensitivity: float) -> float:
    """JointExp's rank radius for all m levels at once (module docstring; data with distinct
    values), or inf where the bound leaves psi's linear range; ``sensitivity``: the Delta the
    mechanism ran at (a smaller a than the one that ran would overstate C). Public: parameters only."""
    from dptree.quantiles.joint import clamp_nats, float_slack

    slack, _ = float_slack(m, size, epsilon)
    a = (epsilon - slack) / (2.0 * sensitivity)
    log_tuples = math.lgamma(size + m) - math.lgamma(m + 1) - math.lgamma(size)
    bound = 2.0 * m + (log_tuples + math.log(1.0 / (1.0 - level)) + slack) / a
    return bound / 2.0 if bound <= clamp_nats(size) / a - 1.0 else math.inf
