"""From the caller's rows to the leaf counts of a public hierarchy, and the node weights w_u
(Ghazi et al. 2023, Problem 1.2).

In-memory tables (pandas, polars, Arrow) are counted through integer codes
(:mod:`dptree.data.codes`: each level dictionary-encoded once, one bincount of the combined
code); files, DuckDB relations and Spark DataFrames are aggregated by their engine
(:func:`dptree.data.histograms.path_counts`; integer weights summed exactly,
:mod:`dptree.data.weights`). Either way only the distinct paths come here: each level's distinct
labels are looked up once in the structure's sorted vocabulary, and the paths are walked down
the levels with integer keys (a dense table or a hash lookup per level), under the declared
``unknown`` policy. Lists and dicts of paths are turned into such a table first."""

from __future__ import annotations

from typing import Any, Iterable, Literal, Mapping, Sequence

import numpy as np

from dptree.data.codes import coded_counts, encode
from dptree.data.engines.base import COUNT
from dptree.data.engines.numpy import NumpyEngine
from dptree.data.histograms import engine_for, is_table, path_counts
from dptree.data.inputs import exact_frame
from dptree.data.weights import FLOAT_EXACT as _FLOAT_EXACT  # noqa: F401  (re-exported)
from dptree.data.weights import MAX_TOTAL, check_weights
from dptree.data.weights import too_large as _too_large  # noqa: F401  (re-exported)
from dptree.errors import DataError, InputFormatError, InvalidParameterError, TotalTooLargeError  # noqa: F401
from dptree.hierarchy.structure import Hierarchy, split_path

__all__ = ["leaf_counts", "coded_path_counts", "node_weights", "MAX_TOTAL", "UNKNOWN_POLICIES"]


def _as_label_array(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """(labels as str object array, null mask) for a pandas Series of distinct values. Integers
    (nullable ones too) are written exactly; a whole float as the integer it is, exactly at any
    size (through a Python int: an int64 cast would wrap values of 2^63 or more, with a warning
    that depends on the data)."""
    import pandas as pd

    s = pd.Series(values)
    null = s.isna().to_numpy()
    out = s.astype(str).to_numpy(dtype=object)
    if pd.api.types.is_float_dtype(s.dtype):
        v = s.to_numpy(dtype=np.float64, na_value=np.nan)
        integral = np.flatnonzero(np.isfinite(v) & (np.floor(v) == v))
        out[integral] = [str(int(x)) for x in v[integral].tolist()]
    return out, null


def _vocab_codes(codes: np.ndarray, values: Any, vocab: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index in the sorted ``vocab`` of each distinct path's label at one level, -1 when not in
    it; null mask) from the path's ``codes`` into the level column's distinct ``values``: each
    distinct value is labelled and looked up once, never one string per path or per row."""
    import pandas as pd

    labels, _ = _as_label_array(values)  # distinct values, none missing
    found = pd.Index(vocab).get_indexer(labels) if len(vocab) and len(labels) else np.full(len(labels), -1)
    null = codes < 0
    return np.where(null, -1, np.append(np.asarray(found, dtype=np.int64), -1)[codes]), null


def _add_at(out: np.ndarray, index: np.ndarray, values: np.ndarray) -> None:
    """out[index] += values, exactly, in int64 (callers check that every sum stays below
    :data:`MAX_TOTAL`). Never through float64 (np.bincount(weights=...) rounds above 2^53)."""
    np.add.at(out, np.asarray(index, dtype=np.int64), np.asarray(values, dtype=np.int64))


def _lookup(keys: np.ndarray, queries: np.ndarray, span: int) -> np.ndarray:
    """Position of each query in the distinct ``keys`` (all in [0, span)), -1 if absent: a dense
    table when ``span`` is not much larger than the arrays, else a hash lookup."""
    if span <= 8 * (keys.size + queries.size) + (1 << 16):
        table = np.full(span, -1, dtype=np.int64)
        table[keys] = np.arange(keys.size, dtype=np.int64)
        return table[queries]
    import pandas as pd

    return np.asarray(pd.Index(keys).get_indexer(queries), dtype=np.int64)


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
    how many records, which path or which label (docs/notes/privacy.md: errors are not a counting
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


#: per key column: the code of each distinct path (-1: missing) and the column's distinct values;
#: then the records (or weights) of each distinct path
Coded = tuple[list[np.ndarray], list[Any], np.ndarray]


def _frame_counts(data: Any, keys: list[str], weight: str | None) -> Coded:
    """Distinct paths of an in-memory table (pandas, polars, Arrow) through integer codes
    (:func:`dptree.data.codes.coded_counts`): one dictionary encoding per column, one bincount."""
    import pandas as pd

    frame = exact_frame(data, keys)  # integer labels stay exact, nulls or not
    if not isinstance(frame, pd.DataFrame):
        raise InputFormatError(f"path counts need a table with the level columns; got {type(data).__name__}")
    names = list(frame.columns)
    absent = [c for c in keys + ([weight] if weight else []) if c not in names]
    if absent:
        raise InputFormatError(f"data has no column(s) {absent}; it has {names}")
    twice = sorted({str(c) for c in keys + ([weight] if weight else []) if names.count(c) > 1})
    if twice:
        raise InputFormatError(f"data has duplicate column(s) {twice}; rename them first")
    w = None if weight is None else check_weights(frame[weight], weight)  # exact int64, total < MAX_TOTAL
    if len(frame) >= MAX_TOTAL:  # pragma: no cover - no table this large fits in memory
        raise _too_large(None)
    enc = [encode(frame[c]) for c in keys]
    codes, counts = coded_counts([c for c, _ in enc], [len(u) for _, u in enc], w)
    return codes, [u for _, u in enc], counts


def coded_path_counts(data: Any, levels: list[str], weight: str | None = None) -> Coded:
    """The exact records (or weights) per distinct path of the ``levels`` columns, coded
    (:data:`Coded`): what a hierarchy found from the data is selected and counted from. Not private."""
    return _path_counts(data, list(levels), weight, "error")


def _path_counts(data: Any, levels: list[str], weight: str | None, unknown: str) -> Coded:
    """Records (or weights) per distinct path: in-memory tables through integer codes; files,
    DuckDB relations and Spark DataFrames in their engine (the data stage,
    :func:`dptree.data.histograms.path_counts`); a list of paths or a dict {path: count} as a table."""
    import pandas as pd

    if is_table(data):
        if not isinstance(engine_for(data), NumpyEngine):
            g = path_counts(data, levels, weight=weight)  # one row per distinct path, aggregated by the engine
            enc = [encode(g[c]) for c in levels]
            return [c for c, _ in enc], [u for _, u in enc], g[COUNT].to_numpy(dtype=np.int64)
        return _frame_counts(data, levels, weight)
    if weight is not None:
        raise InvalidParameterError(
            "weight names a column of a table; a list of paths has none (a dict {path: count} carries its "
            "own weights): pass a DataFrame with the level columns and the weight column, or leave weight out"
        )
    if isinstance(data, Mapping):  # {path: count}
        cols = _paths_frame([split_path(p) for p in data.keys()], levels, unknown)
        cols["__weight__"] = list(data.values())
        keys = levels + ([_DEEP] if _DEEP in cols else [])
        return _frame_counts(pd.DataFrame(cols), keys, "__weight__")
    if isinstance(data, bytes) or not isinstance(data, Iterable):
        raise InputFormatError(
            "data must be a table with the level columns (pandas, polars, Arrow, DuckDB, Spark, or a CSV/Parquet "
            f"path), a list of paths ('US/CA/SF' or tuples), or a dict {{path: count}}; got {type(data).__name__}"
        )
    cols = _paths_frame([split_path(p) for p in data], levels, unknown)
    keys = levels + ([_DEEP] if _DEEP in cols else [])
    return _frame_counts(pd.DataFrame(cols, columns=keys), keys, None)


def leaf_counts(
    data: Any,
    hierarchy: Hierarchy,
    *,
    levels: Sequence[str] | None = None,
    weight: str | None = None,
    unknown: Literal["error", "drop", "other"] = "error",
) -> list[np.ndarray]:
    """Count records per leaf (x in N^leaves, Ghazi et al. 2023), as one array per level.

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
    paths, values, n = _path_counts(data, lv, weight, unknown)  # exact; every sum <= total < MAX_TOTAL
    m = n.size
    if m == 0:
        return x
    vocab, codes = h.vocab()
    node = np.zeros(m, dtype=np.int64)
    level = np.zeros(m, dtype=np.int64)
    ok = np.ones(m, dtype=bool)
    # ran past the deepest level (truncated): past a leaf, unknown below its deepest known node
    deep = np.asarray(values[-1], dtype=bool)[paths[-1]] if len(paths) > len(lv) else np.zeros(m, dtype=bool)
    ended = np.zeros(m, dtype=bool)
    for j in range(1, h.depth):
        code_all, null = _vocab_codes(paths[j - 1], values[j - 1], vocab[j])
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
        code = code_all[go]
        keys_j = np.asarray(h.parents[j], dtype=np.int64) * V + codes[j]
        pos = _lookup(keys_j, node[go] * V + np.maximum(code, 0), h.sizes[j - 1] * V)
        found = (code >= 0) & (pos >= 0)
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
            # deepest known ancestor = node reached; a leaf cannot have an 'other' child: go up one
            for j in range(h.depth):
                sel = np.flatnonzero(bad & (level == j))
                v = node[sel]
                up = h.is_leaf[j][v]
                tgt_level[sel[~up]], tgt_node[sel[~up]] = j + 1, other[j][v[~up]]
                if up.any():  # only below the root: the root is never a leaf
                    tgt_level[sel[up]], tgt_node[sel[up]] = j, other[j - 1][np.asarray(h.parents[j])[v[up]]]
            if (tgt_node[bad] < 0).any():  # pragma: no cover - every internal node has one by construction
                raise DataError("the hierarchy has an internal node without an 'other' leaf")
            level, node = tgt_level, tgt_node
    for j in range(h.depth):
        sel = level == j
        if sel.any():
            _add_at(x[j], node[sel], n[sel])
    return x


def node_weights(x: Sequence[np.ndarray], parents: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """w_u = sum of x over the leaves under u (Ghazi et al. 2023, Problem 1.2), bottom-up per level."""
    L = len(x)
    w = [np.asarray(a, dtype=np.int64).copy() for a in x]
    for j in range(L - 1, 0, -1):  # exact int64 sums (the total is < MAX_TOTAL)
        _add_at(w[j - 1], np.asarray(parents[j]), w[j])
    return w


