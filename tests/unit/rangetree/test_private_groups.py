"""range_tree(by=, groups="private"): the groups found privately, then one tree per released group.
The budget split, the files, the engines agreeing, and no output, error or progress line naming a
group that was not released."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dptree
from dptree.errors import DataError, InvalidParameterError, ReleaseFileError
from dptree.rangetree.private_groups import PrivateGroupsRelease, plan_private_groups

SECRET = "SECRET-group"


def _data(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    """Users in big groups, and one user alone in SECRET (kept with probability delta = 1e-9 at most)."""
    gen = np.random.default_rng(seed)
    groups = gen.choice(["north", "south", "east"], n, p=[0.5, 0.3, 0.2]).tolist() + [SECRET]
    return pd.DataFrame({"g": groups, "u": np.r_[np.arange(n) // 2, 10**6], "v": np.r_[gen.integers(0, 50, n), 3]})


def _release(data: Any, **kw: Any) -> Any:
    args = {"by": "g", "groups": "private", "user_id": "u", "column": "v", "lower": 0, "upper": 63, "epsilon": 1.0,
            "delta": 1e-9, "rng": 5, **kw}
    return dptree.range_tree(data, **args)


def test_the_groups_and_the_trees() -> None:
    df = _data()
    rel = _release(df, max_contributions=2)
    assert isinstance(rel, PrivateGroupsRelease) and rel.groups == ["east", "north", "south"]
    truth = df[(df.g == "north") & (df.v <= 20)].shape[0]
    assert abs(rel.count("north", 0, 20) - truth) < 6 * rel.stderr("north", 0, 20)
    st = rel.privacy
    assert st["guarantee"] == "(epsilon, delta)-DP" and st["budget_requested"] == {"epsilon": 1.0, "delta": 1e-9}
    assert st["budget_split"]["selection"] == {"epsilon": 0.5, "delta": 1e-9}
    assert st["budget_split"]["releases"] == {"epsilon": 0.5, "delta": 0.0}
    assert st["selection"]["policy"] == "optimal" and st["release"]["budget_spent"]["epsilon"] <= 0.5
    assert st["groups"] == rel.groups and rel["north"].privacy["budget_spent"]["epsilon"] <= 0.5
    loss = rel.plan.privacy_loss()
    assert loss.epsilon_delta()[0] <= 1.0 + 1e-12 and loss.epsilon_delta()[1] == 1e-9
    assert loss.measurements[0].family == "approx"
    # a Gaussian tree: the delta split too
    g = _release(df, noise="gaussian", groups_share=0.25)
    assert g.privacy["budget_split"]["selection"]["delta"] == 0.25e-9 and g.plan.tree.budget.delta == 0.75e-9


def test_the_same_seed_gives_the_same_release_on_every_engine(tmp_path: Path) -> None:
    df = _data()
    csv, parquet = tmp_path / "d.csv", tmp_path / "d.parquet"
    df.to_csv(csv, index=False)
    df.to_parquet(parquet)
    want = _release(df, max_groups=2, delta=0.2, epsilon=3.0)  # a large delta: SECRET may be released
    for data in (str(csv), str(parquet)):
        got = _release(data, max_groups=2, delta=0.2, epsilon=3.0)
        assert got.groups == want.groups
        assert got.to_document()["measurements"] == want.to_document()["measurements"]


def test_save_load_and_a_tampered_file(tmp_path: Path) -> None:
    rel = _release(_data())
    path = tmp_path / "r.json"
    rel.save(path, allow_nonprivate=True)
    back = dptree.load(path)
    assert isinstance(back, PrivateGroupsRelease) and back.groups == rel.groups
    assert back.count("south", 0, 30) == rel.count("south", 0, 30) and back.privacy == rel.privacy
    doc = json.loads(path.read_text())
    for edit in (lambda d: d["parameters"]["budget"].update(groups_share=0.9),
                 lambda d: d["privacy"]["budget_split"]["selection"].update(delta=1e-3),
                 lambda d: d["parameters"]["selection"].update(max_groups=3)):
        bad = json.loads(json.dumps(doc))
        edit(bad)
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        with pytest.raises(ReleaseFileError):
            dptree.load(tmp_path / "bad.json")
    empty = _release(_data(4), epsilon=0.01, delta=1e-12)  # no group reaches the threshold
    assert empty.groups == [] and empty.to_frame().empty and "0 group(s)" in empty.summary()
    empty.save(tmp_path / "e.json", allow_nonprivate=True)
    assert dptree.load(tmp_path / "e.json").groups == []


def test_an_unreleased_group_is_never_named(tmp_path: Path, cli_run: Any) -> None:
    df = _data()
    rel = _release(df)
    assert SECRET not in rel.groups and SECRET not in json.dumps(rel.to_document()) and SECRET not in rel.summary()
    with pytest.raises(InvalidParameterError) as err:
        rel[SECRET]
    assert SECRET not in str(err.value)
    bad = df.copy()
    bad.loc[bad.g == SECRET, "v"] = np.nan  # an invalid value in the unreleased group's row
    with pytest.raises(DataError) as err:
        _release(bad)
    assert SECRET not in str(err.value)
    missing = df.copy()
    missing.loc[0, "u"] = None
    with pytest.raises(DataError) as err:
        _release(missing)
    assert SECRET not in str(err.value)
    csv = tmp_path / "d.csv"
    df.to_csv(csv, index=False)
    code, out, err_text = cli_run(["release", csv, "--column", "v", "--lower", "0", "--upper", "63", "--by", "g",
                                   "--groups", "private", "--user-id", "u", "--epsilon", "1", "--delta", "1e-9",
                                   "--seed", "3", "--allow-nonprivate", "--progress", "--out", tmp_path / "r.json"])
    assert code == 0 and "north" in out
    assert SECRET not in out + err_text and SECRET not in (tmp_path / "r.json").read_text()
    code, out, err_text = cli_run(["query", tmp_path / "r.json", "--count", "0:10"])
    assert code == 0 and SECRET not in out + err_text


def test_refusals() -> None:
    df = _data(200)
    for kw, match in (({"delta": 0.0}, "delta > 0"), ({"noise": "gaussian", "rho": 0.5, "epsilon": None}, "epsilon"),
                      ({"neighbors": "replace"}, "add/remove"), ({"groups_share": 1.0}, "groups_share"),
                      ({"user_id": None, "max_contributions": 2}, "user_id"), ({"max_groups": 0}, "max_groups"),
                      ({"user_id": None, "max_groups": 2}, "max_groups")):
        with pytest.raises(InvalidParameterError, match=match):
            _release(df, **kw)
    with pytest.raises(InvalidParameterError, match="groups='private'"):
        dptree.range_tree(df, column="v", lower=0, upper=63, epsilon=1.0, max_groups=2)
    with pytest.raises(InvalidParameterError, match="by="):
        dptree.range_tree(df, column="v", groups="private", lower=0, upper=63, epsilon=1.0, delta=1e-6)
    # each record its own user: no user_id
    rel = dptree.range_tree(df, by="g", groups="private", column="v", lower=0, upper=63, epsilon=1.0, delta=1e-6,
                            rng=2)
    assert rel.groups == ["east", "north", "south"] and "one record" in rel.privacy["selection"]["unit"]
    plan = plan_private_groups(lower=0, upper=63, epsilon=1.0, delta=1e-6)
    assert plan.statement["budget_requested"] == {"epsilon": 1.0, "delta": 1e-6} and "groups" not in plan.statement
