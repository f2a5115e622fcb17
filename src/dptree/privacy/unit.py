"""The privacy unit: whose data a guarantee protects, as a small frozen value.

* :class:`PerRecord` -- neighbours differ by adding or removing one record (the default), or up
  to ``max_contributions`` records a caller guarantees belong to one person;
* :class:`PerUser` -- by adding or removing every record of one user, who may have at most
  ``max_contributions`` records; the release keeps at most that many per user, chosen uniformly
  at random (:mod:`dptree.data.bounding`), so the bound holds whatever the data;
* :class:`Replace` -- by replacing ``max_contributions`` records with as many others: the number
  of records is the same in both, hence public (bounded DP).

Each is validated on construction, so a combination no mechanism is stated for (replacing a
user's records, a user bound without a user column) cannot be built. The keywords of the release
functions (``neighbors=``, ``max_contributions=``, ``user_id=``) are shortcuts that build one:
:func:`unit_from_keywords`.

>>> PerUser("uid", max_contributions=3).neighbors()
Neighbors(relation='add_remove', max_contributions=3)
>>> Replace().describe()
'replace one record (the number of records is public)'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from dptree.errors import InvalidParameterError
from dptree.privacy.statement import Neighbors

__all__ = ["PerRecord", "PerUser", "Replace", "PrivacyUnit", "unit_from_keywords"]


def _positive_int(k: Any, name: str) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidParameterError(f"{name} must be a positive integer, got {k!r}")
    return int(k)


@dataclass(frozen=True)
class PerRecord:
    """Add or remove one record; or, with ``max_contributions=k``, up to k records (one person's,
    a bound the caller guarantees without a user column: nothing is sampled)."""

    max_contributions: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_contributions", _positive_int(self.max_contributions, "max_contributions"))

    def neighbors(self) -> Neighbors:
        return Neighbors("add_remove", self.max_contributions)

    @property
    def user_id(self) -> None:
        return None

    def describe(self) -> str:
        return self.neighbors().describe()


@dataclass(frozen=True, eq=False)
class PerUser:
    """Add or remove all records of one user, identified by ``user_id`` (a column name, or an
    array with one id per value), who may have at most ``max_contributions`` records (enforced
    by sampling before anything is counted)."""

    user_id: Any
    max_contributions: int

    def __post_init__(self) -> None:
        if self.user_id is None:
            raise InvalidParameterError("PerUser needs user_id: the column (or array) that identifies each user")
        object.__setattr__(self, "max_contributions", _positive_int(self.max_contributions, "max_contributions"))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PerUser) or other.max_contributions != self.max_contributions:
            return False
        same = other.user_id is self.user_id
        return same or (isinstance(self.user_id, str) and self.user_id == other.user_id)

    def __hash__(self) -> int:
        return hash((self.user_id if isinstance(self.user_id, str) else id(self.user_id), self.max_contributions))

    def neighbors(self) -> Neighbors:
        return Neighbors("add_remove", self.max_contributions)

    def describe(self) -> str:
        return self.neighbors().describe()


@dataclass(frozen=True)
class Replace:
    """Replace ``max_contributions`` records (one person's, declared by the caller) with as many
    others; the number of records is public."""

    max_contributions: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_contributions", _positive_int(self.max_contributions, "max_contributions"))

    @property
    def user_id(self) -> None:
        return None

    def neighbors(self) -> Neighbors:
        return Neighbors("replace", self.max_contributions)

    def describe(self) -> str:
        return self.neighbors().describe()


PrivacyUnit = Union[PerRecord, PerUser, Replace]


def unit_from_keywords(unit: PrivacyUnit | None = None, *, neighbors: str = "add_remove",
                       max_contributions: int = 1, user_id: Any = None) -> PrivacyUnit:
    """The unit of a call: ``unit`` itself, or the one the shortcut keywords describe (never
    both: an InvalidParameterError names the clash). ``neighbors="replace"`` with ``user_id`` is
    refused: a user's records are added or removed, not replaced."""
    if unit is not None:
        if not isinstance(unit, (PerRecord, PerUser, Replace)):
            raise InvalidParameterError(
                f"unit must be dptree.PerRecord(), dptree.PerUser(...) or dptree.Replace(...), got {type(unit).__name__}")
        if neighbors != "add_remove" or max_contributions != 1 or user_id is not None:
            raise InvalidParameterError("pass the privacy unit either as unit= or as neighbors=/max_contributions=/"
                                        "user_id=, not both")
        return unit
    if neighbors == "replace":
        if user_id is not None:
            raise InvalidParameterError("user_id= bounds the records of each user under add/remove neighbours; "
                                        "it cannot be combined with neighbors='replace'")
        return Replace(max_contributions)
    if neighbors != "add_remove":
        raise InvalidParameterError(f"neighbors must be 'add_remove' or 'replace', got {neighbors!r}")
    if user_id is not None:
        return PerUser(user_id, max_contributions)
    return PerRecord(max_contributions)
