"""The `dptree hierarchy` subcommand and query_hierarchy."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from dptree.cli.query import query_hierarchy
from dptree.hierarchy import load_hierarchy_release


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


def _hierarchy_argv(d: Path, data: str, out: Path, *extra: str, structure: str = "struct.csv",
                    levels: str = "country,state,city") -> list[str]:
    """The arguments of ``dptree hierarchy`` over the files in ``d`` (``extra`` before ``--out``)."""
    return ["hierarchy", str(d / data), "--levels", levels, "--structure", str(d / structure), *extra,
            "--out", str(out)]


@pytest.mark.parametrize("data", ["rows.csv", "rows.parquet"])
def test_release_and_query(files: dict[str, Path], data: str, cli_run: Any) -> None:
    d = files["dir"]
    out = d / "rel.json"
    code, stdout, err = cli_run(_hierarchy_argv(d, data, out, "--epsilon", "1", "--delta", "1e-6", "--method",
                                                "gaussian", "--seed", "3", "--allow-nonprivate"))
    assert code == 0, err
    assert stdout.startswith("Hierarchy release:") and "NOT PRIVATE" in stdout  # the result on stdout
    assert err == f"wrote {out}\n"  # the diagnostic on stderr
    rel = load_hierarchy_release(out)
    assert rel.hierarchy.depth == 4 and rel.method == "gaussian"
    res = query_hierarchy(rel, ["US/CA", "FR"], ci=0.9)
    assert [r["node"] for r in res] == ["US/CA", "FR"]
    assert res[0]["ci_low"] <= res[0]["count"] <= res[0]["ci_high"] or res[0]["ci_low"] == 0.0
    assert json.dumps(query_hierarchy(str(out), ["US"], 0.95))  # JSON-safe
    assert query_hierarchy(rel.to_dict(), ["US"])[0]["count"] == rel.count("US")


def test_weights_parent_table_and_other(files: dict[str, Path], cli_run: Any) -> None:
    d = files["dir"]
    out = d / "w.json"
    code, _, err = cli_run(_hierarchy_argv(d, "agg.csv", out, "--weight", "n", "--epsilon", "2", "--other", "(other)",
                                           "--seed", "1", "--allow-nonprivate", "--nonnegative", "--integer",
                                           structure="edges.csv"))
    assert code == 0, err
    rel = load_hierarchy_release(out)
    assert rel.count("US/(other)") >= 0 and rel.parameters["integer"]


def test_cli_errors_are_clear(files: dict[str, Path], cli_run: Any) -> None:
    d = files["dir"]

    def refused(argv: list[str]) -> int:
        code, out, err = cli_run(argv)
        assert out == "" and err.startswith("dptree: error: ") and err.count("\n") == 1, err
        errors.append(err)
        return int(code)

    errors: list[str] = []
    x = d / "x.json"
    assert refused(_hierarchy_argv(d, "rows.csv", x, "--epsilon", "1", "--seed", "1")) == 2  # seed without --allow-nonprivate
    assert "NOT private" in errors[-1]
    assert refused(_hierarchy_argv(d, "rows.csv", x, "--epsilon", "1", "--method", "gaussian")) == 2
    assert "delta > 0" in errors[-1]
    assert refused(_hierarchy_argv(d, "missing.csv", x, "--epsilon", "1")) == 2
    assert "no such file" in errors[-1]
    assert refused(_hierarchy_argv(d, "rows.csv", x, "--epsilon", "1", levels="country,province")) == 2
    assert re.search("level columns|no column", errors[-1])
    pd.DataFrame({"country": ["US"], "state": ["CA"], "city": ["SF"], "n": [-1]}).to_csv(d / "neg.csv", index=False)
    assert refused(_hierarchy_argv(d, "neg.csv", x, "--epsilon", "1", "--weight", "n")) == 2
    assert "negative" in errors[-1]
    (d / "garbage.parquet").write_bytes(b"garbage")  # DuckDB's message quoted its SQL on more lines
    assert refused(_hierarchy_argv(d, "rows.csv", x, "--epsilon", "1", structure="garbage.parquet")) == 2
    assert "cannot read structure file" in errors[-1]


def test_private_run_without_seed(files: dict[str, Path], cli_run: Any) -> None:
    d = files["dir"]
    out = d / "p.json"
    assert cli_run(_hierarchy_argv(d, "rows.csv", out, "--epsilon", "1")).code == 0
    assert load_hierarchy_release(out).private


def test_main_cli_release_and_query(files: dict[str, Path], cli_run: Any) -> None:
    """End to end: hierarchy release, then query --node."""
    d = files["dir"]
    out = d / "m.json"
    assert cli_run(_hierarchy_argv(d, "rows.csv", out, "--epsilon", "1")).code == 0
    code, stdout, _ = cli_run(["query", str(out), "--node", "US/CA", "--node", "FR", "--format", "json"])
    assert code == 0
    doc = json.loads(stdout)
    assert [a["query"] for a in doc["answers"]] == ["US/CA", "FR"]
    assert "Hierarchy release" in doc["release"]
    code, _, err = cli_run(["query", str(out), "--node", "US/TX"])
    assert code == 2 and "names no node" in err


def test_a_tree_found_from_the_data(files: dict[str, Path], cli_run: Any) -> None:
    """``--structure private``: no structure file; the tree found is in the file, and the same
    seed gives the library's release."""
    import dptree

    d = files["dir"]
    out = d / "found.json"
    argv = ["hierarchy", str(d / "rows.csv"), "--levels", "country,state", "--structure", "private", "--epsilon", "2",
            "--delta", "1e-3", "--structure-share", "0.4", "--seed", "5", "--allow-nonprivate", "--out", str(out)]
    code, stdout, err = cli_run(argv)
    assert code == 0, err
    assert "tree found from the data" in stdout
    rel = load_hierarchy_release(out)
    same = dptree.hierarchy_counts(pd.read_csv(d / "rows.csv"), "private", levels=["country", "state"], epsilon=2.0,
                                   delta=1e-3, structure_share=0.4, rng=5)
    assert rel.hierarchy.all_paths() == same.hierarchy.all_paths()
    assert rel.count("") == same.count("")
    assert query_hierarchy(rel, [""])[0]["count"] == rel.count("")


def test_a_tree_found_from_the_data_refuses_public_structure_options(files: dict[str, Path], cli_run: Any) -> None:
    d = files["dir"]
    x = d / "x.json"
    base = ["hierarchy", str(d / "rows.csv"), "--levels", "country,state", "--epsilon", "1", "--out", str(x)]
    for extra, words in ((["--structure", "private"], "--delta"),
                         (["--structure", "private", "--delta", "1e-6", "--other", "(o)"], "--other"),
                         (["--structure", str(d / "struct.csv"), "--structure-share", "0.3"], "--structure private")):
        code, out, err = cli_run(base + extra)
        assert code == 2 and out == "" and err.startswith("dptree: error: ") and words in err, err
    assert not x.exists()
