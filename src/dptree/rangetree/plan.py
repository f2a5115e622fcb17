"""The plan of a range-tree release: everything decided from public parameters, before any data.

:meth:`TreePlan.build` (public as :func:`dptree.plan_range_tree`) validates the parameters, picks
the layout (:mod:`dptree.rangetree.layout`, :mod:`dptree.rangetree.allocation`), calibrates each level's noise
(:mod:`dptree.rangetree.calibration`) and writes the privacy statement
(:func:`dptree.privacy.statement.make_statement`); :meth:`TreePlan.privacy_loss` lists its noisy
measurements and :meth:`TreePlan.expected_error` the exact error of a range, both from public
parameters alone. :meth:`TreePlan.measure` is the one private
step: the node counts of a leaf histogram go through the measurement core
(:func:`dptree.privacy.measurement.measure`). The plan users get,
:class:`~dptree.rangetree.release.RangeTreePlan`, is a :class:`TreePlan` whose ``release`` wraps
those measurements in a :class:`~dptree.rangetree.release.RangeTree` (least squares, Honaker
2015); this module does not know the release class, so a file can be loaded by re-planning here.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Integral, Real
from typing import Any, Self, cast

import numpy as np

from dptree import noise as _noise
from dptree._validation import Interval, Options, validate_params
from dptree.data.domain import Domain, make_domain
from dptree.errors import DataError, DomainError, InvalidParameterError
from dptree.privacy.budget import Budget
from dptree.privacy.loss import Gaussian, Laplace, PrivacyLoss
from dptree.privacy.measurement import NoiseSpec, measure
from dptree.privacy.statement import Neighbors, Relation, make_statement
from dptree.privacy.unit import PrivacyUnit, privacy_values
from dptree.rangetree.allocation import (
    LEVEL_OPTIONS,
    canonical_levels,
    choose_branching,
    level_weights,
    workload_description,
)
from dptree.rangetree.calibration import (
    LevelNoise,
    NoiseKind,
    calibrate_gaussian,
    calibrate_laplace,
    check_budget_range,
    check_noise_range,
    exact_shares,
    level_sensitivities,
    resolve_budget,
)
from dptree.rangetree.estimates import LeafEstimates
from dptree.rangetree.layout import TreeLayout, build_layout

__all__ = ["TreePlan", "TREE_CONSTRAINTS", "check_memory", "available_memory", "BYTES_PER_BUCKET"]

#: Peak bytes per bucket of planning and releasing a range tree (measured: about 65 at 2^22
#: buckets, planning included; rounded up for the estimator's temporaries).
BYTES_PER_BUCKET = 100


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def check_memory(buckets: int) -> None:
    """Refuse, before allocating, a domain whose tree would not fit in the available memory (a
    public estimate from the number of buckets), instead of failing with MemoryError part way."""
    need = buckets * BYTES_PER_BUCKET
    avail = available_memory()
    if avail is not None and need > avail:
        fit = max(avail // BYTES_PER_BUCKET, 2)
        raise DomainError(
            f"a range tree over {buckets} buckets needs about {need / 2**30:.1f} GiB of memory, more than the "
            f"{avail / 2**30:.1f} GiB available; choose a larger width or narrower bounds (about {fit} buckets "
            "fit), or free memory"
        )


def _check_histogram(leaf_counts: Any, ndim: int = 1, signed: bool = False) -> np.ndarray:
    """An ``ndim``-D array of non-negative int64 counts (2-D: one histogram per row), or a DataError;
    ``signed``: sums of weights in units, which may be negative (|sum| < 2^62)."""
    try:
        arr = np.asarray(leaf_counts)
    except (TypeError, ValueError, OverflowError) as exc:
        raise DataError(f"leaf histogram must be an array of counts: {exc}") from exc
    if arr.ndim != ndim or arr.dtype.kind not in "iu":
        raise DataError(f"leaf histogram must be a {ndim}-D array of integers, got {arr.dtype} with shape {arr.shape}")
    if arr.dtype.kind == "u" and arr.size and arr.max() >= 2**62:
        raise DataError("leaf histogram counts must be below 2^62")
    hist = arr.astype(np.int64, copy=False)  # no copy of an int64 histogram (never written to)
    if signed:
        if hist.size and (hist.min() <= -(2**62) or hist.max() >= 2**62):
            raise DataError("leaf sums must lie strictly between -2^62 and 2^62")
        return hist
    if hist.size and (hist.min() < 0 or hist.max() >= 2**62):
        raise DataError("leaf histogram counts must be non-negative and below 2^62")
    return hist


#: the declared constraints of a tree's budget, noise and neighbours, shared by every tree plan
#: (1-D and 2-D): each builder adds its own layout's
TREE_CONSTRAINTS: dict[str, list[Any]] = {
    "epsilon": [None, Interval(Real, 0, None, closed="neither", hint="e.g. epsilon=1.0")],
    "delta": [Interval(Real, 0, 1, closed="left", hint="e.g. delta=1e-6 with noise='gaussian'")],
    "rho": [None, Interval(Real, 0, None, closed="neither", hint="e.g. rho=0.5 with noise='gaussian'")],
    "noise": [Options(("laplace", "gaussian"))],
    "neighbors": [Options(("add_remove", "replace"))],
    "max_contributions": [
        Interval(Integral, 1, None, hint="how many records one person may contribute, e.g. max_contributions=1")
    ],
    "gaussian_calibration": [Options(("exact", "zcdp"))],
}


@dataclass
class TreePlan:
    """Everything about a range-tree release that depends only on public parameters.

    Built (and validated) by :meth:`build` before any data is read; :meth:`measure` then adds the
    noise to the node counts of a leaf histogram. ``noise_parameters[l]`` is the exact
    discrete-Laplace scale or discrete-Gaussian sigma^2 used on level l (None: level not measured
    or, at the root under replace, exact).
    """

    domain: Domain
    layout: TreeLayout
    budget: Budget
    noise: NoiseKind
    neighbors: Relation
    max_contributions: int
    levels: str
    weights: np.ndarray
    noise_parameters: list[Fraction | None]
    level_variance: np.ndarray
    statement: dict[str, Any] = field(default_factory=dict)
    record_weight: int | None = None
    _errors: LeafEstimates | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def root_exact(self) -> bool:
        """Under ``replace`` the root is the public number of records, published exactly."""
        return self.neighbors == "replace"

    @property
    def noise_spec(self) -> NoiseSpec:
        """The per-level noise as the measurement core takes it (one block per level)."""
        return NoiseSpec(self.noise, tuple(self.noise_parameters))

    def privacy_loss(self, parallel: int = 1) -> PrivacyLoss:
        """The release's noisy measurements: one per measured level, root first, each with its exact
        noise parameter and the level's sensitivity under the unit (:mod:`~dptree.rangetree.calibration`:
        L1 k, or 2k under ``replace``; L2 k, or sqrt(2) k, rounded up to a double). The root under
        ``replace`` is the public number of records, published exactly: not a measurement.
        Its :meth:`~dptree.privacy.loss.PrivacyLoss.epsilon` (Laplace) or
        :meth:`~dptree.privacy.loss.PrivacyLoss.rho` (Gaussian) is the statement's ``budget_spent``.

        ``parallel``: the number of public groups of a release by group (one tree per group,
        :mod:`dptree.rangetree.groupby`). A record is in one group, and a user's records are bounded
        to ``max_contributions`` across all groups before the split, so each level of all trees
        together has the sensitivity of one tree's: the loss of one tree, run ``parallel`` times
        (McSherry 2009, Thm 4)."""
        weight = 1 if self.record_weight is None else self.record_weight
        l1, l2sq = level_sensitivities(self.neighbors, self.max_contributions * weight, self.layout.depth)
        what = "level" if self.record_weight is None else "sum level"
        steps: list[Laplace | Gaussian] = []
        for j, p in enumerate(self.noise_parameters):
            if p is None:  # not measured, or the exact public root under replace
                continue
            if self.noise == "laplace":
                steps.append(Laplace(p, Fraction(int(l1[j])), f"{what} {j}"))
            else:
                steps.append(Gaussian(p, _l2_up(int(l2sq[j])), f"{what} {j}"))
        return PrivacyLoss(Neighbors(self.neighbors, self.max_contributions), tuple(steps), parallel)

    def expected_error(self, lo: Any, hi: Any) -> Any:
        """The exact standard error of the count of the range [lo, hi] a release of this plan will
        answer (its ``stderr(lo, hi)``): the variance of the least-squares estimate (Honaker 2015)
        from the levels' public noise variances, conditioned on the empty padding buckets
        (:class:`~dptree.rangetree.estimates.LeafEstimates`); it does not depend on the data.
        Vectorised over ``lo`` and ``hi``."""
        if self._errors is None:  # the estimator over zero counts: its variances are the plan's
            sizes = self.layout.level_sizes
            zeros: list[np.ndarray | None] = [
                np.zeros(sizes[j], np.int64) if p is not None or (j == 0 and self.root_exact) else None
                for j, p in enumerate(self.noise_parameters)]
            self._errors = LeafEstimates(self.layout, self.domain.size, self.noise, self.level_variance, zeros)
        if np.any(np.asarray(self.domain._query_array(lo)) > np.asarray(self.domain._query_array(hi))):
            raise InvalidParameterError("expected_error(lo, hi) needs lo <= hi")
        D = self.domain.size
        a, b = np.broadcast_arrays(np.atleast_1d(self.domain.leaf_from(lo)), np.atleast_1d(self.domain.leaf_of(hi)))
        a, b = np.clip(a, 0, D), np.clip(b, -1, D - 1)
        empty = a > b
        sd = np.sqrt(self._errors.variances(np.where(empty, 0, a), np.where(empty, 0, b), empty))
        return float(sd[0]) if np.ndim(lo) == 0 and np.ndim(hi) == 0 else sd

    def check_public_total(self, *, user_id: Any = None, on_invalid: str = "error", by: Any = None) -> None:
        """Refuse input policies that make the released exact total depend on the private data.

        Under ``neighbors="replace"`` the root is published without noise: sound only when the
        total is the public number of input records. User bounding (Sum_u min(c_u, k)),
        ``on_invalid="drop"`` and a split by group all change the counted total when one record is
        replaced, which would make the exact root an unbounded leak. Called
        before any data is read.
        """
        if not self.root_exact:
            return
        for active, what in (
            (user_id is not None, "user_id bounding keeps at most max_contributions records per user"),
            (on_invalid == "drop", "on_invalid='drop' drops invalid values"),
            (by is not None, "a split by group moves a replaced record between groups"),
        ):
            if active:
                raise InvalidParameterError(
                    "neighbors='replace' publishes the total number of records exactly, which is only "
                    f"private when every input record is counted; {what}, so the counted total depends "
                    "on the private data. Use neighbors='add_remove' (the total is then noised)."
                )

    def measure(self, leaf_counts: np.ndarray, src: _noise.RandomSource) -> list[np.ndarray | None]:
        """The noisy node counts of every level derived from ``leaf_counts`` (the private step).

        Every measured level gets independent exact discrete noise through the measurement core
        (:func:`~dptree.privacy.measurement.measure`, :attr:`noise_spec`); under ``replace`` the root
        is the public total, kept exact; an unmeasured level is None."""
        return self._measure(_check_histogram(leaf_counts, signed=self.record_weight is not None), src)

    def measure_groups(self, leaf_counts: np.ndarray, rng: _noise.RngLike = None) -> list[np.ndarray | None]:
        """The noisy node counts of one tree per row of ``leaf_counts`` (shape (groups, leaves)),
        level j of shape (groups, nodes of level j), ``None`` where not measured (the private step
        of a group-by release, :mod:`dptree.rangetree.groupby`).

        Every node of every tree gets independent noise of the law :meth:`measure` gives it: each
        level of all trees is one block of the measurement core (one sampler call of size groups x
        nodes), so the noise of one group is drawn as in a release of that group alone."""
        return self._measure(_check_histogram(leaf_counts, 2), _noise.make_source(rng))

    def _measure(self, hist: np.ndarray, src: _noise.RandomSource) -> list[np.ndarray | None]:
        """Noisy counts of the tree(s) of ``hist`` (checked counts, one histogram per row when 2-D,
        padded here when a row has one count per domain bucket)."""
        Dp = self.layout.padded_size
        if hist.shape[-1] != Dp:
            if hist.shape[-1] == self.domain.size:
                hist = np.concatenate([hist, np.zeros(hist.shape[:-1] + (Dp - self.domain.size,), np.int64)], axis=-1)
            else:
                raise InvalidParameterError("leaf histogram does not match the domain")
        true_levels = self.layout.level_counts(hist)
        measurements = measure(true_levels, self.noise_spec, src)
        if self.root_exact:
            measurements[0] = true_levels[0].copy()  # the public total n
        return measurements

    def sum_tree(self, budget: Budget, record_weight: int, *, calibration: str = "exact") -> TreePlan:
        """The plan of a second tree of this layout, level split, noise family and unit that measures
        sums of weights in units, each record moving one node per level by at most ``record_weight``
        units (:class:`~dptree.data.weights.WeightGrid`: max(|lower|, |upper|) / resolution): level
        sensitivity ``max_contributions * record_weight`` (L1 under add/remove one person; L2 the
        same), calibrated to ``budget`` as :meth:`build` calibrates counts. From public values only.
        Add/remove neighbors only: under ``replace`` the sum of the weights is not public."""
        if self.root_exact:
            raise InvalidParameterError("sums of weights use add/remove neighbors: under 'replace' the total of the "
                                        "weights is not public; pass neighbors='add_remove'")
        k, w = self.max_contributions, int(record_weight)
        shares = exact_shares(self.weights)
        l1, l2sq = level_sensitivities(self.neighbors, k * w, self.layout.depth)
        with _noise.noise_scale_of("weight_bounds", k * w, 1 if self.noise == "laplace" else 2):
            if self.noise == "laplace":
                level_noise = calibrate_laplace(budget, shares, l1, False)
            else:
                level_noise = calibrate_gaussian(budget, shares, l2sq, False, calibration=calibration,
                                                 max_contributions=k * w)
        check_noise_range(self.noise, level_noise.parameters)
        who = Neighbors(self.neighbors, k)
        stated = _statement(self.layout, budget=budget, noise_kind=self.noise, who=who, noise=level_noise, l1=l1,
                            l2sq=l2sq, budget_split=dict(self.statement.get("budget_split", {})))
        return TreePlan(domain=self.domain, layout=self.layout, budget=budget, noise=self.noise,
                        neighbors=self.neighbors, max_contributions=k, levels=self.levels,
                        weights=self.weights.copy(), noise_parameters=level_noise.parameters,
                        level_variance=level_noise.variances, statement=stated, record_weight=w)

    @classmethod
    @privacy_values
    @validate_params(
        {
            **TREE_CONSTRAINTS,
            "branching": [None, Interval(Integral, 2, None, hint="e.g. branching=16, or None to choose it")],
            "levels": [Options(LEVEL_OPTIONS)],
        }
    )
    def build(
        cls,
        *,
        lower: Any,
        upper: Any,
        epsilon: float | None = None,
        delta: float = 0.0,
        rho: float | None = None,
        width: Any = None,
        branching: int | None = None,
        noise: str = "laplace",
        neighbors: str = "add_remove",
        max_contributions: int = 1,
        levels: str = "uniform",
        gaussian_calibration: str = "exact",
        unit: PrivacyUnit | None = None,
        budget: Budget | None = None,
    ) -> Self:
        """Validate public parameters and compute the per-level noise (no data involved): the plan
        of a range-tree release (public as :func:`dptree.plan_range_tree`).

        ``gaussian_calibration`` (Gaussian noise with an (epsilon, delta) budget only): ``"exact"``
        (default) gives every noised level the smallest sigma^2 whose exact discrete-Gaussian delta at
        epsilon is <= delta (:func:`dptree.privacy.budget.discrete_gaussian_sigma2_for`; one record moves one
        count per level by 1, or two under ``replace``), when that computation applies: one record per
        person and the same share on every noised level (``levels="uniform"``); otherwise, and with
        ``"zcdp"``, sigma^2 = L2^2 / (2 rho w_l) with rho = zcdp_rho_for(epsilon, delta) (CKS Cor. 13).
        A rho budget always uses the zCDP calibration.

        ``levels``: how the budget is split over the tree's levels. ``"uniform"``: equal shares
        (Honaker 2015, Algorithm 1). A workload: the shares that minimise the exact average variance of the
        least-squares estimate over its queries, ``"all_ranges"`` (alias ``"optimal"``) over
        all ranges [l, r], ``"prefix"`` over the prefixes [lower, x] (CDF and threshold
        queries). The optimisation uses public quantities only (the domain size, the branching, the
        noise family and the neighbor relation; never the data, and epsilon only scales the answer),
        and ``branching=None`` then picks the branching for the same workload. The statement's
        ``budget_split`` records the choice and its workload.

    Example (``rng=7`` seeds the noise only so that the outputs below are reproducible: a seeded release
    is marked not private; leave ``rng`` out in real use)::

        >>> import numpy as np, dptree
        >>> plan = dptree.plan_range_tree(lower=0, upper=120, epsilon=1.0)  # public inputs only
        >>> plan.layout.fanouts, plan.statement["guarantee"]  # 121 leaves: a 16-ary tree, 8 at the bottom
        ((16, 8), 'pure epsilon-DP')
        >>> [level["laplace_scale"] for level in plan.statement["levels"]]  # epsilon / 2 on each level
        [2.0, 2.0]
        >>> ages = 18 + np.arange(10_000) % 73  # ages 18 to 90, evenly
        >>> rel = plan.release(dptree.leaf_histogram(ages, plan), rng=7)  # the private step
        >>> round(rel.count(30, 39))  # ages 30-39: 1370
        1364
        """
        check_budget_range(epsilon, rho)
        k = int(max_contributions)
        kind = cast(NoiseKind, noise)
        who = Neighbors(cast(Relation, neighbors), k)
        budget = resolve_budget(noise, epsilon, delta, rho)
        domain = make_domain(lower, upper, width)
        check_memory(domain.size)
        root_exact = who.relation == "replace"
        levels = canonical_levels(levels)
        b = choose_branching(domain.size, kind, levels, root_exact) if branching is None else int(branching)
        layout = build_layout(domain.size, b)
        weights = level_weights(layout, strategy=levels, noise=kind, root_exact=root_exact)
        if root_exact:
            weights[0] = 0.0
        shares = exact_shares(weights)
        l1, l2sq = level_sensitivities(who.relation, k, layout.depth)
        # the budget is range-checked
        with _noise.noise_scale_of("max_contributions", k, 1 if noise == "laplace" else 2):
            if noise == "laplace":
                level_noise = calibrate_laplace(budget, shares, l1, root_exact)
            else:
                level_noise = calibrate_gaussian(budget, shares, l2sq, root_exact, calibration=gaussian_calibration,
                                                 max_contributions=k)
        check_noise_range(noise, level_noise.parameters)
        return cls(
            domain=domain,
            layout=layout,
            budget=budget,
            noise=kind,
            neighbors=who.relation,
            max_contributions=k,
            levels=levels,
            weights=np.asarray(weights, dtype=np.float64),
            noise_parameters=level_noise.parameters,
            level_variance=level_noise.variances,
            statement=_statement(
                layout, budget=budget, noise_kind=noise, who=who, noise=level_noise, l1=l1, l2sq=l2sq,
                budget_split={"levels": levels, "workload": workload_description(levels)},
            ),
        )


def _l2_up(l2sq: int) -> Fraction:
    """sqrt(l2sq) as a double, rounded up when it is not exact (the stated sensitivity is never less)."""
    r = math.sqrt(l2sq)
    return Fraction(r) if Fraction(r) ** 2 >= l2sq else Fraction(math.nextafter(r, math.inf))


def _statement(layout: TreeLayout, *, budget: Budget, noise_kind: str, who: Neighbors, noise: LevelNoise,
               l1: np.ndarray, l2sq: np.ndarray, budget_split: dict[str, str]) -> dict[str, Any]:
    """The privacy statement of a plan (one schema, :mod:`dptree.privacy.statement`)."""
    params = noise.parameters
    measured = [j for j in range(len(params)) if params[j] is not None]
    name = "Laplace" if noise_kind == "laplace" else "Gaussian"
    if noise.exact_gaussian:
        guarantee = "(epsilon, delta)-DP (exact discrete-Gaussian accounting)"
    else:
        guarantee = {"laplace": "pure epsilon-DP", "gaussian": "rho-zCDP"}[noise_kind] + (
            ", implies (epsilon, delta)-DP" if budget.kind == "approx" else ""
        )
    if who.relation == "replace":
        root = "exact public total (bounded DP)"
    else:
        root = "noised" if params[0] is not None else "not measured"
    extra: dict[str, Any] = {
        "budget_requested": {"epsilon": budget.epsilon, "delta": budget.delta, "rho": budget.rho},
        "budget_spent": noise.spent,
        "l1_sensitivity": float(l1[measured].sum()),
        "l2_sensitivity": float(math.sqrt(l2sq[measured].sum())),
        "levels": noise.per_level,
        "budget_split": budget_split,
        "root": root,
    }
    if noise_kind == "gaussian":
        extra["calibration"] = noise.calibration
    return make_statement(
        mechanism=f"range tree, {layout.branching}-ary, discrete {name} noise per level",
        neighbors=who,
        guarantee=guarantee,
        private=True,
        **extra,
    )
