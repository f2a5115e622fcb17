"""Seed 001's multiplicative algorithm: truncated Laplace on the lattice (Lemma 2.8), the
parameters of Theorem A.1 / Corollary 4.7 against Lemma 4.6's conditions, Classification
(Lemma 4.3) accuracy, Estimation's (alpha, eta)-accuracy (Problem 3.1) and Lemma 3.3's wrapper."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dptree.hierarchy.counting import node_weights
from dptree.hierarchy.error_metrics import alpha_eta_accuracy, rmse_alpha
from dptree.hierarchy.multiplicative import (
    RoundParams,
    Tree,
    classification_forest,
    corollary_4_7_tau_min,
    estimation,
    estimation_schedule,
    mrmse_wrapper,
    theorem_4_1_tau_min,
)
from dptree.hierarchy.structure import Hierarchy
from dptree.noise import (
    make_source,
    truncated_discrete_laplace,
    truncated_laplace_bound,
    truncated_laplace_delta,
)

# ---------------------------------------------------------------- truncated Laplace (Lemma 2.8)


def test_truncated_discrete_laplace_is_exact() -> None:
    from scipy.stats import chisquare

    src = make_source(0)
    scale, B, n = 3.0, 5, 200_000
    z = truncated_discrete_laplace(src, scale, B, n)
    assert np.abs(z).max() <= B
    ks = np.arange(-B, B + 1)
    pmf = np.exp(-np.abs(ks) / scale)
    pmf /= pmf.sum()
    obs = np.bincount(z + B, minlength=2 * B + 1)
    assert chisquare(obs, pmf * n).pvalue > 1e-6
    assert (truncated_discrete_laplace(src, scale, 0, 10) == 0).all()


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 1e-3, 0.1])
def test_truncation_bound_is_minimal_and_within_lemma_2_8(eps: float, delta: float) -> None:
    B = truncated_laplace_bound(eps, delta)
    assert truncated_laplace_delta(1 / eps, B) <= delta
    assert B == 1 or truncated_laplace_delta(1 / eps, B - 1) > delta
    R = math.log1p(math.expm1(eps) / (2 * delta)) / eps  # Lemma 2.8's continuous range
    assert B <= math.ceil(R)


def test_truncated_laplace_delta_by_brute_force() -> None:
    """delta = max_S P(x+Z in S) - e^eps P(x+1+Z in S), computed over all output sets."""
    scale, B = 2.0, 4
    ks = np.arange(-B, B + 1)
    p = np.exp(-np.abs(ks) / scale)
    p /= p.sum()
    P = np.zeros(2 * B + 3)
    Q = np.zeros(2 * B + 3)
    P[: 2 * B + 1] += p  # outputs of x = 0 on {-B..B}, shifted by B
    Q[1 : 2 * B + 2] += p  # outputs of x = 1
    for a, b in ((P, Q), (Q, P)):
        delta = np.maximum(a - math.exp(1 / scale) * b, 0).sum()
        assert delta == pytest.approx(truncated_laplace_delta(scale, B), rel=1e-9)


# ---------------------------------------------------------------- parameters (Thm A.1, Cor 4.7)


def lemma_4_6_conditions(
    rounds: list[RoundParams], M: float, M0: float, alpha: float, tau_min: float, d: int, eta: float
) -> None:
    for r in rounds:
        rhs = math.sqrt(2 * r.M / (r.alpha * r.epsilon)) * max(
            math.sqrt(48 * math.log(2 * d / r.eta)), math.sqrt(6 * math.log1p(math.expm1(r.epsilon / 2) / r.delta))
        )
        assert r.tau >= rhs * (1 - 1e-9), ("(2)", r.i, r.tau, rhs)
        assert (1 - r.alpha) * r.tau <= r.M <= (1 + alpha) * (1 - r.alpha) * r.tau * (1 + 1e-12), "(5)"
    assert sum(r.eta for r in rounds) <= eta, "(3)"
    Ms = [M0] + [r.M for r in rounds]
    for i in range(len(rounds)):
        assert Ms[i] >= (1 + rounds[i].alpha) * rounds[i].tau * (1 - 1e-12), ("(4)", i)
    assert not rounds or rounds[-1].M >= M, "(4) M_ell >= M"
    assert 0 <= M0 <= alpha * tau_min * (1 + 1e-12), "(6)"


@pytest.mark.parametrize("alpha", [0.1, 0.3, 0.5, 0.9])
@pytest.mark.parametrize("eps, delta, d", [(1.0, 1e-6, 4), (0.3, 1e-9, 20), (4.0, 1e-3, 2)])
def test_default_tau_min_satisfies_lemma_4_6(alpha: float, eps: float, delta: float, d: int) -> None:
    eta = 1 / d**2
    tau_min = corollary_4_7_tau_min(alpha, eps, delta, d, eta)
    M = 1e4 * tau_min
    beta, q, M0, rounds = estimation_schedule(M, alpha, eps, delta, eta, tau_min, d)
    assert beta == pytest.approx(alpha / (6 + 5 * alpha)) and q > 1
    lemma_4_6_conditions(rounds, M, M0, alpha, tau_min, d, eta)
    assert sum(r.epsilon for r in rounds) <= eps / 2 and sum(r.delta for r in rounds) <= delta / 2
    # Sparse's cutoff c = ceil(1 + alpha) = 2 <= 2 M_i / tau_i in every round (reading note 1)
    assert {r.c for r in rounds} == {2} and all(r.c <= 2 * r.M / r.tau for r in rounds)
    # the lattice bound never exceeds the paper's R in Algorithm 1 (reading note 2)
    assert all(r.B <= r.R for r in rounds)


def test_printed_constant_is_smaller_than_needed() -> None:
    """Reading note 6: with budgets that sum to eps/2, the printed 324(1+a)^2/a^4 is too small
    by a factor < q^2; the re-derived default satisfies Lemma 4.6 and the printed one does not."""
    alpha, eps, delta, d = 0.5, 1.0, 1e-6, 8
    eta = 1 / d**2
    printed = corollary_4_7_tau_min(alpha, eps, delta, d, eta, as_printed=True)
    ours = corollary_4_7_tau_min(alpha, eps, delta, d, eta)
    beta, q, _, _ = estimation_schedule(10.0, alpha, eps, delta, eta, ours, d)
    assert printed < ours < printed * q**2
    _, _, M0, rounds = estimation_schedule(1e4 * printed, alpha, eps, delta, eta, printed, d)
    with pytest.raises(AssertionError, match=r"\(2\)"):
        lemma_4_6_conditions(rounds, 1e4 * printed, M0, alpha, printed, d, eta)


def test_theorem_4_1_threshold_grows_like_log_d() -> None:
    t = [theorem_4_1_tau_min(0.5, 1.0, 1e-6, d) for d in (2, 2**5, 2**10, 2**20)]
    # max{8 ln(4 d^3), ...}: linear in log d once the d-term dominates
    inc = np.diff([math.log(x) for x in t])
    assert all(x > 0 for x in inc)
    assert t[3] / t[2] == pytest.approx(math.log(4 * 2.0**60) / math.log(4 * 2.0**30), rel=1e-9)


# ---------------------------------------------------------------- algorithms on trees


def complete_tree(arity: int, depth: int) -> Tree:
    parents: list = [None]
    sizes = [1]
    for _ in range(1, depth):
        parents.append(np.repeat(np.arange(sizes[-1]), arity))
        sizes.append(sizes[-1] * arity)
    return Tree(parents, sizes)


def weights(tree: Tree, leaves: np.ndarray) -> list[np.ndarray]:
    x = [np.zeros(s, dtype=np.int64) for s in tree.sizes]
    x[-1] = leaves.astype(np.int64)
    return node_weights(x, tree.parents)


def test_classification_solves_problem_4_2() -> None:
    """Lemma 4.3: with tau above its bound, every node is classified correctly w.p. >= 1-eta."""
    tree = complete_tree(2, 4)
    alpha, eps, delta, eta, d = 0.2, 1.0, 1e-6, 0.1, tree.depth
    X = max(math.sqrt(48 * math.log(2 * d / eta)), math.sqrt(6 * math.log1p(math.expm1(eps / 2) / delta)))
    # with M = 3 tau, the condition tau >= sqrt(2M/(alpha eps)) X reads tau >= 6 X^2 / (alpha eps)
    tau = 6 * X**2 / (alpha * eps) * 1.001
    M = 3 * tau
    leaves = np.array([0.9, 0.05, 0.4, 0.3, 0.6, 0.2, 0.0, 0.5]) * tau
    leaves = np.round(leaves * (M / leaves.sum()) * 0.999).astype(np.int64)
    w = weights(tree, leaves)
    p = RoundParams(i=1, M=M, eta=eta, alpha=alpha, tau=tau, epsilon=eps, delta=delta).derive(d)
    assert p.Delta <= alpha * tau / 3 + 1e-9 and p.R <= alpha * tau / 3 + 1e-9
    src = make_source(1)
    failures = 0
    runs = 300
    forest = [np.ones(s, dtype=bool) for s in tree.sizes]
    tree_of = [np.zeros(s, dtype=np.int64) for s in tree.sizes]
    for _ in range(runs):
        top = classification_forest(src, tree, w, forest, tree_of, p, d)
        bad = False
        for j in range(d):
            must_top = w[j] >= (1 + alpha) * tau
            must_bot = w[j] < (1 - alpha) * tau
            bad |= bool((must_top & ~top[j]).any() or (must_bot & top[j]).any())
            if j + 1 < d:  # top is closed under taking ancestors
                assert set(np.asarray(tree.parents[j + 1])[top[j + 1]]) <= set(np.flatnonzero(top[j]))
        failures += bad
    assert failures / runs <= eta


def test_estimation_is_alpha_eta_accurate_at_corollary_4_7_threshold() -> None:
    """Corollary 4.7 / Problem 3.1: Pr[|w~_u - w_u| <= alpha max{w_u, tau_min}] >= 1 - eta."""
    tree = complete_tree(3, 3)
    alpha, eps, delta, d = 0.5, 1.0, 1e-6, tree.depth
    eta = 0.2
    tau_min = corollary_4_7_tau_min(alpha, eps, delta, d, eta)
    rng = np.random.default_rng(0)
    leaves = np.concatenate([[0, 1], rng.pareto(0.8, 7) * tau_min * 0.3]).astype(np.int64)
    w = weights(tree, leaves)
    truth = np.concatenate(w)
    src = make_source(2)
    runs = np.stack(
        [
            np.concatenate(estimation(src, tree, w, alpha=alpha, epsilon=eps, delta=delta, eta=eta, tau_min=tau_min)[0])
            for _ in range(150)
        ]
    )
    rep = alpha_eta_accuracy(runs, truth, alpha=alpha, eta=eta, tau=tau_min)
    assert rep.accurate, rep.failure_rate


def test_wrapper_window_always_holds_the_truth() -> None:
    """Lemma 3.3's window on the real algorithm: the window always contains w_u, the clamp never
    increases the error and |error| <= 2B always."""
    tree = complete_tree(2, 4)
    alpha, eps, delta = 0.5, 1.0, 1e-6
    rng = np.random.default_rng(1)
    leaves = (rng.pareto(1.0, tree.sizes[-1]) * 2e6).astype(np.int64)
    leaves[:2] = 0
    w = weights(tree, leaves)
    truth = np.concatenate(w)
    src = make_source(4)
    for _ in range(60):
        r = mrmse_wrapper(src, tree, w, alpha=alpha, epsilon=eps, delta=delta)
        est, west, ctr = (np.concatenate(a) for a in (r.estimate, r.w_est, r.window_center))
        assert (np.abs(ctr - truth) <= r.window).all()  # the window always holds the truth
        assert (np.abs(est - truth) <= 2 * r.window).all()
        assert (np.abs(est - truth) <= np.abs(west - truth) + 1e-9).all()
    assert r.info["tau_min"] == pytest.approx(theorem_4_1_tau_min(alpha, eps, delta, tree.depth))


def test_lemma_3_3_bound_with_an_estimator_that_fails_with_probability_eta(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Lemma 3.3 for *any* (alpha, eta)-accurate estimator: here one that is exact except, with
    probability eta, wildly wrong (10^12 everywhere). The wrapper must bring the alpha-mRMSE down
    to sqrt(eta) 2B (its error is 0 on good runs, <= 2B on bad ones); without the window it would
    be ~ sqrt(eta) 10^12, so the bound is far from vacuous. A wrapper that does not clamp, or
    clamps into a window that misses w_u, fails."""
    import dptree.hierarchy.multiplicative as mult

    tree = complete_tree(2, 5)
    alpha, eps, delta, eta = 0.5, 1.0, 1e-6, 0.2
    rng = np.random.default_rng(2)
    w = weights(tree, (rng.pareto(1.0, tree.sizes[-1]) * 50).astype(np.int64))
    truth = np.concatenate(w).astype(float)
    coin = np.random.default_rng(3)
    bad_runs = []

    def fake_estimation(src, tree_, w_, **kw):  # type: ignore[no-untyped-def]
        bad = bool(coin.random() < eta)
        bad_runs.append(bad)
        est = [np.full(len(x), 1e12) if bad else np.asarray(x, dtype=float) for x in w_]
        return est, int(truth[0]), {"ell": 0}

    monkeypatch.setattr(mult, "estimation", fake_estimation)
    src = make_source(5)
    outs, B = [], None
    for _ in range(400):
        r = mult.mrmse_wrapper(src, tree, w, alpha=alpha, epsilon=eps, delta=delta)
        outs.append(np.concatenate(r.estimate))
        B = r.window
    err = np.stack(outs) - truth
    bad = np.array(bad_runs)
    assert np.abs(err[~bad]).max() == 0  # accurate runs pass through the window untouched
    assert np.abs(err[bad]).max() <= 2 * B
    eta_hat = bad.mean()
    assert 0.1 < eta_hat < 0.3
    m = rmse_alpha(np.stack(outs), truth, alpha).max()
    assert 0 < m <= math.sqrt(eta_hat) * 2 * B
    assert m < 1e-6 * math.sqrt(eta_hat) * 1e12  # what no window would give


def test_theorem_4_1_error_is_alpha_tau_min_which_grows_like_log_d() -> None:
    """Theorem 4.1's log d: with the default threshold, a zero count is estimated as
    M_0 = alpha tau_min(d) (nothing crosses a threshold there), counts above tau_min within
    alpha w (w.p. >= 1 - eta), so Estimation's alpha-mRMSE equals alpha tau_min(d), and
    tau_min(d) = K max{8 ln(4 d^3), L}: affine in log d once the d-term dominates. Measured on
    trees whose root is far above alpha tau_min, so that Reduction runs many rounds."""
    alpha, eps, delta = 0.5, 1.0, 1e-6
    measured = {}
    for d in (3, 6, 9):
        tree = complete_tree(2, d)
        leaves = np.zeros(tree.sizes[-1], dtype=np.int64)
        leaves[::2] = 10**9  # half the leaves huge, half empty
        w = weights(tree, leaves)
        truth = np.concatenate(w).astype(float)
        tau = theorem_4_1_tau_min(alpha, eps, delta, d)
        src = make_source(d)
        runs, ells = [], []
        for _ in range(20):
            est, _, info = estimation(
                src, tree, w, alpha=alpha, epsilon=eps / 2, delta=delta / 2, eta=1 / d**2, tau_min=tau
            )
            runs.append(np.concatenate(est))
            ells.append(info["ell"])
        assert min(ells) > 10  # the core ran
        m = rmse_alpha(np.stack(runs), truth, alpha).max()
        assert m == pytest.approx(alpha * tau, rel=0.02), (d, m, alpha * tau)
        big = truth >= tau
        ok = np.abs(np.stack(runs)[:, big] - truth[big]) <= alpha * truth[big]
        assert ok.mean() >= 1 - 1 / d**2
        measured[d] = m
    # the measured error follows K (8 ln 4 + 24 ln d) when the d-term dominates the max
    assert measured[9] / measured[6] == pytest.approx(math.log(4 * 9**3) / math.log(4 * 6**3), rel=0.02)
    assert measured[6] / measured[3] == pytest.approx(math.log(4 * 6**3) / math.log(4 * 3**3), rel=0.02)


def test_small_tau_min_is_still_private_machinery() -> None:
    """A calibrated tau_min below the bound runs (privacy does not depend on it) and uses the
    same budget schedule (sum of round budgets <= eps/2)."""
    tree = complete_tree(2, 5)
    w = weights(tree, np.arange(tree.sizes[-1]) * 50)
    r = mrmse_wrapper(make_source(0), tree, w, alpha=0.5, epsilon=1.0, delta=1e-6, tau_min=50.0)
    assert r.info["ell"] > 3
    assert r.info["eps_spent_rounds"] <= 0.25 + 1e-12 and r.info["delta_spent_rounds"] <= 0.25e-6


def test_hierarchy_counts_multiplicative_statement() -> None:
    from dptree.hierarchy.api import hierarchy_counts

    h = Hierarchy.from_paths(["a/b", "a/c", "d"])
    rel = hierarchy_counts(
        ["a/b"] * 3, h, epsilon=1.0, delta=1e-6, method="multiplicative", alpha=0.5, tau_min=10.0, rng=0
    )
    assert "does NOT hold" in rel.privacy["tau_min_note"]
    assert "privacy does not depend on tau_min" in rel.privacy["tau_min_note"]
    assert math.isnan(rel.stderr("a"))
    lo, hi = rel.ci("a/b")
    assert lo <= 3 <= hi
    rel2 = hierarchy_counts(
        ["a/b"] * 3, h, epsilon=1.0, delta=1e-6, method="multiplicative", alpha=0.5, max_contributions=2, rng=0
    )
    assert rel2.privacy["run_at"]["epsilon"] == 0.5
    assert rel2.privacy["run_at"]["delta"] == pytest.approx(1e-6 * math.expm1(0.5) / math.expm1(1.0))


def test_forest_classification_stays_inside_forest_trees() -> None:
    """Corollary 4.5: on a forest (here: the tree minus its root), ancestors marked top are those
    inside each forest tree; the removed root is never touched (regression test)."""
    tree = complete_tree(2, 4)
    alpha, eps, delta, eta, d = 0.2, 1.0, 1e-6, 0.1, tree.depth
    leaves = np.full(tree.sizes[-1], 10**7, dtype=np.int64)
    w = weights(tree, leaves)
    p = RoundParams(i=1, M=8e7, eta=eta, alpha=alpha, tau=1e7, epsilon=eps, delta=delta).derive(d)
    forest = [np.ones(s, dtype=bool) for s in tree.sizes]
    forest[0][:] = False
    offsets = np.concatenate([[0], np.cumsum(tree.sizes)])
    tree_of = [np.zeros(1, dtype=np.int64), offsets[1] + np.arange(2)]
    for j in range(2, d):
        tree_of.append(tree_of[j - 1][np.asarray(tree.parents[j])])
    top = classification_forest(make_source(3), tree, w, forest, tree_of, p, d)
    assert not top[0].any()
    assert top[1].all() and top[2].all()  # weights 4e7 and 2e7 >= (1 + alpha) tau: must be top


def test_rounds_the_samplers_cannot_draw_are_not_run() -> None:
    """A small tau_min under a large total gives the top rounds of Estimation a budget whose noise
    no sampler draws (query scale 8c / eps_i past 2^56): those rounds are skipped (they spend
    nothing; their nodes stay for the next rounds, every estimate is still clamped to its
    window), where the release used to crash after reading the data."""
    from dptree.hierarchy.api import hierarchy_counts
    from dptree.hierarchy.multiplicative import drawable, estimation_schedule

    _, _, _, rounds = estimation_schedule(2.0**60, 0.5, 0.5, 1e-6, 0.01, 1.0, 3)
    assert not all(drawable(r) for r in rounds) and drawable(rounds[0])
    import pandas as pd

    h = Hierarchy.from_paths(["a/b", "a/c", "d"])
    frame = pd.DataFrame({"top": ["a", "a", "d"], "leaf": ["b", "c", None], "n": [2**59, 5, 7]})
    rel = hierarchy_counts(frame, h, levels=["top", "leaf"], weight="n", epsilon=1.0, delta=1e-6,
                           method="multiplicative", alpha=0.5, tau_min=1.0, rng=0)
    assert abs(rel.count("a/b") - 2**59) <= 2 * rel.measurements["window"]
