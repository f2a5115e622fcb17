"""``dptree release --bounds private``: the CLI face of ``range_tree(bounds="private")``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dptree
from dptree.privacy.ledger import Ledger

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "data" / "people.csv"


def test_release_with_private_bounds_charges_the_whole_epsilon(tmp_path: Path, cli_run: Any) -> None:
    led = tmp_path / "b.ledger"
    with Ledger(led, total_epsilon=2.0):
        pass
    out = tmp_path / "income.json"
    res = cli_run(["release", EXAMPLE, "--column", "income", "--bounds", "private", "--bounds-share", "0.2",
                   "--epsilon", "1", "--width", "64", "--out", out, "--ledger", led,
                   "--seed", "3", "--allow-nonprivate"])
    assert res.code == 0, res.err
    rel = dptree.load(out)
    b = rel.privacy["bounds"]
    assert b["share"] == 0.2 and b["total_epsilon"] == 1.0 and b["declared_width"] == 64
    assert rel.domain.kind == "float" and rel.domain.lower == b["found"][0] and rel.domain.width >= 64
    incomes = np.loadtxt(EXAMPLE, delimiter=",", skiprows=1, usecols=2)
    assert rel.total() == pytest.approx(incomes.size, abs=60)
    with Ledger(led, read_only=True) as ledger:
        assert ledger.spent().epsilon == pytest.approx(1.0) and ledger.spent().charges == 1
    assert json.loads(out.read_text())["metadata"]["ledger"]["epsilon"] == 1.0


def _signup_release(tmp_path: Path, cli_run: Any, *extra: str) -> Any:
    """``release --bounds private`` of the example's date column with ``extra`` flags, loaded back."""
    out = tmp_path / "signup.json"
    res = cli_run(["release", EXAMPLE, "--column", "signup_date", "--bounds", "private", "--epsilon", "1", *extra,
                   "--out", out, "--seed", "1", "--allow-nonprivate"])
    assert res.code == 0, res.err
    return dptree.load(out)


def test_dates_from_a_file_with_private_bounds(tmp_path: Path, cli_run: Any) -> None:
    rel = _signup_release(tmp_path, cli_run, "--width", "7d")
    assert rel.domain.kind == "datetime" and rel.domain.width >= 7 * 86_400 * 10**9


def test_a_date_origin_from_the_command_line(tmp_path: Path, cli_run: Any) -> None:
    rel = _signup_release(tmp_path, cli_run, "--bounds-origin", "2020-01-01")
    assert rel.privacy["bounds"]["origin"] == int(np.datetime64("2020-01-01", "ns").astype(np.int64))
    bad = cli_run(["release", EXAMPLE, "--column", "age", "--bounds", "private", "--epsilon", "1",
                   "--bounds-origin", "someday", "--out", tmp_path / "r.json"])
    assert bad.code != 0 and "--bounds-origin" in bad.err
    public = cli_run(["release", EXAMPLE, "--column", "age", "--lower", "0", "--upper", "99", "--epsilon", "1",
                      "--bounds-origin", "30", "--out", tmp_path / "r.json"])
    assert public.code != 0 and "--bounds private" in public.err


@pytest.mark.parametrize(("extra", "match"), [
    (["--lower", "0"], "drop --lower"),
    (["--noise", "gaussian", "--delta", "1e-6"], "laplace"),
    (["--bounds-share", "1.5"], "--bounds-share"),
    (["--user-id", "person_id"], "declare --lower and --upper (--bounds public)"),
    (["--neighbors", "replace", "--on-invalid", "drop"], "replace"),
])
def test_private_bounds_refusals_come_before_any_charge(tmp_path: Path, cli_run: Any, extra: list[str],
                                                        match: str) -> None:
    led = tmp_path / "b.ledger"
    with Ledger(led, total_epsilon=2.0):
        pass
    out = tmp_path / "r.json"
    res = cli_run(["release", EXAMPLE, "--column", "age", "--bounds", "private", "--epsilon", "1", "--out", out,
                   "--ledger", led, *extra])
    assert res.code != 0 and match in res.err and not out.exists()
    with Ledger(led, read_only=True) as ledger:
        assert ledger.spent().charges == 0


def test_public_bounds_still_need_lower_and_upper(tmp_path: Path, cli_run: Any) -> None:
    res = cli_run(["release", EXAMPLE, "--column", "age", "--epsilon", "1", "--out", tmp_path / "r.json"])
    assert res.code != 0 and "--bounds private" in res.err


def test_the_domain_kind_of_a_file_does_not_depend_on_its_rows(tmp_path: Path, cli_run: Any) -> None:
    """DuckDB infers a CSV column's type from the rows (BIGINT, or DOUBLE once one row is 1.5): the
    kind of domain must not follow it, or one record would be visible in the release's type."""
    kinds = []
    for extra in ("", "1.5\n"):
        data = tmp_path / "d.csv"
        data.write_text("v\n" + "".join(f"{i % 97}\n" for i in range(500)) + extra)
        out = tmp_path / "r.json"
        res = cli_run(["release", data, "--column", "v", "--bounds", "private", "--epsilon", "1", "--out", out,
                       "--seed", "1", "--allow-nonprivate", "--force"])
        assert res.code == 0, res.err
        kinds.append(dptree.load(out).domain.kind)
    assert kinds == ["float", "float"]


def test_a_parquet_integer_column_keeps_its_declared_kind(tmp_path: Path, cli_run: Any) -> None:
    """A Parquet file declares its column's type (a CSV's would be DuckDB's guess from the rows, so
    CSV numbers get a float domain): an integer column gets an integer domain of width 1, as the
    same array in memory does (a float domain would clamp ages above 64)."""
    import pandas as pd

    ages = np.random.default_rng(0).integers(18, 90, 2000)
    path = tmp_path / "p.parquet"
    pd.DataFrame({"age": ages}).to_parquet(path)
    from_file = dptree.range_tree(str(path), column="age", bounds="private", epsilon=1.0, rng=1)
    in_memory = dptree.range_tree(ages, bounds="private", epsilon=1.0, rng=1)
    assert from_file.domain == in_memory.domain and from_file.domain.kind == "integer"
    assert np.array_equal(from_file.leaf_estimates, in_memory.leaf_estimates)
    out = tmp_path / "r.json"
    res = cli_run(["release", path, "--column", "age", "--bounds", "private", "--epsilon", "1", "--out", out,
                   "--seed", "1", "--allow-nonprivate"])
    assert res.code == 0, res.err
    assert dptree.load(out).domain == in_memory.domain
