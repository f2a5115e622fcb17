"""The conventions every ``dptree`` command shares: one error prefix on stderr,
results on stdout and diagnostics on stderr, the exit statuses, one parser built from one module
per command, and releases told apart by their kind."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Any

import pytest

from dptree.cli import core
from dptree.cli.main import build_parser

SRC = Path(__file__).resolve().parents[3] / "src" / "dptree" / "cli"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A data file, a hierarchy's rows and structure, a ledger, and a saved release of each kind."""
    from dptree.cli.main import main

    d = tmp_path_factory.mktemp("conventions")
    data, rows, structure = d / "d.csv", d / "rows.csv", d / "s.csv"
    data.write_text("v\n" + "".join(f"{i % 50}\n" for i in range(200)))
    rows.write_text("country,state\n" + "US,CA\n" * 20 + "FR,IDF\n" * 4)
    structure.write_text("country,state\nUS,CA\nUS,NY\nFR,IDF\n")
    out = {"dir": d, "data": data, "rows": rows, "structure": structure, "rel": d / "r.json", "h": d / "h.json",
           "ledger": d / "b.ledger"}
    assert main(["release", str(data), "--column", "v", "--lower", "0", "--upper", "63", "--epsilon", "1",
                 "--out", str(out["rel"])]) == 0
    assert main(["hierarchy", str(rows), "--levels", "country,state", "--structure", str(structure),
                 "--epsilon", "1", "--out", str(out["h"])]) == 0
    assert main(["budget", str(out["ledger"]), "--create", "--total-epsilon", "10"]) == 0
    out["stream"] = d / "stream.json"
    assert main(["stream", "create", str(out["stream"]), "--horizon", "8", "--epsilon", "1"]) == 0
    return out


def succeeding(f: dict[str, Path]) -> dict[str, tuple[list[str], str | None]]:
    """A successful run of every command, and the file it says it wrote (None: it writes none)."""
    d = f["dir"]
    column = ["--column", "v", "--lower", "0", "--upper", "63", "--epsilon", "1"]
    return {
        "release": (["release", str(f["data"]), *column, "--out", str(d / "r2.json")], str(d / "r2.json")),
        "query": (["query", str(f["rel"]), "--count", "0:10"], None),
        "plot": (["plot", str(f["h"]), "--out", str(d / "p.png")], str(d / "p.png")),
        "hierarchy": (["hierarchy", str(f["rows"]), "--levels", "country,state", "--structure", str(f["structure"]),
                       "--epsilon", "1", "--out", str(d / "h2.json")], str(d / "h2.json")),
        "interior-point": (["interior-point", str(f["data"]), *column], None),
        "median": (["median", str(f["data"]), *column], None),
        "quantile": (["quantile", str(f["data"]), "--q", "0.9", *column], None),
        "quantiles": (["quantiles", str(f["data"]), "--q", "0.1,0.9", *column, "--out", str(d / "q.json")],
                      str(d / "q.json")),
        "budget": (["budget", str(f["ledger"])], None),
        "report": (["report", str(f["rel"]), "--out", str(d / "r.html")], str(d / "r.html")),
        "stream": (["stream", "show", str(f["stream"])], None),
    }


def failing(f: dict[str, Path]) -> dict[str, list[str]]:
    """A refused run of every command: a user error found after the arguments were parsed."""
    d = f["dir"]
    column = ["--column", "v", "--lower", "9", "--upper", "0", "--epsilon", "1"]  # lower > upper
    return {
        "release": ["release", str(f["data"]), *column, "--out", str(d / "x.json")],
        "query": ["query", str(f["h"]), "--count", "1:2"],
        "plot": ["plot", str(f["h"]), "--out", str(d / "x.png"), "--log"],
        "hierarchy": ["hierarchy", str(f["rows"]), "--levels", "country,state", "--structure", str(f["structure"]),
                      "--epsilon", "1", "--seed", "1", "--out", str(d / "x.json")],
        "interior-point": ["interior-point", str(f["data"]), *column],
        "median": ["median", str(d / "missing.csv"), *column],
        "quantile": ["quantile", str(f["data"]), "--q", "1.5", "--column", "v", "--lower", "0", "--upper", "63",
                     "--epsilon", "1"],
        "quantiles": ["quantiles", str(f["data"]), "--q", "0.5", *column],
        "budget": ["budget", str(d / "missing.ledger")],
        "report": ["report", str(f["rel"]), "--out", str(d / "x.html"), "--ci", "2"],
        "stream": ["stream", "append", str(f["stream"]), "-1"],
    }


def commands() -> set[str]:
    return set(build_parser().commands.choices)


def test_the_cases_cover_every_command(files: dict[str, Path]) -> None:
    assert set(succeeding(files)) == set(failing(files)) == commands()


@pytest.mark.parametrize("command", sorted(commands()))
def test_every_error_is_one_prefixed_line_on_stderr(command: str, files: dict[str, Path], cli_run: Any) -> None:
    code, out, err = cli_run(failing(files)[command])
    assert code == 2 and out == "", (out, err)
    assert err.count("\n") == 1 and err.startswith("dptree: error: "), err
    assert "internal error" not in err


@pytest.mark.parametrize("command", sorted(commands()))
def test_usage_errors_use_the_same_prefix(command: str, cli_run: Any) -> None:
    code, out, err = cli_run([command, "--no-such-option"])
    assert code == 2 and out == ""
    assert err.startswith("usage: dptree ") and err.splitlines()[-1].startswith("dptree: error: "), err


@pytest.mark.parametrize("command", sorted(commands()))
def test_results_on_stdout_diagnostics_on_stderr(command: str, files: dict[str, Path], cli_run: Any) -> None:
    argv, written = succeeding(files)[command]
    code, out, err = cli_run(argv)
    assert code == 0, err
    assert "dptree: error" not in out + err and "wrote" not in out
    if written is None:
        assert out and err == "", (out, err)  # an answer, and nothing else
    else:
        assert err == f"wrote {written}\n" and Path(written).exists()
        if command in ("plot", "report"):
            assert out == ""  # the file is the result
        else:
            assert out.strip()  # the release's summary


def test_internal_errors_and_interrupts(files: dict[str, Path], cli_run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from dptree.cli import query

    monkeypatch.delenv("DPTREE_DEBUG", raising=False)

    def boom(release: Any, args: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setitem(query._ANSWERS, "range_tree", boom)
    code, out, err = cli_run(["query", str(files["rel"]), "--total"])
    assert code == 3 and out == ""
    assert err.startswith("dptree: error: internal error: RuntimeError: a bug") and err.count("\n") == 1

    def interrupted(release: Any, args: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setitem(query._ANSWERS, "range_tree", interrupted)
    assert cli_run(["query", str(files["rel"]), "--total"]) == (130, "", "dptree: error: interrupted\n")

    def reader_gone(release: Any, args: Any) -> Any:  # ``dptree query ... | head`` after head exits
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setitem(query._ANSWERS, "range_tree", reader_gone)
    assert cli_run(["query", str(files["rel"]), "--total"]) == (141, "", "")  # quiet, the shell's SIGPIPE status


#: a child ``python -m dptree`` that gets Ctrl-C (SIGINT to itself) while the command modules, and the
#: libraries they use, are being imported: the start-up of every command
_INTERRUPTED_START = """
import importlib.abc, os, runpy, signal, sys

class Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "dptree.cli.release":
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, Interrupt())
sys.argv = ["dptree", *sys.argv[1:]]
runpy.run_module("dptree", run_name="__main__", alter_sys=True)
"""


def test_ctrl_c_while_the_commands_load_is_one_line_and_status_130(files: dict[str, Path]) -> None:
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "DPTREE_DEBUG"}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC.parents[1]), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", _INTERRUPTED_START, "query", str(files["rel"]), "--total"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (130, "", "dptree: error: interrupted\n")


@pytest.mark.parametrize("command", ["query", "plot", "report"])
def test_releases_are_told_apart_by_their_kind(command: str, files: dict[str, Path], cli_run: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A release of a kind the command does not take is refused by name, whatever its class."""
    import dptree.io.release_file as release_file

    class Other:
        KIND = "other"

        def summary(self) -> str:
            return "other"

    monkeypatch.setattr(release_file, "load", lambda path: Other())
    argv = {"query": ["query", str(files["rel"])],
            "plot": ["plot", str(files["rel"]), "--out", str(files["dir"] / "o.png")],
            "report": ["report", str(files["rel"]), "--out", str(files["dir"] / "o.html")]}[command]
    code, _, err = cli_run(argv)
    assert code == 2
    kinds = {"query": "range-tree, range-tree with sums, factorised CDF, grouped range-tree, private-groups range-tree, sparse "
                      "range-tree, hierarchy, quantiles, grouped quantiles, private-groups quantiles, interior-point, "
                      "quantile, threshold, 2-D range-tree or 2-D PrivTree",
             "plot": "range-tree, range-tree with sums, factorised CDF, grouped range-tree, private-groups range-tree, sparse "
                     "range-tree, hierarchy, quantiles, grouped quantiles, private-groups quantiles, 2-D range-tree, "
                     "2-D PrivTree or stream counter",
             "report": "range-tree, range-tree with sums, factorised CDF, grouped range-tree, private-groups range-tree, sparse "
                       "range-tree, hierarchy, quantiles, grouped quantiles, private-groups quantiles, 2-D range-tree or "
                       "2-D PrivTree"}[
                 command]
    assert err == f"dptree: error: {command} needs a {kinds} release; this one is a other release\n"


def test_release_kinds() -> None:
    import dptree

    tree = dptree.range_tree([1, 2, 3], lower=0, upper=9, epsilon=1.0, rng=1)
    assert core.release_kind(tree) == "range_tree"
    assert core.release_kind(object()) is None


def test_one_parser_built_from_one_module_per_command() -> None:
    """main.py registers every command module explicitly; no module reaches into another's parser."""
    main_py = (SRC / "main.py").read_text()
    for module in ("release", "query", "plot", "hierarchy", "interior", "quantiles", "budget", "report"):
        assert f"{module}.register(sub)" in main_py
        assert (SRC / f"{module}.py").exists()
    for path in SRC.glob("*.py"):
        text = path.read_text()
        assert "_actions" not in text and "__import__" not in text, path.name
    flags = core.known_flags(build_parser())
    assert {"--ledger", "--user-id", "--node", "--on-invalid", "--total-epsilon", "--clip-negative"} <= flags


def test_one_seed_guard_for_every_releasing_command(files: dict[str, Path], cli_run: Any) -> None:
    messages = set()
    for command, (argv, _) in succeeding(files).items():
        if "--epsilon" not in argv or command == "budget":
            continue
        force = ["--force"] if "--out" in argv else []  # the files of earlier tests may be there already
        code, _, err = cli_run(argv + ["--seed", "1"] + force)
        assert code == 2, (command, err)
        messages.add(err)
    assert messages == {"dptree: error: --seed makes the release reproducible and NOT private; "
                        "add --allow-nonprivate to confirm\n"}


def test_bounds_are_parsed_once(files: dict[str, Path], cli_run: Any) -> None:
    assert core.parse_bound("5", "--lower") == 5 and core.parse_bound("2.5", "--lower") == 2.5
    assert core.parse_bound("2024-01-01", "--lower") == "2024-01-01"
    for text in ("nan", "inf", "1e400"):
        with pytest.raises(core.InvalidParameterError, match="--upper must be a finite number"):
            core.parse_bound(text, "--upper")
    with pytest.raises(core.InvalidParameterError, match="--lower must be a number"):
        core.parse_bound("2024-01-01", "--lower", dates=False)
    for command in ("release", "interior-point"):
        argv = [command, str(files["data"]), "--column", "v", "--lower", "0", "--upper", "nan", "--epsilon", "1"]
        code, _, err = cli_run(argv + (["--out", str(files["dir"] / "n.json")] if command == "release" else []))
        assert code == 2 and err == "dptree: error: --upper must be a finite number, got 'nan'\n"


def test_negative_values_are_values(files: dict[str, Path], cli_run: Any) -> None:
    code, out, err = cli_run(["query", str(files["rel"]), "--count", "-5:3", "--cdf", "-1"])
    assert code == 0 and "count[-5, 3]" in out, err
    code, out, err = cli_run(["query", str(files["rel"]), "--histogram", "-5,0,3"])
    assert code == 0 and "bin[-5" in out, err  # argparse alone: "expected one argument"
    code, _, err = cli_run(["release", str(files["data"]), "--column", "v", "--lower", "-inf", "--upper", "1",
                            "--epsilon", "1", "--out", str(files["dir"] / "neg.json")])
    assert code == 2 and "--lower must be a finite number" in err, err  # the bound's check, not argparse's


def test_hierarchy_reads_stdin(files: dict[str, Path], cli_run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``-`` is CSV on stdin for every command that reads data (the hierarchy's reader too)."""
    import dptree

    monkeypatch.setattr("sys.stdin", io.StringIO(files["rows"].read_text()))
    out = files["dir"] / "stdin.json"
    code, _, err = cli_run(["hierarchy", "-", "--levels", "country,state", "--structure", str(files["structure"]),
                            "--epsilon", "1", "--out", str(out)])
    assert code == 0, err
    rel = dptree.load(out)
    assert rel.metadata["source"] == "stdin" and rel.count("US") > 0
    monkeypatch.setattr("sys.stdin", io.StringIO("country\nUS\n"))
    code, _, err = cli_run(["hierarchy", "-", "--levels", "country,state", "--structure", str(files["structure"]),
                            "--epsilon", "1", "--out", str(files["dir"] / "stdin2.json")])
    assert code == 2 and re.match(r"dptree: error: the data has no column\(s\) \['state'\]", err), err
