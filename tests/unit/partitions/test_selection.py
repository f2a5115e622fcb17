"""The selection as a whole, exactly: the law of the released set of groups on tiny datasets
(every uniform draw of the kept groups, every keep decision) is (epsilon, delta)-DP between
neighbours that differ by one user, for one and for several groups per user; and the plan's
loss, statement and refusals."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from dptree.errors import InvalidParameterError
from dptree.partitions.policy import GaussianPolicy, OptimalPolicy, gaussian_policy
from dptree.partitions.selection import SelectionPlan, plan_selection

Users = dict[int, tuple[str, ...]]


def _keep_probability(plan: SelectionPlan, n: int) -> float | Fraction:
    pol = plan.policy
    if not isinstance(pol, GaussianPolicy):
        return pol.keep_probability(n)
    s2 = float(pol.sigma2)
    z = np.arange(-int(40 * math.sqrt(s2)) - 5, int(40 * math.sqrt(s2)) + 6)
    w = np.exp(-(z * z) / (2 * s2))
    return float(w[n + z >= pol.threshold].sum() / w.sum()) if n > 0 else 0.0


def output_law(plan: SelectionPlan, users: Users) -> dict[frozenset[str], Any]:
    """P[released set = S] for every S: each user keeps a uniform max_groups-subset of their groups
    (all of them when fewer), then each group is kept independently with its probability."""
    m = plan.max_groups
    choices = [list(itertools.combinations(sorted(set(g)), min(m, len(set(g))))) for g in users.values()]
    law: dict[frozenset[str], Any] = {}
    for pick in itertools.product(*choices):
        weight = Fraction(1, math.prod(len(c) for c in choices))
        counts: dict[str, int] = {}
        for kept in pick:
            for g in kept:
                counts[g] = counts.get(g, 0) + 1
        groups = sorted(counts)
        probs = {g: _keep_probability(plan, counts[g]) for g in groups}
        for bits in itertools.product((0, 1), repeat=len(groups)):
            p: Any = weight
            for g, b in zip(groups, bits):
                p = p * (probs[g] if b else 1 - probs[g])
            key = frozenset(g for g, b in zip(groups, bits) if b)
            law[key] = law.get(key, 0) + p
    return law


def hockey_stick(p: dict[frozenset[str], Any], q: dict[frozenset[str], Any], epsilon: float) -> float:
    """max over events E of P(E) - e^epsilon Q(E) (the smallest delta for this pair and direction)."""
    e = math.exp(epsilon)
    return float(sum(max(0.0, float(p.get(s, 0)) - e * float(q.get(s, 0))) for s in set(p) | set(q)))


D0: Users = {1: ("a",), 2: ("a", "b"), 3: ("b", "c", "a"), 4: ("c",)}
NEIGHBOURS = [  # (label, added user's groups)
    ("a user with one existing group", ("a",)),
    ("a user with a new group", ("z",)),
    ("a user with three groups, two new", ("a", "y", "z")),
    ("a user with two existing groups, one record twice", ("b", "c", "c")),
]


@pytest.mark.parametrize(("epsilon", "delta", "m"), [(1.0, 0.05, 1), (0.7, 0.02, 2), (1.0, 0.1, 3)])
def test_the_released_set_is_dp_between_users(epsilon: float, delta: float, m: int) -> None:
    plan = plan_selection(epsilon=epsilon, delta=delta, max_groups=m)
    assert isinstance(plan.policy, OptimalPolicy)
    base = output_law(plan, D0)
    for label, groups in NEIGHBOURS:
        other = output_law(plan, {**D0, 99: groups})
        for p, q in ((base, other), (other, base)):
            assert hockey_stick(p, q, epsilon) <= delta * (1 + 1e-12), label


def test_the_gaussian_policy_is_dp_between_users() -> None:
    """Its delta is a bound (the tail bound, the exact-convolution calibration): the law's own
    hockey-stick divergence stays below it, with float tolerance."""
    plan = SelectionPlan(1.0, 0.1, 3, True, gaussian_policy(1.0, 0.1, 3))
    tau = plan.policy.threshold  # type: ignore[union-attr]
    d0: Users = {i: ("a", "b") if i < tau else ("c",) for i in range(tau + 2)}
    base = output_law(plan, d0)
    for groups in (("a", "b", "c"), ("x", "y", "z"), ("a", "y")):
        other = output_law(plan, {**d0, 99: groups})
        for p, q in ((base, other), (other, base)):
            assert hockey_stick(p, q, 1.0) <= 0.1 + 1e-9


def test_a_policy_that_thresholds_the_true_count_is_not_dp() -> None:
    import dataclasses

    class Bug:
        bits = 1

        def keep_probability(self, n: int) -> Fraction:
            return Fraction(int(n >= 2))

    plan = dataclasses.replace(plan_selection(epsilon=1.0, delta=0.05), policy=Bug())  # type: ignore[arg-type]
    base, other = output_law(plan, D0), output_law(plan, {**D0, 99: ("c",)})  # c: 1 -> 2 users
    assert hockey_stick(other, base, 1.0) > 0.05


def test_the_plan_states_its_loss_and_refuses_what_it_cannot_state() -> None:
    plan = plan_selection(epsilon=0.5, delta=1e-6, max_groups=1)
    (step,) = plan.privacy_loss().measurements
    assert (step.family, step.epsilon, step.delta) == ("approx", 0.5, 1e-6)
    st = plan.statement
    assert st["neighbors"] == "add_remove" and st["budget_spent"] == {"epsilon": 0.5, "delta": 1e-6}
    assert "Desfontaines" in st["source"] and st["policy"] == "optimal" and "one user" in st["unit"]
    gauss = plan_selection(epsilon=1.0, delta=1e-6, max_groups=16).statement
    assert gauss["policy"] == "gaussian" and "Gopi" in gauss["source"]
    assert gauss["delta_present_keys"] + gauss["delta_new_keys"] <= 1e-6
    for bad in ({"delta": 0.0}, {"epsilon": 1e-4}, {"max_groups": 0}, {"max_groups": 2, "per_user": False}):
        with pytest.raises(InvalidParameterError):
            plan_selection(**{"epsilon": 1.0, "delta": 1e-6, **bad})  # type: ignore[arg-type]


def test_select_returns_sorted_released_groups() -> None:
    plan = plan_selection(epsilon=1.0, delta=1e-6)
    big = plan.policy.always_kept  # type: ignore[union-attr]
    groups = np.array(["z"] * big + ["b"] * big + ["lonely"], dtype=object)
    users = np.arange(groups.size)
    assert plan.select(None, by=groups, user_id=users, rng=1) == ["b", "z"]
    with pytest.raises(InvalidParameterError, match="user_id"):
        plan.select(None, by=groups, rng=1)
