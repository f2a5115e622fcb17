"""The in-memory engine: numpy arrays, lists, pandas, polars and Arrow (through
:func:`dptree.data.inputs.to_numpy`), counted with ``np.bincount``; hierarchy paths with pandas.

It is the reference implementation of the algorithms the DuckDB and Spark engines run in SQL:
the same bucketing (:meth:`Domain.to_leaves`), the same bounding (:mod:`dptree.data.bounding`) and
the same group lookup, so all three give the same counts for the same random source (tested).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, Callable, Sequence

import numpy as np

from dptree.data.bounding import kept_positions
from dptree.data.dates import as_dates
from dptree.data.domain import Domain, coerce_values
from dptree.data.engines.base import (
    COUNT,
    Bucket,
    Counts,
    Engine,
    Group,
    GroupOf,
    Missing,
    Partition,
    Sample,
    Units,
    UserRecords,
    Value,
)
from dptree.data.inputs import as_declared, declared_kind, exact_frame, present, to_numpy, valid_records, value_kind
from dptree.data.sorting import distinct_counts, run_lengths
from dptree.data.weights import MAX_TOTAL, check_weights, too_large
from dptree.errors import (
    DataError,
    InputFormatError,
    dates_need_date_bounds_error,
    length_mismatch_error,
    missing_keys_error,
    missing_user_ids_error,
    partition_key_type_error,
    unknown_groups_error,
)
from dptree.noise import RandomSource

__all__ = ["NumpyEngine", "partition_keys", "capped_user_counts", "bin_cells", "bound_cells", "bound_packed",
           "pack_user_cells", "cell_bits", "user_codes", "group_codes", "distinct_counts", "run_lengths"]

_BIN_CHUNK = 1 << 21

_DRAW_POOL: tuple[int, ThreadPoolExecutor] | None = None
_DRAW_POOL_LOCK = threading.Lock()


def _draw_pool() -> ThreadPoolExecutor:
    """The one worker thread that draws beside the sort of :func:`bound_packed`, started on first
    use and kept (starting a thread per call cost ~0.2 ms, most of a small bounded release); a
    forked child, which has no copy of the parent's thread, starts its own."""
    global _DRAW_POOL
    with _DRAW_POOL_LOCK:
        if _DRAW_POOL is None or _DRAW_POOL[0] != os.getpid():
            _DRAW_POOL = (os.getpid(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="dptree-draw"))
        return _DRAW_POOL[1]


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
    except TypeError:  # ids of several kinds (1 and 'a'): people told apart by value, numbered as they come
        seen: dict[Any, int] = {}  # (a refusal here would let one record's id reveal itself)
        try:
            codes = np.fromiter((seen.setdefault(v, len(seen)) for v in ids.tolist()), np.int64, ids.size)
        except TypeError:
            raise DataError("user_id values must be numbers, text or dates (one id per record)") from None
    return codes.astype(np.int64).ravel()


def partition_keys(raw: np.ndarray) -> np.ndarray:
    """The keys of a :class:`~dptree.data.engines.base.Partition` column, none missing: int64 for an
    integer column (or an object column of Python integers that fit), else an object array of str;
    decided by the column's type, or for an object column by every entry being text or every
    entry an integer (anything else refused, naming no value)."""
    kind = raw.dtype.kind
    if kind in "iu":
        if kind == "u" and raw.size and int(raw.max()) > np.iinfo(np.int64).max:
            raise DataError("by keys must fit 64-bit signed integers")
        return raw.astype(np.int64)
    if kind in "US":
        return raw.astype(str).astype(object)
    if kind == "O":
        items = raw.tolist()
        if all(isinstance(v, str) for v in items):
            return raw
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in items):
            try:
                return np.array(items, dtype=np.int64)
            except OverflowError:
                raise DataError("by keys must fit 64-bit signed integers") from None
    raise partition_key_type_error()


def _object_group(v: Any, lookup: dict[Any, int], integers: bool) -> int:
    """The group of one value of an object column: integer groups match numbers equal to them
    (ints, whole floats, compared exactly), never True/False or text; string groups match text."""
    if integers:
        if isinstance(v, (bool, np.bool_, str, bytes)):
            return -1
    elif not isinstance(v, str):
        return -1
    try:
        return lookup.get(v, -1)
    except TypeError:  # an unhashable value names no group
        return -1


def group_codes(by: Any, groups: Sequence[Group], n: int, unknown: str) -> np.ndarray:
    """Index of each of the ``n`` rows' group in ``groups``; -1 for rows dropped as unknown. Each
    value is matched on its own: a value of another kind than the groups' (text among integer
    groups, 2.5, inf) is an unknown group, whatever the other rows hold."""
    arr = to_numpy(by, name="by")
    if arr.size != n:
        raise length_mismatch_error("by")
    lookup = {g: i for i, g in enumerate(groups)}
    here = present(arr)
    codes = np.full(n, -1, dtype=np.int64)
    if here.any():
        vals = arr[here]
        if vals.dtype.kind == "f":  # integer groups read through a float column (with NaN)
            whole = np.isfinite(vals) & (vals == np.floor(vals))
            vals = np.where(whole, vals, np.nan)
            uniq, inv = np.unique(vals, return_inverse=True)
            table = np.array([lookup.get(int(u), -1) if u == u else -1 for u in uniq.tolist()], dtype=np.int64)
        elif vals.dtype.kind == "O":  # one lookup per value: kinds may mix, and need not compare
            integers = not isinstance(groups[0], str)
            table = np.fromiter((_object_group(v, lookup, integers) for v in vals.tolist()), dtype=np.int64,
                                count=vals.size)
            inv = np.arange(vals.size)
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




def cell_bits(cells: int) -> int:
    """Bits of a cell number 0..cells-1 in a packed (user, cell) key."""
    return max(int(cells - 1).bit_length(), 1)


def pack_user_cells(users: np.ndarray, cells_of_rows: np.ndarray, bits: int) -> np.ndarray | None:
    """One int64 key per row, ``users << bits | cell``, ordered as (user, cell), when every user
    key lies in [0, 2^(63 - bits)); None otherwise."""
    if users.size and (int(users.min()) < 0 or int(users.max()) >= 1 << (63 - bits)):
        return None
    key = users.astype(np.int64)  # a copy: the caller's array stays
    key <<= bits
    key |= cells_of_rows
    return key


def bound_packed(key: np.ndarray, bits: int, k: int, cells: int, source: RandomSource,
                 say: Callable[[str], None] | None = None) -> np.ndarray:
    """Rows per cell keeping at most k rows per user (:mod:`dptree.data.bounding`), from the rows'
    packed keys (:func:`pack_user_cells`; sorted here, in place, by numpy's vectorised sort):
    users above k, in id order, keep the drawn ranks of their rows ranked by cell. When the user
    keys are below max(rows, 2^20), the records per user come from a count array and the draws
    run in another thread while the keys are sorted (the same draws from ``source``, which only
    that thread uses until they are done); otherwise they follow the sort, from its runs. ``say``
    receives the stage names of the DuckDB engine's other path, in the same order (never a count),
    so progress output does not tell which path ran; every stage, whatever the rows (none included)."""
    say = say or (lambda msg: None)
    say("counting records per user")
    counts: np.ndarray | None = None
    if not key.size or int(key.max()) >> bits < max(key.size, 1 << 20):
        per_user = np.bincount(key >> bits)
        counts = per_user[per_user > 0]  # users in id order, as the sort's runs
        del per_user
    say(f"sorting the rows by user and cell; drawing which {k} record(s) each user keeps")
    drawing = _draw_pool().submit(_kept_ranks, source, counts, k) if counts is not None else None
    try:
        key.sort()
    finally:  # the source is the worker's until its draws are done, whatever happens here
        if drawing is not None:
            wait([drawing])
    if drawing is None:
        counts = run_lengths(key >> bits)[1]
        chosen = _kept_ranks(source, counts, k)
    else:
        chosen = drawing.result()
    assert counts is not None
    say("counting the kept records")
    key &= (1 << bits) - 1  # the cells, in (user, cell) order
    return np.bincount(key[_keep_mask(counts, chosen, k)], minlength=cells).astype(np.int64)


def bound_cells(cells_of_rows: np.ndarray, users: np.ndarray, k: int, cells: int, source: RandomSource) -> np.ndarray:
    """Rows per cell keeping at most k rows per user (:mod:`dptree.data.bounding`): rows sorted by
    user then cell; users above k, in id order, keep the drawn ranks. ``users``: integer keys in
    user-id order (dense codes or integer ids). One packed sort (:func:`bound_packed`) when the
    keys' range fits beside the cell bits, else a lexsort; the same rows are kept either way."""
    if cells_of_rows.size == 0:
        return np.zeros(cells, dtype=np.int64)
    bits, lo = cell_bits(cells), int(users.min())
    if int(users.max()) - lo < 1 << (63 - bits):
        key = pack_user_cells((users - lo) if lo else users, cells_of_rows, bits)
        assert key is not None
        return bound_packed(key, bits, k, cells, source)
    order = np.lexsort((cells_of_rows, users))
    counts = run_lengths(users[order])[1]
    keep = _keep_mask(counts, _kept_ranks(source, counts, k), k)
    return np.bincount(cells_of_rows[order][keep], minlength=cells).astype(np.int64)


def _kept_ranks(source: RandomSource, counts: np.ndarray, k: int) -> np.ndarray:
    """The drawn ranks (U_heavy, k) of the users above k, in id order."""
    heavy = counts[counts > k]
    return kept_positions(source, heavy, k) if heavy.size else np.zeros((0, k), dtype=np.int64)


def _keep_mask(counts: np.ndarray, chosen: np.ndarray, k: int) -> np.ndarray:
    """Keep-mask of the rows in (user, cell) order: every row of a user with at most k rows, and
    the drawn ranks ``chosen`` of the users above k."""
    starts = np.cumsum(counts) - counts
    keep = np.repeat(counts <= k, counts)
    heavy = np.flatnonzero(counts > k)
    if heavy.size:
        keep[(starts[heavy][:, None] + chosen).ravel()] = True
    return keep


def _column(data: Any, column: str | None, ref: Any, what: str) -> Any:
    """A per-row column given by name (read from the table ``data``) or as an array."""
    if not isinstance(ref, str):
        return ref
    if column is None:
        raise DataError(f"{what} names a column: pass the table as data and column='...' for the values")
    return to_numpy(data, column=ref, name=what)


def _reference(data: Any, ref: Any, what: str) -> np.ndarray:
    """A per-row column given by name (a column of the table ``data``) or as an array."""
    return to_numpy(data, column=ref, name=what) if isinstance(ref, str) else to_numpy(ref, name=what)


class NumpyEngine(Engine):
    """Counts of in-memory data (zero-copy where the container allows, :func:`to_numpy`)."""

    READS = "in-memory data"

    def _partition_counts(self, data: Any, key: Partition, sample: Sample | None) -> Counts:
        """Records, or distinct users after bounding (:func:`bound_cells` on the distinct (user, key)
        pairs: a user's keys ranked in key order), per sorted distinct key."""
        raw = _reference(data, key.column, "by")
        if raw.ndim != 1:
            raise length_mismatch_error("by")
        users = user_codes(_reference(data, sample.user, "user_id"), raw.size) if sample is not None else None
        here = present(raw)
        if not here.all():
            if key.unknown == "error":
                raise missing_keys_error()
            raw = raw[here]
            users = None if users is None else users[here]
        try:
            uniq, codes = np.unique(partition_keys(raw), return_inverse=True)
        except TypeError:
            raise partition_key_type_error() from None
        codes = codes.ravel().astype(np.int64)
        size = uniq.size
        if users is None or sample is None:
            hist = np.bincount(codes, minlength=size).astype(np.int64)
        else:
            order = np.lexsort((codes, users))
            u, c = users[order], codes[order]
            first = np.ones(u.size, dtype=bool)
            first[1:] = (u[1:] != u[:-1]) | (c[1:] != c[:-1])  # one row per distinct (user, key) pair
            hist = bound_cells(c[first], u[first], sample.k, size, sample.source)
        nz = np.flatnonzero(hist)
        return Counts((uniq[nz],), hist[nz])

    def _label_counts(self, data: Any, levels: Sequence[str], weight: str | None) -> Counts:
        return _label_counts(data, levels, weight)

    def _user_counts(self, data: Any, users: UserRecords, key: Bucket, group: GroupOf | None, *,
                     on_invalid: Missing) -> Counts:
        raw = to_numpy(data, column=key.column, name="values")
        ids = user_codes(_column(data, key.column, users.user, "user_id"), raw.size)
        keep = valid_records(raw, key.domain.kind, on_invalid)  # the rows the Bucket key counts
        if group is not None:
            keep &= group_codes(_column(data, key.column, group.column, "by"), group.groups, raw.size,
                                group.unknown) >= 0
        coerce_values(raw[keep], key.domain, missing=on_invalid)  # the same refusals as the histogram's
        return Counts.of_values(capped_user_counts(ids[keep], users.cap))

    def _grid_counts(self, data: Any, x: Bucket, y: Bucket, *, on_invalid: Missing) -> Counts:
        """Records per (x bucket, y bucket) of two columns of a table; a record with an invalid value
        in either column is refused or dropped (``on_invalid``)."""
        rx = to_numpy(data, column=x.column, name="x values")
        ry = to_numpy(data, column=y.column, name="y values")
        if rx.size != ry.size:
            raise length_mismatch_error("y values")
        keep = valid_records(rx, x.domain.kind, on_invalid) & valid_records(ry, y.domain.kind, on_invalid)
        if not keep.all():
            rx, ry = rx[keep], ry[keep]
        ny, size = y.domain.size, x.domain.size * y.domain.size
        hist = np.zeros(size, np.int64)
        chunk = max(_BIN_CHUNK, size)  # binned in chunks, as bin_cells: no full-size temporaries
        for start in range(0, rx.size, chunk):
            ix = x.domain.to_leaves(coerce_values(rx[start:start + chunk], x.domain, missing=on_invalid))
            iy = y.domain.to_leaves(coerce_values(ry[start:start + chunk], y.domain, missing=on_invalid))
            hist += np.bincount(ix.astype(np.int64) * ny + iy, minlength=size)
        cells = np.flatnonzero(hist)
        return Counts((cells // ny, cells % ny), hist[cells].astype(np.int64, copy=False))

    def _key_counts(self, data: Any, key: Bucket | Value, group: GroupOf | None, *, on_invalid: Missing,
                    sample: Sample | None) -> Counts:
        raw = to_numpy(data, column=key.column, name="values")
        codes = (group_codes(_column(data, key.column, group.column, "by"), group.groups, raw.size, group.unknown)
                 if group is not None else None)
        if isinstance(key, Value):
            if codes is None:
                vals, cnt = _value_counts(data, key, on_invalid)
                return Counts.of_values((vals, cnt)) if key.distinct else Counts.of_records(np.repeat(vals, cnt))
            assert group is not None
            parts = [_value_counts(raw[codes == i], Value(None), on_invalid)
                     for i in range(len(group.groups))]
            gi = np.repeat(np.arange(len(parts), dtype=np.int64), [p[0].size for p in parts])
            return Counts((gi, np.concatenate([p[0] for p in parts])), np.concatenate([p[1] for p in parts]))
        domain, size = key.domain, key.domain.size
        users = (user_codes(_column(data, key.column, sample.user, "user_id"), raw.size)
                 if sample is not None else None)
        if codes is None and users is None:
            hist = bin_cells(domain, coerce_values(raw, domain, missing=on_invalid), size)
        else:
            keep = valid_records(raw, domain.kind, on_invalid)  # invalid records are dropped (or refused) first
            if codes is not None:
                keep = keep & (codes >= 0)
            flat = domain.to_leaves(coerce_values(raw[keep], domain, missing=on_invalid))
            groups = 1
            if codes is not None:
                assert group is not None
                groups, flat = len(group.groups), codes[keep] * size + flat
            if users is None or sample is None:
                hist = np.bincount(flat, minlength=groups * size).astype(np.int64)
            else:
                hist = bound_cells(flat, users[keep], sample.k, groups * size, sample.source)
        cells = np.flatnonzero(hist)
        n = hist[cells].astype(np.int64, copy=False)
        return Counts((cells // size, cells % size) if codes is not None else (cells,), n)


    def _unit_counts(self, data: Any, key: Bucket, units: Units, *, on_invalid: Missing,
                     sample: Sample | None) -> Counts:
        """Records per (leaf, units) cell: one flat cell leaf * cells + code per valid row, counted
        (or bounded per user, a user's rows ranked by cell, :func:`bound_cells`) as the dense key."""
        raw = to_numpy(data, column=key.column, name="values")
        try:
            w = np.asarray(to_numpy(_column(data, key.column, units.column, "weights"), name="weights"), dtype=np.float64)
        except (TypeError, ValueError):
            raise DataError("weights must be numbers (a numeric column or array)") from None
        if w.ndim != 1 or w.size != raw.size:
            raise length_mismatch_error("weights")
        keep = valid_records(raw, key.domain.kind, on_invalid) & valid_records(w, None, on_invalid)
        users = (user_codes(_column(data, key.column, sample.user, "user_id"), raw.size)
                 if sample is not None else None)
        grid, size = units.grid, key.domain.size
        flat = key.domain.to_leaves(coerce_values(raw[keep], key.domain, missing=on_invalid)) * grid.cells
        flat += grid.units(w[keep]) - grid.lower_units
        if users is None or sample is None:
            cell, n = distinct_counts(flat)
        else:
            hist = bound_cells(flat, users[keep], sample.k, size * grid.cells, sample.source)
            cell = np.flatnonzero(hist)
            n = hist[cell]
        cell = np.asarray(cell, dtype=np.int64)
        return Counts((cell // grid.cells, cell % grid.cells), np.asarray(n, dtype=np.int64))


def capped_user_counts(users: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """(capped numbers of records, users with each): the records per user of ``users`` (integer
    keys, one per record, non-negative), capped at ``cap``, counted once per user (only the
    numbers that occur)."""
    per_user = np.bincount(users) if users.size else np.zeros(0, np.int64)
    hist = np.bincount(np.minimum(per_user[per_user > 0], cap), minlength=cap + 1)
    found = np.flatnonzero(hist)
    return found.astype(np.int64), hist[found].astype(np.int64)


def _value_counts(data: Any, key: Value, on_invalid: Missing) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct values of ``key`` and their counts (:class:`Value`)."""
    column, domain = key.column, key.domain
    arr = to_numpy(data, column=column, name="values")
    declared = declared_kind(data, column=column)
    if domain is not None and domain[0] == "datetime" and arr.dtype.kind in "OU":
        arr = as_dates(arr)  # ISO text, dates, datetimes: each on its own, as range_tree reads them
    if arr.dtype.kind in "US" or (arr.dtype.kind == "M" and domain is not None and domain[0] != "datetime"):
        raise dates_need_date_bounds_error(value_kind(arr))
    if arr.dtype.kind not in "iufMO":
        raise DataError("values must be numbers or dates (not text or True/False)")
    arr = arr[valid_records(arr, domain[0] if domain else None, on_invalid)]
    if arr.dtype.kind == "O" and any(isinstance(v, (str, bytes, bool, np.bool_)) for v in arr.tolist()):
        raise DataError("values must be numbers or dates (not text or True/False)")
    try:
        return distinct_counts(as_declared(arr, declared))  # the column's own type: schema, not its values
    except TypeError:
        raise DataError("values must be numbers of one comparable type") from None


def _label_counts(data: Any, levels: Sequence[str], weight: str | None) -> Counts:
    """Records (or exact weight sums) per distinct combination of the ``levels`` columns of a table."""
    import pandas as pd

    frame = exact_frame(data, levels)
    if not isinstance(frame, pd.DataFrame):
        raise InputFormatError(f"path counts need a table with the level columns; got {type(data).__name__}")
    keys = list(levels)
    absent = [c for c in keys + ([weight] if weight else []) if c not in frame.columns]
    if absent:
        raise InputFormatError(f"data has no column(s) {absent}; it has {list(frame.columns)}")
    if len(frame) == 0:
        return Counts(tuple([] for _ in keys), np.zeros(0, np.int64))
    if weight is not None:
        sub = frame[keys].copy()
        sub[COUNT] = check_weights(frame[weight], weight)  # exact int64, total < MAX_TOTAL
        g = sub.groupby(keys, sort=False, dropna=False, observed=True)[COUNT].sum().reset_index()
    else:
        if len(frame) >= MAX_TOTAL:  # pragma: no cover - no table this large fits in memory
            raise too_large(None)
        g = frame.groupby(keys, sort=False, dropna=False, observed=True).size().reset_index(name=COUNT)
    return Counts(tuple(g[c] for c in keys), g[COUNT].to_numpy(dtype=np.int64))  # every sum < MAX_TOTAL: exact
