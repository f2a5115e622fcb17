"""From the caller's rows to the leaf counts of a public hierarchy (exact integer weights, the
``unknown`` policy, pandas, DuckDB files and Spark), and the node weights w_u (seed 001, Problem 1.2)."""

from __future__ import annotations

import math
from typing import Any, Iterable, Literal, Mapping, Sequence

import numpy as np

from dptree.errors import DataError, InputFormatError, InvalidParameterError, TotalTooLargeError
from dptree.hierarchy.structure import Hierarchy, split_path


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


#: Exclusive upper bound on the total weight (number of records) a hierarchy release accepts.
#: Node counts and noisy measurements are int64 (exact below 2^63); the discrete Laplace and
#: Gaussian samplers return magnitudes below 2^62 on their fast path, and release files accept
#: measurements |y| < 2^62 (:func:`_check_noise`). A total below 2^61 leaves room for any noise
#: draw below 2^61 (probability 1 - exp(-2^61/scale)); a larger draw is refused from the noisy
#: value alone (post-processing). It is a public constant: the guarantee covers datasets whose
#: total weight is below it, and the refusal never states the total.
MAX_TOTAL = 2**61

#: Float weights are accepted only up to 2^53, where every integer is a float64 value: a float
#: above it may already be the rounding of a different integer.
_FLOAT_EXACT = 2**53


def _too_large(name: str | None) -> TotalTooLargeError:
    what = f"the weights in column {name!r}" if name else "the records"
    return TotalTooLargeError(
        f"{what} add up to 2^61 or more, more than hierarchy counts can add noise to exactly "
        "(node counts and noisy measurements are 64-bit integers; the limit is dptree.hierarchy.release.MAX_TOTAL); "
        "split the data or rescale the unit of a record"
    )


def _exact_total(v: np.ndarray) -> int:
    """Exact sum (a Python int) of non-negative int64 values < 2^63, without overflow: high and
    low 32-bit halves are summed separately in int64 (each sum < 2^62 for up to 2^30 rows)."""
    total = 0
    step = 1 << 30
    for s in range(0, v.size, step):
        c = v[s : s + step]
        total += (int(np.sum(c >> 32, dtype=np.int64)) << 32) + int(np.sum(c & 0xFFFFFFFF, dtype=np.int64))
    return total


def _add_at(out: np.ndarray, index: np.ndarray, values: np.ndarray) -> None:
    """out[index] += values, exactly, in int64 (callers check that every sum stays below
    :data:`MAX_TOTAL`). Never through float64 (np.bincount(weights=...) rounds above 2^53)."""
    np.add.at(out, np.asarray(index, dtype=np.int64), np.asarray(values, dtype=np.int64))


def _weight_error(name: str, problem: str) -> DataError:
    return DataError(
        f"weight column {name!r} must hold non-negative integer counts: it has {problem}; "
        "fix or drop those rows first (a weight is a number of records)"
    )


def _object_weights(values: np.ndarray, name: str) -> np.ndarray:
    """Exact Python integers of an object column (ints of any size, integral floats up to
    2^53, integral Decimals); raises without showing any value."""
    from decimal import Decimal

    out = np.empty(values.size, dtype=object)
    for i, x in enumerate(values.tolist()):
        if x is None or (isinstance(x, float) and x != x):
            raise _weight_error(name, "missing values")
        if isinstance(x, (bool, np.bool_)):
            raise _weight_error(name, "true/false values")
        if isinstance(x, (int, np.integer)):
            out[i] = int(x)
        elif isinstance(x, (float, np.floating)):
            out[i] = _float_weight(float(x), name)
        elif isinstance(x, Decimal):
            if not x.is_finite():
                raise _weight_error(name, "non-finite values")
            if x != x.to_integral_value():
                raise _weight_error(name, "non-integer values")
            out[i] = int(x)
        else:
            try:
                import pandas as pd

                if pd.isna(x):
                    raise _weight_error(name, "missing values")
            except (TypeError, ValueError):
                pass
            raise _weight_error(name, "values that are not numbers")
    return out


def _float_weight(f: float, name: str) -> int:
    if not math.isfinite(f):
        raise _weight_error(name, "non-finite values")
    if f != math.floor(f):
        raise _weight_error(name, "non-integer values")
    if f > _FLOAT_EXACT:
        raise _weight_error(name, "float values above 2^53, which are not exact integers (pass an integer column)")
    return int(f)


def _check_weights(w: Any, name: str) -> np.ndarray:
    """Weights as exact int64 counts: integer columns of any width, integral floats up to 2^53,
    Python ints / Decimals in object columns. Refuses missing, negative, non-integer and
    non-finite weights, and (:class:`TotalTooLargeError`) totals of :data:`MAX_TOTAL` or more.
    No message contains a count or a value."""
    import pandas as pd

    s = pd.Series(w)
    if pd.api.types.is_bool_dtype(s.dtype):
        raise _weight_error(name, "true/false values")
    if s.isna().any():
        raise _weight_error(name, "missing values")
    if pd.api.types.is_integer_dtype(s.dtype):
        v = s.to_numpy()
        if v.dtype.kind == "i" and (v < 0).any():
            raise _weight_error(name, "negative values")
        if v.size and v.max() >= MAX_TOTAL:  # unsigned values above 2^63 never reach int64
            raise _too_large(name)
        v = v.astype(np.int64)
    elif pd.api.types.is_float_dtype(s.dtype):
        f = s.to_numpy(dtype=np.float64)
        if not np.isfinite(f).all():
            raise _weight_error(name, "non-finite values")
        if (f < 0).any():
            raise _weight_error(name, "negative values")
        if (np.floor(f) != f).any():
            raise _weight_error(name, "non-integer values")
        if f.size and f.max() > _FLOAT_EXACT:
            raise _weight_error(name, "float values above 2^53, which are not exact integers (pass an integer column)")
        v = f.astype(np.int64)
    elif s.dtype == object:
        ints = _object_weights(s.to_numpy(dtype=object), name)
        if any(x < 0 for x in ints):
            raise _weight_error(name, "negative values")
        if any(x >= MAX_TOTAL for x in ints):
            raise _too_large(name)
        v = ints.astype(np.int64)
    else:
        raise _weight_error(name, "values that are not numbers")
    if _exact_total(v) >= MAX_TOTAL:
        raise _too_large(name)
    return v


def _spark_weight_column(df: Any, weight: str) -> Any:
    """The weight column as an exact DecimalType(38, 0) Spark column, after refusing (without
    counts or values) missing, negative, non-integer, non-finite and inexact float weights."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    dtype = df.schema[weight].dataType
    w = F.col(weight)
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        checks = [("missing values", w.isNull()), ("negative values", w < 0)]
    elif isinstance(dtype, T.DecimalType):
        checks = [("missing values", w.isNull()), ("negative values", w < 0), ("non-integer values", w != F.floor(w))]
    elif isinstance(dtype, (T.FloatType, T.DoubleType)):
        checks = [
            ("missing values", w.isNull()),
            ("non-finite values", F.isnan(w) | (F.abs(w) == float("inf"))),
            ("negative values", w < 0),
            ("non-integer values", w != F.floor(w)),
            ("float values above 2^53, which are not exact integers (pass an integer column)", w > float(_FLOAT_EXACT)),
        ]
    else:
        raise _weight_error(weight, "values that are not numbers (the column type is not numeric)")
    for problem, cond in checks:
        if df.filter(cond).limit(1).count():
            raise _weight_error(weight, problem)
    return w.cast(T.DecimalType(38, 0))


def _spark_leaf_totals(df: Any, levels: Sequence[str], weight: str | None) -> Any:
    """Records (or summed weights) per distinct path, aggregated inside Spark: only these
    per-path totals reach the driver, never the rows. Weights are summed exactly as
    DecimalType(38, 0) (a long sum would wrap, a double sum round above 2^53)."""
    from pyspark.sql import functions as F

    missing = [c for c in list(levels) + ([weight] if weight else []) if c not in df.columns]
    if missing:
        raise InputFormatError(f"Spark DataFrame has no column(s) {missing}; it has {list(df.columns)}")
    if weight is None:
        agg = df.groupBy(*levels).agg(F.count(F.lit(1)).alias("__weight__"))
    else:
        agg = df.groupBy(*levels).agg(F.sum(_spark_weight_column(df, weight)).alias("__weight__"))
    pdf = agg.toPandas()
    # exact Python ints (Decimal -> int); _check_weights then refuses totals >= MAX_TOTAL
    pdf["__weight__"] = np.asarray([int(v) for v in pdf["__weight__"].tolist()], dtype=object)
    return pdf


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


def _to_frame(
    data: Any, levels: Sequence[str], weight: str | None, unknown: str = "error"
) -> tuple[Any, str | None]:
    """Normalise the accepted data forms to a DataFrame with the level columns (+ weight)."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data, weight
    from dptree.data.engines.spark import _is_spark_df

    if _is_spark_df(data):
        return _spark_leaf_totals(data, levels, weight), "__weight__"
    if type(data).__module__.split(".")[0] in ("duckdb", "_duckdb") and hasattr(data, "df"):
        return data.df(), weight  # a DuckDB relation is a table (it was read as a list of paths)
    if weight is not None and (isinstance(data, Mapping) or not hasattr(data, "to_pandas")):
        raise InvalidParameterError(
            "weight names a column of a table; a list of paths has none (a dict {path: count} carries its "
            "own weights): pass a DataFrame with the level columns and the weight column, or leave weight out"
        )
    if isinstance(data, Mapping):  # {path: count}
        cols = _paths_frame([split_path(p) for p in data.keys()], levels, unknown)
        cols["__weight__"] = list(data.values())
        return pd.DataFrame(cols), "__weight__"
    if hasattr(data, "to_pandas"):  # pyarrow / polars / duckdb relation
        return data.to_pandas(), weight
    if isinstance(data, (str, bytes)) or not isinstance(data, Iterable):
        raise InputFormatError(
            "data must be a pandas DataFrame with the level columns, a list of paths "
            f"('US/CA/SF' or tuples), or a dict {{path: count}}; got {type(data).__name__}"
        )
    cols = _paths_frame([split_path(p) for p in data], levels, unknown)
    return pd.DataFrame(cols, columns=list(levels) + ([_DEEP] if _DEEP in cols else [])), None


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
    each record alone, so neighbouring datasets stay neighbouring and the sensitivity is
    unchanged. Internal nodes get 0.
    """
    import pandas as pd

    h = hierarchy
    lv = list(h.levels if levels is None else levels)
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
    frame, wcol = _to_frame(data, lv, weight, unknown)
    missing = [c for c in lv + ([wcol] if wcol else []) if c not in frame.columns]
    if missing:
        raise InputFormatError(f"data has no column(s) {missing}; it has {list(frame.columns)}")
    x = [np.zeros(s, dtype=np.int64) for s in h.sizes]
    if len(frame) == 0:
        return x
    keys = lv + ([_DEEP] if _DEEP in frame.columns else [])
    if wcol is not None:
        wts = _check_weights(frame[wcol], wcol)  # exact int64, total < MAX_TOTAL
        sub = frame[keys].copy()
        sub["__n__"] = wts
        g = sub.groupby(keys, sort=False, dropna=False, observed=True)["__n__"].sum().reset_index()
    else:
        if len(frame) >= MAX_TOTAL:  # pragma: no cover - no table this large fits in memory
            raise _too_large(None)
        g = frame.groupby(keys, sort=False, dropna=False, observed=True).size().reset_index(name="__n__")
    n = g["__n__"].to_numpy(dtype=np.int64)  # every group sum <= total < MAX_TOTAL: exact
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


