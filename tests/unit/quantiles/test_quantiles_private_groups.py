"""dptree.quantiles(by=, groups="private"): the groups found privately, then each released group's
quantiles; the plan, the files, the command line, and no group named that was not released."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dptree
from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.quantiles.private_groups import PrivateGroupsQuantiles

SECRET = "SECRET-group"


def _data(n: int = 2000) -> pd.DataFrame:
    gen = np.random.default_rng(1)
    groups = gen.choice(["x", "y"], n).tolist() + [SECRET]
    return pd.DataFrame({"g": groups, "u": np.r_[np.arange(n), 10**6], "v": np.r_[gen.integers(0, 100, n), 7]})


@pytest.mark.parametrize("method", ["approx", "tree"])
def test_quantiles_of_the_released_groups(tmp_path: Path, method: str) -> None:
    df = _data()
    rel = dptree.quantiles(df, [0.5], column="v", by="g", groups="private", user_id="u", lower=0, upper=99,
                           epsilon=1.0, delta=1e-9, method=method, rng=4)
    assert isinstance(rel, PrivateGroupsQuantiles) and rel.groups == ["x", "y"]
    assert all(abs(rel[g].values[0] - 50) < 15 for g in rel.groups)
    assert rel.privacy["budget_split"]["releases"] == {"epsilon": 0.5, "delta": 0.0}
    assert rel["x"].epsilon == 0.5 and SECRET not in json.dumps(rel.to_document(), default=str)
    path = tmp_path / "q.json"
    rel.save(path, allow_nonprivate=True)
    back = dptree.load(path)
    assert back.groups == rel.groups and back["y"].values == rel["y"].values and back.privacy == rel.privacy
    doc = json.loads(path.read_text())
    doc["parameters"]["budget"]["groups_share"] = 0.25
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(ReleaseFileError):
        dptree.load(tmp_path / "bad.json")


def test_the_plan_and_its_refusals() -> None:
    plan = dptree.plan_quantiles([0.25, 0.75], lower=0, upper=99, epsilon=1.0, delta=1e-6, groups="private",
                                 groups_share=0.2, method="approx")
    loss = plan.privacy_loss()
    assert loss.measurements[0].family == "approx" and loss.epsilon_delta() == pytest.approx((1.0, 1e-6))
    assert plan.budget.kind == "approx" and plan.statement["budget_split"]["selection"]["epsilon"] == 0.2
    with pytest.raises(InvalidParameterError, match="delta"):
        dptree.plan_quantiles([0.5], lower=0, upper=99, epsilon=1.0, delta=1e-6)  # no delta without private groups
    with pytest.raises(InvalidParameterError, match="delta > 0"):
        dptree.plan_quantiles([0.5], lower=0, upper=99, epsilon=1.0, groups="private")
    with pytest.raises(InvalidParameterError, match="groups='private'"):
        dptree.plan_quantiles([0.5], lower=0, upper=99, epsilon=1.0, max_groups=2)
    with pytest.raises(InvalidParameterError, match="by"):
        plan.release(_data())


def test_the_command_line(tmp_path: Path, cli_run: Any) -> None:
    csv = tmp_path / "d.csv"
    _data().to_csv(csv, index=False)
    base = ["quantiles", csv, "--column", "v", "--q", "0.5", "--lower", "0", "--upper", "99", "--by", "g",
            "--groups", "private", "--user-id", "u", "--epsilon", "1", "--delta", "1e-9", "--seed", "2",
            "--allow-nonprivate"]
    code, out, err = cli_run([*base, "--out", tmp_path / "q.json"])
    assert code == 0 and "2 group(s) found privately" in out and "group x" in out, err
    assert SECRET not in out + err + (tmp_path / "q.json").read_text()
    code, _, err = cli_run([*base, "--out", tmp_path / "q-{group}.json"])
    assert code == 2 and "one file" in err
    code, _, err = cli_run(["quantiles", csv, "--column", "v", "--q", "0.5", "--lower", "0", "--upper", "99",
                            "--epsilon", "1", "--max-groups", "2"])
    assert code == 2 and "--groups private" in err
    code, _, err = cli_run(["release", csv, "--column", "v", "--lower", "0", "--upper", "99", "--by", "g", "--groups",
                            "private", "--epsilon", "1", "--out", tmp_path / "r.json"])
    assert code == 2 and "--delta" in err
