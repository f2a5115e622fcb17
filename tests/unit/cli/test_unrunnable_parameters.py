"""Parameters no mechanism can run are refused before any budget is spent.

Every numeric option of every releasing command (read from the parser: the options typed int or
float, and the numbers and dates given as text: bounds, widths, origins, levels) is set, one at a
time, to extreme values on a tiny input with a real ledger. Each run either releases (and is
charged) or fails with a typed error (exit status 2, one line) and leaves the ledger's spend
unchanged: never an internal error (a raw ZeroDivisionError, OverflowError or ValueError), never a
charge for a release that could never run (``--bounds-share 1e-300`` spent the whole epsilon and
crashed in the sampler).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from dptree.cli.main import build_parser, main
from dptree.privacy.ledger import Ledger

EXTREMES = ["1e-300", "1e-20", "1e300", "inf", "nan", "0", "-1", str(2**70)]
#: options whose values are numbers (or dates) given as text, so not typed by argparse
TEXT_NUMBERS = {"--lower", "--upper", "--width", "--bounds-origin", "--q", "--max-contributions"}
#: public flags that are not parameters of a mechanism
NOT_PARAMETERS = {"--seed"}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("sweep")
    values = [1, 2, 3, 5, 8, 13, 21, 34, 55, 89] * 2
    (d / "x.csv").write_text("x\n" + "\n".join(map(str, values)) + "\n")
    pd.DataFrame({"country": ["US", "US", "US", "FR"], "state": ["CA", "CA", "NY", None],
                  "city": ["SF", "LA", None, None]}).to_csv(d / "struct.csv", index=False)
    pd.DataFrame({"country": ["US"] * 6 + ["FR"], "state": ["CA"] * 4 + ["NY"] * 2 + [None],
                  "city": ["SF"] * 2 + ["LA"] * 2 + [None] * 3}).to_csv(d / "rows.csv", index=False)
    return {"dir": str(d), "x": str(d / "x.csv"), "rows": str(d / "rows.csv"), "struct": str(d / "struct.csv")}


def _bases(f: dict[str, str]) -> dict[str, list[str]]:
    """One valid invocation per mechanism family (the options swept are added to it)."""
    x, bounds = [f["x"], "--column", "x"], ["--lower", "0", "--upper", "100"]
    tree = ["hierarchy", f["rows"], "--levels", "country,state,city", "--structure", f["struct"], "--epsilon", "1"]
    return {
        "release": ["release", *x, *bounds, "--epsilon", "1"],
        "release --noise gaussian": ["release", *x, *bounds, "--noise", "gaussian", "--epsilon", "1", "--delta", "1e-6"],
        "release --bounds private": ["release", *x, "--bounds", "private", "--epsilon", "1"],
        "release --sparse": ["release", *x, "--sparse", *bounds, "--epsilon", "1"],
        "release --max-contributions private": ["release", *x, *bounds, "--epsilon", "1", "--user-id", "x",
                                                "--max-contributions", "private"],
        "hierarchy": tree,
        "hierarchy --method multiplicative": [*tree, "--delta", "1e-6", "--method", "multiplicative", "--alpha", "0.5"],
        "interior-point": ["interior-point", *x, *bounds, "--epsilon", "1"],
        "median": ["median", *x, *bounds, "--epsilon", "1"],
        "quantile": ["quantile", *x, *bounds, "--epsilon", "1", "--q", "0.5"],
        "quantiles --method approx": ["quantiles", *x, *bounds, "--epsilon", "1", "--q", "0.1,0.5", "--method", "approx"],
        "quantiles --method tree": ["quantiles", *x, *bounds, "--epsilon", "1", "--q", "0.5", "--method", "tree"],
        "quantiles --max-contributions private": ["quantiles", *x, *bounds, "--epsilon", "1", "--q", "0.5",
                                                  "--user-id", "x", "--max-contributions", "private"],
    }


def numeric_options(command: str) -> list[str]:
    """Every numeric option of ``command``, from the parser."""
    sub = build_parser().commands.choices[command]
    return sorted({a.option_strings[-1] for a in sub._actions if a.option_strings
                   and (a.type in (int, float) or a.option_strings[-1] in TEXT_NUMBERS)} - NOT_PARAMETERS)


def _with(argv: list[str], option: str, value: str) -> list[str]:
    out = list(argv)
    if option in out:
        i = out.index(option)
        del out[i:i + 2]
    return [*out, f"{option}={value}"]


def test_every_command_sweeps_its_numeric_options() -> None:
    """The sweep covers every releasing command and the budget, sensitivity and domain options."""
    swept = {base.split()[0] for base in _bases({"x": "", "rows": "", "struct": "", "dir": ""})}
    assert swept == {"release", "hierarchy", "interior-point", "median", "quantile", "quantiles"}
    assert {"--bounds-share", "--epsilon", "--delta", "--rho", "--max-contributions", "--branching", "--width",
            "--bounds-origin", "--contributions-share", "--contributions-cap"} <= set(numeric_options("release"))
    assert {"--alpha", "--tau-min"} <= set(numeric_options("hierarchy"))
    assert {"--level", "--n", "--n-max", "--n-min", "--q"} <= set(numeric_options("quantiles"))


@pytest.mark.parametrize("family", list(_bases({"x": "", "rows": "", "struct": "", "dir": ""})))
def test_extreme_parameters_fail_typed_before_the_charge(inputs: dict[str, str], family: str) -> None:
    base = _bases(inputs)[family]
    ledger = Path(inputs["dir"]) / f"{family.replace(' ', '_')}.ledger"
    rho = "--rho" in base
    with (Ledger(ledger, total_rho=1e9) if rho else Ledger(ledger, total_epsilon=1e9, total_delta=0.5)):
        pass
    out = str(Path(inputs["dir"]) / "out.json")
    failures = []
    for option in numeric_options(base[0]):
        for value in EXTREMES:
            argv = _with(base, option, value) + ["--seed", "1", "--allow-nonprivate", "--ledger", str(ledger),
                                                 "--out", out, "--force"]
            with Ledger(ledger, read_only=True) as led:
                before = led.spent().charges
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                try:
                    code: Any = main(argv)
                except SystemExit as exc:  # argparse's usage errors (not a number): before anything
                    code = exc.code
            with Ledger(ledger, read_only=True) as led:
                charged = led.spent().charges - before
            text = err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else ""
            if code == 0:
                continue
            if code != 2 or charged or "internal error" in text or "stays spent" in text:
                failures.append(f"{option}={value}: exit {code}, charged {charged}: {text[:200]}")
    assert not failures, "\n".join(failures)
