"""``range_tree(..., user_id=..., max_contributions="private")``: the bound chosen privately (its
exact law, epsilon-DP by brute force over neighbouring user sets), both steps charged before the
data, the release at the chosen bound, its file, and the same release from every engine."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dptree
from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.interior.selection import effective_epsilon, exponential_base
from dptree.interior.top_rank import top_rank_law
from dptree.io.release_file import canonical_checksum
from dptree.privacy.loss import Exponential, Gaussian, Laplace
from dptree.rangetree.allocation import average_workload_variance
from dptree.rangetree.api import plan_private_contributions
from dptree.rangetree.contributions import candidate_bounds, mean_squared_share


def _heavy(seed: int, users: int = 3000, alpha: float = 1.5) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    per_user = np.minimum(np.floor(gen.pareto(alpha, users) + 1).astype(np.int64), 2000)
    ids = np.repeat(np.arange(users), per_user)
    return gen.integers(0, 100, ids.size), ids


def _law(plan, per_user: np.ndarray) -> dict[int, float]:
    """The exact law of the chosen bound (the grid's law under the top-rank mechanism)."""
    x, users = plan.choice_values(per_user)
    grid = candidate_bounds(plan.cap)
    law = top_rank_law(x, counts=users, above=plan.above, lower=0, upper=grid.size - 1, epsilon=plan.choice_epsilon)
    return {int(k): float(p) for k, p in zip(grid, law)}


# --------------------------------------------------------------------------- the public plan


def test_the_level_is_the_workload_error_over_its_share() -> None:
    plan = plan_private_contributions(lower=0, upper=999, epsilon=1.0, user_id="u")
    tree = dptree.plan_range_tree(lower=0, upper=999, epsilon=plan.tree_budget)
    s2 = average_workload_variance(tree.layout, tree.level_variance, "all_ranges")
    assert plan.above == math.ceil(math.sqrt(s2 / mean_squared_share(1000, "all_ranges")))
    # the mean squared share of all ranges (and of the prefixes) by brute force
    for d in (1, 2, 7, 30):
        ranges = [((b - a + 1) / d) ** 2 for a in range(d) for b in range(a, d)]
        assert math.isclose(mean_squared_share(d, "all_ranges"), sum(ranges) / len(ranges))
        assert math.isclose(mean_squared_share(d, "prefix"), sum(((x + 1) / d) ** 2 for x in range(d)) / d)
    prefix = plan_private_contributions(lower=0, upper=999, epsilon=1.0, user_id="u", levels="prefix")
    assert prefix.above != plan.above
    # more noise (less budget) leaves more users above the bound
    assert plan_private_contributions(lower=0, upper=999, epsilon=0.1, user_id="u").above > 5 * plan.above


def test_candidate_bounds() -> None:
    grid = candidate_bounds(100)
    assert grid[0] == 1 and grid[-1] == 100 and list(grid[:16]) == list(range(1, 17))
    assert np.all(np.diff(grid) > 0) and np.all(grid[16:] / grid[15:-1] < 1.2)  # steps of about 9% past 16
    assert list(candidate_bounds(1)) == [1] and list(candidate_bounds(3)) == [1, 2, 3]


def test_the_loss_lists_both_steps_and_covers_every_bound() -> None:
    plan = plan_private_contributions(lower=0, upper=999, epsilon=1.0, user_id="u", share=0.2, cap=50)
    loss = plan.privacy_loss()
    first, *levels = loss.measurements
    assert isinstance(first, Exponential) and math.isclose(first.epsilon, 0.2)
    assert levels and all(isinstance(m, Laplace) and m.sensitivity == 50 for m in levels)
    assert loss.epsilon() <= 1.0 * (1 + 1e-12) and math.isclose(loss.epsilon(), 1.0)
    listed = [m.epsilon for m in levels]
    for k in candidate_bounds(50):  # the tree at every bound it may choose spends at most what is listed
        tree = plan.tree_at(int(k)).privacy_loss().measurements
        assert [m.sensitivity for m in tree] == [Fraction(int(k))] * len(tree)
        assert all(m.epsilon <= e for m, e in zip(tree, listed))
    assert Fraction(plan.tree_budget) + Fraction(plan.choice_epsilon) <= Fraction(1.0)
    gauss = plan_private_contributions(lower=0, upper=999, rho=0.5, noise="gaussian", user_id="u")
    first, *levels = gauss.privacy_loss().measurements
    assert isinstance(first, Exponential) and all(isinstance(m, Gaussian) for m in levels)
    assert math.isclose(gauss.privacy_loss().rho(), 0.5) and gauss.privacy_loss().rho() <= 0.5 * (1 + 1e-12)
    for k in (1, 7, 100):
        assert gauss.tree_at(k).privacy_loss().rho() <= gauss.tree_budget * (1 + 1e-12)


def test_a_ledger_charges_both_steps_before_the_data(tmp_path: Path) -> None:
    plan = plan_private_contributions(lower=0, upper=99, epsilon=1.0, user_id="u")
    with dptree.Ledger(tmp_path / "b.ledger", total_epsilon=1.5) as ledger:
        with ledger.charge_for(plan, label="private k") as charge:
            assert charge.epsilon == 1.0
        families = [m["family"] for m in ledger.history()[0]["loss"]["measurements"]]
        assert families[0] == "exponential" and set(families[1:]) == {"laplace"}
        assert not ledger.can_afford(plan)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({}, "user_id"),
    ({"user_id": "u", "by": "g"}, "one tree"),
    ({"user_id": "u", "bounds": "private"}, "public bounds"),
    ({"user_id": "u", "neighbors": "replace"}, "add_remove"),
    ({"user_id": "u", "share": 1.0}, "contributions_share"),
    ({"user_id": "u", "share": 1e-300}, "contributions_share"),
    ({"user_id": "u", "cap": 0}, "contributions_cap"),
    ({"user_id": "u", "cap": 2.5}, "contributions_cap"),
    ({"user_id": "u", "noise": "laplace", "delta": 1e-6}, "delta"),
])
def test_public_refusals(kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        plan_private_contributions(lower=0, upper=99, epsilon=1.0, **kwargs)


def test_range_tree_refusals() -> None:
    values, users = _heavy(0, 50)
    with pytest.raises(InvalidParameterError, match="contributions_share"):
        dptree.range_tree(values, lower=0, upper=99, epsilon=1.0, user_id=users, contributions_share=0.3)
    with pytest.raises(InvalidParameterError, match="contributions_cap"):
        dptree.range_tree(values, lower=0, upper=99, epsilon=1.0, user_id=users, max_contributions=2,
                          contributions_cap=20)
    with pytest.raises(InvalidParameterError, match="max_contributions"):
        dptree.range_tree(values, lower=0, upper=99, epsilon=1.0, user_id=users, max_contributions="privat")
    with pytest.raises(InvalidParameterError, match="user_id"):
        dptree.range_tree(values, lower=0, upper=99, epsilon=1.0, max_contributions="private")


# --------------------------------------------------------------------------- the choice is private


def _user_sets(max_users: int, top: int):
    for n in range(max_users + 1):
        yield from itertools.combinations_with_replacement(range(1, top + 1), n)


def test_the_choice_is_epsilon_dp_by_brute_force() -> None:
    """The exact law of the chosen bound on every set of up to 4 users with 1..6 records (cap 4:
    counts above it are capped) and every neighbour (one user added, with 1..6 records):
    max |log P0(k) / P1(k)| <= the choice's spent epsilon, approached on some pair."""
    plan = plan_private_contributions(lower=0, upper=9, epsilon=2.0, share=0.5, cap=4, user_id="u")
    spent = effective_epsilon(exponential_base(plan.choice_epsilon, 1), 1)
    assert spent <= plan.choice_epsilon
    worst = 0.0
    for counts in _user_sets(4, 6):
        hist0 = np.bincount(np.minimum(np.asarray(counts, dtype=np.int64), 4), minlength=5)
        law0 = _law(plan, hist0)
        for added in range(1, 7):
            hist1 = hist0.copy()
            hist1[min(added, 4)] += 1
            law1 = _law(plan, hist1)
            worst = max(worst, max(abs(math.log(law0[k] / law1[k])) for k in law0))
    assert worst <= spent + 1e-9
    assert worst > 0.3 * spent


def test_the_sampler_follows_the_law_and_targets_the_level() -> None:
    values, users = _heavy(1)
    plan = plan_private_contributions(lower=0, upper=99, epsilon=1.0, user_id=users)
    per_user = dptree.data.histograms.records_per_user(values, plan.tree_at(1), user_id=users, cap=plan.cap)
    law = _law(plan, per_user)
    src = dptree.noise.make_source(4)
    n = 4000
    draws = [plan.choose(per_user, src) for _ in range(n)]
    for k, p in law.items():
        count = draws.count(k)
        assert abs(count - n * p) <= 5 * math.sqrt(n * p * (1 - p)) + 1, (k, count, n * p)
    # the score is 0 at the least grid bound with at most `above` users above it
    c = np.bincount(users)
    grid = candidate_bounds(plan.cap)
    best = next(int(g) for g in grid if (c > g).sum() <= plan.above)
    assert max(law, key=law.get) == best
    # with a large choice budget the bound is that one
    sharp = plan_private_contributions(lower=0, upper=99, epsilon=100.0, share=0.5, user_id=users)
    sharp_per_user = dptree.data.histograms.records_per_user(values, sharp.tree_at(1), user_id=users, cap=sharp.cap)
    target = next((int(g) for g in grid if (c > g).sum() <= sharp.above), sharp.cap)  # else: the cap
    assert _law(sharp, sharp_per_user)[target] > 0.99
    small = plan_private_contributions(lower=0, upper=99, epsilon=100.0, share=0.5, user_id=users, cap=8)
    assert small.choose(dptree.data.histograms.records_per_user(values, small.tree_at(1), user_id=users, cap=8),
                        src) == 8  # more users than the level above every bound: the cap


# --------------------------------------------------------------------------- the release


def test_the_release_at_the_chosen_bound(tmp_path: Path) -> None:
    values, users = _heavy(2)
    rel = dptree.range_tree(values, lower=0, upper=99, epsilon=1.0, user_id=users, max_contributions="private",
                            rng=11)
    assert isinstance(rel, dptree.rangetree.release.PrivateContributionsRangeTree)
    k = rel.max_contributions
    assert k in candidate_bounds(100)
    st = rel.privacy
    assert st["max_contributions"] == k and st["contributions"]["chosen"] == k
    assert st["contributions"]["share"] == 0.15 and st["budget_requested"]["epsilon"] == 1.0
    assert st["budget_spent"]["epsilon"] <= 1.0 and st["guarantee"] == "pure epsilon-DP"
    assert st["budget_split"]["contributions"] == {"epsilon": 0.15}
    assert "(chosen privately)" in rel.summary()
    # the tree is the plan at k with the rest of the budget, its records bounded to k per user
    plan = plan_private_contributions(lower=0, upper=99, epsilon=1.0, user_id=users)
    assert rel.plan.noise_parameters == plan.tree_at(k).noise_parameters
    assert rel.total() == pytest.approx(np.minimum(np.bincount(users), k).sum(), abs=2000)
    path = tmp_path / "r.json"
    rel.save(path, allow_nonprivate=True)
    back = dptree.load(path)
    assert type(back) is type(rel) and back.max_contributions == k and back.privacy == rel.privacy
    assert back.count(10, 50) == rel.count(10, 50)
    doc = json.loads(path.read_text())
    other = next(int(g) for g in candidate_bounds(100) if g != k)
    for edit in (lambda d: d["parameters"]["contributions"].update(chosen=other),
                 lambda d: d["parameters"].update(max_contributions=other),
                 lambda d: d["parameters"]["contributions"].update(share=0.5),
                 lambda d: d["parameters"]["contributions"].update(above=1),
                 lambda d: d["privacy"]["contributions"].update(chosen=other),
                 lambda d: d["privacy"].update(max_contributions=other),
                 lambda d: d["parameters"].pop("contributions")):
        bad = json.loads(json.dumps(doc))
        edit(bad)
        bad["checksum"] = canonical_checksum(bad)  # the checksum is no signature
        edited = tmp_path / "edited.json"
        edited.write_text(json.dumps(bad))
        with pytest.raises(ReleaseFileError):
            dptree.load(edited)


def test_gaussian_release_and_its_file(tmp_path: Path) -> None:
    values, users = _heavy(3)
    rel = dptree.range_tree(values, lower=0, upper=99, epsilon=1.0, delta=1e-6, noise="gaussian", user_id=users,
                            max_contributions="private", rng=2)
    st = rel.privacy
    assert st["guarantee"] == "rho-zCDP, implies (epsilon, delta)-DP" and st["budget_spent"]["delta"] == 1e-6
    assert st["budget_spent"]["epsilon"] <= 1.0 + 1e-9
    rel.save(tmp_path / "g.json", allow_nonprivate=True)
    assert dptree.load(tmp_path / "g.json").privacy == st


def test_every_engine_gives_the_same_release(tmp_path: Path) -> None:
    values, users = _heavy(4, 800)
    table = pa.table({"v": values, "u": users})
    pq.write_table(table, tmp_path / "d.parquet")
    table.to_pandas().to_csv(tmp_path / "d.csv", index=False)
    kw = dict(lower=0, upper=99, epsilon=1.0, max_contributions="private", rng=5)
    ref = dptree.range_tree(values, user_id=users, **kw)
    for data in (table.to_pandas(), str(tmp_path / "d.parquet"), str(tmp_path / "d.csv")):
        got = dptree.range_tree(data, column="v", user_id="u", **kw)
        assert got.max_contributions == ref.max_contributions
        for a, b in zip(got.measurements, ref.measurements):
            assert (a is None and b is None) or np.array_equal(a, b)


@pytest.mark.slow
def test_spark_gives_the_same_release() -> None:
    from _spark import spark_frame

    values, users = _heavy(5, 400)
    kw = dict(lower=0, upper=99, epsilon=1.0, max_contributions="private", rng=6)
    ref = dptree.range_tree(values, user_id=users, **kw)
    got = dptree.range_tree(spark_frame({"v": values, "u": users}), column="v", user_id="u", **kw)
    assert got.max_contributions == ref.max_contributions
    for a, b in zip(got.measurements, ref.measurements):
        assert (a is None and b is None) or np.array_equal(a, b)
