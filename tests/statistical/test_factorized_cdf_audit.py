"""Audit of the factorised CDF: the registered spec passes (tests/statistical/test_audit.py
audits every registered spec) and planted bugs built here fail: sigma^2 calibrated to the
sensitivity of the unrounded C (a column norm 2^p times too small) and sigma quartered, each still
claiming the plan's budget. The library has no broken code path."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest
from audit_registry.factorized_cdf import BASE, factorized_batch, factorized_spec

from dptree import noise as _noise
from dptree.stream import toeplitz
from dptree.testing import audit

NAME = "range_tree/factorization/gaussian/add_remove"


def _bug(sigma2: Fraction) -> audit.MechanismSpec:
    spec = audit.get(NAME)
    plan = spec.extra["plan"]
    return factorized_spec(f"bug/{NAME}", plan=dataclasses.replace(plan, sigma2=_noise.gaussian_sigma2_used(sigma2)),
                           epsilon=spec.epsilon, delta=spec.delta, claimed=plan)


def _unrounded_c() -> audit.MechanismSpec:
    plan = audit.get(NAME).extra["plan"]
    c = toeplitz.sqrt_coefficients(plan.domain.size)
    rho = Fraction(plan.budget.as_rho())
    return _bug(Fraction(math.fsum((c * c).tolist())) / (2 * rho))


PLANTED = {"sensitivity_of_C_not_C_lattice": _unrounded_c,
           "sigma_quartered": lambda: _bug(audit.get(NAME).extra["plan"].sigma2 / 16)}


@pytest.mark.parametrize("bug", sorted(PLANTED))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_audit_catches_planted_factorization_bug(bug: str, seed: int) -> None:
    report = audit.audit(PLANTED[bug](), config=audit.FAST, seed=seed)
    assert not report.passed, report.summary()


def test_the_registered_spec_passes() -> None:
    report = audit.audit(audit.get(NAME), config=audit.FAST, seed=0)
    assert report.passed, report.summary()


def test_the_audit_batch_is_the_release() -> None:
    plan = audit.get(NAME).extra["plan"]
    rel = plan.release(np.asarray(BASE, dtype=np.int64), rng=9)
    assert np.allclose(factorized_batch(plan, BASE, 1, 9)[0], rel.cdf(np.arange(4)), rtol=1e-12, atol=1e-9)
