"""The selection step: a plan from public parameters (its privacy loss and statement), and the one
private step that reads the data and returns the released keys.

Neighbouring relation: add or remove one user, all their records (``user_id=``), or one record
when there is no user column (each record is then its own user, with one key). The query: for
each key, the number of distinct users with a record of that key, after each user keeps at most
``max_groups`` of their distinct keys, drawn uniformly at random in every engine
(:class:`~dptree.data.engines.base.Partition` keys, :mod:`dptree.data.bounding`). Its sensitivity:
one user changes at most ``max_groups`` counts, each by one (L1 m, L2 sqrt(m), L-infinity 1), and
creates at most m keys of count 1. The policy (:mod:`dptree.partitions.policy`) makes the set of
keys released (epsilon, delta)-DP with exactly the epsilon and delta of the plan.

The keys released are the output of a DP mechanism: the caller may publish them. Nothing else
computed from the data leaves :meth:`SelectionPlan.select`: not the number of keys read, their
counts, or any key that was not released (no message or progress line names one).
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, Literal

import numpy as np

from dptree import noise as _noise
from dptree._validation import Interval, check_param
from dptree.errors import InvalidParameterError
from dptree.partitions.policy import GaussianPolicy, OptimalPolicy, Policy, choose_policy
from dptree.privacy.budget import check_delta
from dptree.privacy.loss import ApproxDP, PrivacyLoss
from dptree.privacy.statement import Neighbors

__all__ = ["SelectionPlan", "plan_selection", "MAX_GROUPS", "SHARE", "SELECTION_EPSILON"]

#: declared constraints of ``max_groups`` and of the share of a budget spent on the selection
MAX_GROUPS = [Interval(Integral, 1, 1 << 20, hint="e.g. max_groups=1 (the distinct keys one user may add to)")]
SHARE = [Interval(Real, 0, 1, closed="neither", hint="e.g. groups_share=0.5 (the share of epsilon spent selecting "
                                                      "the groups)")]
#: the epsilons the selection is planned for (the optimal policy tabulates about 2 ln(1/delta) / epsilon counts)
SELECTION_EPSILON = (1e-3, 50.0)


@dataclass(frozen=True)
class SelectionPlan:
    """Everything public about a partition selection (module docstring): the budget
    (``epsilon``, ``delta``), the bound ``max_groups`` on the distinct keys of one user, whether the
    unit is a user (``per_user``) or a record, and the policy that decides each key."""

    epsilon: float
    delta: float
    max_groups: int
    per_user: bool
    policy: Policy

    @property
    def parameters(self) -> dict[str, Any]:
        """The public parameters that re-derive this plan (:func:`plan_selection`)."""
        return {"epsilon": self.epsilon, "delta": self.delta, "max_groups": self.max_groups,
                "per_user": self.per_user}

    def measurements(self) -> tuple[ApproxDP, ...]:
        """The selection as one (epsilon, delta) step (its delta is exact: no rho, no curve)."""
        return (ApproxDP(self.epsilon, self.delta, f"partition selection ({self.policy_name})"),)

    def privacy_loss(self) -> PrivacyLoss:
        """The loss of the selection alone (neighbours: one user, or one record)."""
        return PrivacyLoss(Neighbors("add_remove", 1), self.measurements())

    @property
    def policy_name(self) -> str:
        return "optimal" if isinstance(self.policy, OptimalPolicy) else "gaussian"

    @property
    def unit(self) -> str:
        if not self.per_user:
            return "add or remove one record (each record its own user, with one key)"
        return (f"add or remove one user (all their records); each user counts once per key, in at most "
                f"{self.max_groups} of their distinct keys (drawn uniformly at random)")

    @property
    def statement(self) -> dict[str, Any]:
        """The selection's part of a release's privacy statement (public values only)."""
        pol = self.policy
        out: dict[str, Any] = {
            "mechanism": "private partition selection: the keys whose count of distinct users passes a randomized "
                         "threshold are released (keys absent from the data never are)",
            "neighbors": "add_remove",
            "unit": self.unit,
            "max_groups": self.max_groups,
            "sensitivity": f"one user changes at most {self.max_groups} key count(s) by 1 each (L2 "
                           f"sqrt({self.max_groups})) and adds at most {self.max_groups} key(s) of count 1",
            "guarantee": "(epsilon, delta)-DP",
            "budget_spent": {"epsilon": self.epsilon, "delta": self.delta},
            "policy": self.policy_name,
        }
        if isinstance(pol, OptimalPolicy):
            per_key = "" if self.max_groups == 1 else (
                f"; each key at (epsilon / {self.max_groups}, delta / {self.max_groups}), basic composition over "
                "the keys of one user")
            out["source"] = ("optimal thresholding: Desfontaines, Voss, Gipson & Mandayam, 'Differentially private "
                             "partition selection', PoPETs 2022, Theorem 1" + per_key)
            out["keep_probability"] = ("pi_0 = 0, pi_n = min(beta pi_(n-1) + delta, 1 - (1 - pi_(n-1) - delta) / beta, "
                                       f"1) rounded down to multiples of 2^-{pol.bits}, beta = {pol.base[0]} / "
                                       f"{pol.base[1]} <= e^epsilon")
            out["epsilon_per_key"], out["delta_per_key"] = pol.epsilon, pol.delta
            out["kept_surely_from"] = pol.always_kept
        else:
            assert isinstance(pol, GaussianPolicy)
            s2 = pol.sigma2
            out["source"] = ("Gaussian thresholding: Gopi, Gulhane, Kulkarni, Shen, Shokouhi & Yekhanin, "
                             "'Differentially private set union', ICML 2020")
            out.update({"sigma2": f"{s2.numerator}/{s2.denominator}", "threshold": pol.threshold,
                        "delta_split": pol.split, "delta_present_keys": pol.delta_gaussian,
                        "delta_new_keys": pol.delta_new, "calibration": pol.calibration})
        return out

    def keep(self, source: _noise.RandomSource, counts: np.ndarray) -> np.ndarray:
        """Whether each key of ``counts`` (its users, > 0) is released: the policy's draws."""
        return self.policy.keep(source, counts)

    def select(self, data: Any, *, by: Any, user_id: Any = None, rng: _noise.RngLike = None, fmt: str | None = None,
               unknown: Literal["error", "drop"] = "error") -> list[Any]:
        """The released keys of ``data`` (sorted: strings by code point, integers by value), read by
        its engine (:func:`dptree.data.histograms.partition_counts`): the one private step. One
        random source (``rng``) draws the bounding and the policy. ``unknown="drop"`` leaves out
        the rows without a key (missing), which otherwise raise."""
        from dptree.data.histograms import partition_counts

        if self.per_user and user_id is None:
            raise InvalidParameterError("this selection is planned per user: pass user_id=")
        if not self.per_user and user_id is not None:
            raise InvalidParameterError("this selection is planned per record: plan it with user_id to bound users")
        src = _noise.make_source(rng)
        keys, counts = partition_counts(data, by=by, user_id=user_id, max_groups=self.max_groups, rng=src, fmt=fmt,
                                        unknown=unknown)
        kept = self.keep(src, counts)
        return [k.item() if hasattr(k, "item") else k for k in keys[kept]]


def plan_selection(*, epsilon: float, delta: float, max_groups: int = 1, per_user: bool = True) -> SelectionPlan:
    """The plan of a partition selection at (``epsilon``, ``delta``) for users of at most
    ``max_groups`` distinct keys (one record's key when ``per_user`` is False), from public values
    only; the policy by :func:`~dptree.partitions.policy.choose_policy`."""
    lo, hi = SELECTION_EPSILON
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not lo <= float(epsilon) <= hi:
        raise InvalidParameterError(f"the selection's epsilon must be in [{lo:g}, {hi:g}], got {epsilon!r}; raise "
                                    "epsilon (or the share spent selecting the groups)", parameter="epsilon")
    d = check_delta(delta, required=True)
    check_param("max_groups", max_groups, MAX_GROUPS)
    if not per_user and int(max_groups) != 1:
        raise InvalidParameterError("max_groups bounds the distinct keys of one user: pass user_id= (without it each "
                                    "record is its own user, with one key)", parameter="max_groups")
    m = int(max_groups)
    return SelectionPlan(float(epsilon), float(d), m, bool(per_user), choose_policy(float(epsilon), float(d), m))
