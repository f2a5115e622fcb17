"""A hierarchy found from the data: ``hierarchy_counts(rows, "private", levels=[...])``.

The tree is discovered top-down, one level at a time, by private partition selection
(:mod:`dptree.partitions`), then counted on the nodes found, with consistent least squares
(Ghazi, Kamath, Kumar, Manurangsi & Wu 2023, the Laplace and Gaussian baselines).

Neighbouring relation: add or remove one record (each record its own user; with a weight column,
one unit of weight). The budget (epsilon, delta) is split by ``structure_share`` s
(:func:`dptree.partitions.composed.split_budget`): s epsilon (and all of delta for Laplace counts,
s delta for Gaussian ones) to the discovery, spread evenly over the L levels, the rest to the counts.

* Level j = 1..L: the candidates are the labels of column j under the nodes kept at level j - 1,
  each counted over the records whose path passes a kept node. One record adds 1 to at most one
  candidate, and a candidate absent on one side has count 1 on the other: one partition selection
  with one key per user, the optimal thresholding of Desfontaines, Voss, Gipson & Mandayam 2022
  (Theorem 1) at (s epsilon / L, s delta / L). Which records take part is a per-record rule once
  the earlier levels' outputs are fixed.
* The counts: the tree found (public once selected) gets an ``other`` leaf under every internal
  node, and each record is counted at its deepest kept node (that node when it is a leaf of the
  found tree, its ``other`` leaf otherwise), so the children of every node sum to it. One record
  changes one count per depth, on at most D = L + 1 depths: the noise is calibrated for depth D
  (Corollary 2.7), whatever depth is found (a shallower tree spends less).
* The steps compose sequentially, each chosen from the outputs before it (Dwork & Roth 2014,
  Theorem 3.16): (epsilon, delta)-DP in all.

The tree found is the discovery's noisy output (declared noisy in the boundary); nothing else about
the records leaves :meth:`FoundStructurePlan.discover`: not the labels that were not kept, their
counts, or the number of candidates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from dptree import noise as _noise
from dptree.errors import InvalidParameterError
from dptree.hierarchy.measure import Calibration, NodeMechanism, calibrate
from dptree.hierarchy.plan import HierarchyPlanCore
from dptree.hierarchy.structure import Hierarchy
from dptree.partitions.composed import split_budget
from dptree.partitions.selection import SelectionPlan, plan_selection
from dptree.privacy.budget import Budget
from dptree.privacy.loss import PrivacyLoss
from dptree.privacy.statement import NOT_DERIVED, Neighbors, make_statement

__all__ = ["FoundStructureCore", "plan_found_structure", "Found", "other_label", "STRUCTURE_SHARE", "FOUND"]

#: the share of epsilon spent finding the tree, unless the caller says otherwise
STRUCTURE_SHARE = 0.5
#: the value of ``hierarchy`` (and of the CLI's ``--structure``) that asks for a tree found from the data
FOUND = "private"
#: the composition of the discovery and the counts, as the statement words it
COMPOSITION = ("sequential: one private partition selection per level, top-down (each over the children of the "
               "nodes kept above it), then the counts of the tree found (epsilons and deltas add)")


def _below(total: float, parts: int) -> float:
    """``total / parts`` rounded down so that ``parts`` of it add up to at most ``total`` exactly."""
    part = total / parts
    while Fraction(part) * parts > Fraction(total):
        part = math.nextafter(part, 0.0)
    return part


@dataclass(frozen=True)
class Found:
    """What the discovery outputs: the kept node paths of every level (level 0: the root, ``()``),
    sorted by (parent, label), and ``parent[j][i]`` the index in level j - 1 of kept node i of level j."""

    paths: list[list[tuple[str, ...]]]
    parent: list[np.ndarray]

    def leaves(self) -> list[tuple[str, ...]]:
        """The kept nodes without a kept child (the root excluded)."""
        out = []
        for j in range(1, len(self.paths)):
            inner = set(self.parent[j + 1].tolist()) if j + 1 < len(self.paths) else set()
            out += [p for i, p in enumerate(self.paths[j]) if i not in inner]
        return out

    def inner(self, j: int) -> np.ndarray:
        """Whether each kept node of level j has a kept child."""
        has = np.zeros(len(self.paths[j]), dtype=bool)
        if j + 1 < len(self.paths):
            has[self.parent[j + 1]] = True
        return has


def other_label(found: Found, preferred: str = "(other)") -> str:
    """The label of the ``other`` leaves: ``preferred``, or ``preferred`` numbered, whichever no
    kept node carries (the kept labels are the discovery's output: choosing by them is
    post-processing)."""
    used = {p[-1] for level in found.paths[1:] for p in level}
    label, i = preferred, 1
    while label in used:
        i += 1
        label = f"{preferred[:-1]} {i})" if preferred.endswith(")") else f"{preferred} {i}"
    return label


@dataclass(frozen=True, eq=False)
class FoundStructureCore:
    """Everything public about a hierarchy found from the data (module docstring): the level
    columns, the budget and its split, the selection of every level and the counts' calibration
    (at depth L + 1). :class:`dptree.hierarchy.api.FoundStructurePlan` adds the private step."""

    levels: tuple[str, ...]
    epsilon: float
    delta: float
    share: float
    selection: SelectionPlan
    counts: HierarchyPlanCore

    @property
    def budget(self) -> Budget:
        return Budget.approx(self.epsilon, self.delta)

    @property
    def calibration(self) -> Calibration:
        return self.counts.calibration

    @property
    def mechanism(self) -> NodeMechanism:
        return self.counts.mechanism

    @property
    def parameters(self) -> dict[str, Any]:
        """The public inputs that re-derive this plan (:func:`plan_found_structure`), as a file stores them."""
        return {"found": FOUND, "levels": list(self.levels), "epsilon": self.epsilon, "delta": self.delta,
                "structure_share": self.share}

    def statement_for(self, private: bool = True) -> dict[str, Any]:
        """The privacy statement: the discovery, the counts and the split (public values only)."""
        sel, m = self.selection, self.mechanism
        n = len(self.levels)
        member = {k: v for k, v in self.counts.statement_for(private).items() if k not in NOT_DERIVED}
        return make_statement(
            mechanism="a hierarchy found from the data: private partition selection per level, top-down, then "
                      "counts of every node found (an 'other' leaf under every internal node)",
            neighbors=Neighbors("add_remove", 1),
            guarantee="(epsilon, delta)-DP",
            private=private,
            budget_requested={"epsilon": self.epsilon, "delta": self.delta},
            budget_split={"structure_share": self.share, "levels": n,
                          "selection_per_level": {"epsilon": sel.epsilon, "delta": sel.delta},
                          "counts": {"epsilon": m.epsilon, "delta": m.delta}},
            composition=COMPOSITION,
            selection=sel.statement,
            release=member,
        )

    @property
    def statement(self) -> dict[str, Any]:
        return self.statement_for(True)

    def privacy_loss(self) -> PrivacyLoss:
        """One (epsilon, delta) step per level, then the counts' D = L + 1 depths."""
        steps = self.selection.measurements() * len(self.levels) + self.counts.privacy_loss().measurements
        return PrivacyLoss(Neighbors("add_remove", 1), steps)

    def discover(self, coded: Any, rng: _noise.RngLike = None) -> tuple[Found, np.ndarray, np.ndarray]:
        """The private step of the discovery (module docstring) on the exact counts per distinct path
        (``coded``: per level the code of each path's label, -1 for missing, and the labels; then
        the records of each path), drawing from ``rng`` (a random source, or a test seed). Returns
        the tree found and, per distinct path, the level and index of its deepest kept node. Keys
        are decided in (parent, label) order, labels as strings."""
        source = _noise.make_source(rng)
        codes, values, n = coded
        m = int(np.asarray(n).size)
        n = np.asarray(n, dtype=np.int64)
        node = np.zeros(m, dtype=np.int64)
        depth = np.zeros(m, dtype=np.int64)
        alive = np.ones(m, dtype=bool)
        paths: list[list[tuple[str, ...]]] = [[()]]
        parents: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
        for j in range(len(self.levels)):
            code = np.asarray(codes[j], dtype=np.int64) if m else np.zeros(0, dtype=np.int64)
            rows = np.flatnonzero(alive & (code >= 0))
            labels = np.array([str(v) for v in values[j]], dtype=object) if rows.size else np.zeros(0, dtype=object)
            names, rank = np.unique(labels[code[rows]].astype(str), return_inverse=True) if rows.size else (
                np.zeros(0, dtype=str), np.zeros(0, dtype=np.int64))
            key = node[rows] * max(len(names), 1) + rank.reshape(-1)
            keys, inv = np.unique(key, return_inverse=True)
            counts = np.zeros(keys.size, dtype=np.int64)
            np.add.at(counts, inv.reshape(-1), n[rows])
            kept = self.selection.keep(source, counts) if keys.size else np.zeros(0, dtype=bool)
            where = np.cumsum(kept) - 1
            hit = kept[inv.reshape(-1)]
            alive[:] = False
            alive[rows[hit]] = True
            node[rows[hit]] = where[inv.reshape(-1)][hit]
            depth[rows[hit]] = j + 1
            width = max(len(names), 1)
            parents.append((keys[kept] // width).astype(np.int64))
            paths.append([paths[j][int(k // width)] + (str(names[int(k % width)]),) for k in keys[kept]])
        return Found(paths, parents), depth, node


def plan_found_structure(levels: Sequence[str], *, epsilon: float, delta: float, method: str = "laplace",
                         structure_share: float = STRUCTURE_SHARE, consistent: bool = True,
                         nonnegative: bool = False, integer: bool = False, gaussian: str = "exact",
                         plan_type: type[FoundStructureCore] = FoundStructureCore) -> Any:
    """The plan (a ``plan_type``) of a hierarchy found from the data, from public values only: the
    split, the selection of one level and the counts' calibration at depth ``len(levels) + 1``."""
    lv = tuple(str(c) for c in levels)
    if not lv:
        raise InvalidParameterError("a hierarchy found from the data needs its level columns: pass levels=[...], "
                                    "root side first (CLI: --levels)", parameter="levels")
    if method not in ("laplace", "gaussian"):
        raise InvalidParameterError("a hierarchy found from the data is counted with method='laplace' or "
                                    "'gaussian' (the multiplicative algorithm needs a public tree)", parameter="method")
    (eps_s, d_s), (eps_r, d_r) = split_budget(float(epsilon), delta, structure_share,
                                              release_delta=method == "gaussian", share_name="structure_share",
                                              found="a hierarchy found from the data")
    selection = plan_selection(epsilon=_below(eps_s, len(lv)), delta=_below(d_s, len(lv)), per_user=False)
    mech = NodeMechanism(method, eps_r, d_r if method == "gaussian" else 0.0, 1)
    counts = HierarchyPlanCore(_depth_only(len(lv)), calibrate(mech, len(lv) + 1, gaussian=gaussian),
                               consistent=bool(consistent), nonnegative=bool(nonnegative), integer=bool(integer))
    return plan_type(lv, float(epsilon), float(delta), float(structure_share), selection, counts)


def _depth_only(n_levels: int) -> Hierarchy:
    """A one-path tree of ``n_levels`` levels: the counts' plan before the tree is found (its
    statement and loss depend on the depth only)."""
    return Hierarchy.from_paths([tuple(f"level {j + 1}" for j in range(n_levels))])
