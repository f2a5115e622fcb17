"""Public groups for group-by releases: the caller's list, and each row's place in it.

The list of groups is public and fixed by the caller: every listed group gets a release even when
it has no records, so the set of groups present in the data is never revealed. A row whose group
is not listed (or is missing) is refused, or dropped with ``unknown="drop"`` (a per-row policy:
neighboring datasets stay neighboring). The checks here are on public input only; the engines
apply the list to the rows (a :class:`~dptree.data.engines.base.GroupOf` key of
:meth:`~dptree.data.engines.base.Engine.counts`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dptree.errors import InvalidParameterError

if TYPE_CHECKING:  # the engines import this module: the interface only for the type
    from dptree.data.engines.base import Group

__all__ = ["check_groups"]


def check_groups(groups: Any) -> list[Group]:
    """Validate the public list of groups: non-empty, distinct, all str or all int, no None."""
    if groups is None or isinstance(groups, (str, bytes)) or not hasattr(groups, "__iter__"):
        raise InvalidParameterError("groups must be a list of the public group values, e.g. groups=['a', 'b']")
    gs = list(groups)
    if not gs:
        raise InvalidParameterError("groups must list at least one group")
    if all(isinstance(g, str) for g in gs):
        pass
    elif all(isinstance(g, (int, np.integer)) and not isinstance(g, (bool, np.bool_)) for g in gs):
        gs = [int(g) for g in gs]
    else:
        raise InvalidParameterError("groups must be all strings or all integers (and never None)")
    if len(set(gs)) != len(gs):
        raise InvalidParameterError("groups must be distinct")
    return gs
