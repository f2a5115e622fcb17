"""From the caller's rows to the leaf counts of a public hierarchy, and the node weights w_u
(seed 001, Problem 1.2).

The data stage counts the rows per distinct path (:func:`dptree.data.histograms.path_counts`:
pandas, polars and Arrow in memory, files and DuckDB relations in DuckDB, Spark DataFrames in
Spark; integer weights summed exactly, :mod:`dptree.data.weights`). This module turns lists and
dicts of paths into such a table, maps each distinct path to its leaf of the hierarchy under the
declared ``unknown`` policy, and sums the node weights.
"""

from __future__ import annotations

from typing import Any, Iterable, Literal, Mapping, Sequence

import numpy as np

from dptree.data.engines.base import COUNT
from dptree.data.histograms import is_table, path_counts
from dptree.data.weights import FLOAT_EXACT as _FLOAT_EXACT  # noqa: F401  (re-exported)
from dptree.data.weights import MAX_TOTAL
from dptree.data.weights import too_large as _too_large  # noqa: F401  (re-exported)
from dptree.errors import DataError, InputFormatError, InvalidParameterError, TotalTooLargeError  # noqa: F401
from dptree.hierarchy.structure import Hierarchy, split_path

__all__ = ["leaf_counts", "node_weights", "MAX_TOTAL", "UNKNOWN_POLICIES"]


def _as_label_array(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """(labels as str object array, null mask) for a pandas Series."""
    import pandas as pd

    s = pd.Series(values)
    null = s.isna().to_numpy()
    if pd.api.types.is_float_dtype(s.dtype):
        v = s.to_numpy()
        integral = np.isfinite(v) & (np.floor(v) == v)
        out = np.where(
            integral,
            np.char.mod("%d", np.where(integral, v, 0).astype(np.int64)).astype(object),
            s.astype(str).to_numpy(),
        )
        return np.asarray(out, dtype=object), null
    return s.astype(str).to_numpy(dtype=object), null


def _add_at(out: np.ndarray, index: np.ndarray, values: np.ndarray) -> None:
    """out[index] += values, exactly, in int64 (callers check that every sum stays below
    :data:`MAX_TOTAL`). Never through float64 (np.bincount(weights=...) rounds above 2^53)."""
    np.add.at(out, np.asarray(index, dtype=np.int64), np.asarray(values, dtype=np.int64))


_DEEP = "__deep__"  # internal column: the row's path ran deeper than the hierarchy (truncated)

UNKNOWN_POLICIES = ("error", "drop", "other")


def _unknown_hint() -> str:
    return (
        "fix the data or the public structure, or declare a policy for such records: "
        "unknown='drop' leaves them out, unknown='other' counts them in the 'other' leaf of their "
        "deepest known ancestor (build the hierarchy with other='(other)'); "
        "CLI: --unknown drop, or --other '(other)' --unknown other"
    )


def _unknown_error(what: str) -> DataError:
    """The data-dependent refusal of unknown="error": says what kind of path was found, never
    how many records, which path or which label (docs/privacy.md: errors are not a counting
    oracle)."""
    return DataError(f"some records {what}; {_unknown_hint()}")


def _paths_frame(paths: list[tuple[str, ...]], levels: Sequence[str], unknown: str) -> dict[str, Any]:
    width = len(levels)
    deep = [len(p) > width for p in paths]
    cols: dict[str, Any] = {lev: [p[j] if j < len(p) else None for p in paths] for j, lev in enumerate(levels)}
    if any(deep):
        if unknown == "error":
            raise _unknown_error("name a path deeper than the hierarchy")
        cols[_DEEP] = deep
    return cols


def _path_counts(data: Any, levels: list[str], weight: str | None, unknown: str) -> Any:
    """Records (or weights) per distinct path, through the data stage: tables, files, DuckDB
    relations and Spark DataFrames directly; a list of paths or a dict {path: count} as a table."""
    import pandas as pd

    if is_table(data):
        return path_counts(data, levels, weight=weight)
    if weight is not None:
        raise InvalidParameterError(
            "weight names a column of a table; a list of paths has none (a dict {path: count} carries its "
            "own weights): pass a DataFrame with the level columns and the weight column, or leave weight out"
        )
    if isinstance(data, Mapping):  # {path: count}
        cols = _paths_frame([split_path(p) for p in data.keys()], levels, unknown)
        cols["__weight__"] = list(data.values())
        keys = levels + ([_DEEP] if _DEEP in cols else [])
        return path_counts(pd.DataFrame(cols), keys, weight="__weight__")
    if isinstance(data, bytes) or not isinstance(data, Iterable):
        raise InputFormatError(
            "data must be a table with the level columns (pandas, polars, Arrow, DuckDB, Spark, or a CSV/Parquet "
            f"path), a list of paths ('US/CA/SF' or tuples), or a dict {{path: count}}; got {type(data).__name__}"
        )
    cols = _paths_frame([split_path(p) for p in data], levels, unknown)
    keys = levels + ([_DEEP] if _DEEP in cols else [])
    return path_counts(pd.DataFrame(cols, columns=keys), keys)


def leaf_counts(
    data: Any,
    hierarchy: Hierarchy,
    *,
    levels: Sequence[str] | None = None,
    weight: str | None = None,
    unknown: Literal["error", "drop", "other"] = "error",
) -> list[np.ndarray]:
    """Count records per leaf (seed 001's x in N^leaves), as one array per level.

    Exact and NOT private: this is the input of the mechanism (and of tests and metrics); never
    publish its output. Rows name a leaf through their level columns (one record each) or carry
    a ``weight`` column of non-negative integer counts, summed exactly in integers (totals of
    :data:`MAX_TOTAL` or more raise :class:`TotalTooLargeError`).

    A row whose path is not a leaf of the hierarchy (unknown label, path ending at an internal
    node, path running past a leaf, empty level followed by a label) is handled by the declared
    policy ``unknown``: "error" (default) refuses, without saying how many rows or which paths;
    "drop" leaves the row out; "other" counts it for the "other" leaf under its deepest known
    ancestor (the hierarchy must have been built with ``other=...``). "drop" and "other" act on
    each record alone, so neighboring datasets stay neighboring and the sensitivity is
    unchanged. Internal nodes get 0.
    """
    import pandas as pd

    h = hierarchy
    lv: list[str] = list(h.levels if levels is None else levels)
    if len(lv) != h.depth - 1:
        raise InvalidParameterError(
            f"the hierarchy has {h.depth - 1} levels below the root but {len(lv)} level columns were given"
        )
    if unknown not in UNKNOWN_POLICIES:
        raise InvalidParameterError(f"unknown must be one of {UNKNOWN_POLICIES}, got {unknown!r}")
    if unknown == "other" and h.other is None:
        raise InvalidParameterError(
            "unknown='other' needs a hierarchy with 'other' leaves: build it with other='(other)'"
        )
    x = [np.zeros(s, dtype=np.int64) for s in h.sizes]
    g = _path_counts(data, lv, weight, unknown)  # exact; every sum <= total < MAX_TOTAL
    if len(g) == 0:
        return x
    n = g[COUNT].to_numpy(dtype=np.int64)
    m = len(g)
    vocab, codes = h.vocab()
    node = np.zeros(m, dtype=np.int64)
    level = np.zeros(m, dtype=np.int64)
    ok = np.ones(m, dtype=bool)
    # ran past the deepest level (truncated): past a leaf, unknown below its deepest known node
    deep = g[_DEEP].to_numpy(dtype=bool) if _DEEP in g.columns else np.zeros(m, dtype=bool)
    ended = np.zeros(m, dtype=bool)
    for j in range(1, h.depth):
        lab, null = _as_label_array(g[lv[j - 1]])
        gap = ended & ~null
        if gap.any():
            if unknown == "error":
                raise _unknown_error("have an empty level followed by a label (only trailing levels may be empty)")
            ok[gap] = False  # stays at the node reached before the gap
        ended |= null
        go = np.flatnonzero(ok & ~ended)
        if go.size == 0:
            continue
        leaf_here = h.is_leaf[j - 1][node[go]]
        ok[go[leaf_here]] = False  # deeper than a leaf: unknown below the leaf
        go = go[~leaf_here]
        V = max(len(vocab[j]), 1)
        code = pd.Index(vocab[j]).get_indexer(lab[go]) if len(vocab[j]) else np.full(go.size, -1)
        keys_j = np.asarray(h.parents[j], dtype=np.int64) * V + codes[j]
        key = node[go] * V + np.maximum(code, 0)
        pos = np.minimum(np.searchsorted(keys_j, key), keys_j.size - 1)
        found = (code >= 0) & (keys_j[pos] == key)
        ok[go[~found]] = False
        node[go[found]] = pos[found]
        level[go[found]] = j
    at_leaf = np.zeros(m, dtype=bool)
    for j in range(h.depth):
        sel = level == j
        at_leaf[sel] = h.is_leaf[j][node[sel]]
    bad = ~(ok & at_leaf) | deep
    if bad.any():
        if unknown == "error":
            raise _unknown_error("name a path that is not a leaf of the public hierarchy")
        if unknown == "drop":
            keep = ~bad
            level, node, n = level[keep], node[keep], n[keep]
        else:
            other = h.other_leaf()
            tgt_level = level.copy()
            tgt_node = node.copy()
            idx = np.flatnonzero(bad)
            # deepest known ancestor = node reached; a leaf cannot have an 'other' child: go up one
            for i in idx.tolist():
                j, v = int(level[i]), int(node[i])
                if h.is_leaf[j][v]:
                    v, j = int(h.parents[j][v]), j - 1  # type: ignore[index]
                o = int(other[j][v])
                if o < 0:  # pragma: no cover - every internal node has one by construction
                    raise DataError("the hierarchy has an internal node without an 'other' leaf")
                tgt_level[i], tgt_node[i] = j + 1, o
            level, node = tgt_level, tgt_node
    for j in range(h.depth):
        sel = level == j
        if sel.any():
            _add_at(x[j], node[sel], n[sel])
    return x


def node_weights(x: Sequence[np.ndarray], parents: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """w_u = sum of x over the leaves under u (seed 001, Problem 1.2), bottom-up per level."""
    L = len(x)
    w = [np.asarray(a, dtype=np.int64).copy() for a in x]
    for j in range(L - 1, 0, -1):  # exact int64 sums (the total is < MAX_TOTAL)
        _add_at(w[j - 1], np.asarray(parents[j]), w[j])
    return w


