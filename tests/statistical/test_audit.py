"""Empirical privacy audits: every registered mechanism passes, planted bugs fail.

The planted bugs are built here, in the tests (a RangeTreePlan with tampered noise parameters, a
textbook float Laplace mechanism using numpy's RNG); the library has no broken code path.
Sample sizes: ``audit.FAST`` (10 000 selection + 30 000 evaluation runs per dataset) in the fast
part, :data:`SLOW_PASS` (4x) for every registered mechanism under the ``slow`` marker (a spec's own
``slow`` sizes where it sets them), ``audit.SLOW`` (10x) for the planted bugs. Significance 1e-3
per audited pair.
The harness's own checks (statistics, registry, brute-force sensitivities) are in
tests/unit/testing/test_audit_harness.py; the registrations in tests/audit_registry/.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest
from _float_laplace import producible_from_zero, textbook_laplace
from audit_registry.range_trees import (
    private_bounds_spec,
    range_tree_leaf_histogram,
    range_tree_noised_counts,
    range_tree_spec,
)
from audit_registry.range_sums import SUM_PAIRS, range_sums_spec
from audit_registry.user_bounding import _users, private_contributions_plan, private_contributions_spec

import dptree
from dptree.rangetree.bounds import BoundsSearch
from dptree.rangetree.release import plan_range_tree
from dptree.testing import audit

SPECS = audit.registered()
SPEC_IDS = [s.name for s in SPECS]
BASE = [1, 2, 2, 4, 5, 5]


# --------------------------------------------------------------------------- batched releases


def test_batched_copies_are_independent_and_centred() -> None:
    spec = audit.get("range_tree/laplace/add_remove")
    plan = spec.extra["plan"]
    hist = range_tree_leaf_histogram(plan, BASE)
    out = spec.sample(BASE, 40_000, 3).astype(np.float64)
    truth = range_tree_noised_counts(plan, hist)
    noise = out - truth
    scale = float(plan.noise_parameters[1])
    var = dptree.noise.discrete_laplace_variance(scale)
    # mean 0 and the discrete Laplace variance on every node (4 sigma tolerances)
    se_mean = math.sqrt(var / out.shape[0])
    assert np.all(np.abs(noise.mean(axis=0)) < 5 * se_mean)
    assert np.all(np.abs(noise.var(axis=0) / var - 1) < 0.06)
    # copies do not share noise: correlation between consecutive copies ~ 0
    r = np.corrcoef(noise[:-1, 0], noise[1:, 0])[0, 1]
    assert abs(r) < 5 / math.sqrt(out.shape[0])


# --------------------------------------------------------------------------- correct mechanisms


@pytest.mark.parametrize("name", SPEC_IDS)
def test_registered_mechanism_passes_audit(name: str) -> None:
    spec = audit.get(name)
    report = audit.audit(spec, config=spec.extra.get("fast", audit.FAST), seed=2026)
    assert report.passed, report.summary()
    assert len(report.pairs) >= 1
    if name == "range_tree/laplace/add_remove":
        # the audit is tight for pure Laplace: it would see a modest violation
        assert report.epsilon_lower_bound > 0.85, report.summary()


#: the sample sizes of the slow audit of a registered mechanism that sets none of its own
SLOW_PASS = audit.AuditConfig(n_select=40_000, n_eval=120_000)


@pytest.mark.slow
@pytest.mark.parametrize("name", SPEC_IDS)
def test_registered_mechanism_passes_audit_slow(name: str) -> None:
    spec = audit.get(name)
    report = audit.audit(spec, config=spec.extra.get("slow", SLOW_PASS), seed=4242)
    assert report.passed, report.summary()


# --------------------------------------------------------------------------- planted bugs


def _tampered(plan: dptree.RangeTreePlan, factor: Fraction | None = None, params: list | None = None) -> dptree.RangeTreePlan:
    new = params if params is not None else [None if p is None else p * factor for p in plan.noise_parameters]
    return dataclasses.replace(plan, noise_parameters=new)


def _bug_sensitivity_one_level_short() -> audit.MechanismSpec:
    # D = 8, b = 2: 3 noised levels. The buggy code believes the L1 sensitivity is 2 and uses
    # scale 2/eps per level instead of 3/eps: it is 1.5-DP, not 1-DP.
    plan = plan_range_tree(lower=0, upper=7, epsilon=1.0, branching=2)
    L = sum(p is not None for p in plan.noise_parameters)
    bug = _tampered(plan, Fraction(L - 1, L))
    return range_tree_spec(
        "bug/sensitivity_one_level_short", plan=bug, epsilon=1.0, delta=0.0, covers=(),
        pairs=[("add one record (changes every level)", [3, 6], [3, 6, 5])],
    )


def _bug_half_noise() -> audit.MechanismSpec:
    plan = audit.get("range_tree/laplace/add_remove").extra["plan"]
    return range_tree_spec(
        "bug/half_noise_scale", plan=_tampered(plan, Fraction(1, 2)), epsilon=1.0, delta=0.0, covers=(),
        pairs=[("add one record (changes every level)", BASE, BASE + [3])],
    )


def _bug_replace_as_add_remove() -> audit.MechanismSpec:
    # The claim is about replace neighbors, but each level's noise is calibrated to the
    # add/remove sensitivity 1 instead of 2.
    replace = plan_range_tree(lower=0, upper=5, epsilon=1.0, branching=3, neighbors="replace")
    add_remove = plan_range_tree(lower=0, upper=5, epsilon=1.0, branching=3)
    bug = _tampered(replace, params=[None] + list(add_remove.noise_parameters[1:]))
    return range_tree_spec(
        "bug/replace_charged_as_add_remove", plan=bug, epsilon=1.0, delta=0.0, covers=(),
        neighbors="replace",
        pairs=[("replace: lowest leaf -> highest leaf", BASE + [0], BASE + [5])],
    )


def _bug_float_laplace() -> audit.MechanismSpec:
    # A counting query with textbook floating-point Laplace noise of scale 1/eps (Mironov 2012).
    scale = 1.0

    def sample(count: int, n: int, seed: int) -> np.ndarray:
        return textbook_laplace(float(count), scale, n, seed)

    def worst_cases():
        stat = lambda y: producible_from_zero(y, scale).astype(np.float64)  # noqa: E731
        yield audit.NeighborPair("count 0 vs count 1", 0, 1, statistic=stat)

    return audit.MechanismSpec(
        name="bug/textbook_float_laplace", covers=(), neighbors="add_remove", epsilon=1.0, delta=0.0,
        sample=sample, worst_cases=worst_cases,
    )


def _bug_private_bounds_quarter_noise() -> audit.MechanismSpec:
    # the search runs at 4x the claimed budget (a quarter of the noise)
    return private_bounds_spec(
        "bug/private_bounds_quarter_noise", search=BoundsSearch(4.0), claimed=BoundsSearch(1.0),
        pairs=[("add a record far above a small mass", [33], [33, 33])],
    )


def _bug_contributions_true_maximum() -> audit.MechanismSpec:
    # max_contributions chosen as the largest record count of any user (capped), with no noise
    def true_maximum(plan, per_user, src):  # noqa: ANN001, ANN202
        return int(np.flatnonzero(per_user).max()) if per_user.any() else 1

    return private_contributions_spec(
        "bug/contributions_true_maximum", plan=private_contributions_plan(), choose=true_maximum,
        exact_statistic=False, pairs=[("add a user with more records than any other", _users([1, 2, 3]),
                                       _users([1, 2, 3, 6]))],
    )


def _bug_sum_sensitivity_half() -> audit.MechanismSpec:
    # the sum tree's noise calibrated to half the weight bound (B / 2 instead of max(|lo|, |hi|) = B)
    plan = audit.get("range_sums/laplace/add_remove").extra["sums_plan"]
    bug = dataclasses.replace(plan, sums=_tampered(plan.sums, Fraction(1, 2)))
    return range_sums_spec("bug/sum_sensitivity_half", plan=bug, claimed=plan, pairs=SUM_PAIRS[:1], epsilon=1.0,
                           covers=())


PLANTED = {
    "sum_sensitivity_half": _bug_sum_sensitivity_half,
    "contributions_true_maximum": _bug_contributions_true_maximum,
    "private_bounds_quarter_noise": _bug_private_bounds_quarter_noise,
    "sensitivity_one_level_short": _bug_sensitivity_one_level_short,
    "half_noise_scale": _bug_half_noise,
    "replace_charged_as_add_remove": _bug_replace_as_add_remove,
    "textbook_float_laplace": _bug_float_laplace,
}


@pytest.mark.parametrize("bug", sorted(PLANTED))
@pytest.mark.parametrize("seed", [0, 1])
def test_audit_catches_planted_bug(bug: str, seed: int) -> None:
    report = audit.audit(PLANTED[bug](), config=audit.FAST, seed=seed)
    assert not report.passed, report.summary()


@pytest.mark.slow
@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_audit_catches_planted_bug_slow(bug: str) -> None:
    report = audit.audit(PLANTED[bug](), config=audit.SLOW, seed=99)
    assert not report.passed, report.summary()


def test_float_laplace_leak_is_a_precision_leak() -> None:
    """The textbook mechanism's outputs from count 0 are always in its x=0 image, from count 1 mostly not."""
    y0 = textbook_laplace(0.0, 1.0, 20_000, 5)
    y1 = textbook_laplace(1.0, 1.0, 20_000, 6)
    assert producible_from_zero(y0, 1.0).all()
    assert producible_from_zero(y1, 1.0).mean() < 0.5
