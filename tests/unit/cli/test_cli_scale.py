"""The CLI at scale: release --ledger/--user-id/--by, dptree budget, dptree report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dptree
from dptree.cli.ledger_options import charged
from dptree.errors import InvalidParameterError
from dptree.privacy.ledger import Ledger
from dptree.rangetree.release import plan_range_tree

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "data" / "people.csv"
RELEASE = ["release", str(EXAMPLE), "--column", "age", "--lower", "0", "--upper", "120"]


def test_ledgered_releases_until_the_budget_is_spent(tmp_path: Path, cli_run: Any) -> None:
    led = str(tmp_path / "people.ledger")
    code, out, err = cli_run(["budget", led, "--create", "--total-epsilon", "1.0"])
    assert code == 0 and "spent in 0 charge(s)" in out, err
    for i in range(2):
        out_i = str(tmp_path / f"r{i}.json")
        code, out, err = cli_run(RELEASE + ["--epsilon", "0.5", "--ledger", led, "--out", out_i])
        assert code == 0, err
    code, out, err = cli_run(RELEASE + ["--epsilon", "0.1", "--ledger", led, "--out", str(tmp_path / "r2.json")])
    assert code == 2 and err.count("\n") == 1 and "would exceed the total budget" in err
    assert not (tmp_path / "r2.json").exists()  # refused before any output
    code, out, err = cli_run(["budget", led])
    assert code == 0 and "spent in 2 charge(s): epsilon=1 of 1" in out
    assert out.count("done") == 2 and "r1.json" in out
    code, out, _ = cli_run(["budget", led, "--format", "json"])
    doc = json.loads(out)
    assert doc["spent"]["charges"] == 2 and [h["output"] for h in doc["history"]] == [
        str(tmp_path / "r0.json"), str(tmp_path / "r1.json")]


def test_ledger_errors_are_one_line(tmp_path: Path, cli_run: Any) -> None:
    missing = str(tmp_path / "none.ledger")
    code, _, err = cli_run(RELEASE + ["--epsilon", "0.5", "--ledger", missing, "--out", str(tmp_path / "r.json")])
    assert code == 2 and f"dptree budget {missing} --create" in err and err.count("\n") == 1
    junk = tmp_path / "junk.ledger"
    junk.write_bytes(b"garbage" * 1000)
    code, _, err = cli_run(RELEASE + ["--epsilon", "0.5", "--ledger", str(junk), "--out", str(tmp_path / "r.json")])
    assert code == 2 and "corrupt" in err and not (tmp_path / "r.json").exists()
    code, _, err = cli_run(["budget", missing])
    assert code == 2 and "not found" in err
    led = str(tmp_path / "b.ledger")
    cli_run(["budget", led, "--create", "--total-rho", "0.5"])
    code, _, err = cli_run(["budget", led, "--create", "--total-rho", "0.5"])
    assert code == 2 and "already exists" in err
    code, _, err = cli_run(["budget", str(tmp_path / "c.ledger"), "--create"])
    assert code == 2 and "--total-epsilon" in err
    # a bad column fails on the data, after the charge: the charge stays, marked failed
    code, _, err = cli_run(["release", str(EXAMPLE), "--column", "nope", "--lower", "0", "--upper", "9",
                            "--noise", "gaussian", "--rho", "0.1", "--ledger", led,
                            "--out", str(tmp_path / "x.json")])
    assert code == 2 and "not found" in err and "stays spent" in err and err.count("\n") == 1
    (h,) = Ledger(led).history()
    assert h["status"] == "failed" and h["rho"] == pytest.approx(0.1)
    # a bad parameter fails before it: nothing more is spent
    code, _, err = cli_run(["release", str(EXAMPLE), "--column", "age", "--lower", "0", "--upper", "9",
                            "--noise", "gaussian", "--rho", "-0.1", "--ledger", led,
                            "--out", str(tmp_path / "x.json")])
    assert code == 2 and "stays spent" not in err
    assert Ledger(led).spent().charges == 1


def test_gaussian_release_charges_rho(tmp_path: Path, cli_run: Any) -> None:
    led = str(tmp_path / "b.ledger")
    cli_run(["budget", led, "--create", "--total-rho", "0.5"])
    code, _, err = cli_run(RELEASE + ["--noise", "gaussian", "--rho", "0.2", "--ledger", led, "--ledger-label", "ages",
                           "--out", str(tmp_path / "g.json")])
    assert code == 0, err
    (h,) = Ledger(led).history()
    assert h["label"] == "ages" and h["kind"] == "zcdp" and h["rho"] == pytest.approx(0.2)


def test_user_bounded_release(tmp_path: Path, cli_run: Any) -> None:
    df = pd.DataFrame({"age": np.repeat([30, 50, 70], [1, 5, 20]), "who": np.repeat(["a", "b", "c"], [1, 5, 20])})
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "r.json"
    code, _, err = cli_run(["release", str(path), "--column", "age", "--lower", "0", "--upper", "99", "--epsilon", "50",
                            "--user-id", "who", "--max-contributions", "2", "--seed", "1", "--allow-nonprivate",
                            "--out", str(out)])
    assert code == 0, err
    rel = dptree.load(out)
    assert rel.privacy["max_contributions"] == 2
    assert abs(rel.total() - 5) < 6 * rel.total_stderr()  # 1 + 2 + 2 records kept, not 26
    code, _, err = cli_run(["release", str(path), "--column", "age", "--lower", "0", "--upper", "99", "--epsilon", "1",
                            "--user-id", "whom", "--out", str(out), "--force"])
    assert code == 2 and "not found" in err


def test_grouped_release(tmp_path: Path, cli_run: Any) -> None:
    df = pd.DataFrame({"age": [20, 30, 40, 50], "region": ["n", "s", "n", "x"]})
    path = tmp_path / "d.parquet"
    df.to_parquet(path)
    led = str(tmp_path / "b.ledger")
    cli_run(["budget", led, "--create", "--total-epsilon", "1"])
    base = ["release", str(path), "--column", "age", "--lower", "0", "--upper", "99", "--epsilon", "1",
            "--by", "region", "--ledger", led]
    # rows outside the listed groups are found in the data: after the charge, which stays
    code, _, err = cli_run(base + ["--groups", "n,s,e", "--out", str(tmp_path / "r-{group}.json")])
    assert code == 2 and "not in groups" in err and "stays spent" in err
    (h,) = Ledger(led).history()
    assert h["status"] == "failed"
    led = str(tmp_path / "b2.ledger")
    cli_run(["budget", led, "--create", "--total-epsilon", "1"])
    base[base.index("--ledger") + 1] = led
    code, out, err = cli_run(base + ["--groups", "n,s,e", "--unknown-groups", "drop",
                             "--out", str(tmp_path / "r-{group}.json")])
    assert code == 0 and "3 group releases" in out, err
    assert all((tmp_path / f"r-{g}.json").exists() for g in "nse")
    (h,) = Ledger(led).history()  # one charge for all groups (parallel composition)
    assert h["epsilon"] == 1.0 and "r-e.json" in h["output"]
    code, _, err = cli_run(base + ["--groups", "n", "--out", str(tmp_path / "r.json")])
    assert code == 2 and "{group}" in err
    code, _, err = cli_run(["release", str(path), "--column", "age", "--lower", "0", "--upper", "99", "--epsilon", "1",
                            "--by", "region", "--out", str(tmp_path / "r-{group}.json")])
    assert code == 2 and "--groups" in err


def test_release_without_new_options_is_unchanged(tmp_path: Path, cli_run: Any) -> None:
    code, out, err = cli_run(RELEASE + ["--epsilon", "1", "--out", str(tmp_path / "r.json")])
    assert code == 0 and "RangeTree" in out, err


def test_charged_helper(tmp_path: Path) -> None:
    from dptree.interior import plan_quantile

    plan = plan_range_tree(lower=0, upper=9, epsilon=0.5)
    with charged(None, plan, "x") as c:
        assert c is None
    with pytest.raises(InvalidParameterError, match="--ledger needs a file name"):
        with charged("", plan, "x"):  # used to mean "no ledger"
            pass
    with pytest.raises(InvalidParameterError, match="--ledger needs a file name"):
        with charged("", plan_quantile(0.5, lower=0, upper=9, epsilon=0.5), "x"):
            pass
    path = tmp_path / "b.ledger"
    Ledger(path, total_epsilon=1.0).close()
    with charged(str(path), plan, "x") as c:
        c.output = "o.json"
    with charged(str(path), plan_quantile(0.5, lower=0, upper=9, epsilon=0.25), "y"):  # another product's plan
        pass
    h, h2 = Ledger(path).history()
    assert (h["status"], h["output"], h["epsilon"]) == ("done", "o.json", 0.5)
    assert (h2["status"], h2["epsilon"], h2["label"]) == ("done", 0.25, "y")


def test_report_command(tmp_path: Path, cli_run: Any) -> None:
    rel = tmp_path / "r.json"
    cli_run(RELEASE + ["--epsilon", "1", "--out", str(rel)])
    html = tmp_path / "report.html"
    code, out, err = cli_run(["report", str(rel), "--out", str(html)])
    assert code == 0, err
    text = html.read_text()
    for part in ("<h2>Privacy</h2>", "e^epsilon = 2.718", "data:image/png;base64,", "<th>q</th>", "0.5"):
        assert part in text
    code, _, err = cli_run(["report", str(tmp_path / "missing.json"), "--out", str(html)])
    assert code == 2 and err.count("\n") == 1
    code, _, err = cli_run(["report", str(rel), "--out", str(html), "--ci", "1.5"])
    assert code == 2 and "--ci must be" in err


def test_old_ledger_is_upgraded_from_the_cli(tmp_path: Path, cli_run: Any) -> None:
    """A ledger of format 1 (no chain) is refused with the command that upgrades it."""
    import sqlite3

    led = tmp_path / "old.ledger"
    con = sqlite3.connect(led, isolation_level=None)
    con.execute("CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    con.execute("CREATE TABLE charges (id INTEGER PRIMARY KEY AUTOINCREMENT, created_utc TEXT NOT NULL, "
                "label TEXT NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('pure', 'approx', 'zcdp')), "
                "epsilon TEXT NOT NULL, delta TEXT NOT NULL, rho TEXT NOT NULL, status TEXT NOT NULL "
                "CHECK (status IN ('charged', 'done', 'failed')), output TEXT, pid INTEGER NOT NULL)")
    meta = {"format": "dptree-ledger", "version": "1", "total_epsilon": "1.0", "total_delta": "0.0",
            "total_rho": "", "created_utc": "2026-01-01T00:00:00Z"}
    con.executemany("INSERT INTO ledger_meta VALUES (?, ?)", meta.items())
    con.execute("INSERT INTO charges(created_utc, label, kind, epsilon, delta, rho, status, output, pid) "
                "VALUES ('2026-01-01T00:00:00Z', 'old', 'pure', '0.5', '0.0', '0.0', 'done', NULL, 1)")
    con.close()
    argv = RELEASE + ["--epsilon", "0.25", "--ledger", str(led), "--out", str(tmp_path / "r.json")]
    code, _, err = cli_run(argv)
    assert code == 2 and f"dptree budget {led} --upgrade" in err and not (tmp_path / "r.json").exists()
    code, out, err = cli_run(["budget", str(led)])
    assert code == 2 and "--upgrade" in err
    code, _, err = cli_run(["budget", str(led), "--upgrade"])
    assert code == 0 and "1 charge(s) checked" in err
    code, _, err = cli_run(argv)
    assert code == 0, err
    code, out, _ = cli_run(["budget", str(led)])
    assert "spent in 2 charge(s): epsilon=0.75 of 1" in out
    code, _, err = cli_run(["budget", str(led), "--upgrade", "--total-epsilon", "2"])
    assert code == 2 and "--upgrade keeps" in err


def test_budget_refuses_a_tampered_ledger(tmp_path: Path, cli_run: Any) -> None:
    import sqlite3

    led = str(tmp_path / "b.ledger")
    cli_run(["budget", led, "--create", "--total-epsilon", "1"])
    cli_run(RELEASE + ["--epsilon", "0.5", "--ledger", led, "--out", str(tmp_path / "r.json")])
    con = sqlite3.connect(led, isolation_level=None)
    con.execute("DELETE FROM charges")
    con.close()
    for argv in (["budget", led], RELEASE + ["--epsilon", "0.5", "--ledger", led, "--out", str(tmp_path / "s.json")]):
        code, _, err = cli_run(argv)
        assert code == 2 and "restore it from a backup" in err and err.count("\n") == 1
    assert not (tmp_path / "s.json").exists()


def test_query_answers_every_group_of_a_grouped_range_tree_file(tmp_path: Path, cli_run: Any) -> None:
    x, g = np.arange(900) % 100, np.where(np.arange(900) % 3 == 0, "a", "b")
    rel = dptree.range_tree(x, by=g, groups=["a", "b"], lower=0, upper=99, epsilon=1.0, rng=1)
    rel.save(tmp_path / "g.json", allow_nonprivate=True)  # one file of kind range_tree_groups
    code, out, err = cli_run(["query", str(tmp_path / "g.json"), "--count", "10:20", "--quantile", "0.5",
                              "--format", "json"])
    assert code == 0, err
    answers = json.loads(out)["answers"]
    assert [a["query"] for a in answers] == ["a: count[10, 20]", "a: quantile(0.5)", "b: count[10, 20]",
                                             "b: quantile(0.5)"]
    for group in ("a", "b"):
        want = rel[group].answer(count=[(10, 20)], quantile=[0.5]).rows
        got = [a for a in answers if a["group"] == group]
        assert [a["estimate"] for a in got] == pytest.approx([w["estimate"] for w in want])
        # the count's interval is exact; the quantile's simulation is seeded from the release itself,
        # so the file read back gives the in-memory release's interval
        for a, w in zip(got, want):
            assert [a["ci_low"], a["ci_high"]] == pytest.approx([w["ci_low"], w["ci_high"]])
