"""Audits of the continual counters: the registered specs pass (tests/statistical/test_audit.py
audits every registered spec), and planted bugs built here fail: the tree's Laplace scale halved,
and the Toeplitz counter's noise standard deviation quartered, each still claiming the plan's
budget. The library has no broken code path."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest
from audit_registry.streams import stream_spec

from dptree.testing import audit


def _bug(name: str, factor: Fraction) -> audit.MechanismSpec:
    spec = audit.get(name)
    plan = spec.extra["plan"]
    bug = dataclasses.replace(plan, parameter=plan.parameter * factor)
    return stream_spec(f"bug/{name}", plan=bug, epsilon=spec.epsilon, delta=spec.delta, claimed=plan)


PLANTED = {
    "tree_laplace_scale_halved": lambda: _bug("stream/tree/laplace/add_remove", Fraction(1, 2)),
    "toeplitz_gaussian_sigma_quartered": lambda: _bug("stream/toeplitz/gaussian/add_remove", Fraction(1, 16)),
}


@pytest.mark.parametrize("bug", sorted(PLANTED))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_audit_catches_planted_stream_bug(bug: str, seed: int) -> None:
    report = audit.audit(PLANTED[bug](), config=audit.FAST, seed=seed)
    assert not report.passed, report.summary()


@pytest.mark.parametrize("name", ["stream/tree/laplace/add_remove", "stream/toeplitz/gaussian/add_remove"])
def test_stream_batches_are_the_counter_outputs(name: str) -> None:
    """The audit's batched runs (the core's linear map applied to the sampler's draws) equal the
    library's counter on the same draws."""
    import numpy as np
    from audit_registry.streams import BASE, stream_batch

    from dptree.stream.counter import Counter

    spec = audit.get(name)
    p = spec.extra["plan"].parameters()
    c = Counter(p["horizon"], epsilon=p["epsilon"], delta=p["delta"], rho=p["rho"], noise=p["noise"],
                mechanism=p["mechanism"], rng=np.random.Generator(np.random.PCG64(9)))
    est, _ = c.append(BASE)
    assert np.allclose(stream_batch(spec.extra["plan"], BASE, 1, 9)[0], est, rtol=1e-12, atol=1e-9)
