"""The DuckDB engine's one-scan leaf histogram and window-free bounding: same counts
and same refusals as the numpy reference, whatever the batch size of the sorted stream."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dptree.data.engines import duckdb_bounded as dd_bounded
from dptree.data.histograms import leaf_histogram
from dptree.errors import DataError
from dptree.rangetree.release import plan_range_tree


@pytest.mark.parametrize("in_memory", [True, False])
@pytest.mark.parametrize("batch", [1, 7, 1 << 20])
def test_bounded_stream_matches_numpy_at_any_batch_size(tmp_path: Path, batch: int, in_memory: bool,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # both paths of the DuckDB engine (numpy's packed sort, and DuckDB's sort streamed back) keep
    # the numpy engine's rows for the same seed
    rng = np.random.default_rng(batch)
    n = 3000
    df = pd.DataFrame({"v": rng.integers(-5, 70, n), "u": rng.integers(0, 400, n) * 7 - 100})
    df.loc[rng.random(n) < 0.05, "v"] = None  # dropped before bounding
    df.to_parquet(tmp_path / "d.parquet")
    plan = plan_range_tree(lower=0, upper=63, epsilon=1.0, max_contributions=3)
    monkeypatch.setattr(dd_bounded, "STREAM_BATCH", batch)
    if not in_memory:
        monkeypatch.setattr(dd_bounded, "IN_MEMORY_ROWS", 0)
    for k in (1, 3):
        got = leaf_histogram(str(tmp_path / "d.parquet"), plan, column="v", user_id="u", max_contributions=k,
                             on_invalid="drop", rng=k)
        ref = leaf_histogram(df["v"], plan, user_id=df["u"], max_contributions=k, on_invalid="drop", rng=k)
        np.testing.assert_array_equal(got, ref)
        assert got.sum() < n  # users above k lost rows


@pytest.mark.parametrize("values,problem", [([1.0, np.nan, 2.0], "missing"), ([1.0, np.inf, 3.0], "inf"),
                                            ([1.0, 2.5, 3.0], "non-integers")])
def test_one_scan_checks_refuse_by_kind(tmp_path: Path, values: list[float], problem: str) -> None:
    pd.DataFrame({"v": values}).to_parquet(tmp_path / "f.parquet")
    plan = plan_range_tree(lower=0, upper=7, epsilon=1.0)
    with pytest.raises(DataError, match=problem) as info:
        leaf_histogram(str(tmp_path / "f.parquet"), plan, column="v")
    assert "2.5" not in str(info.value) and "1 " not in str(info.value)


def test_one_scan_histogram_clamps_like_numpy(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    for lower, upper, width in ((0, 1023, 1), (-50, 949, 10), (3, 10, 1)):
        v = rng.integers(lower - 100, upper + 100, 5000)
        pd.DataFrame({"v": v, "w": v.astype(np.int32), "f": v.astype(float)}).to_parquet(tmp_path / "c.parquet")
        plan = plan_range_tree(lower=lower, upper=upper, epsilon=1.0, **({"width": width} if width > 1 else {}))
        ref = leaf_histogram(v, plan)
        for col in ("v", "w", "f"):
            np.testing.assert_array_equal(leaf_histogram(str(tmp_path / "c.parquet"), plan, column=col), ref)
