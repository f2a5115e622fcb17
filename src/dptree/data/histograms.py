"""The one dispatcher from user data to exact counts: which engine reads which input.

===================================================== ============================================
input                                                 engine (:mod:`dptree.data.engines`)
===================================================== ============================================
numpy arrays, lists, pandas, polars, Arrow            :class:`~dptree.data.engines.numpy.NumpyEngine`
CSV/Parquet paths (``str``, ``os.PathLike``, ``"-"``) :class:`~dptree.data.engines.duckdb.DuckDBEngine`
DuckDB relations                                      :class:`~dptree.data.engines.duckdb.DuckDBEngine`
PySpark DataFrames                                    :class:`~dptree.data.engines.spark.SparkEngine`
===================================================== ============================================

:func:`leaf_histogram` serves range trees (plain, bounded with ``user_id``, split by group with
``by``/``groups``), :func:`path_counts` hierarchies and :func:`value_counts` the exponential
mechanisms over ordered domains (interior points, quantiles). Every public check (the plan's
policies, the groups, the contribution bound) runs here, before an engine reads any row. The
engines give identical counts for the same ``rng`` (tested), so the choice of engine never
changes what is released.
"""

from __future__ import annotations

import os
from numbers import Integral
from typing import TYPE_CHECKING, Any, ContextManager, Sequence, Union

import numpy as np

from dptree import noise as _noise
from dptree._validation import Constraint, InstanceOf, Interval, Options, renamed, validate_params
from dptree.data.bounding import check_bound
from dptree.data.engines.base import Engine, LeafPlan, Missing, OrderedCounts, Unknown
from dptree.data.engines.duckdb import DuckDBEngine, Progress, is_relation
from dptree.data.engines.numpy import NumpyEngine
from dptree.data.engines.spark import SparkEngine, is_spark_df
from dptree.data.groups import check_groups
from dptree.errors import InvalidParameterError
from dptree.noise.sources import RNG

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "engine_for",
    "is_table",
    "leaf_histogram",
    "path_counts",
    "value_counts",
    "grouped_value_counts",
    "ordered_counts",
    "bounded_histogram",
    "file_bounded_histogram",
    "grouped_histograms",
    "file_grouped_histograms",
]

Constraints = list[Union[Constraint, None]]

#: declared constraints of the data stage's parameters (:mod:`dptree._validation`)
MISSING: Constraints = [Options(("error", "drop"),
                                hint="on_invalid='drop' leaves invalid values out (a declared policy)")]
#: the deprecated name ``missing=`` of ``on_invalid=``
MISSING_ALIAS: Constraints = [None, *MISSING]
UNKNOWN: Constraints = [Options(("error", "drop"), hint="unknown='drop' leaves rows of unlisted groups out")]
FORMAT: Constraints = [None, Options(("csv", "parquet"))]


COLUMN: Constraints = [None, InstanceOf(str, description="a column name (str)")]
K: Constraints = [None, Interval(Integral, 1, None)]


def is_file(data: Any) -> bool:
    """A CSV/Parquet path (``str`` or ``os.PathLike``; ``"-"`` is CSV on standard input)."""
    return isinstance(data, (str, os.PathLike))


def is_table(data: Any) -> bool:
    """Rows with named columns: a pandas/polars DataFrame, an Arrow table, a DuckDB relation, a
    Spark DataFrame, or a file."""
    import pandas as pd

    return (isinstance(data, pd.DataFrame) or hasattr(data, "to_pandas") or is_file(data) or is_relation(data)
            or is_spark_df(data))


def engine_for(data: Any, *, fmt: str | None = None, progress: Progress = False) -> Engine:
    """The engine that reads ``data`` (table in the module docstring). ``fmt`` and ``progress``
    apply to files (and ``progress`` to DuckDB relations)."""
    if is_file(data):
        return DuckDBEngine(fmt, progress)
    if fmt is not None:
        raise InvalidParameterError("fmt applies to files only")
    if is_relation(data):
        return DuckDBEngine(None, progress)
    if is_spark_df(data):
        return SparkEngine()
    return NumpyEngine()


@validate_params({"column": COLUMN, "unknown": UNKNOWN, "on_invalid": MISSING, "missing": MISSING_ALIAS, "fmt": FORMAT,
                  "rng": RNG, "max_contributions": K})
def leaf_histogram(
    data: Any,
    plan: LeafPlan,
    *,
    column: str | None = None,
    user_id: Any = None,
    by: Any = None,
    groups: Sequence[Any] | None = None,
    unknown: Unknown = "error",
    on_invalid: Missing = "error",
    rng: _noise.RngLike = None,
    fmt: str | None = None,
    max_contributions: int | None = None,
    progress: Progress = False,
    missing: Missing | None = None,
) -> np.ndarray:
    """Exact leaf histogram of ``data`` for ``plan``: shape (padded_size,), or
    (len(groups), padded_size) with ``by``. Not private: feed it to ``plan.release``.

    ``data``: an array-like (``column`` None), a table with ``column`` (pandas, polars, Arrow, DuckDB
    relation), a CSV/Parquet path with ``column``, or a PySpark DataFrame with ``column``.
    ``user_id`` and ``by`` are column names of ``data`` or (for in-memory data) arrays. With
    ``user_id``, at most k records per user are kept, chosen uniformly at random
    (:mod:`dptree.data.bounding`; k = ``plan.max_contributions``, or a smaller
    ``max_contributions``), across groups with ``by``. Pass one random source as ``rng`` here and
    to ``plan.release`` to draw bounding and noise from one stream. ``on_invalid``: the declared
    policy for invalid values (missing, +-inf, non-integers on an integer domain, entries that are
    not numbers): refuse them, or with "drop" leave each out (``missing=``: its deprecated name).
    """
    on_invalid = renamed(on_invalid, missing, "on_invalid", "missing", "error")
    if (by is None) != (groups is None):
        raise InvalidParameterError("by and groups go together: by= names the column, groups= lists the public groups")
    plan.check_public_total(user_id=user_id, on_invalid=on_invalid, by=by)
    engine = engine_for(data, fmt=fmt, progress=progress)
    k = check_bound(plan, max_contributions) if user_id is not None else None
    gs = check_groups(groups) if by is not None else []
    src = _noise.make_source(rng)
    domain, cells = plan.domain, plan.layout.padded_size
    if by is not None:
        return engine.grouped_histograms(data, domain, cells, column=column, by=by, groups=gs, unknown=unknown,
                                         user_id=user_id, k=k, missing=on_invalid, source=src)
    if k is not None:
        return engine.bounded_histogram(data, domain, cells, column=column, user_id=user_id, k=k,
                                         missing=on_invalid, source=src)
    return engine.leaf_histogram(data, domain, cells, column=column, missing=on_invalid)


def path_counts(data: Any, levels: Sequence[str], *, weight: str | None = None) -> pd.DataFrame:
    """Exact records (or integer ``weight`` sums) per distinct combination of the ``levels``
    columns of a table, file, DuckDB relation or Spark DataFrame (:meth:`Engine.path_counts`):
    the data stage of hierarchy counts. Not private."""
    return engine_for(data).path_counts(data, levels, weight=weight)


@validate_params({"column": COLUMN, "on_invalid": MISSING, "fmt": FORMAT})
def value_counts(data: Any, *, column: str | None = None, on_invalid: Missing = "error", message: str | None = None,
                 fmt: str | None = None,
                 domain: tuple[str, Any, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values of ``data`` (``column`` of a table, file, DuckDB relation or Spark
    DataFrame) and their exact record counts (:meth:`Engine.value_counts`): memory O(distinct
    values), never one Python object per row. ``domain`` (kind, lower, upper), when known, decides
    how a CSV column is read (not DuckDB's guess from a sample of rows). ``on_invalid``: the declared
    invalid-value policy (missing values and infinities refused, or dropped). Not private."""
    return engine_for(data, fmt=fmt).value_counts(data, column=column, missing=on_invalid, infinite=on_invalid,
                                                  message=message, domain=domain)


@validate_params({"column": COLUMN, "on_invalid": MISSING, "fmt": FORMAT})
def values(data: Any, *, column: str | None = None, on_invalid: Missing = "error", message: str | None = None,
           fmt: str | None = None,
           domain: tuple[str, Any, Any] | None = None) -> np.ndarray:
    """Every valid value of ``data``'s column (:meth:`Engine.values`: checks as :func:`value_counts`;
    files and DuckDB relations in one unsorted scan, Spark DataFrames as distinct values and counts).
    Memory O(rows), never one Python object per row. Not private."""
    return engine_for(data, fmt=fmt).values(data, column=column, missing=on_invalid, infinite=on_invalid,
                                            message=message, domain=domain)


@validate_params({"column": COLUMN, "unknown": UNKNOWN, "on_invalid": MISSING})
def grouped_value_counts(data: Any, *, column: str | None, by: Any, groups: Sequence[Any], unknown: Unknown = "error",
                         on_invalid: Missing = "error", message: str | None = None,
                         domain: tuple[str, Any, Any] | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`value_counts` of each public group's rows (``by``: a column name of the table, file,
    relation or Spark DataFrame, or an array beside in-memory values), in the order of ``groups``
    (:meth:`Engine.grouped_value_counts`). Not private."""
    return engine_for(data).grouped_value_counts(data, column=column, by=by, groups=check_groups(groups),
                                                 unknown=unknown, missing=on_invalid, infinite=on_invalid,
                                                 message=message, domain=domain)


def ordered_counts(data: Any, *, column: str | None, lower: int | float, upper: int | float,
                   on_invalid: Missing = "error", message: str | None = None) -> ContextManager[OrderedCounts | None]:
    """A session of exact :class:`~dptree.data.engines.base.OrderedCounts` queries on ``column``
    of ``data`` clamped to [lower, upper] (:meth:`Engine.ordered_counts`: files and DuckDB
    relations in DuckDB, Spark DataFrames in Spark), or a context yielding None where the engine
    has none (in-memory data, some column types). Not private."""
    return engine_for(data).ordered_counts(data, column=column, lower=lower, upper=upper,
                                           missing=on_invalid, infinite=on_invalid, message=message)


# --------------------------------------------------------------------------- by engine and input
# The functions below name the engine in their signature; each is leaf_histogram for one input.


def bounded_histogram(values: Any, user_ids: Any, plan: LeafPlan, *, max_contributions: int | None = None,
                      missing: Missing = "error", rng: _noise.RngLike = None) -> np.ndarray:
    """Leaf histogram of in-memory ``values`` keeping at most k records per user of ``user_ids``
    (any 1-D inputs :func:`dptree.data.inputs.to_numpy` reads), chosen uniformly at random."""
    return leaf_histogram(values, plan, user_id=user_ids, max_contributions=max_contributions,
                          on_invalid=missing, rng=rng, progress=False)


def file_bounded_histogram(path: str, column: str, user_column: str, plan: LeafPlan, *,
                           max_contributions: int | None = None, missing: Missing = "error",
                           rng: _noise.RngLike = None, fmt: str | None = None,
                           progress: Progress = False) -> np.ndarray:
    """:func:`bounded_histogram` of a CSV/Parquet file, in DuckDB. ``progress`` (True, or a callable
    receiving messages): stage messages and DuckDB's progress, on stderr, never on stdout."""
    return leaf_histogram(path, plan, column=column, user_id=user_column,
                          max_contributions=max_contributions, on_invalid=missing, rng=rng, fmt=fmt, progress=progress)


def grouped_histograms(values: Any, by: Any, plan: LeafPlan, *, groups: Sequence[Any], unknown: Unknown = "error",
                       user_ids: Any = None, max_contributions: int | None = None, missing: Missing = "error",
                       rng: _noise.RngLike = None) -> np.ndarray:
    """Leaf histograms of in-memory ``values`` per group of ``by``, shape (len(groups),
    padded_size); with ``user_ids``, at most k records per user across groups."""
    return leaf_histogram(values, plan, by=by, groups=groups, unknown=unknown, user_id=user_ids,
                          max_contributions=max_contributions, on_invalid=missing, rng=rng)


def file_grouped_histograms(path: str, column: str, by_column: str, plan: LeafPlan, *, groups: Sequence[Any],
                            unknown: Unknown = "error", user_column: str | None = None,
                            max_contributions: int | None = None, missing: Missing = "error",
                            rng: _noise.RngLike = None, fmt: str | None = None,
                            progress: Progress = False) -> np.ndarray:
    """:func:`grouped_histograms` of a CSV/Parquet file, in DuckDB (same results)."""
    return leaf_histogram(path, plan, column=column, by=by_column, groups=groups,
                          unknown=unknown, user_id=user_column, max_contributions=max_contributions,
                          on_invalid=missing, rng=rng, fmt=fmt, progress=progress)
