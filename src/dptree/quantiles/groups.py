"""``GroupedQuantiles``: one :class:`~dptree.quantiles.release.QuantilesRelease` per public group.

``dptree.quantiles(..., by=, groups=)`` runs one release per group of the caller's public list on
that group's records, all with the same method and parameters and the whole epsilon: each record
belongs to one group, so adding or removing a record changes one group's release only and the set
is epsilon-DP (parallel composition, McSherry 2009, Thm 4; add/remove-one only: under replace-one a
record could move between groups). Every listed group gets a release, with or without records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Sequence

from dptree.errors import ReleaseFileError
from dptree.io.contract import Release
from dptree.io.grouped import ByGroup, group_statement, read_group_document
from dptree.privacy.boundary import Boundary
from dptree.quantiles.release import QuantilesRelease

__all__ = ["GroupedQuantiles", "grouped_quantiles"]

#: one group's noisy fields, each stored as one list per group
_NOISY = ("values", "ci_low", "ci_high")


@dataclass(repr=False)
class GroupedQuantiles(ByGroup, Release):  # type: ignore[misc]  # save() returns the paths written
    """One :class:`QuantilesRelease` per public group (``release[group]``), made under parallel
    composition: the whole set costs the budget of one release."""

    KIND: ClassVar[str] = "quantiles_groups"
    PLOT: ClassVar[str | None] = "quantiles"  # how plot() draws it (dptree.io.display)
    MEMBER_KIND: ClassVar[str] = "quantiles"
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "metadata", "metadata.*", "measurements.rank_radius"),
        noisy=tuple(f"measurements.{k}" for k in _NOISY + ("interval_counts",)),
    )

    groups: list[Any]
    releases: dict[Any, QuantilesRelease]
    privacy: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def level(self) -> float:
        """The confidence level of every group's intervals."""
        return self[self.groups[0]].level

    def summary(self) -> str:
        names = ", ".join(map(str, self.groups))
        return f"GroupedQuantiles of {len(self.groups)} groups ({names}): " + self[self.groups[0]].summary()

    def to_document(self) -> dict[str, Any]:
        """The group statement; the groups and the releases' shared parameters; each group's
        estimates and interval ends (one list per group, in the order of ``groups``; with
        ``interval="counts"`` each group's noisy interval counts too) and the shared rank radii."""
        docs = [self.releases[g].to_document() for g in self.groups]
        meas: dict[str, Any] = {k: [d["measurements"][k] for d in docs] for k in _NOISY}
        if "interval_counts" in docs[0]["measurements"]:
            meas["interval_counts"] = [d["measurements"]["interval_counts"] for d in docs]
        meas["rank_radius"] = docs[0]["measurements"]["rank_radius"]
        params = {"groups": list(self.groups), "quantiles": docs[0]["parameters"]}
        return {"privacy": self.privacy, "parameters": params, "measurements": meas, "metadata": self.metadata}

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> GroupedQuantiles:
        """Rebuild from a validated file: each group's release is checked like a quantiles file
        (statement against the parameters, rank radii, every value a point of the domain)."""
        groups, privacy, statement, metadata = read_group_document(doc, cls.KIND)
        meas = doc["measurements"]
        noisy = _NOISY + (("interval_counts",) if "interval_counts" in meas else ())
        if any(not isinstance(meas.get(k), list) or len(meas[k]) != len(groups) for k in noisy):
            raise ReleaseFileError(f"{cls.KIND} release: one list of values and interval ends per group is needed")
        releases = {
            g: QuantilesRelease.from_document({
                "privacy": dict(statement), "parameters": doc["parameters"]["quantiles"], "metadata": metadata,
                "measurements": {**{k: meas[k][i] for k in noisy}, "rank_radius": meas.get("rank_radius")},
            })
            for i, g in enumerate(groups)
        }
        return cls(groups=groups, releases=releases, privacy=privacy, metadata=metadata)


def grouped_quantiles(groups: Sequence[Any], releases: Mapping[Any, QuantilesRelease], statement: Mapping[str, Any],
                      metadata: dict[str, Any]) -> GroupedQuantiles:
    """The group-by release of ``releases`` (one per group, each made under ``statement``)."""
    private = bool(statement.get("private", False))
    return GroupedQuantiles(groups=list(groups), releases=dict(releases),
                            privacy=group_statement(statement, groups, private), metadata=metadata)
