"""The one data stage from user data to exact counts: which engine reads which input, and every
count built once from the engines' one primitive, :meth:`~dptree.data.engines.base.Engine.counts`.

===================================================== ============================================
input                                                 engine (:mod:`dptree.data.engines`)
===================================================== ============================================
numpy arrays, lists, pandas, polars, Arrow            :class:`~dptree.data.engines.numpy.NumpyEngine`
CSV/Parquet paths (``str``, ``os.PathLike``, ``"-"``) :class:`~dptree.data.engines.duckdb.DuckDBEngine`
DuckDB relations                                      :class:`~dptree.data.engines.duckdb.DuckDBEngine`
PySpark DataFrames                                    :class:`~dptree.data.engines.spark.SparkEngine`
===================================================== ============================================

:func:`leaf_histogram` serves range trees (plain, bounded with ``user_id``, split by group with
``by``/``groups``: the counts of a :class:`~dptree.data.engines.base.Bucket` key, after a
:class:`~dptree.data.engines.base.GroupOf` key, sampled per user), :func:`records_per_user` the
choice of a private contribution bound (a :class:`~dptree.data.engines.base.UserRecords` key), :func:`path_counts`
hierarchies (:class:`~dptree.data.engines.base.Label` keys) and :func:`value_counts`,
:func:`grouped_value_counts` and :func:`values` the exponential mechanisms over ordered domains
(interior points, quantiles: :class:`~dptree.data.engines.base.Value` keys);
:func:`ordered_counts` opens the staged mechanisms' session; :func:`partition_counts` counts the
users of each key of a group-by whose keys are found from the data
(:class:`~dptree.data.engines.base.Partition` keys, private partition selection). Every public check (the plan's
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
from dptree.data.engines.base import (
    COUNT,
    Bucket,
    Engine,
    GroupOf,
    Key,
    Label,
    LeafPlan,
    Missing,
    OrderedCounts,
    Partition,
    Sample,
    Units,
    Unknown,
    UserRecords,
    Value,
)
from dptree.data.engines.duckdb import DuckDBEngine, Progress, is_relation
from dptree.data.engines.numpy import NumpyEngine
from dptree.data.engines.spark import SparkEngine, is_spark_df
from dptree.data.groups import check_groups
from dptree.data.inputs import exact_frame
from dptree.data.weights import MAX_TOTAL, WeightGrid
from dptree.errors import InvalidParameterError, TotalTooLargeError
from dptree.noise.sources import RNG

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "engine_for",
    "is_table",
    "leaf_histogram",
    "leaf_sums",
    "records_per_user",
    "path_counts",
    "value_counts",
    "grouped_value_counts",
    "values",
    "ordered_counts",
    "partition_counts",
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
    ``fmt`` (files) and ``progress`` (files and DuckDB relations: stage messages and DuckDB's
    progress, on stderr or to a callable, never on stdout) choose how DuckDB reads.
    """
    on_invalid = renamed(on_invalid, missing, "on_invalid", "missing", "error")
    if (by is None) != (groups is None):
        raise InvalidParameterError("by and groups go together: by= names the column, groups= lists the public groups")
    plan.check_public_total(user_id=user_id, on_invalid=on_invalid, by=by)
    engine = engine_for(data, fmt=fmt, progress=progress)
    k = check_bound(plan, max_contributions) if user_id is not None else None
    keys: list[Key] = [Bucket(column, plan.domain)]
    gs: list[Any] = []
    if by is not None:
        gs = check_groups(groups)
        keys.insert(0, GroupOf(by, gs, unknown))
    src = _noise.make_source(rng)
    counted = engine.counts(data, keys, on_invalid=on_invalid,
                            sample=Sample(user_id, k, src) if k is not None else None)
    hist = np.zeros((len(gs), plan.layout.padded_size) if by is not None else plan.layout.padded_size, np.int64)
    hist[counted.keys] = counted.n
    return hist


@validate_params({"column": COLUMN, "on_invalid": MISSING, "fmt": FORMAT, "rng": RNG})
def leaf_sums(
    data: Any,
    plan: LeafPlan,
    grid: WeightGrid,
    *,
    weights: Any,
    column: str | None = None,
    user_id: Any = None,
    on_invalid: Missing = "error",
    rng: _noise.RngLike = None,
    fmt: str | None = None,
    progress: Progress = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact leaf histogram and exact leaf sums of the weights (in units of ``grid``:
    :class:`~dptree.data.weights.WeightGrid`), both of shape (padded_size,), of the same records:
    the valid ones (a missing or infinite weight makes a record invalid, ``on_invalid``), with
    ``user_id`` at most k = ``plan.max_contributions`` per user, chosen uniformly at random
    (:mod:`dptree.data.bounding`, a user's records ranked by (bucket, units)). ``weights``: a
    column name of ``data`` or (in-memory data) an array beside the values. A sum whose size
    reaches 2^61 units is refused (:class:`~dptree.errors.TotalTooLargeError`; the message states
    no sum). Not private: feed them to a sum plan's ``release``."""
    plan.check_public_total(user_id=user_id, on_invalid=on_invalid)
    engine = engine_for(data, fmt=fmt, progress=progress)
    k = check_bound(plan, None) if user_id is not None else None
    src = _noise.make_source(rng)
    counted = engine.counts(data, [Bucket(column, plan.domain), Units(weights, grid)], on_invalid=on_invalid,
                            sample=Sample(user_id, k, src) if k is not None else None)
    leaf, code = counted.keys
    size = plan.layout.padded_size
    hist = np.zeros(size, np.int64)
    np.add.at(hist, leaf, counted.n)
    units = code + grid.lower_units
    # |n * units| < 2^62 * 2^40 may pass int64: bound each leaf's sum in floats before the exact sum
    if counted.n.size and float(np.abs(counted.n.astype(np.float64) * units).sum()) >= MAX_TOTAL / 2:
        raise TotalTooLargeError("the weights add up to 2^60 units or more, more than a sum tree adds noise to "
                                 "exactly; choose a coarser weight_resolution or split the data")
    sums = np.zeros(size, np.int64)
    np.add.at(sums, leaf, counted.n * units)
    return hist, sums


@validate_params({"column": COLUMN, "unknown": UNKNOWN, "on_invalid": MISSING, "fmt": FORMAT,
                  "cap": [Interval(Integral, 1, None)]})
def records_per_user(
    data: Any,
    plan: LeafPlan,
    *,
    user_id: Any,
    cap: int,
    column: str | None = None,
    by: Any = None,
    groups: Sequence[Any] | None = None,
    unknown: Unknown = "error",
    on_invalid: Missing = "error",
    fmt: str | None = None,
    progress: Progress = False,
) -> np.ndarray:
    """The users with each number of records, capped: ``out[j]`` users have min(records, ``cap``)
    = j (``out[0]`` = 0; shape (cap + 1,)). A user's records are those :func:`leaf_histogram`
    counts for ``plan`` with the same arguments, before it bounds them (valid values by
    ``on_invalid``; with ``by``, the rows of the listed groups, across groups). Each user is in it
    once, so adding or removing a user moves one entry by one. Missing user ids raise. Not private:
    only a mechanism may read it (:mod:`dptree.rangetree.contributions`)."""
    if (by is None) != (groups is None):
        raise InvalidParameterError("by and groups go together: by= names the column, groups= lists the public groups")
    if user_id is None:
        raise InvalidParameterError("records per user need user_id= (the column, or array, of each record's user)")
    engine = engine_for(data, fmt=fmt, progress=progress)
    keys: list[Key] = [UserRecords(user_id, int(cap)), Bucket(column, plan.domain)]
    if by is not None:
        keys.insert(0, GroupOf(by, check_groups(groups), unknown))
    counted = engine.counts(data, keys, on_invalid=on_invalid)
    out = np.zeros(int(cap) + 1, np.int64)
    out[counted.keys[0]] = counted.n
    return out


def path_counts(data: Any, levels: Sequence[str], *, weight: str | None = None) -> pd.DataFrame:
    """Exact records (or integer ``weight`` sums) per distinct combination of the ``levels``
    columns of a table, file, DuckDB relation or Spark DataFrame: one row per path (values as
    read, missing ones kept) with :data:`~dptree.data.engines.base.COUNT` (int64; a weight total
    of :data:`dptree.data.weights.MAX_TOTAL` or more raises). The data stage of hierarchy
    counts. Not private."""
    import pandas as pd

    counted = engine_for(data).counts(data, [Label(c) for c in levels], weight=weight)
    if any(type(col).__module__.startswith("pyarrow") for col in counted.keys):
        import pyarrow as pa

        # through Arrow: labels stay Arrow strings (no Python object per distinct path), and integer
        # labels exact (nullable integers: a null would make them float64)
        return exact_frame(pa.table({**dict(zip(levels, counted.keys)), COUNT: pa.array(counted.n)}), levels)
    return pd.DataFrame({**dict(zip(levels, counted.keys)), COUNT: counted.n})


@validate_params({"column": COLUMN, "on_invalid": MISSING, "fmt": FORMAT})
def value_counts(data: Any, *, column: str | None = None, on_invalid: Missing = "error", message: str | None = None,
                 fmt: str | None = None,
                 domain: tuple[str, Any, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values of ``data`` (``column`` of a table, file, DuckDB relation or Spark
    DataFrame) and their exact record counts (int64): memory O(distinct values), never one Python
    object per row. Values keep their type (:class:`~dptree.data.engines.base.Value`).
    ``on_invalid``: the declared invalid-value policy (missing values and infinities refused with
    the wording of :func:`~dptree.errors.check_invalid`, naming no value, position or count, or
    dropped; ``message`` is not used: every engine words them so). ``domain`` (kind, lower, upper),
    when known, decides how a CSV column is read (not DuckDB's guess from a sample of rows). Not
    private."""
    counted = engine_for(data, fmt=fmt).counts(data, [Value(column, domain)], on_invalid=on_invalid)
    return counted.keys[0], counted.n


@validate_params({"column": COLUMN, "on_invalid": MISSING, "fmt": FORMAT})
def values(data: Any, *, column: str | None = None, on_invalid: Missing = "error", message: str | None = None,
           fmt: str | None = None,
           domain: tuple[str, Any, Any] | None = None) -> np.ndarray:
    """Every valid value of ``data``'s column (checks as :func:`value_counts`; a
    :class:`~dptree.data.engines.base.Value` key without distinct values: files and DuckDB
    relations in one unsorted scan, the other inputs as their sorted distinct values repeated by
    their counts). Memory O(rows), never one Python object per row, for a mechanism that counts
    the values itself. Not private."""
    counted = engine_for(data, fmt=fmt).counts(data, [Value(column, domain, distinct=False)], on_invalid=on_invalid)
    return counted.keys[0]


@validate_params({"column": COLUMN, "unknown": UNKNOWN, "on_invalid": MISSING})
def grouped_value_counts(data: Any, *, column: str | None, by: Any, groups: Sequence[Any], unknown: Unknown = "error",
                         on_invalid: Missing = "error", message: str | None = None,
                         domain: tuple[str, Any, Any] | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`value_counts` of each public group's rows (``by``: a column name of the table, file,
    relation or Spark DataFrame, or an array beside in-memory values), in the order of ``groups``
    (a group without rows gets empty arrays); rows of unlisted or missing groups raise or are
    dropped (``unknown``). Not private."""
    gs = check_groups(groups)
    counted = engine_for(data).counts(data, [GroupOf(by, gs, unknown), Value(column, domain)], on_invalid=on_invalid)
    gi, vals = counted.keys
    cut = np.searchsorted(gi, np.arange(len(gs) + 1))
    return [(vals[a:b], counted.n[a:b]) for a, b in zip(cut[:-1], cut[1:])]


@validate_params({"unknown": UNKNOWN, "fmt": FORMAT, "rng": RNG, "max_groups": K})
def partition_counts(data: Any, *, by: Any, user_id: Any = None, max_groups: int = 1, rng: _noise.RngLike = None,
                     fmt: str | None = None, unknown: Unknown = "error") -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct keys of ``by`` (a column name of ``data``, or an array beside in-memory
    data) and, for each, its distinct users after every user keeps at most ``max_groups`` of their
    distinct keys, drawn uniformly at random from ``rng`` (the same keys kept on every engine); or
    without ``user_id`` its records (each record its own user, with one key). Only keys counted
    at least once. Rows without a key raise, or with ``unknown="drop"`` are left out; missing user
    ids raise. Not private: only a partition-selection policy may read it (:mod:`dptree.partitions`)."""
    if user_id is None and max_groups != 1:
        raise InvalidParameterError("max_groups bounds the distinct keys of one user: pass user_id=")
    sample = None if user_id is None else Sample(user_id, int(max_groups), _noise.make_source(rng))
    counted = engine_for(data, fmt=fmt).counts(data, [Partition(by, unknown)], sample=sample)
    return counted.keys[0], counted.n


def ordered_counts(data: Any, *, column: str | None, lower: int | float, upper: int | float,
                   on_invalid: Missing = "error", message: str | None = None) -> ContextManager[OrderedCounts | None]:
    """A session of exact :class:`~dptree.data.engines.base.OrderedCounts` queries on ``column``
    of ``data`` clamped to [lower, upper] (:meth:`Engine.ordered_counts`: files and DuckDB
    relations in DuckDB, Spark DataFrames in Spark), or a context yielding None where the engine
    has none (in-memory data, some column types). Not private."""
    return engine_for(data).ordered_counts(data, column=column, lower=lower, upper=upper, on_invalid=on_invalid)
