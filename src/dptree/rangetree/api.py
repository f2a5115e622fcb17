"""``range_tree``: the one entry point from user data to a range-tree release (Smith & Ullman 2021; Honaker 2015).

The walk goes downward: plan (public parameters, :func:`~dptree.rangetree.release.plan_range_tree`)
-> data (the leaf histogram(s), through the one dispatcher :func:`dptree.data.histograms.leaf_histogram`
and its engines) -> the plan's measurement and estimation -> a
:class:`~dptree.rangetree.release.RangeTree`, or with ``by=`` a
:class:`~dptree.rangetree.groupby.GroupedRelease` (one tree per public group).
"""

from __future__ import annotations

import os
from numbers import Integral, Real
from typing import Any, Literal, Sequence, overload

from dptree import noise as _noise
from dptree._validation import Constraint, Interval, Options, renamed, validate_params
from dptree.data.engines.base import Missing, Unknown
from dptree.data.histograms import COLUMN, MISSING, MISSING_ALIAS, RNG, UNKNOWN, leaf_histogram, leaf_sums
from dptree.errors import InvalidParameterError
from dptree.io import release_file as _release_file
from dptree.privacy.budget import Budget
from dptree.privacy.unit import PrivacyUnit, privacy_values
from dptree.rangetree.bounds import PrivateBoundsPlan, plan_private_bounds
from dptree.rangetree.contributions import DEFAULT_CAP, DEFAULT_SHARE, PrivateContributionsPlan
from dptree.rangetree.contributions import plan_private_contributions as _plan_private_contributions
from dptree.rangetree.groupby import GroupedRelease, release_groups
from dptree.rangetree.private_groups import PrivateGroupsRelease, plan_private_groups
from dptree.rangetree.cdf_choice import FACTORIZATION_LEVELS, choose_cdf_plan
from dptree.rangetree.release import RangeTree, RangeTreePlan, plan_range_tree
from dptree.rangetree.sums_release import plan_range_sums

__all__ = ["range_tree", "range_tree_by", "release_over_private_bounds", "plan_private_contributions"]

_CONSTRAINTS: dict[str, Sequence[Constraint | None]] = {
    "on_invalid": MISSING, "missing": MISSING_ALIAS, "column": COLUMN, "unknown": UNKNOWN, "rng": RNG,
    "bounds": [Options(("public", "private"), hint="bounds='private' spends bounds_share of epsilon to find them")],
    "bounds_share": [Interval(Real, 0, 1, closed="neither", hint="e.g. bounds_share=0.1 (the share of epsilon "
                                                                   "spent finding the bounds)")],
    "max_groups": [None, Interval(Integral, 1, 1 << 20, hint="e.g. max_groups=1 (the groups one user may add to)")],
    "groups_share": [Interval(Real, 0, 1, closed="neither", hint="e.g. groups_share=0.5 (the share of epsilon "
                                                                   "spent selecting the groups)")],
    "max_contributions": [Interval(Integral, 1, None, hint="how many records one person may contribute, e.g. "
                                                           "max_contributions=1, or 'private'"),
                          Options(("private",))],
}


@overload
def range_tree(values: Any, *, lower: Any = ..., upper: Any = ..., epsilon: float | None = ..., delta: float = ...,
               rho: float | None = ..., width: Any = ..., branching: int | None = ..., noise: str = ...,
               neighbors: str = ..., max_contributions: int | Literal["private"] = ..., levels: str = ...,
               on_invalid: Missing = ..., column: str | None = ..., user_id: Any = ..., by: None = ...,
               groups: None = ..., unknown: Unknown = ..., bounds: str = ..., bounds_share: float = ...,
               bounds_origin: Any = ..., contributions_share: float = ..., contributions_cap: int = ...,
               max_groups: int | None = ..., groups_share: float = ...,
               rng: _noise.RngLike = ..., missing: Missing | None = ...,
               unit: PrivacyUnit | None = None, budget: Budget | None = None, weights: Any = ...,
               weight_bounds: Any = ..., weight_resolution: Any = ..., sum_share: float | None = ...) -> RangeTree: ...


@overload
def range_tree(values: Any, *, lower: Any = ..., upper: Any = ..., epsilon: float | None = ..., delta: float = ...,
               rho: float | None = ..., width: Any = ..., branching: int | None = ..., noise: str = ...,
               neighbors: str = ..., max_contributions: int = ..., levels: str = ..., on_invalid: Missing = ...,
               column: str | None = ..., user_id: Any = ..., by: Any, groups: Literal["private"],
               unknown: Unknown = ..., bounds: str = ..., bounds_share: float = ..., bounds_origin: Any = ...,
               max_groups: int | None = ..., groups_share: float = ..., contributions_share: float = ...,
               contributions_cap: int = ...,
               rng: _noise.RngLike = ..., missing: Missing | None = ...,
               unit: PrivacyUnit | None = None, budget: Budget | None = None) -> PrivateGroupsRelease: ...


@overload
def range_tree(values: Any, *, lower: Any = ..., upper: Any = ..., epsilon: float | None = ..., delta: float = ...,
               rho: float | None = ..., width: Any = ..., branching: int | None = ..., noise: str = ...,
               neighbors: str = ..., max_contributions: int | Literal["private"] = ..., levels: str = ...,
               on_invalid: Missing = ..., column: str | None = ..., user_id: Any = ..., by: Any,
               groups: Sequence[Any], unknown: Unknown = ...,
               bounds: str = ..., bounds_share: float = ..., bounds_origin: Any = ...,
               max_groups: int | None = ..., groups_share: float = ..., contributions_share: float = ...,
               contributions_cap: int = ...,
               rng: _noise.RngLike = ..., missing: Missing | None = ...,
               unit: PrivacyUnit | None = None, budget: Budget | None = None) -> GroupedRelease: ...


@privacy_values
@validate_params(_CONSTRAINTS)
def range_tree(
    values: Any,
    *,
    lower: Any = None,
    upper: Any = None,
    epsilon: float | None = None,
    delta: float = 0.0,
    rho: float | None = None,
    width: Any = None,
    branching: int | None = None,
    noise: str = "laplace",
    neighbors: str = "add_remove",
    max_contributions: int | Literal["private"] = 1,
    levels: str = "uniform",
    on_invalid: Missing = "error",
    column: str | None = None,
    user_id: Any = None,
    by: Any = None,
    groups: Sequence[Any] | None = None,
    unknown: Unknown = "error",
    bounds: str = "public",
    bounds_share: float = 0.1,
    bounds_origin: Any = None,
    max_groups: int | None = None,
    groups_share: float = 0.5,
    contributions_share: float = DEFAULT_SHARE,
    contributions_cap: int = DEFAULT_CAP,
    rng: _noise.RngLike = None,
    missing: Missing | None = None,
    unit: PrivacyUnit | None = None,
    budget: Budget | None = None,
    weights: Any = None,
    weight_bounds: Any = None,
    weight_resolution: Any = 1,
    sum_share: float | None = None,
) -> RangeTree | GroupedRelease | PrivateGroupsRelease:
    """Release a private b-ary range tree of ``values`` over the public domain [lower, upper].

    Returns a :class:`RangeTree` that answers every range count, CDF value, histogram and quantile
    with exact standard errors, as post-processing (no further privacy cost).

    Privacy: ``noise="laplace"`` gives pure ``epsilon``-DP; ``noise="gaussian"`` gives ``rho``-zCDP,
    or (``epsilon``, ``delta``)-DP when given those, under the ``neighbors`` relation
    (``"add_remove"`` one record, or ``"replace"`` one record with n public), for persons with at
    most ``max_contributions`` records. Values outside [lower, upper] are clamped. Invalid values
    (NaN/None/NaT, +-inf, non-integers on an integer domain, entries that are not numbers or dates)
    raise :class:`~dptree.errors.DataError` unless ``on_invalid="drop"``, which leaves each out (a
    declared policy, the same for every product and input; ``missing=`` is its deprecated name).
    ``rng`` is for tests only: a seeded release is marked ``private: false``.

    ``values``: an array-like, a table (pandas, polars, Arrow, DuckDB) with ``column``, a
    CSV/Parquet path with ``column`` (read by DuckDB), or a Spark DataFrame with ``column``.
    ``user_id`` (a column name or an array): keep at most ``max_contributions`` records per user,
    chosen uniformly at random before the histogram (:mod:`dptree.data.bounding`).
    ``max_contributions="private"`` (with ``user_id``): ``contributions_share`` of the budget
    chooses the bound among 1..``contributions_cap`` from the users' record counts (a tie-aware
    exponential mechanism at the level where the records dropped balance the noise, Amin et al.
    2019; :mod:`dptree.rangetree.contributions`), the tree is released at it with the rest
    (sequential composition: the release is epsilon-DP, or rho-zCDP, in all, under add/remove one
    user). The chosen bound is ``release.max_contributions`` (a DP output); the statement and the
    file record the split and the choice. No ``by``, ``bounds="private"`` or ``neighbors="replace"``.

    ``by`` (a column name or an array) with ``groups`` (the public list of groups): one tree per
    group, a :class:`GroupedRelease`, for the budget of one release (parallel composition,
    :mod:`dptree.rangetree.groupby`; add/remove neighbors only). Every listed group is released,
    present in the data or not; rows of unlisted groups raise, or are dropped with ``unknown="drop"``.

    ``groups="private"`` (with ``by``): the groups are found from the data, privately
    (:mod:`dptree.rangetree.private_groups`, :mod:`dptree.partitions`): a group is released when
    its number of distinct users (``user_id``; records without one) passes a randomized threshold,
    each user counted in at most ``max_groups`` of their groups (default 1, drawn uniformly), then
    one tree per released group (a :class:`~dptree.rangetree.private_groups.PrivateGroupsRelease`;
    ``.groups`` lists them). ``groups_share`` of ``epsilon`` (and all of ``delta`` for Laplace
    trees, ``groups_share`` of it for Gaussian ones) selects the groups, the rest releases the
    trees: (``epsilon``, ``delta``)-DP in all, ``delta`` > 0 required. Rows without a group raise,
    or are dropped with ``unknown="drop"``.

    ``levels="uniform"`` splits the budget equally over the noised levels (Honaker 2015, Algorithm 1);
    ``"all_ranges"`` (alias ``"optimal"``) minimises the exact average variance over all ranges and
    ``"prefix"`` over the prefixes [lower, x] (CDF, threshold and quantile read-offs), from public
    quantities only. ``branching=None`` picks, among 2, 4, ..., 64 (for ``"prefix"`` also 3, 5, 6,
    10, 12), the factor with the lowest average variance over the workload (data-independent).
    With ``noise="gaussian"``, ``levels="factorization"`` releases the prefix counts through the
    square-root factorisation instead of a tree (a :class:`~dptree.rangetree.factorized_release.FactorizedCDF`,
    same queries, exact standard errors; :mod:`dptree.rangetree.factorization`), and ``levels="cdf"``
    releases whichever of it and the ``"prefix"`` tree has the lower exact average prefix variance
    (:mod:`dptree.rangetree.cdf_choice`); neither combines with ``by``, ``bounds="private"``,
    ``max_contributions="private"``, ``weights`` or ``branching``.

    ``bounds="private"`` (no ``lower``/``upper``): ``bounds_share`` of ``epsilon`` finds the
    domain, the rest releases the tree over it (sequential composition: the release is
    ``epsilon``-DP in all; Laplace noise and an epsilon budget only; no ``by``/``user_id``). Each
    end is one AboveThreshold over candidates doubling outward from ``bounds_origin`` (default 0; a
    public guess of where the data lies, e.g. a date for timestamps far from 1970, never a bound:
    the search goes as far out as the data needs) (Durfee 2023; the two ends
    read disjoint records, so under add/remove each gets the whole bounds budget, under replace
    half; :mod:`dptree.rangetree.bounds`) and halts where about ``rank`` records lie beyond it;
    records beyond the found ends are clamped into the end buckets. The kind of domain is the
    column's dtype (numbers read from a file: always float). ``width`` is then the smallest bucket width (default 1 for integers, one day for
    dates, a power of two for floats), doubled until the range has at most 2^20 buckets. The
    statement and the saved file record the split, the search and the bounds found (a DP output).

    ``weights`` (a column name, or an array beside in-memory values) with ``weight_bounds=(lower,
    upper)``: a :class:`~dptree.rangetree.sums_release.RangeSums`, which also answers ``sum(lo, hi)``
    and ``mean(lo, hi)`` of the weights with exact standard errors and intervals. A second tree of the
    same layout measures the sums of the weights rounded to multiples of ``weight_resolution`` (halves
    up) and clamped to the bounds; ``sum_share`` of the budget goes to it (default: the split that
    minimises a typical range's mean variance, :mod:`dptree.rangetree.sums`), the rest to the counts.
    Add/remove neighbors; with ``user_id`` both trees see the same k records per user. No ``by``,
    ``bounds="private"`` or ``max_contributions="private"``.

    Example (``rng=7`` seeds the noise only so that the outputs below are reproducible: a seeded release
    is marked not private; leave ``rng`` out in real use)::

        >>> import numpy as np, dptree
        >>> ages = 18 + np.arange(10_000) % 73  # ages 18 to 90, evenly
        >>> rel = dptree.range_tree(ages, lower=0, upper=120, epsilon=1.0, rng=7)
        >>> rel.privacy["guarantee"], rel.privacy["neighbors"]
        ('pure epsilon-DP', 'add_remove')
        >>> round(rel.count(30, 39)), [round(v) for v in rel.ci(30, 39)]  # ages 30-39 (1370), 95% interval
        (1364, [1356, 1373])
        >>> int(rel.quantile(0.5)), [int(v) for v in rel.quantile_ci(0.5)]  # the median, 95% interval
        (54, [54, 54])
    """
    on_invalid = renamed(on_invalid, missing, "on_invalid", "missing", "error")
    if levels in FACTORIZATION_LEVELS:
        others = {"by": by, "groups": groups, "weights": weights, "weight_bounds": weight_bounds,
                  "branching": branching, "bounds": bounds != "public" or None,
                  "max_contributions": max_contributions == "private" or None}
        return _factorized(values, lower=lower, upper=upper, epsilon=epsilon, delta=delta, rho=rho, width=width,
                           noise=noise, neighbors=neighbors, max_contributions=max_contributions, levels=levels,
                           on_invalid=on_invalid, column=column, user_id=user_id, others=others, rng=rng)
    if weights is not None or weight_bounds is not None:
        return _with_sums(values, weights=weights, weight_bounds=weight_bounds, weight_resolution=weight_resolution,
                          sum_share=sum_share, lower=lower, upper=upper, epsilon=epsilon, delta=delta, rho=rho,
                          width=width, branching=branching, noise=noise, neighbors=neighbors,
                          max_contributions=max_contributions, levels=levels, on_invalid=on_invalid, column=column,
                          user_id=user_id, others={"by": by, "groups": groups, "bounds": bounds != "public"}, rng=rng)
    if weight_resolution != 1 or sum_share is not None:
        raise InvalidParameterError("weight_resolution and sum_share apply to sums of weights: pass weights= and "
                                    "weight_bounds=, or drop them", parameter="weight_resolution")
    if bounds_origin is not None and bounds != "private":
        raise InvalidParameterError("bounds_origin is where bounds='private' starts its search; pass bounds='private' "
                                    "(without lower/upper), or drop bounds_origin")
    private_groups = isinstance(groups, str) and groups == "private"
    if (max_groups is not None or groups_share != 0.5) and not private_groups:
        raise InvalidParameterError("max_groups and groups_share apply to groups found from the data: pass "
                                    "groups='private' (with by=), or drop them", parameter="max_groups")
    if private_groups:
        if max_contributions == "private":
            raise InvalidParameterError("groups='private' releases at a declared bound: pass max_contributions=k "
                                        "(max_contributions='private' releases one tree, without by=)",
                                        parameter="max_contributions")
        if bounds != "private" and by is not None:
            return _private_groups(values, by=by, user_id=user_id, max_groups=1 if max_groups is None else max_groups,
                                   groups_share=groups_share, lower=lower, upper=upper, epsilon=epsilon, delta=delta,
                                   rho=rho, width=width, branching=branching, noise=noise, neighbors=neighbors,
                                   max_contributions=max_contributions, levels=levels, on_invalid=on_invalid,
                                   column=column, unknown=unknown, rng=rng)
        raise InvalidParameterError("groups='private' finds the groups of the by= column: pass by= (and public "
                                    "bounds lower=/upper=)", parameter="groups")
    if bounds_share != 0.1 and bounds != "private":  # a share other than the default would be silently unused
        raise InvalidParameterError("bounds_share is the share of epsilon bounds='private' spends on the bounds; pass "
                                    "bounds='private' (without lower/upper), or drop bounds_share")
    if contributions_share != DEFAULT_SHARE or contributions_cap != DEFAULT_CAP:
        if max_contributions != "private":  # they would be silently unused
            raise InvalidParameterError("contributions_share and contributions_cap set how max_contributions='private' "
                                        "chooses the bound: pass max_contributions='private' (with user_id=), or drop "
                                        "them")
    if max_contributions == "private":
        plan_k = plan_private_contributions(lower=lower, upper=upper, epsilon=epsilon, delta=delta, rho=rho,
                                            width=width, branching=branching, noise=noise, neighbors=neighbors,
                                            levels=levels, user_id=user_id, by=by, bounds=bounds,
                                            share=contributions_share, cap=contributions_cap)
        return plan_k.release(values, rng, column=column, user_id=user_id, on_invalid=on_invalid,
                              source=values if isinstance(values, (str, os.PathLike)) else None)
    if bounds == "private":
        return _private_bounds(values, lower=lower, upper=upper, epsilon=epsilon, delta=delta, rho=rho,
                               width=width, branching=branching, noise=noise, neighbors=neighbors,
                               max_contributions=max_contributions, levels=levels, on_invalid=on_invalid,
                               column=column, user_id=user_id, by=by, bounds_share=bounds_share,
                               bounds_origin=bounds_origin, rng=rng)
    if (by is None) != (groups is None):
        raise InvalidParameterError("by and groups go together: by= names the column, groups= lists the public groups")
    plan = plan_range_tree(
        lower=lower, upper=upper, epsilon=epsilon, delta=delta, rho=rho, width=width, branching=branching,
        noise=noise, neighbors=neighbors, max_contributions=max_contributions, levels=levels,
    )
    if by is not None and neighbors == "replace":
        raise InvalidParameterError(
            "group-by releases use add/remove neighbors: under 'replace' a record could move between groups "
            "and each group's total would not be public"
        )
    plan.check_public_total(user_id=user_id, on_invalid=on_invalid, by=by)
    src = _noise.make_source(rng)  # one source for bounding and noise
    created = _release_file.utc_now()  # before the data is read: no timing of the reading
    source = values if isinstance(values, (str, os.PathLike)) else None
    hist = leaf_histogram(values, plan, column=column, user_id=user_id, by=by, groups=groups, unknown=unknown,
                          on_invalid=on_invalid, rng=src)
    if by is None:
        return plan.release(hist, src, column=column, source=source, created=created)
    assert groups is not None
    return release_groups(plan, hist, groups, src, column=column, source=source, created=created)


def _factorized(values: Any, *, lower: Any, upper: Any, epsilon: float | None, delta: float, rho: float | None,
                width: Any, noise: str, neighbors: str, max_contributions: Any, levels: str, on_invalid: Missing,
                column: str | None, user_id: Any, others: dict[str, Any], rng: _noise.RngLike) -> RangeTree:
    """``levels="factorization"`` (or ``"cdf"`` when the factorisation wins): the plan
    (:func:`choose_cdf_plan`, public values only), then one read of the leaf histogram, then the
    release of the chosen mechanism."""
    for name, given in others.items():
        if given is not None:
            raise InvalidParameterError(f"{name}= does not combine with levels={levels!r} (one factorised CDF over "
                                        "public bounds); release a range tree with levels='prefix' for it",
                                        parameter=name)
    plan = choose_cdf_plan(levels, lower=lower, upper=upper, epsilon=epsilon, delta=delta, rho=rho, width=width,
                           noise=noise, neighbors=neighbors, max_contributions=max_contributions)
    plan.check_public_total(user_id=user_id, on_invalid=on_invalid)
    src = _noise.make_source(rng)
    created = _release_file.utc_now()  # before the data is read
    hist = leaf_histogram(values, plan, column=column, user_id=user_id, on_invalid=on_invalid, rng=src)
    return plan.release(hist, src, column=column, source=values if isinstance(values, (str, os.PathLike)) else None,
                        created=created)


def _with_sums(values: Any, *, weights: Any, weight_bounds: Any, weight_resolution: Any, sum_share: float | None,
               lower: Any, upper: Any, epsilon: float | None, delta: float, rho: float | None, width: Any,
               branching: int | None, noise: str, neighbors: str, max_contributions: Any, levels: str,
               on_invalid: Missing, column: str | None, user_id: Any, others: dict[str, Any],
               rng: _noise.RngLike) -> RangeTree:
    """``range_tree(weights=..., weight_bounds=...)``: the plan (:func:`plan_range_sums`, public
    values only), then one read of the counts and sums of the same records, then both trees."""
    if weights is None or weight_bounds is None:
        raise InvalidParameterError("sums of weights need both weights= (the column) and weight_bounds=(lower, "
                                    "upper) (public bounds every weight is clamped to)", parameter="weight_bounds")
    for name, given in others.items():
        if given is not None and given is not False:
            raise InvalidParameterError(f"{name}= does not combine with sums of weights; release without weights= "
                                        "for it", parameter=name)
    if max_contributions == "private":
        raise InvalidParameterError("sums of weights release at a declared bound: pass max_contributions=k",
                                    parameter="max_contributions")
    plan = plan_range_sums(lower=lower, upper=upper, epsilon=epsilon, delta=delta, rho=rho, width=width,
                           branching=branching, noise=noise, neighbors=neighbors, max_contributions=max_contributions,
                           levels=levels, weight_bounds=weight_bounds, weight_resolution=weight_resolution,
                           sum_share=sum_share)
    src = _noise.make_source(rng)
    created = _release_file.utc_now()  # before the data is read
    hist, sums = leaf_sums(values, plan, plan.grid, weights=weights, column=column, user_id=user_id,
                           on_invalid=on_invalid, rng=src)
    return plan.release(hist, sums, src, column=column, weights=weights,
                        source=values if isinstance(values, (str, os.PathLike)) else None, created=created)


@privacy_values
@validate_params({k: v for k, v in _CONSTRAINTS.items() if not k.startswith(("bounds", "max_groups", "groups_"))})
def range_tree_by(
    values: Any,
    *,
    by: Any,
    groups: Sequence[Any],
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
    unknown: Unknown = "error",
    user_id: Any = None,
    on_invalid: Missing = "error",
    column: str | None = None,
    rng: _noise.RngLike = None,
    missing: Missing | None = None,
    unit: PrivacyUnit | None = None,
    budget: Budget | None = None,
) -> GroupedRelease:
    """:func:`range_tree` with ``by=`` and ``groups=``: one range tree per public group, for the
    budget of one release (parallel composition, McSherry 2009, Thm 4)."""
    return range_tree(
        values, by=by, groups=groups, lower=lower, upper=upper, epsilon=epsilon, delta=delta, rho=rho, width=width,
        branching=branching, noise=noise, neighbors=neighbors, max_contributions=max_contributions, levels=levels,
        unknown=unknown, user_id=user_id, on_invalid=renamed(on_invalid, missing, "on_invalid", "missing", "error"),
        column=column, rng=rng,
    )


def _private_groups(values: Any, *, by: Any, user_id: Any, max_groups: int, groups_share: float, lower: Any,
                    upper: Any, epsilon: float | None, delta: float, rho: float | None, width: Any,
                    branching: int | None, noise: str, neighbors: str, max_contributions: int, levels: str,
                    on_invalid: Missing, column: str | None, unknown: Unknown,
                    rng: _noise.RngLike) -> PrivateGroupsRelease:
    """``range_tree(groups="private")``: every public check (:func:`plan_private_groups`), then the
    selection and the trees."""
    plan = plan_private_groups(lower=lower, upper=upper, epsilon=epsilon, delta=delta, rho=rho,
                               max_groups=max_groups, groups_share=groups_share, per_user=user_id is not None,
                               width=width, branching=branching, noise=noise, neighbors=neighbors,
                               max_contributions=max_contributions, levels=levels)
    created = _release_file.utc_now()  # before the data is read
    source = values if isinstance(values, (str, os.PathLike)) else None
    return plan.release(values, by=by, user_id=user_id, column=column, unknown=unknown, on_invalid=on_invalid,
                        rng=rng, source=source, created=created)


def _private_bounds(values: Any, *, lower: Any, upper: Any, epsilon: float | None, delta: float, rho: float | None,
                    width: Any, branching: int | None, noise: str, neighbors: str, max_contributions: int,
                    levels: str, on_invalid: Missing, column: str | None, user_id: Any, by: Any,
                    bounds_share: float, bounds_origin: Any, rng: _noise.RngLike) -> RangeTree:
    """``range_tree(bounds="private")``: every public check (:func:`plan_private_bounds`), then the release."""
    plan = plan_private_bounds(lower=lower, upper=upper, epsilon=epsilon, delta=delta, rho=rho, width=width,
                               branching=branching, noise=noise, neighbors=neighbors,
                               max_contributions=max_contributions, levels=levels, by=by, user_id=user_id,
                               share=bounds_share, origin=bounds_origin)
    source = values if isinstance(values, (str, os.PathLike)) else None
    return release_over_private_bounds(plan, values, rng, column=column, on_invalid=on_invalid, source=source)


def plan_private_contributions(*, lower: Any, upper: Any, epsilon: float | None = None, delta: float = 0.0,
                               rho: float | None = None, width: Any = None, branching: int | None = None,
                               noise: str = "laplace", neighbors: str = "add_remove", levels: str = "uniform",
                               user_id: Any = None, by: Any = None, bounds: str = "public",
                               share: float = DEFAULT_SHARE, cap: int = DEFAULT_CAP) -> PrivateContributionsPlan:
    """The plan of ``range_tree(..., max_contributions="private")`` from public parameters only
    (:func:`dptree.rangetree.contributions.plan_private_contributions`): its ``privacy_loss()`` has
    both steps (a ledger charges them before any data is read), its ``release(data, rng,
    user_id=..., column=...)`` gives the :class:`RangeTree` at the chosen bound."""
    return _plan_private_contributions(lower=lower, upper=upper, epsilon=epsilon, delta=delta, rho=rho, width=width,
                                       branching=branching, noise=noise, neighbors=neighbors, levels=levels,
                                       user_id=user_id, by=by, bounds=bounds, share=share, cap=cap,
                                       tree_type=RangeTreePlan)


def release_over_private_bounds(plan: PrivateBoundsPlan, values: Any, rng: _noise.RngLike = None, *,
                                column: str | None = None, on_invalid: str = "error", source: Any = None,
                                fmt: str | None = None) -> RangeTree:
    """The release of a :class:`~dptree.rangetree.bounds.PrivateBoundsPlan`: read ``values`` once,
    find the bounds and release the tree over them (:meth:`~dptree.rangetree.bounds.PrivateBoundsPlan.found_tree`),
    one random source for both."""
    src = _noise.make_source(rng)
    tree, hist, statement, created = plan.found_tree(values, src, RangeTreePlan, column=column, on_invalid=on_invalid,
                                                     fmt=fmt)
    return tree.release(hist, src, column=column, source=source, created=created, statement=statement)
