"""Continual counters: sensitivities by brute force, the online least-squares estimate against dense
least squares, exact variances against Monte Carlo, the online property, resuming a saved state
and refusing a second continuation, the release file and the ledger charge."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import dptree
import dptree.stream
from dptree.errors import DataError, InvalidParameterError, ReleaseFileError, StreamStateError
from dptree.stream import toeplitz
from dptree.stream.counter import Counter, run_copies
from dptree.stream.plan import plan_counter
from dptree.stream.tree import honaker_weights, levels_of, prefix_variance, tree_sensitivities

# --------------------------------------------------------------------------- sensitivities


def _blocks(T: int) -> np.ndarray:
    """The tree's measured blocks as rows of a 0/1 matrix over steps 1..T."""
    rows = []
    for j in range(levels_of(T)):
        for i in range(T >> j):
            r = np.zeros(T)
            r[i << j:(i + 1) << j] = 1
            rows.append(r)
    return np.array(rows)


def _patterns(T: int, k: int):
    """Every user with at most k participations: a 0/1 vector over the steps with 1..k ones."""
    for m in range(1, k + 1):
        for steps in itertools.combinations(range(T), m):
            x = np.zeros(T)
            x[list(steps)] = 1
            yield x


@pytest.mark.parametrize("T", [1, 2, 3, 5, 8, 11])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_tree_sensitivities_are_the_brute_force_maxima(T: int, k: int) -> None:
    M = _blocks(T)
    diffs = [M @ x for x in _patterns(T, k)]
    l1 = max(np.abs(d).sum() for d in diffs)
    l2sq = max((d * d).sum() for d in diffs)
    assert tree_sensitivities(T, k) == (l1, l2sq)


@pytest.mark.parametrize("T", [1, 2, 5, 9, 12])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_toeplitz_lattice_sensitivity_is_the_max_over_column_subsets(T: int, k: int) -> None:
    bits = toeplitz.lattice_bits(T)
    ci = toeplitz.lattice_coefficients(T, bits).astype(object)
    C = np.array([[ci[i - j] if i >= j else 0 for j in range(T)] for i in range(T)], dtype=object)
    best = max(sum(int(v) ** 2 for v in C.dot(x.astype(int).astype(object))) for x in _patterns(T, k))
    assert toeplitz.lattice_sensitivity_squared(T, k, bits) == best


def test_rounded_factorisation_multiplies_to_the_prefix_matrix() -> None:
    T = 200
    bits = toeplitz.lattice_bits(T)
    from scipy.linalg import toeplitz as dense

    Ct = np.tril(dense(toeplitz.lattice_coefficients(T, bits) / 2.0**bits))
    B = np.tril(dense(toeplitz.post_coefficients(T, bits)))
    assert np.abs(B @ Ct - np.tril(np.ones((T, T)))).max() < 1e-9
    c = toeplitz.sqrt_coefficients(T)
    C = np.tril(dense(c))
    assert np.abs(C @ C - np.tril(np.ones((T, T)))).max() < 1e-12  # binom(2k, k) / 4^k: A = C C


def test_plan_spends_at_most_the_budget_and_calibrates_from_the_sensitivity() -> None:
    p = plan_counter(horizon=1000, epsilon=0.7, max_participations=2)
    assert p.sensitivity == tree_sensitivities(1000, 2)[0] == 2 * levels_of(1000) and p.privacy_loss().epsilon() <= 0.7
    assert p.statement["budget_spent"]["epsilon"] == p.privacy_loss().epsilon()
    g = plan_counter(horizon=1000, rho=0.3, noise="gaussian", max_participations=3)
    S = toeplitz.lattice_sensitivity_squared(1000, 3, toeplitz.lattice_bits(1000))
    assert g.sensitivity ** 2 >= S and float(g.sensitivity ** 2 / S) < 1 + 1e-10
    assert g.privacy_loss().rho() <= 0.3 and g.privacy_loss().rho() > 0.3 * (1 - 1e-5)
    with pytest.raises(InvalidParameterError):
        plan_counter(horizon=10, rho=1.0)  # Laplace takes epsilon
    with pytest.raises(InvalidParameterError):
        plan_counter(horizon=10, epsilon=1.0, mechanism="toeplitz")
    with pytest.raises(InvalidParameterError):
        plan_counter(horizon=0, epsilon=1.0)


# --------------------------------------------------------------------------- estimates


@pytest.mark.parametrize("T", [7, 16, 21])
def test_online_estimate_is_least_squares_over_the_completed_blocks(T: int) -> None:
    """Honaker (2015): the online estimate of each prefix equals the dense weighted least-squares
    estimate from every block completed by then (equal variances: ordinary least squares)."""
    counts = list(np.random.default_rng(T).integers(0, 5, T))
    c = Counter(T, epsilon=1.0, rng=11)
    est, _ = c.append(counts)
    # the noisy blocks, replayed from the same seed through the library's sampler
    from dptree import noise

    gen = np.random.Generator(np.random.PCG64(11))
    z = noise.discrete_laplace(noise.make_source(gen), c.plan.parameter, 4096)
    M = _blocks(T)
    order = sorted(range(len(M)), key=lambda r: (np.flatnonzero(M[r])[-1], M[r].sum()))  # by end step, level
    y = np.empty(len(M))
    for pos, r in enumerate(order):
        y[r] = M[r] @ np.asarray(counts) + z[pos]
    for t in range(1, T + 1):
        done = [r for r in range(len(M)) if np.flatnonzero(M[r])[-1] < t]
        x_hat, *_ = np.linalg.lstsq(M[done][:, :t], y[done], rcond=None)
        assert est[t - 1] == pytest.approx(x_hat.sum(), abs=1e-8)
        A = M[done][:, :t]
        cov = np.linalg.pinv(A.T @ A) * c.plan.noise_variance
        assert c.plan.stderrs(t)[-1] ** 2 == pytest.approx(cov.sum(), rel=1e-10)


@pytest.mark.parametrize("kw", [dict(epsilon=1.0), dict(rho=0.5, noise="gaussian"),
                                dict(rho=0.5, noise="gaussian", mechanism="tree")])
def test_reported_variance_matches_monte_carlo(kw: dict) -> None:
    T, runs = 24, 20_000
    counts = [1] * T
    plan = plan_counter(horizon=T, **kw)
    noise = run_copies(plan, counts, runs, rng=7) - np.cumsum(counts)
    reported = plan.stderrs(T) ** 2
    # 20 000 runs: the sample variance's relative error has sd <= 1.5% (Laplace tails): 10% is > 6 sd
    assert np.all(np.abs(noise.var(axis=0) / reported - 1) < 0.1)
    assert np.all(np.abs(noise.mean(axis=0)) < 5 * np.sqrt(reported / runs))


def test_one_copy_is_the_seeded_counter() -> None:
    for kw in (dict(epsilon=1.0), dict(rho=0.5, noise="gaussian")):
        est, _ = Counter(40, rng=3, **kw).append(list(range(40)))
        assert np.allclose(run_copies(plan_counter(horizon=40, **kw), list(range(40)), 1, rng=3)[0], est,
                           rtol=1e-12, atol=1e-9)


def test_tree_variances_follow_the_bits_of_t() -> None:
    w, v = honaker_weights(5, 2.0)
    assert v[0] == 2.0 and v[1] == pytest.approx(1 / (1 / 2 + 1 / 4))
    assert prefix_variance(np.array([1, 3, 16]), v).tolist() == pytest.approx([v[0], v[0] + v[1], v[4]])


def test_sqrt_toeplitz_average_variance_at_1024_steps() -> None:
    """The square-root factorisation's average prefix variance at T = 2^10 is below 5.3 / rho
    (Fichtenberger, Henzinger & Upadhyay 2023; the best binary tree is about 6.3 / rho)."""
    rho = 1.0
    plan = plan_counter(horizon=1024, rho=rho, noise="gaussian")
    assert float(np.mean(plan.stderrs(1024) ** 2)) * rho < 5.3
    tree = plan_counter(horizon=1024, rho=rho, noise="gaussian", mechanism="tree")
    assert float(np.mean(tree.stderrs(1024) ** 2)) > float(np.mean(plan.stderrs(1024) ** 2))


# --------------------------------------------------------------------------- online, batches, resume


@pytest.mark.parametrize("kw", [dict(epsilon=1.0), dict(rho=0.5, noise="gaussian")])
def test_later_counts_never_change_earlier_outputs(kw: dict) -> None:
    a = Counter(64, rng=5, **kw).append(list(range(64)))[0]
    b = Counter(64, rng=5, **kw).append(list(range(40)) + [0] * 24)[0]
    assert np.array_equal(a[:40], b[:40]) and not np.array_equal(a[40:], b[40:])


@pytest.mark.parametrize("kw", [dict(epsilon=1.0), dict(rho=0.5, noise="gaussian")])
def test_single_steps_equal_a_batch(kw: dict) -> None:
    counts = list(np.random.default_rng(1).integers(0, 9, 5000))
    batch, se = Counter(5000, rng=2, **kw).append(counts)
    one = Counter(5000, rng=2, **kw)
    singles = [one.append(int(x)) for x in counts]
    assert np.array_equal(batch, [e for e, _ in singles]) and np.allclose(se, [s for _, s in singles])


@pytest.mark.parametrize("kw", [dict(epsilon=1.0), dict(rho=0.5, noise="gaussian")])
def test_resumed_counter_continues_the_same_stream(tmp_path, kw: dict) -> None:
    counts = list(np.random.default_rng(3).integers(0, 9, 9000))  # past two noise blocks
    whole, _ = Counter(9000, rng=4, **kw).append(counts)
    c = Counter(9000, rng=4, **kw)
    first, _ = c.append(counts[:4500])
    path = tmp_path / "state.json"
    c.save(path, allow_nonprivate=True)
    back = dptree.load(path)
    assert isinstance(back, Counter) and back.t == 4500 and np.array_equal(back.estimates, first)
    rest, _ = back.append(counts[4500:])
    assert np.array_equal(np.concatenate([first, rest]), whole)


def test_a_saved_state_is_continued_once(tmp_path) -> None:
    c = Counter(100, epsilon=1.0, rng=4)
    c.append([1, 2, 3])
    path = tmp_path / "state.json"
    c.save(path, allow_nonprivate=True)
    one, two = dptree.load(path), dptree.load(path)
    one.append(5)  # claims the file
    with pytest.raises(StreamStateError):
        two.append(5)  # the same noise on other counts would reveal their difference
    with pytest.raises(StreamStateError):
        c.append(5)  # the counter that saved it: continuing in memory is a second continuation too
    assert dptree.load(path).continuable is False
    one.save(path, allow_nonprivate=True)  # the continuing counter's state replaces it
    later = dptree.load(path)
    assert later.t == 4 and np.array_equal(later.estimates, one.estimates)
    later.append(1)
    with pytest.raises(StreamStateError):
        one.append(1)  # its saved state was continued by `later`


def test_saving_again_retires_the_earlier_state(tmp_path) -> None:
    """Two files holding one state (the same noise) would be two continuations: saving elsewhere
    marks the earlier file continued."""
    c = Counter(100, epsilon=1.0, rng=4)
    c.append([1, 2])
    c.save(tmp_path / "a.json", allow_nonprivate=True)
    c.save(tmp_path / "b.json", allow_nonprivate=True)
    assert dptree.load(tmp_path / "a.json").continuable is False
    assert dptree.load(tmp_path / "b.json").continuable is True
    moved = dptree.load(tmp_path / "b.json")
    moved.save(tmp_path / "c.json", allow_nonprivate=True)  # a loaded state saved elsewhere: the same
    assert dptree.load(tmp_path / "b.json").continuable is False
    with pytest.raises(StreamStateError):
        c.append(1)  # b.json was continued by `moved`


def test_seeded_state_is_not_saved_without_consent_and_edits_are_refused(tmp_path) -> None:
    c = Counter(10, epsilon=1.0, rng=1)
    c.append([1, 2])
    with pytest.raises(ReleaseFileError):
        c.save(tmp_path / "s.json")
    c.save(tmp_path / "s.json", allow_nonprivate=True)
    import json

    from dptree.io.release_file import canonical_checksum

    doc = json.loads((tmp_path / "s.json").read_text())
    doc["privacy"]["noise"]["scale"] = "1"  # claims less noise than the parameters give
    doc["checksum"] = canonical_checksum(doc)
    (tmp_path / "t.json").write_text(json.dumps(doc))
    with pytest.raises(ReleaseFileError):
        dptree.load(tmp_path / "t.json")


def test_bad_counts_and_horizon_are_refused() -> None:
    c = Counter(3, epsilon=1.0, rng=0)
    with pytest.raises(DataError):
        c.append(-1)
    with pytest.raises(DataError):
        c.append([1.5])
    c.append([1, 1, 1])
    with pytest.raises(InvalidParameterError):
        c.append(1)


# --------------------------------------------------------------------------- release, ledger


def test_release_file_round_trip_and_ledger_charge(tmp_path) -> None:
    led = dptree.Ledger(tmp_path / "budget.db", total_epsilon=1.0)
    c = Counter(50, epsilon=0.6, ledger=led, rng=2)
    assert led.spent().epsilon == pytest.approx(0.6)
    with pytest.raises(dptree.BudgetExceededError):
        Counter(50, epsilon=0.6, ledger=led)  # the whole horizon was charged at creation
    c.append(list(range(20)))
    rel = c.release()
    assert rel.steps == 20 and np.array_equal(rel.count(np.arange(1, 21)), c.estimates)
    lo, hi = rel.ci(5)
    assert lo < rel.count(5) < hi and rel.to_frame().shape == (20, 3)
    rel.save(tmp_path / "r.json", allow_nonprivate=True)
    back = dptree.load(tmp_path / "r.json")
    assert isinstance(back, dptree.StreamRelease) and np.array_equal(back.estimates, rel.estimates)
    assert math.isclose(back.stderr(20), float(c.stderrs[-1]))


def test_plot_draws_the_running_total_and_its_band() -> None:
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    c = Counter(100, epsilon=1.0, rng=1)
    c.append([1] * 40)
    ax = c.plot()
    (line,) = ax.get_lines()
    assert np.array_equal(line.get_ydata(), c.estimates) and len(ax.collections) == 1
    assert "NOT PRIVATE" in ax.get_title()
    import matplotlib.pyplot as plt

    plt.close(ax.figure)
