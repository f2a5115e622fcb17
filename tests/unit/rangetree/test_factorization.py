"""The factorised CDF (:mod:`dptree.rangetree.factorization`): sensitivities brute-forced on tiny
domains, the exact lattice query, the exact prefix and range variances against the dense B and
against Monte Carlo, the average-variance closed forms, the choice rule, save/load and refusals."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

import dptree
from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.rangetree.cdf_choice import (
    choose_cdf_plan,
    factorized_average_prefix_variance,
    tree_average_prefix_variance,
)
from dptree.rangetree.factorization import (
    lattice_query,
    sensitivity_squared,
    unit_average_prefix_variance,
    unit_average_range_variance,
)
from dptree.rangetree.factorized_release import FactorizedCDF, plan_factorized_cdf
from dptree.stream import toeplitz


def _cmat(D: int) -> np.ndarray:
    ci = toeplitz.lattice_coefficients(D, toeplitz.lattice_bits(D)).astype(object)
    return np.array([[ci[i - j] if i >= j else 0 for j in range(D)] for i in range(D)], dtype=object)


def _vectors(D: int, k: int):
    """Every non-negative integer vector of length D with sum <= k."""
    for d in itertools.product(range(k + 1), repeat=D):
        if sum(d) <= k:
            yield np.array(d, dtype=object)


@pytest.mark.parametrize("D", [1, 2, 3, 5, 6])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_add_remove_sensitivity_is_the_brute_force_maximum(D: int, k: int) -> None:
    C = _cmat(D)
    worst = max(int(sum(v * v for v in C.dot(d))) for d in _vectors(D, k))
    assert sensitivity_squared(D, "add_remove", k) == worst


@pytest.mark.parametrize("D", [2, 3, 5])
@pytest.mark.parametrize("k", [1, 2])
def test_replace_sensitivity_bounds_the_brute_force_maximum(D: int, k: int) -> None:
    C = _cmat(D)
    moves = [(p, m) for p in _vectors(D, k) for m in _vectors(D, k) if sum(p) == sum(m) == k]
    worst = max(int(sum(v * v for v in C.dot(p - m))) for p, m in moves)
    bound = sensitivity_squared(D, "replace", k)
    assert worst <= bound < 2 * worst + 1  # sound, and within a factor 2 of the exact maximum


def test_the_lattice_query_is_the_exact_integer_convolution() -> None:
    rng = np.random.default_rng(3)
    for D in (1, 7, 64, 300):
        bits = toeplitz.lattice_bits(D)
        x = rng.integers(0, 1 << 40, D, dtype=np.int64) if D < 100 else rng.integers(0, 5000, D, dtype=np.int64)
        exact = np.convolve(toeplitz.lattice_coefficients(D, bits).astype(object), x.astype(object))[:D]
        assert lattice_query(x, bits).tolist() == [int(v) for v in exact]


def _dense_cov(plan) -> np.ndarray:
    """Cov of the D + 1 released prefixes (prefix 0 empty) from the dense B."""
    D = plan.domain.size
    b = np.asarray(toeplitz.post_coefficients(D, plan.bits))
    B = np.zeros((D + 1, D))
    for t in range(1, D + 1):
        B[t, :t] = b[:t][::-1]
    return B @ B.T * plan.unit_variance


@pytest.mark.parametrize("D", [5, 40])
def test_every_range_variance_equals_the_dense_covariance(D: int) -> None:
    plan = plan_factorized_cdf(lower=0, upper=D - 1, rho=0.5)
    rel = plan.release(np.zeros(D, dtype=np.int64), rng=1)
    cov = _dense_cov(plan)
    lo, hi = np.array([(a, b) for a in range(D) for b in range(a, D)]).T
    want = cov[hi + 1, hi + 1] + cov[lo, lo] - 2 * cov[lo, hi + 1]
    assert np.allclose(rel.stderr(lo, hi) ** 2, want, rtol=1e-9, atol=1e-9)
    assert np.allclose(rel.cdf_stderr(np.arange(D)) ** 2, np.diag(cov)[1:], rtol=1e-9)
    assert np.allclose(plan.prefix_variances(), np.diag(cov), rtol=1e-9, atol=1e-12)
    # the closed forms of the two averages
    assert unit_average_prefix_variance(D) * plan.unit_variance == pytest.approx(np.mean(np.diag(cov)[1:]), rel=1e-9)
    assert unit_average_range_variance(D) * plan.unit_variance == pytest.approx(np.mean(want), rel=1e-9)


def test_prefix_and_range_variances_match_monte_carlo() -> None:
    D, runs = 48, 2000
    plan = plan_factorized_cdf(lower=0, upper=D - 1, rho=0.5)
    x = np.arange(D, dtype=np.int64) % 5
    truth = np.concatenate([[0], np.cumsum(x)])
    lo = np.array([0, 0, 10, 30, 47, 5])
    hi = np.array([0, 47, 20, 47, 47, 6])
    errs = []
    for seed in range(runs):
        rel = plan.release(x, rng=seed)
        errs.append(rel.count(lo, hi) - (truth[hi + 1] - truth[lo]))
    errs = np.array(errs)
    assert np.allclose(errs.mean(axis=0), 0, atol=4 * rel.stderr(lo, hi) / np.sqrt(runs))
    assert np.allclose(errs.var(axis=0), rel.stderr(lo, hi) ** 2, rtol=0.10)


def test_paper_variance_figure_at_1024() -> None:
    """Average prefix variance of the rounded square root, in units of the unrounded column norm
    (sum_{k<T} c_k^2 per unit noise on C x): 4.83 / rho at T = 2^10 (docs/notes/stream.md)."""
    plan = plan_factorized_cdf(lower=0, upper=1023, rho=1.0)
    assert factorized_average_prefix_variance(plan) == pytest.approx(4.835, rel=0.01)


def test_the_cdf_choice_takes_the_lower_exact_average() -> None:
    for upper in (3, 7, 15, 1023):
        args = dict(lower=0, upper=upper, epsilon=None, delta=0.0, rho=0.5, width=None, noise="gaussian",
                    neighbors="add_remove", max_contributions=1)
        chosen = choose_cdf_plan("cdf", **args)
        f = factorized_average_prefix_variance(choose_cdf_plan("factorization", **args))
        t = tree_average_prefix_variance(dptree.plan_range_tree(levels="prefix", **args))
        assert (type(chosen).__name__ == "FactorizedCDFPlan") == (f < t)
    laplace = choose_cdf_plan("cdf", lower=0, upper=99, epsilon=1.0, delta=0.0, rho=None, width=None,
                              noise="laplace", neighbors="add_remove", max_contributions=1)
    assert laplace.levels == "prefix"


def test_range_tree_entry_point_answers_every_query() -> None:
    ages = 18 + np.arange(5000) % 73
    rel = dptree.range_tree(ages, lower=0, upper=127, rho=1.0, noise="gaussian", levels="factorization", rng=3)
    assert isinstance(rel, FactorizedCDF) and not rel.private
    assert abs(rel.count(30, 39) - 690) < 6 * rel.stderr(30, 39)
    assert rel.total() == pytest.approx(rel.cdf(127))
    assert 45 <= rel.quantile(0.5) <= 63
    low, high = rel.quantile_ci(0.5)
    assert low <= rel.quantile(0.5) <= high
    assert len(rel.to_frame()) == 128 and len(rel.histogram([0, 50, 127]).to_frame()) == 2
    assert rel.privacy["guarantee"] == "rho-zCDP" and rel.privacy["budget_spent"]["rho"] <= 1.0
    loss = rel.plan.privacy_loss()
    assert loss.rho() <= 1.0 and loss.rho() == pytest.approx(1.0, rel=1e-3)


def test_user_level_release_states_k_squared_sensitivity() -> None:
    vals = np.arange(300) % 20
    users = np.arange(300) // 3
    rel = dptree.range_tree(vals, lower=0, upper=19, rho=1.0, noise="gaussian", levels="factorization",
                            user_id=users, max_contributions=3, rng=2)
    assert rel.privacy["noise"]["l2_sensitivity_squared"] == 9 * sensitivity_squared(20, "add_remove", 1)


def test_save_load_and_edited_files_are_refused(tmp_path) -> None:
    rel = dptree.range_tree(np.arange(100) % 10, lower=0, upper=9, epsilon=1.0, delta=1e-6, noise="gaussian",
                            levels="factorization", rng=4)
    path = tmp_path / "f.json"
    rel.save(path, allow_nonprivate=True)
    back = dptree.load(path)
    assert isinstance(back, FactorizedCDF)
    assert np.allclose(back.count(np.arange(10), 9), rel.count(np.arange(10), 9))
    assert back.privacy == rel.privacy
    doc = json.loads(path.read_text())
    for edit in (lambda d: d["measurements"].__setitem__("noise_parameter", "1/1"),
                 lambda d: d["privacy"]["noise"].__setitem__("l2_sensitivity_squared", 1),
                 lambda d: d["parameters"]["budget"].__setitem__("delta", 1e-3),
                 lambda d: d["measurements"]["lattice"].pop()):
        bad = json.loads(json.dumps(doc))
        edit(bad)
        out = tmp_path / "bad.json"
        out.write_text(json.dumps(bad))
        with pytest.raises(ReleaseFileError):
            dptree.load(out)


@pytest.mark.parametrize("kwargs", [dict(noise="laplace", epsilon=1.0), dict(rho=1.0, noise="gaussian", by=[0] * 10,
                                                                           groups=[0]),
                                    dict(rho=1.0, noise="gaussian", branching=4)])
def test_refusals_name_the_way_out(kwargs) -> None:
    with pytest.raises(InvalidParameterError):
        dptree.range_tree(np.arange(10), lower=0, upper=9, levels="factorization", **kwargs)
