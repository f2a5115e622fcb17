"""The in-memory engine: numpy arrays, lists, pandas, polars and Arrow (through
:func:`dptree.data.inputs.to_numpy`), counted with ``np.bincount``; hierarchy paths with pandas.

It is the reference implementation of the algorithms the DuckDB and Spark engines run in SQL:
the same bucketing (:meth:`Domain.to_leaves`), the same bounding (:mod:`dptree.data.bounding`) and
the same group lookup, so all three give the same counts for the same random source (tested).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from dptree.data.bounding import kept_positions
from dptree.data.domain import Domain, coerce_values
from dptree.data.engines.base import COUNT, Engine, Group, Missing, Unknown, invalid_values_error
from dptree.data.inputs import present, to_numpy
from dptree.data.weights import MAX_TOTAL, check_weights, too_large
from dptree.errors import (
    DataError,
    InputFormatError,
    length_mismatch_error,
    missing_user_ids_error,
    missing_values_error,
    unknown_groups_error,
)
from dptree.noise import RandomSource

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["NumpyEngine", "bin_cells", "bound_cells", "user_codes", "group_codes", "distinct_counts", "run_lengths"]

_BIN_CHUNK = 1 << 21


def bin_cells(domain: Domain, values: np.ndarray, cells: int) -> np.ndarray:
    """Records per leaf of validated ``values``, binned in chunks so that the clamped copy of the
    input never exists at full size (extra memory ~16 bytes x max(2^21, cells), not 16 bytes per
    value). A chunk holds at least ``cells`` values: each chunk's bincount writes and adds a
    whole histogram, which would otherwise cost more than the chunk's own values on large domains.
    Values that already are leaf indices (:func:`_already_leaves`) take one ``np.bincount``."""
    if _already_leaves(domain, values):
        try:
            hist = np.bincount(values, minlength=cells)  # refuses a negative value
        except ValueError:
            pass
        else:
            return hist.astype(np.int64, copy=False)
    chunk = max(_BIN_CHUNK, cells)
    hist = np.bincount(domain.to_leaves(values[:chunk]), minlength=cells).astype(np.int64, copy=False)
    for start in range(chunk, values.size, chunk):
        hist += np.bincount(domain.to_leaves(values[start : start + chunk]), minlength=cells)
    return hist


def _already_leaves(domain: Domain, values: np.ndarray) -> bool:
    """Whether int64 ``values`` of an integer domain [0, D-1] with width 1 are their own leaf
    indices below D (one max pass; ``np.bincount`` refuses negatives itself): they are then
    counted without a clamped copy. Both paths give the same histogram, so nothing released
    depends on which one ran."""
    return (domain.kind == "integer" and domain.width == 1 and domain.lower == 0 and values.dtype == np.intp
            and values.size > 0 and int(values.max()) < domain.size)


def user_codes(user_ids: Any, n: int) -> np.ndarray:
    """Dense codes 0..U-1 of user ids, in sorted id order; missing ids raise :class:`DataError`."""
    ids = to_numpy(user_ids, name="user_id")
    if ids.ndim != 1 or ids.size != n:
        raise length_mismatch_error("user_id")
    if not present(ids).all():
        raise missing_user_ids_error()
    try:
        _, codes = np.unique(ids, return_inverse=True)
    except TypeError as exc:
        raise DataError("user_id values must be of one comparable type (all numbers or all strings)") from exc
    return codes.astype(np.int64).ravel()


def group_codes(by: Any, groups: Sequence[Group], n: int, unknown: str) -> np.ndarray:
    """Index of each of the ``n`` rows' group in ``groups``; -1 for rows dropped as unknown."""
    arr = to_numpy(by, name="by")
    if arr.size != n:
        raise length_mismatch_error("by")
    lookup = {g: i for i, g in enumerate(groups)}
    here = present(arr)
    codes = np.full(n, -1, dtype=np.int64)
    if here.any():
        vals = arr[here]
        if vals.dtype.kind == "f":  # integer groups read through a float column (with NaN)
            whole = vals == np.floor(vals)
            vals = np.where(whole, vals, np.nan)
            uniq, inv = np.unique(vals, return_inverse=True)
            table = np.array([lookup.get(int(u), -1) if u == u else -1 for u in uniq.tolist()], dtype=np.int64)
        else:
            try:
                uniq, inv = np.unique(vals, return_inverse=True)
            except TypeError as exc:
                raise DataError("by values must be of one comparable type (all numbers or all strings)") from exc
            table = np.array([lookup.get(u, -1) for u in uniq.tolist()], dtype=np.int64)
        codes[here] = table[inv.ravel()] if table.size else -1
    if unknown == "error" and (codes < 0).any():
        raise unknown_groups_error()
    return codes


def bound_cells(cells_of_rows: np.ndarray, codes: np.ndarray, k: int, cells: int, source: RandomSource) -> np.ndarray:
    """Rows per cell keeping at most k rows per user code (:mod:`dptree.data.bounding`): rows
    sorted by user then cell; users above k, in code (= id) order, keep the drawn ranks."""
    if cells_of_rows.size == 0:
        return np.zeros(cells, dtype=np.int64)
    order = np.lexsort((cells_of_rows, codes))
    sc, sl = codes[order], cells_of_rows[order]
    counts = np.bincount(sc)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    keep = counts[sc] <= k
    heavy = np.flatnonzero(counts > k)
    if heavy.size:
        chosen = kept_positions(source, counts[heavy], k)  # (U_heavy, k)
        keep[(starts[heavy][:, None] + chosen).ravel()] = True
    return np.bincount(sl[keep], minlength=cells).astype(np.int64)


def distinct_counts(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values of a 1-D array and their counts (int64): one sort, then the run
    boundaries (``np.unique`` with counts, without its extra copies)."""
    return run_lengths(np.sort(arr, kind="stable" if arr.dtype.kind == "O" else None))


def run_lengths(srt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of a sorted 1-D array and the length of each run (int64)."""
    if srt.size == 0:
        return srt[:0].copy(), np.zeros(0, np.int64)
    ends = np.flatnonzero(srt[1:] != srt[:-1])  # the last position of every run but the last
    if ends.size == srt.size - 1:  # all distinct (continuous data): no gather
        return srt, np.ones(srt.size, np.int64)
    starts = np.empty(ends.size + 1, np.int64)
    starts[0] = 0
    np.add(ends, 1, out=starts[1:])
    counts = np.empty(starts.size, np.int64)
    np.subtract(starts[1:], starts[:-1], out=counts[:-1])
    counts[-1] = srt.size - starts[-1]
    return srt[starts], counts


def _column(data: Any, column: str | None, ref: Any, what: str) -> Any:
    """A per-row column given by name (read from the table ``data``) or as an array."""
    if not isinstance(ref, str):
        return ref
    if column is None:
        raise DataError(f"{what} names a column: pass the table as data and column='...' for the values")
    return to_numpy(data, column=ref, name=what)


class NumpyEngine(Engine):
    """Counts of in-memory data (zero-copy where the container allows, :func:`to_numpy`)."""

    READS = "in-memory data"

    def leaf_histogram(self, data: Any, domain: Domain, cells: int, *, column: str | None,
                       missing: Missing) -> np.ndarray:
        values = to_numpy(data, column=column, name="values")
        return bin_cells(domain, coerce_values(values, domain, missing=missing), cells)

    def bounded_histogram(self, data: Any, domain: Domain, cells: int, *, column: str | None, user_id: Any,
                          k: int, missing: Missing, source: RandomSource) -> np.ndarray:
        raw = to_numpy(data, column=column, name="values")
        codes = user_codes(_column(data, column, user_id, "user_id"), raw.size)
        if raw.size and missing == "drop":  # records with a missing value are dropped before bounding
            keep = present(raw)
            raw, codes = raw[keep], codes[keep]
        leaves = domain.to_leaves(coerce_values(raw, domain, missing=missing))
        return bound_cells(leaves, codes, k, cells, source)

    def grouped_histograms(self, data: Any, domain: Domain, cells: int, *, column: str | None, by: Any,
                           groups: Sequence[Group], unknown: Unknown, user_id: Any, k: int | None,
                           missing: Missing, source: RandomSource) -> np.ndarray:
        raw = to_numpy(data, column=column, name="values")
        n = raw.size
        codes = group_codes(_column(data, column, by, "by"), groups, n, unknown)
        ucodes = user_codes(_column(data, column, user_id, "user_id"), n) if user_id is not None else None
        here = present(raw) if n else np.ones(0, bool)
        if missing == "error" and not here.all():
            raise missing_values_error(cli_flag=False)
        keep = (codes >= 0) & here
        leaves = domain.to_leaves(coerce_values(raw[keep], domain, missing=missing))
        flat = codes[keep] * cells + leaves
        if ucodes is None or k is None:
            hist = np.bincount(flat, minlength=len(groups) * cells)
        else:
            hist = bound_cells(flat, ucodes[keep], k, len(groups) * cells, source)
        return hist.astype(np.int64).reshape(len(groups), cells)

    def value_counts(self, data: Any, *, column: str | None, missing: Missing = "error",
                     infinite: Missing = "error", message: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        arr = to_numpy(data, column=column, name="values")
        kind = arr.dtype.kind
        if kind not in "iufMO" or (kind == "O" and any(isinstance(v, (str, bytes, bool, np.bool_)) for v in arr)):
            raise DataError("values must be numbers or dates (not text or True/False)")
        if kind in "fM" or (kind == "O" and arr.size):
            here = present(arr)
            if not here.all():
                if missing == "error":
                    raise invalid_values_error("missing", None, message)
                arr = arr[here]
            if kind == "f":
                finite = np.isfinite(arr)
                if not finite.all():
                    if infinite == "error":
                        raise invalid_values_error("infinite", None, message)
                    arr = arr[finite]
            elif kind == "O":
                items = arr.tolist()
                if any(isinstance(v, float) and not np.isfinite(v) for v in items):
                    if infinite == "error":
                        raise invalid_values_error("infinite", None, message)
                    arr = np.array([v for v in items if not (isinstance(v, float) and not np.isfinite(v))],
                                   dtype=object)
        try:
            return distinct_counts(arr)
        except TypeError:
            raise DataError("values must be numbers of one comparable type") from None

    def path_counts(self, data: Any, levels: Sequence[str], *, weight: str | None) -> pd.DataFrame:
        import pandas as pd

        frame = data if isinstance(data, pd.DataFrame) else getattr(data, "to_pandas", lambda: None)()
        if not isinstance(frame, pd.DataFrame):
            raise InputFormatError(f"path counts need a table with the level columns; got {type(data).__name__}")
        keys = list(levels)
        absent = [c for c in keys + ([weight] if weight else []) if c not in frame.columns]
        if absent:
            raise InputFormatError(f"data has no column(s) {absent}; it has {list(frame.columns)}")
        if len(frame) == 0:
            return pd.DataFrame({**{c: [] for c in keys}, COUNT: np.zeros(0, np.int64)})
        if weight is not None:
            sub = frame[keys].copy()
            sub[COUNT] = check_weights(frame[weight], weight)  # exact int64, total < MAX_TOTAL
            g = sub.groupby(keys, sort=False, dropna=False, observed=True)[COUNT].sum().reset_index()
        else:
            if len(frame) >= MAX_TOTAL:  # pragma: no cover - no table this large fits in memory
                raise too_large(None)
            g = frame.groupby(keys, sort=False, dropna=False, observed=True).size().reset_index(name=COUNT)
        g[COUNT] = g[COUNT].to_numpy(dtype=np.int64)  # every group sum <= total < MAX_TOTAL: exact
        return g
