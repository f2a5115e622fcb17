"""Regression tests for privacy leaks in the range-tree and data paths.

Each test fails on code with the leak:

* leak 1 -- ``neighbors="replace"`` published the exact root after user bounding or
  ``on_invalid="drop"``, whose total is not public (epsilon = infinity);
* leak 2 -- error messages about the data carried counts, sizes and values;
* leak 5 -- any object claiming ``private = True`` made a "private" release.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dptree
from dptree.data.histograms import leaf_histogram
from dptree.errors import DPTreeError, InvalidParameterError, redact
from dptree.noise import SeededRandomSource, SystemRandomSource, make_source
from dptree.rangetree.groupby import release_groups
from dptree.rangetree.release import plan_range_tree

# --------------------------------------------------------------------------- leak 1


def _replace_plan() -> Any:
    return plan_range_tree(lower=0, upper=7, epsilon=1.0, neighbors="replace", max_contributions=2)


def test_replace_with_user_bounding_is_refused_numpy() -> None:
    # The attack: two datasets with the same raw n (3 records) that differ in one
    # record's user id. With k = 2, bounding keeps 2 resp. 3 records, and publishing
    # that total exactly as "the public n".
    values = [1, 1, 1]
    for users in ([7, 7, 7], [7, 7, 8]):
        with pytest.raises(InvalidParameterError, match="neighbors='replace'"):
            dptree.range_tree(values, lower=0, upper=7, epsilon=1.0, neighbors="replace",
                              max_contributions=2, user_id=users, rng=1)


def test_replace_with_missing_drop_is_refused() -> None:
    with pytest.raises(InvalidParameterError, match="on_invalid='drop'"):
        dptree.range_tree([1.0, np.nan, 2.0], lower=0, upper=7, epsilon=1.0, neighbors="replace",
                          on_invalid="drop", rng=1)


def test_replace_refused_in_every_engine_and_entry_point(tmp_path: Path) -> None:
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"v": [1, 1, 1], "u": [7, 7, 8]}), path)
    plan = _replace_plan()
    calls: list[Callable[[], Any]] = [
        lambda: dptree.range_tree(str(path), column="v", user_id="u", lower=0, upper=7, epsilon=1.0,
                                  neighbors="replace", max_contributions=2),
        lambda: leaf_histogram(str(path), plan, column="v", user_id="u"),
        lambda: leaf_histogram(str(path), plan, column="v", on_invalid="drop"),
        lambda: leaf_histogram([1, 2], plan, by=["a", "b"], groups=["a", "b"]),
        lambda: leaf_histogram([1, 1, 1], plan, user_id=[7, 7, 8]),
        lambda: leaf_histogram(str(path), plan, column="v", user_id="u"),
        lambda: leaf_histogram([1, 2], plan, by=["a", "b"], groups=["a", "b"]),
        lambda: release_groups(plan, np.zeros((2, plan.layout.padded_size), np.int64), ["a", "b"]),
    ]
    for call in calls:
        with pytest.raises(InvalidParameterError, match="neighbors='replace'"):
            call()


def test_replace_without_bounding_still_publishes_the_public_n() -> None:
    rel = dptree.range_tree([1, 2, 3, 3], lower=0, upper=7, epsilon=1.0, neighbors="replace", rng=1)
    assert rel.total() == pytest.approx(4.0)


# --------------------------------------------------------------------------- leak 5


class _ClaimsPrivate:
    """A seeded source that says it is private."""

    private = True

    def __init__(self) -> None:
        self._gen = np.random.default_rng(5)

    def random_bytes(self, n: int) -> bytes:
        return self._gen.bytes(n)


def test_only_the_system_source_is_private(tmp_path: Path) -> None:
    assert make_source(None).private is True
    assert make_source(_ClaimsPrivate()).private is False
    rel = dptree.range_tree([1, 2, 3], lower=0, upper=7, epsilon=1.0, rng=_ClaimsPrivate())
    assert rel.private is False
    with pytest.raises(DPTreeError):
        rel.save(tmp_path / "r.json")
    seeded = SeededRandomSource(3)
    with pytest.raises(AttributeError):
        seeded.private = True  # type: ignore[misc]
    assert dptree.range_tree([1, 2], lower=0, upper=7, epsilon=1.0, rng=seeded).private is False

    class Sub(SystemRandomSource):
        def random_bytes(self, n: int) -> bytes:
            return bytes(n)

    assert Sub().private is False


# --------------------------------------------------------------------------- leak 2

# Distinctive numbers: a bad-row count, a total size and data values that appear nowhere else.
N_BAD = 37
N_ROWS = 4111
VALUES = ("918273.6455", "77123.5", "5551234")


def _forbidden(message: str) -> list[str]:
    tokens = re.findall(r"\d+(?:\.\d+)?", message)
    hits = [t for t in tokens if t in (str(N_BAD), str(N_ROWS), str(N_ROWS - N_BAD), str(N_ROWS + 1))]
    hits += [v for v in VALUES if v in message]
    return hits


def _chain(exc: BaseException) -> str:
    parts = []
    e: BaseException | None = exc
    while e is not None:
        parts.append(str(e))
        e = e.__cause__ or (None if e.__suppress_context__ else e.__context__)
    return " | ".join(parts)


def _bad_inputs(tmp: Path) -> dict[str, Callable[[], Any]]:
    rng = np.random.default_rng(0)
    base = rng.integers(0, 100, N_ROWS).astype(float)
    base[0] = float(VALUES[0])
    nan = base.copy()
    nan[1 : 1 + N_BAD] = np.nan
    inf = base.copy()
    inf[1 : 1 + N_BAD] = np.inf
    users = np.arange(N_ROWS).astype(float)
    users[1 : 1 + N_BAD] = np.nan
    groups = np.array(["a"] * N_ROWS, dtype=object)
    groups[1 : 1 + N_BAD] = "zz-rare"
    strings = base.astype(object)
    strings[5] = VALUES[1] + "x"
    kw: dict[str, Any] = dict(lower=0, upper=99, epsilon=1.0, rng=1)
    df = pd.DataFrame({"v": nan, "u": users, "g": groups})
    csv = tmp / "bad.csv"
    lines = ["v,u"] + [f"{v},{i}" for i, v in enumerate(base)]
    lines[7] = f"{VALUES[2]}abc,7"
    csv.write_text("\n".join(lines) + "\n")
    pq_nan = tmp / "nan.parquet"
    df.to_parquet(pq_nan)
    big = tmp / "big.csv"
    big.write_text("v\n" + "1\n" * (N_ROWS - 1) + "1" + "9" * 40 + "\n")
    return {
        "numpy nan": lambda: dptree.range_tree(nan, **kw),
        "numpy inf": lambda: dptree.range_tree(inf, **kw),
        "numpy strings": lambda: dptree.range_tree(strings, **kw),
        "numpy 2-d": lambda: dptree.range_tree(np.zeros((N_ROWS, 2)), **kw),
        "pandas nan": lambda: dptree.range_tree(df, column="v", **kw),
        "user ids nan": lambda: dptree.range_tree(base, user_id=users, **kw),
        "user ids length": lambda: dptree.range_tree(base, user_id=users[:-1], **kw),
        "groups unknown": lambda: dptree.range_tree_by(base, by=groups, groups=["a"], **kw),
        "groups length": lambda: dptree.range_tree_by(base, by=groups[:-1], groups=["a"], **kw),
        "csv non-numeric": lambda: dptree.range_tree(str(csv), column="v", **kw),
        "parquet nan": lambda: dptree.range_tree(str(pq_nan), column="v", **kw),
        "parquet user nan": lambda: dptree.range_tree(str(pq_nan), column="v", user_id="u", on_invalid="drop", **kw),
        "parquet groups": lambda: dptree.range_tree_by(str(pq_nan), column="v", by="g", groups=["a"],
                                                      on_invalid="drop", **kw),
        "csv huge value": lambda: dptree.range_tree(str(big), column="v", **kw),
    }


def test_no_count_size_or_value_in_data_error_messages(tmp_path: Path) -> None:
    raised = 0
    for name, call in _bad_inputs(tmp_path).items():
        try:
            call()
        except DPTreeError as exc:
            raised += 1
            text = _chain(exc)
            assert not _forbidden(text), f"{name}: message leaks {_forbidden(text)}: {text}"
        except Exception as exc:  # pragma: no cover - a raw error is a failure of its own
            pytest.fail(f"{name}: raw {type(exc).__name__}: {exc}")
    assert raised >= 12  # the suite really exercises refusals


def test_redact_removes_values_and_line_numbers() -> None:
    text = (
        "Conversion Error: CSV Error on Line: 4111\nOriginal Line: 918273.6455,abc\n"
        "Could not convert string '5551234abc' to 'DOUBLE'"
    )
    out = redact(text)
    assert not _forbidden(out) and "abc" not in out
    assert "Could not convert" in out or "Conversion Error" in out


def test_cli_replace_with_bounding_or_drop_is_refused_before_any_charge(tmp_path: Path, cli_run: Any) -> None:
    from dptree.privacy.ledger import Ledger

    data = tmp_path / "d.csv"
    data.write_text("v,u\n1,7\n1,7\n1,8\n")
    ledger = tmp_path / "b.sqlite"
    assert cli_run(["budget", str(ledger), "--create", "--total-epsilon", "5"]).code == 0
    base = ["release", str(data), "--column", "v", "--lower", "0", "--upper", "7", "--epsilon", "1",
            "--neighbors", "replace", "--max-contributions", "2", "--out", str(tmp_path / "o.json")]
    for extra in (["--user-id", "u"], ["--on-invalid", "drop"], ["--user-id", "u", "--ledger", str(ledger)],
                  ["--on-invalid", "drop", "--ledger", str(ledger)]):
        code, _, err = cli_run(base + extra)
        assert code == 2
        assert "--neighbors replace" in err and "--neighbors add_remove" in err
    assert not (tmp_path / "o.json").exists()
    assert Ledger(str(ledger)).spent().epsilon == 0


def test_audit_catches_the_exact_total_after_bounding_as_a_planted_bug() -> None:
    """Leak 1 planted: the old behaviour (replace plan, exact root, but the histogram bounded per
    user) on two datasets with the same raw n that differ in one record's user id."""
    from audit_registry.user_bounding import user_bounded_spec

    from dptree.testing import audit

    replace = plan_range_tree(lower=0, upper=5, epsilon=1.0, branching=3, neighbors="replace", max_contributions=2)
    twin = plan_range_tree(lower=0, upper=5, epsilon=1.0, branching=3, max_contributions=2)  # bounds, no check

    def old_release(data: Any, seed: int) -> Any:
        values, users = data
        src = make_source(seed)
        return replace.release(leaf_histogram(values, twin, user_id=users, rng=src), src)

    spec = user_bounded_spec(
        "bug/replace_exact_total_after_bounding", plan=replace, epsilon=1.0, release=old_release,
        pairs=[("one record changes its user id", ([1, 1, 1], [7, 7, 7]), ([1, 1, 1], [7, 7, 8]))],
    )
    d0, d1 = ([1, 1, 1], [7, 7, 7]), ([1, 1, 1], [7, 7, 8])
    root = audit.NeighborPair("one record changes its user id; event on the root", d0, d1,
                               statistic=lambda out: np.asarray(out)[:, 0].astype(float))
    spec = dataclasses.replace(spec, worst_cases=lambda: iter([root]))
    report = audit.audit(spec, config=audit.AuditConfig(n_select=300, n_eval=600), seed=3)
    assert not report.passed, report.summary()
    assert report.epsilon_lower_bound > 3, report.summary()
    # the library itself refuses the combination
    with pytest.raises(InvalidParameterError):
        leaf_histogram([1, 1, 1], replace, user_id=[7, 7, 8])
