"""Hierarchy counting through integer codes: :mod:`dptree.data.codes` and
:func:`dptree.hierarchy.counting.leaf_counts` agree with plain references on every input kind."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hier_helpers import random_paths

from dptree.data.codes import coded_counts, encode
from dptree.errors import DataError
from dptree.hierarchy.counting import leaf_counts, node_weights
from dptree.hierarchy.structure import Hierarchy


def _reference(codes: list[np.ndarray], weight: np.ndarray | None) -> dict[tuple[int, ...], int]:
    out: dict[tuple[int, ...], int] = {}
    for i, key in enumerate(zip(*(c.tolist() for c in codes))):
        out[key] = out.get(key, 0) + (1 if weight is None else int(weight[i]))
    return out


@pytest.mark.parametrize("sizes", [[3, 4], [5, 1000, 7], [2**31, 2**31, 3]])  # dense, hashed, re-densified
@pytest.mark.parametrize("weighted", [False, True])
def test_coded_counts_match_a_dictionary_count(sizes: list[int], weighted: bool) -> None:
    rng = np.random.default_rng(len(sizes))
    n = 2000
    codes = [np.where(rng.random(n) < 0.1, -1, rng.integers(0, min(s, 6) if s > 100 else s, n)) for s in sizes]
    codes = [c if s < 100 else np.where(c >= 0, c * (s // 6), -1) for c, s in zip(codes, sizes)]  # spread codes
    weight = rng.integers(0, 2**40, n) if weighted else None
    distinct, counts = coded_counts(codes, sizes, weight)
    got = {key: int(c) for key, c in zip(zip(*(d.tolist() for d in distinct)), counts.tolist())}
    assert got == _reference(codes, weight)
    assert counts.dtype == np.int64


def test_encode_treats_every_missing_value_alike() -> None:
    for values in ([1.0, np.nan, 2.0, 1.0], ["a", None, "b", "a"], pd.Categorical(["a", None, "b", "a"])):
        codes, uniques = encode(values)
        assert codes.tolist()[1] == -1 and codes[0] == codes[3] != codes[2] and len(uniques) == 2


H = Hierarchy.from_paths(["US/CA/SF", "US/CA/LA", "US/NY", "FR/IDF/Paris", "FR/PACA"],
                         levels=["country", "state", "city"], other="(other)")
ROWS = pd.DataFrame({
    "country": ["US", "US", "FR", "FR", "DE", "US", None, "US", "FR"],
    "state": ["CA", "NY", "IDF", "PACA", "X", "CA", None, "TX", "PACA"],
    "city": ["SF", None, "Paris", None, None, "Oakland", None, None, "Nice"],
})


def _by_path(x: list[np.ndarray], h: Hierarchy) -> dict[str, int]:
    w = np.concatenate(node_weights(x, h.parents))
    return {p: int(v) for p, v in zip(h.all_paths(), w.tolist()) if v}


def test_unknown_paths_other_and_drop_on_every_input(tmp_path: Path) -> None:
    ROWS.to_parquet(tmp_path / "r.parquet")
    ROWS.to_csv(tmp_path / "r.csv", index=False)
    cat = ROWS.astype("category")
    inputs = [ROWS, cat, pa.Table.from_pandas(ROWS), pl.from_pandas(ROWS), str(tmp_path / "r.parquet"),
              str(tmp_path / "r.csv")]
    other = {"": 9, "US": 4, "US/CA": 2, "US/CA/SF": 1, "US/CA/(other)": 1, "US/NY": 1, "US/(other)": 1,
             "FR": 3, "FR/IDF": 1, "FR/IDF/Paris": 1, "FR/PACA": 1, "FR/(other)": 1, "(other)": 2}
    for data in inputs:
        with pytest.raises(DataError, match="not a leaf") as info:
            leaf_counts(data, H)
        assert not any(ch.isdigit() for ch in str(info.value))  # no count in the refusal
        assert _by_path(leaf_counts(data, H, unknown="other"), H) == other, type(data)
        assert _by_path(leaf_counts(data, H, unknown="drop"), H) == {
            "": 4, "US": 2, "US/CA": 1, "US/CA/SF": 1, "US/NY": 1, "FR": 2, "FR/IDF": 1, "FR/IDF/Paris": 1,
            "FR/PACA": 1}, type(data)


def test_random_hierarchies_match_a_python_walk() -> None:
    rng = np.random.default_rng(11)
    paths = random_paths(rng, max_depth=4)
    h = Hierarchy.from_paths(paths)
    rows = [paths[i] for i in rng.integers(0, len(paths), 3000)]
    width = h.depth - 1
    df = pd.DataFrame([list(r) + [None] * (width - len(r)) for r in rows], columns=h.levels)
    ref = np.zeros(h.n_nodes, dtype=np.int64)
    for r in rows:
        for i in range(len(r) + 1):
            ref[h.node_id(r[:i])] += 1
    for data in (df, pa.Table.from_pandas(df), df.astype("category")):
        np.testing.assert_array_equal(np.concatenate(node_weights(leaf_counts(data, h), h.parents)), ref)
