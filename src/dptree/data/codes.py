"""Records per distinct combination of table columns, through integer codes.

Each column is dictionary-encoded once (:func:`encode`: Arrow's dictionary encoding for Arrow
strings, the categories of a categorical, ``pandas.factorize`` otherwise), the codes of a row are
combined into one integer (mixed radix) and the combined codes are counted with one
``np.bincount`` (or hashed first when their range is much larger than the data). Only the
distinct values of each column and the distinct combinations come out: the caller works on
those, never on one Python object per row. Exact: counts and integer weights are summed in
int64 (callers bound the total below :data:`dptree.data.weights.MAX_TOTAL`). Not private.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from dptree.errors import DataError

__all__ = ["encode", "coded_counts"]

#: a combined code must stay below this (int64 with headroom for one more radix step)
_KEY_LIMIT = 1 << 62


def encode(values: Any) -> tuple[np.ndarray, Any]:
    """(code per row, int64, -1 for a missing value; the distinct values) of one column (a pandas
    Series or anything ``pandas.Series`` accepts). Missing: None, NaN, NA (``pandas.isna``)."""
    import pandas as pd

    s = values if isinstance(values, pd.Series) else pd.Series(values)
    if isinstance(s.dtype, pd.CategoricalDtype):
        return s.cat.codes.to_numpy(dtype=np.int64), s.cat.categories
    try:
        codes, uniques = pd.factorize(s)
    except TypeError:  # unhashable entries: dicts, lists, arrays (a struct, list or map column)
        raise DataError("a column holds nested values (structs, lists, maps) or other objects that are not labels; "
                        "use plain columns of text or numbers (write the field you need into a column of its own "
                        "first)") from None
    return np.asarray(codes, dtype=np.int64), uniques


def coded_counts(codes: Sequence[np.ndarray], sizes: Sequence[int],
                 weight: np.ndarray | None = None) -> tuple[list[np.ndarray], np.ndarray]:
    """(the codes of each distinct combination, one array per column; its records, or its sum of
    the int64 ``weight``) for per-row ``codes`` (-1 missing) of columns with ``sizes`` distinct
    values. Combinations come out in an unspecified order; missing values are kept (code -1)."""
    import pandas as pd

    n = codes[0].size if len(codes) else 0
    key = np.zeros(n, dtype=np.int64)
    span = 1
    radix: list[int] = []
    prefix: list[np.ndarray | None] = []  # distinct prefix keys where the key was re-densified
    for c, size in zip(codes, sizes):
        r = int(size) + 1  # 0: missing
        dense = None
        if span * r >= _KEY_LIMIT:  # densify the prefix first (as pandas' groupby does): stays exact
            key, dense = pd.factorize(key)
            key = np.asarray(key, dtype=np.int64)
            span = int(dense.size)
        key *= r
        key += c
        key += 1
        span *= r
        radix.append(r)
        prefix.append(None if dense is None else np.asarray(dense, dtype=np.int64))
    if span <= 4 * n + (1 << 16):  # dense range: one bincount, no hashing
        if weight is None:
            total = np.bincount(key, minlength=span)
        else:
            total = np.zeros(span, dtype=np.int64)
            np.add.at(total, key, weight)
        distinct = np.flatnonzero(total)
        if weight is not None:  # weight-0 groups still exist; keep the combinations that occur
            seen = np.zeros(span, dtype=bool)
            seen[key] = True
            distinct = np.flatnonzero(seen)
        counts = total[distinct].astype(np.int64)
    else:
        ids, distinct = pd.factorize(key)
        ids = np.asarray(ids, dtype=np.int64)
        distinct = np.asarray(distinct, dtype=np.int64)
        if weight is None:
            counts = np.bincount(ids, minlength=distinct.size).astype(np.int64)
        else:
            counts = np.zeros(distinct.size, dtype=np.int64)
            np.add.at(counts, ids, weight)
    out: list[np.ndarray] = [np.empty(0)] * len(radix)
    rest = distinct
    for j in range(len(radix) - 1, -1, -1):  # decode, last column first
        rest, digit = np.divmod(rest, radix[j])
        out[j] = digit - 1
        dense_j = prefix[j]
        if dense_j is not None:
            rest = dense_j[rest]
    return out, counts
