"""``dptree quantiles``: m quantiles with intervals from a file, and ``dptree query`` on its release."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dptree


def _data(tmp_path: Path) -> tuple[Path, np.ndarray]:
    x = np.random.default_rng(0).integers(0, 1000, 3000)
    f = tmp_path / "d.csv"
    f.write_text("v\n" + "\n".join(map(str, x)) + "\n")
    return f, x


def test_the_command_releases_what_the_library_releases(tmp_path: Path, cli_run: Any) -> None:
    f, x = _data(tmp_path)
    out = tmp_path / "q.json"
    for method in ("tree", "approx", "joint"):
        code, printed, err = cli_run(["quantiles", str(f), "--column", "v", "--q", "0.1,0.5,0.9", "--lower", "0",
                                      "--upper", "1023", "--epsilon", "1", "--method", method, "--n", "3000",
                                      "--seed", "4", "--allow-nonprivate", "--out", str(out), "--force"])
        assert code == 0, err
        want = dptree.quantiles(x, [0.1, 0.5, 0.9], lower=0, upper=1023, epsilon=1.0, method=method, n=3000, rng=4)
        rows = [line.split() for line in printed.splitlines() if line.startswith("quantile(")]
        assert [int(r[1]) for r in rows] == want.values
        assert [r[2] for r in rows] == [f"[{lo}," for lo in want.ci_low]
        saved = dptree.load(str(out))
        assert saved.values == want.values and saved.method == method
        code, shown, err = cli_run(["query", str(out), "--format", "json"])
        assert code == 0, err
        answers = json.loads(shown)["answers"]
        assert [a["estimate"] for a in answers] == want.values and [a["ci_high"] for a in answers] == want.ci_high


def test_query_refuses_what_a_quantiles_release_cannot_answer(tmp_path: Path, cli_run: Any) -> None:
    f, _ = _data(tmp_path)
    out = tmp_path / "q.json"
    code, _, err = cli_run(["quantiles", str(f), "--column", "v", "--q", "0.5", "--lower", "0", "--upper", "1023",
                            "--epsilon", "1", "--level", "0.9", "--out", str(out)])
    assert code == 0, err
    code, printed, _ = cli_run(["query", str(out)])
    assert code == 0 and "90% CI" in printed  # the release's own level
    for argv in (["--cdf", "3"], ["--ci", "0.95"], ["--bins", "4"]):
        code, _, err = cli_run(["query", str(out), *argv])
        assert code == 2 and argv[0] in err and err.count("\n") == 1, err


def test_dates_and_a_numeric_tree_width(tmp_path: Path, cli_run: Any) -> None:
    days = np.datetime64("2024-01-01") + np.random.default_rng(1).integers(0, 366, 800)
    f = tmp_path / "days.csv"
    f.write_text("day\n" + "\n".join(map(str, days)) + "\n")
    code, printed, err = cli_run(["quantiles", str(f), "--column", "day", "--q", "0.5", "--lower", "2024-01-01",
                                  "--upper", "2024-12-31", "--epsilon", "1", "--method", "approx", "--seed", "2",
                                  "--allow-nonprivate"])
    assert code == 0, err
    want = dptree.quantiles(days, [0.5], lower="2024-01-01", upper="2024-12-31", epsilon=1.0, method="approx", rng=2)
    assert f"quantile(0.5)  {np.datetime_as_string(want.values[0], unit='auto')}" in printed
    g, x = _data(tmp_path)
    code, printed, err = cli_run(["quantiles", str(g), "--column", "v", "--q", "0.5", "--lower", "0", "--upper", "1023",
                                  "--width", "8", "--method", "tree", "--epsilon", "1", "--seed", "2",
                                  "--allow-nonprivate"])
    assert code == 0, err
    want = dptree.quantiles(x, [0.5], lower=0, upper=1023, width=8, method="tree", epsilon=1.0, rng=2)
    row = next(line.split() for line in printed.splitlines() if line.startswith("quantile("))
    assert int(row[1]) == want.values[0] and row[2:] == [f"[{want.ci_low[0]},", f"{want.ci_high[0]}]"]


def test_by_group_releases_what_the_library_releases_one_file_per_group(tmp_path: Path, cli_run: Any) -> None:
    g = np.random.default_rng(1)
    x, grp = g.integers(0, 1000, 800), g.choice(["north", "south"], 800)
    f = tmp_path / "g.csv"
    f.write_text("v,g\n" + "\n".join(f"{v},{k}" for v, k in zip(x, grp)) + "\n")
    base = ["quantiles", str(f), "--column", "v", "--q", "0.25,0.75", "--lower", "0", "--upper", "1023",
            "--epsilon", "1", "--seed", "2", "--allow-nonprivate", "--by", "g"]
    code, printed, err = cli_run(base + ["--groups", "north,south,east", "--out", str(tmp_path / "q-{group}.json")])
    assert code == 0, err
    want = dptree.quantiles(x, [0.25, 0.75], lower=0, upper=1023, epsilon=1.0, by=grp,
                            groups=["north", "south", "east"], rng=2)
    rows = [int(line.split()[1]) for line in printed.splitlines() if line.startswith("quantile(")]
    assert rows == [v for k in ("north", "south", "east") for v in want[k].values]
    assert [line.split(":")[0] for line in printed.splitlines() if line.startswith("group ")] == [
        "group north", "group south", "group east"]
    assert dptree.load(str(tmp_path / "q-east.json")).values == want["east"].values
    for extra, message in ((["--groups", "north"], "--unknown-groups drop"),
                           (["--groups", "north,south", "--out", str(tmp_path / "one.json")], "{group}")):
        code, _, err = cli_run(base + extra)
        assert code == 2 and message in err
    assert not (tmp_path / "one.json").exists()


def test_query_shows_every_group_of_a_grouped_quantiles_file(tmp_path: Path, cli_run: Any) -> None:
    x, grp = np.arange(300), np.where(np.arange(300) < 100, "a", "b")
    rel = dptree.quantiles(x, [0.5, 0.9], lower=0, upper=511, epsilon=1.0, by=grp, groups=["a", "b"], n=150, rng=3)
    rel.save(tmp_path / "g.json", allow_nonprivate=True)
    code, shown, err = cli_run(["query", str(tmp_path / "g.json"), "--format", "json"])
    assert code == 0, err
    answers = json.loads(shown)["answers"]
    assert [a["query"] for a in answers] == ["a: quantile(0.5)", "a: quantile(0.9)", "b: quantile(0.5)",
                                             "b: quantile(0.9)"]
    assert [a["estimate"] for a in answers] == rel["a"].values + rel["b"].values
    assert [a["ci_low"] for a in answers] == rel["a"].ci_low + rel["b"].ci_low


def test_user_id_bounds_each_person_like_the_library(tmp_path: Path, cli_run: Any) -> None:
    g = np.random.default_rng(2)
    users = np.r_[np.repeat(np.arange(300), 2), [999] * 200]
    x = np.r_[g.integers(0, 100, 600), [99] * 200]
    f = tmp_path / "u.csv"
    f.write_text("v,u\n" + "\n".join(f"{v},{u}" for v, u in zip(x, users)) + "\n")
    code, printed, err = cli_run(["quantiles", str(f), "--column", "v", "--q", "0.5,0.9", "--lower", "0", "--upper",
                                  "99", "--epsilon", "1", "--user-id", "u", "--max-contributions", "2", "--seed", "1",
                                  "--allow-nonprivate", "--out", str(tmp_path / "q.json")])
    assert code == 0, err
    want = dptree.quantiles(x, [0.5, 0.9], lower=0, upper=99, epsilon=1.0, user_id=users, max_contributions=2, rng=1)
    assert [int(line.split()[1]) for line in printed.splitlines() if line.startswith("quantile(")] == want.values
    assert dptree.load(str(tmp_path / "q.json")).max_contributions == 2


def test_by_group_and_user_id_together_bound_each_person_across_groups(tmp_path: Path, cli_run: Any) -> None:
    g = np.random.default_rng(3)
    users = np.r_[np.repeat(np.arange(300), 2), [999] * 200]
    x = np.r_[g.integers(0, 100, 600), [99] * 200]
    groups = np.where(np.arange(800) % 2 == 0, "a", "b")
    f = tmp_path / "ug.csv"
    f.write_text("v,u,g\n" + "\n".join(f"{v},{u},{k}" for v, u, k in zip(x, users, groups)) + "\n")
    code, printed, err = cli_run(["quantiles", str(f), "--column", "v", "--q", "0.5,0.9", "--lower", "0", "--upper",
                                  "99", "--epsilon", "1", "--user-id", "u", "--max-contributions", "2", "--by", "g",
                                  "--groups", "a,b", "--seed", "1", "--allow-nonprivate",
                                  "--out", str(tmp_path / "q-{group}.json")])
    assert code == 0, err
    want = dptree.quantiles(x, [0.5, 0.9], lower=0, upper=99, epsilon=1.0, user_id=users, max_contributions=2,
                            by=groups, groups=["a", "b"], rng=1)
    for group in ("a", "b"):
        one = dptree.load(str(tmp_path / f"q-{group}.json"))
        assert one.values == want[group].values and one.max_contributions == 2


def test_n_min_narrows_the_mechanism_intervals_like_the_library(tmp_path: Path, cli_run: Any) -> None:
    x = np.random.default_rng(5).integers(0, 100, 2000)
    f = tmp_path / "v.csv"
    f.write_text("v\n" + "\n".join(map(str, x)) + "\n")
    code, printed, err = cli_run(["quantiles", str(f), "--column", "v", "--q", "0.25,0.5,0.75", "--lower", "0",
                                  "--upper", "99", "--epsilon", "1", "--method", "approx", "--n-min", "1500", "--seed",
                                  "2", "--allow-nonprivate", "--out", str(tmp_path / "q.json")])
    assert code == 0, err
    want = dptree.quantiles(x, [0.25, 0.5, 0.75], lower=0, upper=99, epsilon=1.0, method="approx", n_min=1500, rng=2)
    got = dptree.load(str(tmp_path / "q.json"))
    assert (got.ci_low, got.ci_high, got.n_min) == (want.ci_low, want.ci_high, 1500)
    assert got.ci_low[1] > 0 and "domain's ends" not in printed


@pytest.mark.parametrize("q", ["0.5,", ",0.5", "0.1,,0.9", "", "a"])
def test_a_malformed_level_list_is_refused(tmp_path: Path, cli_run: Any, q: str) -> None:
    """'0.5,' was taken as one level while '--groups a,b,' was refused: an empty item may be a
    level the caller meant to type, so both refuse it."""
    f, _ = _data(tmp_path)
    code, _, err = cli_run(["quantiles", str(f), "--column", "v", "--q", q, "--lower", "0", "--upper", "1023",
                            "--epsilon", "1"])
    assert code == 2 and "--q" in err and err.count("\n") == 1, err
