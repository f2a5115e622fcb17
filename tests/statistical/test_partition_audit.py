"""Private partition selection: the audit passes the registered selections (tests/statistical/test_audit.py
audits every registered spec) and catches planted bugs: a group released from its true count, a
policy whose delta is four times the one claimed, and a hierarchy found from the data whose nodes
are kept from their true counts."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from audit_registry.hierarchies import FOUND_PAIRS, found_spec
from audit_registry.partitions import selection_spec

from dptree.partitions.selection import plan_selection
from dptree.testing import audit


@dataclasses.dataclass(frozen=True)
class _TrueCountThreshold:
    """The bug: a group is released when its true number of users reaches ``at`` (no randomness)."""

    at: int

    def keep(self, source: Any, counts: np.ndarray) -> np.ndarray:
        return np.asarray(counts) >= self.at


_BASE = (["a", "a", "b", "b", "b", "c", "a"], [1, 2, 3, 4, 5, 6, 1])
_TO_THREE = ("a group of 2 users gets a third", _BASE, (_BASE[0] + ["a"], _BASE[1] + [7]))
_NEW = ("a user with a new group", _BASE, (_BASE[0] + ["d"], _BASE[1] + [8]))


def _bug_true_count() -> audit.MechanismSpec:
    plan = dataclasses.replace(plan_selection(epsilon=1.0, delta=0.1), policy=_TrueCountThreshold(3))
    return selection_spec("bug/partition_selection_true_count", plan, [_TO_THREE], epsilon=1.0, delta=0.1)


def _bug_delta_understated() -> audit.MechanismSpec:
    loose = plan_selection(epsilon=1.0, delta=0.4)  # its policy keeps a new group with probability 0.4
    plan = dataclasses.replace(plan_selection(epsilon=1.0, delta=0.1), policy=loose.policy)
    return selection_spec("bug/partition_selection_delta_understated", plan, [_NEW], epsilon=1.0, delta=0.1)


def _bug_found_true_count() -> audit.MechanismSpec:
    """A hierarchy found from the data whose nodes are kept from their true record counts."""
    from dptree.hierarchy.api import FoundStructurePlan
    from dptree.hierarchy.discovery import plan_found_structure

    plan = plan_found_structure(["l1", "l2"], epsilon=2.0, delta=0.2, plan_type=FoundStructurePlan)
    plan = dataclasses.replace(plan, selection=dataclasses.replace(plan.selection, policy=_TrueCountThreshold(3)))
    return found_spec("bug/found_structure_true_count", plan, FOUND_PAIRS[:1], epsilon=1.0, delta=0.2)


PLANTED = {"true_count": _bug_true_count, "delta_understated": _bug_delta_understated,
           "found_structure_true_count": _bug_found_true_count}


@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_the_audit_catches_a_planted_partition_selection_bug(bug: str) -> None:
    spec = PLANTED[bug]()
    report = audit.audit(spec, config=audit.AuditConfig(n_select=2_000, n_eval=6_000), seed=7)
    assert not report.passed, report.summary()


def test_the_optimal_policy_audit_is_tight() -> None:
    """Between 2 and 3 users the optimal policy's drop probabilities are at the bound: the audit
    sees an epsilon near the claimed one, and no more."""
    spec = audit.get("partition_selection/optimal/user")
    report = audit.audit(spec, config=audit.AuditConfig(n_select=8_000, n_eval=24_000), seed=3)
    assert report.passed, report.summary()
    assert report.epsilon_lower_bound > 0.6, report.summary()
