"""The command line: release from CSV/Parquet/stdin through DuckDB, query, plot, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dptree
from dptree.data.histograms import leaf_histogram
from dptree.rangetree.release import plan_range_tree

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "data" / "people.csv"


def test_release_query_plot_on_the_example(tmp_path, cli_run) -> None:  # type: ignore[no-untyped-def]
    rel = tmp_path / "age.json"
    code, out, err = cli_run(
        [
            "release",
            str(EXAMPLE),
            "--column",
            "age",
            "--lower",
            "0",
            "--upper",
            "120",
            "--epsilon",
            "1",
            "--out",
            str(rel),
        ])
    assert code == 0, err
    assert "RangeTree" in out and rel.exists()
    code, out, _ = cli_run(
        ["query", str(rel), "--count", "18:29", "--cdf", "40", "--quantile", "0.5", "--format", "json"])
    assert code == 0
    answers = json.loads(out)["answers"]
    ages = np.loadtxt(EXAMPLE, delimiter=",", skiprows=1, usecols=1)
    c = answers[0]
    assert c["ci_low"] < c["estimate"] < c["ci_high"]
    assert abs(c["estimate"] - ((ages >= 18) & (ages <= 29)).sum()) < 6 * c["stderr"]
    code, out, _ = cli_run(["query", str(rel), "--count", "18:29"])
    assert "count[18, 29]" in out and "95% CI" in out
    png = tmp_path / "cdf.png"
    code, out, _ = cli_run(["plot", str(rel), "--out", str(png)])
    assert code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # options of other plots are refused, not ignored (--bins 0 and --depth -1 drew a CDF)
    for flags, message in ((["--bins", "0"], "--bins does not apply"), (["--depth", "-1"], "--depth does not apply"),
                           (["--kind", "histogram", "--depth", "2"], "--depth does not apply")):
        code, _, err = cli_run(["plot", str(rel), *flags, "--out", str(tmp_path / "x.png")])
        assert code == 2 and message in err, (flags, err)
    code, _, err = cli_run(["plot", str(rel), "--kind", "histogram", "--bins", "0", "--out", str(tmp_path / "x.png")])
    assert code == 2 and "--bins must be" in err


def test_duckdb_histogram_equals_numpy_histogram(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pandas as pd

    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "i": rng.integers(-20, 140, 5000),
            "f": rng.normal(50, 30, 5000),
            "d": np.datetime64("2024-01-01") + rng.integers(-5, 400, 5000).astype("timedelta64[D]"),
        }
    )
    df.to_parquet(tmp_path / "x.parquet")
    df.to_csv(tmp_path / "x.csv", index=False)
    cases = [
        ("i", dict(lower=0, upper=120)),
        ("f", dict(lower=0.0, upper=100.0, width=0.5)),
        ("i", dict(lower=0, upper=120, width=7)),
        ("d", dict(lower="2024-01-01", upper="2024-12-31")),
    ]
    for col, dom in cases:
        plan = plan_range_tree(epsilon=1.0, **dom)
        values = df[col].to_numpy()
        expected = np.bincount(plan.domain.to_leaves(values), minlength=plan.layout.padded_size)
        for name in ("x.parquet", "x.csv"):
            got = leaf_histogram(str(tmp_path / name), plan, column=col)
            np.testing.assert_array_equal(got, expected, err_msg=f"{col} {name}")


def test_stdin_and_seeded_release(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "r.json"
    data = "v\n1\n2\n3\n50\n"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "dptree.cli.main",
            "release",
            "-",
            "--column",
            "v",
            "--lower",
            "0",
            "--upper",
            "99",
            "--epsilon",
            "1",
            "--seed",
            "3",
            "--allow-nonprivate",
            "--out",
            str(out),
        ],
        input=data,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert dptree.load(out).private is False
    assert "NOT PRIVATE" in proc.stdout
    # Parquet bytes on stdin with --format parquet (they were read as CSV: "not utf-8 encoded")
    import pandas as pd

    pq = tmp_path / "v.parquet"
    pd.DataFrame({"v": [1, 2, 3, 50]}).to_parquet(pq)
    argv = [sys.executable, "-m", "dptree.cli.main", "release", "-", "--format", "parquet", "--column", "v", "--lower",
            "0", "--upper", "99", "--epsilon", "1", "--seed", "3", "--allow-nonprivate", "--out", str(tmp_path / "p.json")]
    proc = subprocess.run(argv, input=pq.read_bytes(), capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert np.array_equal(dptree.load(str(tmp_path / "p.json")).leaf_estimates, dptree.load(str(out)).leaf_estimates)


def _release_argv(data: object, column: str, *, lower: str = "0", upper: str = "9", epsilon: str = "1",
                  out: object = "x.json", extra: tuple[str, ...] = ()) -> list[str]:
    """The arguments of ``dptree release`` over [lower, upper] at ``epsilon``, writing ``out``."""
    return ["release", str(data), "--column", column, "--lower", lower, "--upper", upper, "--epsilon", epsilon,
            *extra, "--out", str(out)]


@pytest.mark.parametrize(
    "argv,needle",
    [
        (_release_argv("/nonexistent.csv", "age"), "not found"),
        (_release_argv(EXAMPLE, "nope"), "not found in the CSV's header row"),
        (_release_argv(EXAMPLE, "age", lower="9", upper="0"), "smaller than --upper"),
        (_release_argv(EXAMPLE, "age", epsilon="-1"), "epsilon"),
        (_release_argv(EXAMPLE, "age", extra=("--seed", "1")), "NOT private"),
        (_release_argv(EXAMPLE, "signup_date"), "dates"),
        (["query", "/nonexistent.json"], "not found"),
    ],
)
def test_errors_are_one_clear_line(argv: list[str], needle: str, cli_run, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    code, out, err = cli_run(argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dptree: error:") and needle in lines[0], err


def test_unreadable_format(tmp_path, cli_run) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"this is not parquet at all")
    code, _, err = cli_run(_release_argv(bad, "a", out=tmp_path / "o.json"))
    assert code == 2 and "cannot read" in err
    notjson = tmp_path / "n.json"
    notjson.write_text("{not json")
    code, _, err = cli_run(["query", str(notjson)])
    assert code == 2 and "not valid JSON" in err


def test_missing_values_in_files(tmp_path, cli_run) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "m.csv"
    f.write_text("v\n1\n\n3\nnan\n")
    args = _release_argv(f, "v", out=tmp_path / "o.json")
    code, _, err = cli_run(args)
    assert code == 2 and "missing" in err
    code, _, err = cli_run(args + ["--on-invalid", "drop"])
    assert code == 0, err


def test_parquet_column_with_nan(tmp_path, cli_run) -> None:  # type: ignore[no-untyped-def]
    """DuckDB's Parquet statistics omit NaN; the backend must still see (and report) it."""
    import pandas as pd

    pd.DataFrame({"v": [1.0, float("nan"), 3.0, 4.0]}).to_parquet(tmp_path / "n.parquet")
    args = _release_argv(tmp_path / "n.parquet", "v", extra=("--seed", "1", "--allow-nonprivate"),
                         out=tmp_path / "o.json")
    code, _, err = cli_run(args)
    assert code == 2 and "contains missing values" in err and "1 missing" not in err
    code, _, err = cli_run(args + ["--on-invalid", "drop"])
    assert code == 0, err


def test_out_is_checked_before_the_data_is_read(tmp_path, cli_run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """--out is validated first (directory exists and is writable, not the input file), so --out
    equal to the input never overwrites the data file with the release."""
    import dptree.data.histograms as db

    data = tmp_path / "d.csv"
    data.write_text("v\n" + "1\n" * 20)
    before = data.read_bytes()
    read: list[str] = []
    original = db.leaf_histogram
    monkeypatch.setattr(db, "leaf_histogram", lambda *a, **k: read.append("read") or original(*a, **k))
    base = ["release", str(data), "--column", "v", "--lower", "0", "--upper", "9", "--epsilon", "1"]
    for out, needle in ((str(tmp_path / "no" / "r.json"), "does not exist"), (str(tmp_path), "is a directory"),
                        (str(data), "is the input file"), ("", "needs a file name")):
        code, _, err = cli_run(base + ["--out", out])
        assert code == 2 and err.startswith("dptree: error: --out") and needle in err, err
    assert read == [] and data.read_bytes() == before
    code, _, err = cli_run(base + ["--out", str(tmp_path / "r.json")])
    assert code == 0 and read == ["read"], err


@pytest.mark.parametrize("module", ["dptree", "dptree.cli"])
def test_python_dash_m_runs_the_command_line(module: str) -> None:
    proc = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "usage: dptree" in proc.stdout and "release" in proc.stdout
