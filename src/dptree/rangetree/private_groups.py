"""``range_tree(values, by=..., groups="private")``: the groups found privately from the data, then
one range tree per released group.

Neighbouring relation: add or remove one user (``user_id=``: all their records, at most
``max_groups`` distinct groups counted in the selection and at most ``max_contributions`` records in
the trees, each bounded by uniform sampling in the engine), or one record without a user column.
The groups are selected by :mod:`dptree.partitions` with ``groups_share`` of epsilon (and all of
delta for Laplace trees, ``groups_share`` of it for Gaussian ones); the trees of the released
groups get the rest, under parallel composition across groups (:mod:`dptree.rangetree.groupby`);
the two steps compose sequentially (:mod:`dptree.partitions.composed`): the release is
(epsilon, delta)-DP in all. The released groups are output (declared noisy in the boundary);
nothing names a group that was not released.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Mapping

from dptree import noise as _noise
from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.io.contract import CountRelease
from dptree.io.grouped import ByGroup
from dptree.io.release_file import check_metadata, creation_metadata
from dptree.partitions.composed import composed_statement, split_budget
from dptree.partitions.selection import SelectionPlan, plan_selection
from dptree.privacy.boundary import Boundary
from dptree.privacy.budget import Budget
from dptree.privacy.loss import PrivacyLoss
from dptree.privacy.statement import Neighbors, check_statement, read_statement
from dptree.rangetree.document import domain_inputs, plan_from_parameters, range_tree_document
from dptree.rangetree.groupby import GroupTrees
from dptree.rangetree.release import RangeTree, RangeTreePlan, plan_range_tree

__all__ = ["PrivateGroupsPlan", "PrivateGroupsRelease", "plan_private_groups"]


@dataclass(frozen=True, eq=False)
class PrivateGroupsPlan:
    """Everything public about a release with groups found from the data: the selection's plan, the
    trees' plan and the budget with its split (module docstring). :meth:`release` is the one
    private step."""

    selection: SelectionPlan
    tree: RangeTreePlan
    epsilon: float
    delta: float
    share: float

    @property
    def budget(self) -> Budget:
        return Budget.approx(self.epsilon, self.delta)

    @property
    def max_contributions(self) -> int:
        return self.tree.max_contributions

    def statement_for(self, groups: list[Any] | None, private: bool = True) -> dict[str, Any]:
        """The release's statement with the released ``groups`` (None: the plan's, before any)."""
        tb = self.tree.budget
        return composed_statement(self.selection, self.tree.statement, epsilon=self.epsilon, delta=self.delta,
                                  share=self.share, release_budget=(float(tb.epsilon or 0.0), float(tb.delta or 0.0)),
                                  groups=groups, private=private, product="range tree")

    @property
    def statement(self) -> dict[str, Any]:
        return self.statement_for(None)

    def privacy_loss(self) -> PrivacyLoss:
        """The selection as one (epsilon, delta) step, then one tree's levels (parallel across the
        released groups; their number is not public, so ``parallel`` is 1)."""
        steps = self.selection.measurements() + self.tree.privacy_loss().measurements
        return PrivacyLoss(Neighbors("add_remove", self.tree.max_contributions), steps)

    def release(self, data: Any, *, by: Any, user_id: Any = None, column: str | None = None,
                unknown: Literal["error", "drop"] = "error", on_invalid: Literal["error", "drop"] = "error",
                rng: _noise.RngLike = None, fmt: str | None = None, progress: Any = False, source: Any = None,
                created: str | None = None) -> PrivateGroupsRelease:
        """Select the groups of ``data`` (``by``: a column name, or an array beside in-memory
        values), then release one tree per selected group (rows of other groups left out). One
        random source (``rng``) draws the bounding, the selection and the noise."""
        from dptree.data.histograms import leaf_histogram

        src = _noise.make_source(rng)
        meta = creation_metadata(column=column, source=source, created=created)
        keys = self.selection.select(data, by=by, user_id=user_id, rng=src, fmt=fmt, unknown=unknown)
        member = {**self.tree.statement, "private": bool(src.private)}
        if keys:
            hist = leaf_histogram(data, self.tree, column=column, user_id=user_id, by=by, groups=keys, unknown="drop",
                                  on_invalid=on_invalid, rng=src, fmt=fmt, progress=progress)
            trees = GroupTrees.from_forest(keys, self.tree, self.tree.measure_groups(hist, src), member, dict(meta))
        else:
            trees = GroupTrees([], {})
        return PrivateGroupsRelease(groups=keys, releases=trees, privacy=self.statement_for(keys, src.private),
                                    plan=self, metadata=meta)


def plan_private_groups(*, lower: Any, upper: Any, epsilon: float | None, delta: float, rho: float | None = None,
                        max_groups: int = 1, groups_share: float = 0.5, per_user: bool = True, width: Any = None,
                        branching: int | None = None, noise: str = "laplace", neighbors: str = "add_remove",
                        max_contributions: int = 1, levels: str = "uniform") -> PrivateGroupsPlan:
    """The plan of ``range_tree(..., groups="private")`` from public parameters only: the split
    (:func:`~dptree.partitions.composed.split_budget`), the selection's plan and the trees' plan."""
    if neighbors != "add_remove":
        raise InvalidParameterError("groups='private' is stated for add/remove neighbors (a user's records are added "
                                    "or removed); use neighbors='add_remove'", parameter="neighbors")
    if rho is not None or epsilon is None:
        raise InvalidParameterError("groups='private' needs an (epsilon, delta) budget: the selection of the groups "
                                    "is (epsilon, delta)-DP; pass epsilon= and delta=", parameter="epsilon")
    if not per_user and max_contributions != 1:
        raise InvalidParameterError("groups='private' without user_id counts each record as its own user: pass "
                                    "user_id= to bound users (max_contributions records, max_groups groups each)",
                                    parameter="max_contributions")
    (eps_s, d_s), (eps_r, d_r) = split_budget(float(epsilon), delta, groups_share, release_delta=noise == "gaussian")
    tree = plan_range_tree(lower=lower, upper=upper, epsilon=eps_r, delta=d_r, width=width, branching=branching,
                           noise=noise, neighbors=neighbors, max_contributions=max_contributions, levels=levels)
    selection = plan_selection(epsilon=eps_s, delta=d_s, max_groups=max_groups, per_user=per_user)
    return PrivateGroupsPlan(selection, tree, float(epsilon), float(delta), float(groups_share))


def _tree_parameters(tree: RangeTreePlan) -> dict[str, Any]:
    """The file parameters of the trees of ``tree`` (:func:`range_tree_document`, as
    :meth:`PrivateGroupsRelease.to_document` writes them)."""
    return range_tree_document(tree, [None] * (tree.layout.depth + 1), {}, {})["parameters"]


@dataclass(repr=False)
class PrivateGroupsRelease(ByGroup, CountRelease):  # type: ignore[misc]  # save() returns the paths written
    """One :class:`RangeTree` per group found privately from the data (``release[group]``; the
    groups released in ``groups``, sorted). Made by :meth:`PrivateGroupsPlan.release`."""

    KIND: ClassVar[str] = "range_tree_private_groups"
    PLOT: ClassVar[str | None] = "cdf"
    MEMBER_KIND: ClassVar[str] = "range_tree"
    #: the released groups are the selection's noisy output; each group's noisy node counts
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "measurements.noise_parameters", "metadata", "metadata.*"),
        noisy=("measurements.levels", "parameters.groups", "privacy.groups"),
    )

    groups: list[Any]
    releases: Mapping[Any, RangeTree]
    privacy: dict[str, Any]
    plan: PrivateGroupsPlan
    metadata: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, group: Any) -> Any:
        if group in self.groups:
            return self.releases[group]
        raise InvalidParameterError("that group was not released (release.groups lists the released groups)")

    def count(self, group: Any, lo: Any, hi: Any) -> Any:
        """The estimated number of records of ``group`` in [lo, hi] (:meth:`RangeTree.count`)."""
        return self[group].count(lo, hi)

    def stderr(self, group: Any, lo: Any, hi: Any) -> Any:
        """The exact standard error of :meth:`count` (noise only)."""
        return self[group].stderr(lo, hi)

    def ci(self, group: Any, lo: Any, hi: Any, level: float = 0.95) -> Any:
        """A confidence interval at ``level`` for :meth:`count`."""
        return self[group].ci(lo, hi, level)

    def to_frame(self, *args: Any, **kwargs: Any) -> Any:
        """Every released group's ``to_frame``, stacked, with a first column ``group`` (empty when
        no group was released)."""
        if not self.groups:
            import pandas as pd

            return pd.DataFrame({"group": []})
        return super().to_frame(*args, **kwargs)

    def summary(self) -> str:
        sel = self.plan.selection
        head = (f"{len(self.groups)} group(s) found privately ({', '.join(map(str, self.groups)) or 'none'}; "
                f"selection at epsilon={sel.epsilon:g}, delta={sel.delta:g}, {sel.policy_name} policy)")
        if not self.groups:
            return f"PrivateGroupsRelease: {head}{'' if self.private else ', NOT PRIVATE (test seed)'}"
        return f"PrivateGroupsRelease: {head}; each " + self[self.groups[0]].summary()

    def to_document(self) -> dict[str, Any]:
        """The statement; the groups, the budget and its split's inputs, the selection's parameters
        and the trees' shared parameters; each group's noisy levels (in the order of ``groups``)."""
        tree = range_tree_document(self.plan.tree, [None] * (self.plan.tree.layout.depth + 1), {}, {})
        trees = self.releases if isinstance(self.releases, GroupTrees) else GroupTrees(self.groups, self.releases)
        plan = self.plan
        return {
            "privacy": self.privacy,
            "parameters": {"groups": list(self.groups),
                           "budget": {"epsilon": plan.epsilon, "delta": plan.delta, "groups_share": plan.share},
                           "selection": {k: plan.selection.parameters[k] for k in ("max_groups", "per_user")},
                           "tree": tree["parameters"]},
            "measurements": {"noise_parameters": tree["measurements"]["noise_parameters"],
                             "levels": [trees.levels(g) for g in self.groups]},
            "metadata": self.metadata,
        }

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> PrivateGroupsRelease:
        """Rebuild from a validated file: the plan re-derived from the budget, the split and the
        trees' parameters (which must be the ones the split gives), the statement checked whole,
        each group's tree checked like a range-tree file."""
        kind = cls.KIND
        params, meas = doc["parameters"], doc["measurements"]
        try:
            budget, sel, t = params["budget"], params["selection"], plan_from_parameters(params["tree"], RangeTreePlan)
            lower, upper, width = domain_inputs(params["tree"])
            plan = plan_private_groups(
                lower=lower, upper=upper, width=width, epsilon=budget["epsilon"], delta=budget["delta"],
                groups_share=budget["groups_share"], max_groups=sel["max_groups"], per_user=bool(sel["per_user"]),
                branching=t.layout.branching, noise=t.noise, neighbors=t.neighbors,
                max_contributions=t.max_contributions, levels=t.levels)
        except (KeyError, TypeError, InvalidParameterError) as exc:
            raise ReleaseFileError(f"{kind} release: invalid parameters ({exc})") from None
        if _tree_parameters(plan.tree) != params["tree"]:
            raise ReleaseFileError(f"{kind} release: the trees' parameters are not the ones its budget split gives "
                                   "(tampered?)")
        groups = params["groups"]
        levels = meas.get("levels")
        if not isinstance(groups, list) or not isinstance(levels, list) or len(levels) != len(groups):
            raise ReleaseFileError(f"{kind} release: one list of levels per released group is needed")
        privacy = read_statement(doc["privacy"], kind=kind)
        privacy = check_statement(privacy, plan.statement_for(groups, privacy["private"]), kind=kind)
        metadata = check_metadata(doc.get("metadata"))
        member = {**plan.tree.statement, "private": privacy["private"]}
        releases = {g: RangeTree.from_document({
            "privacy": dict(member), "parameters": params["tree"], "metadata": metadata,
            "measurements": {"noise_parameters": meas["noise_parameters"], "levels": lv}}) for g, lv in zip(groups,
                                                                                                           levels)}
        if len(releases) != len(groups):
            raise ReleaseFileError(f"{kind} release: the groups must be distinct")
        return cls(groups=list(groups), releases=GroupTrees(groups, releases), privacy=privacy, plan=plan,
                   metadata=metadata)
