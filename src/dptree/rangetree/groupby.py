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
from typing import Any, ClassVar, Iterator, Mapping, Sequence

import numpy as np

from dptree import noise as _noise
from dptree.data.groups import check_groups
from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.io.contract import CountRelease
from dptree.io.grouped import ByGroup, group_statement, read_group_document
from dptree.io.release_file import creation_metadata
from dptree.privacy.boundary import Boundary
from dptree.rangetree.estimates import ForestEstimates, LeafEstimates
from dptree.rangetree.release import RangeTree, RangeTreePlan

__all__ = ["GroupedRelease", "GroupTrees", "release_groups", "check_groups"]

def _tree_from_document(doc: Mapping[str, Any]) -> RangeTree:
    """A group's tree, loaded as a range-tree file is (:meth:`RangeTree.from_document`)."""
    return RangeTree.from_document(dict(doc))


class GroupTrees(Mapping[Any, RangeTree]):
    """The trees of a group-by release, by group: read-only, in the order of the groups.

    Made from the release's measurements of all groups at once (:meth:`from_forest`: level j of
    shape (groups, nodes), their estimates computed together, :class:`ForestEstimates`), a
    group's :class:`RangeTree` is built when first asked for; or from trees already built (a file)."""

    def __init__(self, groups: Sequence[Any], trees: Mapping[Any, RangeTree] | None = None) -> None:
        self._index = {g: i for i, g in enumerate(groups)}
        self._trees: dict[Any, RangeTree] = dict(trees or {})
        self._plan: RangeTreePlan | None = None
        self._measurements: list[np.ndarray | None] = []
        self._estimates: ForestEstimates | None = None
        self._statement: dict[str, Any] = {}
        self._metadata: dict[str, Any] = {}

    @classmethod
    def from_forest(cls, groups: Sequence[Any], plan: RangeTreePlan, measurements: list[np.ndarray | None],
                    statement: dict[str, Any], metadata: dict[str, Any]) -> GroupTrees:
        """The trees of ``groups`` (row i of every level is group i's) under one ``statement``
        (a group's) and ``metadata``."""
        out = cls(groups)
        out._plan, out._measurements = plan, measurements
        out._estimates = LeafEstimates.forest(plan.layout, plan.domain.size, plan.noise, plan.level_variance,
                                              measurements)
        out._statement, out._metadata = statement, metadata
        return out

    def __getitem__(self, group: Any) -> RangeTree:
        tree = self._trees.get(group)
        if tree is None:
            i = self._index[group]  # KeyError: not a group; TypeError: not hashable
            if self._estimates is None:
                raise KeyError(group)
            tree = RangeTree(self._plan, [None if m is None else m[i] for m in self._measurements],  # type: ignore[arg-type]
                             dict(self._statement), dict(self._metadata), estimates=self._estimates.member(i))
            self._trees[group] = tree
        return tree

    def __contains__(self, group: object) -> bool:
        return group in self._index

    def __iter__(self) -> Iterator[Any]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def levels(self, group: Any) -> list[list[int] | None]:
        """The noisy node counts of ``group``'s tree, level by level, as the file holds them."""
        if group in self._trees or self._estimates is None:
            meas = self[group].measurements
        else:
            i = self._index[group]
            meas = [None if m is None else m[i] for m in self._measurements]
        return [None if m is None else m.tolist() for m in meas]


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
    releases: Mapping[Any, RangeTree]
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
        first = self.releases[self.groups[0]].to_document()
        trees = self.releases if isinstance(self.releases, GroupTrees) else GroupTrees(self.groups, self.releases)
        return {
            "privacy": self.privacy,
            "parameters": {"groups": list(self.groups), "tree": first["parameters"]},
            "measurements": {"noise_parameters": first["measurements"]["noise_parameters"],
                             "levels": [trees.levels(g) for g in self.groups]},
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
        return cls(groups=groups, releases=GroupTrees(groups, releases), privacy=privacy, metadata=metadata)


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
    """Add noise to every group's histogram (independent noise per group) and estimate.

    All groups are measured together (:meth:`RangeTreePlan.measure_groups`: one sampler call per
    level) and estimated together (:class:`ForestEstimates`); each group's tree is built when
    first asked for (:class:`GroupTrees`)."""
    plan.check_public_total(by="groups")
    gs = check_groups(groups)
    h = np.asarray(hists)
    if h.ndim != 2 or h.shape[0] != len(gs):
        raise InvalidParameterError(f"need one histogram per group: got shape {h.shape} for {len(gs)} groups")
    src = _noise.make_source(rng)  # one stream for all groups: a seed must not repeat the same noise
    meta = creation_metadata(column=column, source=source, created=created)
    measurements = plan.measure_groups(h, src)
    statement = dict(plan.statement)
    statement["private"] = bool(src.private)
    releases = GroupTrees.from_forest(gs, plan, measurements, statement, dict(meta))  # each tree's own copy
    privacy = group_statement(plan.statement, gs, src.private)
    return GroupedRelease(groups=gs, releases=releases, privacy=privacy, metadata=meta)
