"""``quantiles(..., user_id=..., max_contributions="private")``: the bound chosen privately, then
the quantiles at it by every method; both steps charged before the data; the file; the engines."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dptree
from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.io.release_file import canonical_checksum
from dptree.privacy.loss import Exponential
from dptree.quantiles.release import PrivateContributionsQuantiles, choice_plan
from dptree.rangetree.contributions import candidate_bounds

QS = [0.1, 0.5, 0.9]


def _heavy(seed: int, users: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    per_user = np.minimum(np.floor(gen.pareto(1.5, users) + 1).astype(np.int64), 1000)
    ids = np.repeat(np.arange(users), per_user)
    return gen.integers(0, 200, ids.size), ids


@pytest.mark.parametrize("method", ["tree", "approx", "exponential"])
def test_the_release_at_the_chosen_bound_and_its_file(method: str, tmp_path: Path) -> None:
    values, users = _heavy(1)
    rel = dptree.quantiles(values, QS, lower=0, upper=199, epsilon=1.0, method=method, user_id=users,
                           max_contributions="private", rng=5)
    assert isinstance(rel, PrivateContributionsQuantiles) and rel.method == method and rel.epsilon == 1.0
    k = rel.max_contributions
    assert k in candidate_bounds(100) and rel.privacy["contributions"]["chosen"] == k
    assert rel.privacy["budget_split"]["contributions"] == {"epsilon": 0.15}
    assert rel.privacy["budget_spent"]["epsilon"] <= 1.0 + 1e-12
    assert "(chosen privately)" in rel.summary()
    # the quantiles are those of the method at k with the rest of epsilon, from the same random source
    choice = choice_plan(method, 1.0, 0, 199, 1 if method == "tree" else None, 0.15, 100)
    src = dptree.noise.make_source(5)
    per_user = dptree.data.histograms.records_per_user(values, choice.tree_at(1), user_id=users, cap=100)
    assert choice.choose(per_user, src) == k
    at_k = dptree.plan_quantiles(QS, lower=0, upper=199, epsilon=choice.tree_budget, method=method, user_id=users,
                                 max_contributions=k).release(values, rng=src)
    assert at_k.values == rel.values and at_k.ci_low == rel.ci_low
    path = tmp_path / "q.json"
    rel.save(path, allow_nonprivate=True)
    back = dptree.load(path)
    assert type(back) is PrivateContributionsQuantiles and back.privacy == rel.privacy and back.values == rel.values
    doc = json.loads(path.read_text())
    other = next(int(g) for g in candidate_bounds(100) if g != k)
    for edit in (lambda d: d["parameters"]["contributions"].update(chosen=other),
                 lambda d: d["parameters"].update(max_contributions=other),
                 lambda d: d["parameters"]["contributions"].update(share=0.5),
                 lambda d: d["parameters"].update(epsilon=2.0),
                 lambda d: d["parameters"].pop("contributions")):
        bad = json.loads(json.dumps(doc))
        edit(bad)
        bad["checksum"] = canonical_checksum(bad)
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        with pytest.raises(ReleaseFileError):
            dptree.load(tmp_path / "bad.json")


@pytest.mark.parametrize("method", ["tree", "approx", "exponential", "auto"])
def test_both_steps_are_in_the_loss_within_the_budget(method: str, tmp_path: Path) -> None:
    plan = dptree.plan_quantiles(QS, lower=0, upper=199, epsilon=1.0, method=method, user_id="u",
                                 max_contributions="private", contributions_share=0.2, contributions_cap=50)
    first, *rest = plan.privacy_loss().measurements
    assert isinstance(first, Exponential) and math.isclose(first.epsilon, 0.2) and rest
    assert plan.privacy_loss().epsilon() <= 1.0 * (1 + 1e-12) and math.isclose(plan.privacy_loss().epsilon(), 1.0)
    assert plan.budget.epsilon == 1.0 and plan.statement["private"] is True
    with dptree.Ledger(tmp_path / "b.ledger", total_epsilon=1.0) as ledger:
        with ledger.charge_for(plan, label="quantiles") as charge:
            assert charge.epsilon == 1.0
        assert ledger.history()[0]["loss"]["measurements"][0]["family"] == "exponential"


@pytest.mark.parametrize(("kwargs", "match"), [
    ({}, "user_id"),
    ({"user_id": "u", "groups": ["a", "b"]}, "by group"),
    ({"user_id": "u", "neighbors": "replace"}, "add_remove"),
    ({"user_id": "u", "contributions_share": 0.0}, "contributions_share"),
    ({"user_id": "u", "contributions_cap": 10**9}, "contributions_cap"),
    ({"user_id": "u", "epsilon": 1e-8}, "contributions_cap|supported"),
    ({"user_id": "u", "method": "exponential", "lower": 0.0, "upper": 1.0}, "integer domain"),
])
def test_public_refusals(kwargs: dict, match: str) -> None:
    args = {"lower": 0, "upper": 199, "epsilon": 1.0, "max_contributions": "private", **kwargs}
    with pytest.raises(InvalidParameterError, match=match):
        dptree.plan_quantiles(QS, **args)
    with pytest.raises(InvalidParameterError, match="contributions_share"):
        dptree.plan_quantiles(QS, lower=0, upper=199, epsilon=1.0, user_id="u", contributions_share=0.3)


def test_every_engine_gives_the_same_release(tmp_path: Path) -> None:
    values, users = _heavy(2, 600)
    table = pa.table({"v": values, "u": users})
    pq.write_table(table, tmp_path / "d.parquet")
    for method in ("tree", "exponential"):
        kw = dict(lower=0, upper=199, epsilon=1.0, method=method, max_contributions="private", rng=9)
        ref = dptree.quantiles(values, QS, user_id=users, **kw)
        for data in (table.to_pandas(), str(tmp_path / "d.parquet")):
            got = dptree.quantiles(data, QS, column="v", user_id="u", **kw)
            assert got.max_contributions == ref.max_contributions and got.values == ref.values, method
