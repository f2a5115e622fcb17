"""Error messages are not a counting oracle (hierarchy part).

Every refusal that depends on the private rows is raised here on data with distinctive counts
(7 bad rows among 1,000,003 - 7 good ones would be too slow; 7 bad among 31 good) and a
distinctive value (123456789, the label "Springfield-rare"); no message may contain the count,
the value or the label. The old code said e.g. "7 record(s) name a path that is not a leaf of
the hierarchy (e.g. ['US/Springfield-rare'])" and "weight column 'n' has 7 negative values".
Where a declared policy can replace the refusal (unknown paths: drop / other) the message says so.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest

from dptree.errors import DPTreeError
from dptree.hierarchy.api import hierarchy_counts
from dptree.hierarchy.counting import leaf_counts
from dptree.hierarchy.structure import Hierarchy

BAD = 7  # distinctive number of bad rows
GOOD = 31
VALUE = 123456789
LABEL = "Springfield-rare"
LEVELS = ["country", "city"]
H = Hierarchy.from_paths(["US/Boston", "US/Austin", "FR/Paris"], levels=LEVELS, other="(other)")
H_PLAIN = Hierarchy.from_paths(["US/Boston", "US/Austin", "FR/Paris"], levels=LEVELS)


def leaks(msg: str) -> list[str]:
    """The distinctive numbers and values found in ``msg``."""
    found = []
    for n in (BAD, GOOD, BAD + GOOD, VALUE, BAD * VALUE):
        if re.search(rf"(?<![\d.^]){n}(?![\d])", msg):
            found.append(str(n))
    for s in (LABEL, "rare", str(VALUE)[:6], "1234567"):
        if s in msg:
            found.append(s)
    return found


def good_rows() -> pd.DataFrame:
    return pd.DataFrame({"country": ["US"] * GOOD, "city": ["Boston"] * GOOD, "n": [3] * GOOD})


def with_bad(country: Any, city: Any, n: Any = 1) -> pd.DataFrame:
    bad = pd.DataFrame({"country": [country] * BAD, "city": [city] * BAD, "n": [n] * BAD})
    return pd.concat([good_rows(), bad], ignore_index=True)


CASES: list[tuple[str, Callable[[], Any]]] = [
    ("unknown city", lambda: hierarchy_counts(with_bad("US", LABEL), H_PLAIN, epsilon=1.0, rng=1)),
    ("unknown country, weighted", lambda: leaf_counts(with_bad(LABEL, None, VALUE), H_PLAIN, weight="n")),
    ("path ends at an internal node", lambda: leaf_counts(with_bad("US", None), H_PLAIN)),
    ("gap in the path", lambda: leaf_counts(with_bad(None, LABEL), H_PLAIN)),
    ("path deeper than the hierarchy", lambda: leaf_counts(["US/Boston"] * GOOD + [f"US/Boston/{LABEL}"] * BAD, H)),
    ("dict deeper than the hierarchy", lambda: leaf_counts({f"US/Boston/{LABEL}": VALUE, "US/Boston": BAD}, H)),
    ("negative weights", lambda: leaf_counts(with_bad("US", "Boston", -VALUE), H, weight="n")),
    ("non-integer weights", lambda: leaf_counts(with_bad("US", "Boston", VALUE + 0.5), H, weight="n")),
    ("missing weights", lambda: leaf_counts(with_bad("US", "Boston", np.nan), H, weight="n")),
    ("infinite weights", lambda: leaf_counts(with_bad("US", "Boston", np.inf), H, weight="n")),
    ("text weights", lambda: leaf_counts(with_bad("US", "Boston", f"x{VALUE}"), H, weight="n")),
    ("total too large", lambda: leaf_counts(with_bad("US", "Boston", 2**60 + VALUE), H, weight="n")),
]


@pytest.mark.parametrize("name,call", CASES, ids=[c[0] for c in CASES])
def test_api_messages_hold_no_count_or_value(name: str, call: Callable[[], Any]) -> None:
    with pytest.raises(DPTreeError) as info:
        call()
    msg = str(info.value)
    assert not leaks(msg), (name, msg)


def test_unknown_path_message_offers_the_declared_policies() -> None:
    with pytest.raises(DPTreeError) as info:
        leaf_counts(with_bad("US", LABEL), H_PLAIN)
    msg = str(info.value)
    assert "unknown='drop'" in msg and "unknown='other'" in msg and "--unknown" in msg


def test_declared_policies_replace_the_refusal() -> None:
    """unknown='drop' leaves the records out, unknown='other' counts them in the 'other' leaf of
    their deepest known ancestor, for every kind of unknown path; neither raises."""
    for data in (with_bad("US", LABEL), with_bad("US", None), with_bad(None, LABEL), with_bad(LABEL, "x")):
        dropped = np.concatenate(leaf_counts(data, H, weight="n", unknown="drop"))
        assert int(dropped.sum()) == 3 * GOOD
        other = leaf_counts(data, H, weight="n", unknown="other")
        assert int(np.concatenate(other).sum()) == 3 * GOOD + BAD
    deep = ["US/Boston"] * GOOD + [f"US/Boston/{LABEL}"] * BAD
    assert int(np.concatenate(leaf_counts(deep, H, unknown="drop")).sum()) == GOOD
    x = leaf_counts(deep, H, unknown="other")
    assert int(x[2][H.node_id("US/(other)") - int(H.offsets[2])]) == BAD  # past the leaf Boston: US's other
    rel = hierarchy_counts(with_bad("US", LABEL), H_PLAIN, epsilon=1.0, unknown="drop", rng=1)
    assert rel.parameters["unknown"] == "drop"


# ------------------------------------------------------------------------ the CLI


@pytest.fixture
def hierarchy_cli(cli_run: Any) -> Callable[[list[str]], tuple[int, str]]:
    """``dptree hierarchy ARGV``: (exit status, everything printed)."""

    def hierarchy(argv: list[str]) -> tuple[int, str]:
        code, out, err = cli_run(["hierarchy", *argv])
        return code, out + err

    return hierarchy


@pytest.fixture
def struct(tmp_path: Path) -> Path:
    pd.DataFrame({"country": ["US", "US", "FR"], "city": ["Boston", "Austin", "Paris"]}).to_csv(
        tmp_path / "struct.csv", index=False
    )
    return tmp_path / "struct.csv"


CLI_DATA = {
    "unknown city": (with_bad("US", LABEL), False),
    "negative weights": (with_bad("US", "Boston", -VALUE), True),
    "non-integer weights": (with_bad("US", "Boston", f"{VALUE}.5"), True),
    "missing weights": (with_bad("US", "Boston", None), True),
    "text weights": (with_bad("US", "Boston", f"x{VALUE}"), True),
    "total too large": (with_bad("US", "Boston", 2**60 + VALUE), True),
}


@pytest.mark.parametrize("name", list(CLI_DATA))
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_cli_messages_hold_no_count_or_value(
    name: str, fmt: str, tmp_path: Path, struct: Path, hierarchy_cli: Any
) -> None:
    frame, weighted = CLI_DATA[name]
    data = tmp_path / f"rows.{fmt}"
    if fmt == "csv":
        frame.to_csv(data, index=False)
    else:
        if frame["n"].dtype == object:
            frame = frame.assign(n=frame["n"].astype(str))
        frame.to_parquet(data)
    argv = [str(data), "--levels", "country,city", "--structure", str(struct), "--epsilon", "1",
            "--out", str(tmp_path / "rel.json")]
    code, text = hierarchy_cli(argv + (["--weight", "n"] if weighted else []))
    assert code == 2, text
    assert not leaks(text), (name, text)
    assert not (tmp_path / "rel.json").exists()


def test_cli_unknown_policy_flag(tmp_path: Path, struct: Path, hierarchy_cli: Any) -> None:
    with_bad("US", LABEL).to_csv(tmp_path / "rows.csv", index=False)
    base = [str(tmp_path / "rows.csv"), "--levels", "country,city", "--structure", str(struct), "--epsilon", "1",
            "--seed", "3", "--allow-nonprivate"]
    code, text = hierarchy_cli(base + ["--out", str(tmp_path / "a.json")])
    assert code == 2 and "--unknown drop" in text
    code, text = hierarchy_cli(base + ["--unknown", "drop", "--out", str(tmp_path / "b.json")])
    assert code == 0, text
    code, text = hierarchy_cli(base + ["--unknown", "other", "--out", str(tmp_path / "c.json")])
    assert code == 2 and "--other" in text  # needs a structure with 'other' leaves
    code, text = hierarchy_cli(base + ["--other", "(other)", "--unknown", "other", "--out", str(tmp_path / "d.json")])
    assert code == 0, text


def test_cli_unreadable_file_message_quotes_no_data(
    tmp_path: Path, struct: Path, hierarchy_cli: Any
) -> None:
    """DuckDB's own message for a malformed CSV quotes the offending line (a data value)."""
    lines = ["country,city,n"] + ["US,Boston,1"] * GOOD + [f'US,"Boston,{VALUE},{LABEL}'] * BAD
    (tmp_path / "bad.csv").write_text("\n".join(lines) + "\n")
    argv = [str(tmp_path / "bad.csv"), "--levels", "country,city", "--structure", str(struct), "--epsilon", "1",
            "--weight", "n", "--out", str(tmp_path / "rel.json")]
    code, text = hierarchy_cli(argv)
    assert code == 2, text
    assert not leaks(text), text


def test_spark_message_holds_no_count() -> None:
    from _spark import spark_frame

    sdf = spark_frame(
        {"country": ["US"] * (GOOD + BAD), "city": ["Boston"] * (GOOD + BAD),
         "n": np.array([1] * GOOD + [-VALUE] * BAD, dtype=np.int64)}
    )
    with pytest.raises(DPTreeError) as info:
        leaf_counts(sdf, H, weight="n")
    assert "negative" in str(info.value) and not leaks(str(info.value)), str(info.value)
