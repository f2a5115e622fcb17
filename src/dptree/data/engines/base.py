"""The one engine interface: exact grouped counts of key expressions, for every kind of input.

An engine turns the caller's rows into exact counts, and nothing else: it never adds noise and
never returns anything but the counts (no sizes, no values beyond the keys counted; its errors
name a kind of problem, never a count or a value, :mod:`dptree.errors`). Two operations:

* :meth:`Engine.counts` -- the records (or exact integer weights) per distinct combination of
  key expressions (:data:`Key`): the bucket of a column in a public
  :class:`~dptree.data.domain.Domain` (clamped), the index of a row's group in a public list, a
  distinct value, a label as read (a level of a hierarchy path); optionally after keeping at most
  k records per user, drawn uniformly at random from one random source (:class:`Sample`, the
  algorithm of :mod:`dptree.data.bounding`). Missing and infinite values (and non-integers on an
  integer domain) are refused with the wording of :func:`~dptree.errors.check_invalid`, or
  dropped (``on_invalid``). A :class:`Partition` key counts the distinct users of each key of a
  group-by whose keys are found from the data, after each user keeps at most k of their distinct
  keys (the same algorithm on (user, key) pairs). Or the users per (capped) number of records,
  each user once (:class:`UserRecords`: what a private contribution bound is chosen from). Or
  the records per (bucket, weight in units) cell (:class:`Units` after a :class:`Bucket`), from
  which the sums of the weights per bucket follow exactly.
  Two :class:`Bucket` keys count the cells of a public 2-D grid.
  Histograms, bounded and grouped histograms, hierarchy path counts, the records per user, the
  sorted value counts of the exponential mechanisms and the user counts of private partition
  selection are built from it once, above the engines
  (:mod:`dptree.data.histograms`).
* :meth:`Engine.ordered_counts` -- a session of :class:`OrderedCounts` queries (a bucket
  histogram, the distinct values of a rank window, the ranks of one point) for the staged
  exponential mechanisms of :mod:`dptree.interior.staged`. It stays an operation of its own: its
  queries depend on the answers of the previous ones (the window is chosen by a noisy draw from
  the buckets), so they share one opened input and its checks across a session, and the window
  and rank queries filter by value ranges and rank intervals, which no grouping of public keys
  expresses; without it those mechanisms would sort every distinct value of the column.

:mod:`dptree.data.engines.numpy` (in-memory data), :mod:`~dptree.data.engines.duckdb` (files and
DuckDB relations) and :mod:`~dptree.data.engines.spark` (Spark DataFrames) implement it, with
identical results for the same random source (tested); :mod:`dptree.data.histograms` picks one.
Arguments reach an engine validated: groups checked, ``k`` resolved, the random source made.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, ClassVar, ContextManager, Literal, NamedTuple, Protocol, Sequence, Union

import numpy as np

from dptree.data.domain import Domain
from dptree.data.weights import WeightGrid
from dptree.errors import DataError, InvalidParameterError, infinite_values_error, missing_values_error
from dptree.noise import RandomSource

__all__ = ["Engine", "LeafPlan", "Missing", "Unknown", "Group", "COUNT", "OrderedCounts", "invalid_values_error",
           "Bucket", "GroupOf", "Value", "Label", "Partition", "UserRecords", "Units", "Key", "Sample", "Counts",
           "shape_of", "check_names"]

Missing = Literal["error", "drop"]
Unknown = Literal["error", "drop"]
Group = Union[str, int]

#: the count column of the hierarchy path counts (:func:`dptree.data.histograms.path_counts`)
COUNT = "__n__"


def invalid_values_error(kind: Literal["missing", "infinite"], column: str | None, message: str | None) -> DataError:
    """The error for missing or infinite values of a :class:`Value` key, naming no value, position
    or count: the wording of :func:`~dptree.errors.check_invalid`, the same for every engine,
    product and input kind (``column`` and ``message`` are accepted and not used: the in-memory
    reader words it the same way, :func:`~dptree.data.inputs.valid_records`)."""
    return missing_values_error() if kind == "missing" else infinite_values_error()


@dataclass(frozen=True)
class Bucket:
    """The leaf of the row's value of ``column`` in the public ``domain``, clamped into it (as
    :meth:`Domain.to_leaves`): an int64 code in [0, domain.size). ``column`` None: the data
    itself is the values (in-memory data)."""

    column: str | None
    domain: Domain


@dataclass(frozen=True)
class GroupOf:
    """The index of the row's group in the public list ``groups``: an int64 code in
    [0, len(groups)). ``column``: a column name, or (in-memory data) an array beside the values.
    Rows of an unlisted or missing group raise :func:`~dptree.errors.unknown_groups_error`, or with
    ``unknown="drop"`` are left out."""

    column: Any
    groups: Sequence[Group]
    unknown: Unknown = "error"


@dataclass(frozen=True)
class Value:
    """The row's value of ``column`` itself, in the column's type (int64/uint64, float64,
    datetime64; Python ints only for integers wider than 64 bits). ``domain`` (kind, lower,
    upper), when known, decides how a CSV column is read (never DuckDB's guess from a sample of
    rows). ``distinct`` False:
    no two records share a key (one row per valid record, in the engine's order, each counted
    once): the values themselves, memory O(rows), for a mechanism that counts them its own way
    without the sort of the distinct values."""

    column: str | None
    domain: tuple[str, Any, Any] | None = None
    distinct: bool = True


@dataclass(frozen=True)
class Label:
    """The row's value of ``column`` as read (a CSV's text, a table's own type), missing values
    kept as a label of their own: a level of a hierarchy path."""

    column: str


@dataclass(frozen=True)
class Partition:
    """The row's key in ``column`` (a column name, or an array beside in-memory data) for a group-by
    whose keys are found from the data (:mod:`dptree.partitions`): text (a CSV's fields always) or
    integers (an integer column); other types are refused. Counted alone: the records of each
    distinct key, or with a :class:`Sample` the distinct users of each key after every user keeps
    at most k of their distinct keys, drawn uniformly at random (:mod:`dptree.data.bounding` on the
    user's distinct keys ranked in key order). Keys come sorted (text by code point, integers by
    value), each with a count > 0. Rows without a key raise, or with ``unknown="drop"`` are left
    out; missing user ids raise."""

    column: Any
    unknown: Unknown = "error"


@dataclass(frozen=True)
class UserRecords:
    """The number of records of the row's user (``user``: a column name, or an array beside
    in-memory values), capped at ``cap``: an int64 in [1, cap], one per *user*, so that the counts
    are the users with each capped number of records (the histogram of the records per user,
    each user in it once). It comes before the :class:`Bucket` key whose rows it counts: a user's
    records are the rows that key counts (invalid values refused, or dropped by ``on_invalid``;
    with a :class:`GroupOf` key first, rows of unlisted groups refused or dropped), across all
    groups. Missing user ids raise. Nothing is sampled: the counts are exact."""

    user: Any
    cap: int


@dataclass(frozen=True)
class Units:
    """The row's weight (``column``: a column name, or an array beside in-memory values) on the
    public ``grid`` (:meth:`WeightGrid.units`), as the code units - grid.lower_units in
    [0, grid.cells). It follows the :class:`Bucket` key whose rows it weighs: [Bucket, Units]
    counts the records per (bucket, units) cell, optionally sampled per user, the kept rows of a
    user ranked by (bucket, units). A missing or infinite weight makes the row invalid (refused
    or dropped by ``on_invalid``, as an invalid value)."""

    column: Any
    grid: WeightGrid


#: a key expression of :meth:`Engine.counts`
Key = Union[Bucket, GroupOf, Value, Label, Partition, UserRecords, Units]


@dataclass(frozen=True)
class Sample:
    """Keep at most ``k`` records per user (``user``: a column name, or an array beside in-memory
    values) before counting, chosen uniformly at random from ``source``
    (:mod:`dptree.data.bounding`: a user's rows ranked by their keys, the users above k drawn in
    user-id order), the same rows on every engine. With a :class:`Partition` key: at most ``k``
    distinct keys per user, each user counted once per key. Missing user ids raise."""

    user: Any
    k: int
    source: RandomSource


class Counts(NamedTuple):
    """The result of :meth:`Engine.counts`: one column per key (``keys``; the distinct
    combinations, each once) and the records (or weight sums) of each (``n``, int64). Codes of
    :class:`Bucket` and :class:`GroupOf` keys are int64 arrays; with a :class:`Value` key the rows
    are sorted by the keys; :class:`Label` columns are numpy, pandas or Arrow columns."""

    keys: tuple[Any, ...]
    n: np.ndarray

    @classmethod
    def of_values(cls, counted: tuple[np.ndarray, np.ndarray]) -> Counts:
        """The counts of one :class:`Value` key from (sorted distinct values, counts)."""
        return cls((counted[0],), counted[1])

    @classmethod
    def of_records(cls, values: np.ndarray) -> Counts:
        """The counts of a :class:`Value` key with ``distinct=False``: every record once (the
        counts a read-only view, no memory per row)."""
        return cls((values,), np.broadcast_to(np.int64(1), values.shape))


def shape_of(keys: Sequence[Key], sample: Sample | None, weight: str | None
             ) -> Literal["dense", "grid", "values", "labels", "partitions", "users", "weighted"]:
    """Which of the key shapes every engine counts ``keys`` as: "dense" (``[Bucket]`` or
    ``[GroupOf, Bucket]``, optionally sampled), "grid" (``[Bucket, Bucket]``: the cells of a
    public 2-D grid, never sampled or weighted), "values" (``[Value]``, or ``[GroupOf, Value]`` with
    distinct values), "labels" (one or more :class:`Label`, optionally weighted), "partitions"
    (``[Partition]``, optionally sampled), "users" (``[UserRecords, Bucket]`` or
    ``[GroupOf, UserRecords, Bucket]``, never sampled or weighted) or "weighted" (``[Bucket, Units]``,
    optionally sampled); anything else is refused."""
    kinds = tuple(type(k) for k in keys)
    if kinds == (Bucket, Units) and weight is None:
        return "weighted"
    if kinds == (Partition,) and weight is None:
        return "partitions"
    if kinds in ((Bucket,), (GroupOf, Bucket)) and weight is None:
        return "dense"
    if kinds == (Bucket, Bucket) and sample is None and weight is None:
        return "grid"
    if kinds in ((UserRecords, Bucket), (GroupOf, UserRecords, Bucket)) and sample is None and weight is None:
        return "users"
    if kinds in ((Value,), (GroupOf, Value)) and sample is None and weight is None and (
            len(keys) == 1 or getattr(keys[-1], "distinct", True)):
        return "values"
    if kinds and all(k is Label for k in kinds) and sample is None:
        return "labels"
    raise InvalidParameterError("engines count [Bucket], [GroupOf, Bucket] (optionally sampled per user), "
                                "[Bucket, Bucket], [Value], "
                                "[GroupOf, Value], [[GroupOf,] UserRecords, Bucket], Label keys (optionally "
                                "weighted) or [Partition] (optionally sampled per user) (internal error)")


def check_names(reads: str, column: Any, **refs: Any) -> None:
    """Refuse what an engine reading ``reads`` (in words) cannot: a missing ``column``, or a
    reference (user ids, groups) given as an array instead of a column name."""
    if not isinstance(column, str):
        raise InvalidParameterError(f"for {reads}, pass column='name' (the column to release)")
    for name, ref in refs.items():
        if ref is not None and not isinstance(ref, str):
            raise InvalidParameterError(f"for {reads}, {name} must be a column name")


class Cells(Protocol):
    @property
    def padded_size(self) -> int: ...


class LeafPlan(Protocol):
    """What the data stage reads of a range-tree plan (:class:`dptree.RangeTreePlan` is one): the
    public domain, the number of leaf cells (the padded size), the contribution bound, and the
    refusal of input policies that would make an exactly released total private."""

    @property
    def domain(self) -> Domain: ...

    @property
    def layout(self) -> Cells: ...

    @property
    def max_contributions(self) -> int: ...

    def check_public_total(self, *, user_id: Any = None, on_invalid: str = "error", by: Any = None) -> None: ...


class OrderedCounts(Protocol):
    """Exact counts of one column clamped to a public domain [lower, upper] (ints: an integer
    domain of at most 2^64 points; floats: a float64 domain), for the staged exponential
    mechanisms (:mod:`dptree.interior.staged`). Rows with missing or infinite values are refused
    or dropped by the session's policy before any of these counts. Not private: only a mechanism
    may read them."""

    def buckets(self, count: int) -> np.ndarray:
        """Records per bucket (int64, length ``count``) of a public bucketing of the clamped
        values that is *monotone*: x < y implies bucket(x) <= bucket(y) (the buckets are runs of
        the sorted values; their edges need not be known)."""

    def window(self, first: int, last: int, below: int, lo_rank: int, hi_rank: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(values, counts, upto) of the distinct clamped values in buckets ``first`` ..
        ``last`` whose rank interval [upto - count, upto] meets [lo_rank, hi_rank], sorted,
        where upto = ``below`` (the records in the buckets before ``first``) + the records of
        those buckets up to the value: a run of consecutive distinct values with their exact
        global ranks. Values: float64 on a float domain; on an integer domain the offsets
        value - lower as uint64 (exact for every domain of at most 2^64 points)."""

    def windows(self, requests: Sequence[tuple[int, int, int, int, int]]
                ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """:meth:`window` of each (first, last, below, lo_rank, hi_rank), in as few scans as the
        engine can (one where the requests' buckets fit a query)."""

    def ranks(self, point: int | float) -> tuple[int, int]:
        """(#{x < point}, #{x <= point}) of the clamped values, for a point given as
        :meth:`window` gives values: a float of the domain, or on an integer domain its offset
        point - lower."""

    def upto(self, points: Sequence[int | float]) -> np.ndarray:
        """#{x <= point} (int64) for each of ``points`` (given as for :meth:`ranks`), in one scan."""


class Engine(ABC):
    """Exact grouped counts of one kind of input (module docstring)."""

    #: what the engine reads, for messages ("a file", "a Spark DataFrame")
    READS: ClassVar[str]

    def counts(self, data: Any, keys: Sequence[Key], *, on_invalid: Missing = "error", sample: Sample | None = None,
               weight: str | None = None) -> Counts:
        """Records per distinct combination of ``keys`` (:func:`shape_of` lists the combinations
        every engine counts), or with ``weight`` (a column of exact non-negative integers, Label
        keys only) their exact sums (a total of :data:`dptree.data.weights.MAX_TOTAL` or more
        raises). With ``sample``, at most k records per user are kept first. ``on_invalid``: rows
        whose value is missing, infinite or (on an integer domain) not an integer raise (by kind,
        never by count) or are dropped; Label keys keep missing values.

        Label keys go to :meth:`_label_counts`; a Partition key to :meth:`_partition_counts`; a
        :class:`UserRecords` key to :meth:`_user_counts`; a Bucket or Value key, after an optional
        :class:`GroupOf`, to :meth:`_key_counts`."""
        shape = shape_of(keys, sample, weight)
        if shape == "labels":
            return self._label_counts(data, [key.column for key in keys if isinstance(key, Label)], weight)
        if shape == "partitions":
            assert isinstance(keys[0], Partition)
            return self._partition_counts(data, keys[0], sample)
        if shape == "weighted":
            assert isinstance(keys[0], Bucket) and isinstance(keys[1], Units)
            return self._unit_counts(data, keys[0], keys[1], on_invalid=on_invalid, sample=sample)
        if shape == "grid":
            assert isinstance(keys[0], Bucket) and isinstance(keys[1], Bucket)
            return self._grid_counts(data, keys[0], keys[1], on_invalid=on_invalid)
        key, group = keys[-1], keys[0] if isinstance(keys[0], GroupOf) else None
        if shape == "users":
            users = keys[-2]
            assert isinstance(key, Bucket) and isinstance(users, UserRecords)
            return self._user_counts(data, users, key, group, on_invalid=on_invalid)
        assert isinstance(key, (Bucket, Value))
        return self._key_counts(data, key, group, on_invalid=on_invalid, sample=sample)

    @abstractmethod
    def _label_counts(self, data: Any, levels: Sequence[str], weight: str | None) -> Counts:
        """Records (or with ``weight`` the sums of that column) per distinct combination of the
        ``levels`` columns, missing values kept as a value of their own."""

    @abstractmethod
    def _partition_counts(self, data: Any, key: Partition, sample: Sample | None) -> Counts:
        """The sorted distinct keys of ``key``'s column and, for each, its records, or with
        ``sample`` its distinct users after each user keeps at most ``sample.k`` of their distinct
        keys (:class:`Partition`); keys whose count is 0 are left out."""

    @abstractmethod
    def _user_counts(self, data: Any, users: UserRecords, key: Bucket, group: GroupOf | None, *,
                     on_invalid: Missing) -> Counts:
        """Users per capped number of records (:class:`UserRecords`): the records are the rows
        ``key`` counts (after ``group``'s drop of unlisted groups), one count per user."""

    def _grid_counts(self, data: Any, x: Bucket, y: Bucket, *, on_invalid: Missing) -> Counts:
        """Records per cell (bucket of ``x``'s column, bucket of ``y``'s): a row is counted when both
        of its values are valid (``on_invalid`` applies to each column). Engines that read tables
        override it; the others refuse two columns."""
        raise InvalidParameterError(f"counting two columns at once is not available for {self.READS}; "
                                    "pass a pandas DataFrame, a file or a DuckDB relation")

    @abstractmethod
    def _key_counts(self, data: Any, key: Bucket | Value, group: GroupOf | None, *, on_invalid: Missing,
                    sample: Sample | None) -> Counts:
        """Records per bucket (:class:`Bucket`) or per distinct value (:class:`Value`) of ``key``'s
        column, per public group first when ``group`` is given (:meth:`counts`)."""

    def _unit_counts(self, data: Any, key: Bucket, units: Units, *, on_invalid: Missing,
                     sample: Sample | None) -> Counts:
        """Records per (bucket, weight units) cell (:class:`Units`): keys (leaf codes, unit codes)."""
        raise InvalidParameterError(f"sums of weights are not counted for {self.READS} here; pass the data as a "
                                    "pandas DataFrame or a file")

    def ordered_counts(self, data: Any, *, column: str | None, lower: int | float, upper: int | float,
                       on_invalid: Missing = "error") -> ContextManager[OrderedCounts | None]:
        """A session of :class:`OrderedCounts` queries on ``column`` clamped to [lower, upper]
        (ints: an integer domain, floats: a float64 domain); it yields None where this engine (or
        this column's type) has none, and the caller then counts :class:`Value` keys. Decided from
        the input's kind and schema only, never from its rows. ``on_invalid``: missing and infinite
        values refused (:func:`invalid_values_error`) or dropped, checked by the session's first query
        (:meth:`OrderedCounts.buckets`, which must come first)."""
        return nullcontext(None)
