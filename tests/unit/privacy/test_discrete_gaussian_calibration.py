"""Exact (epsilon, delta) of the discrete Gaussian: dptree.privacy.budget.discrete_gaussian_delta
against brute force over the integer lattice, CKS 2020 Theorem 7, and the calibration that uses it."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dptree.errors import ReleaseFileError
from dptree.noise import gaussian_sigma2_used
from dptree.privacy.budget import (
    discrete_gaussian_delta,
    discrete_gaussian_delta_slack,
    discrete_gaussian_sigma2_for,
    zcdp_rho_for,
)


def _pmf(sigma2: float, R: int) -> np.ndarray:
    z = np.arange(-R, R + 1, dtype=float)
    w = np.exp(-z * z / (2 * sigma2))
    return w / w.sum()


def brute_force_delta(epsilon: float, sigma2: float, shift: tuple[int, ...], R: int = 40) -> float:
    """max over both orders of sum_y (P(y) - e^eps Q(y))_+ over the box [-R, R]^m (+ the shift),
    P = prod_i N_Z(0, sigma2)(y_i), Q = prod_i N_Z(shift_i, sigma2)(y_i): the hockey-stick
    divergence summed output by output, no privacy-loss formula involved."""
    p = _pmf(sigma2, R + max(shift) + 1)
    off = R + max(shift) + 1
    ys = range(-R, R + max(shift) + 1)
    best = 0.0
    for a, b in ((0, 1), (1, 0)):
        tot = 0.0
        for y in itertools.product(ys, repeat=len(shift)):
            P = math.prod(p[off + yi - a * s] for yi, s in zip(y, shift))
            Q = math.prod(p[off + yi - b * s] for yi, s in zip(y, shift))
            tot += max(P - math.exp(epsilon) * Q, 0.0)
        best = max(best, tot)
    return best


def theorem_7_delta(epsilon: float, sigma2: float, Delta: int = 1, R: int = 200) -> float:
    """CKS 2020 Theorem 7: P[Y > eps s^2/D - D/2] - e^eps P[Y > eps s^2/D + D/2], Y ~ N_Z(0, s^2)."""
    z = np.arange(-R, R + 1)
    p = _pmf(sigma2, R)
    t1 = epsilon * sigma2 / Delta - Delta / 2
    t2 = epsilon * sigma2 / Delta + Delta / 2
    return float(p[z > t1].sum() - math.exp(epsilon) * p[z > t2].sum())


@pytest.mark.parametrize("sigma2", [0.3, 1.0, 2.5, 7.0, 30.0])
@pytest.mark.parametrize("epsilon", [0.05, 0.5, 1.0, 3.0])
def test_one_coordinate_matches_theorem_7(sigma2: float, epsilon: float) -> None:
    ours = discrete_gaussian_delta(epsilon, sigma2, 1)
    assert ours == pytest.approx(theorem_7_delta(epsilon, sigma2), rel=1e-9, abs=1e-15)
    assert ours == pytest.approx(brute_force_delta(epsilon, sigma2, (1,), R=120), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("m, sigma2, R", [(2, 0.4, 12), (2, 1.7, 16), (2, 4.0, 24), (3, 0.8, 10), (3, 2.2, 12)])
@pytest.mark.parametrize("epsilon", [0.1, 0.7, 2.0])
def test_m_unit_shifts_match_brute_force(m: int, sigma2: float, R: int, epsilon: float) -> None:
    ours = discrete_gaussian_delta(epsilon, sigma2, m)
    brute = brute_force_delta(epsilon, sigma2, (1,) * m, R=R)
    # the box drops mass beyond R (< 1e-12 here); the exact value is within that of brute force
    assert ours == pytest.approx(brute, rel=1e-7, abs=1e-12)


def test_the_shift_pattern_matters_not_only_its_l2_norm() -> None:
    """Same L2 norm 2: shift (1,1,1,1) vs (2) on one coordinate. For the continuous Gaussian the
    two deltas are equal; for the discrete one they are not, so dptree fixes the pattern (unit
    shifts on m coordinates) rather than reasoning from the L2 sensitivity."""
    eps, s2 = 0.5, 0.6
    four = brute_force_delta(eps, s2, (1, 1, 1, 1), R=6)
    one = brute_force_delta(eps, s2, (2,), R=40)
    assert four == pytest.approx(discrete_gaussian_delta(eps, s2, 4), rel=1e-7)
    assert abs(four - one) > 1e-3 * max(four, one)


def test_coarsening_only_overstates() -> None:
    """The block coarsening rounds the loss up: delta grows, and by no more than moving epsilon
    down by the stated slack m (b - 1) / sigma^2."""
    eps, s2, m = 0.5, 200.0, 6
    exact = discrete_gaussian_delta(eps, s2, m, block=1)
    for b in (2, 3, 5):
        coarse = discrete_gaussian_delta(eps, s2, m, block=b)
        assert exact <= coarse <= discrete_gaussian_delta(eps - m * (b - 1) / s2, s2, m, block=1) * (1 + 1e-9)
    assert discrete_gaussian_delta_slack(s2, m) == 0.0  # small sigma^2 m: exact


@pytest.mark.parametrize("epsilon, delta, m", [(1.0, 1e-6, 1), (1.0, 1e-6, 20), (0.5, 1e-5, 7), (2.0, 1e-9, 3)])
def test_calibration_is_the_smallest_grid_value(epsilon: float, delta: float, m: int) -> None:
    s2 = discrete_gaussian_sigma2_for(epsilon, delta, m)
    assert gaussian_sigma2_used(s2) == s2  # on the sampler's grid: the sampler uses it as is
    assert discrete_gaussian_delta(epsilon, float(s2), m) <= delta
    below = type(s2)(s2.numerator - 1, s2.denominator)
    assert discrete_gaussian_delta(epsilon, float(below), m) > delta  # one grid step less fails
    assert s2 < m / (2 * zcdp_rho_for(epsilon, delta))  # never worse than the zCDP route


def test_gain_over_zcdp_at_epsilon_1() -> None:
    """sigma = 4.22 sqrt(d) (the analytic Gaussian mechanism's value) instead of 4.53 sqrt(d)."""
    d = 20
    s = math.sqrt(float(discrete_gaussian_sigma2_for(1.0, 1e-6, d)) / d)
    z = math.sqrt(1 / (2 * zcdp_rho_for(1.0, 1e-6)))
    assert s == pytest.approx(4.22, abs=0.01) and z == pytest.approx(4.53, abs=0.01)


def test_hierarchy_gaussian_uses_the_exact_calibration_and_states_it() -> None:
    from dptree.hierarchy import Hierarchy, HierarchyRelease, hierarchy_counts

    h = Hierarchy.from_paths(["a/b/c/d", "a/b/e", "f"])  # depth 5
    rel = hierarchy_counts(["f"], h, epsilon=1.0, delta=1e-6, method="gaussian", rng=1)
    s2 = rel.privacy["noise"]["sigma2"]
    assert s2 == float(discrete_gaussian_sigma2_for(1.0, 1e-6, 5))
    assert rel.privacy["calibration"]["kind"] == "exact"
    assert discrete_gaussian_delta(1.0, s2, 5) <= 1e-6  # recomputed, not read from the statement
    assert rel.privacy["rho"] == pytest.approx(5 / (2 * s2))
    # a release written with the zCDP calibration (in the spelling of files older than the
    # statement schema) still loads, with the guarantee of that calibration
    old = rel.to_dict()
    rho = zcdp_rho_for(1.0, 1e-6)
    zs2 = float(gaussian_sigma2_used(5 / (2 * rho)))
    st = old["privacy"]
    for key in ("calibration", "guarantee", "max_contributions", "neighbors", "library"):
        st.pop(key)
    st.update(neighbours="add/remove one record", library_version="0.1.0", rho=rho,
              mechanism="discrete Gaussian on every node (seed 001 Corollary 2.7 / Lemma 2.6; zCDP analysis of "
                        "Canonne, Kamath, Steinke 2020)")
    st["noise"]["sigma2"] = zs2
    from dptree.noise import discrete_gaussian_variance

    old["measurements"]["noise_variance"] = discrete_gaussian_variance(zs2)
    loaded = HierarchyRelease.from_dict(old).privacy
    assert loaded["noise"]["sigma2"] == zs2 and loaded["guarantee"] == "rho-zCDP, implies (epsilon, delta)-DP"
    st["rho"] = rho / 2  # its statement is compared whole too
    with pytest.raises(ReleaseFileError, match="rho"):
        HierarchyRelease.from_dict(old)
    # k = 2: the shifts are not all unit shifts; the zCDP route is used and said
    rel2 = hierarchy_counts(["f"], h, epsilon=1.0, delta=1e-6, method="gaussian", max_contributions=2, rng=1)
    assert rel2.privacy["calibration"]["kind"] == "zcdp"


def test_range_tree_gaussian_uses_the_exact_calibration_where_it_applies() -> None:
    from dptree.rangetree.release import plan_range_tree

    for nb, per_level in (("add_remove", 1), ("replace", 2)):
        p = plan_range_tree(lower=0, upper=63, epsilon=1.0, delta=1e-6, branching=4, noise="gaussian", neighbors=nb)
        sig = {q for q in p.noise_parameters if q is not None}
        m = per_level * sum(q is not None for q in p.noise_parameters)
        assert len(sig) == 1 and p.statement["calibration"]["unit_shifts"] == m
        assert discrete_gaussian_delta(1.0, float(next(iter(sig))), m) <= 1e-6
        z = plan_range_tree(
            lower=0, upper=63, epsilon=1.0, delta=1e-6, branching=4, noise="gaussian", neighbors=nb,
            gaussian_calibration="zcdp",
        )
        assert all(a < b for a, b in zip(p.level_variance, z.level_variance) if 0 < b < np.inf)
        assert "rho" in z.statement["budget_spent"] and "rho" not in p.statement["budget_spent"]
    opt = plan_range_tree(lower=0, upper=63, epsilon=1.0, delta=1e-6, noise="gaussian", levels="optimal")
    assert "implied_rho" not in opt.statement["calibration"]  # unequal shares: zCDP route
    rho = plan_range_tree(lower=0, upper=63, rho=0.5, noise="gaussian")
    assert "implied_rho" not in rho.statement["calibration"]  # a rho budget keeps its calibration
