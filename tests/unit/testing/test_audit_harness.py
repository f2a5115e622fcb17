"""The audit harness itself, without large samples: Clopper-Pearson and the epsilon
bound, determinism, batched samplers equal to the library's releases, the registry and its
completeness check, privacy statements against brute-force sensitivities, and that the harness
draws no randomness. The audits of every registered mechanism and the planted bugs are in
tests/statistical/test_audit.py.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import audit_registry
import numpy as np
import pytest
from audit_registry.range_trees import range_tree_leaf_histogram, range_tree_noised_counts
from scipy.stats import beta

import dptree
from dptree.privacy.budget import discrete_gaussian_delta, zcdp_epsilon
from dptree.rangetree.release import plan_range_tree
from dptree.testing import audit

SPECS = audit.registered()
RANGE_TREE_IDS = [s.name for s in SPECS if isinstance(s.extra.get("plan"), dptree.RangeTreePlan)]  # need one
BASE = [1, 2, 2, 4, 5, 5]


# --------------------------------------------------------------------------- the statistics


def test_clopper_pearson_matches_beta_quantiles() -> None:
    lo, hi = audit.clopper_pearson(30, 100, 0.01)
    assert lo == pytest.approx(beta.ppf(0.01, 30, 71))
    assert hi == pytest.approx(beta.ppf(0.99, 31, 70))
    assert audit.clopper_pearson(0, 100, 0.01)[0] == 0.0
    assert audit.clopper_pearson(100, 100, 0.01)[1] == 1.0
    # zero successes: the upper bound is 1 - alpha^(1/n)
    assert audit.clopper_pearson(0, 1000, 0.01)[1] == pytest.approx(1 - 0.01 ** (1 / 1000))


def test_epsilon_lower_bound_accounts_for_delta() -> None:
    eps0, pa, pb = audit.epsilon_lower_bound(5000, 1000, 10_000, 1e-3, 0.0)
    assert eps0 == pytest.approx(math.log(pa / pb))
    eps1, pa1, pb1 = audit.epsilon_lower_bound(5000, 1000, 10_000, 1e-3, 0.1)
    assert (pa1, pb1) == (pa, pb)
    assert eps1 == pytest.approx(math.log((pa - 0.1) / pb))
    assert eps1 < eps0
    # delta larger than the whole probability: no evidence at all
    assert audit.epsilon_lower_bound(10, 0, 10_000, 1e-3, 0.5)[0] == -math.inf


def test_audit_is_deterministic_given_its_seed() -> None:
    spec = audit.get("range_tree/laplace/add_remove")
    pair = next(iter(spec.worst_cases()))
    cfg = audit.AuditConfig(n_select=2000, n_eval=3000)
    a = audit.audit_pair(spec, pair, config=cfg, seed=7)
    b = audit.audit_pair(spec, pair, config=cfg, seed=7)
    c = audit.audit_pair(spec, pair, config=cfg, seed=8)
    assert a == b
    assert (a.count_a, a.count_b) != (c.count_a, c.count_b)


# --------------------------------------------------------------------------- batched releases


@pytest.mark.parametrize("name", RANGE_TREE_IDS)
def test_batched_sampler_is_the_library_release(name: str) -> None:
    """n = 1 of the batched sampler reproduces range_tree(values, rng=seed) draw for draw."""
    spec = audit.get(name)
    plan = spec.extra["plan"]
    values = BASE if plan.domain.kind == "integer" else [0.3, 0.5, 1.0]
    for seed in (0, 1, 12345):
        batch = spec.sample(values, 1, seed)
        params = plan.statement["budget_requested"]
        rel = dptree.range_tree(
            values, lower=plan.domain.lower, upper=plan.domain.upper,
            width=plan.domain.width if plan.domain.kind == "float" else None,
            epsilon=params["epsilon"], delta=params["delta"] or 0.0, rho=params["rho"],
            branching=plan.layout.branching, noise=plan.noise, neighbors=plan.neighbors,
            max_contributions=plan.max_contributions, levels=plan.levels, rng=seed,
        )
        direct = np.concatenate([m for m, p in zip(rel.measurements, plan.noise_parameters) if p is not None])
        np.testing.assert_array_equal(batch[0], direct)


# --------------------------------------------------------------------------- registry


def test_every_public_mechanism_is_registered() -> None:
    assert audit.unregistered_public_mechanisms() == [], (
        "public functions that may release something have no audit spec: register them in "
        "tests/audit_registry/ (see docs/notes/verification.md) or, if they release nothing, add them to NOT_MECHANISMS"
    )


def test_registry_check_has_teeth(monkeypatch: pytest.MonkeyPatch) -> None:
    def future_mechanism(*args, **kwargs):  # a new public release function nobody registered
        return None

    monkeypatch.setattr(dptree, "future_mechanism", future_mechanism, raising=False)
    monkeypatch.setattr(dptree, "__all__", list(dptree.__all__) + ["future_mechanism"])
    assert audit.unregistered_public_mechanisms() == ["future_mechanism"]


def test_registry_specs_are_well_formed() -> None:
    names = set()
    for spec in SPECS:
        assert spec.name not in names
        names.add(spec.name)
        assert spec.epsilon > 0 and 0 <= spec.delta < 1
        assert all(c in dptree.__all__ for c in spec.covers), spec.name
        pairs = list(spec.worst_cases())
        assert pairs, spec.name
    with pytest.raises(dptree.InvalidParameterError):
        audit.register(dataclasses.replace(SPECS[0], name="bad", epsilon=0.0))


def test_repeat_runs_one_release_per_output() -> None:
    plan = audit.get("range_tree/laplace/add_remove").extra["plan"]
    calls = []

    def run(values, seed):
        calls.append(seed)
        rel = plan.release(range_tree_leaf_histogram(plan, values), rng=seed)
        return rel.measurements[-1]

    sample = audit.repeat(run)
    out = sample(BASE, 5, 3)
    assert out.shape == (5, plan.layout.padded_size)
    assert len(set(calls)) == 5
    np.testing.assert_array_equal(sample(BASE, 5, 3), out)


# --------------------------------------------------------------------------- statements vs brute force


def _relation(spec: audit.MechanismSpec) -> tuple[str, int]:
    plan = spec.extra["plan"]
    return ("replace" if plan.neighbors == "replace" else "add_remove"), plan.max_contributions


@pytest.mark.parametrize("name", RANGE_TREE_IDS)
def test_statement_sensitivity_is_the_brute_force_maximum(name: str) -> None:
    """Over all neighboring datasets with <= 2 records on the spec's own domain, the L1/L2
    sensitivity in the privacy statement equals the brute-force maximum (an upper bound, tight)."""
    spec = audit.get(name)
    plan = spec.extra["plan"]
    relation, k = _relation(spec)
    D, P = plan.domain.size, plan.layout.padded_size

    def query(h: np.ndarray) -> np.ndarray:
        return range_tree_noised_counts(plan, np.concatenate([h, np.zeros(P - D, np.int64)]))

    pairs = audit.neighboring_datasets(D, max_records=2 if k == 1 else 1, relation=relation, k=k)
    l1, l2 = audit.brute_force_sensitivity(query, pairs)
    assert plan.statement["l1_sensitivity"] == pytest.approx(l1, rel=1e-12)
    assert plan.statement["l2_sensitivity"] == pytest.approx(l2, rel=1e-12)


@pytest.mark.parametrize("name", RANGE_TREE_IDS)
def test_statement_budget_is_within_the_claim(name: str) -> None:
    """Re-derive the spent budget from the exact noise parameters and the per-level sensitivity."""
    spec = audit.get(name)
    plan = spec.extra["plan"]
    relation, k = _relation(spec)
    sens_l1 = 2 * k if relation == "replace" else k
    sens_l2sq = 2 * k * k if relation == "replace" else k * k
    if plan.noise == "laplace":
        spent = sum(Fraction(sens_l1) / p for p in plan.noise_parameters if p is not None)
        assert float(spent) <= spec.epsilon * (1 + 1e-12)
        assert plan.statement["budget_spent"]["epsilon"] == pytest.approx(float(spent))
    elif "implied_rho" in plan.statement["calibration"]:
        # exact discrete-Gaussian accounting: one sigma^2 on every noised level, m unit shifts
        # (k = 1: one count per level, two under replace), delta(epsilon) recomputed from scratch
        sig = {p for p in plan.noise_parameters if p is not None}
        assert len(sig) == 1 and k == 1
        m = sum(sens_l2sq for p in plan.noise_parameters if p is not None)
        assert plan.statement["calibration"]["unit_shifts"] == m
        assert discrete_gaussian_delta(spec.epsilon, float(sig.pop()), m) <= spec.delta
        assert plan.statement["budget_spent"] == {"epsilon": spec.epsilon, "delta": spec.delta}
    else:
        rho = sum(Fraction(sens_l2sq) / (2 * p) for p in plan.noise_parameters if p is not None)
        assert plan.statement["budget_spent"]["rho"] == pytest.approx(float(rho))
        assert zcdp_epsilon(float(rho), spec.delta) <= spec.epsilon * (1 + 1e-9)


def test_brute_force_detects_an_understated_sensitivity() -> None:
    """The brute-force helper finds what the statement would hide (teeth for the check above)."""
    plan = plan_range_tree(lower=0, upper=7, epsilon=1.0, branching=2, neighbors="replace")
    query = lambda h: range_tree_noised_counts(plan, h)  # noqa: E731
    l1, _ = audit.brute_force_sensitivity(query, audit.neighboring_datasets(8, 2, "replace"))
    l1_add, _ = audit.brute_force_sensitivity(query, audit.neighboring_datasets(8, 2, "add_remove"))
    assert l1 == 2 * l1_add == 2 * 3  # 3 noised levels below the exact root


def test_audit_harness_draws_no_randomness() -> None:
    """The harness (every module of dptree.testing) and the registrations pass integer seeds to the
    mechanisms; only dptree.noise draws random numbers."""
    import ast
    import inspect
    import pkgutil

    import dptree.testing

    modules = [m.name for m in pkgutil.iter_modules(dptree.testing.__path__, "dptree.testing.")]
    assert {"dptree.testing.audit", "dptree.testing.statistics"} <= set(modules)
    sources = [inspect.getsource(__import__(m, fromlist=["_"])) for m in modules]
    sources += [inspect.getsource(getattr(audit_registry, m)) for m in audit_registry.__all__ if m != "REGISTRATIONS"]
    for source in sources:
        tree = ast.parse(source)
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        attrs = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        imports = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
        modules_used = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not ({"random", "secrets"} & (names | imports | modules_used))
        assert not ({"urandom", "default_rng", "random", "Generator", "SeedSequence"} & attrs)
        assert not any(m == "dptree.noise" or m.startswith("dptree.noise.") for m in modules_used)
        assert "noise" not in modules_used and "make_source" not in attrs

@pytest.mark.parametrize("method", ["laplace", "gaussian"])
def test_hierarchy_batch_is_the_library_release(method: str) -> None:
    """n = 1 of the batched hierarchy sampler reproduces hierarchy_counts(..., rng=seed) draw for draw."""
    spec = audit.get(f"hierarchy_counts/{method}/add_remove")
    h = spec.extra["hierarchy"]
    rows = [("a", "x"), ("b", "z")]
    for seed in (0, 7):
        batch = spec.sample(rows, 1, seed)
        rel = dptree.hierarchy_counts(rows, h, epsilon=spec.epsilon, delta=spec.delta, method=method, rng=seed)
        np.testing.assert_array_equal(batch[0], np.asarray(rel.measurements["y"]))
