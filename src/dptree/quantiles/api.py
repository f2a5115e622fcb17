"""``dptree.quantiles``: m private quantiles with intervals, by the method with the smallest predicted
error or the one named. Methods, algorithms and proofs: docs/notes/quantiles.md."""

from __future__ import annotations

from dataclasses import replace
from numbers import Integral
from typing import Any, Literal, Sequence, cast

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
from dptree.privacy.budget import Budget, check_release_budget
from dptree.privacy.unit import PrivacyUnit, privacy_values, unit_from_keywords
from dptree.quantiles.approx import approx_quantiles, em_call
from dptree.quantiles.auto import TREE_BRANCHING, TREE_LEVELS
from dptree.quantiles.contributions import PrivateQuantilesPlan, plan_private_quantiles
from dptree.quantiles.groups import GroupedQuantiles, grouped_quantiles
from dptree.quantiles.intervals import release_radii, value_intervals
from dptree.quantiles.plan import METHODS, NEIGHBORS, TREE_GRID, QuantilesPlanCore, joint_module, make_plan
from dptree.quantiles.release import QuantilesRelease
from dptree.quantiles.staged import staged_quantiles
from dptree.rangetree.contributions import DEFAULT_CAP, DEFAULT_SHARE
from dptree.rangetree.quantile_calibration import INTERVALS, calibration_sims, released_intervals
from dptree.rangetree.results import quantile_levels

__all__ = ["QuantilesPlan", "plan_quantiles", "quantiles"]

#: at most this many levels (the exponential-mechanism methods loop over them in Python)
MAX_LEVELS = 100_000
#: at most this many levels get the tree's calibrated intervals (a bootstrap per level, about a
#: millisecond each: 10^4 levels take about 12 s, 10^5 two minutes); interval="pivot" takes any m
CALIBRATED_MAX_LEVELS = 10_000


def _check_interval(p: Any, qa: np.ndarray, interval: str, method: str, grid: int) -> None:
    """``interval`` and ``grid`` are the tree's: refused beside a named method that has none (they
    would be ignored), and its calibrated intervals past :data:`CALIBRATED_MAX_LEVELS` levels."""
    if interval != "calibrated" and method not in ("auto", "tree"):
        raise InvalidParameterError(f"interval={interval!r} chooses the tree's intervals; method={method!r} states "
                                    "its own (rank radii): leave interval out")
    if grid != TREE_GRID and method not in ("auto", "tree"):
        raise InvalidParameterError(f"grid= is the read-off grid of the tree's intervals (method='tree' or 'auto'); "
                                    f"method={method!r} has none: leave grid out")
    if p.method == "tree" and interval == "calibrated" and qa.size > CALIBRATED_MAX_LEVELS:
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
    "n_min": DECLARED_SIZE, "neighbors": NEIGHBORS, "interval": [Options(INTERVALS)],
    "grid": [Interval(Integral, 2, None, hint=f"e.g. grid={TREE_GRID}")],
    "max_contributions": [Interval(Integral, 1, None, hint="e.g. max_contributions=5, or 'private'"),
                          Options(("private",))],
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
    interval: Literal["calibrated", "pivot"] = "calibrated",
    rng: RngLike = None,
    on_invalid: Literal["error", "drop"] = "error",
    by: Any = None,
    groups: Any = None,
    unknown: Literal["error", "drop"] = "error",
    user_id: Any = None,
    max_contributions: int | Literal["private"] = 1,
    contributions_share: float = DEFAULT_SHARE,
    contributions_cap: int = DEFAULT_CAP,
    unit: PrivacyUnit | None = None,
    budget: Budget | None = None,
) -> QuantilesRelease | GroupedQuantiles:
    """m private quantiles of ``data`` over the public domain [lower, upper], each with an interval.

    ``qs``: the levels (sorted here). ``method``: ``"tree"`` (a range-tree release read off,
    prefix-workload budget split), ``"approx"`` (ApproxQuantiles, Kaplan, Schnapp & Stemmer 2022,
    Algorithm 1), ``"joint"`` (JointExp, Gillenwater, Joseph & Kulesza 2021), ``"exponential"``
    (one tie-aware exponential mechanism per level at epsilon / m), or ``"auto"``: the method with
    the smallest predicted error among tree, approx and (with a declared size, small m) joint, from
    public quantities only (m, epsilon, the domain, ``n``/``n_max`` if declared;
    :mod:`dptree.quantiles.auto`). Pure ``epsilon``-DP under ``neighbors``
    (add/remove-one or replace-one record). Intervals at ``level``: the tree's from its CDF band
    (approximate), the others' a stated bound from the exponential mechanism's utility tail (a rank
    radius holding for all levels at once; JointExp's only where its bound is established; values from the other estimates when ``n`` is declared,
    the domain's ends otherwise). ``data`` as for :func:`dptree.range_tree` (arrays, tables with
    ``column``, CSV/Parquet paths, DuckDB relations and Spark DataFrames; the exponential-mechanism
    methods read distinct values and their counts from the engine). ``width``:
    the tree's bucket width (with ``"auto"``, used when it picks the tree; on a real-valued domain
    without one auto does not consider the tree). ``n``/``n_max``: a PUBLIC size, never computed from the data.
    ``n_min``: a PUBLIC lower bound on the number of records (kept records, with ``user_id``): it
    turns the mechanism methods' rank radii into value intervals like an exact ``n`` does (only
    their intervals read it: a wrong bound costs their stated coverage, never privacy).
    Dates: ``lower``/``upper`` as dates, datetimes or ISO text make a date domain, ``width`` (a
    timedelta, default one day) its resolution for every method (the tree's bucket width; the
    exponential-mechanism methods' points: whole units from ``lower``); estimates and interval ends
    are ``numpy.datetime64``.
    ``interval`` (tree only): ``"calibrated"`` (default) the pivot interval with its multiplier
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
                        n_min=n_min, width=width, neighbors=neighbors, grid=grid, interval=interval, groups=groups,
                        user_id=user_id, max_contributions=max_contributions, contributions_share=contributions_share,
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
                rng: RngLike = None, by: Any = None,
                unknown: Literal["error", "drop"] = "error") -> QuantilesRelease | GroupedQuantiles:
        """The quantiles of ``data`` by the planned method (the one private step; reading options as
        in :func:`quantiles`; ``by``: each record's group, with a plan for ``groups``)."""
        check_param("column", column, COLUMN)
        check_param("rng", rng, RNG)
        check_param("on_invalid", on_invalid, ON_INVALID)
        check_param("unknown", unknown, UNKNOWN)
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
            return _tree_release(p, tree, qa, level, src, p.interval, p.grid, metadata)
        if user_id is not None:
            ((vals, cnt),) = _bounded_points(data, p, column, user_id, on_invalid, src)
            return _em_release(p, qa, _em_offsets(p, qa, vals, cnt, src), level, src, metadata)
        # files and relations: every call staged on engine queries, the same law and draws
        staged = None if p.method == "joint" else staged_quantiles(data, column, p.enc, on_invalid, qa, method=p.method,
                                                                    epsilon_call=p.per_call, rng=src,
                                                                    neighbors=p.neighbors)
        if staged is None:
            _, vals, cnt = _em_data(data, column, p.lower, p.upper, on_invalid, p.input_width)
            staged = _em_offsets(p, qa, vals, cnt, src)
        return _em_release(p, qa, staged, level, src, metadata)


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
    interval: Literal["calibrated", "pivot"] = "calibrated",
    groups: Any = None,
    user_id: Any = None,
    max_contributions: int | Literal["private"] = 1,
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
    ``user_id``; other parameters as in :func:`quantiles`."""
    if unit is not None:
        unit = unit_from_keywords(unit, neighbors=neighbors, max_contributions=cast(int, max_contributions),
                                  user_id=user_id)  # "private" beside a unit: refused there, as any bound but 1
        neighbors = unit.neighbors().relation
        max_contributions, user_id = unit.max_contributions, unit.user_id
    eps = check_release_budget(epsilon)
    qa = _levels(qs)
    if max_contributions == "private":
        return plan_private_quantiles(qa, lower=lower, upper=upper, epsilon=eps, method=method, level=level, n=n,
                                      n_max=n_max, n_min=n_min, width=width, neighbors=neighbors, grid=grid,
                                      interval=interval, groups=groups, user_id=user_id, share=contributions_share,
                                      cap=contributions_cap, plan_cls=QuantilesPlan)
    if contributions_share != DEFAULT_SHARE or contributions_cap != DEFAULT_CAP:  # they would go unused
        raise InvalidParameterError("contributions_share and contributions_cap set how max_contributions='private' "
                                    "chooses the bound: pass max_contributions='private' (with user_id=), or drop them")
    gs = None
    if groups is not None:
        if neighbors == "replace":
            raise InvalidParameterError("group-by releases use add/remove neighbors: under 'replace' a record could "
                                        "move between groups and change two releases; use neighbors='add_remove'")
        gs = check_groups(groups)
    p = make_plan(qa, lower, upper, eps, method, width, neighbors, n, n_max, max_contributions, user_id, n_min,
                  level=level, interval=interval, grid=grid, cls=QuantilesPlan)
    _check_interval(p, qa, interval, method, grid)
    if gs is not None and user_id is not None and p.method != "tree" and len(gs) * p.enc.size > BOUNDED_GROUP_CELLS:
        raise InvalidParameterError(f"user_id= with by= and method={p.method!r} counts every point of the domain in "
                                    f"every group: {len(gs)} groups x {p.enc.size:,} points exceeds "
                                    f"{BOUNDED_GROUP_CELLS:,}; use method='tree' or a smaller domain")
    return p if gs is None else replace(p, groups=gs)



def _tree_release(p: QuantilesPlan, tree: Any, qa: np.ndarray, level: float, src: Any, interval: str, grid: int,
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


def _em_offsets(p: QuantilesPlan, qa: np.ndarray, vals: Any, cnt: Any, src: Any) -> list[int]:
    """The exponential-mechanism methods on in-memory sorted distinct offsets and counts."""
    top = p.enc.size - 1
    if p.method == "approx":
        return approx_quantiles(vals, cnt, qa, lower=0, upper=top, rng=src, neighbors=p.neighbors,
                                epsilon_call=p.per_call)
    if p.method == "exponential":
        return [em_call(vals, cnt, float(q), 0, top, p.per_call, src, p.neighbors) for q in qa]
    joint = joint_module().joint_exponential
    assert p.size_n is not None
    jv, jc = _cap_records(np.asarray(vals), np.asarray(cnt, dtype=np.int64), int(p.size_n))
    return [int(v) for v in joint(jv, jc, qa, lower=0, upper=top, epsilon=p.epsilon / p.k, rng=src, dither=p.dither)]


def _em_release(p: QuantilesPlan, qa: np.ndarray, offs: list[int], level: float, src: Any,
                metadata: dict[str, Any]) -> QuantilesRelease:
    """The release of the exponential-mechanism methods' outputs, with their stated intervals."""
    values = [p.enc.value_at(o) for o in offs]
    radius = release_radii(p.method, qa, size=p.enc.size, epsilon=p.epsilon / p.k, neighbors=p.neighbors,
                           level=level, dither=p.dither)
    r = np.full(qa.size, np.inf) if radius is None else np.asarray(radius)
    at_least = p.n_min if p.upper_bound or p.size_n is None else p.size_n  # a public lower bound on n, if any
    ci_low, ci_high = value_intervals(qa, values, r, at_least, p.lo, p.hi)
    return QuantilesRelease(qa, values, ci_low, ci_high, float(level), p.method, p.epsilon, p.size_n, p.lo, p.hi,
                            {**p.member_statement, "private": bool(src.private)}, neighbors=p.neighbors,
                            width=p.width, rank_radius=radius, n_is_upper_bound=p.upper_bound, metadata=metadata,
                            max_contributions=p.k, n_min=p.n_min)


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
        releases = {g: _tree_release(p, trees[g], qa, level, src, p.interval, p.grid, metadata) for g in gs}
    else:
        if user_id is not None:  # at most k records per person, across the groups
            parts = _bounded_points(data, p, column, user_id, on_invalid, src, by=by, groups=gs, unknown=unknown)
        else:
            _, parts = prepare_groups(data, p.lower, p.upper, by=by, groups=gs, unknown=unknown, on_invalid=on_invalid,
                                      column=column, width=p.input_width)
        releases = {g: _em_release(p, qa, _em_offsets(p, qa, vals, cnt, src), level, src, metadata)
                    for g, (vals, cnt) in zip(gs, parts)}
    return grouped_quantiles(gs, releases, {**p.member_statement, "private": bool(src.private)}, metadata)


def _cap_records(vals: np.ndarray, cnt: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """At most ``size`` records: drop ceil(k/2) smallest and floor(k/2) largest, k = n - size.

    Part of the joint mechanism (no output, no error depends on whether it cut): capping maps
    add/remove-one neighbors to identical, add/remove-one or replace-one pairs, and JointExp's
    utility has sensitivity 2 under both relations (:mod:`dptree.quantiles.joint`), so the cap
    keeps the stated guarantee while the tables stay within the declared size."""
    k = int(cnt.sum()) - size
    if k <= 0:
        return vals, cnt
    c = cnt.copy()
    for drop, order in (((k + 1) // 2, slice(None)), (k // 2, slice(None, None, -1))):
        view = c[order]
        before = np.cumsum(view) - view  # records strictly before each value, in this direction
        view -= np.clip(drop - before, 0, view)
    keep = c > 0
    return vals[keep], c[keep]
