"""One API for the data-touching step: the leaf histogram(s) of any input, in the right engine.

:func:`leaf_histogram` takes arrays and columns of in-memory tables (through
:func:`dptree.data.inputs.to_numpy`, numpy engine), CSV/Parquet file paths (DuckDB engine) or PySpark
DataFrames (Spark engine), optionally bounds each user's contributions (``user_id``) and splits by
a public list of groups (``by``/``groups``), and returns what ``plan.release`` (or
:func:`dptree.rangetree.groupby.release_groups`) needs. The three engines give identical results for the
same ``rng`` (tested), so the choice of engine never changes what is released.
"""

from __future__ import annotations

import os
from typing import Any, Sequence, cast

import numpy as np

from dptree import noise as _noise
from dptree.errors import DataError, InvalidParameterError

__all__ = ["leaf_histogram"]


def _engine(data: Any) -> str:
    if isinstance(data, (str, os.PathLike)):
        return "file"
    mod = type(data).__module__
    if mod.startswith("pyspark.sql") and hasattr(data, "selectExpr"):
        return "spark"
    return "numpy"


def _column_of(data: Any, ref: Any, what: str) -> Any:
    """A column given by name (taken from ``data``) or directly as array-like."""
    from dptree.data.inputs import to_numpy

    if isinstance(ref, str):
        return to_numpy(data, column=ref, name=what)
    return ref


def leaf_histogram(
    data: Any,
    plan: Any,
    *,
    column: str | None = None,
    user_id: Any = None,
    by: Any = None,
    groups: Sequence[Any] | None = None,
    unknown: str = "error",
    missing: str = "error",
    rng: _noise.RngLike = None,
    fmt: str | None = None,
) -> np.ndarray:
    """Leaf histogram of ``data`` for ``plan``: shape (padded_size,), or (len(groups), padded_size)
    with ``by``.

    ``data``: an array-like (``column`` must be None), a table with ``column`` (pandas, polars,
    Arrow, DuckDB relation), a CSV/Parquet path with ``column``, or a PySpark DataFrame with
    ``column``. ``user_id`` and ``by`` are column names of ``data`` or (for in-memory data)
    arrays. With ``user_id``, at most ``plan.max_contributions`` records per user are kept,
    chosen uniformly at random (:mod:`dptree.data.bounding`).
    """
    engine = _engine(data)
    if (by is None) != (groups is None):
        raise InvalidParameterError("by and groups go together: by= names the column, groups= lists the public groups")
    plan.check_public_total(user_id=user_id, missing=missing, by=by)
    src = cast(_noise.RngLike, _noise.make_source(rng))  # pass a source to share it with plan.release
    gs: Sequence[Any] = groups if groups is not None else []
    if engine in ("file", "spark"):
        where = "a file" if engine == "file" else "a Spark DataFrame"
        if not isinstance(column, str):
            raise InvalidParameterError(f"for {where}, pass column='name' (the column to release)")
        for name, ref in (("user_id", user_id), ("by", by)):
            if ref is not None and not isinstance(ref, str):
                raise InvalidParameterError(f"for {where}, {name} must be a column name")
        if engine == "file":
            path = os.fspath(data)
            if by is not None:
                from dptree.rangetree.groupby import file_grouped_histograms

                return file_grouped_histograms(path, column, by, plan, groups=gs,
                                               unknown=unknown, user_column=user_id, missing=missing,
                                               rng=src, fmt=fmt)
            if user_id is not None:
                from dptree.data.bounding import file_bounded_histogram

                return file_bounded_histogram(path, column, user_id, plan, missing=missing,
                                              rng=src, fmt=fmt)
            from dptree.data.engines.duckdb import file_leaf_histogram

            return file_leaf_histogram(path, column, plan.domain, plan.layout.padded_size, missing=missing, fmt=fmt)
        from dptree.data.engines import spark as sb

        if by is not None:
            return sb.spark_grouped_histograms(data, column, by, plan, groups=gs, unknown=unknown,
                                               user_column=user_id, missing=missing, rng=src)
        if user_id is not None:
            return sb.spark_bounded_histogram(data, column, user_id, plan, missing=missing,
                                              rng=src)
        return sb.spark_leaf_histogram(data, column, plan, missing=missing)
    if fmt is not None:
        raise InvalidParameterError("fmt applies to files only")
    from dptree.data.inputs import to_numpy

    values = to_numpy(data, column=column, name="values")
    users = _column_of(data, user_id, "user_id") if user_id is not None else None
    if isinstance(user_id, str) and column is None:
        raise DataError("user_id names a column: pass the table as data and column='...' for the values")
    if by is not None:
        from dptree.rangetree.groupby import grouped_histograms

        return grouped_histograms(values, _column_of(data, by, "by"), plan, groups=gs,
                                  unknown=unknown, user_ids=users, missing=missing, rng=src)
    if users is not None:
        from dptree.data.bounding import bounded_histogram

        return bounded_histogram(values, users, plan, missing=missing, rng=src)
    from dptree.data.domain import coerce_values

    return bin_values(plan, coerce_values(values, plan.domain, missing=missing))


_BIN_CHUNK = 1 << 21


def bin_values(plan: Any, values: np.ndarray) -> np.ndarray:
    """Bucket counts of validated ``values``, binned in chunks so that the clamped copy of the
    input never exists at full size (extra memory ~16 bytes x 2^21, not 16 bytes per value)."""
    size = plan.layout.padded_size
    if values.size <= _BIN_CHUNK:
        return np.bincount(plan.domain.to_leaves(values), minlength=size).astype(np.int64)
    hist = np.zeros(size, dtype=np.int64)
    for start in range(0, values.size, _BIN_CHUNK):
        hist += np.bincount(plan.domain.to_leaves(values[start : start + _BIN_CHUNK]), minlength=size)
    return hist
