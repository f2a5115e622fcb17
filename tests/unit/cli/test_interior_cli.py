"""The interior-point CLI subcommand (register() is wired into the main CLI by the lead)."""

from __future__ import annotations

import argparse
import io

import pytest

from dptree.cli.interior import register


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dptree")
    sub = p.add_subparsers(dest="command", required=True)
    register(sub)
    return p


def _run(argv, capsys):
    args = _parser().parse_args(["interior-point"] + list(argv))
    code = args.func(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_interior_point(tmp_path, capsys):
    f = tmp_path / "ages.csv"
    f.write_text("age,other\n" + "".join(f"{30 + i % 5},x\n" for i in range(300)))
    code, out, err = _run(
        [str(f), "--column", "age", "--lower", "0", "--upper", "150", "--epsilon", "1", "--seed", "3", "--allow-nonprivate"], capsys
    )
    assert code == 0, err
    lines = dict(line.split(": ", 1) for line in out.strip().splitlines())
    assert 30 <= int(lines["interior_point"]) <= 34
    assert lines["method"] == "exponential" and lines["private"] == "False"


def test_cli_float_bounds_and_treelog(tmp_path, capsys):
    f = tmp_path / "d.csv"
    f.write_text("v\n" + "".join(f"{0.5 + (i % 3) / 10}\n" for i in range(60)))
    code, out, _ = _run(
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
        ],
        capsys,
    )
    assert code == 0 and "method: treelog" in out and "guarantee_applies: False" in out


def test_cli_stdin(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("v\n" + "7\n" * 100))
    code, out, _ = _run(
        ["-", "--column", "v", "--lower", "0", "--upper", "100", "--epsilon", "1", "--seed", "2", "--allow-nonprivate"], capsys
    )
    assert code == 0 and "interior_point: 7" in out


@pytest.mark.parametrize(
    "argv_tail,needle",
    [
        (["--column", "nope", "--lower", "0", "--upper", "10", "--epsilon", "1"], "not in"),
        (["--column", "v", "--lower", "10", "--upper", "0", "--epsilon", "1"], "lower must be <= upper"),
        (["--column", "v", "--lower", "0", "--upper", "10", "--epsilon", "0"], "epsilon must be a finite number > 0"),
        (["--column", "v", "--lower", "0", "--upper", "2**64", "--epsilon", "1"], None),
    ],
)
def test_cli_errors_are_one_line(tmp_path, capsys, argv_tail, needle):
    f = tmp_path / "d.csv"
    f.write_text("v\n1\n2\n")
    if needle is None:
        with pytest.raises(SystemExit):
            _parser().parse_args(["interior-point", str(f)] + argv_tail)
        return
    code, out, err = _run([str(f)] + argv_tail, capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err


def test_cli_missing_file_and_too_little_data(tmp_path, capsys):
    code, _, err = _run(
        [str(tmp_path / "none.csv"), "--column", "v", "--lower", "0", "--upper", "9", "--epsilon", "1"], capsys
    )
    assert code == 2 and "file not found" in err
    f = tmp_path / "d.csv"
    f.write_text("v\n1\n2\n")
    code, _, err = _run(
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
        ],
        capsys,
    )
    assert code == 2 and "--run-anyway" in err


def test_cli_says_when_the_mechanism_returned_bottom(tmp_path, capsys):
    """HeavyPaths far below its requirement on spread data returns bottom: the CLI says so next to
    the placeholder value; the exponential mechanism never does."""
    f = tmp_path / "d.csv"
    f.write_text("v\n" + "".join(f"{i}\n" for i in range(60)))
    common = [str(f), "--column", "v", "--lower", "0", "--upper", "255", "--epsilon", "1", "--seed", "2",
              "--allow-nonprivate"]
    code, out, err = _run(common + ["--delta", "1e-6", "--method", "heavypaths", "--n", "60", "--run-anyway"], capsys)
    assert code == 0, err
    lines = dict(line.split(": ", 1) for line in out.strip().splitlines())
    assert lines["interior_point"] == "0" and lines["bottom"].startswith("True")
    code, out, err = _run(common, capsys)
    assert code == 0, err
    lines = dict(line.split(": ", 1) for line in out.strip().splitlines())
    assert lines["bottom"] == "False" and 0 <= int(lines["interior_point"]) <= 59
