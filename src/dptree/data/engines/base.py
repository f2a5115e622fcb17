"""The one engine interface: how exact counts are computed from a kind of input.

An engine turns the caller's rows into exact counts, and nothing else: it never adds noise and
never returns anything but the counts (no sizes, no values; its errors name a kind of problem,
never a count or a value, :mod:`dptree.errors`). Five operations:

* :meth:`Engine.leaf_histogram` -- records per leaf of a public :class:`~dptree.data.domain.Domain`;
* :meth:`Engine.bounded_histogram` -- the same after keeping at most k records per user, chosen
  uniformly at random (the algorithm of :mod:`dptree.data.bounding`);
* :meth:`Engine.grouped_histograms` -- one leaf histogram per group of a public list (optionally
  bounded across groups);
* :meth:`Engine.path_counts` -- records (or exact integer weights) per distinct combination of
  hierarchy level columns;
* :meth:`Engine.value_counts` -- the sorted distinct values of a column and their records (the
  data stage of the exponential mechanisms over ordered domains: interior points, quantiles);
* :meth:`Engine.ordered_counts` (optional) -- a session of :class:`OrderedCounts` queries (a
  bucket histogram, the distinct values of a rank window, the ranks of one point) for the staged
  exponential mechanisms of :mod:`dptree.interior.staged`, which never sort the whole column.

:mod:`dptree.data.engines.numpy` (in-memory data), :mod:`~dptree.data.engines.duckdb` (files and
DuckDB relations) and :mod:`~dptree.data.engines.spark` (Spark DataFrames) implement it, with
identical results for the same random source (tested); :mod:`dptree.data.histograms` picks one.
Arguments reach an engine validated: groups checked, ``k`` resolved, the random source made.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, ClassVar, ContextManager, Literal, Protocol, Sequence, Union

import numpy as np

from dptree.data.domain import Domain
from dptree.errors import DataError, InvalidParameterError, infinite_values_error, missing_values_error
from dptree.noise import RandomSource

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Engine", "LeafPlan", "Missing", "Unknown", "Group", "COUNT", "OrderedCounts", "invalid_values_error"]

Missing = Literal["error", "drop"]
Unknown = Literal["error", "drop"]
Group = Union[str, int]

#: the count column of :meth:`Engine.path_counts`
COUNT = "__n__"


def invalid_values_error(kind: Literal["missing", "infinite"], column: str | None, message: str | None) -> DataError:
    """The error of :meth:`Engine.value_counts` for missing or infinite values, naming no value,
    position or count: the wording of :func:`~dptree.errors.check_invalid`, the same for every
    engine, product and input kind (``column`` and ``message`` are accepted and not used: the
    in-memory reader words it the same way, :func:`~dptree.data.inputs.valid_records`)."""
    return missing_values_error() if kind == "missing" else infinite_values_error()


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

    def check_public_total(self, *, user_id: Any = None, missing: str = "error", by: Any = None) -> None: ...


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


class Engine(ABC):
    """Exact counts of one kind of input. ``cells`` is the length of a histogram (the domain's
    leaves plus the tree's padding leaves, which stay 0)."""

    #: what the engine reads, for messages ("a file", "a Spark DataFrame")
    READS: ClassVar[str]

    @abstractmethod
    def leaf_histogram(self, data: Any, domain: Domain, cells: int, *, column: str | None,
                       missing: Missing) -> np.ndarray:
        """Records per leaf (int64, length ``cells``); values outside the domain are clamped."""

    @abstractmethod
    def bounded_histogram(self, data: Any, domain: Domain, cells: int, *, column: str | None, user_id: Any,
                          k: int, missing: Missing, source: RandomSource) -> np.ndarray:
        """:meth:`leaf_histogram` of at most ``k`` records per user, chosen uniformly at random."""

    @abstractmethod
    def grouped_histograms(self, data: Any, domain: Domain, cells: int, *, column: str | None, by: Any,
                           groups: Sequence[Group], unknown: Unknown, user_id: Any, k: int | None,
                           missing: Missing, source: RandomSource) -> np.ndarray:
        """One histogram per group, shape (len(groups), cells); with ``user_id``, at most ``k``
        records per user across all groups. Rows of unlisted groups raise or are dropped."""

    @abstractmethod
    def path_counts(self, data: Any, levels: Sequence[str], *, weight: str | None) -> pd.DataFrame:
        """One row per distinct combination of the ``levels`` columns (values as read, missing
        ones kept) with :data:`COUNT`: its records, or its exact sum of the integer ``weight``
        column (int64; a total of :data:`dptree.data.weights.MAX_TOTAL` or more raises)."""

    def value_counts(self, data: Any, *, column: str | None, missing: Missing = "error",
                     infinite: Missing = "error", message: str | None = None,
                     domain: tuple[str, Any, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(sorted distinct values, records per value as int64): memory O(distinct values), no
        Python object per row. Values keep their type (int64/uint64, float64, datetime64; Python
        ints only for integers wider than 64 bits). Missing values (NULL, None, NaN, NaT) raise
        :func:`~dptree.errors.missing_values_error` or are dropped (``missing``), +-inf raise
        :func:`~dptree.errors.infinite_values_error` or are dropped (``infinite``), as for
        :meth:`leaf_histogram`; ``message`` replaces the text of both errors (the caller's policy
        names its own parameter). The messages name no value, position or count."""
        raise InvalidParameterError(f"value counts are not available for {self.READS}")

    def values(self, data: Any, *, column: str | None, missing: Missing = "error", infinite: Missing = "error",
               message: str | None = None, domain: tuple[str, Any, Any] | None = None) -> np.ndarray:
        """Every valid value of the column (checks as :meth:`value_counts`), in the column's type:
        memory O(rows), for a mechanism that counts the values itself. By default
        :meth:`value_counts`' values repeated by their counts (sorted); an engine may return them
        unsorted, without the sort."""
        vals, cnt = self.value_counts(data, column=column, missing=missing, infinite=infinite, message=message,
                                      domain=domain)
        return np.repeat(vals, cnt)

    def grouped_value_counts(self, data: Any, *, column: str | None, by: Any, groups: Sequence[Group],
                             unknown: Unknown, missing: Missing = "error", infinite: Missing = "error",
                             message: str | None = None,
                             domain: tuple[str, Any, Any] | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
        """:meth:`value_counts` of each public group's rows, in the order of ``groups`` (a group
        without rows gets empty arrays); rows of unlisted or missing groups raise or are dropped
        (``unknown``), as for :meth:`grouped_histograms`."""
        raise InvalidParameterError(f"grouped value counts are not available for {self.READS}")

    def ordered_counts(self, data: Any, *, column: str | None, lower: int | float, upper: int | float,
                       missing: Missing = "error", infinite: Missing = "error",
                       message: str | None = None) -> ContextManager[OrderedCounts | None]:
        """A session of :class:`OrderedCounts` queries on ``column`` clamped to [lower, upper]
        (ints: an integer domain, floats: a float64 domain); it yields None where this engine (or
        this column's type) has none, and the caller then uses :meth:`value_counts`. Decided from
        the input's kind and schema only, never from its rows. ``missing``, ``infinite`` and
        ``message`` as for :meth:`value_counts`, checked by the session's first query
        (:meth:`OrderedCounts.buckets`, which must come first)."""
        return nullcontext(None)

    def names(self, column: Any, *, reads: str | None = None, **refs: Any) -> None:
        """Refuse what this engine cannot read: a missing ``column``, or a reference (user ids,
        groups) given as an array instead of a column name. ``reads``: the input, in words."""
        where = reads or self.READS
        if not isinstance(column, str):
            raise InvalidParameterError(f"for {where}, pass column='name' (the column to release)")
        for name, ref in refs.items():
            if ref is not None and not isinstance(ref, str):
                raise InvalidParameterError(f"for {where}, {name} must be a column name")
