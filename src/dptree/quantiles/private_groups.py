"""``PrivateGroupsQuantiles``: one :class:`~dptree.quantiles.release.QuantilesRelease` per group found
privately from the data (``dptree.quantiles(..., by=, groups="private")``).

The groups are selected by :mod:`dptree.partitions` with ``groups_share`` of epsilon and the whole
delta; each released group's quantiles get the rest, on that group's records (parallel
composition; a person's records bounded across groups with ``user_id``): (epsilon, delta)-DP in
all (:mod:`dptree.partitions.composed`). The released groups are output, declared noisy.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Mapping, TypeVar

import numpy as np

from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.io.contract import Release
from dptree.io.grouped import ByGroup
from dptree.io.release_file import check_metadata
from dptree.partitions.composed import split_budget
from dptree.partitions.selection import plan_selection
from dptree.privacy.boundary import Boundary
from dptree.privacy.budget import check_delta, check_release_budget
from dptree.privacy.statement import NOT_DERIVED, check_statement, library, read_statement
from dptree.quantiles.intervals import release_radii
from dptree.quantiles.plan import QuantilesPlanCore, make_plan, selected_statement
from dptree.quantiles.release import QuantilesRelease

__all__ = ["PrivateGroupsQuantiles", "plan_private_groups", "placeholder_release"]

P = TypeVar("P", bound=QuantilesPlanCore)


def plan_private_groups(qa: np.ndarray, *, lower: Any, upper: Any, epsilon: float, delta: float, method: str,
                        level: float, n: int | None, n_max: int | None, n_min: int | None, width: Any,
                        neighbors: str, grid: int, interval: str, user_id: Any, max_contributions: int,
                        max_groups: int | None, groups_share: float, cls: type[P]) -> P:
    """The plan of quantiles by groups found privately: the split (selection: ``groups_share`` of
    epsilon and all of delta), the selection's plan and each group's quantiles' plan (of class ``cls``)."""
    if neighbors != "add_remove":
        raise InvalidParameterError("groups='private' is stated for add/remove neighbors; use "
                                    "neighbors='add_remove'", parameter="neighbors")
    if user_id is None and max_contributions != 1:
        raise InvalidParameterError("groups='private' without user_id counts each record as its own person: pass "
                                    "user_id= to bound persons", parameter="max_contributions")
    if interval == "counts":
        raise InvalidParameterError("groups='private' gives the exponential-mechanism methods the stated bound as "
                                    "intervals (interval='bound'); interval counts per group found from the data are "
                                    "not offered: leave interval out or pass 'bound'", parameter="interval")
    if interval == "auto":  # the tree's calibrated intervals; the others' stated bound
        interval = "calibrated" if method == "tree" else "bound"
    (eps_s, d_s), (eps_r, _) = split_budget(epsilon, delta, groups_share, release_delta=False)
    selection = plan_selection(epsilon=eps_s, delta=d_s, max_groups=1 if max_groups is None else max_groups,
                               per_user=user_id is not None)
    p = make_plan(qa, lower, upper, check_release_budget(eps_r), method, width, neighbors, n, n_max,  # type: ignore[arg-type]
                  max_contributions, user_id, n_min, level=level, interval=interval, grid=grid, cls=cls)
    return replace(p, selection=selection, total=(float(epsilon), float(check_delta(delta)), float(groups_share)))


def placeholder_release(p: QuantilesPlanCore, private: bool, metadata: dict[str, Any]) -> QuantilesRelease:
    """A release of ``p`` with every value at the domain's lower end: its public parameters and
    rank radii, which every group's release shares (written once, and with no group at all)."""
    from dptree.rangetree.quantile_calibration import calibration_sims

    m = p.q.size
    radius = None if p.method == "tree" else release_radii(p.method, p.q, size=p.enc.size, epsilon=p.epsilon / p.k,
                                                           neighbors=p.neighbors, level=p.level, dither=p.dither)
    interval = p.interval  # the stated bound ("bound") for the exponential-mechanism methods
    if p.method == "tree":
        sims = calibration_sims(p.tree.layout.padded_size) if p.interval == "calibrated" else 0
        interval = "calibrated" if sims else "pivot"
    lo = float(p.lo) if p.enc.kind == "float" else p.lo
    return QuantilesRelease(p.q, [lo] * m, [lo] * m, [lo] * m, float(p.level), p.method, p.epsilon, p.size_n, p.lo,
                            p.hi, {**p.member_statement, "private": private}, neighbors=p.neighbors, width=p.width,
                            rank_radius=radius, n_is_upper_bound=p.upper_bound, metadata=metadata, interval=interval,
                            max_contributions=p.k, n_min=p.n_min)

#: one group's noisy fields, each stored as one list per released group
_NOISY = ("values", "ci_low", "ci_high")


@dataclass(repr=False)
class PrivateGroupsQuantiles(ByGroup, Release):  # type: ignore[misc]  # save() returns the paths written
    """One :class:`QuantilesRelease` per group found privately (``release[group]``; ``groups``
    lists the released groups, sorted)."""

    KIND: ClassVar[str] = "quantiles_private_groups"
    PLOT: ClassVar[str | None] = "quantiles"
    MEMBER_KIND: ClassVar[str] = "quantiles"
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "metadata", "metadata.*", "measurements.rank_radius"),
        noisy=(*(f"measurements.{k}" for k in _NOISY), "parameters.groups", "privacy.groups"),
    )

    groups: list[Any]
    releases: dict[Any, QuantilesRelease]
    privacy: dict[str, Any]
    #: one release's public parameters and rank radii (the same for every group, and without any)
    member: QuantilesRelease
    selection: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, group: Any) -> Any:
        if group in self.groups:
            return self.releases[group]
        raise InvalidParameterError("that group was not released (release.groups lists the released groups)")

    @property
    def level(self) -> float:
        return self.member.level

    def to_frame(self, *args: Any, **kwargs: Any) -> Any:
        if not self.groups:
            import pandas as pd

            return pd.DataFrame({"group": []})
        return super().to_frame(*args, **kwargs)

    def summary(self) -> str:
        sel = self.privacy["selection"]["budget_spent"]
        head = (f"{len(self.groups)} group(s) found privately ({', '.join(map(str, self.groups)) or 'none'}; selection "
                f"at epsilon={sel['epsilon']:g}, delta={sel['delta']:g})")
        return f"PrivateGroupsQuantiles: {head}; each " + self.member.summary()

    def to_document(self) -> dict[str, Any]:
        """The statement; the groups, the budget and the selection's parameters, one release's
        parameters; each group's estimates and interval ends (one list per group) and the rank radii."""
        one = self.member.to_document()
        docs = [self.releases[g].to_document() for g in self.groups]
        meas: dict[str, Any] = {k: [d["measurements"][k] for d in docs] for k in _NOISY}
        meas["rank_radius"] = one["measurements"]["rank_radius"]
        params = {"groups": list(self.groups), **self.selection, "quantiles": one["parameters"]}
        return {"privacy": self.privacy, "parameters": params, "measurements": meas, "metadata": self.metadata}

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> PrivateGroupsQuantiles:
        """Rebuild from a validated file: one release's statement and parameters checked like a
        quantiles file, the split and the selection re-derived from the budget, the statement
        checked whole, each group's values checked as points of the domain."""
        kind = cls.KIND
        privacy = read_statement(doc["privacy"], kind=kind)
        params, meas = doc["parameters"], doc["measurements"]
        metadata = check_metadata(doc.get("metadata"))
        groups = params.get("groups")
        if not isinstance(groups, list) or any(
                not isinstance(meas.get(k), list) or len(meas[k]) != len(groups) for k in _NOISY):
            raise ReleaseFileError(f"{kind} release: one list of values and interval ends per released group is needed")
        stated = privacy.get("release")
        if not isinstance(stated, Mapping):
            raise ReleaseFileError(f"{kind} release: the statement lacks the release's part")
        member_statement = {**stated, "library": library(), "private": privacy["private"]}

        def member(values: Any, lows: Any, highs: Any) -> QuantilesRelease:
            return QuantilesRelease.from_document({
                "privacy": dict(member_statement), "parameters": params["quantiles"], "metadata": metadata,
                "measurements": {"values": values, "ci_low": lows, "ci_high": highs,
                                 "rank_radius": meas.get("rank_radius")}})

        q = params["quantiles"].get("q") if isinstance(params.get("quantiles"), Mapping) else None
        lower = params["quantiles"]["domain"].get("lower") if isinstance(q, list) else None
        try:
            one = member([lower] * len(q), [lower] * len(q), [lower] * len(q))  # type: ignore[arg-type]
            budget, sel = params["budget"], params["selection"]
            (eps_s, d_s), (eps_r, _) = split_budget(budget["epsilon"], budget["delta"], budget["groups_share"],
                                                    release_delta=False)
            selection = plan_selection(epsilon=eps_s, delta=d_s, max_groups=sel["max_groups"],
                                       per_user=bool(sel["per_user"]))
        except (KeyError, TypeError, InvalidParameterError) as exc:
            raise ReleaseFileError(f"{kind} release: invalid parameters ({exc})") from None
        if one.epsilon != eps_r:
            raise ReleaseFileError(f"{kind} release: the releases' epsilon is not the one its budget split gives")
        derived = selected_statement(selection, {k: v for k, v in one.privacy.items() if k not in NOT_DERIVED},
                                     epsilon=budget["epsilon"], delta=budget["delta"], share=budget["groups_share"],
                                     release_epsilon=eps_r, groups=groups, private=privacy["private"])
        privacy = check_statement(privacy, derived, kind=kind)
        releases = {g: member(*(meas[k][i] for k in _NOISY)) for i, g in enumerate(groups)}
        if len(releases) != len(groups):
            raise ReleaseFileError(f"{kind} release: the groups must be distinct")
        return cls(groups=list(groups), releases=releases, privacy=privacy, member=one,
                   selection={"budget": dict(budget), "selection": dict(sel)}, metadata=metadata)
