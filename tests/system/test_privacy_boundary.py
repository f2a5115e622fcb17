"""The privacy boundary: nothing computed from the private rows leaves a release except
through noise.

Every registered mechanism (``tests/audit_registry/``, :mod:`dptree.testing.registry`) is run on each of its worst-case neighboring
pairs with the same test seed, so the noise is identical and only the data differs. Field by
field, everything that differs must be declared noisy by the release kind's ``BOUNDARY``
(:mod:`dptree.privacy.boundary`), and every field must be declared. The same comparison covers what the
CLI prints.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any, ClassVar

import audit_registry  # noqa: F401  (registers every mechanism)
import pytest

from dptree.privacy.boundary import Boundary, boundary_violations, release_fields
from dptree.testing import audit

SPECS = audit.registered()


@pytest.fixture(autouse=True)
def _same_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The creation time is public (the clock), like the seed: neighboring runs read the same one."""
    monkeypatch.setattr("dptree.io.release_file.utc_now", lambda: "2026-01-01T00:00:00Z")


@pytest.mark.parametrize("name", [s.name for s in SPECS])
def test_every_field_that_depends_on_the_data_is_declared_noisy(name: str) -> None:
    spec = audit.get(name)
    assert spec.release is not None, f"{name}: register a release(dataset, seed) for the boundary test"
    pairs = list(spec.worst_cases())
    assert pairs
    for pair in pairs:
        for seed in (0, 1):
            r0, r1 = spec.release(pair.d0, seed), spec.release(pair.d1, seed)
            assert type(r0) is type(r1)
            problems = boundary_violations(r0, r1)
            assert not problems, f"{name} / {pair.label}: " + "; ".join(problems)
            assert release_fields(r0)  # the comparison saw real fields


# --------------------------------------------------------------------------- teeth


@dataclasses.dataclass
class _LeakyResult:
    """A result that reports the exact n as if it were a public parameter."""

    BOUNDARY: ClassVar[Boundary] = Boundary(public=("epsilon", "n"), noisy=("value",))

    value: float
    epsilon: float
    n: int


@dataclasses.dataclass
class _UndeclaredResult:
    BOUNDARY: ClassVar[Boundary] = Boundary(public=("epsilon",), noisy=("value",))

    value: float
    epsilon: float
    rows_read: int


def test_boundary_check_catches_a_leaked_size_and_an_undeclared_field() -> None:
    assert boundary_violations(_LeakyResult(1.5, 1.0, 30), _LeakyResult(2.5, 1.0, 30)) == []
    problems = boundary_violations(_LeakyResult(1.5, 1.0, 30), _LeakyResult(1.5, 1.0, 31))
    assert problems and "n: declared public but depends on the data" in problems[0]
    problems = boundary_violations(_UndeclaredResult(1.0, 1.0, 5), _UndeclaredResult(1.0, 1.0, 5))
    assert problems == ["rows_read: not declared public or noisy"]


def test_a_privately_chosen_bound_is_declared_noisy(monkeypatch: pytest.MonkeyPatch) -> None:
    """``max_contributions="private"``: on neighbouring data with the same seed the chosen bound
    (and what follows from it: the noise, the sensitivities) differs, and it is declared noisy;
    declared public, the check would catch it."""
    spec = audit.get("range_tree/private_max_contributions")
    pair = next(iter(spec.worst_cases()))
    r0, r1 = spec.release(pair.d0, 1), spec.release(pair.d1, 1)
    assert r0.max_contributions != r1.max_contributions
    assert boundary_violations(r0, r1) == []
    declared = type(r0).BOUNDARY
    monkeypatch.setattr(type(r0), "BOUNDARY", Boundary(public=declared.public, noisy=tuple(
        p for p in declared.noisy if "max_contributions" not in p and "chosen" not in p)))
    problems = boundary_violations(r0, r1)
    assert any(p.startswith("privacy.max_contributions: declared public") for p in problems), problems
    assert any(p.startswith("parameters.contributions.chosen: declared public") for p in problems), problems


# --------------------------------------------------------------------------- printed CLI output

#: lines of each data-touching command's printed output that render noisy values (a prefix per
#: line); every other printed line must be identical on neighboring data
NOISY_LINES: dict[str, tuple[str, ...]] = {
    "release": (),
    "release --max-contributions private": ("RangeTree ",),  # the summary names the chosen bound
    "hierarchy": (),
    "interior-point": ("interior_point:", "value:", "bottom:"),
    "median": ("median:",),
    "quantile": ("quantile(",),
}


def _printed(result: Any) -> str:
    """Everything a successful ``cli_run`` printed, stdout then stderr."""
    code, out, err = result
    assert code == 0, err
    return out + err


def _differing_lines(a: str, b: str, tmp: Path) -> list[tuple[str, str]]:
    """Lines that differ, after the temporary folder and the d0/d1 sub-folders are normalised."""

    def norm(text: str) -> list[str]:
        text = text.replace(str(tmp), "TMP")
        for label in ("d0", "d1"):
            text = text.replace(f"/{label}/", "/dX/")
        return text.splitlines()

    la, lb = norm(a), norm(b)
    assert len(la) == len(lb), (a, b)
    return [(x, y) for x, y in zip(la, lb) if x != y]


def _neighboring_csvs(tmp: Path, header: str, rows: list[str], extra: str) -> tuple[Path, Path]:
    d0, d1 = tmp / "d0" / "data.csv", tmp / "d1" / "data.csv"
    for d, rs in ((d0, rows), (d1, rows + [extra])):
        d.parent.mkdir()
        d.write_text("\n".join([header] + rs) + "\n")
    return d0, d1


def test_cli_prints_nothing_that_depends_on_the_data_outside_the_noise(tmp_path: Path, cli_run: Any) -> None:
    rows = [str(v) for v in (3, 5, 5, 8, 13, 21, 21, 34, 55, 89)] * 7
    d0, d1 = _neighboring_csvs(tmp_path, "v", rows, "40")
    common = ["--column", "v", "--lower", "0", "--upper", "100", "--epsilon", "1", "--seed", "5", "--allow-nonprivate"]
    outs = {}
    for label, path in (("d0", d0), ("d1", d1)):
        outs[label] = _printed(cli_run(["release", str(path), *common, "--out", str(path.parent / "r.json")]))
    assert _differing_lines(outs["d0"], outs["d1"], tmp_path) == []
    # the interior point: only the value line may differ
    outs = {}
    for label, path in (("d0", d0), ("d1", d1)):
        outs[label] = _printed(cli_run(["interior-point", str(path), "--column", "v", "--lower", "0", "--upper", "100",
                                        "--epsilon", "1", "--seed", "5", "--allow-nonprivate"]))
    for x, y in _differing_lines(outs["d0"], outs["d1"], tmp_path):
        assert x.startswith(NOISY_LINES["interior-point"]), f"printed line depends on the data: {x!r} vs {y!r}"
    # median and one quantile: only the value line may differ
    for cmd, extra in (("median", []), ("quantile", ["--q", "0.9"])):
        outs = {}
        for label, path in (("d0", d0), ("d1", d1)):
            outs[label] = _printed(cli_run([cmd, str(path), "--column", "v", *extra, "--lower", "0", "--upper", "100",
                                            "--epsilon", "1", "--seed", "5", "--allow-nonprivate"]))
        for x, y in _differing_lines(outs["d0"], outs["d1"], tmp_path):
            assert x.startswith(NOISY_LINES[cmd]), f"{cmd}: printed line depends on the data: {x!r} vs {y!r}"
    # query output of the two releases: only estimates may differ, never the structure
    for label in ("d0", "d1"):
        outs[label] = _printed(cli_run(["query", str(tmp_path / label / "r.json"), "--count", "0:50", "--quantile", "0.5",
                                        "--bins", "4"]))
    for x, y in _differing_lines(outs["d0"], outs["d1"], tmp_path):
        assert x.split()[0] == y.split()[0] and x.split()[0] not in ("query", "RangeTree"), (x, y)
    # hierarchy counts
    hrows = ["US,CA", "US,NY", "FR,IDF", "US,CA"] * 5
    (tmp_path / "h").mkdir()
    h0, h1 = _neighboring_csvs(tmp_path / "h", "country,state", hrows, "FR,IDF")
    structure = tmp_path / "structure.csv"
    structure.write_text("country,state\nUS,CA\nUS,NY\nFR,IDF\n")
    outs = {}
    for label, path in (("d0", h0), ("d1", h1)):
        outs[label] = _printed(cli_run(["hierarchy", str(path), "--levels", "country,state", "--structure", str(structure),
                                        "--epsilon", "1", "--seed", "5", "--allow-nonprivate",
                                        "--out", str(path.parent / "h.json")]))
    assert _differing_lines(outs["d0"], outs["d1"], tmp_path) == []


def test_cli_prints_nothing_that_depends_on_the_data_for_a_2d_release(tmp_path: Path, cli_run: Any) -> None:
    rows = [f"{x},{y}" for x, y in ((1.5, 2.5), (3.0, 4.0), (0.1, 9.9), (7.7, 7.7))] * 5
    d0, d1 = _neighboring_csvs(tmp_path, "lon,lat", rows, "9.5,0.5")
    outs = {}
    for label, path in (("d0", d0), ("d1", d1)):
        outs[label] = _printed(cli_run(["release", str(path), "--columns", "lon,lat", "--lower", "0.0,0.0", "--upper",
                                        "10.0,10.0", "--width", "1", "--epsilon", "1", "--seed", "5",
                                        "--allow-nonprivate", "--out", str(path.parent / "r.json")]))
    assert _differing_lines(outs["d0"], outs["d1"], tmp_path) == []


def test_cli_prints_only_the_summary_of_a_private_bound(tmp_path: Path, cli_run: Any) -> None:
    rows = [f"{v},{u}" for u, n in enumerate((1, 1, 2, 3, 5, 8)) for v in range(n)]
    d0, d1 = _neighboring_csvs(tmp_path, "v,u", rows, "\n".join(f"{v},99" for v in range(8)))
    for seed in ("1", "2", "5"):
        outs = {}
        for label, path in (("d0", d0), ("d1", d1)):
            outs[label] = _printed(cli_run(["release", str(path), "--column", "v", "--lower", "0", "--upper", "9",
                                            "--epsilon", "4", "--user-id", "u", "--max-contributions", "private",
                                            "--contributions-share", "0.25", "--contributions-cap", "8", "--seed", seed,
                                            "--allow-nonprivate", "--out", str(path.parent / f"r{seed}.json")]))
        for x, y in _differing_lines(outs["d0"], outs["d1"], tmp_path):
            assert x.startswith(NOISY_LINES["release --max-contributions private"]), (x, y)


def test_cli_output_check_has_teeth() -> None:
    """The old interior-point output printed the exact n: such a line is caught."""
    old0 = "interior_point: 21\nguarantee_applies: True (n=70, n_required=31, beta=0.1)\n"
    old1 = "interior_point: 21\nguarantee_applies: True (n=71, n_required=31, beta=0.1)\n"
    diff = _differing_lines(old0, old1, Path("/nonexistent"))
    assert diff and not all(x.startswith(NOISY_LINES["interior-point"]) for x, _ in diff)
    assert re.search(r"n=70", diff[0][0])
