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
functions (``neighbors=``, ``max_contributions=``, ``user_id=``) are shortcuts that build one
(:func:`unit_from_keywords`); every release function and plan takes the values themselves as
``unit=`` and ``budget=`` (:func:`privacy_values`).

>>> PerUser("uid", max_contributions=3).neighbors()
Neighbors(relation='add_remove', max_contributions=3)
>>> Replace().describe()
'replace one record (the number of records is public)'
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Callable, TypeVar, Union

from dptree.errors import InvalidParameterError
from dptree.privacy.budget import Budget
from dptree.privacy.statement import Neighbors

__all__ = ["PerRecord", "PerUser", "Replace", "PrivacyUnit", "unit_from_keywords", "privacy_values"]

F = TypeVar("F", bound=Callable[..., Any])


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


_UNIT_KEYWORDS = ("neighbors", "max_contributions", "user_id")
_BUDGET_KEYWORDS = ("epsilon", "delta", "rho")


def _unit_keywords(unit: Any, accepts: frozenset[str], name: str) -> dict[str, Any]:
    """The shortcut keywords that state ``unit`` to a function accepting ``accepts``."""
    if not isinstance(unit, (PerRecord, PerUser, Replace)):
        raise InvalidParameterError(
            f"unit must be dptree.PerRecord(), dptree.PerUser(...) or dptree.Replace(...), got {type(unit).__name__}",
            parameter="unit")
    out: dict[str, Any] = {}
    if isinstance(unit, PerUser):
        if "user_id" not in accepts:
            raise InvalidParameterError(f"unit=dptree.PerUser(...) is not available: {name} does not bound records "
                                        "per user; use dptree.PerRecord()", parameter="unit")
        out["user_id"] = unit.user_id
    if isinstance(unit, Replace):
        if "neighbors" not in accepts:
            raise InvalidParameterError(f"unit=dptree.Replace(...) is not available: {name} is stated under "
                                        "add/remove neighbours only; use dptree.PerRecord()",
                                        parameter="unit")
        out["neighbors"] = "replace"
    k = unit.max_contributions
    if "max_contributions" in accepts:
        out["max_contributions"] = k
    elif k != 1:
        raise InvalidParameterError(f"unit with max_contributions={k} is not available: {name} is stated for "
                                    "one record per person; use dptree.PerRecord()", parameter="unit")
    return out


def _budget_keywords(budget: Any, accepts: frozenset[str], name: str) -> dict[str, Any]:
    """The shortcut keywords that state ``budget`` to a function accepting ``accepts``."""
    if not isinstance(budget, Budget):
        raise InvalidParameterError(f"budget must be a dptree.Budget, e.g. dptree.Budget(epsilon=1.0), got "
                                    f"{type(budget).__name__}", parameter="budget")
    if budget.kind == "zcdp":
        if "rho" not in accepts:
            raise InvalidParameterError(f"budget=Budget(rho=...) is not available: {name} takes an epsilon budget; "
                                        "pass dptree.Budget(epsilon=...)",
                                        parameter="budget")
        return {"rho": budget.rho}
    if budget.kind == "approx" and "delta" not in accepts:
        raise InvalidParameterError(f"budget with a delta is not available: {name} is pure epsilon-DP; pass "
                                    "dptree.Budget(epsilon=...)",
                                    parameter="budget")
    return {"epsilon": budget.epsilon, **({"delta": budget.delta} if budget.kind == "approx" else {})}


def privacy_values(func: F) -> F:
    """Decorator: ``unit=`` (a :data:`PrivacyUnit`) and ``budget=`` (a :class:`Budget`) of a call
    are unpacked into the function's shortcut keywords (``neighbors``, ``max_contributions``,
    ``user_id``; ``epsilon``, ``delta``, ``rho``) before the function, and its declared
    validation, run. A value the function cannot state (a zCDP budget for a pure mechanism, a
    per-user unit where nothing is bounded per user), or a value given together with its
    shortcuts, is an InvalidParameterError naming ``unit`` or ``budget``. The function declares
    ``unit`` and ``budget`` in its signature (default None) for its readers and type checkers."""
    params = inspect.signature(func).parameters
    if "unit" not in params or "budget" not in params:
        raise TypeError(f"{func.__qualname__}: declare unit= and budget= to use @privacy_values")
    accepts = frozenset(params)
    name = func.__name__ + "()"

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        unit, budget = kwargs.pop("unit", None), kwargs.pop("budget", None)
        for value, shortcuts, keywords in ((unit, _UNIT_KEYWORDS, _unit_keywords),
                                           (budget, _BUDGET_KEYWORDS, _budget_keywords)):
            if value is None:
                continue
            clash = sorted(k for k in shortcuts if k in kwargs)
            if clash:
                which = "unit" if keywords is _unit_keywords else "budget"
                raise InvalidParameterError(f"{which}= and its shortcuts ({', '.join(clash)}=) were both given: pass one "
                                            "of them",
                                            parameter=which)
            kwargs.update(keywords(value, accepts, name))
        return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
