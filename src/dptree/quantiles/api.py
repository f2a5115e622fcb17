"""``dptree.quantiles``: m private quantiles with intervals, by the method with the smallest predicted
error or the one named. Methods, algorithms and proofs: docs/notes/quantiles.md."""

from __future__ import annotations

from dataclasses import replace
from numbers import Integral, Real
from typing import Any, Callable, Literal, Sequence, cast

import numpy as np

from dptree._validation import Constraint, Interval, Options, check_param, validate_params
from dptree.data.groups import check_groups
from dptree.data.histograms import COLUMN, RNG, UNKNOWN, is_file
from dptree.errors import InvalidParameterError
from dptree.estimation.intervals import LEVEL
from dptree.interior.calibration import DECLARED_SIZE, EPSILON, ON_INVALID
from dptree.interior.encoding import prepare, prepare_groups
from dptree.io.release_file import creation_metadata
from dptree.noise import RngLike, make_source
from dptree.partitions.selection import MAX_GROUPS, SHARE
from dptree.privacy.budget import Budget, check_release_budget
from dptree.privacy.unit import PrivacyUnit, privacy_values, unit_from_keywords
from dptree.quantiles.approx import approx_quantiles, em_call
from dptree.quantiles.auto import TREE_BRANCHING, TREE_LEVELS
from dptree.quantiles.contributions import PrivateQuantilesPlan, plan_private_quantiles
from dptree.quantiles.groups import GroupedQuantiles, grouped_quantiles
from dptree.quantiles.intervals import release_radii, value_intervals
from dptree.quantiles.measured import INTERVAL_SHARE, counts_intervals, prefix_counts, session_upto
from dptree.quantiles.plan import (
    INTERVAL_OPTIONS,
    METHODS,
    NEIGHBORS,
    TREE_GRID,
    QuantilesPlanCore,
    joint_module,
    make_plan,
)
from dptree.quantiles.private_groups import PrivateGroupsQuantiles, placeholder_release, plan_private_groups
from dptree.quantiles.release import QuantilesRelease, tree_release
from dptree.quantiles.staged import staged_quantiles
from dptree.rangetree.contributions import DEFAULT_CAP, DEFAULT_SHARE
from dptree.rangetree.results import quantile_levels

__all__ = ["QuantilesPlan", "plan_quantiles", "quantiles"]

#: at most this many levels (the exponential-mechanism methods loop over them in Python)
MAX_LEVELS = 100_000
#: at most this many levels get the tree's calibrated intervals (a bootstrap per level, about a
#: millisecond each: 10^4 levels take about 12 s, 10^5 two minutes); interval="pivot" takes any m
CALIBRATED_MAX_LEVELS = 10_000


def _check_interval(p: Any, qa: np.ndarray, method: str, grid: int) -> None:
    """``grid`` is the tree's: refused beside a named method that has none (it would be ignored);
    the tree's calibrated intervals are refused past :data:`CALIBRATED_MAX_LEVELS` levels. (Which
    ``interval`` fits which method: :func:`dptree.quantiles.plan.resolve_interval`.)"""
    if grid != TREE_GRID and method not in ("auto", "tree"):
        raise InvalidParameterError(f"grid= is the read-off grid of the tree's intervals (method='tree' or 'auto'); "
                                    f"method={method!r} has none: leave grid out")
    if p.method == "tree" and p.interval == "calibrated" and qa.size > CALIBRATED_MAX_LEVELS:
        raise InvalidParameterError(
            f"{qa.size} levels: the tree's calibrated intervals take about a millisecond per level, so at most "
            f"{CALIBRATED_MAX_LEVELS}; pass interval='pivot' (conservative intervals, any number of levels) or "
            "fewer levels")


def _levels(qs: Any) -> np.ndarray:
    qa = np.sort(quantile_levels(qs))
    if qa.size > MAX_LEVELS:
        raise InvalidParameterError(f"at most {MAX_LEVELS} levels, got {qa.size}; use fewer levels")
    return qa


def _em_data(data: Any, column: str | None, lower: Any, upper: Any,
             on_invalid: str, width: Any) -> tuple[Any, Any, Any]:
    """The data as sorted distinct encoded offsets and counts, counted in its engine (DuckDB for
    files and relations, Spark for DataFrames, numpy in memory: memory O(distinct values), no
    Python object per record; :func:`dptree.interior.encoding.prepare`)."""
    if is_file(data) and column is None:
        raise InvalidParameterError("a file needs column= (the column to read)")
    return prepare(data, lower, upper, None, on_invalid, column=column, width=width)


#: the constraints of the public parameters of a quantiles plan (:func:`plan_quantiles`)
_PLAN: dict[str, Sequence[Constraint | None]] = {
    "epsilon": EPSILON, "method": [Options(METHODS)], "level": LEVEL, "n": DECLARED_SIZE, "n_max": DECLARED_SIZE,
    "n_min": DECLARED_SIZE, "neighbors": NEIGHBORS, "interval": [Options(INTERVAL_OPTIONS)],
    "interval_share": [Interval(Real, 0, 1, closed="neither", hint=f"e.g. interval_share={INTERVAL_SHARE}")],
    "grid": [Interval(Integral, 2, None, hint=f"e.g. grid={TREE_GRID}")],
    "max_contributions": [Interval(Integral, 1, None, hint="e.g. max_contributions=5, or 'private'"),
                          Options(("private",))],
    "max_groups": [None, *MAX_GROUPS], "groups_share": SHARE,
}


@privacy_values
@validate_params({**_PLAN, "column": COLUMN, "rng": RNG, "on_invalid": ON_INVALID, "unknown": UNKNOWN})
def quantiles(
    data: Any,
    qs: Any,
    *,
    lower: Any,
    upper: Any,
    epsilon: float,
    method: str = "auto",
    level: float = 0.95,
    n: int | None = None,
    n_max: int | None = None,
    n_min: int | None = None,
    column: str | None = None,
    width: Any = None,
    neighbors: Literal["add_remove", "replace"] = "add_remove",
    grid: int = TREE_GRID,
    interval: Literal["auto", "calibrated", "pivot", "counts", "bound"] = "auto",
    interval_share: float = INTERVAL_SHARE,
    rng: RngLike = None,
    on_invalid: Literal["error", "drop"] = "error",
    by: Any = None,
    groups: Any = None,
    unknown: Literal["error", "drop"] = "error",
    user_id: Any = None,
    max_contributions: int | Literal["private"] = 1,
    delta: float = 0.0,
    max_groups: int | None = None,
    groups_share: float = 0.5,
    contributions_share: float = DEFAULT_SHARE,
    contributions_cap: int = DEFAULT_CAP,
    unit: PrivacyUnit | None = None,
    budget: Budget | None = None,
) -> QuantilesRelease | GroupedQuantiles | PrivateGroupsQuantiles:
    """m private quantiles of ``data`` over the public domain [lower, upper], each with an interval.

    ``qs``: the levels (sorted here). ``method``: ``"tree"`` (a range-tree release read off,
    prefix-workload budget split), ``"approx"`` (ApproxQuantiles, Kaplan, Schnapp & Stemmer 2022,
    Algorithm 1), ``"joint"`` (JointExp, Gillenwater, Joseph & Kulesza 2021), ``"exponential"``
    (one tie-aware exponential mechanism per level at epsilon / m), or ``"auto"``: the method with
    the smallest predicted error among tree, approx and (with a declared size, small m) joint, from
    public quantities only (m, epsilon, the domain, ``n``/``n_max`` if declared;
    :mod:`dptree.quantiles.auto`). Pure ``epsilon``-DP under ``neighbors``
    (add/remove-one or replace-one record). Intervals at ``level`` (``interval``, below): the
    tree's from its CDF band (approximate), the others' measured by default. ``data`` as for
    :func:`dptree.range_tree` (arrays, tables with ``column``, CSV/Parquet paths, DuckDB relations
    and Spark DataFrames; the exponential-mechanism methods read distinct values and their counts
    from the engine). ``width``:
    the tree's bucket width (with ``"auto"``, used when it picks the tree; on a real-valued domain
    without one auto does not consider the tree). ``n``/``n_max``: a PUBLIC size, never computed from the data.
    ``n_min``: a PUBLIC lower bound on the number of records (kept records, with ``user_id``): it
    turns the mechanism methods' rank radii into value intervals like an exact ``n`` does (only
    their intervals read it: a wrong bound costs their stated coverage, never privacy).
    Dates: ``lower``/``upper`` as dates, datetimes or ISO text make a date domain, ``width`` (a
    timedelta, default one day) its resolution for every method (the tree's bucket width; the
    exponential-mechanism methods' points: whole units from ``lower``); estimates and interval ends
    are ``numpy.datetime64``.
    ``interval``: ``"auto"`` (default) is each method's default. The exponential-mechanism methods':
    ``"counts"`` (their default) spends ``interval_share`` (default 0.1) of epsilon on one noisy
    histogram over cells cut around the released estimates and reads each level's interval off it
    by two exact tests: for every data set it contains the q-quantile min{x : #{records <= x} >=
    q n} with probability >= ``level``, no declared size needed (:mod:`dptree.quantiles.measured`;
    the estimates run at the rest of epsilon); ``"bound"`` keeps the whole budget for the estimates
    and states a bound from the utility tail (a rank radius holding for all levels at once,
    JointExp's only where its bound is established; values from the other estimates when ``n`` is
    declared, the domain's ends otherwise; :mod:`dptree.quantiles.intervals`). The tree's:
    ``"calibrated"`` (its default) the pivot interval with its multiplier
    and its high-end rule chosen per level by simulating the release's public noise on its own isotonic CDF
    (post-processing, no budget; 199 simulations up to 2^16 buckets, fewer above, the pivot
    interval past 2^20; :mod:`dptree.rangetree.quantile_calibration`), ``"pivot"`` the uncalibrated pivot
    interval (over-covers, 0.97-0.99 at 95%). ``grid`` (tree only, like ``interval``): the number of
    points the tree's intervals are read off at (:meth:`dptree.RangeTree.quantile_ci`).
    ``rng``: tests only (a seeded release is not private).
    ``by``/``groups``: one release per group of the public list ``groups`` (``by``: a column of
    ``data``, or each record's group beside in-memory values), each on its group's records with the
    whole epsilon (parallel composition; add/remove-one only); ``n``/``n_max`` then declare each
    group's size; rows of unlisted groups raise, or are dropped with ``unknown="drop"``. Returns a
    :class:`~dptree.quantiles.groups.GroupedQuantiles` (docs/notes/quantiles.md, "By group").
    ``user_id``/``max_contributions`` = k: the privacy unit is one person with at most k records
    (``user_id``: a column, or an array beside in-memory values; each person's records beyond k are
    dropped at random in the engine); every exponential-mechanism call runs at 1/k of its share
    (group privacy), the tree at ``max_contributions=k``. Add/remove-one person only; with
    ``user_id``, ``n`` is refused (declare ``n_max``) and the mechanism methods need an integer
    domain of at most 2^24 points (docs/notes/quantiles.md, "Per person"). With ``by`` too, a person's
    records are bounded across all groups (k in all) and each group's release runs at 1/k per
    record, so the set is epsilon-DP per person; the mechanism methods then hold groups x points
    <= 2^25 counts. ``max_contributions="private"`` (with ``user_id``): ``contributions_share`` of
    epsilon chooses k among 1..``contributions_cap`` from the users' record counts, then the
    quantiles run at k with the rest (:mod:`dptree.quantiles.contributions`; the chosen k is
    ``release.max_contributions``); no ``by``.
    ``groups="private"`` (with ``by``): the groups are found from the data (:mod:`dptree.partitions`):
    a group is released when its number of distinct persons (``user_id``; records without one)
    passes a randomized threshold, each person counted in at most ``max_groups`` groups;
    ``groups_share`` of ``epsilon`` and the whole ``delta`` (> 0, required) select them, the rest
    releases each group's quantiles: (``epsilon``, ``delta``)-DP in all; a
    :class:`~dptree.quantiles.private_groups.PrivateGroupsQuantiles` (``.groups`` lists them).

    Example (``rng=7`` seeds the noise only so that the outputs below are reproducible: a seeded release
    is marked not private; leave ``rng`` out in real use)::

        >>> import numpy as np, dptree
        >>> ages = 18 + np.arange(10_000) % 73  # ages 18 to 90, evenly
        >>> q = dptree.quantiles(ages, [0.25, 0.5, 0.75], lower=0, upper=120, epsilon=1.0, n=10_000, rng=7)
        >>> q.method, [int(v) for v in q.values]  # auto's choice for 3 levels over 121 points
        ('tree', [36, 54, 72])
        >>> [int(v) for v in q.ci_low], [int(v) for v in q.ci_high], q.level
        ([36, 54, 72], [36, 54, 72], 0.95)
    """
    if (by is None) != (groups is None):
        raise InvalidParameterError(_BY_AND_GROUPS)
    pl = plan_quantiles(qs, lower=lower, upper=upper, epsilon=epsilon, method=method, level=level, n=n, n_max=n_max,
                        n_min=n_min, width=width, neighbors=neighbors, grid=grid, interval=interval,
                        interval_share=interval_share, groups=groups, user_id=user_id,
                        max_contributions=max_contributions, delta=delta, max_groups=max_groups,
                        groups_share=groups_share, contributions_share=contributions_share,
                        contributions_cap=contributions_cap)
    return pl.release(data, column=column, on_invalid=on_invalid, rng=rng, by=by, unknown=unknown)


_BY_AND_GROUPS = ("by and groups go together: by= names the column (or gives each record's group), groups= lists the "
                  "public groups")


#: with by=: the most (groups x points) counts held at once (2^25 int64, at most 512 MiB padded)
BOUNDED_GROUP_CELLS = 1 << 25


def _bounded_points(data: Any, p: QuantilesPlan, column: str | None, user_id: Any, on_invalid: Literal["error", "drop"],
                    src: Any, *, by: Any = None, groups: list[Any] | None = None,
                    unknown: Literal["error", "drop"] = "error") -> list[tuple[np.ndarray, np.ndarray]]:
    """The records left after keeping at most k per user (chosen uniformly at random, in the engine:
    :func:`dptree.data.histograms.leaf_histogram` with ``user_id``, as for a range tree; with ``by``,
    across all groups), as sorted distinct offsets and counts: one count per point of the integer
    domain; one (offsets, counts) pair, or one per group of ``groups``."""
    from dptree.data.histograms import leaf_histogram
    from dptree.rangetree.release import plan_range_tree

    points = plan_range_tree(lower=p.lo, upper=p.hi, epsilon=p.epsilon, width=1, branching=2,
                             max_contributions=p.k)  # its buckets are the domain's points
    hist = leaf_histogram(data, points, column=column, user_id=user_id, on_invalid=on_invalid, rng=src, by=by,
                          groups=groups, unknown=unknown)
    out = []
    for row in np.atleast_2d(hist)[:, :p.enc.size]:
        vals = np.flatnonzero(row)
        out.append((vals.astype(np.uint64), row[vals].astype(np.int64)))
    return out


class QuantilesPlan(QuantilesPlanCore):
    """Everything public about a quantiles release, decided before any data is read
    (:class:`~dptree.quantiles.plan.QuantilesPlanCore`: the method, ``"auto"`` resolved from public
    quantities only, the domain, the declared sizes, the budget per exponential-mechanism call, the
    range tree's plan for the tree method, the groups of a group-by release and the privacy
    statement). :meth:`release` is the one private step.

    >>> plan = plan_quantiles([0.25, 0.5, 0.75], lower=0, upper=120, epsilon=1.0, method="approx")
    >>> [round(m.epsilon, 3) for m in plan.privacy_loss().measurements]
    [0.5, 0.5]
    """

    def release(self, data: Any, *, column: str | None = None, on_invalid: Literal["error", "drop"] = "error",
                rng: RngLike = None, by: Any = None, unknown: Literal["error", "drop"] = "error"
                ) -> QuantilesRelease | GroupedQuantiles | PrivateGroupsQuantiles:
        """The quantiles of ``data`` by the planned method (the one private step; reading options as
        in :func:`quantiles`; ``by``: each record's group, with a plan for ``groups``)."""
        check_param("column", column, COLUMN)
        check_param("rng", rng, RNG)
        check_param("on_invalid", on_invalid, ON_INVALID)
        check_param("unknown", unknown, UNKNOWN)
        if self.selection is not None:
            if by is None:
                raise InvalidParameterError(_BY_AND_GROUPS)
            return _private_groups(self, data, by=by, unknown=unknown, column=column, rng=rng, on_invalid=on_invalid)
        if (by is None) != (self.groups is None):
            raise InvalidParameterError(_BY_AND_GROUPS)
        if self.groups is not None:
            return _by_group(self, data, by=by, unknown=unknown, column=column, rng=rng, on_invalid=on_invalid)
        p, qa, level, user_id = self, self.q, self.level, self.user_id
        metadata = creation_metadata(column=column)  # the clock, read before the data
        src = make_source(rng)  # one stream: the bounding per user, then the mechanisms
        if p.method == "tree":
            from dptree.rangetree.api import range_tree

            tree = range_tree(data, lower=p.lo, upper=p.hi, epsilon=p.epsilon, width=p.width, levels=TREE_LEVELS,
                              branching=TREE_BRANCHING, neighbors=p.neighbors, column=column, on_invalid=on_invalid,
                              rng=src, user_id=user_id, max_contributions=p.k)
            return tree_release(p, tree, qa, level, src, p.interval, p.grid, metadata)
        if user_id is not None:
            ((vals, cnt),) = _bounded_points(data, p, column, user_id, on_invalid, src)
            return _em_release(p, qa, _em_offsets(p, qa, vals, cnt, src), level, src, metadata, _in_memory(vals, cnt))
        # files and relations: every call staged on engine queries, the same law and draws; the
        # interval counts on the same session (one read of the data)
        def finish(offs: list[int], session: Any) -> QuantilesRelease:
            return _em_release(p, qa, offs, level, src, metadata, session_upto(session, p.enc))

        staged = None if p.method == "joint" else staged_quantiles(data, column, p.enc, on_invalid, qa, method=p.method,
                                                                    epsilon_call=p.per_call, rng=src,
                                                                    neighbors=p.neighbors, dither=p.dither,
                                                                    finish=finish)
        if staged is not None:
            return staged
        _, vals, cnt = _em_data(data, column, p.lower, p.upper, on_invalid, p.input_width)
        return _em_release(p, qa, _em_offsets(p, qa, vals, cnt, src), level, src, metadata, _in_memory(vals, cnt))


@privacy_values
@validate_params(_PLAN)
def plan_quantiles(
    qs: Any,
    *,
    lower: Any,
    upper: Any,
    epsilon: float,
    method: str = "auto",
    level: float = 0.95,
    n: int | None = None,
    n_max: int | None = None,
    n_min: int | None = None,
    width: Any = None,
    neighbors: Literal["add_remove", "replace"] = "add_remove",
    grid: int = TREE_GRID,
    interval: Literal["auto", "calibrated", "pivot", "counts", "bound"] = "auto",
    interval_share: float = INTERVAL_SHARE,
    groups: Any = None,
    user_id: Any = None,
    max_contributions: int | Literal["private"] = 1,
    delta: float = 0.0,
    max_groups: int | None = None,
    groups_share: float = 0.5,
    contributions_share: float = DEFAULT_SHARE,
    contributions_cap: int = DEFAULT_CAP,
    unit: PrivacyUnit | None = None,
    budget: Budget | None = None,
) -> QuantilesPlan | PrivateQuantilesPlan:
    """The plan of a quantiles release (:func:`quantiles`) from public parameters only: the method
    auto picks by predicted error (:mod:`dptree.quantiles.auto`), the range tree's plan (method
    "tree"; Honaker 2015), ApproxQuantiles' layers (Kaplan, Schnapp & Stemmer 2022), JointExp's
    dither (Gillenwater, Joseph & Kulesza 2021), the budget per call and the statement. Every
    refusal the parameters cause happens here. ``groups``: the public groups of a group-by release
    (its ``release`` then takes ``by=``). ``unit``: the privacy unit (``dptree.PerUser(...)``,
    ``dptree.Replace()``), or the shortcut keywords ``neighbors``, ``max_contributions``,
    ``user_id``; ``groups="private"`` (with ``delta``, ``max_groups``, ``groups_share``): the plan of
    the selection and of each released group's quantiles; other parameters as in :func:`quantiles`."""
    if unit is not None:
        unit = unit_from_keywords(unit, neighbors=neighbors, max_contributions=cast(int, max_contributions),
                                  user_id=user_id)  # "private" beside a unit: refused there, as any bound but 1
        neighbors = unit.neighbors().relation
        max_contributions, user_id = unit.max_contributions, unit.user_id
    eps = check_release_budget(epsilon)
    qa = _levels(qs)
    if max_contributions == "private":
        if delta != 0.0 or interval_share != INTERVAL_SHARE or max_groups is not None or groups_share != 0.5:
            raise InvalidParameterError("max_contributions='private' releases one set of quantiles at the default "
                                        "interval share, pure epsilon-DP: drop delta=, interval_share=, max_groups= "
                                        "and groups_share=", parameter="max_contributions")
        return plan_private_quantiles(qa, lower=lower, upper=upper, epsilon=eps, method=method, level=level, n=n,
                                      n_max=n_max, n_min=n_min, width=width, neighbors=neighbors, grid=grid,
                                      interval=interval, groups=groups, user_id=user_id, share=contributions_share,
                                      cap=contributions_cap, plan_cls=QuantilesPlan)
    if contributions_share != DEFAULT_SHARE or contributions_cap != DEFAULT_CAP:  # they would go unused
        raise InvalidParameterError("contributions_share and contributions_cap set how max_contributions='private' "
                                    "chooses the bound: pass max_contributions='private' (with user_id=), or drop them")
    gs = None
    private = isinstance(groups, str) and groups == "private"
    if (max_groups is not None or groups_share != 0.5) and not private:
        raise InvalidParameterError("max_groups and groups_share apply to groups found from the data: pass "
                                    "groups='private' (with by= at release), or drop them", parameter="max_groups")
    if private:
        if interval_share != INTERVAL_SHARE:
            raise InvalidParameterError("groups='private' releases the exponential-mechanism methods with the stated "
                                        "bound as intervals (no interval counts): drop interval_share=",
                                        parameter="interval_share")
        pp = plan_private_groups(qa, lower=lower, upper=upper, epsilon=eps, delta=delta, method=method, level=level,
                                 n=n, n_max=n_max, n_min=n_min, width=width, neighbors=neighbors, grid=grid,
                                 interval=interval, user_id=user_id, max_contributions=max_contributions,
                                 max_groups=max_groups, groups_share=groups_share, cls=QuantilesPlan)
        _check_interval(pp, qa, method, grid)
        return pp
    if delta != 0.0:
        raise InvalidParameterError("quantiles are pure epsilon-DP and spend no delta: drop delta= (only "
                                    "groups='private' spends one, to select the groups)", parameter="delta")
    if groups is not None:
        if neighbors == "replace":
            raise InvalidParameterError("group-by releases use add/remove neighbors: under 'replace' a record could "
                                        "move between groups and change two releases; use neighbors='add_remove'")
        gs = check_groups(groups)
    p = make_plan(qa, lower, upper, eps, method, width, neighbors, n, n_max, max_contributions, user_id, n_min,
                  level=level, interval=interval, interval_share=interval_share, grid=grid, cls=QuantilesPlan)
    _check_interval(p, qa, method, grid)
    if gs is not None and user_id is not None and p.method != "tree" and len(gs) * p.enc.size > BOUNDED_GROUP_CELLS:
        raise InvalidParameterError(f"user_id= with by= and method={p.method!r} counts every point of the domain in "
                                    f"every group: {len(gs)} groups x {p.enc.size:,} points exceeds "
                                    f"{BOUNDED_GROUP_CELLS:,}; use method='tree' or a smaller domain")
    return p if gs is None else replace(p, groups=gs)



def _private_groups(p: QuantilesPlan, data: Any, *, by: Any, unknown: Literal["error", "drop"], column: str | None,
                    rng: RngLike, on_invalid: Literal["error", "drop"]) -> PrivateGroupsQuantiles:
    """Select the groups (:meth:`~dptree.partitions.selection.SelectionPlan.select`), then one
    quantiles release per released group on its records (:func:`_by_group`, rows of other groups
    left out); one random source for the bounding, the selection and the mechanisms."""
    assert p.selection is not None and p.total is not None
    metadata = creation_metadata(column=column)  # the clock, read before the data
    src = make_source(rng)
    keys = p.selection.select(data, by=by, user_id=p.user_id, rng=src, unknown=unknown)
    inner = replace(p, selection=None, total=None)
    releases = {} if not keys else dict(_by_group(replace(inner, groups=keys), data, by=by, unknown="drop",
                                                  column=column, rng=src, on_invalid=on_invalid).releases)
    eps, delta, share = p.total
    member = placeholder_release(inner, bool(src.private), metadata)
    privacy = p.statement
    privacy = {**privacy, "groups": list(keys), "private": bool(src.private)}
    return PrivateGroupsQuantiles(groups=keys, releases=releases, privacy=privacy, member=member,
                                  selection={"budget": {"epsilon": eps, "delta": delta, "groups_share": share},
                                             "selection": {"max_groups": p.selection.max_groups,
                                                           "per_user": p.selection.per_user}},
                                  metadata=metadata)


def _em_offsets(p: QuantilesPlan, qa: np.ndarray, vals: Any, cnt: Any, src: Any) -> list[int]:
    """The exponential-mechanism methods on in-memory sorted distinct offsets and counts."""
    top = p.enc.size - 1
    if p.method == "approx":
        return approx_quantiles(vals, cnt, qa, lower=0, upper=top, rng=src, neighbors=p.neighbors,
                                epsilon_call=p.per_call, dither=p.dither)
    if p.method == "exponential":
        return [em_call(vals, cnt, float(q), 0, top, p.per_call, src, p.neighbors) for q in qa]
    # every record enters, whatever the declared size: a cap at it would turn the add/remove pairs at
    # that size into replace pairs, whose sensitivity (2) exceeds the 2 (1 - g) JointExp is priced at
    # (dptree.quantiles.joint); the declared size bounds the tables' cell check, not the data
    joint = joint_module().joint_exponential
    assert p.size_n is not None
    return [int(v) for v in joint(vals, cnt, qa, lower=0, upper=top, epsilon=p.mechanism_epsilon / p.k, rng=src,
                                  dither=p.dither, neighbors=p.neighbors, declared_size=int(p.size_n))]


def _in_memory(vals: Any, cnt: Any) -> Callable[[list[int]], np.ndarray]:
    """The interval counts' exact prefix counts of in-memory sorted distinct offsets and counts."""
    return lambda cuts: prefix_counts(vals, cnt, cuts)


def _em_release(p: QuantilesPlan, qa: np.ndarray, offs: list[int], level: float, src: Any,
                metadata: dict[str, Any], upto: Callable[[list[int]], np.ndarray]) -> QuantilesRelease:
    """The release of the exponential-mechanism methods' outputs, with their intervals: measured
    (``interval="counts"``: ``upto`` gives the exact prefix counts at the cut points, which only
    the noise step reads; :mod:`dptree.quantiles.measured`) or the stated bound."""
    values = [p.enc.value_at(o) for o in offs]
    if p.interval == "counts":
        scale, _ = p.counts_noise()
        exact_n = None if p.upper_bound else p.size_n  # a declared exact size (public)
        low, high, noisy = counts_intervals(qa, offs, p.enc.size, upto, scale, src, level, exact_n)
        ci_low, ci_high = [p.enc.value_at(o) for o in low], [p.enc.value_at(o) for o in high]
        radius, cells = None, [int(c) for c in noisy]
    else:
        radius = release_radii(p.method, qa, size=p.enc.size, epsilon=p.epsilon / p.k, neighbors=p.neighbors,
                               level=level, dither=p.dither)
        r = np.full(qa.size, np.inf) if radius is None else np.asarray(radius)
        at_least = p.n_min if p.upper_bound or p.size_n is None else p.size_n  # a public lower bound on n, if any
        ci_low, ci_high = value_intervals(qa, values, r, at_least, p.lo, p.hi)
        cells = None
    return QuantilesRelease(qa, values, ci_low, ci_high, float(level), p.method, p.epsilon, p.size_n, p.lo, p.hi,
                            {**p.member_statement, "private": bool(src.private)}, neighbors=p.neighbors,
                            width=p.width, rank_radius=radius, n_is_upper_bound=p.upper_bound, metadata=metadata,
                            max_contributions=p.k, n_min=p.n_min, interval=p.interval,
                            interval_share=p.interval_share, interval_counts=cells)


def _by_group(p: QuantilesPlan, data: Any, *, by: Any, unknown: Literal["error", "drop"], column: str | None,
              rng: RngLike, on_invalid: Literal["error", "drop"]) -> GroupedQuantiles:
    """One quantiles release per public group (module :mod:`dptree.quantiles.groups`). With
    ``user_id``: at most k records per person are kept across all groups, then each group's
    release runs at 1/k of its share per record, so a person's k_1 + k_2 + ... <= k records cost at
    most epsilon in all (group privacy within a group, parallel composition across them)."""
    gs, qa, level, user_id = p.groups, p.q, p.level, p.user_id
    assert gs is not None
    metadata = creation_metadata(column=column)  # the clock, read before the data
    src = make_source(rng)  # one stream for all groups
    if p.method == "tree":
        from dptree.rangetree.api import range_tree

        trees = range_tree(data, by=by, groups=gs, unknown=unknown, lower=p.lo, upper=p.hi, epsilon=p.epsilon,
                           width=p.width, levels=TREE_LEVELS, branching=TREE_BRANCHING, neighbors=p.neighbors,
                           column=column, on_invalid=on_invalid, rng=src, user_id=user_id, max_contributions=p.k)
        releases = {g: tree_release(p, trees[g], qa, level, src, p.interval, p.grid, metadata) for g in gs}
    else:
        if user_id is not None:  # at most k records per person, across the groups
            parts = _bounded_points(data, p, column, user_id, on_invalid, src, by=by, groups=gs, unknown=unknown)
        else:
            _, parts = prepare_groups(data, p.lower, p.upper, by=by, groups=gs, unknown=unknown, on_invalid=on_invalid,
                                      column=column, width=p.input_width)
        releases = {g: _em_release(p, qa, _em_offsets(p, qa, vals, cnt, src), level, src, metadata,
                                   _in_memory(vals, cnt)) for g, (vals, cnt) in zip(gs, parts)}
    return grouped_quantiles(gs, releases, {**p.member_statement, "private": bool(src.private)}, metadata)
