"""The DuckDB engine's contribution bounding in its straightforward form (window functions):
a test oracle only. ``bounded_counts`` in :mod:`dptree.data.engines.duckdb` must give the
identical histogram for the same random source (tests/unit/data/test_bounding.py)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dptree.data.bounding import kept_positions
from dptree.noise import RandomSource

#: rows per batch of the sorted stream
BATCH = 1 << 20


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


def bounded_counts_oracle(con: Any, table: str, k: int, cells: int, source: RandomSource,
                   report: Callable[[str], None] | None = None) -> np.ndarray:
    """Counts per cell of ``table(u, leaf)`` (a table or a parenthesised query) after keeping at
    most k rows per user u (:mod:`dptree.data.bounding`): rows of a user ranked by cell, users
    above k in id order draw their ranks. Two queries and no window: the records of every user in
    id order (numbers without ids), then the rows sorted by (user, cell), streamed in batches of
    cells only; a row's global rank in that order is its user's start plus its rank inside the
    user, so the drawn ranks select rows without a per-user window. ``report`` receives the
    name of each stage (never a count)."""
    say = report or (lambda msg: None)
    say("counting records per user")
    counts = np.asarray(con.execute(f"SELECT count(*) AS c FROM {table} GROUP BY u ORDER BY u").fetchnumpy()["c"],
                        dtype=np.int64)
    hist = np.zeros(cells, dtype=np.int64)
    if counts.size == 0:
        return hist
    ends = np.cumsum(counts)
    heavy = np.flatnonzero(counts > k)
    kept = np.zeros(0, dtype=np.int64)
    if heavy.size:
        say(f"drawing which {k} record(s) each user keeps")
        chosen = kept_positions(source, counts[heavy], k)  # heavy users in id order
        kept = ((ends[heavy] - counts[heavy])[:, None] + chosen).ravel()  # sorted: users, then ranks
    say("counting the kept records")
    rel = con.sql(f"SELECT leaf FROM {table} ORDER BY u, leaf")
    reader = next(getattr(rel, m) for m in ("to_arrow_reader", "fetch_arrow_reader", "fetch_record_batch")
                  if hasattr(rel, m))(BATCH)  # the name differs across DuckDB versions
    light, off = counts <= k, 0
    for batch in reader:
        leaf = np.asarray(batch.column(0).to_numpy(), dtype=np.int64)
        if leaf.size:
            hist += np.bincount(leaf[_kept_in_batch(off, leaf.size, ends, light, kept)], minlength=cells)
            off += leaf.size
    return hist
