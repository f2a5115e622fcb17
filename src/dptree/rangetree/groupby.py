"""Group-by releases: one range tree per group of a public list, under parallel composition.

Each record belongs to exactly one group (its ``by`` value), so the groups' histograms are
computed on disjoint parts of the data and adding or removing one record changes one group's tree
only: the set of all group releases is as private as a single release (parallel composition,
McSherry 2009, Thm 4). With user-level bounding (``user_id=``, ``max_contributions=k``), at most k
records of a user are kept *across all groups* before the split, so the trees of all groups
together change by at most k per level (L1; and L2 <= k since sum k_g^2 <= (sum k_g)^2) when a
user is added or removed: the same guarantee again.

The list of groups is public (:mod:`dptree.data.groups`): every listed group gets a release even
when it has no records (its counts are pure noise). The histograms come from the data stage
(:func:`dptree.data.histograms.leaf_histogram` with ``by=``); the entry point is
:func:`dptree.range_tree` with ``by=`` (:mod:`dptree.rangetree.api`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from dptree import noise as _noise
from dptree.data.groups import check_groups
from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.io.contract import CountRelease
from dptree.io.grouped import ByGroup, group_statement, read_group_document
from dptree.io.release_file import creation_metadata
from dptree.privacy.boundary import Boundary
from dptree.rangetree.release import RangeTree, RangeTreePlan

__all__ = ["GroupedRelease", "release_groups", "check_groups"]

def _tree_from_document(doc: Mapping[str, Any]) -> RangeTree:
    """A group's tree, loaded as a range-tree file is (:meth:`RangeTree.from_document`)."""
    return RangeTree.from_document(dict(doc))


@dataclass(repr=False)
class GroupedRelease(ByGroup, CountRelease):  # type: ignore[misc]  # save() returns the paths written
    """One :class:`RangeTree` per public group (``release[group]``), made under parallel
    composition: the whole set costs the budget of one release (McSherry 2009, Thm 4)."""

    KIND: ClassVar[str] = "range_tree_groups"
    PLOT: ClassVar[str | None] = "cdf"  # how plot() draws it (dptree.io.display)
    MEMBER_KIND: ClassVar[str] = "range_tree"
    #: the privacy boundary (:mod:`dptree.privacy.boundary`): each group's noisy node counts only
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "measurements.noise_parameters", "metadata", "metadata.*"),
        noisy=("measurements.levels",),
    )

    groups: list[Any]
    releases: dict[Any, RangeTree]
    privacy: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ queries (one group's tree)
    def count(self, group: Any, lo: Any, hi: Any) -> Any:
        """The estimated number of records of ``group`` in [lo, hi] (:meth:`RangeTree.count`)."""
        return self[group].count(lo, hi)

    def stderr(self, group: Any, lo: Any, hi: Any) -> Any:
        """The exact standard error of :meth:`count` (noise only)."""
        return self[group].stderr(lo, hi)

    def ci(self, group: Any, lo: Any, hi: Any, level: float = 0.95) -> Any:
        """A confidence interval at ``level`` for :meth:`count`."""
        return self[group].ci(lo, hi, level)

    def summary(self) -> str:
        names = ", ".join(map(str, self.groups))
        return f"GroupedRelease of {len(self.groups)} groups ({names}): " + self[self.groups[0]].summary()

    # ------------------------------------------------------------------ the file
    def to_document(self) -> dict[str, Any]:
        """The group statement; the groups and the trees' shared parameters; each group's noisy
        levels (in the order of ``groups``) and the shared noise parameters."""
        docs = [self.releases[g].to_document() for g in self.groups]
        return {
            "privacy": self.privacy,
            "parameters": {"groups": list(self.groups), "tree": docs[0]["parameters"]},
            "measurements": {"noise_parameters": docs[0]["measurements"]["noise_parameters"],
                             "levels": [d["measurements"]["levels"] for d in docs]},
            "metadata": self.metadata,
        }

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> GroupedRelease:
        """Rebuild from a validated file: each group's tree is checked like a range-tree file
        (noise parameters re-derived from the budget, statement against the parameters)."""
        groups, privacy, statement, metadata = read_group_document(doc, cls.KIND)
        params, meas = doc["parameters"], doc["measurements"]
        levels = meas["levels"]
        if not isinstance(levels, list) or len(levels) != len(groups):
            raise ReleaseFileError(f"{cls.KIND} release: one list of levels per group is needed")
        releases = {
            g: _tree_from_document({
                "privacy": dict(statement), "parameters": params["tree"], "metadata": metadata,
                "measurements": {"noise_parameters": meas["noise_parameters"], "levels": lv},
            })
            for g, lv in zip(groups, levels)
        }
        return cls(groups=groups, releases=releases, privacy=privacy, metadata=metadata)


def release_groups(
    plan: RangeTreePlan,
    hists: np.ndarray,
    groups: Sequence[Any],
    rng: _noise.RngLike = None,
    *,
    column: Any = None,
    source: Any = None,
    created: str | None = None,
) -> GroupedRelease:
    """Add noise to every group's histogram (independent noise per group) and estimate."""
    plan.check_public_total(by="groups")
    gs = check_groups(groups)
    h = np.asarray(hists)
    if h.ndim != 2 or h.shape[0] != len(gs):
        raise InvalidParameterError(f"need one histogram per group: got shape {h.shape} for {len(gs)} groups")
    src = _noise.make_source(rng)  # one stream for all groups: a seed must not repeat the same noise
    meta = creation_metadata(column=column, source=source, created=created)
    created = meta["created_utc"]
    releases = {g: plan.release(h[i], src, column=column, source=source, created=created) for i, g in enumerate(gs)}
    privacy = group_statement(plan.statement, gs, src.private)
    return GroupedRelease(groups=gs, releases=releases, privacy=privacy, metadata=meta)
