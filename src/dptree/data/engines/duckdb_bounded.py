"""Contribution bounding in the DuckDB engine (:mod:`dptree.data.bounding`): the rows' cells per
user, at most k kept per user, counted per cell. Two paths keep the same rows for the same draws:
integer user ids up to :data:`IN_MEMORY_ROWS` rows are read once into numpy and sorted there as
one packed key; anything else is sorted by DuckDB (out of core) and streamed back as cells only.
User ids never leave this module: only the histogram is returned."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from dptree.data.bounding import kept_positions
from dptree.data.engines.duckdb_progress import Stages
from dptree.data.engines.numpy import bound_packed, cell_bits, pack_user_cells
from dptree.noise import RandomSource

__all__ = ["bounded_counts", "bounded_stages", "IN_MEMORY_ROWS", "STREAM_BATCH"]


def bounded_stages(k: int) -> tuple[str, ...]:
    """The stages :func:`bounded_counts` announces, all of them on every path (its two, the
    numpy engine's :func:`~dptree.data.engines.numpy.bound_packed`, and any input, empty or not)."""
    return ("reading user ids and cells", "counting records per user",
            f"sorting the rows by user and cell; drawing which {k} record(s) each user keeps",
            "counting the kept records")


#: rows per batch of the sorted stream that :func:`bounded_counts` reads
STREAM_BATCH = 1 << 20


def _kept_in_batch(off: int, size: int, ends: np.ndarray, light: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Keep-mask of the sorted rows off..off+size-1: every row of a user with at most k rows, and
    the drawn global ranks ``kept`` (sorted) of the users above k."""
    a = int(np.searchsorted(ends, off, side="right"))
    b = int(np.searchsorted(ends, off + size - 1, side="right"))
    lens = np.diff(np.concatenate([[off], np.minimum(ends[a:b + 1], off + size)]))
    mask = np.repeat(light[a:b + 1], lens)
    lo, hi = np.searchsorted(kept, [off, off + size])
    mask[kept[lo:hi] - off] = True
    return mask


#: the most rows :func:`bounded_counts` bounds in memory (about 22 bytes a row at the peak: 2.2 GB
#: measured at 10^8 rows);
#: past it DuckDB sorts them (out of core)
IN_MEMORY_ROWS = 1 << 27

#: user id types numpy sorts as int64 (the in-memory path)
_NUMPY_ID_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER")


def _bounded_in_memory(con: Any, table: str, k: int, cells: int, source: RandomSource,
                       say: Callable[[str], None]) -> np.ndarray | None:
    """:func:`bounded_counts` by numpy (:func:`dptree.data.engines.numpy.bound_packed`: one packed
    vectorised sort, the draws beside it, instead of DuckDB's GROUP BY u and its sort by (u, cell)),
    when the user ids are integers in [0, 2^(63 - cell bits)) and at most :data:`IN_MEMORY_ROWS`
    rows come; None otherwise (nothing drawn). The same rows are kept for the same draws, so only
    the time depends on which path ran."""
    utype = str(con.execute(f"DESCRIBE SELECT u FROM {table}").fetchall()[0][1]).upper()
    if utype not in _NUMPY_ID_TYPES:
        return None
    bits = cell_bits(cells)
    cell_type = "INTEGER" if cells <= np.iinfo(np.int32).max + 1 else "BIGINT"
    rel = con.sql(f"SELECT CAST(u AS BIGINT) AS u, CAST(leaf AS {cell_type}) AS leaf FROM {table}")
    reader = next(getattr(rel, m) for m in ("to_arrow_reader", "fetch_arrow_reader", "fetch_record_batch")
                  if hasattr(rel, m))(STREAM_BATCH)  # the name differs across DuckDB versions
    keys: list[np.ndarray] = []
    rows = 0  # nothing is said before the path is settled: the stages' names are the same on both
    for batch in reader:
        rows += batch.num_rows
        key = pack_user_cells(batch.column(0).to_numpy(), batch.column(1).to_numpy(), bits)
        if key is None or rows > IN_MEMORY_ROWS:
            return None
        keys.append(key)
    key = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
    del keys
    return bound_packed(key, bits, k, cells, source, say)


def bounded_counts(con: Any, table: str, k: int, cells: int, source: RandomSource,
                   report: Callable[[str], None] | None = None) -> np.ndarray:
    """Counts per cell of ``table(u, leaf)`` (a table or a parenthesised query) after keeping at
    most k rows per user u (:mod:`dptree.data.bounding`): rows of a user ranked by cell, users
    above k in id order draw their ranks. First :func:`_bounded_in_memory`; where it does not
    apply, two queries and no window: the records of every user in id order (numbers without
    ids), then the rows sorted by (user, cell), streamed in batches of cells only; a row's global
    rank in that order is its user's start plus its rank inside the user, so the drawn ranks
    select rows without a per-user window. The sort does not depend on the draws: DuckDB sorts
    while another thread draws (the same draws, in the same order, from ``source``, which only
    that thread uses until they are done), and the cells are sorted as 32-bit integers when they
    fit (narrower sort keys, the same order). ``report`` receives the name of each stage (never a
    count): :func:`bounded_stages`, every one on every path."""
    with Stages(report, bounded_stages(k)) as say:
        say("reading user ids and cells")
        hist = _bounded_in_memory(con, table, k, cells, source, say)
        return hist if hist is not None else _bounded_in_duckdb(con, table, k, cells, source, say)


def _bounded_in_duckdb(con: Any, table: str, k: int, cells: int, source: RandomSource,
                       say: Callable[[str], None]) -> np.ndarray:
    """:func:`bounded_counts` by DuckDB's GROUP BY u and its sort by (u, cell), out of core."""
    say("counting records per user")
    counts = np.asarray(con.execute(f"SELECT count(*) AS c FROM {table} GROUP BY u ORDER BY u").fetchnumpy()["c"],
                        dtype=np.int64)
    hist = np.zeros(cells, dtype=np.int64)
    ends = np.cumsum(counts)
    heavy = np.flatnonzero(counts > k)

    def draw() -> np.ndarray:
        chosen = kept_positions(source, counts[heavy], k)  # heavy users in id order
        return ((ends[heavy] - counts[heavy])[:, None] + chosen).ravel()  # sorted: users, then ranks

    say(f"sorting the rows by user and cell; drawing which {k} record(s) each user keeps")
    cell_type = "INTEGER" if cells <= np.iinfo(np.int32).max + 1 else "BIGINT"  # cells are 0..cells-1
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dptree-draw") as pool:
        drawing = pool.submit(draw) if heavy.size else None
        rel = con.sql(f"SELECT CAST(leaf AS {cell_type}) AS leaf FROM {table} ORDER BY u, leaf")
        reader = next(getattr(rel, m) for m in ("to_arrow_reader", "fetch_arrow_reader", "fetch_record_batch")
                      if hasattr(rel, m))(STREAM_BATCH)  # the name differs across DuckDB versions
        batches = iter(reader)
        first = next(batches, None)  # DuckDB has sorted every row
        kept = drawing.result() if drawing is not None else np.zeros(0, dtype=np.int64)
    say("counting the kept records")
    light, off = counts <= k, 0
    for batch in itertools.chain([first] if first is not None else [], batches):
        leaf = batch.column(0).to_numpy()
        if leaf.size:
            hist += np.bincount(leaf[_kept_in_batch(off, leaf.size, ends, light, kept)], minlength=cells)
            off += leaf.size
    return hist
