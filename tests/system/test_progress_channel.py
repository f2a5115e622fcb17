"""Progress and stderr are public: the stage lines of ``dptree release --progress`` (and everything
another releasing command prints on stderr) are decided by public parameters before any row is
read, so an empty input and a one-row input print the same lines (docs/notes/privacy.md, "Progress").

Each command runs on a header-only file and on one-row files (an integer user id, which the
DuckDB engine bounds in numpy, a text one, which DuckDB sorts, and a row that ``--on-invalid drop``
drops), CSV and Parquet, with both bounding paths; the lines are compared after removing the
elapsed times."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dptree.data.engines import duckdb_bounded, duckdb_progress
from dptree.data.engines.duckdb_progress import Stages
from dptree.data.engines.numpy import bound_packed, cell_bits
from dptree.noise import make_source

#: (x, user id, group) rows of each input; None: a missing value
_ROWS: dict[str, list[tuple[Any, Any, str]]] = {
    "empty": [],
    "one-integer-id": [(3, "1", "A")],
    "one-text-id": [(3, "a", "A")],
    "one-dropped": [(None, "1", "A")],
}

_RELEASES = {
    "plain": ["--lower", "0", "--upper", "15"],
    "user-id": ["--lower", "0", "--upper", "15", "--user-id", "u", "--max-contributions", "2"],
    "by": ["--lower", "0", "--upper", "15", "--by", "g", "--groups", "A,B"],
    "by-user-id": ["--lower", "0", "--upper", "15", "--by", "g", "--groups", "A,B", "--user-id", "u"],
    "private-bounds": ["--bounds", "private"],
    "sparse": ["--sparse", "--lower", "0", "--upper", "15"],
}


def _write(tmp_path: Path, name: str, fmt: str) -> Path:
    rows = _ROWS[name]
    path = tmp_path / f"{name}.{fmt}"
    if fmt == "csv":
        path.write_text("x,u,g\n" + "".join(f"{'' if x is None else x},{u},{g}\n" for x, u, g in rows))
    else:  # typed columns: an integer id column where the ids are integers, text otherwise
        ids = [u for _, u, _ in rows]
        integer = all(u.isdigit() for u in ids)
        pq.write_table(pa.table({
            "x": pa.array([x for x, _, _ in rows], type=pa.int64()),
            "u": pa.array([int(u) for u in ids] if integer else ids, type=pa.int64() if integer else pa.string()),
            "g": pa.array([g for _, _, g in rows], type=pa.string()),
        }), path)
    return path


def _stderr(cli_run: Any, argv: list[Any]) -> tuple[int, list[str]]:
    code, _, err = cli_run(argv)
    return code, [re.sub(r" \[\d+\.\ds\]$", "", line) for line in err.splitlines()]


@pytest.fixture(autouse=True)
def _no_timed_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """DuckDB's percentage lines come every PROGRESS_INTERVAL seconds: timing, not stages."""
    monkeypatch.setattr(duckdb_progress, "PROGRESS_INTERVAL", 3600.0)


def _out(argv: list[str]) -> str:
    return "out{group}.json" if "--by" in argv else "out.json"


def _compare(tmp_path: Path, cli_run: Any, command: list[str], options: list[str], fmt: str,
             missing: list[str]) -> list[str]:
    """The stderr lines of every input, asserted equal to the empty input's; returns them."""
    inputs = ["empty", "one-integer-id", "one-text-id"] + (["one-dropped"] if missing else [])
    seen = {}
    for name in inputs:
        data = _write(tmp_path, name, fmt)
        seen[name] = _stderr(cli_run, [*command[:1], data, *command[1:], *options, *missing,
                                       "--out", tmp_path / _out(options + command), "--force"])
    for name in inputs:
        assert seen[name] == seen["empty"], (name, seen[name], seen["empty"])
    code, lines = seen["empty"]
    assert code == 0, lines  # a private release of no records is a valid release
    return lines


# bounding per user runs in numpy (few rows) or sorted by DuckDB: both paths for the releases that bound
_PATHS = [pytest.param(release, in_memory, id=f"{release}-{'numpy' if in_memory else 'duckdb'}-bounding")
          for release in _RELEASES for in_memory in ((True, False) if "user-id" in release else (True,))]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize(("release", "in_memory"), _PATHS)
def test_release_progress_stages_do_not_depend_on_the_rows(tmp_path: Path, cli_run: Any,
                                                          monkeypatch: pytest.MonkeyPatch, release: str, fmt: str,
                                                          in_memory: bool) -> None:
    if not in_memory:
        monkeypatch.setattr(duckdb_bounded, "IN_MEMORY_ROWS", 0)  # every input sorted by DuckDB
    command = ["release", "--column", "x", "--epsilon", "1", "--progress"]
    for missing in ([], ["--on-invalid", "drop"]):
        lines = _compare(tmp_path, cli_run, command, _RELEASES[release], fmt, missing)
        stages = [line.removeprefix("dptree: ") for line in lines if not line.startswith("wrote ")]
        if "private" in release:
            assert stages == ["private bounds: 0.1 of epsilon = 1 finds the range"]
        elif release == "sparse":
            assert stages == []
        else:
            engine = list(duckdb_bounded.bounded_stages(1 if release == "by-user-id" else 2))
            if release == "user-id":
                engine = ["bucketing the rows and keeping at most 2 record(s) per user", *engine]
            elif release != "by-user-id":
                engine = []
            assert stages == ["planned a 16-ary tree over 16 buckets", *engine,
                              "histogram computed; adding noise and estimating"]


_OTHERS = {
    "quantiles": ["quantiles", "--column", "x", "--lower", "0", "--upper", "15", "--epsilon", "1", "--q", "0.5"],
    "quantiles-by-user-id": ["quantiles", "--column", "x", "--lower", "0", "--upper", "15", "--epsilon", "1",
                             "--q", "0.5", "--by", "g", "--groups", "A,B", "--user-id", "u"],
    "median": ["median", "--column", "x", "--lower", "0", "--upper", "15", "--epsilon", "1"],
    "quantile": ["quantile", "--column", "x", "--lower", "0", "--upper", "15", "--epsilon", "1", "--q", "0.3"],
    "interior-point": ["interior-point", "--column", "x", "--lower", "0", "--upper", "15", "--epsilon", "1",
                       "--delta", "1e-6"],
}


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("command", list(_OTHERS))
def test_other_releases_print_the_same_stderr_whatever_the_rows(tmp_path: Path, cli_run: Any, command: str,
                                                                fmt: str) -> None:
    """These commands take no --progress: what they print on stderr must not depend on the rows either."""
    args = _OTHERS[command]
    for missing in ([], ["--on-invalid", "drop"]):
        lines = _compare(tmp_path, cli_run, args, [], fmt, missing)
        outs = [tmp_path / _out(args).replace("{group}", g) for g in (["A", "B"] if "--by" in args else [""])]
        assert lines == ["wrote " + ", ".join(map(str, outs))]


def test_hierarchy_prints_the_same_stderr_whatever_the_rows(tmp_path: Path, cli_run: Any) -> None:
    (tmp_path / "structure.csv").write_text("country,state\nFR,IDF\nFR,PACA\n")
    seen = []
    for rows in ("", "FR,IDF\n", "FR,NOWHERE\n"):
        (tmp_path / "data.csv").write_text("country,state\n" + rows)
        seen.append(_stderr(cli_run, ["hierarchy", tmp_path / "data.csv", "--structure", tmp_path / "structure.csv",
                                      "--levels", "country,state", "--epsilon", "1", "--unknown", "drop",
                                      "--out", tmp_path / "h.json", "--force"]))
    assert seen[0] == (0, [f"wrote {tmp_path / 'h.json'}"]) and seen[1] == seen[0] and seen[2] == seen[0]


@pytest.mark.parametrize("rows", [0, 1, 5])
def test_numpy_bounding_announces_every_stage(rows: int) -> None:
    """The numpy engine's packed bounding says the same stages on every input, none included."""
    bits = cell_bits(16)
    key = (np.arange(rows, dtype=np.int64) % 3 << bits) | (np.arange(rows, dtype=np.int64) % 16)
    said: list[str] = []
    with Stages(said.append, duckdb_bounded.bounded_stages(2)[1:]) as say:
        hist = bound_packed(key, bits, 2, 16, make_source(1), say)
    assert said == list(duckdb_bounded.bounded_stages(2)[1:])
    assert hist.shape == (16,) and int(hist.sum()) == min(rows, 6)


def test_a_skipped_or_undeclared_stage_is_refused() -> None:
    with pytest.raises(RuntimeError, match="never announced"):
        with Stages(None, ["a", "b"]) as say:
            say("a")
    with pytest.raises(RuntimeError, match="not the next declared"):
        with Stages(None, ["a", "b"]) as say:
            say("b")
    with pytest.raises(RuntimeError, match="not the next declared"):
        with Stages(None, ["a"]) as say:
            say("a")
            say("a")
    with pytest.raises(KeyError):  # an error inside the block is reported, not hidden by the check
        with Stages(None, ["a"]):
            raise KeyError("x")
