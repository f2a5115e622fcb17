"""The plan of a sparse range tree: everything decided from public parameters, before any data.

The domain (:func:`dptree.data.domain.key_domain`), the layout, the noise of each phase or level, and the
privacy statement (:func:`dptree.privacy.statement.make_statement`). The accounting of both
methods is in :mod:`dptree.sparsetree.mechanism`; every scale is rounded up to the sampler's
dyadic value, so the spend is at most the budget.

* ``"privtree"``: the shape costs eps_1 = share * epsilon', lambda_1 =
  k (2b - 1) / ((b - 1) eps_1), delta = ceil(lambda_1 ln(4b)), theta = ``threshold`` (default 0);
  the counts cost eps_2 = epsilon' - eps_1, at scale k H / eps_2 on each of the H depths of the
  count tree of the released shape (:func:`~dptree.sparsetree.mechanism.count_tree`; H is in the
  release's measurements: it is a function of the released shape). With a number for
  ``structure_share``, share = that number and epsilon' = epsilon. With ``"auto"`` (the default)
  the total is measured first at eps_0 = k / lambda_0, lambda_0 = k / (:data:`TOTAL_SHARE` epsilon)
  rounded up (DLap(lambda_0) added to the number of records), epsilon' = epsilon - eps_0, and the
  share is read from :data:`AUTO_SHARES` at epsilon' T / k, T the noisy total
  (:meth:`SparsePlan.resolved`): an adaptive sequential composition whose total is
  eps_0 + eps_1 + eps_2 <= epsilon whatever T (docs/notes/privacy.md, "Sparse range trees").
* ``"levels"``: each of the L levels costs epsilon / L (scale k L / epsilon); a node is expanded
  from the noisy count ``threshold`` (default ceil(lambda ln(4b))).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Integral, Real
from typing import Any, cast

import numpy as np

from dptree import noise as _noise
from dptree._validation import Interval, Options, validate_params
from dptree.data.domain import Domain
from dptree.errors import InvalidParameterError
from dptree.privacy.budget import RANGE_TREE_BUDGET_RANGE, check_release_budget
from dptree.privacy.loss import Laplace, PrivacyLoss, PureDP
from dptree.privacy.loss import Measurement as Step
from dptree.privacy.statement import Neighbors, make_statement
from dptree.sparsetree.counting import Counts
from dptree.sparsetree.layout import SparseLayout
from dptree.sparsetree.mechanism import (
    Measurement,
    Nodes,
    default_threshold,
    grow_structure,
    level_nodes,
    measure_count_tree,
    measure_levels,
    privtree_delta,
    realised_depths,
    subcritical_threshold,
)

__all__ = ["SparsePlan", "plan_sparse_tree", "BRANCHINGS", "METHODS", "TOTAL_SHARE", "AUTO_SHARES", "auto_share",
           "statement_of"]

#: branching factors: powers of two, so that every node is a range of keys sharing a bit prefix
BRANCHINGS = (2, 4, 8, 16, 32, 64, 128, 256)
METHODS = ("privtree", "levels")

#: ``structure_share="auto"``: the share of epsilon that measures the number of records first
TOTAL_SHARE = 0.01
#: ``structure_share="auto"``: (bound, share) steps; the shape gets ``share`` of the remaining
#: epsilon' when epsilon' T / k (records per unit of noise) is below ``bound``. PrivTree's
#: biased counts need c > i delta ~ i lambda_1 to split at decision depth i, so a small share
#: stops the shape above the data's sparse tails on small data (Pareto sizes: 13x the dense oracle
#: at n = 2000 with 0.15, 2.2x at n = 10^4 with 0.1), while on large data the shape is clear at a
#: smaller share and the counts gain what it frees (docs/notes/sparse_tree.md, "The shape's share from a
#: noisy total")
AUTO_SHARES: tuple[tuple[float, float], ...] = ((1e4, 0.2), (2e5, 0.15), (math.inf, 0.1))


def auto_share(records_per_noise: float, steps: tuple[tuple[float, float], ...] = AUTO_SHARES) -> float:
    """The shape's share of epsilon' at epsilon' T / k = ``records_per_noise`` (T: the noisy total)."""
    return next(share for bound, share in steps if records_per_noise < bound)


@dataclass
class SparsePlan:
    """The public parameters of a sparse range tree and what follows from them."""

    domain: Domain
    layout: SparseLayout
    method: str
    epsilon: float
    max_contributions: int
    dense_depth: int
    threshold: int
    structure_share: float | None = None  # privtree: the shape's share (None: "auto", not resolved yet)
    structure_scale: Fraction | None = None  # privtree: lambda_1
    delta: int | None = None  # privtree: the bias per level
    level_scale: Fraction | None = None  # levels: the scale of every level
    statement: dict[str, Any] = field(default_factory=dict)
    auto_shares: tuple[tuple[float, float], ...] | None = None  # privtree, "auto": the share's steps
    total_scale: Fraction | None = None  # privtree, "auto": lambda_0 of the noisy total
    noisy_total: int | None = None  # privtree, "auto": the released noisy total (set by :meth:`resolved`)

    @property
    def rest_epsilon(self) -> Fraction:
        """privtree: epsilon', what the shape and the counts share (epsilon less the total's eps_0)."""
        spent = Fraction(self.max_contributions) / self.total_scale if self.total_scale is not None else 0
        return Fraction(self.epsilon) - spent

    @property
    def counts_epsilon(self) -> Fraction:
        """privtree: eps_2, the budget of the counts."""
        assert self.structure_share is not None
        return self.rest_epsilon * (1 - Fraction(self.structure_share))

    def resolved(self, noisy_total: int) -> SparsePlan:
        """privtree with ``structure_share="auto"``: the plan once the noisy total T is drawn, at the
        share :func:`auto_share` (epsilon' T / k)."""
        assert self.auto_shares is not None
        share = auto_share(float(self.rest_epsilon) * noisy_total / self.max_contributions, self.auto_shares)
        return self.at_share(share, noisy_total)

    def shares_of(self, totals: np.ndarray) -> list[float]:
        """The share :meth:`resolved` picks for each noisy total (vectorised, for batched copies)."""
        assert self.auto_shares is not None
        per_noise = float(self.rest_epsilon) * np.asarray(totals, dtype=np.float64) / self.max_contributions
        picked = np.select([per_noise < bound for bound, _ in self.auto_shares], [s for _, s in self.auto_shares])
        return [float(v) for v in picked]

    def at_share(self, share: float, noisy_total: int | None = None) -> SparsePlan:
        """privtree with ``structure_share="auto"``: the plan at one of its shares (the shape's noise
        derived from it)."""
        assert self.total_scale is not None
        lam1 = _structure_scale(self.rest_epsilon, share, self.max_contributions, self.layout.branching)
        return dataclasses.replace(self, structure_share=share, structure_scale=lam1,
                                   delta=privtree_delta(lam1, self.layout.branching),
                                   noisy_total=None if noisy_total is None else int(noisy_total))

    def draw_totals(self, keys: Counts, source: _noise.RandomSource, roots: int = 1) -> np.ndarray:
        """``"auto"``: the noisy number of records of each copy (copy i: keys from i * 2^bits),
        DLap(lambda_0) added; the first draw of the release."""
        assert self.total_scale is not None
        size = np.array([keys.size], dtype=np.int64) if roots == 1 else \
            np.bincount((cast(np.ndarray, keys) >> np.uint64(self.layout.bits)).astype(np.int64), minlength=roots)
        return size + _noise.discrete_laplace(source, self.total_scale, roots).astype(np.int64)

    def count_scale(self, h: int) -> Fraction:
        """The discrete-Laplace scale of the counts when the released tree has h levels."""
        if self.method == "levels":
            assert self.level_scale is not None
            return self.level_scale
        assert self.structure_share is not None
        return _count_scale(self.rest_epsilon, self.structure_share, self.max_contributions, h)

    def measure(self, keys: Counts, source: _noise.RandomSource | _noise.RngLike, *, roots: int = 1
                ) -> Measurement:
        """The private step: run the method on the uint64 offsets ``keys`` (sorted, or a
        :class:`~dptree.sparsetree.counting.KeyCounts`; ``roots`` > 1:
        independent copies, copy i's keys offset by i * 2^bits, for the audit). ``source``: a
        RandomSource, or what :func:`dptree.noise.make_source` takes (the audit passes integer seeds)."""
        if not hasattr(source, "random_bytes"):
            source = _noise.make_source(source)
        src = cast(_noise.RandomSource, source)
        lay = self.layout
        if self.structure_scale is None and self.method == "privtree":  # "auto": the total first
            totals = self.draw_totals(keys, src, roots)
            if roots == 1:
                measurement = self.resolved(int(totals[0])).measure(keys, src)
            else:
                measurement = self.measure_by_share(cast(np.ndarray, keys), src, self.shares_of(totals))
            measurement.totals = totals
            return measurement
        if self.method == "levels":
            assert self.level_scale is not None
            levels = measure_levels(keys, lay, [self.level_scale] * lay.depth, [self.threshold] * lay.depth,
                                    self.dense_depth, src, roots=roots)
            shape = [lv.index for lv in levels]
            return Measurement(shape, level_nodes(lay, levels), realised_depths(lay, shape, roots))
        assert self.structure_scale is not None and self.delta is not None
        shape = grow_structure(keys, lay, self.structure_scale, self.delta, self.threshold, self.dense_depth, src,
                               roots=roots)
        return measure_count_tree(keys, lay, shape, self.count_scale, src, roots=roots)

    def measure_by_share(self, keys: np.ndarray, source: _noise.RandomSource, shares: list[float]) -> Measurement:
        """``"auto"`` on batched copies (the audit: copy i's keys from i * 2^bits, sorted): copy i
        at ``shares[i]``. The copies of one share run as one batch, renumbered, then put back in
        copy order (ranges sorted by start, parents re-found), so the result is the measurement of
        independent copies each at its own share."""
        roots, bits = len(shares), np.uint64(self.layout.bits)
        low = np.uint64((1 << self.layout.bits) - 1)
        copy = (keys >> bits).astype(np.int64)
        L = self.layout.depth
        shape: list[list[np.ndarray]] = [[] for _ in range(L)]
        parts: list[list[Nodes]] = [[] for _ in range(L)]
        heights = np.zeros(roots, dtype=np.int64)
        for share in sorted(set(shares)):
            copies = np.flatnonzero(np.asarray(shares) == share)
            renumber = np.full(roots, -1, dtype=np.int64)
            renumber[copies] = np.arange(copies.size)
            mine = renumber[copy] >= 0
            local = (keys[mine] & low) + (renumber[copy[mine]].astype(np.uint64) << bits)
            m = self.at_share(share).measure(local, source, roots=copies.size)
            back = copies.astype(np.uint64)
            for d, idx in enumerate(m.shape):
                top = np.uint64(self.layout.bits - self.layout.shifts[d + 1])
                shape[d].append((back[(idx >> top).astype(np.int64)] << top) | (idx & ((np.uint64(1) << top) - np.uint64(1))))
            for j, nd in enumerate(m.nodes):
                home = back[(nd.start >> bits).astype(np.int64)] << bits
                parts[j].append(Nodes((nd.start & low) | home, (nd.last & low) | home, nd.parent, nd.noisy))
            heights[copies] = m.heights
        nodes: list[Nodes] = []
        for j, group in enumerate(p for p in parts if p):
            start = np.concatenate([g.start for g in group])
            order = np.argsort(start, kind="stable")
            start = start[order]
            parent = (start >> bits).astype(np.int64) if j == 0 else \
                np.searchsorted(nodes[-1].start, start, side="right").astype(np.int64) - 1
            nodes.append(Nodes(start, np.concatenate([g.last for g in group])[order], parent,
                               np.concatenate([g.noisy for g in group])[order]))
        return Measurement([np.sort(np.concatenate(p)) if p else np.zeros(0, np.uint64) for p in shape], nodes, heights)

    def privacy_loss(self) -> PrivacyLoss:
        """The noisy measurements of a release of this plan, for the worst case the statement
        charges (:mod:`dptree.sparsetree.mechanism` has the proofs):

        * ``"levels"``: one :class:`~dptree.privacy.loss.Laplace` per level 1..L at its scale, L1
          sensitivity k (the measured nodes of a level are disjoint ranges);
        * ``"privtree"``: with ``structure_share="auto"`` first the noisy total (Laplace, L1 k);
          then the shape, pure eps_1-DP by PrivTree's geometric series (Zhang, Xiao & Xie 2016,
          Thm 3.1; :class:`~dptree.privacy.loss.PureDP`: its loss is not that of one Laplace
          query); then one Laplace per depth of the count tree, L1 k each. The number of depths H
          and, with ``"auto"``, the share are read from the released output (adaptive
          composition), so the loss listed is the one of the share and H that cost the most."""
        k = self.max_contributions
        who = Neighbors("add_remove", k)
        if self.method == "levels":
            assert self.level_scale is not None
            return PrivacyLoss(who, tuple(Laplace(self.level_scale, Fraction(k), f"level {d}")
                                          for d in range(1, self.layout.depth + 1)))
        steps: list[Step] = []
        shares = [self.structure_share] if self.total_scale is None else [s for _, s in self.auto_shares or ()]
        if self.total_scale is not None:
            steps.append(Laplace(self.total_scale, Fraction(k), "the number of records (picks the shape's share)"))
        worst = max(((share, h) for share in shares for h in range(1, self.layout.depth + 1)),
                    key=lambda sh: self._shape_epsilon(sh[0]) + Fraction(k * sh[1]) / self._count_scale_at(*sh))
        share, h = worst
        steps.append(PureDP(float(self._shape_epsilon(share)), f"the shape: PrivTree splits at share {share:g} "
                            "(Zhang, Xiao & Xie 2016, Thm 3.1)"))
        scale = self._count_scale_at(share, h)
        steps += [Laplace(scale, Fraction(k), f"count tree depth {j} of {h}") for j in range(1, h + 1)]
        return PrivacyLoss(who, tuple(steps))

    def _shape_epsilon(self, share: float | None) -> Fraction:
        """privtree: eps_1 = k (2b - 1) / ((b - 1) lambda_1) of the shape at ``share``."""
        assert share is not None
        b, k = self.layout.branching, self.max_contributions
        lam1 = self.structure_scale if self.total_scale is None else _structure_scale(self.rest_epsilon, share, k, b)
        assert lam1 is not None
        return Fraction(k * (2 * b - 1), b - 1) / lam1

    def _count_scale_at(self, share: float | None, h: int) -> Fraction:
        assert share is not None
        return _count_scale(self.rest_epsilon, share, self.max_contributions, h)

    def variances(self, height: int) -> list[float]:
        """The exact noise variance of the counts of each depth of the count tree (``height``:
        privtree: its number of depths H; levels: ignored, every level 1..L)."""
        depths = self.layout.depth if self.method == "levels" else height
        return [_noise.discrete_laplace_variance(self.count_scale(height))] * depths


def _check_branching(branching: Any) -> int:
    if isinstance(branching, bool) or not isinstance(branching, Integral) or int(branching) not in BRANCHINGS:
        raise InvalidParameterError(f"branching must be a power of two among {list(BRANCHINGS)}, got {branching!r}",
                                    parameter="branching")
    return int(branching)


def statement_of(plan: SparsePlan) -> dict[str, Any]:
    """The privacy statement of a plan (a function of its public parameters only)."""
    dom, lay, k = plan.domain, plan.layout, plan.max_contributions
    L, b = lay.depth, lay.branching
    common = {"budget_requested": {"epsilon": plan.epsilon, "delta": 0.0}, "root": "not measured",
              "dense_depth": plan.dense_depth}
    tree = f"sparse range tree over 2^{dom.bits} keys, {b}-ary, up to {L} levels"
    if plan.method == "levels":
        assert plan.level_scale is not None
        eps_level = Fraction(k) / plan.level_scale
        return make_statement(
            mechanism=f"{tree}; every level noised (discrete Laplace), children measured under nodes whose "
                      "noisy count reaches the threshold; adaptive composition over levels",
            neighbors=Neighbors("add_remove", k), guarantee="pure epsilon-DP", private=True,
            budget_spent={"epsilon": float(eps_level * L), "delta": 0.0}, method="levels",
            levels={"count": L, "epsilon_each": float(eps_level), "laplace_scale": float(plan.level_scale),
                    "l1_sensitivity": float(k), "threshold": plan.threshold}, **common)
    if plan.total_scale is not None:  # "auto": one statement for every share the noisy total can pick
        return _auto_statement(plan, tree, common)
    assert plan.structure_scale is not None and plan.delta is not None
    eps1 = Fraction(k * (2 * b - 1), b - 1) / plan.structure_scale
    eps2 = max(Fraction(k * h) / plan.count_scale(h) for h in range(1, L + 1))
    return make_statement(
        mechanism=f"{tree}; shape by PrivTree's biased-count splits (Zhang, Xiao, Xie 2016, Thm 3.1), then "
                  "the ranges of its count tree (branching nodes, chain remainders) noised (discrete Laplace), "
                  "sequential composition",
        neighbors=Neighbors("add_remove", k), guarantee="pure epsilon-DP", private=True,
        budget_spent={"epsilon": float(eps1 + eps2), "delta": 0.0}, method="privtree",
        structure={"epsilon": float(eps1), "laplace_scale": float(plan.structure_scale), "bias_delta": plan.delta,
                   "threshold": plan.threshold, "share": plan.structure_share},
        counts={"epsilon": float(eps2), "laplace_scale": f"{k} H / {float(plan.counts_epsilon):.17g}, rounded up; "
                "H = the depth of the count tree of the released shape (in the measurements)", "l1_sensitivity_per_level": float(k)},
        **common)


#: the most nodes the forced levels (``dense_depth``) may expand at one level (b keys of 8 bytes each: 2 GiB at b = 16)
MAX_FORCED_NODES = 1 << 24


@validate_params({
    "epsilon": [Interval(Real, 0, None, closed="neither", hint="e.g. epsilon=1.0")],
    "max_contributions": [Interval(Integral, 1, None, hint="records one person may contribute, e.g. 1")],
    "dense_depth": [None, Interval(Integral, 1, None, hint="e.g. dense_depth=3")],
    "threshold": [None, Interval(Integral, -(2**53), 2**53, hint="an integer count, e.g. threshold=50")],
    "method": [Options(METHODS)],
    "structure_share": [Options(("auto",)), Interval(Real, 0, 1, closed="neither",
                                                     hint="'auto' or a fraction of epsilon, e.g. 0.2")],
})
def plan_sparse_tree(domain: Domain, *, epsilon: float, branching: int = 16, max_contributions: int = 1,
                     dense_depth: int | None = None, threshold: int | None = None, method: str = "privtree",
                     structure_share: float | str = "auto") -> SparsePlan:
    """Validate the public parameters and calibrate the noise (no data involved).

    ``dense_depth``: levels 1 .. dense_depth - 1 expand every node (default: levels, while a level
    holds at most 4096 nodes; privtree, 1: a forced split would be a branch of the count tree). ``threshold``: privtree's theta (default 0) or the levels method's noisy count
    from which a node is expanded (default ceil(lambda ln(4 b))). ``structure_share``: privtree's
    share of epsilon for the shape, or ``"auto"`` (default): a noisy total at :data:`TOTAL_SHARE`
    of epsilon picks it from :data:`AUTO_SHARES` (the plan is then completed by
    :meth:`SparsePlan.resolved` when the total is drawn).
    """
    check_release_budget(epsilon, "epsilon", RANGE_TREE_BUDGET_RANGE)
    with _noise.noise_scale_of("max_contributions", max_contributions, 1, given=f"epsilon={epsilon!r}"):
        return _planned(domain, epsilon=epsilon, branching=branching, max_contributions=max_contributions,
                        method=method, dense_depth=dense_depth, threshold=threshold, structure_share=structure_share)


def _planned(domain: Domain, *, epsilon: float, branching: int, max_contributions: int, method: str,
             dense_depth: int | None, threshold: int | None, structure_share: float | str) -> SparsePlan:
    """:func:`plan_sparse_tree` past the budget check: every noise scale is computed here (a
    :class:`~dptree.noise.NoiseScaleError` when the samplers cannot draw it)."""
    b = _check_branching(branching)
    layout = SparseLayout(domain.bits, b)
    L, k = layout.depth, int(max_contributions)
    if dense_depth is None:  # privtree: no forced splits (every split is a branch of the count tree)
        dense_depth = 1
        while method == "levels" and dense_depth < L and (1 << (domain.bits - layout.shifts[dense_depth + 1])) <= 4096:
            dense_depth += 1
    dense_depth = min(int(dense_depth), L)
    forced = 1 << (domain.bits - layout.shifts[dense_depth])  # nodes of the last level every node reaches
    if forced > MAX_FORCED_NODES:
        deepest = max(j for j in range(1, L + 1) if (1 << (domain.bits - layout.shifts[j])) <= MAX_FORCED_NODES)
        raise InvalidParameterError(f"dense_depth={dense_depth} expands every node down to {forced} nodes at one "
                                    f"level (memory past {MAX_FORCED_NODES}): choose dense_depth <= {deepest}")
    # a domain small enough to measure in full: no threshold can outgrow memory
    whole_tree_fits = (1 << domain.bits) <= MAX_FORCED_NODES
    if method == "levels":
        scale = _noise.laplace_scale_used(Fraction(k * L) / Fraction(float(epsilon)))
        theta = default_threshold(scale, b) if threshold is None else int(threshold)
        if theta < 1:
            raise InvalidParameterError("the levels method expands from a noisy count of at least 1: threshold >= 1")
        if theta < subcritical_threshold(scale, b) and not whole_tree_fits:
            raise InvalidParameterError(
                f"threshold={theta} lets noise alone expand an empty node so often that its {b} children "
                "expand in turn without end (the tree would outgrow memory after the budget is spent): use "
                f"threshold >= {subcritical_threshold(scale, b)} at this epsilon and branching (default "
                f"{default_threshold(scale, b)})")
        plan = SparsePlan(domain, layout, method, float(epsilon), k, dense_depth, theta, level_scale=scale)
    elif threshold is not None and int(threshold) < 0 and not whole_tree_fits:
        raise InvalidParameterError(f"threshold={threshold}: privtree splits a node whose noisy count passes "
                                    "this many records; below 0 every empty node splits, down to single keys "
                                    "(the tree would outgrow memory after the budget is spent): use threshold "
                                    ">= 0 (default 0)")
    elif structure_share == "auto":
        lam0 = _noise.laplace_scale_used(Fraction(k) / (Fraction(float(epsilon)) * Fraction(TOTAL_SHARE)))
        plan = SparsePlan(domain, layout, method, float(epsilon), k, dense_depth, 0 if threshold is None else
                          int(threshold), auto_shares=AUTO_SHARES, total_scale=lam0)
    else:
        with _noise.noise_scale_of("structure_share", float(structure_share), given=f"epsilon={epsilon!r}"):
            lam1 = _structure_scale(Fraction(float(epsilon)), float(structure_share), k, b)
            _count_scale(Fraction(float(epsilon)), float(structure_share), k, L)  # the deepest count tree's
        plan = SparsePlan(domain, layout, method, float(epsilon), k, dense_depth, 0 if threshold is None else
                          int(threshold), structure_share=float(structure_share), structure_scale=lam1,
                          delta=privtree_delta(lam1, b))
    plan.statement = statement_of(plan)
    return plan


def _auto_statement(plan: SparsePlan, tree: str, common: dict[str, Any]) -> dict[str, Any]:
    """The statement of ``structure_share="auto"``: the noisy total, then the shape and the counts
    at each share it can pick (the pick is in the measurements: it depends on the noisy total)."""
    k, b, L = plan.max_contributions, plan.layout.branching, plan.layout.depth
    assert plan.total_scale is not None and plan.auto_shares is not None
    eps0, rest = Fraction(k) / plan.total_scale, plan.rest_epsilon
    parts, spent = {}, []
    for bound, share in plan.auto_shares:
        lam1 = _structure_scale(rest, share, k, b)
        eps1 = Fraction(k * (2 * b - 1), b - 1) / lam1
        eps2 = max(Fraction(k * h) / _count_scale(rest, share, k, h) for h in range(1, L + 1))
        spent.append(eps0 + eps1 + eps2)
        parts[f"below {bound:g}"] = {"share": share, "epsilon": float(eps1), "laplace_scale": float(lam1),
                                     "bias_delta": privtree_delta(lam1, b), "counts_epsilon": float(eps2)}
    return make_statement(
        mechanism=f"{tree}; a noisy total picks the shape's share; shape by PrivTree's biased-count splits (Zhang, "
                  "Xiao, Xie 2016, Thm 3.1), then the ranges of its count tree (branching nodes, chain remainders) "
                  "noised (discrete Laplace); adaptive sequential composition",
        neighbors=Neighbors("add_remove", k), guarantee="pure epsilon-DP", private=True,
        budget_spent={"epsilon": float(max(spent)), "delta": 0.0}, method="privtree",
        total={"epsilon": float(eps0), "laplace_scale": float(plan.total_scale), "l1_sensitivity": float(k)},
        structure={"share": "auto", "threshold": plan.threshold,
                   "rule": f"the share of epsilon' = {float(rest):.17g} in the first row whose bound exceeds "
                           f"epsilon' x noisy total / {k}",
                   "by_bound": parts},
        counts={"epsilon": "epsilon' minus the shape's", "laplace_scale": f"{k} H / the counts' epsilon, rounded up; "
                "H = the depth of the count tree of the released shape (in the measurements)",
                "l1_sensitivity_per_level": float(k)},
        **common)


def _count_scale(rest: Fraction, share: float, k: int, h: int) -> Fraction:
    """The counts' scale k H / eps_2 at eps_2 = (1 - share) epsilon', rounded up."""
    return _noise.laplace_scale_used(Fraction(k * max(h, 1)) / (rest * (1 - Fraction(share))))


def _structure_scale(epsilon: Fraction, share: float, k: int, b: int) -> Fraction:
    """lambda_1 = k (2b - 1) / ((b - 1) eps_1) at eps_1 = share * epsilon, rounded up to the sampler's scale."""
    return _noise.laplace_scale_used(Fraction(k * (2 * b - 1), b - 1) / (epsilon * Fraction(share)))
