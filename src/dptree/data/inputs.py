"""One entry point for in-memory data: :func:`to_numpy` turns any supported input into a 1-D array.

Supported: numpy arrays (masked arrays too), lists and tuples, pandas Series and DataFrame columns
(nullable ``Int64``/``Float64``/``string``/``boolean`` dtypes included), polars Series and
DataFrame columns, pyarrow Arrays, ChunkedArrays, Tables and RecordBatches, and DuckDB relations.
Tables need ``column=``. Nothing here is private-data dependent in what it *releases*: it only
changes the container. Missing entries become NaN (floats, and integers that fit a float exactly),
NaT (dates) or None (everything else), which the domain then rejects or drops as the caller asked.

Zero-copy where the format allows: numpy arrays are returned as they are; pandas, polars and
single-chunk Arrow numeric data without nulls are viewed, not copied (tested with
``np.shares_memory``).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any, Sequence, cast

import numpy as np

from dptree._validation import InstanceOf, require, validate_params
from dptree.errors import DataError, InvalidParameterError, check_invalid

__all__ = ["to_numpy", "declared_kind", "as_declared", "present", "refuse_untyped", "value_kind", "exact_frame",
           "valid_records"]

_FLOAT_EXACT = 2**53


def _type_path(obj: Any) -> str:
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}"


def _ints_with_nulls(filled: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Integers with missing entries: float64 + NaN when exact, else an object array with None."""
    if filled.size == 0 or int(np.abs(filled[~mask]).max(initial=0)) < _FLOAT_EXACT:
        out = filled.astype(np.float64)
        out[mask] = np.nan
        return out
    obj = filled.astype(object)
    obj[mask] = None
    return obj


def _check_1d(arr: np.ndarray, name: str) -> np.ndarray:
    if arr.ndim == 0:
        raise DataError(f"{name} must be a one-dimensional array, got a scalar")
    if arr.ndim != 1:
        raise DataError(f"{name} must be one-dimensional, got a {arr.ndim}-dimensional array; pass one column")
    return arr


def _from_arrow(arr: Any, name: str) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(arr, pa.ChunkedArray) and arr.num_chunks == 1:
        arr = arr.chunk(0)
    typ = arr.type
    if pa.types.is_dictionary(typ):
        arr = arr.cast(typ.value_type) if isinstance(arr, pa.Array) else pc.cast(arr, typ.value_type)
        typ = arr.type
    nulls = arr.null_count
    if pa.types.is_integer(typ) and nulls:
        mask = np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        filled = np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False))  # uint64 stays uint64 (no wrap)
        return _ints_with_nulls(filled, mask)
    if (pa.types.is_floating(typ) or pa.types.is_integer(typ) or pa.types.is_temporal(typ)) and not nulls:
        return np.asarray(arr.to_numpy(zero_copy_only=False))
    if pa.types.is_floating(typ) or pa.types.is_timestamp(typ) or pa.types.is_date(typ):
        return np.asarray(arr.to_numpy(zero_copy_only=False))  # nulls -> NaN / NaT
    if pa.types.is_decimal(typ) and typ.scale == 0:  # whole numbers: exact Python integers (float64 rounds past 2^53)
        out = np.empty(len(arr), dtype=object)
        out[:] = [None if v is None else int(v) for v in arr.to_pylist()]
        return out
    if pa.types.is_decimal(typ):
        return np.asarray(pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False))
    return np.asarray(arr.to_pylist(), dtype=object)


def _from_pandas_series(s: Any, name: str) -> np.ndarray:
    import pandas as pd

    dtype = s.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return _from_pandas_series(s.astype(dtype.categories.dtype if not s.isna().any() else object), name)
    if isinstance(dtype, pd.ArrowDtype):
        import pyarrow as pa

        return _from_arrow(pa.chunked_array(pd.array(s).__arrow_array__()), name)
    if isinstance(dtype, np.dtype):
        arr = s.to_numpy(copy=False)
        return arr
    kind = getattr(dtype, "kind", "O")
    mask = np.asarray(s.isna(), dtype=bool)
    if kind in "iu":  # nullable Int64 etc.
        if not mask.any():
            return s.to_numpy(dtype=dtype.numpy_dtype, copy=False)
        return _ints_with_nulls(s.to_numpy(dtype=dtype.numpy_dtype, na_value=0), mask)
    if kind == "f":
        return s.to_numpy(dtype=dtype.numpy_dtype, na_value=np.nan)
    if kind == "M":  # tz-aware datetimes: drop the zone (UTC instants)
        return np.asarray(s.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy(dtype="datetime64[ns]"))
    out = s.to_numpy(dtype=object, na_value=None)
    return np.asarray(out, dtype=object)


def _pick_column(table: Any, column: str | None, columns: list[str], what: str) -> Any:
    if column is None:
        if len(columns) == 1:
            return columns[0]
        raise DataError(f"{what} has columns {', '.join(map(str, columns))}: pass column='...' to choose one")
    if column not in columns:
        raise DataError(f"column {column!r} not found in the {what}; available: {', '.join(map(str, columns))}")
    if columns.count(column) > 1:
        raise DataError(f"the {what} has more than one column named {column!r}; rename or drop the duplicates first")
    return column


_NAME = [InstanceOf(str, description="a column name (str)")]


@validate_params({"column": [None, *_NAME], "name": _NAME})
def to_numpy(data: Any, *, column: str | None = None, name: str = "values") -> np.ndarray:
    """A 1-D numpy array of ``data`` (``column`` of a table), zero-copy where possible.

    Raises :class:`DataError` for tables without a chosen column, unknown columns, Spark
    DataFrames (histogrammed in Spark, :mod:`dptree.data.engines.spark`), strings, scalars and
    multi-dimensional arrays; :class:`InvalidParameterError` for a column that is not a name.
    """
    if isinstance(data, (str, bytes)):
        raise DataError(f"{name} must be an array or a column, not a string")
    if isinstance(data, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in data):
        raise DataError(f"{name} must be numbers; found True/False (convert booleans explicitly if intended)")
    if isinstance(data, np.ma.MaskedArray):
        data = cast(Any, data)
        if data.dtype.kind == "f":
            return _check_1d(data.filled(np.nan), name)
        if data.dtype.kind in "iu":
            return _check_1d(_ints_with_nulls(data.filled(0).astype(np.int64), np.ma.getmaskarray(data)), name)
        return _check_1d(np.asarray(data.astype(object).filled(None)), name)
    if isinstance(data, np.ndarray):
        return _check_1d(data, name)
    path = _type_path(data)
    mod = path.split(".")[0]
    if mod == "pandas":
        import pandas as pd

        if isinstance(data, pd.DataFrame):
            col = _pick_column(data, column, list(data.columns), "DataFrame")
            return _check_1d(_from_pandas_series(data[col], name), name)
        if isinstance(data, pd.Series):
            return _check_1d(_from_pandas_series(data, name), name)
        if isinstance(data, pd.Index):
            return _check_1d(_from_pandas_series(data.to_series(), name), name)
        if isinstance(data, pd.api.extensions.ExtensionArray):
            return _check_1d(_from_pandas_series(pd.Series(data, copy=False), name), name)
    if mod == "polars":
        pl = require("polars", "reading polars data")

        if isinstance(data, pl.DataFrame):
            col = _pick_column(data, column, data.columns, "polars DataFrame")
            data = data.get_column(col)
        if isinstance(data, pl.LazyFrame):
            raise DataError("a polars LazyFrame must be collected first: pass lf.collect()")
        if isinstance(data, pl.Series):
            return _check_1d(_from_arrow(data.to_arrow(), name) if data.null_count() else data.to_numpy(), name)
    if mod == "pyarrow":
        import pyarrow as pa

        if isinstance(data, (pa.Table, pa.RecordBatch)):
            col = _pick_column(data, column, data.column_names, "Arrow table")
            return _check_1d(_from_arrow(data.column(col), name), name)
        if isinstance(data, (pa.Array, pa.ChunkedArray)):
            return _check_1d(_from_arrow(data, name), name)
    if mod in ("duckdb", "_duckdb"):
        cols = list(getattr(data, "columns", []))
        if hasattr(data, "arrow") and cols:
            col = _pick_column(data, column, cols, "DuckDB relation")
            proj = data.project(_quote_ident(col))
            tbl = proj.arrow()
            if hasattr(tbl, "read_all"):
                tbl = tbl.read_all()
            return _check_1d(_from_arrow(tbl.column(0), name), name)
    if mod == "pyspark":
        raise DataError(
            "PySpark DataFrames are counted inside Spark, not collected: pass the DataFrame itself to "
            "dptree.range_tree or dptree.leaf_histogram with column='...'"
        )
    if isinstance(data, dict):
        raise DataError(f"{name} must be an array or a table column, not a dict")
    if isinstance(data, (list, tuple)):
        return _check_1d(_list_array(data, name), name)
    if hasattr(data, "__array__") or isinstance(data, range):
        try:
            arr = np.asarray(data)
        except (ValueError, TypeError):
            raise DataError(f"{name} cannot be read as a one-dimensional array") from None
        if arr.dtype.kind == "O" and arr.ndim > 1:
            arr = np.asarray(list(data), dtype=object)
        return _check_1d(arr, name)
    raise DataError(
        f"{name}: unsupported input type {path}; pass a numpy array, list, pandas/polars Series, "
        "Arrow array or table, or DuckDB relation"
    )


def _arrow_kind(typ: Any) -> str:
    import pyarrow as pa

    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    if pa.types.is_integer(typ):
        return "u" if pa.types.is_unsigned_integer(typ) else "i"
    if pa.types.is_decimal(typ):
        return "i" if typ.scale == 0 else "f"
    if pa.types.is_floating(typ):
        return "f"
    return "M" if pa.types.is_timestamp(typ) or pa.types.is_date(typ) else "O"


def declared_kind(data: Any, *, column: str | None = None) -> str | None:
    """The numpy kind (``"i"``, ``"u"``, ``"f"``, ``"M"``, ...) that ``data``'s container declares
    for the column: its schema, read before :func:`to_numpy` turns integers with missing entries
    into floats or objects (a choice that depends on the values: float64 below 2^53, objects above).
    None where nothing is declared (lists, tuples, objects of unknown type). Reads no values."""
    if isinstance(data, np.ndarray):  # masked arrays too: the dtype under the mask
        return None if data.dtype.kind == "O" else data.dtype.kind
    mod = _type_path(data).split(".")[0]
    if mod == "pandas":
        import pandas as pd

        if isinstance(data, pd.DataFrame):
            data = data[_pick_column(data, column, list(data.columns), "DataFrame")]
        dtype = getattr(data, "dtype", None)
        if isinstance(dtype, pd.CategoricalDtype):
            dtype = dtype.categories.dtype
        if isinstance(dtype, pd.ArrowDtype):
            return _arrow_kind(dtype.pyarrow_dtype)
        kind = getattr(dtype, "kind", None)
        return None if kind in (None, "O") else kind
    if mod == "polars" or mod == "pyarrow":
        if mod == "polars" and hasattr(data, "get_column"):
            data = data.get_column(_pick_column(data, column, data.columns, "polars DataFrame"))
        if hasattr(data, "to_arrow") and mod == "polars":
            data = data.to_arrow()
        if hasattr(data, "column_names"):
            data = data.column(_pick_column(data, column, data.column_names, "Arrow table"))
        typ = getattr(data, "type", None)
        return None if typ is None else _arrow_kind(typ)
    return None


def as_declared(arr: np.ndarray, kind: str | None) -> np.ndarray:
    """``arr`` (missing entries already removed) back in the integer type its container declared
    (``kind`` from :func:`declared_kind`): :func:`to_numpy` made integers with missing entries
    float64 or objects, by their values; the column's type is schema, so it must not depend on them."""
    if kind not in ("i", "u") or arr.dtype.kind not in "fO":
        return arr
    dtype = np.int64 if kind == "i" else np.uint64
    return np.asarray(arr.tolist() if arr.dtype.kind == "O" else arr, dtype=dtype)


def _list_array(items: list[Any] | tuple[Any, ...], name: str) -> np.ndarray:
    """A list or tuple as an array that keeps every item's own value: int64 when every item is an
    integer that fits, float64 when every item is a float, text when every item is a string, else
    an object array that the readers convert item by item. Never numpy's common type of the items:
    one float among integers made every integer a float (2^60 + 1 read as 2^60: another record's
    bucket), one string among integers made them text, one date with nanosecond digits wrapped the
    others around; each of those let one record move the rest."""
    vals = list(items)
    if not vals or any(isinstance(v, (list, tuple, np.ndarray)) for v in vals):
        try:
            return np.asarray(vals)  # empty, or rows of a table: refused as more than one dimension
        except ValueError:  # rows of different lengths
            raise DataError(f"{name} must be one-dimensional, got nested lists; pass one column") from None
    try:
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in vals):
            try:
                return np.array(vals, dtype=np.int64)
            except OverflowError:  # past int64: exact Python integers
                return np.array(vals, dtype=object)
        if all(isinstance(v, (float, np.floating)) for v in vals):
            return np.array(vals, dtype=np.float64)
        if all(isinstance(v, str) for v in vals):
            return np.array(vals, dtype=str)
        out = np.empty(len(vals), dtype=object)
        out[:] = vals
        return out
    except (ValueError, TypeError):
        raise DataError(f"{name} cannot be read as a one-dimensional array") from None

def value_kind(arr: np.ndarray) -> str:
    """What kind of values an array holds, in words from its kind alone: never its dtype, which
    numpy infers from the values of a list (int64 or float64, the longest string's length)."""
    return {"i": "numbers", "u": "numbers", "f": "numbers", "b": "True/False", "S": "bytes", "U": "text",
            "m": "time spans (timedelta)", "M": "dates"}.get(arr.dtype.kind, "objects")


def exact_frame(data: Any, columns: Sequence[str]) -> Any:
    """A pandas DataFrame of an in-memory table (pandas, polars, Arrow; None for anything else)
    whose integer ``columns`` keep their exact values: pandas' nullable integers, where
    ``to_pandas`` makes an integer column with a null float64 (rounding values above 2^53, so
    that one added null row would relabel every row)."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data
    frame = getattr(data, "to_pandas", lambda: None)()
    if not isinstance(frame, pd.DataFrame):
        return None
    import pyarrow as pa

    if isinstance(data, (pa.Table, pa.RecordBatch)):
        table = data
    elif type(data).__module__.split(".")[0] == "polars" and hasattr(data, "to_arrow"):
        table = data.select([c for c in dict.fromkeys(columns) if c in data.columns]).to_arrow()
    else:
        return frame
    nullable = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
                pa.int64(): pd.Int64Dtype(), pa.uint8(): pd.UInt8Dtype(), pa.uint16(): pd.UInt16Dtype(),
                pa.uint32(): pd.UInt32Dtype(), pa.uint64(): pd.UInt64Dtype()}
    names = list(table.schema.names)
    for c in dict.fromkeys(columns):
        if names.count(c) == 1 and pa.types.is_integer(table.schema.field(c).type):
            frame[c] = table.column(c).to_pandas(types_mapper=nullable.get).set_axis(frame.index)
    return frame


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def present(raw: np.ndarray) -> np.ndarray:
    """Mask of the entries of a :func:`to_numpy` array that are not missing (NaN, NaT, None, and in
    an object column pandas' NA and a Decimal NaN)."""
    if raw.dtype.kind == "f":
        return ~np.isnan(raw)
    if raw.dtype.kind == "M":
        return ~np.isnat(raw)
    if raw.dtype.kind == "O":
        return np.fromiter((not _is_missing(v) for v in raw), bool, raw.size)
    return np.ones(raw.size, bool)


def _item_problem(v: Any, kind: str | None) -> str | None:
    """The problem of one entry of an object column for a domain of ``kind`` (None: none)."""
    if _is_missing(v):
        return "missing"
    numeric = kind in ("integer", "float")  # a date domain parses each entry itself (as_dates); None: any
    if isinstance(v, (str, bytes, bool, np.bool_)):
        return "text" if numeric else None
    if isinstance(v, (int, np.integer)):
        return None
    try:
        f = float(v)
    except OverflowError:  # an integer-valued Decimal or Fraction past float64: finite and whole
        return None
    except (TypeError, ValueError):
        return "text" if numeric else None
    if math.isinf(f) and (isinstance(v, (float, np.floating)) or (isinstance(v, Decimal) and v.is_infinite())):
        return "infinite"  # a huge finite Decimal, Fraction or int is clamped, never infinite
    if kind == "integer":
        try:
            return None if v == int(v) else "fraction"
        except (TypeError, ValueError, OverflowError):
            return "fraction"
    return None


def valid_records(raw: np.ndarray, kind: str | None, on_invalid: str, column: str | None = None, *,
                  fraction_fix: str | None = None) -> np.ndarray:
    """Mask of the records of ``raw`` (a :func:`to_numpy` array) that are valid for a domain of
    ``kind`` ("integer", "float", "datetime"; None: any numbers), after the declared policy
    :func:`dptree.errors.check_invalid`: missing values, +-inf, non-integers on an integer domain
    and entries of an object column that are not numbers are refused (``on_invalid="error"``) or
    left out record by record (``"drop"``). The one reader of the policy for in-memory data: every
    product and method (range trees, the sparse tree, quantiles, interior points) calls it. An
    array whose type is not numeric at all (text, dates on a numeric domain) is left to the
    caller's type check: its type is schema, not a record."""
    dk = raw.dtype.kind
    found: set[str] = set()
    if dk == "f":
        keep = np.isfinite(raw)
        if not keep.all():
            nan = np.isnan(raw)
            found.update(k for k, m in (("missing", nan), ("infinite", ~keep & ~nan)) if m.any())
        if kind == "integer":
            with np.errstate(invalid="ignore"):
                whole = raw == np.floor(raw)
            if not whole[keep].all():
                found.add("fraction")
            keep &= whole
    elif dk == "M":
        keep = ~np.isnat(raw)
        if not keep.all():
            found.add("missing")
    elif dk == "O" and raw.size:
        problems = [_item_problem(v, kind) for v in raw.tolist()]
        keep = np.fromiter((p is None for p in problems), bool, raw.size)
        found.update(p for p in problems if p is not None)
    else:
        keep = np.ones(raw.size, bool)
    check_invalid(found, on_invalid, column, fraction_fix=fraction_fix, dates=kind == "datetime")
    return keep


def _is_missing(v: Any) -> bool:
    """None, pandas' NA, or a NaN (float, numpy, Decimal: the one value unequal to itself)."""
    if v is None or type(v).__name__ == "NAType":
        return True
    if isinstance(v, Decimal):  # a signalling NaN raises on comparison
        return v.is_nan()
    try:
        return bool(v != v)
    except (TypeError, ValueError):
        return False


def refuse_untyped(data: Any, what: str, instead: str) -> None:
    """Refuse a Python list or tuple where ``what`` takes its domain from the column's type: a list
    declares none, and numpy would infer one from the values (one record of 3.5 or 2^63 among
    integers makes it float), so the released domain would depend on them. ``instead``: the other
    way out (e.g. declared bounds)."""
    if isinstance(data, (list, tuple)):
        raise InvalidParameterError(
            f"{what} takes its domain from the values' type, and a Python list has none (numpy would infer it "
            "from the values, so the release would show them): pass a typed array, e.g. "
            f"np.asarray(values, dtype=np.int64) (or np.float64, 'datetime64[ns]'), or {instead}")
