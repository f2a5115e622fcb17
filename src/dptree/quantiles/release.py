"""``QuantilesRelease``: m private quantiles with intervals, the method used and the privacy statement.

The statement is re-derived from the public parameters (:func:`dptree.quantiles.plan.statement`, through
the plan) both when a release is made and when a file is loaded, so a tampered file is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any, ClassVar, Mapping

import numpy as np

from dptree._validation import InstanceOf, Interval, Options, check_param
from dptree.data.domain import point_domain
from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.estimation.intervals import LEVEL
from dptree.interior.calibration import DECLARED_SIZE, EPSILON
from dptree.interior.encoding import domain_document, domain_from_document
from dptree.io.contract import Release, shown
from dptree.io.release_file import check_metadata
from dptree.privacy.boundary import Boundary
from dptree.privacy.budget import check_release_budget
from dptree.privacy.statement import check_statement, read_statement
from dptree.quantiles.auto import TREE_BRANCHING, TREE_LEVELS
from dptree.quantiles.intervals import joint_radius, release_radii
from dptree.quantiles.measured import INTERVAL_SHARE, cut_points
from dptree.quantiles.plan import MECHANISM_INTERVALS, METHODS, NEIGHBORS, TREE_INTERVALS, plan_for_file
from dptree.rangetree.contributions import (
    PrivateContributionsPlan,
    plan_private_contributions,
    with_private_contributions,
)
from dptree.rangetree.quantile_calibration import calibration_sims, released_intervals

__all__ = ["QuantilesRelease", "PrivateContributionsQuantiles", "choice_plan", "tree_release"]


def derived_statement(method: str, epsilon: float, q: np.ndarray, neighbors: Any, lower: Any, upper: Any, width: Any,
                      n_declared: int | None, n_is_upper_bound: bool, n_min: int | None, k: int, *,
                      dithered: bool = True, joint_capped: bool = False, interval: str | None = None,
                      interval_share: float = INTERVAL_SHARE) -> dict[str, Any]:
    """The statement of a saved release, re-derived by planning it again from the file's public
    parameters (:func:`dptree.quantiles.plan.plan_for_file`; a refusal there is a ReleaseFileError)."""
    try:
        return plan_for_file(method, epsilon, q, neighbors, lower, upper, width, n_declared, n_is_upper_bound, n_min,
                             k, dithered=dithered, joint_capped=joint_capped, interval=interval,
                             interval_share=interval_share).member_statement
    except InvalidParameterError as exc:
        raise ReleaseFileError(f"{QuantilesRelease.KIND} release: its parameters cannot be planned: {exc}") from None


def choice_plan(method: str, epsilon: float, lo: Any, hi: Any, width: Any, share: float,
                cap: int) -> PrivateContributionsPlan:
    """The choice of a private bound for quantiles by ``method`` over [lo, hi] (the plan's encoded
    bounds; ``width`` the tree's bucket width) with the whole ``epsilon``: over the tree method's
    tree, or the tree over the points of the domain for the other methods, at the prefix workload
    (:mod:`dptree.quantiles.contributions`)."""
    return plan_private_contributions(lower=lo, upper=hi, epsilon=epsilon, width=width if method == "tree" else 1,
                                      branching=TREE_BRANCHING, levels=TREE_LEVELS, user_id="u", share=share, cap=cap)


def _private_choice(record: Any, method: str, epsilon: float, lo: Any, hi: Any, width: Any,
                    k: int) -> PrivateContributionsPlan:
    """The choice a file's ``parameters.contributions`` records, re-planned (a ReleaseFileError
    for a record that is not the one the choice gives with bound ``k``)."""
    if not isinstance(record, Mapping) or record.get("method") != "private":
        raise ReleaseFileError("quantiles release: parameters.contributions must describe a private choice of "
                               "max_contributions")
    try:
        choice = choice_plan(method, epsilon, lo, hi, width, float(record["share"]), int(record["cap"]))
    except (KeyError, TypeError, ValueError, InvalidParameterError) as exc:
        raise ReleaseFileError(f"quantiles release: parameters.contributions is incomplete or invalid: {exc}") from None
    if dict(record) != choice.record(k) or not 1 <= k <= choice.cap:
        raise ReleaseFileError("quantiles release: the private choice of max_contributions it records does not match "
                               "its parameters (tampered?)")
    return choice


@dataclass(frozen=True, repr=False)
class QuantilesRelease(Release):
    """m private quantiles: ``values[i]`` estimates the ``q[i]``-quantile; [``ci_low[i]``, ``ci_high[i]``]
    its interval at ``level``, ``interval`` says how: the tree's ``"calibrated"`` or ``"pivot"``
    (from its CDF band); the exponential-mechanism methods' ``"counts"`` (measured by a noisy
    histogram at ``interval_share`` of epsilon, ``interval_counts`` its noisy cells;
    :mod:`dptree.quantiles.measured`) or ``"bound"`` (the stated bound from the utility tail,
    :mod:`dptree.quantiles.intervals`; ``rank_radius[i]`` its rank radius). ``method`` is the
    method that ran (also when auto chose it). Everything but ``values``, ``ci_low``, ``ci_high``
    and ``interval_counts`` is public parameters."""

    KIND: ClassVar[str] = "quantiles"
    PLOT: ClassVar[str | None] = "quantiles"  # how plot() draws it (dptree.io.display)
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "metadata", "metadata.*", "measurements.rank_radius"),
        noisy=("measurements.values", "measurements.ci_low", "measurements.ci_high", "measurements.interval_counts"),
    )

    q: np.ndarray
    values: list[Any]
    ci_low: list[Any]
    ci_high: list[Any]
    level: float
    method: str
    epsilon: float
    n_declared: int | None
    lower: Any
    upper: Any
    privacy: dict[str, Any]
    neighbors: str = "add_remove"
    width: Any = None
    rank_radius: list[float] | None = None
    n_is_upper_bound: bool = field(default=False, kw_only=True)
    metadata: dict[str, Any] = field(default_factory=dict, kw_only=True)
    #: the interval construction: the tree's "calibrated" or "pivot", the other methods' "counts" or
    #: "bound" (None in files that do not record it: the tree's calibrated or the others' bound)
    interval: str | None = field(default=None, kw_only=True)
    #: the share of epsilon the interval counts spent (``interval="counts"``; 0 otherwise)
    interval_share: float = field(default=0.0, kw_only=True)
    #: the noisy counts of the interval cells (``interval="counts"``; None otherwise): noisy
    interval_counts: list[int] | None = field(default=None, kw_only=True)
    #: k of the privacy unit (one person's at most k records; 1: one record)
    max_contributions: int = field(default=1, kw_only=True)
    #: the caller's public lower bound on the number of records (the mechanism methods' intervals
    #: read it like an exact n); None when none was declared
    n_min: int | None = field(default=None, kw_only=True)

    def summary(self) -> str:
        return (f"QuantilesRelease of {len(self.values)} levels by {self.method!r} over [{shown(self.lower)}, "
                f"{shown(self.upper)}], {self.epsilon:g}-DP (pure, {self.neighbors}"
                f"{self._unit_note()}), {self.level:g} intervals{self._interval_note()}"
                f"{'' if self.private else ', NOT PRIVATE (test seed)'}")

    @property
    def n_hat(self) -> int | None:
        """The noisy number of records: the sum of the noisy interval counts (``interval="counts"``;
        None otherwise)."""
        return None if self.interval_counts is None else int(sum(self.interval_counts))

    def _unit_note(self) -> str:
        """The person bound, when there is one (chosen privately: a DP output)."""
        k = self.max_contributions
        if "contributions" in self.privacy:
            return f", per person of at most {k} record{'s' if k > 1 else ''} (chosen privately)"
        return "" if k == 1 else f", per person of at most {k} records"

    def _interval_note(self) -> str:
        """How the exponential-mechanism methods' intervals were made, and why the bound's are the
        domain's ends when a public parameter says so (no exact declared size: ranks cannot be
        turned into values)."""
        if self.interval == "counts":
            return f" (measured by noisy counts at {self.interval_share:g} of epsilon)"
        if self.method != "tree" and (self.n_declared is None or self.n_is_upper_bound) and self.n_min is None:
            return (" (the domain's ends: declare the size, n= or --n, or a lower bound on it, n_min= or --n-min, "
                    "for narrower ones, use interval='counts' (the default), or use method 'tree')")
        return ""

    def to_frame(self) -> Any:
        """One row per level: q, estimate, ci_low, ci_high, method (and rank_radius for the
        exponential-mechanism methods)."""
        from dptree.io.frames import result_frame

        extra: dict[str, Any] = {"method": [self.method] * len(self.values)}
        if self.rank_radius is not None:
            extra["rank_radius"] = list(self.rank_radius)
        return result_frame({"q": self.q}, estimate=list(self.values), ci=(list(self.ci_low), list(self.ci_high)),
                            level=self.level, extra=extra)

    def to_document(self) -> dict[str, Any]:
        """The file's parts (:mod:`dptree.io.release_file`)."""
        enc = point_domain(self.lower, self.upper, self.width)
        dates = enc.kind == "datetime"  # the domain's document carries a date width
        params = {"domain": domain_document(enc), "q": [float(x) for x in self.q],
                  "level": self.level, "method": self.method, "epsilon": self.epsilon, "n_declared": self.n_declared,
                  "n_is_upper_bound": self.n_is_upper_bound, "neighbors": self.neighbors,
                  "width": None if dates else self.width,
                  "interval": self.interval, "max_contributions": self.max_contributions, "n_min": self.n_min}
        if "contributions" in self.privacy:  # a private bound: the choice, its split and the bound chosen
            params["contributions"] = self.privacy["contributions"]
        meas = {"values": [enc.dump(v) for v in self.values], "ci_low": [enc.dump(v) for v in self.ci_low],
                "ci_high": [enc.dump(v) for v in self.ci_high],
                "rank_radius": self.rank_radius}
        if self.interval == "counts":
            params["interval_share"] = self.interval_share
            meas["interval_counts"] = self.interval_counts
        return {"privacy": self.privacy, "parameters": params, "measurements": meas, "metadata": self.metadata}

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> QuantilesRelease:
        """Rebuild a saved release, re-checking levels, budget, statement and that every value and
        interval end is a point of the domain."""
        kind = cls.KIND
        privacy = read_statement(doc["privacy"], kind=kind)
        p, meas = doc["parameters"], doc["measurements"]
        enc = domain_from_document(p["domain"], kind)
        check_param("epsilon", p["epsilon"], EPSILON)
        check_param("n_declared", p["n_declared"], DECLARED_SIZE)
        check_param("level", p["level"], LEVEL)
        check_param("n_is_upper_bound", p["n_is_upper_bound"], [InstanceOf(bool)])
        check_param("neighbors", p["neighbors"], NEIGHBORS)
        check_param("method", p["method"], [Options(METHODS[1:])])
        interval = p.get("interval")
        own = TREE_INTERVALS if p["method"] == "tree" else MECHANISM_INTERVALS
        check_param("interval", interval, [None, Options(TREE_INTERVALS + MECHANISM_INTERVALS)])
        if interval is not None and interval not in own:
            raise ReleaseFileError(f"{kind} release: parameters.interval {interval!r} is not one of method "
                                   f"{p['method']!r}'s ({', '.join(own)})")
        share = p.get("interval_share", 0.0) if interval == "counts" else 0.0
        check_param("interval_share", share, [Interval(Real, 0, 1, closed="neither")] if interval == "counts"
                    else [Options((0.0,))])
        q = p["q"]
        if (not isinstance(q, list) or not q or any(type(x) is not float or not 0 <= x <= 1 for x in q)
                or q != sorted(q)):
            raise ReleaseFileError(f"{kind} release: parameters.q must be sorted levels in [0, 1]")
        eps = check_release_budget(p["epsilon"])
        lo, hi = enc.bounds
        if enc.kind == "datetime" and p["width"] is not None:
            raise ReleaseFileError(f"{kind} release: a date domain's width is in parameters.domain")
        width = enc.resolution if enc.kind == "datetime" else p["width"]
        k = p.get("max_contributions", 1)  # absent: one record per person
        check_param("max_contributions", k, [Interval(Integral, 1, None)])
        n_min = p.get("n_min")  # absent: none declared
        check_param("n_min", n_min, DECLARED_SIZE)
        if n_min is not None and p["n_declared"] is not None and (not p["n_is_upper_bound"] or n_min > p["n_declared"]):
            raise ReleaseFileError(f"{kind} release: parameters.n_min must lie below an upper bound n_max, and "
                                   "goes without an exact n")
        # a JointExp file without a sensitivity rule: records capped at the declared size, sensitivity 2
        capped = p["method"] == "joint" and "sensitivity_rule" not in privacy
        record, member_eps = p.get("contributions"), eps
        if record is not None:  # a private bound: the quantiles ran with the rest of epsilon
            choice = _private_choice(record, p["method"], eps, lo, hi, width, k)
            member_eps = choice.tree_budget
        derived = derived_statement(p["method"], member_eps, np.asarray(q), p["neighbors"], lo, hi, width,
                                    p["n_declared"], p["n_is_upper_bound"], n_min, k,
                                    dithered="dither_factor" in privacy, joint_capped=capped,
                                    interval=interval, interval_share=share or INTERVAL_SHARE)
        if record is not None:
            derived = with_private_contributions(derived, record, choice, rest="quantiles")
        check_statement(privacy, derived, kind=kind)
        cols = [meas.get(k) for k in ("values", "ci_low", "ci_high")]
        if any(not isinstance(c, list) or len(c) != len(q) for c in cols):
            raise ReleaseFileError(f"{kind} release: values and intervals must give one entry per level")
        cols = [[enc.load(v) for v in c] for c in cols]
        if not all(enc.contains(v) or (enc.kind == "float" and isinstance(v, int) and enc.contains(float(v)))
                   for c in cols for v in c):
            raise ReleaseFileError(f"{kind} release: every value and interval end must be a point of the domain")
        if any(a > b for a, b in zip(cols[1], cols[2])):
            raise ReleaseFileError(f"{kind} release: an interval has ci_low > ci_high")
        radius = meas.get("rank_radius")
        dither = int(privacy.get("dither_factor", 1))
        if interval == "counts":
            want = None
        elif capped:
            r = joint_radius(len(q), size=enc.size * dither, epsilon=member_eps / k, level=float(p["level"]),
                             sensitivity=2.0)
            want = [r] * len(q) if math.isfinite(r) else None
        else:
            want = release_radii(p["method"], np.asarray(q), size=enc.size, epsilon=member_eps / k,
                                 neighbors=p["neighbors"], level=float(p["level"]), dither=dither)
        if radius != want:
            raise ReleaseFileError(f"{kind} release: rank_radius does not match the parameters")
        cells = meas.get("interval_counts") if interval == "counts" else None
        if interval == "counts":
            offsets = enc.positions(np.asarray(cols[0], dtype=object if enc.kind != "datetime" else None))[0]
            size = len(cut_points([int(o) for o in offsets], enc.size)) + 1
            if (not isinstance(cells, list) or len(cells) != size
                    or any(type(c) is not int or abs(c) >= 1 << 62 for c in cells)):
                raise ReleaseFileError(f"{kind} release: measurements.interval_counts must hold {size} integers, one "
                                       "per cell cut at the released values")
        elif meas.get("interval_counts") is not None:
            raise ReleaseFileError(f"{kind} release: measurements.interval_counts goes with interval 'counts'")
        klass = cls if record is None else PrivateContributionsQuantiles
        return klass(np.asarray(q), cols[0], cols[1], cols[2], float(p["level"]), p["method"], eps, p["n_declared"],
                   lo, hi, privacy, neighbors=p["neighbors"], width=width, rank_radius=radius,
                   n_is_upper_bound=p["n_is_upper_bound"], metadata=check_metadata(doc.get("metadata")),
                   interval=interval, max_contributions=k, n_min=n_min, interval_share=float(share),
                   interval_counts=cells)


@dataclass(frozen=True, repr=False)
class PrivateContributionsQuantiles(QuantilesRelease):
    """Quantiles at a contribution bound chosen privately (``quantiles(..., max_contributions=
    "private")``, :mod:`dptree.quantiles.contributions`); saved and loaded as ``quantiles``. The
    bound is the choice's DP output, and so what the quantiles' calibration takes from it (the
    epsilon per record and per call, the rank radii, the tree's noise and sensitivities, the budget
    spent): its boundary declares them noisy. ``epsilon`` is the whole budget."""

    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "metadata", "metadata.*"),
        noisy=("measurements.*", "parameters.max_contributions", "parameters.contributions.chosen",
               "privacy.contributions.chosen", "privacy.max_contributions", "privacy.budget_spent.*",
               "privacy.epsilon_per_record", "privacy.epsilon_per_call", "privacy.group_privacy",
               "privacy.l1_sensitivity", "privacy.l2_sensitivity", "privacy.levels", "privacy.epsilon_mechanism",
               "privacy.intervals"),
    )


def tree_release(p: Any, tree: Any, qa: np.ndarray, level: float, src: Any, interval: str, grid: int,
                  metadata: dict[str, Any]) -> QuantilesRelease:
    """The quantiles read off a range-tree release, with its calibrated (or pivot) intervals."""
    dates = p.enc.kind == "datetime"
    values = [v if dates else v.item() if hasattr(v, "item") else v for v in np.atleast_1d(tree.quantile(qa))]
    sims = calibration_sims(tree.layout.padded_size) if interval == "calibrated" else 0
    low, high = released_intervals(tree, qa, level, source=src, sims=sims, grid=grid)
    ci_low, ci_high = ([v if dates else v.item() for v in c] for c in (low, high))
    if p.enc.kind == "float":
        values, ci_low, ci_high = ([float(v) for v in c] for c in (values, ci_low, ci_high))
    return QuantilesRelease(qa, values, ci_low, ci_high, float(level), p.method, p.epsilon, p.size_n, p.lo, p.hi,
                            {**p.member_statement, "private": bool(src.private)}, neighbors=p.neighbors,
                            width=p.width, n_is_upper_bound=p.upper_bound, metadata=metadata,
                            interval="calibrated" if sims else "pivot", max_contributions=p.k, n_min=p.n_min)
