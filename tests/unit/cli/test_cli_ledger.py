"""--ledger on every releasing command: the charge is committed before the output exists, and a
release that does not fit the remaining budget is refused without output."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from dptree import Ledger


def spent(path: Path) -> float:
    with Ledger(path) as led:
        return float(sum(float(c["epsilon"] or 0) for c in led.history()))


def test_every_releasing_command_charges_the_ledger(tmp_path: Path, cli_run: Any) -> None:
    led = tmp_path / "budget.sqlite"
    with Ledger(led, total_epsilon=2.0):
        pass
    data = tmp_path / "d.csv"
    data.write_text("v,country,state\n" + "".join(f"{i % 50},US,{'CA' if i % 2 else 'NY'}\n" for i in range(200)))
    struct = tmp_path / "s.csv"
    struct.write_text("country,state\nUS,CA\nUS,NY\nFR,IDF\n")
    common = ["--seed", "1", "--allow-nonprivate", "--ledger", str(led)]
    assert cli_run(["release", str(data), "--column", "v", "--lower", "0", "--upper", "63", "--epsilon", "0.5",
                    "--out", str(tmp_path / "r.json")] + common).code == 0
    assert cli_run(["hierarchy", str(data), "--levels", "country,state", "--structure", str(struct), "--epsilon", "0.5",
                    "--out", str(tmp_path / "h.json")] + common).code == 0
    assert cli_run(["interior-point", str(data), "--column", "v", "--lower", "0", "--upper", "63", "--epsilon", "0.5",
                    "--method", "exponential", "--seed", "2", "--allow-nonprivate", "--ledger", str(led)]).code == 0
    assert np.isclose(spent(led), 1.5)
    # 0.5 + 0.5 + 0.5 spent of 2.0: a release of 1.0 does not fit and leaves no file behind
    out = tmp_path / "h2.json"
    code, _, err = cli_run(["hierarchy", str(data), "--levels", "country,state", "--structure", str(struct),
                            "--epsilon", "1.0", "--out", str(out)] + common)
    assert code == 2 and "budget" in err.lower()
    assert not out.exists()
    assert np.isclose(spent(led), 1.5)


def test_interior_point_charges_the_delta_its_mechanism_spends(tmp_path: Path, cli_run: Any) -> None:
    """The exponential mechanism is pure epsilon: a --delta given to it is not charged (it was, and
    could exhaust a ledger's delta for nothing); TreeLog spends its --delta and is charged it."""
    led = tmp_path / "budget.sqlite"
    with Ledger(led, total_epsilon=10.0, total_delta=1e-3, accountant="basic"):  # TreeLog has (eps, delta) steps
        pass
    data = tmp_path / "d.csv"
    data.write_text("v\n" + "".join(f"{i % 50}\n" for i in range(200)))
    base = ["interior-point", data, "--column", "v", "--lower", 0, "--upper", 63, "--epsilon", 1, "--ledger", led]
    for extra in (["--method", "exponential", "--delta", "5e-4"], ["--delta", "5e-4"],  # auto: exponential here
                  ["--method", "treelog", "--delta", "1e-4", "--n", "200", "--run-anyway"]):
        assert cli_run(base + extra).code == 0
    with Ledger(led) as ledger:
        assert [float(c["delta"] or 0) for c in ledger.history()] == [0.0, 0.0, 1e-4]


# --------------------------------------------------------------------------- charge order


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, Path]:
    data = tmp_path / "d.csv"
    data.write_text("v,g,country,state\n" + "".join(
        f"{i % 50},{'n' if i % 3 else 's'},US,{'CA' if i % 2 else 'NY'}\n" for i in range(200)))
    struct = tmp_path / "s.csv"
    struct.write_text("country,state\nUS,CA\nUS,NY\nFR,IDF\n")
    led = tmp_path / "b.ledger"
    Ledger(led, total_epsilon=10.0).close()
    return {"data": data, "struct": struct, "led": led, "dir": tmp_path}


def commands(f: dict[str, Path], out: str) -> dict[str, list[str]]:
    """Every releasing command, charging 0.5 to the ledger of ``f``."""
    data, led = str(f["data"]), ["--ledger", str(f["led"])]
    rel = ["release", data, "--column", "v", "--lower", "0", "--upper", "63", "--epsilon", "0.5"]
    return {
        "release": rel + ["--out", out] + led,
        "release --by": rel + ["--by", "g", "--groups", "n,s", "--out", out.replace(".json", "-{group}.json")] + led,
        "release --user-id": rel + ["--user-id", "g", "--out", out] + led,
        "release --sparse": rel + ["--sparse", "--out", out] + led,
        "hierarchy": ["hierarchy", data, "--levels", "country,state", "--structure", str(f["struct"]),
                      "--epsilon", "0.5", "--out", out] + led,
        "interior-point": ["interior-point", data, "--column", "v", "--lower", "0", "--upper", "63",
                           "--epsilon", "0.5", "--method", "exponential"] + led,
        "median --out": ["median", data, "--column", "v", "--lower", "0", "--upper", "63", "--epsilon", "0.5",
                         "--out", out] + led,
        "quantiles": ["quantiles", data, "--column", "v", "--q", "0.25,0.75", "--lower", "0", "--upper", "63",
                      "--epsilon", "0.5", "--out", out] + led,
    }


def charges(led: Path) -> list[dict[str, Any]]:
    with Ledger(led, read_only=True) as ledger:
        return ledger.history()


def with_option(argv: list[str], option: str, value: str) -> list[str]:
    out = list(argv)
    if option in out:
        out[out.index(option) + 1] = value
    else:
        out += [option, value]
    return out


@pytest.mark.parametrize("command", ["release", "release --by", "release --user-id", "hierarchy", "interior-point"])
def test_empty_ledger_is_an_error(setup: dict[str, Path], command: str, cli_run: Any) -> None:
    """--ledger "" used to mean 'no ledger': the release ran and was never charged."""
    out = setup["dir"] / "r.json"
    argv = with_option(commands(setup, str(out))[command], "--ledger", "")
    code, _, err = cli_run(argv)
    assert code == 2 and "--ledger needs a file name" in err and err.count("\n") == 1
    assert list(setup["dir"].glob("r*.json")) == []


@pytest.mark.parametrize("command", ["release", "release --by", "release --user-id", "release --sparse", "hierarchy",
                                     "quantiles", "median --out"])
def test_bad_out_is_refused_before_the_charge(setup: dict[str, Path], command: str,
                                              cli_run: Any) -> None:
    """A typo in --out used to burn the budget: the charge came before the output was checked."""
    before = setup["data"].read_bytes()
    bad = {
        "missing directory": str(setup["dir"] / "nope" / "r.json"),
        "a directory": str(setup["dir"]),
        "the input file": str(setup["data"]),
        "the ledger": str(setup["led"]),
    }
    if command == "release --by":  # --out must contain {group}: every group's file is checked
        (setup["dir"] / "r-s.json").mkdir()
        bad = {"missing directory": str(setup["dir"] / "nope" / "r-{group}.json"),
               "a directory (group s)": str(setup["dir"] / "r-{group}.json")}
    for what, out in bad.items():
        argv = with_option(commands(setup, out)[command], "--out", out)
        code, _, err = cli_run(argv)
        assert code == 2 and "--out" in err and err.count("\n") == 1, (what, err)
        assert charges(setup["led"]) == [], what
    assert setup["data"].read_bytes() == before  # the input was not overwritten


@pytest.mark.parametrize("command", ["release", "release --by", "release --user-id", "release --sparse", "hierarchy",
                                     "quantiles", "median --out"])
def test_the_ledger_as_input_or_as_a_forced_output_is_refused_before_the_charge(
        setup: dict[str, Path], command: str, cli_run: Any, tmp_path: Path) -> None:
    """The ledger given as the data file was charged, then failed to read (budget spent on an
    error); a copy of a ledger given as --out with --force was replaced by JSON (a lost ledger
    forgets what was spent). Both are refused first, whatever --force says."""
    import shutil

    argv = commands(setup, str(setup["dir"] / "r.json"))[command]
    as_input = [str(setup["led"]) if a == str(setup["data"]) else a for a in argv]
    code, _, err = cli_run(as_input)
    assert code == 2 and "is the budget ledger" in err and err.count("\n") == 1, err
    assert charges(setup["led"]) == []
    other = tmp_path / "other.ledger"
    out = str(other)
    if command == "release --by":  # one file per group: the first group's file is the ledger's copy
        first = argv[argv.index("--groups") + 1].split(",")[0]
        other, out = tmp_path / f"other-{first}.ledger", str(tmp_path / "other-{group}.ledger")
    shutil.copy(setup["led"], other)
    code, _, err = cli_run(with_option(argv, "--out", out) + ["--force"])
    assert code == 2 and "never overwritten" in err, err
    assert charges(setup["led"]) == [] and other.read_bytes() == setup["led"].read_bytes()


@pytest.mark.parametrize("command", ["release", "release --by", "release --user-id", "release --sparse", "hierarchy",
                                     "interior-point", "quantiles"])
def test_the_charge_is_committed_before_the_data_is_read(setup: dict[str, Path], command: str,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         cli_run: Any) -> None:
    """Every data reader of every releasing command runs after the charge."""
    import dptree.data.histograms as bd

    seen: list[int] = []

    def spy(module: Any, name: str) -> None:
        original: Callable[..., Any] = getattr(module, name)

        def reader(*args: Any, **kwargs: Any) -> Any:
            con = sqlite3.connect(setup["led"])  # another connection: only committed charges
            seen.append(con.execute("SELECT count(*) FROM charges").fetchone()[0])
            con.close()
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, reader)

    from dptree.data.engines.base import Engine

    for module, name in ((bd, "leaf_histogram"), (bd, "path_counts"), (bd, "value_counts"), (bd, "ordered_counts"),
                         (bd, "values"), (Engine, "counts"), (Engine, "ordered_counts")):
        spy(module, name)
    code, _, err = cli_run(commands(setup, str(setup["dir"] / "r.json"))[command])
    assert code == 0, err
    # the data was read, and every read began after the charge was committed
    assert seen and set(seen) == {1}, seen
    (h,) = charges(setup["led"])
    assert h["status"] == "done" and h["epsilon"] == 0.5


DATA_FAILURES = {  # data-dependent refusals: each used to be free (raised before the charge)
    "release": ("--column", "nope"),
    "release --by": ("--groups", "n,x"),          # rows of group s are not in the listed groups
    "release --user-id": ("--user-id", "nope"),
    "release --sparse": ("--column", "g"),          # text, not numbers
    "hierarchy": ("--levels", "country,g"),       # the data's paths are not in the structure
    "interior-point": ("--column", "g"),          # not numeric
    "quantiles": ("--column", "g"),               # not numeric
}


@pytest.mark.parametrize("command", sorted(DATA_FAILURES))
def test_a_release_that_fails_on_its_data_keeps_its_charge(setup: dict[str, Path], command: str,
                                                           cli_run: Any) -> None:
    """Probing with errors costs budget: the charge is committed first and stays (status failed)."""
    out = setup["dir"] / "r.json"
    argv = with_option(commands(setup, str(out))[command], *DATA_FAILURES[command])
    if command == "hierarchy":
        setup["struct"].write_text("country,g\nUS,zz\nFR,IDF\n")
    code, _, err = cli_run(argv)
    assert code == 2 and err.count("\n") == 1, err
    assert "stays spent" in err
    (h,) = charges(setup["led"])
    assert h["status"] == "failed" and h["epsilon"] == 0.5
    assert list(setup["dir"].glob("r*.json")) == []


INVALID_PARAMETERS = {  # not data-dependent: refused before any charge
    "release": [("--epsilon", "-1"), ("--lower", "70"), ("--width", "0")],
    "release --by": [("--groups", "a b,c"), ("--neighbors", "replace")],
    "release --user-id": [("--max-contributions", "0")],
    "release --sparse": [("--epsilon", "0"), ("--branching", "3"), ("--lower", "70"), ("--width", "2"),
                         ("--noise", "gaussian"), ("--max-contributions", "0")],
    "hierarchy": [("--method", "multiplicative"), ("--tau-min", "1"), ("--levels", "country"),
                  ("--max-contributions", "0"), ("--epsilon", "0")],
    "interior-point": [("--beta", "2"), ("--method", "treelog"), ("--lower", "99"), ("--epsilon", "nan")],
    "quantiles": [("--q", "0.5,2"), ("--method", "joint"), ("--lower", "99"), ("--level", "1.5"), ("--width", "1d"),
                  ("--n", "-3"), ("--n-min", "0")],
}


@pytest.mark.parametrize("command", sorted(INVALID_PARAMETERS))
def test_invalid_parameters_are_refused_before_any_charge(setup: dict[str, Path], command: str,
                                                          cli_run: Any) -> None:
    for option, value in INVALID_PARAMETERS[command]:
        argv = with_option(commands(setup, str(setup["dir"] / "r.json"))[command], option, value)
        code, _, err = cli_run(argv)
        assert code == 2 and err.count("\n") == 1, (option, value, err)
        assert "stays spent" not in err
        assert charges(setup["led"]) == [], (option, value)


def test_interior_point_seed_needs_allow_nonprivate(setup: dict[str, Path], cli_run: Any) -> None:
    """--seed runs a seeded (not private) release only with confirmation."""
    argv = commands(setup, "")["interior-point"] + ["--seed", "3"]
    code, _, err = cli_run(argv)
    assert code == 2 and "--allow-nonprivate" in err and "NOT private" in err
    assert charges(setup["led"]) == []
    code, _, err = cli_run(argv + ["--allow-nonprivate"])
    assert code == 0, err


def test_missing_ledger_names_the_cli_command(setup: dict[str, Path], cli_run: Any) -> None:
    """The message used Python syntax (total_epsilon=1.0); the CLI user needs the command."""
    missing = str(setup["dir"] / "none.ledger")
    for command, argv in commands(setup, str(setup["dir"] / "r.json")).items():
        code, _, err = cli_run(with_option(argv, "--ledger", missing))
        assert code == 2 and "dptree budget" in err and "--create" in err and "total_epsilon=" not in err, command
    assert not (setup["dir"] / "none.ledger").exists()


def test_every_releasing_command_records_its_output_files_on_its_charge(tmp_path: Path, cli_run: Any) -> None:
    """The charge names the files its release wrote (one per group with --by); a release that fails
    on its data names none."""
    led = tmp_path / "budget.sqlite"
    Ledger(led, total_epsilon=100.0).close()
    data = tmp_path / "d.csv"
    data.write_text("v,g,country,state\n" + "".join(f"{i % 50},{'AB'[i % 2]},US,{'CA' if i % 2 else 'NY'}\n"
                                                    for i in range(200)))
    struct = tmp_path / "s.csv"
    struct.write_text("country,state\nUS,CA\nUS,NY\n")
    column = ["--column", "v", "--lower", "0", "--upper", "63", "--epsilon", "1"]
    runs = {
        "release": ["release", *column],
        "release-by": ["release", *column, "--by", "g", "--groups", "A,B"],
        "release-private-bounds": ["release", "--column", "v", "--epsilon", "1", "--bounds", "private"],
        "release-sparse": ["release", *column, "--sparse"],
        "hierarchy": ["hierarchy", "--levels", "country,state", "--structure", str(struct), "--epsilon", "1"],
        "quantiles": ["quantiles", *column, "--q", "0.5"],
        "quantiles-by": ["quantiles", *column, "--q", "0.5", "--by", "g", "--groups", "A,B"],
        "interior-point": ["interior-point", *column, "--method", "exponential"],
        "median": ["median", *column],
        "quantile": ["quantile", *column, "--q", "0.9"],
    }
    written = []
    for name, argv in runs.items():
        out = tmp_path / (f"{name}-{{group}}.json" if "--by" in argv else f"{name}.json")
        code, _, err = cli_run([argv[0], data, *argv[1:], "--ledger", led, "--out", out])
        assert code == 0, (name, err)
        files = [str(out).replace("{group}", g) for g in ("A", "B")] if "--by" in argv else [str(out)]
        assert all(Path(f).is_file() for f in files), name
        written.append(", ".join(files))
    code, _, err = cli_run(["quantiles", data, "--column", "absent", "--lower", "0", "--upper", "63", "--epsilon",
                            "1", "--q", "0.5", "--ledger", led, "--out", tmp_path / "failed.json"])
    assert code != 0 and "stays spent" in err
    with Ledger(led) as ledger:
        history = ledger.history()
    assert [h["output"] for h in history] == [*written, None]
    assert [h["status"] for h in history] == ["done"] * len(runs) + ["failed"]
