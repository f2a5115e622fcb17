"""Property-based tests of every CLI command through ``dptree.cli.main.main([...])``.

Valid random inputs exit 0 and write a loadable release; invalid ones exit 2 with one line on
stderr ("dptree: error: ...") and write nothing. Exit status 3 ("internal error") means a
non-DPTreeError escaped: a bug (reproducers in ``KNOWN_BUGS``, strict xfail).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dptree
from dptree.cli.main import main

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def assert_clean_error(rc: int, err: str) -> None:
    assert rc == 2, f"expected exit status 2 (clear error), got {rc}: {err}"
    assert "internal error" not in err
    lines = [ln for ln in err.strip().splitlines() if ln]
    assert lines and lines[-1].startswith("dptree: error: "), err  # argparse's usage errors too


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("cli")
    p = d / "ages.csv"
    p.write_text("age,name\n" + "\n".join(f"{a},n{a}" for a in [3, 5, 5, 8, 13, 21, 34, 55]) + "\n")
    return p


@pytest.fixture(scope="module")
def release_file(csv_file: Path) -> Path:
    out = csv_file.parent / "rel.json"
    assert main(["release", str(csv_file), "--column", "age", "--lower", "0", "--upper", "100",
                 "--epsilon", "1", "--out", str(out)]) == 0
    return out


# --------------------------------------------------------------------------- valid


@SETTINGS
@given(
    values=st.lists(st.integers(-50, 150), min_size=1, max_size=60),  # header-only CSV: known bug below
    lower=st.integers(-20, 20),
    span=st.integers(1, 200),
    eps=st.floats(0.05, 20),
    noise=st.sampled_from(["laplace", "gaussian"]),
    neighbors=st.sampled_from(["add_remove", "replace"]),
    branching=st.one_of(st.none(), st.integers(2, 9)),
    fmt=st.sampled_from(["csv", "parquet"]),
)
def test_release_then_query_and_plot(tmp_path_factory: pytest.TempPathFactory, cli_run: Any,
                                     values: list[int], lower: int, span: int, eps: float, noise: str,
                                     neighbors: str, branching: int | None, fmt: str) -> None:
    d = tmp_path_factory.mktemp("v")
    if fmt == "csv":
        src = d / "in.csv"
        src.write_text("x\n" + "".join(f"{v}\n" for v in values))
    else:
        import pandas as pd

        src = d / "in.parquet"
        pd.DataFrame({"x": np.asarray(values, dtype=np.int64)}).to_parquet(src)
    out = d / "rel.json"
    argv = ["release", str(src), "--column", "x", "--lower", str(lower), "--upper", str(lower + span),
            "--epsilon", repr(eps), "--noise", noise, "--neighbors", neighbors, "--out", str(out)]
    if noise == "gaussian":
        argv += ["--delta", "1e-6"]
    if branching is not None:
        argv += ["--branching", str(branching)]
    rc, _, err = cli_run(argv)
    assert rc == 0, err
    rel = dptree.load(out)
    assert rel.private is True
    if neighbors == "replace":
        assert rel.total() == pytest.approx(len(values), abs=1e-6)  # n is public (float rounding only)
    rc, qout, err = cli_run(["query", str(out), f"--count={lower}:{lower + span // 2}", f"--cdf={lower + 1}",
                             "--quantile", "0.5", "--total", "--format", "json"])
    assert rc == 0, err
    answers = json.loads(qout)["answers"]
    assert len(answers) == 4
    assert all(math.isfinite(a["estimate"]) for a in answers if isinstance(a["estimate"], float))


def test_plot_writes_a_png(release_file: Path, tmp_path: Path, cli_run: Any) -> None:
    rc, _, err = cli_run(["plot", str(release_file), "--out", str(tmp_path / "cdf.png")])
    assert rc == 0, err
    assert (tmp_path / "cdf.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------- invalid release arguments

BAD_RELEASE_OPTIONS: dict[str, list[str]] = {
    "--epsilon": ["nan", "inf", "-inf", "-1", "0", "abc", "1e999", "日本", ""],
    "--lower": ["nan", "inf", "abc", "日本", "1e400", "100", "2020-01-01", "99999999999999999999999"],
    "--upper": ["nan", "inf", "-5", "0", "99999999999999999999999", "2020-13-45", "日本"],
    "--width": ["0", "-1", "nan", "inf", "abc", "1d", "500"],
    "--branching": ["1", "0", "-1", "abc", "2.5"],
    "--delta": ["1", "nan", "-0.1", "0.5x"],
    "--max-contributions": ["0", "-1", "abc"],
    "--noise": ["LAPLACE", "日本"],
    "--neighbors": ["add-remove"],
    "--column": ["nope", "日本", "", "AGE", "a\"b", "'; DROP TABLE x; --"],
    "--out": ["/nonexistent/dir/x.json"],
}


def _release_argv(csv_file: Path, out: Path, **override: str) -> list[str]:
    opts = {"--column": "age", "--lower": "0", "--upper": "100", "--epsilon": "1", "--out": str(out)}
    opts.update(override)
    argv = ["release", str(csv_file)]
    for k, v in opts.items():
        argv += [k, v]
    return argv


@pytest.mark.parametrize("option", sorted(BAD_RELEASE_OPTIONS))
def test_release_rejects_bad_options(option: str, csv_file: Path, tmp_path: Path,
                                     cli_run: Any) -> None:
    for value in BAD_RELEASE_OPTIONS[option]:
        out = tmp_path / "never.json"
        argv = _release_argv(csv_file, out, **{option: value})
        if option == "--delta":
            argv += ["--noise", "gaussian"]
        rc, _, err = cli_run(argv)
        assert_clean_error(rc, err)
        assert not out.exists(), f"{option}={value!r} wrote a release"


BAD_FILES: dict[str, bytes] = {
    "nan.csv": b"age\nnan\n3\n",
    "inf.csv": b"age\ninf\n3\n",
    "unicode.csv": "age\n日本\n3\n".encode(),
    "empty.csv": b"",
    "binary.csv": b"\x00\x01\x02garbage\xff\xfe",
    "huge.csv": b"age\n1e400\n3\n",
    "bool.csv": b"age\ntrue\nfalse\n",
    "date.csv": b"age\n2020-01-01\n",
    "bad.parquet": b"PAR1garbage",
    "latin1.csv": "age\n\xe9\n".encode("latin-1"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_release_rejects_bad_files(name: str, tmp_path: Path, cli_run: Any) -> None:
    src = tmp_path / name
    src.write_bytes(BAD_FILES[name])
    out = tmp_path / "never.json"
    rc, _, err = cli_run(_release_argv(src, out))
    assert_clean_error(rc, err)
    assert not out.exists()


def test_release_rejects_missing_file_and_directory(tmp_path: Path, cli_run: Any) -> None:
    for src in (tmp_path / "missing.csv", tmp_path):
        rc, _, err = cli_run(_release_argv(src, tmp_path / "never.json"))
        assert_clean_error(rc, err)


def test_seeded_release_needs_explicit_flag(csv_file: Path, tmp_path: Path, cli_run: Any) -> None:
    out = tmp_path / "seeded.json"
    rc, _, err = cli_run(_release_argv(csv_file, out) + ["--seed", "1"])
    assert_clean_error(rc, err)
    assert not out.exists()
    rc, _, err = cli_run(_release_argv(csv_file, out) + ["--seed", "1", "--allow-nonprivate"])
    assert rc == 0, err
    assert dptree.load(out).private is False


def test_unicode_column_name_works(tmp_path: Path, cli_run: Any) -> None:
    src = tmp_path / "u.csv"
    src.write_text("älter,名前\n1,a\n3,b\n")
    rc, _, err = cli_run(_release_argv(src, tmp_path / "u.json", **{"--column": "älter"}))
    assert rc == 0, err


@SETTINGS
@given(column=st.text(min_size=1, max_size=8).filter(lambda c: c != "age" and "\x00" not in c))
def test_release_rejects_random_missing_columns(column: str, csv_file: Path, tmp_path_factory: pytest.TempPathFactory,
                                                cli_run: Any) -> None:
    out = tmp_path_factory.mktemp("c") / "never.json"
    rc, _, err = cli_run(_release_argv(csv_file, out, **{"--column": column}))
    if column == "name":  # an existing text column: not numbers
        assert rc == 2
    assert_clean_error(rc, err)
    assert not out.exists()


@SETTINGS
@given(eps=st.text(max_size=6), lower=st.text(max_size=6))
def test_release_random_text_options_never_crash(eps: str, lower: str, csv_file: Path,
                                                 tmp_path_factory: pytest.TempPathFactory,
                                                 cli_run: Any) -> None:
    out = tmp_path_factory.mktemp("t") / "r.json"
    argv = _release_argv(csv_file, out, **{"--epsilon": eps, "--lower": lower})
    rc, _, err = cli_run(argv)
    assert rc in (0, 2), err
    if rc == 0:
        assert dptree.load(out).private
    else:
        assert_clean_error(rc, err)
        assert not out.exists()


# --------------------------------------------------------------------------- query and plot

BAD_QUERIES = [
    ["--count", "5:1"], ["--count", "abc"], ["--count", "nan:inf"], ["--count", "1:2:3"], ["--cdf", "nan"],
    ["--cdf", "inf"], ["--cdf", "日本"], ["--quantile", "nan"], ["--quantile", "2"], ["--quantile", "-0.1"],
    ["--ci", "1.5"], ["--ci", "nan"], ["--ci", "0"], ["--count", "1e400:5"], ["--node", "US"], ["--quantile", "x"],
    ["--format", "xml"],
]


@pytest.mark.parametrize("args", BAD_QUERIES, ids=lambda a: " ".join(a))
def test_query_rejects_bad_arguments(args: list[str], release_file: Path, cli_run: Any) -> None:
    rc, out, err = cli_run(["query", str(release_file)] + args)
    assert_clean_error(rc, err)


@SETTINGS
@given(lo=st.integers(-10**6, 10**6), hi=st.integers(-10**6, 10**6), q=st.floats(0, 1))
def test_query_random_valid_arguments(lo: int, hi: int, q: float, release_file: Path,
                                      cli_run: Any) -> None:
    lo, hi = min(lo, hi), max(lo, hi)
    rc, out, err = cli_run(["query", str(release_file), f"--count={lo}:{hi}", f"--cdf={lo}",
                            "--quantile", repr(q), "--format", "json"])
    assert rc == 0, err
    ans = json.loads(out)["answers"]
    assert all(a["stderr"] is None or a["stderr"] >= 0 for a in ans)


@pytest.mark.parametrize("command", ["query", "plot"])
def test_query_and_plot_reject_non_release_files(command: str, tmp_path: Path, csv_file: Path,
                                                 cli_run: Any) -> None:
    junk = tmp_path / "junk.json"
    junk.write_bytes(b"\x00\x01")
    for path in [tmp_path / "missing.json", csv_file, junk, tmp_path]:
        argv = [command, str(path)] + (["--out", str(tmp_path / "p.png")] if command == "plot" else [])
        rc, _, err = cli_run(argv)
        assert_clean_error(rc, err)
    assert not (tmp_path / "p.png").exists()


def test_plot_rejects_bad_output_and_level(release_file: Path, tmp_path: Path, cli_run: Any) -> None:
    for argv in (["--out", "/nonexistent/dir/p.png"], ["--out", str(tmp_path / "p.png"), "--ci", "2"],
                 ["--out", str(tmp_path / "p.png"), "--ci", "nan"]):
        rc, _, err = cli_run(["plot", str(release_file)] + argv)
        assert_clean_error(rc, err)


def test_unknown_command_is_a_usage_error(cli_run: Any) -> None:
    for argv in ([], ["bogus"], ["release"]):
        rc, _, err = cli_run(argv)
        assert rc == 2 and "usage" in err


# --------------------------------------------------------------------------- known bugs


def _kb(reason: str, override: dict[str, str]) -> Any:
    """A fixed bug: now a clean one-line error (regression test)."""
    return pytest.param(override, id=" ".join(f"{k}={v}" for k, v in override.items()))


KNOWN_BUGS = [
    _kb("dptree release --epsilon 1e-320: internal error OverflowError", {"--epsilon": "1e-320"}),
    _kb("dptree release --epsilon 1e300: internal error OverflowError", {"--epsilon": "1e300"}),
    _kb("dptree release --max-contributions 4611686018427387904: internal error ZeroDivisionError",
        {"--max-contributions": "4611686018427387904"}),
    _kb("dptree release --out '': internal error ValueError (empty path)", {"--out": ""}),
]


def test_empty_csv_releases_noise_around_zero(tmp_path: Path, cli_run: Any) -> None:
    src = tmp_path / "empty.csv"
    src.write_text("age\n")
    rc, _, err = cli_run(_release_argv(src, tmp_path / "e.json"))
    assert rc == 0, err


@pytest.mark.parametrize("override", KNOWN_BUGS)
def test_known_cli_bug_is_a_clean_error(override: dict[str, str], csv_file: Path, tmp_path: Path,
                                        cli_run: Any) -> None:
    argv = _release_argv(csv_file, tmp_path / "x.json")
    for k, v in override.items():
        if k in argv:
            argv[argv.index(k) + 1] = v
        else:
            argv += [k, v]
    rc, _, err = cli_run(argv)
    assert_clean_error(rc, err)


# --------------------------------------------------------------------------- every subcommand

NUMBERS = st.sampled_from(["1", "0.5", "1e-300", "1e300", "0", "-1", "nan", "inf", "1e-9", "100", "x", "", "2e9"])


def assert_answer_or_clean_error(rc: int, err: str) -> None:
    assert rc in (0, 2), f"exit status {rc}: {err}"
    assert "internal error" not in err and "Traceback" not in err, err
    if rc == 2:
        assert_clean_error(rc, err)


@pytest.fixture(scope="module")
def hierarchy_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("hier")
    rows, structure = d / "rows.csv", d / "structure.csv"
    rows.write_text("country,state,w\nUS,CA,3\nUS,NY,1\nFR,IDF,2\n")
    structure.write_text("country,state\nUS,CA\nUS,NY\nFR,IDF\n")
    return rows, structure


@SETTINGS
@given(command=st.sampled_from(["hierarchy", "interior-point", "budget", "report", "plot", "query"]),
       eps=NUMBERS, second=NUMBERS, flag=st.sampled_from(["", "--force", "--weight", "--ci", "--bins", "--n",
                                                         "--method", "--count", "--node", "--quantile"]))
def test_fuzz_every_subcommand(command: str, eps: str, second: str, flag: str, csv_file: Path, release_file: Path,
                               hierarchy_files: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory,
                               cli_run: Any) -> None:
    out = tmp_path_factory.mktemp("out")
    rows, structure = hierarchy_files
    argv = {
        "hierarchy": ["hierarchy", str(rows), "--levels", "country,state", "--structure", str(structure),
                      "--epsilon", eps, "--out", str(out / "h.json")],
        "interior-point": ["interior-point", str(csv_file), "--column", "age", "--lower", "0", "--upper", "1000",
                           "--epsilon", eps],
        "budget": ["budget", str(out / "b.ledger"), "--create", "--total-epsilon", eps],
        "report": ["report", str(release_file), "--out", str(out / "r.html"), "--ci", eps],
        "plot": ["plot", str(release_file), "--out", str(out / "p.png"), "--ci", eps],
        "query": ["query", str(release_file), "--ci", eps, "--format", "json"],
    }[command]
    if flag == "--force":
        argv.append(flag)
    elif flag:
        argv += [flag, {"--weight": "w", "--method": "treelog", "--count": "1:2", "--node": "US"}.get(flag, second)]
    rc, _, err = cli_run(argv)
    assert_answer_or_clean_error(rc, err)
