"""The `dptree hierarchy` subcommand (registered on a test parser) and query_hierarchy."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from dptree.cli.hierarchy import query_hierarchy, register
from dptree.hierarchy.release import load_hierarchy_release


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dptree")
    register(p.add_subparsers(dest="command", required=True))
    return p


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    struct = pd.DataFrame(
        {"country": ["US", "US", "US", "FR"], "state": ["CA", "CA", "NY", None], "city": ["SF", "LA", None, None]}
    )
    struct.to_csv(tmp_path / "struct.csv", index=False)
    rows = pd.DataFrame(
        {
            "country": ["US"] * 30 + ["FR"] * 5,
            "state": ["CA"] * 20 + ["NY"] * 10 + [None] * 5,
            "city": ["SF"] * 12 + ["LA"] * 8 + [None] * 15,
        }
    )
    rows.to_csv(tmp_path / "rows.csv", index=False)
    rows.to_parquet(tmp_path / "rows.parquet")
    agg = pd.DataFrame(
        {"country": ["US", "US", "FR"], "state": ["CA", "NY", None], "city": ["SF", None, None], "n": [4, 2, 1]}
    )
    agg.to_csv(tmp_path / "agg.csv", index=False)
    edges = pd.DataFrame({"node": ["US", "CA", "SF", "LA", "NY", "FR"], "parent": [None, "US", "CA", "CA", "US", None]})
    edges.to_csv(tmp_path / "edges.csv", index=False)
    return {"dir": tmp_path}


def run(argv: list[str]) -> int:
    ns = parser().parse_args(["hierarchy", *argv])
    return int(ns.func(ns))


@pytest.mark.parametrize("data", ["rows.csv", "rows.parquet"])
def test_release_and_query(files: dict[str, Path], data: str) -> None:
    d = files["dir"]
    out = d / "rel.json"
    code = run(
        [
            str(d / data),
            "--levels",
            "country,state,city",
            "--structure",
            str(d / "struct.csv"),
            "--epsilon",
            "1",
            "--delta",
            "1e-6",
            "--method",
            "gaussian",
            "--seed",
            "3",
            "--allow-nonprivate",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    rel = load_hierarchy_release(out)
    assert rel.hierarchy.depth == 4 and rel.method == "gaussian"
    res = query_hierarchy(rel, ["US/CA", "FR"], ci=0.9)
    assert [r["node"] for r in res] == ["US/CA", "FR"]
    assert res[0]["ci_low"] <= res[0]["count"] <= res[0]["ci_high"] or res[0]["ci_low"] == 0.0
    assert json.dumps(query_hierarchy(str(out), ["US"], 0.95))  # JSON-safe
    assert query_hierarchy(rel.to_dict(), ["US"])[0]["count"] == rel.count("US")


def test_weights_parent_table_and_other(files: dict[str, Path]) -> None:
    d = files["dir"]
    out = d / "w.json"
    code = run(
        [
            str(d / "agg.csv"),
            "--levels",
            "country,state,city",
            "--structure",
            str(d / "edges.csv"),
            "--weight",
            "n",
            "--epsilon",
            "2",
            "--other",
            "(other)",
            "--seed",
            "1",
            "--allow-nonprivate",
            "--nonnegative",
            "--integer",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    rel = load_hierarchy_release(out)
    assert rel.count("US/(other)") >= 0 and rel.parameters["integer"]


def test_cli_errors_are_clear(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    d = files["dir"]
    base = [
        str(d / "rows.csv"),
        "--levels",
        "country,state,city",
        "--structure",
        str(d / "struct.csv"),
        "--out",
        str(d / "x.json"),
    ]
    assert run(base + ["--epsilon", "1", "--seed", "1"]) == 2  # seed without --allow-nonprivate
    assert "NOT private" in capsys.readouterr().err
    assert run(base + ["--epsilon", "1", "--method", "gaussian"]) == 2
    assert "delta > 0" in capsys.readouterr().err
    assert run([str(d / "missing.csv")] + base[1:] + ["--epsilon", "1"]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = [
        str(d / "rows.csv"),
        "--levels",
        "country,province",
        "--structure",
        str(d / "struct.csv"),
        "--out",
        str(d / "x.json"),
        "--epsilon",
        "1",
    ]
    assert run(bad) == 2
    assert re.search("level columns|no column", capsys.readouterr().err)
    pd.DataFrame({"country": ["US"], "state": ["CA"], "city": ["SF"], "n": [-1]}).to_csv(d / "neg.csv", index=False)
    assert run([str(d / "neg.csv")] + base[1:] + ["--epsilon", "1", "--weight", "n"]) == 2
    assert "negative" in capsys.readouterr().err


def test_private_run_without_seed(files: dict[str, Path]) -> None:
    d = files["dir"]
    out = d / "p.json"
    assert (
        run(
            [
                str(d / "rows.csv"),
                "--levels",
                "country,state,city",
                "--structure",
                str(d / "struct.csv"),
                "--epsilon",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert load_hierarchy_release(out).private


def test_main_cli_release_and_query(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """End to end through the lead's `dptree` entry point: hierarchy release, then query --node."""
    from dptree.cli.main import main

    d = files["dir"]
    out = d / "m.json"
    assert (
        main(
            [
                "hierarchy",
                str(d / "rows.csv"),
                "--levels",
                "country,state,city",
                "--structure",
                str(d / "struct.csv"),
                "--epsilon",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["query", str(out), "--node", "US/CA", "--node", "FR", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [a["query"] for a in doc["answers"]] == ["US/CA", "FR"]
    assert "Hierarchy release" in doc["release"]
    assert main(["query", str(out), "--node", "US/TX"]) == 2
    assert "names no node" in capsys.readouterr().err
