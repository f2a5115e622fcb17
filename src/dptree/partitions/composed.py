"""A selection followed by one release per released key: the budget split and the statement of the whole.

``groups="private"`` spends ``share`` of epsilon (and, for releases that need a delta of their own,
``share`` of delta; otherwise all of it) on the selection (:mod:`dptree.partitions.selection`), the
rest on the releases. Privacy (add/remove one user):

* the selection is (epsilon_s, delta_s)-DP (its policy);
* given the released keys K (public once selected), one release per key of K on the records of
  that key: a record is counted under its own key only, and a user's records are bounded across
  all keys before the split (``max_contributions``), so the releases of all keys together are as
  private as one (parallel composition, McSherry 2009, Thm 4), rows of keys not in K left out (a
  per-row rule once K is fixed);
* the two steps compose sequentially, the second chosen from the first's output: (epsilon_s +
  epsilon_r, delta_s + delta_r)-DP (Dwork & Roth 2014, Thm 3.16, adaptive).

The statement states both parts, the split, and the released keys (the selection's output, noisy).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Mapping, Sequence

from dptree.errors import InvalidParameterError
from dptree.partitions.selection import SelectionPlan
from dptree.privacy.budget import check_delta
from dptree.privacy.statement import NOT_DERIVED, Neighbors, make_statement

__all__ = ["split_budget", "composed_statement", "COMPOSITION", "SELECTED_KEYS"]

#: the statement's wording of the composition (no count: the number of keys released is noisy)
COMPOSITION = ("sequential: the private selection of the groups, then one release per released group (epsilons "
               "and deltas add); parallel across the released groups: a record is counted in its own group only, "
               "and a user's records are bounded across all groups first, so all of them together cost one release")
#: the statement keys a composed release adds (and the noisy one, the released groups)
SELECTED_KEYS = ("budget_requested", "budget_split", "composition", "selection", "release", "groups")


def _below(total: float, part: float) -> float:
    """``total - part``, rounded down so that part + result <= total exactly."""
    rest = total - part
    while Fraction(part) + Fraction(rest) > Fraction(total):
        rest = math.nextafter(rest, 0.0)
    return rest


def split_budget(epsilon: float, delta: float, share: float, *, release_delta: bool, share_name: str = "groups_share",
                 found: str = "groups='private'") -> tuple[tuple[float, float], tuple[float, float]]:
    """((epsilon, delta) of the selection, (epsilon, delta) of the releases): ``share`` of epsilon to
    the selection; of delta, ``share`` when the releases need a delta (``release_delta``), else all
    of it. Each pair adds up to at most the total, exactly. ``share_name`` and ``found`` name the
    caller's parameters in the messages."""
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
        raise InvalidParameterError(f"{share_name} must be in (0, 1), got {share!r}", parameter=share_name)
    d = check_delta(delta)
    if d <= 0:
        raise InvalidParameterError(f"{found} needs delta > 0: the selection is (epsilon, delta)-DP (a key of one "
                                    "user is released with probability at most delta); pass e.g. delta=1e-6",
                                    parameter="delta")
    eps_s = epsilon * share
    eps_r = _below(epsilon, eps_s)
    if release_delta:
        d_s = d * share
        return (eps_s, d_s), (eps_r, _below(d, d_s))
    return (eps_s, d), (eps_r, 0.0)


def composed_statement(selection: SelectionPlan, member: Mapping[str, Any], *, epsilon: float, delta: float,
                       share: float, release_budget: tuple[float, float], groups: Sequence[Any] | None,
                       private: bool, product: str) -> dict[str, Any]:
    """The privacy statement of a selection followed by one ``product`` release per key of
    ``groups`` (the keys released; None: a plan's statement, before the selection), each made
    under the statement ``member``."""
    k = int(member.get("max_contributions", 1))
    return make_statement(
        mechanism=f"private partition selection, then one {product} per released group",
        neighbors=Neighbors("add_remove", k),
        guarantee="(epsilon, delta)-DP",
        private=private,
        budget_requested={"epsilon": epsilon, "delta": delta},
        budget_split={"groups_share": share, "selection": {"epsilon": selection.epsilon, "delta": selection.delta},
                      "releases": {"epsilon": release_budget[0], "delta": release_budget[1]}},
        composition=COMPOSITION,
        selection=selection.statement,
        release={key: value for key, value in member.items() if key not in NOT_DERIVED},
        **({} if groups is None else {"groups": list(groups)}),
    )
