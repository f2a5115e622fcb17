"""``dptree.quantiles``: m private quantiles with intervals, by the method with the smallest predicted
error or the one named. Methods, algorithms and proofs: docs/quantiles.md."""

from __future__ import annotations

from numbers import Integral
from typing import Any, Literal, NamedTuple

import numpy as np

from dptree._validation import Interval, Options, validate_params
from dptree.data.groups import check_groups
from dptree.data.histograms import COLUMN, RNG, UNKNOWN, is_file
from dptree.errors import InvalidParameterError
from dptree.estimation.intervals import LEVEL
from dptree.interior.calibration import DECLARED_SIZE, EPSILON, ON_INVALID, declared_size
from dptree.interior.encoding import encoding, prepare, prepare_groups
from dptree.io.release_file import creation_metadata
from dptree.noise import RngLike, make_source
from dptree.privacy.budget import BUDGET_RANGE, check_release_budget
from dptree.quantiles.approx import approx_quantiles, em_call, layer_epsilon
from dptree.quantiles.auto import TREE_BRANCHING, TREE_LEVELS, choose_method
from dptree.quantiles.groups import GroupedQuantiles, grouped_quantiles
from dptree.quantiles.intervals import release_radii, value_intervals
from dptree.quantiles.release import INTERVALS, METHODS, NEIGHBORS, QuantilesRelease, joint_module, statement
from dptree.quantiles.staged import staged_quantiles
from dptree.rangetree.quantile_calibration import calibration_sims, released_intervals
from dptree.rangetree.results import quantile_levels

__all__ = ["quantiles"]

Relation = Literal["add_remove", "replace"]

#: at most this many levels (the exponential-mechanism methods loop over them in Python)
MAX_LEVELS = 100_000
#: at most this many levels get the tree's calibrated intervals (a bootstrap per level, about a
#: millisecond each: 10^4 levels take about 12 s, 10^5 two minutes); interval="pivot" takes any m
CALIBRATED_MAX_LEVELS = 10_000
#: the default read-off grid of the tree's intervals (``grid=``; the tree's own default)
TREE_GRID = 4096


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


@validate_params({"epsilon": EPSILON, "method": [Options(METHODS)], "level": LEVEL, "n": DECLARED_SIZE,
                  "n_max": DECLARED_SIZE, "n_min": DECLARED_SIZE, "column": COLUMN, "rng": RNG, "on_invalid": ON_INVALID,
                  "neighbors": NEIGHBORS, "interval": [Options(INTERVALS)],
                  "grid": [Interval(Integral, 2, None, hint=f"e.g. grid={TREE_GRID}")], "unknown": UNKNOWN,
                  "max_contributions": [Interval(Integral, 1, None, hint="e.g. max_contributions=5")]})
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
    max_contributions: int = 1,
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
    :class:`~dptree.quantiles.groups.GroupedQuantiles` (docs/quantiles.md, "By group").
    ``user_id``/``max_contributions`` = k: the privacy unit is one person with at most k records
    (``user_id``: a column, or an array beside in-memory values; each person's records beyond k are
    dropped at random in the engine); every exponential-mechanism call runs at 1/k of its share
    (group privacy), the tree at ``max_contributions=k``. Add/remove-one person only; with
    ``user_id``, ``n`` is refused (declare ``n_max``) and the mechanism methods need an integer
    domain of at most 2^24 points (docs/quantiles.md, "Per person"). With ``by`` too, a person's
    records are bounded across all groups (k in all) and each group's release runs at 1/k per
    record, so the set is epsilon-DP per person; the mechanism methods then hold groups x points
    <= 2^25 counts.

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
    eps = check_release_budget(epsilon)
    qa = _levels(qs)
    if by is not None or groups is not None:
        return _by_group(data, qa, by=by, groups=groups, unknown=unknown, lower=lower, upper=upper, epsilon=eps,
                         method=method, level=level, n=n, n_max=n_max, n_min=n_min, column=column, width=width,
                         neighbors=neighbors, grid=grid, interval=interval, rng=rng, on_invalid=on_invalid,
                         user_id=user_id, max_contributions=max_contributions)
    p = _plan(qa, lower, upper, eps, method, width, neighbors, n, n_max, max_contributions, user_id, n_min)
    _check_interval(p, qa, interval, method, grid)
    metadata = creation_metadata(column=column)  # the clock, read before the data
    src = make_source(rng)  # one stream: the bounding per user, then the mechanisms
    if p.method == "tree":
        from dptree.rangetree.api import range_tree

        tree = range_tree(data, lower=p.lo, upper=p.hi, epsilon=eps, width=p.width, levels=TREE_LEVELS,
                          branching=TREE_BRANCHING, neighbors=neighbors, column=column, on_invalid=on_invalid, rng=src,
                          user_id=user_id, max_contributions=p.k)
        return _tree_release(p, tree, qa, level, src, interval, grid, metadata)
    if user_id is not None:
        ((vals, cnt),) = _bounded_points(data, p, column, user_id, on_invalid, src)
        return _em_release(p, qa, _em_offsets(p, qa, vals, cnt, src), level, src, metadata)
    # files and relations: every call staged on engine queries, the same law and draws
    staged = None if p.method == "joint" else staged_quantiles(data, column, p.enc, on_invalid, qa, method=p.method,
                                                                epsilon_call=p.per_call, rng=src, neighbors=neighbors)
    if staged is None:
        _, vals, cnt = _em_data(data, column, lower, upper, on_invalid, width)
        staged = _em_offsets(p, qa, vals, cnt, src)
    return _em_release(p, qa, staged, level, src, metadata)


#: the largest domain the exponential-mechanism methods bound per user (one count per point)
BOUNDED_POINTS = 1 << 24
#: with by=: the most (groups x points) counts held at once (2^25 int64, at most 512 MiB padded)
BOUNDED_GROUP_CELLS = 1 << 25


def _bounded_points(data: Any, p: _Plan, column: str | None, user_id: Any, on_invalid: Literal["error", "drop"],
                    src: Any, *, by: Any = None, groups: list[Any] | None = None,
                    unknown: Literal["error", "drop"] = "error") -> list[tuple[np.ndarray, np.ndarray]]:
    """The records left after keeping at most k per user (chosen uniformly at random, in the engine:
    :func:`dptree.data.histograms.leaf_histogram` with ``user_id``, as for a range tree; with ``by``,
    across all groups), as sorted distinct offsets and counts: one count per point of the integer
    domain; one (offsets, counts) pair, or one per group of ``groups``."""
    from dptree.data.histograms import leaf_histogram
    from dptree.rangetree.plan import plan_range_tree

    points = plan_range_tree(lower=p.lo, upper=p.hi, epsilon=p.epsilon, width=1, branching=2,
                             max_contributions=p.k)  # its buckets are the domain's points
    hist = leaf_histogram(data, points, column=column, user_id=user_id, on_invalid=on_invalid, rng=src, by=by,
                          groups=groups, unknown=unknown)
    out = []
    for row in np.atleast_2d(hist)[:, :p.enc.size]:
        vals = np.flatnonzero(row)
        out.append((vals.astype(np.uint64), row[vals].astype(np.int64)))
    return out


class _Plan(NamedTuple):
    """The public choices of one release: method, domain, declared size, budget per call."""

    method: str
    enc: Any
    lo: Any
    hi: Any
    width: Any
    epsilon: float
    neighbors: Relation
    size_n: int | None
    upper_bound: bool
    dither: int
    per_call: float
    k: int
    n_min: int | None = None


def _plan(qa: np.ndarray, lower: Any, upper: Any, eps: float, method: str, width: Any, neighbors: Relation,
          n: int | None, n_max: int | None, k: int = 1, user_id: Any = None, n_min: int | None = None) -> _Plan:
    """The method (auto resolved from public quantities) and its public parameters; every refusal
    that depends on the parameters, before the data is read."""
    if (k != 1 or user_id is not None) and neighbors == "replace":
        raise InvalidParameterError("quantiles per person (user_id=, max_contributions=) are stated for add/remove "
                                    "neighbors; use neighbors='add_remove'")
    if user_id is not None and n is not None:
        raise InvalidParameterError("with user_id= the number of records kept (at most max_contributions per user) "
                                    "depends on the data, so it cannot be declared exactly: pass n_max= (a public "
                                    "upper bound) instead of n=")
    if k > 1 and not BUDGET_RANGE[0] <= eps / k:  # every mechanism runs at epsilon / k per record
        raise InvalidParameterError(f"epsilon={eps:g} / max_contributions={k} leaves {eps / k:g} per record, below "
                                    f"the supported {BUDGET_RANGE[0]:g}: lower max_contributions or raise epsilon")
    size_n, upper_bound = declared_size(n, n_max)
    if n_min is not None and n is not None:
        raise InvalidParameterError("n= is the exact size, which is also its lower bound: drop n_min=")
    if n_min is not None and n_max is not None and n_min > n_max:
        raise InvalidParameterError(f"n_min={n_min} exceeds n_max={n_max}: a lower bound cannot exceed the upper one")
    enc = encoding(lower, upper, width)
    lo, hi = enc.bounds
    dates = enc.kind == "datetime"
    width = enc.width if dates else width  # a date domain's resolution serves every method
    users_need_tree = user_id is not None and (enc.kind != "integer" or enc.size > BOUNDED_POINTS)
    if method == "auto" and users_need_tree:  # only the tree bounds users on this domain (public facts)
        method = "tree"
    elif method == "auto":
        method = choose_method(qa.size, lower=lo, upper=hi, epsilon=eps / k, width=width, neighbors=neighbors,
                               n=n if n is not None else n_max)
        width = width if method == "tree" or dates else None  # the tree's bucket width, used when auto picks it
    if method == "joint" and neighbors == "replace":
        raise InvalidParameterError("method='joint' is stated for add/remove-one neighbors; use neighbors='add_remove'")
    if method == "joint":
        _check_joint_size(qa.size, size_n)
        if enc.size >= 1 << 62:
            raise InvalidParameterError(f"method='joint' needs a domain of fewer than 2^62 points; this {enc.kind} "
                                        f"domain has {enc.size:.3g} (a float domain counts every float64 between its "
                                        "bounds): use method='approx' or 'tree', or integer bounds")
    if width is not None and method != "tree" and not dates:
        raise InvalidParameterError("width= is the tree's bucket width; the other methods use every point of the "
                                    "domain", parameter="width")
    if users_need_tree and method != "tree":
        raise InvalidParameterError(f"user_id= with method={method!r} needs an integer domain of at most 2^24 points "
                                    "(the records kept per user are counted per point); use method='tree' (on a float "
                                    "domain with a bucket width=), which bounds users on any domain")
    dither = joint_module().dither_factor(size_n, enc.size) if method == "joint" else 1  # public: declared n, |X|
    # one person's k records: every exponential-mechanism call at 1/k of its share (group privacy)
    per_call = (layer_epsilon(eps, qa.size, neighbors) if method == "approx" else eps / qa.size) / k
    return _Plan(method, enc, lo, hi, width, eps, neighbors, size_n, upper_bound, dither, per_call, int(k),
                 None if n_min is None else int(n_min))


def _statement(p: _Plan, m: int, private: bool) -> dict[str, Any]:
    return statement(p.method, p.epsilon, m, p.neighbors, private, lower=p.lo, upper=p.hi, width=p.width, n=p.size_n,
                     max_contributions=p.k)


def _tree_release(p: _Plan, tree: Any, qa: np.ndarray, level: float, src: Any, interval: str, grid: int,
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
                            _statement(p, qa.size, src.private), neighbors=p.neighbors, width=p.width,
                            n_is_upper_bound=p.upper_bound, metadata=metadata,
                            interval="calibrated" if sims else "pivot", max_contributions=p.k, n_min=p.n_min)


def _em_offsets(p: _Plan, qa: np.ndarray, vals: Any, cnt: Any, src: Any) -> list[int]:
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


def _em_release(p: _Plan, qa: np.ndarray, offs: list[int], level: float, src: Any,
                metadata: dict[str, Any]) -> QuantilesRelease:
    """The release of the exponential-mechanism methods' outputs, with their stated intervals."""
    values = [p.enc.decode(o) for o in offs]
    radius = release_radii(p.method, qa, size=p.enc.size, epsilon=p.epsilon / p.k, neighbors=p.neighbors,
                           level=level, dither=p.dither)
    r = np.full(qa.size, np.inf) if radius is None else np.asarray(radius)
    at_least = p.n_min if p.upper_bound or p.size_n is None else p.size_n  # a public lower bound on n, if any
    ci_low, ci_high = value_intervals(qa, values, r, at_least, p.lo, p.hi)
    return QuantilesRelease(qa, values, ci_low, ci_high, float(level), p.method, p.epsilon, p.size_n, p.lo, p.hi,
                            _statement(p, qa.size, src.private), neighbors=p.neighbors, width=p.width,
                            rank_radius=radius, n_is_upper_bound=p.upper_bound, metadata=metadata,
                            max_contributions=p.k, n_min=p.n_min)


def _by_group(data: Any, qa: np.ndarray, *, by: Any, groups: Any, unknown: Literal["error", "drop"], lower: Any,
              upper: Any, epsilon: float, method: str, level: float, n: int | None, n_max: int | None, n_min: int | None,
              column: str | None, width: Any, neighbors: Relation, grid: int, interval: str, rng: RngLike,
              on_invalid: Literal["error", "drop"], user_id: Any, max_contributions: int) -> GroupedQuantiles:
    """One quantiles release per public group (module :mod:`dptree.quantiles.groups`). With
    ``user_id``: at most k records per person are kept across all groups, then each group's
    release runs at 1/k of its share per record, so a person's k_1 + k_2 + ... <= k records cost at
    most epsilon in all (group privacy within a group, parallel composition across them)."""
    if by is None or groups is None:
        raise InvalidParameterError("by and groups go together: by= names the column (or gives each record's group), "
                                    "groups= lists the public groups")
    if neighbors == "replace":
        raise InvalidParameterError("group-by releases use add/remove neighbors: under 'replace' a record could move "
                                    "between groups and change two releases; use neighbors='add_remove'")
    gs = check_groups(groups)
    # n, n_max: each group's size
    p = _plan(qa, lower, upper, epsilon, method, width, neighbors, n, n_max, max_contributions, user_id, n_min)
    _check_interval(p, qa, interval, method, grid)
    if user_id is not None and p.method != "tree" and len(gs) * p.enc.size > BOUNDED_GROUP_CELLS:
        raise InvalidParameterError(f"user_id= with by= and method={p.method!r} counts every point of the domain in "
                                    f"every group: {len(gs)} groups x {p.enc.size:,} points exceeds "
                                    f"{BOUNDED_GROUP_CELLS:,}; use method='tree' or a smaller domain")
    metadata = creation_metadata(column=column)  # the clock, read before the data
    src = make_source(rng)  # one stream for all groups
    if p.method == "tree":
        from dptree.rangetree.api import range_tree

        trees = range_tree(data, by=by, groups=gs, unknown=unknown, lower=p.lo, upper=p.hi, epsilon=epsilon,
                           width=p.width, levels=TREE_LEVELS, branching=TREE_BRANCHING, neighbors=neighbors,
                           column=column, on_invalid=on_invalid, rng=src, user_id=user_id, max_contributions=p.k)
        releases = {g: _tree_release(p, trees[g], qa, level, src, interval, grid, metadata) for g in gs}
    else:
        if user_id is not None:  # at most k records per person, across the groups
            parts = _bounded_points(data, p, column, user_id, on_invalid, src, by=by, groups=gs, unknown=unknown)
        else:
            _, parts = prepare_groups(data, lower, upper, by=by, groups=gs, unknown=unknown, on_invalid=on_invalid,
                                      column=column, width=width)
        releases = {g: _em_release(p, qa, _em_offsets(p, qa, vals, cnt, src), level, src, metadata)
                    for g, (vals, cnt) in zip(gs, parts)}
    return grouped_quantiles(gs, releases, _statement(p, qa.size, src.private), metadata)


def _check_joint_size(m: int, size_n: int | None) -> None:
    """JointExp's O(m n) tables are sized from a **declared** size, never from the data."""
    limit = joint_module().JOINT_MAX_CELLS
    if size_n is None:
        raise InvalidParameterError("method='joint' needs a public size: declare n= or n_max= (its O(m n) tables are "
                                    "sized from it, never from the data), or use method='approx'", parameter="method")
    if size_n > 2**40 or m * (size_n + 1) > limit:
        raise InvalidParameterError(f"method='joint' with {m} levels and a declared size of {size_n:,} exceeds its "
                                    f"limit of {limit:,} cells (levels x (size + 1)); use method='approx' or 'tree'")


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
