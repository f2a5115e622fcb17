"""bin_cells: the direct bincount path and the chunked clamped path give the same histogram."""

from __future__ import annotations

import numpy as np
import pytest

from dptree.data.domain import make_domain
from dptree.data.engines import numpy as engine


def _reference(values: np.ndarray, lower: int, upper: int, cells: int) -> np.ndarray:
    return np.bincount(np.clip(values, lower, upper) - lower, minlength=cells)


@pytest.mark.parametrize("chunk", [7, 1 << 21])
@pytest.mark.parametrize(
    "values",
    [
        np.array([0, 3, 3, 9, 5], np.int64),  # in range: direct path
        np.array([0, 3, -4, 9, 5], np.int64),  # a negative value: bincount refuses, clamped path
        np.array([0, 3, 12, 9, 2**60], np.int64),  # above the domain (and huge): clamped path
        np.arange(100, dtype=np.int64) % 10,  # several chunks of at least `cells` values
        np.array([0, 3, 3], np.int32),  # not intp: clamped path
    ],
)
def test_paths_agree_with_clamped_bincount(values: np.ndarray, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "_BIN_CHUNK", chunk)
    dom = make_domain(0, 9)
    cells = 16  # padding cells beyond the domain stay 0
    hist = engine.bin_cells(dom, values, cells)
    assert hist.dtype == np.int64 and hist.shape == (cells,)
    np.testing.assert_array_equal(hist, _reference(values.astype(np.int64), 0, 9, cells))


def test_shifted_domain_is_clamped() -> None:
    dom = make_domain(5, 14)
    values = np.array([0, 5, 14, 20, 7], np.int64)
    np.testing.assert_array_equal(engine.bin_cells(dom, values, 10), _reference(values, 5, 14, 10))


def test_already_leaves_only_for_values_inside_a_zero_based_domain() -> None:
    dom = make_domain(0, 9)
    assert engine._already_leaves(dom, np.array([0, 9], np.int64))
    assert not engine._already_leaves(dom, np.array([0, 10], np.int64))
    assert not engine._already_leaves(make_domain(1, 10), np.array([1, 2], np.int64))
    assert not engine._already_leaves(dom, np.array([], np.int64))
