"""Tight totals for a sequence of releases: Rényi curves, PLD composition, zCDP and a Rényi filter.

Every function takes the :class:`~dptree.privacy.loss.PrivacyLoss` of each release (what its plan's
``privacy_loss()`` returns) and works from each measurement's exact characterisation; the curves,
the Rényi-to-(epsilon, delta) conversion and the privacy loss distributions come from Google's
``dp_accounting`` library, not from code of our own.

**Parallel copies.** A :class:`PrivacyLoss` lists its measurements once, for the one group a record
can reach (``parallel`` counts disjoint copies, and one person is in one of them), so the copies are
never multiplied in.

**Which measurement gets which bound** (each is an upper bound on the Rényi divergence or on the
privacy loss distribution of every pair of neighbouring inputs):

* :class:`Laplace` (the *discrete* Laplace, integer noise ``P(k) ∝ exp(-|k| / scale)``) at
  epsilon = sensitivity / scale: the randomized-response curve at epsilon. For sensitivity 1 the
  privacy loss of the discrete Laplace takes only the values +epsilon (probability
  1 / (1 + e^-epsilon)) and -epsilon, exactly the loss of binary randomized response at epsilon, so
  the curve is exact there. Mironov's (2017, Prop. 6) Rényi curve of the *continuous* Laplace
  mechanism does **not** bound the discrete one: at sensitivity 1 it lies strictly below
  randomized response at every order in (1, inf) (``tests/unit/privacy/test_accounting.py``
  measures it), so it would undercharge. For any sensitivity the mechanism is epsilon-DP, and
  randomized response at epsilon dominates every epsilon-DP pair of distributions (Kairouz, Oh &
  Viswanath 2015), which bounds both its Rényi divergences and its PLD.
* :class:`Gaussian` (the discrete Gaussian): the Rényi curve alpha * Delta^2 / (2 sigma^2)
  (Canonne, Kamath & Steinke 2020, Theorem 4); its PLD is dp_accounting's discrete
  Gaussian PLD, exact for sensitivity 1 (an integer shift of L2 norm 1 moves one coordinate by 1).
* :class:`Exponential` at epsilon (epsilon-bounded range): at each order the smaller of its zCDP
  curve alpha * epsilon^2 / 8 (Cesar & Rogers 2021, Lemma 3.2) and the randomized-response curve
  at epsilon (it is epsilon-DP); its PLD is randomized response at epsilon (same reason).
* :class:`PureDP` at epsilon: the randomized-response curve and PLD at epsilon, the tightest
  bounds for a mechanism known only to be epsilon-DP (randomized response is itself epsilon-DP
  and dominates every epsilon-DP pair), below Bun & Steinke's (2016) alpha * epsilon^2 / 2.
* :class:`ApproxDP` at (epsilon, delta): no Rényi curve and no PLD follow from an (epsilon, delta)
  statement, and :func:`rdp_curve`, :func:`rdp_epsilon` and :func:`pld_epsilon` refuse it.
  :class:`RenyiFilter` counts it by the hybrid rule stated there: its epsilon enters the Rényi
  sums as randomized response at epsilon, and its delta is charged against a share of delta set
  aside for such steps (``approx_delta``); :func:`approx_delta` is that delta, and
  :func:`rdp_curve` with ``hybrid=True`` that curve.

**Rounding.** dp_accounting computes each curve in floating point; every curve returned here is
raised by a relative 2^-40 (far above float64's error in these closed forms), so that summed
curves never fall below the exact ones.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import Any, Iterable, Sequence

import numpy as np

from dptree.errors import BudgetExceededError, InvalidParameterError
from dptree.privacy.loss import ApproxDP, Exponential, Gaussian, Laplace, Measurement, PrivacyLoss, PureDP

__all__ = ["DEFAULT_ORDERS", "FILTER_ORDERS", "rdp_curve", "pure_curve", "zcdp_curve", "approx_delta", "rdp_epsilon",
           "pld_epsilon", "zcdp_rho", "RenyiFilter"]

#: The Rényi orders of :func:`rdp_curve` and :func:`rdp_epsilon` unless told otherwise
#: (dp_accounting's default grid: 1.1 to 10.9 by 0.1, 11 to 63, then 128 to 1024).
#: the Rényi orders of dp_accounting's RDP accountant: 1.1 to 10.9 by 0.1, 11 to 63, and 128 to 1024
DEFAULT_ORDERS: tuple[float, ...] = tuple([1 + x / 10 for x in range(1, 100)] + [float(a) for a in range(11, 64)]
                                          + [128.0, 256.0, 512.0, 1024.0])


def _dp() -> Any:
    """``dp_accounting``, imported on first use: it imports scipy, which ``import dptree`` never
    loads (tests/unit/test_import_cost.py)."""
    import dp_accounting
    import dp_accounting.pld.common
    import dp_accounting.pld.privacy_loss_distribution
    import dp_accounting.rdp.rdp_privacy_accountant

    return dp_accounting
#: The orders of a :class:`RenyiFilter` unless told otherwise: few, since delta is split over them.
FILTER_ORDERS: tuple[float, ...] = (4.0, 8.0, 16.0, 32.0)

# The PLD grid: losses are rounded up to multiples of this (or of a divisor of the smallest step's
# epsilon close to it), so that every step's loss lies on the grid when the steps share an epsilon.
_PLD_GRID = 1e-4


def _refuse_approx(m: Measurement) -> None:
    if isinstance(m, ApproxDP):
        raise InvalidParameterError(
            f"measurement {m.label or 'approx'!r} is only known to be (epsilon, delta)-DP, which gives no "
            "Rényi curve and no privacy loss distribution: compose releases with an approximate-DP step by "
            "basic composition (PrivacyLoss.epsilon_delta)")


def _check_orders(orders: Iterable[float]) -> tuple[float, ...]:
    out = tuple(float(a) for a in orders)
    if not out or any(not math.isfinite(a) or a <= 1 for a in out):
        raise InvalidParameterError(f"Rényi orders must be finite numbers > 1, got {orders!r}")
    return out


@lru_cache(maxsize=256)
def _rr_curve(epsilon: float, orders: tuple[float, ...]) -> np.ndarray:
    """Rényi divergences of binary randomized response at ``epsilon`` (keeps the true bit with
    probability e^eps / (1 + e^eps)): dp_accounting's k-ary randomized response with k = 2 and
    noise parameter p = 2 / (1 + e^eps) under its replace-one relation is exactly this pair."""
    dp = _dp()
    acc = dp.rdp.rdp_privacy_accountant.RdpAccountant(list(orders), dp.NeighboringRelation.REPLACE_ONE)
    acc.compose(dp.RandomizedResponseDpEvent(2.0 / (1.0 + math.exp(epsilon)), 2))
    curve = np.array(acc.rdp, dtype=np.float64)
    curve.setflags(write=False)
    return curve


def _zcdp_curve(rho: float, orders: tuple[float, ...]) -> np.ndarray:
    dp = _dp()
    acc = dp.rdp.rdp_privacy_accountant.RdpAccountant(list(orders))
    acc.compose(dp.ZCDpEvent(rho))
    return np.array(acc.rdp, dtype=np.float64)


#: the relative amount every curve is raised by (module docstring, "Rounding")
_ROUND_UP = 1.0 + 2.0 ** -40


def _measurement_curve(m: Measurement, orders: tuple[float, ...], hybrid: bool = False) -> np.ndarray:
    if isinstance(m, ApproxDP) and hybrid:
        return _rr_curve(float(m.epsilon), orders)  # the part outside its delta (RenyiFilter)
    _refuse_approx(m)
    if isinstance(m, Gaussian):
        return _zcdp_curve(m.rho, orders)
    rr = _rr_curve(float(m.epsilon), orders)
    if isinstance(m, Exponential):
        return np.minimum(rr, _zcdp_curve(m.rho, orders))
    return rr  # Laplace (discrete) and PureDP


def rdp_curve(loss: PrivacyLoss, orders: Sequence[float] = DEFAULT_ORDERS, *, hybrid: bool = False) -> np.ndarray:
    """The Rényi divergence bound of one release at each of ``orders``: the sum over its
    measurements (Mironov 2017, Prop. 1) of each measurement's curve (module docstring).
    ``hybrid=True`` counts an (epsilon, delta) step by randomized response at its epsilon (valid
    only together with its delta charged apart, :class:`RenyiFilter`); otherwise it is refused."""
    ords = _check_orders(orders)
    total = np.zeros(len(ords))
    for m in loss.measurements:
        total = total + _measurement_curve(m, ords, hybrid)
    return total * _ROUND_UP


def approx_delta(loss: PrivacyLoss) -> float:
    """The sum of the deltas of a release's (epsilon, delta) steps (0.0 when it has none)."""
    return math.fsum(m.delta for m in loss.measurements if isinstance(m, ApproxDP))


def pure_curve(epsilon: float, orders: Sequence[float] = DEFAULT_ORDERS) -> np.ndarray:
    """The Rényi bound of a mechanism known only to be ``epsilon``-DP: the randomized-response
    curve at ``epsilon`` (it dominates every epsilon-DP pair, Kairouz, Oh & Viswanath 2015)."""
    return np.array(_rr_curve(float(epsilon), _check_orders(orders))) * _ROUND_UP


def zcdp_curve(rho: float, orders: Sequence[float] = DEFAULT_ORDERS) -> np.ndarray:
    """The Rényi bound alpha * rho of a mechanism known only to be ``rho``-zCDP (Bun & Steinke 2016)."""
    return _zcdp_curve(float(rho), _check_orders(orders)) * _ROUND_UP


def rdp_epsilon(losses: Iterable[PrivacyLoss], delta: float, orders: Sequence[float] = DEFAULT_ORDERS) -> float:
    """(epsilon, delta)-DP of the releases together: their Rényi curves summed (composition holds
    for adaptively chosen mechanisms of fixed curves, Mironov 2017, Prop. 1), then converted by
    dp_accounting's ``compute_epsilon``, the conversion of Canonne, Kamath & Steinke 2020, Prop. 12
    (Asoodeh et al. 2021): epsilon = min over alpha of
    D_alpha + log(1 - 1/alpha) - log(delta * alpha) / (alpha - 1).

    For budgets whose releases and parameters are chosen as results come in, use
    :class:`RenyiFilter`."""
    _check_delta(delta)
    ords = _check_orders(orders)
    total = np.zeros(len(ords))
    for loss in losses:
        total = total + rdp_curve(loss, ords)
    eps, _ = _dp().rdp.rdp_privacy_accountant.compute_epsilon(ords, total, delta)
    return float(eps)


def _check_delta(delta: float) -> None:
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
        raise InvalidParameterError(f"delta must be a number in (0, 1), got {delta!r}")


def _pld_key(m: Measurement) -> tuple[str, float, int]:
    """What decides a measurement's PLD: ("dlap", parameter, 1) for a discrete Laplace of
    sensitivity 1, ("dgauss", sigma, 1) for a discrete Gaussian of sensitivity 1, ("rr", epsilon, 0)
    for randomized response at epsilon (every other pure step)."""
    _refuse_approx(m)
    if isinstance(m, Laplace):
        if m.sensitivity == 1:
            return ("dlap", float(1 / m.scale), 1)
        return ("rr", m.epsilon, 0)
    if isinstance(m, Gaussian):
        if m.sensitivity != 1:
            raise InvalidParameterError(
                f"measurement {m.label or 'gaussian'!r}: a discrete Gaussian of L2 sensitivity {m.sensitivity} "
                "may move several coordinates, whose PLD dp_accounting's scalar discrete Gaussian does not "
                "bound; account for it with rdp_epsilon or zcdp_rho instead")
        return ("dgauss", math.sqrt(float(m.sigma2)), 1)
    assert isinstance(m, (Exponential, PureDP))
    return ("rr", float(m.epsilon), 0)


def _grid(keys: Iterable[tuple[str, float, int]]) -> float:
    """The PLD discretisation: the smallest pure step's epsilon divided into pieces of at most
    ``_PLD_GRID``, so a sequence of equal steps is represented without rounding."""
    eps = [k[1] for k in keys if k[0] == "rr"] + [k[1] for k in keys if k[0] == "dlap"]
    if not eps:
        return _PLD_GRID
    e = min(eps)
    return e / math.ceil(e / _PLD_GRID)


def pld_epsilon(losses: Iterable[PrivacyLoss], delta: float) -> float:
    """(epsilon, delta)-DP of the releases together by privacy loss distributions (Doroshenko,
    Ghazi, Kamath, Kumar & Manurangsi 2022), with dp_accounting's pessimistic discretisation (the
    result is an upper bound).

    **When it is valid:** only for a sequence of mechanisms fixed in advance: which releases run,
    how many, and every one's noise and sensitivity decided before any result is seen (each
    release may still read the data; its *parameters* may not depend on earlier outputs). The PLD
    of a composition is the convolution of the steps' PLDs when the steps are known up front; for
    mechanisms chosen after seeing earlier outputs (a ledger spent as results come in) use
    :class:`RenyiFilter`, which is valid under fully adaptive composition.

    Each step's PLD, an upper bound for its mechanism: discrete Laplace of sensitivity 1 and
    discrete Gaussian of sensitivity 1 are dp_accounting's exact PLDs of those mechanisms
    (``from_discrete_laplace_mechanism``, ``from_discrete_gaussian_mechanism``); a discrete Laplace
    of larger sensitivity, an exponential mechanism and a pure step at epsilon get randomized
    response at epsilon (``from_privacy_parameters`` with delta = 0), which dominates every
    epsilon-DP mechanism (Kairouz, Oh & Viswanath 2015; Zhu, Dong & Wang 2022). A discrete
    Gaussian of another sensitivity is refused (its multivariate PLD is not the scalar one)."""
    _check_delta(delta)
    counts: dict[tuple[str, float, int], int] = {}
    for loss in losses:
        for m in loss.measurements:
            key = _pld_key(m)
            counts[key] = counts.get(key, 0) + 1
    if not counts:
        raise InvalidParameterError("pld_epsilon needs at least one release")
    grid = _grid(counts)
    pld = _dp().pld
    parts = []
    for key, n in sorted(counts.items()):
        kind, value, sens = key
        if kind == "dlap":
            one = pld.privacy_loss_distribution.from_discrete_laplace_mechanism(
                value, sens, value_discretization_interval=grid)
        elif kind == "dgauss":
            one = pld.privacy_loss_distribution.from_discrete_gaussian_mechanism(
                value, sens, value_discretization_interval=grid)
        else:
            one = pld.privacy_loss_distribution.from_privacy_parameters(
                pld.common.DifferentialPrivacyParameters(value, 0.0), value_discretization_interval=grid)
        parts.append(one.self_compose(n) if n > 1 else one)
    total = parts[0]
    for part in parts[1:]:
        total = total.compose(part)
    return float(total.get_epsilon_for_delta(delta))


def zcdp_rho(losses: Iterable[PrivacyLoss]) -> float:
    """rho-zCDP of the releases together: the sum of each release's exact rho
    (:meth:`PrivacyLoss.rho`; zCDP composes adaptively, Bun & Steinke 2016, Lemma 2.3)."""
    total = math.fsum(loss.rho() for loss in losses)
    if math.isinf(total):
        raise InvalidParameterError("a release with an approximate-DP step has no rho: compose it by "
                                    "PrivacyLoss.epsilon_delta")
    return total


class RenyiFilter:
    """An (epsilon, delta)-DP budget spent by adaptively chosen releases, each charged its Rényi
    curve at a few orders fixed in advance.

    **Theorem (Feldman & Zrnic 2021, the Rényi filter).** Fix an order alpha > 1 and B >= 0. Let
    mechanisms be chosen one after another, each (together with its Rényi bound rho_t(alpha)) as
    a function of the earlier outputs. If sum_t rho_t(alpha) <= B holds on every run, the whole
    interaction is (alpha, B)-RDP.

    **Several orders.** With orders alpha_1..alpha_k (``orders``, fixed before any release) the
    rule is: a release is accepted if, after it, *some* order still has S(alpha) <= B(alpha),
    where S is the running sum of curves and

        B(alpha) = epsilon - log(1 - 1/alpha) + log(alpha * delta / k) / (alpha - 1),

    the Rényi bound that the conversion of Canonne, Kamath & Steinke 2020, Prop. 12 turns into
    epsilon at delta / k. The release that would leave every order over its budget is refused (and
    so is everything after it, since sums only grow). Why this is (epsilon, delta)-DP: for each
    order, M_t = exp((alpha - 1)(L_t - S_t(alpha))), with L_t the privacy loss so far, is a
    non-negative supermartingale from 1 (the argument of Feldman & Zrnic), so E[M_T] <= 1 at the
    stopping time T. The pointwise inequality (1 - e^(epsilon - x))_+ <=
    (1/alpha)(1 - 1/alpha)^(alpha - 1) e^((alpha - 1)(x - epsilon)) behind Prop. 12 bounds the part
    of the hockey-stick divergence E[(1 - e^(epsilon - L_T))_+] on the event
    {S_T(alpha) <= B(alpha)} by delta / k; at T one of the k events holds, so a union over the
    orders gives delta in all. With one order the rule is Feldman & Zrnic's filter followed by
    the tight conversion.

    The orders that get a budget <= 0 at these (epsilon, delta) are dropped up front (and k
    counts only the rest); all of this depends on public numbers only.

    **(epsilon, delta) steps: the hybrid rule.** With ``approx_delta`` = D > 0 set aside (fixed in
    advance, part of ``delta``), the orders' budgets are computed at delta - D instead of delta,
    and a release with (epsilon_i, delta_i) steps (:class:`~dptree.privacy.loss.ApproxDP`) is
    accepted only if, besides the rule above with randomized response at epsilon_i as the step's
    curve, the deltas of all such steps so far sum to at most D. Why this is (epsilon, delta)-DP,
    for one pair of neighbouring inputs: an (epsilon_i, delta_i)-DP pair of output laws is a
    post-processing of the pair that with probability delta_i reveals which input it is and
    otherwise runs randomized response at epsilon_i (Kairouz, Oh & Viswanath 2015; Murtagh & Vadhan
    2016, Lemma 3.2), so the interaction is simulated by one whose steps are those pairs, the
    post-processing folded into the next choices. Its hockey-stick divergence at e^epsilon is at
    most the probability of a revealing outcome, which is E[sum of the delta_i run] <= D (each
    step's revealing probability is its delta_i given the past, and the sum is <= D on every run),
    plus the divergence of the same strategy with every revealing outcome removed: those
    sub-probability laws are dominated by an interaction of randomized-response steps that the
    filter above accepts at delta - D. The two parts add to delta. This is the approximate-zCDP
    argument of Bun & Steinke (2016, Section 8) in the fully adaptive form of Whitehouse, Ramdas,
    Rogers & Wu (2023), with the Rényi filter in place of the zCDP one. With D = 0 an (epsilon,
    delta) step is refused.
    """

    def __init__(self, epsilon: float, delta: float, orders: Sequence[float] = FILTER_ORDERS,
                 approx_delta: float = 0.0) -> None:
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, Fraction)) or not (
                math.isfinite(epsilon) and epsilon > 0):
            raise InvalidParameterError(f"epsilon must be a finite number > 0, got {epsilon!r}")
        _check_delta(delta)
        if isinstance(approx_delta, bool) or not isinstance(approx_delta, (int, float, Fraction)) or not (
                0 <= approx_delta < delta):
            raise InvalidParameterError(
                f"approx_delta (the delta set aside for (epsilon, delta) steps) must be >= 0 and below delta="
                f"{delta}, got {approx_delta!r}", parameter="approx_delta")
        self.epsilon, self.delta, self.approx_delta = float(epsilon), float(delta), float(approx_delta)
        self._conversion_delta = float(Fraction(delta) - Fraction(approx_delta))
        self.approx_spent = 0.0
        ords = _check_orders(orders)
        kept = [a for a in ords if self._budget(a, len(ords)) > 0]
        if not kept:
            raise InvalidParameterError(
                f"no order in {list(ords)} leaves a positive Rényi budget at epsilon={epsilon}, delta={delta}: "
                "add larger orders or raise epsilon")
        self.orders: tuple[float, ...] = tuple(kept)
        self.budgets = np.array([self._budget(a, len(kept)) for a in kept])
        self.spent = np.zeros(len(kept))

    @classmethod
    def for_workload(cls, epsilon: float, delta: float, expected: Iterable[PrivacyLoss],
                     candidates: Sequence[float] = DEFAULT_ORDERS, approx_delta: float = 0.0) -> "RenyiFilter":
        """A one-order filter whose order is the candidate at which the ``expected`` releases use
        the smallest share of their budget (no delta split, the tightest filter for a workload
        known roughly in advance). The releases actually spent may still be chosen adaptively:
        the order is fixed from public plans before any release runs."""
        probe = cls(epsilon, delta, candidates, approx_delta)
        need = np.zeros(len(probe.orders))
        for loss in expected:
            need = need + rdp_curve(loss, probe.orders, hybrid=approx_delta > 0)
        share = [n / cls(epsilon, delta, (a,), approx_delta).budgets[0] for a, n in zip(probe.orders, need)]
        return cls(epsilon, delta, (probe.orders[int(np.argmin(share))],), approx_delta)

    def _budget(self, alpha: float, k: int) -> float:
        return self.epsilon - math.log1p(-1 / alpha) + math.log(alpha * self._conversion_delta / k) / (alpha - 1)

    def cost(self, loss: PrivacyLoss) -> np.ndarray:
        """The release's Rényi curve at the filter's orders (an (epsilon, delta) step counted by
        the hybrid rule when delta is set aside for such steps, refused otherwise)."""
        return rdp_curve(loss, self.orders, hybrid=self.approx_delta > 0)

    def _refusal(self, loss: PrivacyLoss) -> tuple[np.ndarray, float, str | None]:
        after, d = self.spent + self.cost(loss), self.approx_spent + approx_delta(loss)
        if Fraction(d) > Fraction(self.approx_delta):
            return after, d, (f"its (epsilon, delta) steps would bring their deltas to {d:.3g}, above the "
                              f"{self.approx_delta:.3g} set aside for them")
        if not np.any(after <= self.budgets):
            return after, d, f"it would exceed the budget at every Rényi order {list(self.orders)}"
        return after, d, None

    def can_afford(self, loss: PrivacyLoss) -> bool:
        """Whether :meth:`spend` would accept the release."""
        return self._refusal(loss)[2] is None

    def spend(self, loss: PrivacyLoss) -> None:
        """Charge the release, or raise BudgetExceededError and charge nothing."""
        after, d, why = self._refusal(loss)
        if why is not None:
            raise BudgetExceededError(
                f"this release does not fit the (epsilon={self.epsilon}, delta={self.delta}) budget: {why}; it "
                "was not charged: spend less or start a new budget")
        self.spent, self.approx_spent = after, d

    def epsilon_spent(self) -> float:
        """The epsilon at (delta - approx_delta) / k that the best order's running sum converts to so
        far (at most ``epsilon`` while the filter accepts; the filter's guarantee is (epsilon, delta))."""
        k = len(self.orders)
        eps, _ = _dp().rdp.rdp_privacy_accountant.compute_epsilon(self.orders, self.spent,
                                                                  self._conversion_delta / k)
        return float(eps)
