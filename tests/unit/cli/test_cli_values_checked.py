"""Values a user types are read as what the release needs, or refused with the fix: a bare number is
not a date, a plot is a PNG, a bound given as text is not a year."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dptree
from dptree.errors import DomainError


@pytest.fixture()
def days(tmp_path: Path) -> Path:
    d = pd.DataFrame({"day": pd.date_range("2024-01-01", periods=300, freq="D")})
    d.to_csv(tmp_path / "days.csv", index=False)
    rel = dptree.range_tree(str(tmp_path / "days.csv"), column="day", lower="2024-01-01", upper="2024-12-31",
                            epsilon=1.0, rng=1)
    rel.save(tmp_path / "days.json", allow_nonprivate=True)
    return tmp_path / "days.json"


def test_a_date_release_refuses_bare_numbers_in_queries(days: Path, cli_run: Any) -> None:
    """numpy reads 20240101 as a year and 40 as the year 40: the CLI answered cdf(2255-04-06)."""
    for argv in (["--cdf", "20240101"], ["--cdf", "40"], ["--count", "0,100000000000000000"]):
        code, out, err = cli_run(["query", days, *argv])
        assert code == 2 and "is not a date" in err and "2024-01-31" in err and not out, err
    code, out, err = cli_run(["query", days, "--cdf", "2024-03-01", "--count", "2024-01-01,2024-01-31T12:00"])
    assert code == 0 and "cdf(2024-03-01)" in out, err
    code, out, err = cli_run(["query", days, "--count", "2024-01-01:2024-06-30"])  # the form it refuses is not named
    assert code == 2 and "needs LO,HI (e.g. 2024-01-01,2024-06-30)" in err and "LO:HI" not in err and not out, err


def test_a_plot_is_a_png_whatever_the_name_asks(days: Path, cli_run: Any, tmp_path: Path) -> None:
    for name in ("p.pdf", "p.svg", "p.jpg"):
        code, _, err = cli_run(["plot", days, "--out", tmp_path / name])
        assert code == 2 and "PNG" in err and not (tmp_path / name).exists(), err
    assert cli_run(["plot", days, "--out", tmp_path / "p.png"]).code == 0
    assert (tmp_path / "p.png").read_bytes().startswith(b"\x89PNG")


def test_numbers_given_as_text_are_not_read_as_years() -> None:
    with pytest.raises(DomainError, match="is text: give a number"):
        dptree.range_tree(np.arange(10), lower="0", upper="120", epsilon=1.0)


def test_a_bound_with_a_utc_offset_is_that_instant_in_utc_without_a_warning() -> None:
    import datetime as dt
    import warnings

    from dptree.data.dates import parse_date_bound

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy warns on offsets it drops
        east = parse_date_bound("2024-01-01T05:00:00+05:00", "lower")
        west = parse_date_bound(dt.datetime(2023, 12, 31, 22, tzinfo=dt.timezone(dt.timedelta(hours=-2))), "upper")
    assert east == west == np.datetime64("2024-01-01T00:00", "ns")
    assert parse_date_bound("2024-01-01T00:00:00Z", "lower") == np.datetime64("2024-01-01", "ns")


def test_a_structure_read_with_too_few_levels_says_which_columns_are_left(tmp_path: Path, cli_run: Any) -> None:
    pd.DataFrame({"country": ["US", "US"], "state": ["CA", "NY"]}).to_csv(tmp_path / "s.csv", index=False)
    pd.DataFrame({"country": ["US"], "state": ["CA"]}).to_csv(tmp_path / "r.csv", index=False)
    code, _, err = cli_run(["hierarchy", tmp_path / "r.csv", "--levels", "country", "--structure", tmp_path / "s.csv",
                            "--epsilon", "1", "--out", tmp_path / "h.json"])
    assert code == 2 and "also has the columns ['state']" in err and "--levels" in err, err


def test_library_names_in_messages_become_cli_flags(tmp_path: Path, cli_run: Any) -> None:
    (tmp_path / "d.csv").write_text("x\n1\n2\n")
    base = ["release", tmp_path / "d.csv", "--column", "x", "--epsilon", "1", "--out", tmp_path / "r.json"]
    code, _, err = cli_run(base + ["--lower", "9", "--upper", "0"])
    assert code == 2 and "--lower (9) must be smaller than --upper (0)" in err, err
    code, _, err = cli_run(base + ["--lower", "0.0", "--upper", "9.0", "--width", "0"])
    assert code == 2 and "--width must be > 0" in err, err
    assert cli_run(base + ["--lower", "0", "--upper", "9", "--seed", "1", "--allow-nonprivate"]).code == 0
    code, _, err = cli_run(["query", tmp_path / "r.json", "--count", "5:1"])
    assert code == 2 and "--count LO:HI needs LO <= HI" in err, err
    for flag, value, want in (("--branching", "1", "--branching must be an integer >= 2; got 1; e.g. --branching 16\n"),
                              ("--epsilon", "0", "--epsilon must be a finite number > 0"),
                              ("--max-contributions", "0", "--max-contributions must be an integer >= 1")):
        code, _, err = cli_run(base[:-1] + [tmp_path / "r2.json", "--lower", "0", "--upper", "9", flag, value])
        # no Python None or parameter names in a shell's message
        assert code == 2 and want in err and "None" not in err, err
    code, _, err = cli_run(base[:-1] + [tmp_path / "r2.json", "--lower", "0", "--upper", "9", "--bounds-share", "0.3"])
    assert code == 2 and "add --bounds private" in err and not (tmp_path / "r2.json").exists(), err
    with pytest.raises(dptree.DPTreeError, match=r"^lower \(5\) must be smaller than upper \(1\)"):
        dptree.range_tree(np.arange(3), lower=5, upper=1, epsilon=1.0)  # the library keeps its own names
    big = 3 * 2**62  # bounds equal as doubles are compared as the integers they are: the real problem is named
    with pytest.raises(dptree.DPTreeError, match=r"integer bounds must lie within"):
        dptree.range_tree(np.arange(3), lower=big, upper=big + 255, epsilon=1.0)


def test_budget_create_says_what_is_wrong(tmp_path: Path, cli_run: Any) -> None:
    (tmp_path / "d.csv").write_text("x\n1\n")
    code, _, err = cli_run(["budget", tmp_path / "d.csv", "--create", "--total-epsilon", "5"])
    assert code == 2 and "is not a dptree ledger" in err and (tmp_path / "d.csv").read_text() == "x\n1\n", err
    for bad in ("-1", "0"):  # one message for both
        code, _, err = cli_run(["budget", tmp_path / "l.sqlite", "--create", f"--total-epsilon={bad}"])
        assert code == 2 and "--total-epsilon must be a finite number > 0" in err, err
    assert cli_run(["budget", tmp_path / "l.sqlite", "--create", "--total-epsilon", "1"]).code == 0
    code, _, err = cli_run(["budget", tmp_path / "l.sqlite", "--create", "--total-epsilon", "1"])
    assert code == 2 and "keeps its totals" in err, err
