"""``hierarchy_counts``: the one entry point from user data to a hierarchy release (Ghazi,
Kamath, Kumar, Manurangsi, Wu 2023, "On Differentially Private Counting on Trees",
``001_4ad1135f2c911f1b.txt``).

The walk goes downward: public parameters (the plan, :func:`plan_hierarchy_counts`: validated,
then calibrated by :func:`dptree.hierarchy.measure.calibrate`) -> data to node counts
(:mod:`dptree.hierarchy.counting`) -> the noise step (:func:`dptree.hierarchy.measure.measure_nodes`)
-> post-processing into a :class:`~dptree.hierarchy.release.HierarchyRelease`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, Literal, Sequence

import numpy as np

from dptree import noise as _noise
from dptree._validation import InstanceOf, Interval, Options, validate_params
from dptree.errors import InvalidParameterError
from dptree.hierarchy.counting import coded_path_counts, leaf_counts, node_weights
from dptree.hierarchy.discovery import FOUND, STRUCTURE_SHARE, FoundStructureCore, other_label, plan_found_structure
from dptree.hierarchy.measure import METHODS, NodeMechanism, calibrate, measure_nodes
from dptree.hierarchy.plan import HierarchyPlanCore
from dptree.hierarchy.release import HierarchyRelease, assemble
from dptree.hierarchy.structure import Hierarchy
from dptree.io import release_file as _serialize
from dptree.noise.sources import RNG
from dptree.privacy.budget import BUDGET_RANGE, Budget, check_delta
from dptree.privacy.measurement import measure
from dptree.privacy.unit import PrivacyUnit, privacy_values

__all__ = ["hierarchy_counts", "plan_hierarchy_counts", "HierarchyCountsPlan", "FoundStructurePlan", "measurement_copies"]

_FLAG = InstanceOf(bool, np.bool_, description="True or False")
_EPSILON = Interval(Real, BUDGET_RANGE[0], BUDGET_RANGE[1], closed="both",
                    hint=f"epsilon outside the supported range [{BUDGET_RANGE[0]:g}, {BUDGET_RANGE[1]:g}] is "
                    "refused; pass e.g. epsilon=1.0")
_CONSTRAINTS: dict[str, list[Any]] = {
    "rng": RNG,
    "hierarchy": [InstanceOf(Hierarchy, description="a dptree.Hierarchy",
                             hint="build one with Hierarchy.from_paths, from_frame or from_parent_table, or pass "
                             "'private' to find the tree from the data"), Options((FOUND,))],
    "structure_share": [Interval(Real, 0, 1, closed="neither",
                                 hint="e.g. structure_share=0.5 (the share of epsilon spent finding the tree)")],
    "epsilon": [_EPSILON],
    "delta": [Interval(Real, 0, 1, closed="left")],
    "method": [Options(METHODS)],
    "alpha": [None, Interval(Real, 1e-12, 1, closed="left",
                             hint="alpha is in (0, 1): the multiplicative error allowance of the "
                             "alpha-mRMSE of Ghazi et al. 2023 (e.g. alpha=0.1)")],
    "consistent": [_FLAG],
    "nonnegative": [_FLAG],
    "integer": [_FLAG],
    "max_contributions": [Interval(Integral, 1, None)],
    "tau_min": [None, Interval(Real, 1, None, closed="left",
                               hint="a threshold on node weights, which are whole counts (leave it out: "
                               "Theorem 4.1's value)")],
    "unknown": [Options(("error", "drop", "other"))],
    "gaussian_calibration": [Options(("exact", "zcdp"))],
}


_PLAN = ("hierarchy", "epsilon", "delta", "method", "alpha", "consistent", "nonnegative", "integer",
         "max_contributions", "tau_min", "gaussian_calibration", "structure_share")
_READ = ("rng", "unknown")


@dataclass(frozen=True, eq=False)
class HierarchyCountsPlan(HierarchyPlanCore):
    """A hierarchy release planned from public inputs (:func:`plan_hierarchy_counts`): its
    statement, privacy loss and expected errors (:class:`~dptree.hierarchy.plan.HierarchyPlanCore`),
    and :meth:`release`, the private step."""

    @validate_params({k: _CONSTRAINTS[k] for k in _READ})
    def release(self, data: Any, *, levels: Sequence[str] | None = None, weight: str | None = None,
                unknown: Literal["error", "drop", "other"] = "error", rng: _noise.RngLike = None) -> HierarchyRelease:
        """Count ``data`` on the hierarchy's leaves, add the planned noise (the only step that reads
        the counts) and post-process (:func:`hierarchy_counts` describes ``levels``, ``weight``,
        ``unknown`` and ``rng``)."""
        h, cal, mech = self.hierarchy, self.calibration, self.mechanism
        src = _noise.make_source(rng)
        created = _serialize.utc_now()  # before the data is read: no timing of the reading
        x = leaf_counts(data, h, levels=levels, weight=weight, unknown=unknown)
        meas = measure_nodes(src, h, node_weights(x, h.parents), cal)
        params: dict[str, Any] = {
            "method": mech.method,
            "epsilon": mech.epsilon,
            "delta": mech.delta,
            "alpha": mech.alpha,
            "consistent": self.consistent,
            "nonnegative": self.nonnegative,
            "integer": self.integer,
            "max_contributions": mech.max_contributions,
            "depth": h.depth,
            "levels": list(h.levels if levels is None else levels),
            "unknown": unknown,
            **cal.parameters,
        }
        source = data if isinstance(data, (str, os.PathLike)) else None
        return assemble(h, params, self.statement_for(private=src.private), meas,
                        _serialize.creation_metadata(column=params["levels"], source=source, created=created))


@dataclass(frozen=True, eq=False)
class FoundStructurePlan(FoundStructureCore):
    """A hierarchy found from the data, planned from public inputs
    (:class:`~dptree.hierarchy.discovery.FoundStructureCore`: the split, the selections, the counts'
    calibration), and :meth:`release`, the private step."""

    @validate_params({"rng": RNG})
    def release(self, data: Any, *, weight: str | None = None, rng: _noise.RngLike = None) -> HierarchyRelease:
        """Read the records per distinct path of the level columns once, find the tree level by
        level, then count every node found (:mod:`dptree.hierarchy.discovery`). One random source
        (``rng``) draws the selections and the noise."""
        src = _noise.make_source(rng)
        created = _serialize.utc_now()  # before the data is read: no timing of the reading
        coded = coded_path_counts(data, list(self.levels), weight)
        found, depth, node = self.discover(coded, src)
        other = other_label(found)
        leaves = found.leaves() or [(other,)]
        h = Hierarchy.from_paths(leaves, levels=self.levels[:max(map(len, leaves))], other=other)
        x = leaf_counts(_counted_paths(found, depth, node, coded[2], other), h)
        meas = measure_nodes(src, h, node_weights(x, h.parents), self.calibration)
        params: dict[str, Any] = {
            "method": self.mechanism.method, "epsilon": self.mechanism.epsilon, "delta": self.mechanism.delta,
            "alpha": None, "consistent": self.counts.consistent, "nonnegative": self.counts.nonnegative,
            "integer": self.counts.integer, "max_contributions": 1, "depth": h.depth,
            "levels": list(h.levels), "unknown": "other", "structure": self.parameters,
            **self.calibration.parameters,
        }
        source = data if isinstance(data, (str, os.PathLike)) else None
        return assemble(h, params, self.statement_for(private=src.private), meas,
                        _serialize.creation_metadata(column=list(self.levels), source=source, created=created))


def _counted_paths(found: Any, depth: np.ndarray, node: np.ndarray, n: np.ndarray, other: str) -> dict[tuple, int]:
    """Each distinct path's records at its deepest kept node: that node's path when it is a leaf
    of the tree found, its ``other`` leaf's otherwise (exact, not private: the counts' input)."""
    out: dict[tuple, int] = {}
    if np.asarray(n).size == 0:
        return out
    at, inv = np.unique(np.stack([depth, node]), axis=1, return_inverse=True)
    sums = np.zeros(at.shape[1], dtype=np.int64)
    np.add.at(sums, inv.reshape(-1), np.asarray(n, dtype=np.int64))
    inner = [found.inner(j) for j in range(len(found.paths))]
    for (j, i), total in zip(at.T.tolist(), sums.tolist()):
        path = found.paths[j][i]
        out[path + (other,) if j == 0 or inner[j][i] else path] = total
    return out


@privacy_values
@validate_params({k: _CONSTRAINTS[k] for k in _PLAN})
def plan_hierarchy_counts(
    hierarchy: Hierarchy,
    *,
    epsilon: float,
    delta: float = 0.0,
    method: Literal["laplace", "gaussian", "multiplicative"] = "laplace",
    alpha: float | None = None,
    consistent: bool = True,
    nonnegative: bool = False,
    integer: bool = False,
    max_contributions: int = 1,
    tau_min: float | None = None,
    gaussian_calibration: Literal["exact", "zcdp"] = "exact",
    levels: Sequence[str] | None = None,
    structure_share: float = STRUCTURE_SHARE,
    unit: PrivacyUnit | None = None,
    budget: Budget | None = None,
) -> HierarchyCountsPlan | FoundStructurePlan:
    """Plan private counts for every node of ``hierarchy`` from public inputs only (no data):
    validate the parameters, calibrate the noise (a parameter no sampler can draw fails here,
    before any charge), and derive the privacy statement, the privacy loss and each node's
    expected error. ``release(data)`` then runs it; :func:`hierarchy_counts` is both in one call
    and describes the parameters. The mechanisms are Ghazi, Kamath, Kumar, Manurangsi & Wu 2023:
    the Laplace and Gaussian baselines (Corollary 2.7) and the multiplicative-error algorithm
    (Theorem 4.1). ``gaussian_calibration`` (Gaussian, one record per person): ``"exact"``
    (default) the exact discrete-Gaussian delta, ``"zcdp"`` through zCDP.

        >>> import dptree
        >>> places = dptree.Hierarchy.from_paths([("FR", "Paris"), ("FR", "Lyon"), ("DE", "Berlin")])
        >>> plan = dptree.plan_hierarchy_counts(places, epsilon=1.0)
        >>> [m.label for m in plan.privacy_loss().measurements], plan.privacy_loss().epsilon()
        (['depth 0', 'depth 1', 'depth 2'], 1.0)
        >>> round(plan.expected_error("FR/Paris"), 2)  # the standard error of a city's count
        3.31

    ``hierarchy="private"``: the tree is found from the data's ``levels`` columns
    (:mod:`dptree.hierarchy.discovery`: ``structure_share`` of epsilon, and delta, finds it level by
    level; the rest counts it), for ``method`` "laplace" or "gaussian", one record per person.
    """
    if isinstance(hierarchy, str):
        return _plan_found(levels, epsilon=epsilon, delta=delta, method=method, alpha=alpha, consistent=consistent,
                           nonnegative=nonnegative, integer=integer, max_contributions=max_contributions,
                           tau_min=tau_min, gaussian_calibration=gaussian_calibration,
                           structure_share=structure_share)
    if levels is not None or structure_share != STRUCTURE_SHARE:
        raise InvalidParameterError("levels and structure_share plan a hierarchy found from the data "
                                    "(hierarchy='private'); with a public hierarchy pass levels to release()",
                                    parameter="levels" if levels is not None else "structure_share")
    needs_delta = method in ("gaussian", "multiplicative")
    dlt = check_delta(delta, required=needs_delta)  # delta > 0 for approximate DP
    if not needs_delta and dlt > 0:
        raise InvalidParameterError("method='laplace' is pure epsilon-DP and spends no delta: leave delta at 0, "
                                    "or use method='gaussian' for (epsilon, delta)-DP", parameter="method")
    if method == "multiplicative" and alpha is None:
        raise InvalidParameterError("method='multiplicative' needs alpha in (0, 1), e.g. alpha=0.5")
    if alpha is not None and method != "multiplicative":
        raise InvalidParameterError("alpha only applies to method='multiplicative': leave it out for this method",
                                    parameter="alpha")
    if tau_min is not None and method != "multiplicative":
        raise InvalidParameterError("tau_min only applies to method='multiplicative'", parameter="tau_min")
    if gaussian_calibration != "exact" and method != "gaussian":
        raise InvalidParameterError("gaussian_calibration only applies to method='gaussian'")
    if integer and method == "multiplicative":
        # rounding the multiplicative estimates node by node breaks children-sum-to-parent, and
        # those estimates are not consistent to begin with (no family projection applies to them)
        raise InvalidParameterError(
            "integer=True does not apply to method='multiplicative': its per-node estimates are not "
            "consistent (children need not sum to parents), so there is no sum-preserving rounding to "
            "apply; round them yourself, or use method='laplace'/'gaussian' with integer=True"
        )
    mech = NodeMechanism(method, float(epsilon), dlt if needs_delta else 0.0, int(max_contributions),
                         None if alpha is None else float(alpha), None if tau_min is None else float(tau_min))
    return HierarchyCountsPlan(hierarchy, calibrate(mech, hierarchy.depth, gaussian=gaussian_calibration),
                               consistent=bool(consistent) if method != "multiplicative" else False,
                               nonnegative=bool(nonnegative), integer=bool(integer))


def _plan_found(levels: Sequence[str] | None, *, epsilon: float, delta: float, method: str, alpha: float | None,
                consistent: bool, nonnegative: bool, integer: bool, max_contributions: int, tau_min: float | None,
                gaussian_calibration: str, structure_share: float) -> FoundStructurePlan:
    """The plan of ``hierarchy="private"`` (:func:`plan_hierarchy_counts`), its options checked."""
    if levels is None:
        raise InvalidParameterError("hierarchy='private' finds the tree from the data's level columns: pass "
                                    "levels=['continent', 'country', ...], root side first (CLI: --levels)",
                                    parameter="levels")
    if method == "multiplicative" or alpha is not None or tau_min is not None:
        raise InvalidParameterError("hierarchy='private' counts the tree found with method='laplace' or 'gaussian' "
                                    "(the multiplicative algorithm, alpha and tau_min need a public tree)",
                                    parameter="method")
    if max_contributions != 1:
        raise InvalidParameterError("hierarchy='private' counts each record as its own user (its selection counts "
                                    "records, not distinct people): leave max_contributions at 1, and bound people's "
                                    "records before, or declare the hierarchy", parameter="max_contributions")
    if gaussian_calibration != "exact" and method != "gaussian":
        raise InvalidParameterError("gaussian_calibration only applies to method='gaussian'")
    return plan_found_structure(levels, epsilon=epsilon, delta=delta, method=method, structure_share=structure_share,
                                consistent=consistent, nonnegative=nonnegative, integer=integer,
                                gaussian=gaussian_calibration, plan_type=FoundStructurePlan)


@privacy_values
@validate_params({k: v for k, v in _CONSTRAINTS.items() if k != "gaussian_calibration"})
def hierarchy_counts(
    data: Any,
    hierarchy: Hierarchy,
    *,
    epsilon: float,
    delta: float = 0.0,
    method: Literal["laplace", "gaussian", "multiplicative"] = "laplace",
    alpha: float | None = None,
    consistent: bool = True,
    nonnegative: bool = False,
    integer: bool = False,
    max_contributions: int = 1,
    tau_min: float | None = None,
    levels: Sequence[str] | None = None,
    weight: str | None = None,
    unknown: Literal["error", "drop", "other"] = "error",
    rng: _noise.RngLike = None,
    structure_share: float = STRUCTURE_SHARE,
    unit: PrivacyUnit | None = None,
    budget: Budget | None = None,
) -> HierarchyRelease:
    """Release a differentially private count for every node of ``hierarchy`` (Ghazi et al. 2023).

    Released: one noisy measurement per node (Laplace/Gaussian), or Theorem 4.1's estimates
    and windows (multiplicative). Neighbors: add/remove one record (``max_contributions=1``)
    or one user with at most ``max_contributions`` records; dptree cannot see users here, so
    the caller must have bounded contributions before. With a ``weight`` column each unit of
    weight is one record (Ghazi et al. 2023: x in N^leaves, neighbors at L1 distance 1).

    * ``laplace``: (epsilon, 0)-DP; discrete Laplace of scale k d / epsilon per node
      (Corollary 2.7 / Lemma 2.5; L1 sensitivity k d, d = depth of the hierarchy).
    * ``gaussian``: (epsilon, delta)-DP, delta > 0; discrete Gaussian. With k = 1, sigma^2 is the
      smallest (sampler-grid) value whose exact discrete-Gaussian delta(epsilon) over the d unit
      shifts of a root-leaf path is <= delta (:func:`dptree.privacy.budget.discrete_gaussian_sigma2_for`;
      sigma = 4.22 sqrt(d) at (1, 1e-6), against 4.53 sqrt(d) through zCDP); with k > 1,
      sigma^2 = k^2 d / (2 rho), rho = zcdp_rho_for(epsilon, delta). The statement's
      ``calibration`` says which.
    * ``multiplicative``: (epsilon, delta)-DP, delta > 0, ``alpha`` in (0, 1) required; the
      algorithm of Theorem 4.1 (Lemma 3.3 wrapper around Estimation, Algorithm 4). ``tau_min``
      defaults to the bound of Corollary 4.7 used in Theorem 4.1's proof; a smaller value may
      be passed: privacy does not depend on tau_min, only the accuracy guarantee does. For
      k > 1 the algorithm runs at (epsilon/k, delta (e^(epsilon/k)-1)/(e^epsilon-1)) and group
      privacy (Fact 2.2) gives (epsilon, delta) for users with k records. ``consistent`` does
      not apply; ``nonnegative`` clips at 0; ``integer=True`` is refused (rounding node by node
      would not keep children summing to parents, and these estimates are not consistent anyway).

    ``consistent`` (Laplace/Gaussian): least-squares estimates for any tree shape, children
    summing to parents, exact variance per node. ``nonnegative``/``integer``: top-down simplex
    projection and sum-preserving rounding (biased post-processing; docs/notes/hierarchy.md).
    ``rng``: ``None`` (default) uses the OS CSPRNG; a seed makes the release reproducible and
    marks it not private. ``unknown``: the declared policy for records whose path is not a leaf
    of the public hierarchy: "error" (default; the message never says how many or which),
    "drop" or "other" (see :func:`leaf_counts`).

    Weights are summed exactly in integers (numpy, pandas, Spark and the CLI's DuckDB reader);
    missing, negative, non-integer or non-finite weights are refused, and a total of
    :data:`~dptree.hierarchy.counting.MAX_TOTAL` (2^61) or more raises
    :class:`~dptree.errors.TotalTooLargeError`. The guarantee covers datasets below that public
    limit; no error message contains a count, a total or a value.

    ``hierarchy="private"``: the tree is not declared but found from the ``levels`` columns
    (:mod:`dptree.hierarchy.discovery`): ``structure_share`` of epsilon (and all of delta for
    Laplace counts, that share of it for Gaussian ones; delta > 0 is required) finds the nodes
    top-down, level by level, keeping a node when its noisy record count passes the optimal
    threshold of Desfontaines et al. 2022; the rest counts every node found, with an ``other``
    leaf under every internal node (the records of the nodes not found), noise calibrated for the
    full depth. One record per person; the tree found is part of the output (noisy).

    Example (``rng=7`` seeds the noise only so that the outputs below are reproducible: a seeded release
    is marked not private; leave ``rng`` out in real use)::

        >>> import pandas as pd, dptree
        >>> places = dptree.Hierarchy.from_paths([("FR", "Paris"), ("FR", "Lyon"), ("DE", "Berlin")])
        >>> rows = pd.DataFrame({"country": ["FR"] * 600 + ["DE"] * 400,
        ...                      "city": ["Paris"] * 450 + ["Lyon"] * 150 + ["Berlin"] * 400})
        >>> rel = dptree.hierarchy_counts(rows, places, levels=["country", "city"], epsilon=1.0, rng=7)
        >>> round(rel.count("FR")), round(rel.count("FR/Paris")), round(rel.count(""))  # "" is the total
        (601, 453, 1002)
        >>> [round(v) for v in rel.ci("FR/Paris")]
        [446, 460]
    """
    found = isinstance(hierarchy, str)
    plan = plan_hierarchy_counts(hierarchy, epsilon=epsilon, delta=delta, method=method, alpha=alpha,
                                 consistent=consistent, nonnegative=nonnegative, integer=integer,
                                 max_contributions=max_contributions, tau_min=tau_min,
                                 levels=levels if found else None, structure_share=structure_share)
    if isinstance(plan, FoundStructurePlan):
        if unknown != "error":
            raise InvalidParameterError("unknown applies to a public hierarchy: a tree found from the data counts "
                                        "every record (at its deepest node found, or that node's 'other' leaf)",
                                        parameter="unknown")
        return plan.release(data, weight=weight, rng=rng)
    return plan.release(data, levels=levels, weight=weight, unknown=unknown, rng=rng)


def measurement_copies(
    data: Any,
    hierarchy: Hierarchy,
    *,
    method: str,
    epsilon: float,
    delta: float,
    copies: int,
    rng: _noise.RngLike,
    levels: Sequence[str] | None = None,
    weight: str | None = None,
    unknown: Literal["error", "drop", "other"] = "error",
) -> np.ndarray:
    """``copies`` independent measurement vectors of a Laplace/Gaussian release, for audits.

    Runs the measurement core (:func:`dptree.privacy.measurement.measure`, the only
    data-touching step of :func:`hierarchy_counts`) once on the node counts stacked ``copies``
    times, with the noise :func:`~dptree.hierarchy.measure.calibrate` gives (k = 1); with
    ``copies = 1`` the draws equal those of ``hierarchy_counts(data, hierarchy, ..., rng=rng).measurements["y"]``.
    """
    cal = calibrate(NodeMechanism(method, epsilon, delta), hierarchy.depth)
    if cal.spec is None:
        raise InvalidParameterError("measurement_copies applies to method='laplace' or 'gaussian'")
    x = leaf_counts(data, hierarchy, levels=levels, weight=weight, unknown=unknown)
    w = np.concatenate(node_weights(x, hierarchy.parents))
    (y,) = measure([np.tile(w, copies)], cal.spec, _noise.make_source(rng))
    return np.asarray(y).reshape(copies, hierarchy.n_nodes)
