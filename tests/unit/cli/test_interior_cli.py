"""The interior-point CLI subcommand."""

from __future__ import annotations

import io

import pytest


@pytest.fixture
def interior(cli_run):
    """``dptree interior-point ARGV``: (code, out, err)."""
    return lambda argv: cli_run(["interior-point", *argv])


def test_cli_interior_point(tmp_path, interior):
    f = tmp_path / "ages.csv"
    f.write_text("age,other\n" + "".join(f"{30 + i % 5},x\n" for i in range(300)))
    code, out, err = interior(
        [str(f), "--column", "age", "--lower", "0", "--upper", "150", "--epsilon", "1", "--seed", "3", "--allow-nonprivate"])
    assert code == 0, err
    lines = dict(line.split(": ", 1) for line in out.strip().splitlines())
    assert 30 <= int(lines["interior_point"]) <= 34
    assert lines["method"] == "exponential" and lines["private"] == "False"


def test_cli_float_bounds_and_treelog(tmp_path, interior):
    f = tmp_path / "d.csv"
    f.write_text("v\n" + "".join(f"{0.5 + (i % 3) / 10}\n" for i in range(60)))
    code, out, _ = interior(
        [
            str(f),
            "--column",
            "v",
            "--lower",
            "0.0",
            "--upper",
            "1.0",
            "--epsilon",
            "1",
            "--delta",
            "1e-6",
            "--method",
            "treelog",
            "--seed",
            "1",
            "--allow-nonprivate",
            "--n",
            "60",
        ])
    assert code == 0 and "method: treelog" in out and "guarantee_applies: False" in out


def test_cli_stdin(tmp_path, interior, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("v\n" + "7\n" * 100))
    code, out, _ = interior(
        ["-", "--column", "v", "--lower", "0", "--upper", "100", "--epsilon", "1", "--seed", "2", "--allow-nonprivate"])
    assert code == 0 and "interior_point: 7" in out


@pytest.mark.parametrize(
    "argv_tail,needle",
    [
        (["--column", "nope", "--lower", "0", "--upper", "10", "--epsilon", "1"], "not found"),
        (["--column", "v", "--lower", "10", "--upper", "0", "--epsilon", "1"], "lower must be <= upper"),
        (["--column", "v", "--lower", "0", "--upper", "10", "--epsilon", "0"], "epsilon must be a finite number > 0"),
        (["--column", "v", "--lower", "0", "--upper", "2**64", "--epsilon", "1"],
         "--upper 2**64 is not a number, a date or a timestamp"),
        (["--column", "v", "--lower", "nan", "--upper", "10", "--epsilon", "1"], "--lower must be a finite number"),
        (["--column", "v", "--lower", "2020-01-01", "--upper", "10", "--epsilon", "1"],
         "--lower and --upper must both be dates or both be numbers"),
        (["--column", "v", "--lower", "0", "--upper", "10", "--width", "1d", "--epsilon", "1"],
         "--width is the resolution of a date domain"),
    ],
)
def test_cli_errors_are_one_line(tmp_path, interior, argv_tail, needle):
    f = tmp_path / "d.csv"
    f.write_text("v\n1\n2\n")
    code, out, err = interior([str(f)] + argv_tail)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("dptree: error: ") and needle in err


def test_cli_missing_file_and_too_little_data(tmp_path, interior):
    code, _, err = interior(
        [str(tmp_path / "none.csv"), "--column", "v", "--lower", "0", "--upper", "9", "--epsilon", "1"])
    assert code == 2 and "file not found" in err
    f = tmp_path / "d.csv"
    f.write_text("v\n1\n2\n")
    code, _, err = interior(
        [
            str(f),
            "--column",
            "v",
            "--lower",
            "0",
            "--upper",
            str(2**64),
            "--epsilon",
            "1",
            "--delta",
            "1e-6",
            "--n",
            "2",
        ])
    assert code == 2 and "--run-anyway" in err


def test_cli_says_when_the_mechanism_returned_bottom(tmp_path, interior):
    """HeavyPaths far below its requirement on spread data returns bottom: the CLI says so next to
    the placeholder value; the exponential mechanism never does."""
    f = tmp_path / "d.csv"
    f.write_text("v\n" + "".join(f"{i}\n" for i in range(60)))
    common = [str(f), "--column", "v", "--lower", "0", "--upper", "255", "--epsilon", "1", "--seed", "2",
              "--allow-nonprivate"]
    code, out, err = interior(common + ["--delta", "1e-6", "--method", "heavypaths", "--n", "60", "--run-anyway"])
    assert code == 0, err
    lines = dict(line.split(": ", 1) for line in out.strip().splitlines())
    assert lines["interior_point"] == "0" and lines["bottom"].startswith("True")
    code, out, err = interior(common)
    assert code == 0, err
    lines = dict(line.split(": ", 1) for line in out.strip().splitlines())
    assert lines["bottom"] == "False" and 0 <= int(lines["interior_point"]) <= 59


def test_out_writes_the_release_and_query_shows_its_value(tmp_path, cli_run):
    import json

    import dptree
    from dptree import Ledger

    f = tmp_path / "d.csv"
    f.write_text("v\n" + "".join(f"{20 + i % 30}\n" for i in range(400)))
    led = tmp_path / "b.ledger"
    Ledger(led, total_epsilon=5.0).close()
    seeded = ["--seed", "4", "--allow-nonprivate", "--ledger", str(led)]
    for command, extra, kind in (("interior-point", [], "interior_point"), ("median", [], "quantile"),
                                 ("quantile", ["--q", "0.9"], "quantile")):
        out = tmp_path / f"{command}.json"
        code, printed, err = cli_run([command, str(f), "--column", "v", "--lower", "0", "--upper", "100", "--epsilon",
                                      "1", *extra, *seeded, "--out", str(out)])
        assert code == 0 and err.strip().endswith(f"wrote {out}"), err
        rel = dptree.load(out)
        assert type(rel).KIND == kind
        printed_value = printed.splitlines()[0].split(": ", 1)[1]
        assert str(rel.value) == printed_value
        code, shown, err = cli_run(["query", str(out), "--format", "json"])
        assert code == 0, err
        (answer,) = json.loads(shown)["answers"]
        assert answer["estimate"] == rel.value and answer["ci_low"] is None
        code, _, err = cli_run(["query", str(out), "--count", "0:10"])
        assert code == 2 and "holds only its own value" in err
        code, _, err = cli_run(["query", str(out), "--ci", "0.9"])  # it was ignored
        assert code == 2 and "without an interval; drop --ci" in err
    with Ledger(led) as ledger:  # each charge names the file it wrote
        assert [h["output"] for h in ledger.history()] == [str(tmp_path / f"{c}.json")
                                                          for c in ("interior-point", "median", "quantile")]
    code, _, err = cli_run(["median", str(f), "--column", "v", "--lower", "0", "--upper", "100", "--epsilon", "1",
                            "--out", str(f)])
    assert code == 2 and "--out" in err  # the input file: refused before anything is charged
