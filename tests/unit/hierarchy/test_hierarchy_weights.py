"""Hierarchy weights are summed exactly, in every engine.

Summing weights through float64 (``np.bincount(weights=...)`` in ``leaf_counts`` and
``node_weights``, ``SUM(TRY_CAST(w AS DOUBLE))`` in the CLI's DuckDB reader), counts a total of
2^53 + 1 as 2^53, and int64 group sums wrap past 2^63. Each test here fails on
such code. Totals the noise arithmetic cannot hold (>= ``MAX_TOTAL`` = 2^61) are refused with a
``TotalTooLargeError`` whose message never contains the total.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import audit_registry  # noqa: F401  (registers every mechanism)
import numpy as np
import pandas as pd
import pytest

import dptree.hierarchy.counting as hmod
from dptree.data.engines.base import COUNT
from dptree.data.histograms import path_counts
from dptree.errors import DataError
from dptree.hierarchy.api import hierarchy_counts
from dptree.hierarchy.counting import leaf_counts, node_weights
from dptree.hierarchy.structure import Hierarchy
from dptree.testing import audit

P52 = 2**52
H = Hierarchy.from_paths(["a/x", "a/y", "b/z"], levels=["l1", "l2"])


def frame(ws: list, paths: list[str] | None = None) -> pd.DataFrame:
    paths = paths or ["a/x"] * len(ws)
    return pd.DataFrame({"l1": [p.split("/")[0] for p in paths], "l2": [p.split("/")[1] for p in paths], "w": ws})


def totals(data: object, **kw: object) -> list[int]:
    return [int(v) for v in np.concatenate(node_weights(leaf_counts(data, H, **kw), H.parents))]  # type: ignore[arg-type]


def test_weights_straddling_2_53_are_summed_exactly() -> None:
    w = totals(frame([P52, P52, 1]), weight="w")
    ids = [H.node_id(""), H.node_id("a"), H.node_id("a/x")]
    assert [w[i] for i in ids] == [2**53 + 1] * 3
    # spread over two leaves: the parent's sum (node_weights) must be exact too
    w2 = totals(frame([2**53 - 1, 2], ["a/x", "a/y"]), weight="w")
    assert w2[H.node_id("a")] == 2**53 + 1 and w2[H.node_id("")] == 2**53 + 1


def test_neighbors_at_2_53_differ_by_one_on_the_path() -> None:
    w0 = np.array(totals(frame([P52, P52, 1]), weight="w"), dtype=object)
    w1 = np.array(totals(frame([P52, P52, 1, 1]), weight="w"), dtype=object)
    diff = w1 - w0
    assert sorted(diff.tolist()) == [0] * (H.n_nodes - H.depth) + [1] * H.depth


def test_exact_in_the_dict_and_object_forms() -> None:
    assert totals({"a/x": 2**53 + 1, "b/z": 2**53 + 3})[0] == 2**54 + 4
    big = frame([Decimal(P52), P52, np.int64(1)])
    assert big["w"].dtype == object
    assert totals(big, weight="w")[0] == 2**53 + 1


def test_release_is_centred_on_the_exact_total() -> None:
    rel = hierarchy_counts(frame([P52, P52, 1]), H, epsilon=100.0, weight="w", rng=1, consistent=False)
    y = rel.measurements["y"]
    assert int(y[H.node_id("a/x")]) == 2**53 + 1  # epsilon 100: the noise is 0 here (P >= 1 - 1e-20)
    assert int(y[0]) == 2**53 + 1


def test_int64_wrap_is_refused_not_summed() -> None:
    """1100 weights of 2^53 - 1 add up past 2^63: the old code wrapped them (negative or garbage
    counts); now the total is refused, and the message holds neither the total nor a weight."""
    ws = [2**53 - 1] * 1100
    total = sum(ws)
    with pytest.raises(hmod.TotalTooLargeError) as info:
        leaf_counts(frame(ws), H, weight="w")
    msg = str(info.value)
    assert str(total) not in msg and str(2**53 - 1) not in msg and "1100" not in msg
    assert "2^61" in msg


@pytest.mark.parametrize(
    "ws",
    [[2**61], [2**60, 2**60], [np.uint64(2**63 + 5)], [2**70], [Decimal(2**64)]],
    ids=["one-at-limit", "sum-at-limit", "uint64", "python-int", "decimal"],
)
def test_totals_at_the_limit_are_refused(ws: list) -> None:
    with pytest.raises(hmod.TotalTooLargeError):
        leaf_counts(frame(ws), H, weight="w")
    assert issubclass(hmod.TotalTooLargeError, DataError)


def test_just_below_the_limit_is_exact() -> None:
    ws = [2**60, 2**60 - 1]
    assert totals(frame(ws), weight="w")[0] == 2**61 - 1
    rel = hierarchy_counts(frame(ws), H, epsilon=1.0, weight="w", rng=2, consistent=False)
    assert abs(int(rel.measurements["y"][0]) - (2**61 - 1)) < 1000


@pytest.mark.parametrize(
    "ws,problem",
    [
        ([1.5, 2.0], "non-integer"),
        ([float("inf"), 1.0], "non-finite"),
        ([float("nan"), 1.0], "missing"),
        ([-1, 2], "negative"),
        ([2.0**60, 1.0], r"above 2\^53"),
        ([True, False], "true/false"),
        (["3", "4"], "not numbers"),
        ([Decimal("1.5"), 1], "non-integer"),
        ([None, 1], "missing"),
    ],
)
def test_bad_weights_are_refused(ws: list, problem: str) -> None:
    with pytest.raises(DataError, match=problem):
        leaf_counts(frame(ws), H, weight="w")


# ------------------------------------------------------------------------ the DuckDB engine's path counts


def test_duckdb_reader_sums_exactly(tmp_path: Path) -> None:
    df = frame([P52, P52, 1, 7], ["a/x", "a/x", "a/x", "b/z"])
    df.to_csv(tmp_path / "w.csv", index=False)
    df.to_parquet(tmp_path / "w.parquet")
    df.assign(w=df["w"].astype("float64")).to_parquet(tmp_path / "f.parquet")  # floats up to 2^53 are exact
    df.assign(w=df["w"].astype(str) + ".0").to_csv(tmp_path / "t.csv", index=False)
    for name in ("w.csv", "w.parquet", "f.parquet", "t.csv"):
        g, col = path_counts(str(tmp_path / name), ["l1", "l2"], weight="w"), COUNT
        got = dict(zip(g["l1"] + "/" + g["l2"], (int(v) for v in g[col])))
        assert got == {"a/x": 2**53 + 1, "b/z": 7}, name
        x = leaf_counts(g, H, levels=["l1", "l2"], weight=col)
        assert int(np.concatenate(node_weights(x, H.parents))[0]) == 2**53 + 8


@pytest.mark.parametrize(
    "values,exc_name,problem",
    [
        (["2.5", "1"], "DataError", "not non-negative integers"),  # TRY_CAST('2.5' AS HUGEINT) would give 3
        (["-4", "1"], "DataError", "negative"),
        (["", "1"], "DataError", "missing"),
        (["1e3", "1"], "DataError", "not non-negative integers"),
        ([str(2**53 - 1)] * 1100, "TotalTooLargeError", r"2\^61"),
        ([str(2**61), "0"], "TotalTooLargeError", r"2\^61"),
        (["9" * 45, "0"], "TotalTooLargeError", r"2\^61"),
    ],
)
def test_duckdb_reader_refuses(tmp_path: Path, values: list[str], exc_name: str, problem: str) -> None:
    exc = DataError if exc_name == "DataError" else hmod.TotalTooLargeError

    pd.DataFrame({"l1": ["a"] * len(values), "l2": ["x"] * len(values), "w": values}).to_csv(
        tmp_path / "bad.csv", index=False
    )
    with pytest.raises(exc, match=problem) as info:
        path_counts(str(tmp_path / "bad.csv"), ["l1", "l2"], weight="w")
    msg = str(info.value)
    for v in set(values) - {"", "1", "0"}:
        assert v not in msg
    assert str(len(values)) not in msg.replace("2^61", "").replace("2^53", "")


def test_duckdb_reader_refuses_float_weights_above_2_53(tmp_path: Path) -> None:
    pd.DataFrame({"l1": ["a"], "l2": ["x"], "w": [2.0**60]}).to_parquet(tmp_path / "f.parquet")
    with pytest.raises(DataError, match="above 2\\^53"):
        path_counts(str(tmp_path / "f.parquet"), ["l1", "l2"], weight="w")


# ------------------------------------------------------------------------ Spark


def test_spark_sums_exactly_and_refuses_wrapping_totals() -> None:
    from _spark import spark_frame

    sdf = spark_frame({"l1": ["a", "a", "a"], "l2": ["x", "x", "x"], "w": np.array([P52, P52, 1], dtype=np.int64)})
    x = leaf_counts(sdf, H, weight="w")
    assert int(np.concatenate(node_weights(x, H.parents))[0]) == 2**53 + 1
    # a LongType sum of 2^62 + 2^62 wraps to -2^63 in Spark: refused as too large instead
    wrap = spark_frame({"l1": ["a", "b"], "l2": ["x", "z"], "w": np.array([2**62, 2**62], dtype=np.int64)})
    with pytest.raises(hmod.TotalTooLargeError):
        leaf_counts(wrap, H, weight="w")
    fl = spark_frame({"l1": ["a"], "l2": ["x"], "w": np.array([2.5])})
    with pytest.raises(DataError, match="non-integer"):
        leaf_counts(fl, H, weight="w")


# ------------------------------------------------------------------------ the audit


def _old_float_sum(out: np.ndarray, index: np.ndarray, values: np.ndarray) -> None:
    """The summation of the old code, planted: through float64 weights (np.bincount)."""
    out += np.bincount(np.asarray(index), weights=values, minlength=out.size).astype(np.int64)


def _weighted_pair(spec: audit.MechanismSpec) -> audit.NeighborPair:
    pairs = [p for p in spec.worst_cases() if "2^52" in p.label]
    assert len(pairs) == 1
    return pairs[0]


def test_audit_of_the_weighted_pair_respects_epsilon() -> None:
    spec = audit.get("hierarchy_counts/laplace/add_remove")
    res = audit.audit_pair(spec, _weighted_pair(spec), seed=2026)
    assert res.epsilon_lower_bound <= spec.epsilon, res
    assert res.epsilon_lower_bound > 0.7, res  # the audit is tight here: it would see a violation


def test_audit_flags_the_old_float_summation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted bug: the old float64 summation. 2^53 + 1 rounds to 2^53 and 2^53 + 2 does not,
    so the neighbors' counts differ by 2 on the path: the audit measures eps > 1."""
    monkeypatch.setattr(hmod, "_add_at", _old_float_sum)
    spec = audit.get("hierarchy_counts/laplace/add_remove")
    res = audit.audit_pair(spec, _weighted_pair(spec), seed=2026)
    assert res.epsilon_lower_bound > spec.epsilon, res
