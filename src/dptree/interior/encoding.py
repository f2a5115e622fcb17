"""The interior-point family's data (Kaplan et al. 2020): records read into positions of the public
domain (:func:`dptree.data.domain.point_domain`), counted, and the domain in a release file.

Every mechanism works on positions in [0, |X|): an integer's offset from ``lower``, a float's
offset in the float64 order, a date's whole units of its resolution after ``lower``. Values outside
[lower, upper] are clamped (a per-record transformation; how many were clamped is never revealed).
Invalid values (NaN, infinities, non-integers in an integer domain) raise an error that names no
value, position or count, or are dropped record by record with ``on_invalid="drop"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Mapping

import numpy as np

from dptree.data.domain import Domain, point_domain
from dptree.data.values import INVALID_HINT, INVALID_VALUES
from dptree.errors import DataError, DomainError, InvalidParameterError, ReleaseFileError
from dptree.interior.selection import _group

__all__ = ["INVALID_HINT", "check_point_width", "checked_point_domain", "domain_document", "domain_from_document", "encode_values", "prepare",
           "prepare_groups"]


def check_point_width(dom: Domain, width: Any) -> None:
    """Refuse ``width`` on a numeric domain of the mechanisms that output a point: every integer or
    float between the bounds is already one (a date domain's width is its resolution)."""
    if width is not None and dom.kind != "datetime":
        raise InvalidParameterError("width= is the resolution of a date domain; a numeric domain has none (every "
                                    "integer, or every float, between the bounds is a point): drop width=")


def checked_point_domain(lower: Any, upper: Any, width: Any = None) -> Domain:
    """The point domain [lower, upper] of a mechanism that outputs a point, ``width`` refused on a
    numeric domain (:func:`check_point_width`)."""
    dom = point_domain(lower, upper, width)
    check_point_width(dom, width)
    return dom


def domain_document(enc: Domain) -> dict[str, Any]:
    """The public domain as a release file holds it: kind and bounds (dates: ISO text and the width
    in nanoseconds, as a range tree's file holds them)."""
    lower, upper = enc.bounds
    if enc.kind == "datetime":
        return {"kind": "datetime", "lower": enc.dump(lower), "upper": enc.dump(upper), "width": enc.width}
    return {"kind": enc.kind, "lower": lower, "upper": upper}


def domain_from_document(doc: Any, kind: str) -> Domain:
    """The encoding of a loaded ``parameters.domain``, checked (ReleaseFileError otherwise)."""
    if not isinstance(doc, Mapping) or doc.get("kind") not in ("integer", "float", "datetime"):
        raise ReleaseFileError(f"{kind} release: parameters.domain must give kind 'integer', 'float' or 'datetime'")
    if doc["kind"] == "datetime":
        w = doc.get("width")
        if not (isinstance(doc.get("lower"), str) and isinstance(doc.get("upper"), str) and type(w) is int and w > 0):
            raise ReleaseFileError(f"{kind} release: a date domain gives ISO bounds and a width in nanoseconds")
        try:
            enc = point_domain(doc["lower"], doc["upper"], np.timedelta64(w, "ns"))
        except DomainError as exc:
            raise ReleaseFileError(f"{kind} release: parameters.domain is malformed ({exc})") from None
    else:
        want = int if doc["kind"] == "integer" else float
        if not (type(doc.get("lower")) is want and type(doc.get("upper")) is want):
            raise ReleaseFileError(f"{kind} release: the domain bounds must be {doc['kind']}s")
        enc = point_domain(doc["lower"], doc["upper"])
    if domain_document(enc) != dict(doc):
        raise ReleaseFileError(f"{kind} release: parameters.domain is malformed")
    return enc


def encode_values(values: Any, enc: Domain, on_invalid: str = "error") -> list[int]:
    """Positions of the clamped values, as Python ints.

    NaN/infinite values (and non-integers in an integer domain) raise :class:`DataError` with a
    message that names no value, position or count, or are dropped with ``on_invalid="drop"``.
    Values of a wrong type (strings, bools) always raise (a schema error, not a data value)."""
    from dptree.data.inputs import to_numpy

    if isinstance(values, (str, bytes)) or values is None:
        raise DataError("values must be a sequence of numbers")
    arr = to_numpy(_exact(values), name="values")
    if arr.dtype.kind == "b":
        raise DataError("values must be numbers, not bools")
    return [int(o) for o in enc.positions(arr, drop=on_invalid == "drop")[0].tolist()]


def _exact(values: Any) -> Any:
    """A list or tuple holding integers beyond 2^53 as an object array: numpy would make it
    float64 and round them (integer domains are exact at any size)."""
    if isinstance(values, (list, tuple)) and any(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                                 and not -(2**53) <= v <= 2**53 for v in values):
        return np.array(values, dtype=object)
    return values


def prepare(
    values: Any, lower: Any, upper: Any, counts: Sequence[int] | None, on_invalid: str = "error",
    column: str | None = None, width: Any = None,
) -> tuple[Domain, Any, Any]:
    """The public domain and the data as sorted distinct positions with multiplicities.

    ``values``: anything :func:`dptree.data.histograms.value_counts` reads (arrays, lists,
    pandas/polars/Arrow, with ``column=`` a table, a CSV/Parquet file, a DuckDB relation or a
    Spark DataFrame), counted in its engine (memory O(distinct values)) and encoded vectorised:
    offsets as uint64 and multiplicities as int64 numpy arrays when |X| <= 2^64, Python ints
    beyond. ``counts``: multiplicities of in-memory ``values`` instead. ``width``: a date domain's
    resolution (:func:`~dptree.data.domain.point_domain`).

    There is no refusal on empty data: whether the data is empty is private; the mechanisms are
    defined on the empty multiset (every quality is 0) and their output is then data-independent."""
    from dptree.data.histograms import value_counts
    from dptree.data.inputs import to_numpy

    enc = point_domain(lower, upper, width)
    drop = on_invalid == "drop"
    if counts is not None and drop:
        raise InvalidParameterError("on_invalid='drop' cannot be combined with counts=; drop the rows first")
    if (isinstance(values, (str, bytes)) and column is None) or values is None:
        raise DataError("values must be a sequence of numbers")
    values = _exact(values)
    policy: Literal["error", "drop"] = "drop" if drop else "error"
    if counts is not None:
        arr = to_numpy(values, column=column, name="values")
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            raise DataError(INVALID_VALUES)
        cnt = _count_array(counts)
        if cnt.shape != arr.shape or (cnt.size and cnt.min() < 0):
            raise DataError(_BAD_COUNTS)
    else:
        arr, cnt = value_counts(values, column=column, on_invalid=policy, message=INVALID_VALUES,
                                domain=(enc.kind, *enc.bounds))
    return (enc, *_encode_counts(arr, cnt, enc, drop))


_BAD_COUNTS = "counts must be non-negative integers, one per value"


def _count_array(counts: Any) -> np.ndarray:
    """The caller's ``counts`` as integers: whole numbers only (NaN, infinities, fractions and text
    are refused, never truncated)."""
    cnt = np.asarray(counts)
    if cnt.dtype.kind in "iu":
        return cnt
    try:
        whole = [int(c) for c in counts]
        if any(w != c for w, c in zip(whole, counts)):
            raise ValueError("not a whole number")
        return np.array(whole, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        raise DataError(_BAD_COUNTS) from None


def prepare_groups(
    values: Any, lower: Any, upper: Any, *, by: Any, groups: Sequence[Any], unknown: Literal["error", "drop"] = "error",
    on_invalid: str = "error", column: str | None = None, width: Any = None,
) -> tuple[Domain, list[tuple[Any, Any]]]:
    """:func:`prepare` for each public group's rows (``by``: a column of the table, file, relation
    or Spark DataFrame ``values``, or an array beside in-memory values), counted in the engine in
    one pass (:func:`dptree.data.histograms.grouped_value_counts`); in the order of ``groups``, a
    group without rows as empty arrays. Rows of unlisted groups raise or are dropped (``unknown``)."""
    from dptree.data.histograms import grouped_value_counts

    enc = point_domain(lower, upper, width)
    drop = on_invalid == "drop"
    if (isinstance(values, (str, bytes)) and column is None) or values is None:
        raise DataError("values must be a sequence of numbers")
    policy: Literal["error", "drop"] = "drop" if drop else "error"
    parts = grouped_value_counts(_exact(values), column=column, by=by, groups=groups, unknown=unknown,
                                 on_invalid=policy, message=INVALID_VALUES,
                                 domain=(enc.kind, *enc.bounds))
    return enc, [_encode_counts(arr, cnt, enc, drop) for arr, cnt in parts]


def _encode_counts(arr: np.ndarray, cnt: np.ndarray, enc: Domain, drop: bool) -> tuple[Any, Any]:
    """Distinct values and counts (as read) as sorted distinct offsets of ``enc`` with multiplicities."""
    offs, keep = enc.positions(arr, drop=drop)
    if keep is not None:
        cnt = cnt[keep]
    if offs.dtype == object:
        return _group(offs.tolist(), cnt.tolist())
    return _group(offs, cnt)
