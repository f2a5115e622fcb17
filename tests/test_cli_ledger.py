"""--ledger on every releasing command: the charge is committed before the output exists, and a
release that does not fit the remaining budget is refused without output."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dptree import Ledger
from dptree.cli import main


def spent(path: Path) -> float:
    with Ledger(path) as led:
        return float(sum(float(c["epsilon"] or 0) for c in led.history()))


def test_every_releasing_command_charges_the_ledger(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    led = tmp_path / "budget.sqlite"
    with Ledger(led, total_epsilon=2.0):
        pass
    data = tmp_path / "d.csv"
    data.write_text("v,country,state\n" + "".join(f"{i % 50},US,{'CA' if i % 2 else 'NY'}\n" for i in range(200)))
    struct = tmp_path / "s.csv"
    struct.write_text("country,state\nUS,CA\nUS,NY\nFR,IDF\n")
    common = ["--seed", "1", "--allow-nonprivate", "--ledger", str(led)]
    assert main(["release", str(data), "--column", "v", "--lower", "0", "--upper", "63", "--epsilon", "0.5",
                 "--out", str(tmp_path / "r.json")] + common) == 0
    assert main(["hierarchy", str(data), "--levels", "country,state", "--structure", str(struct), "--epsilon", "0.5",
                 "--out", str(tmp_path / "h.json")] + common) == 0
    assert main(["interior-point", str(data), "--column", "v", "--lower", "0", "--upper", "63", "--epsilon", "0.5",
                 "--method", "exponential", "--seed", "2", "--ledger", str(led)]) == 0
    assert np.isclose(spent(led), 1.5)
    # 0.5 + 0.5 + 0.5 spent of 2.0: a release of 1.0 does not fit and leaves no file behind
    out = tmp_path / "h2.json"
    code = main(["hierarchy", str(data), "--levels", "country,state", "--structure", str(struct), "--epsilon", "1.0",
                 "--out", str(out)] + common)
    err = capsys.readouterr().err
    assert code == 2 and "budget" in err.lower()
    assert not out.exists()
    assert np.isclose(spent(led), 1.5)
