"""The one run order of every releasing command (:mod:`dptree.cli.run`) and the one flag table
(:mod:`dptree.cli.flags`)."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Any

import pytest

import dptree
from dptree import Ledger
from dptree.cli.flags import FLAGS, flag_of, in_cli_terms
from dptree.cli.main import build_parser
from dptree.errors import DomainError, InvalidParameterError


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    data = tmp_path / "d.csv"
    data.write_text("v,g,country,state\n" + "".join(f"{i % 50},{'AB'[i % 2]},US,{'CA' if i % 2 else 'NY'}\n"
                                                    for i in range(200)))
    struct = tmp_path / "s.csv"
    struct.write_text("country,state\nUS,CA\nUS,NY\n")
    led = tmp_path / "b.ledger"
    Ledger(led, total_epsilon=100.0, total_delta=1e-3, approx_delta=5e-4).close()  # delta for (epsilon, delta) steps
    return {"data": data, "struct": struct, "led": led, "dir": tmp_path}


COLUMN = ["--column", "v", "--lower", "0", "--upper", "63", "--epsilon", "1"]
#: every releasing command, with --out
RUNS = {
    "release": ["release", *COLUMN],
    "release --by": ["release", *COLUMN, "--by", "g", "--groups", "A,B"],
    "release --user-id": ["release", *COLUMN, "--user-id", "g"],
    "release --max-contributions private": ["release", *COLUMN, "--user-id", "g", "--max-contributions", "private"],
    "release --bounds private": ["release", "--column", "v", "--epsilon", "1", "--bounds", "private"],
    "release --sparse": ["release", *COLUMN, "--sparse"],
    "hierarchy": ["hierarchy", "--levels", "country,state", "--structure", "{struct}", "--epsilon", "1"],
    "interior-point": ["interior-point", *COLUMN, "--method", "exponential"],
    "median": ["median", *COLUMN],
    "quantile": ["quantile", *COLUMN, "--q", "0.9"],
    "quantiles": ["quantiles", *COLUMN, "--q", "0.25,0.75"],
    "quantiles --by": ["quantiles", *COLUMN, "--q", "0.5", "--by", "g", "--groups", "A,B"],
    "release --groups private": ["release", *COLUMN, "--by", "g", "--groups", "private", "--delta", "1e-6"],
    "quantiles --groups private": ["quantiles", *COLUMN, "--q", "0.5", "--by", "g", "--groups", "private", "--delta",
                                   "1e-6"],
    "quantiles --max-contributions private": ["quantiles", *COLUMN, "--q", "0.5", "--user-id", "g",
                                              "--max-contributions", "private"],
}
#: a public parameter of each command that no mechanism takes (beside --epsilon 0, refused by all)
INVALID = {
    "release": ("--width", "0"), "release --by": ("--groups", "A,B,a b"), "release --user-id": ("--max-contributions", "0"),
    "release --bounds private": ("--bounds-share", "1.5"), "release --sparse": ("--branching", "3"),
    "release --max-contributions private": ("--contributions-share", "1.5"),
    "hierarchy": ("--tau-min", "1"), "interior-point": ("--beta", "2"), "median": ("--n", "0"),
    "quantile": ("--q", "1.5"), "quantiles": ("--level", "1.5"), "quantiles --by": ("--method", "joint"),
    "release --groups private": ("--groups-share", "1.5"), "quantiles --groups private": ("--max-groups", "0"),
    "quantiles --max-contributions private": ("--contributions-cap", "0"),
}


def _one_file_per_group(name: str) -> bool:
    return "--by" in RUNS[name] and "private" not in RUNS[name]  # --groups private writes one file


def argv_of(files: dict[str, Path], name: str, out: Path) -> list[Any]:
    argv = [a.replace("{struct}", str(files["struct"])) for a in RUNS[name]]
    return [argv[0], files["data"], *argv[1:], "--ledger", files["led"], "--out", out]


def history(led: Path) -> list[dict[str, Any]]:
    with Ledger(led, read_only=True) as ledger:
        return ledger.history()


@pytest.mark.parametrize("name", sorted(RUNS))
def test_every_releasing_command_notes_its_charge_and_records_its_output(files: dict[str, Path], name: str,
                                                                        cli_run: Any) -> None:
    """The file written names the ledger charge in its metadata, and the charge names the file."""
    by = _one_file_per_group(name)
    out = files["dir"] / ("r-{group}.json" if by else "r.json")
    code, printed, err = cli_run(argv_of(files, name, out))
    assert code == 0 and printed, err
    paths = [str(out).replace("{group}", g) for g in ("A", "B")] if by else [str(out)]
    (charge,) = history(files["led"])
    assert charge["status"] == "done" and charge["output"] == ", ".join(paths)
    assert err.strip().endswith("wrote " + ", ".join(paths))
    for path in paths:
        noted = dptree.load(path).metadata["ledger"]
        assert noted["charge"] == charge["id"] and noted["path"] == str(files["led"])
        assert noted["epsilon"] == charge["epsilon"] == 1.0
        if "--groups private" in name:  # the selection's delta, charged with it before the data was read
            assert noted["delta"] == charge["delta"] == 1e-6


@pytest.mark.parametrize("name", sorted(RUNS))
def test_an_invalid_parameter_never_charges(files: dict[str, Path], name: str, cli_run: Any) -> None:
    for option, value in (("--epsilon", "0"), INVALID[name]):
        argv = argv_of(files, name, files["dir"] / ("r-{group}.json" if _one_file_per_group(name) else "r.json"))
        argv = [*argv[:argv.index(option)], option, value, *argv[argv.index(option) + 2:]] if option in argv else \
            [*argv, option, value]
        code, _, err = cli_run(argv)
        assert code == 2 and err.count("\n") == 1 and "stays spent" not in err, (option, err)
        assert option.split()[0] in err, (option, err)  # the message names the flag
        assert history(files["led"]) == [], (option, value)
    assert list(files["dir"].glob("r*.json")) == []


def _validated_parameters() -> set[str]:
    """Every parameter a declared validator (``validate_params``) of the library can name."""
    names: set[str] = set()
    for info in pkgutil.walk_packages(dptree.__path__, "dptree."):
        if ".cli" in info.name or info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional dependency (pyspark)
            continue
        for value in list(vars(module).values()):
            for obj in [value, *vars(value).values()] if isinstance(value, type) else [value]:
                names.update(getattr(obj, "constraints", None) or {})
    return names


def test_the_flag_table_covers_every_parameter_the_validators_name() -> None:
    validated = _validated_parameters()
    assert {"epsilon", "delta", "max_contributions", "on_invalid", "column", "level"} <= validated
    assert validated - set(FLAGS) == set()
    options = {flag for flag in (flag_of(name, command) for name in FLAGS
                                 for command in (None, "query", "plot", "report", "budget", "release", "quantiles"))
               if flag is not None}
    parser = build_parser()
    from dptree.cli.core import known_flags

    assert options - known_flags(parser) == set()  # every flag of the table is an option of some command


def test_a_message_names_the_flag_of_the_command_that_ran() -> None:
    """The parameter an error names becomes the running command's flag, from the one table: query,
    plot and report take the level as --ci, the budget's delta is --total-delta; a Python-only choice
    of None is dropped; a setting the message suggests is spelled as flags; a flag of another
    command is never named."""
    parser = build_parser()
    from dptree.cli.core import known_flags

    def say(exc: Exception, command: str) -> str:
        return in_cli_terms(exc, command, known_flags(parser, command))  # type: ignore[arg-type]

    level = InvalidParameterError("level must be a finite number > 0 and < 1; got 1.0", parameter="level")
    assert say(level, "query").startswith("--ci must be") and say(level, "quantiles").startswith("--level must be")
    assert say(level, "report").startswith("--ci must be")
    delta = InvalidParameterError("delta must be in [0, 1), got 1.5", parameter="delta")
    assert say(delta, "budget").startswith("--total-delta must be")
    tau = InvalidParameterError("tau_min only applies to method='multiplicative'", parameter="tau_min")
    assert say(tau, "hierarchy") == "--tau-min only applies to --method multiplicative"
    branching = InvalidParameterError("branching must be None or an integer >= 2; got 1; e.g. branching=16, or None "
                                      "to choose it", parameter="branching")
    assert say(branching, "release") == "--branching must be an integer >= 2; got 1; e.g. --branching 16"
    both = InvalidParameterError("pass unknown='drop' (--unknown-groups drop) to leave those rows out")
    assert say(both, "quantiles") == "pass --unknown-groups drop to leave those rows out"
    bounds = DomainError("lower='abc' is not a number, a date or a timestamp", parameter="lower")
    assert say(bounds, "median") == "--lower abc is not a number, a date or a timestamp"
    # --user-id is not an option of query: its name stays as the library spells it
    assert "--user-id" not in say(InvalidParameterError("pass user_id='person' to bound users"), "query")


def test_the_validator_names_its_parameter() -> None:
    with pytest.raises(InvalidParameterError) as info:
        dptree.range_tree([1, 2], lower=0, upper=9, epsilon=1.0, max_contributions=0)
    assert info.value.parameter == "max_contributions"
    with pytest.raises(InvalidParameterError) as info:
        dptree.quantiles([1, 2], [0.5], lower=0, upper=9, epsilon=-1.0)
    assert info.value.parameter == "epsilon"
