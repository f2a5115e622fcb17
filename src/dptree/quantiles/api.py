"""``dptree.quantiles``: m private quantiles with intervals, by the method with the smallest predicted
error or the one named (issue 12). Methods, algorithms and proofs: docs/quantiles.md."""

from __future__ import annotations

from numbers import Integral
from typing import Any, Literal

import numpy as np

from dptree._validation import Interval, Options, validate_params
from dptree.data.histograms import COLUMN, RNG, is_file
from dptree.errors import InvalidParameterError
from dptree.estimation.intervals import LEVEL
from dptree.interior.calibration import DECLARED_SIZE, EPSILON, ON_INVALID, declared_size
from dptree.interior.encoding import encoding, prepare
from dptree.io.release_file import creation_metadata
from dptree.noise import RngLike, make_source
from dptree.privacy.budget import check_release_budget
from dptree.quantiles.approx import approx_quantiles, em_call, layer_epsilon
from dptree.quantiles.auto import TREE_BRANCHING, TREE_LEVELS, choose_method
from dptree.quantiles.intervals import release_radii, value_intervals
from dptree.quantiles.release import INTERVALS, METHODS, NEIGHBORS, QuantilesRelease, joint_module, statement
from dptree.quantiles.staged import staged_quantiles
from dptree.rangetree.quantile_calibration import calibration_sims, released_intervals
from dptree.rangetree.results import quantile_levels

__all__ = ["quantiles"]

#: at most this many levels (the exponential-mechanism methods loop over them in Python)
MAX_LEVELS = 100_000


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
                  "n_max": DECLARED_SIZE, "column": COLUMN, "rng": RNG, "on_invalid": ON_INVALID,
                  "neighbors": NEIGHBORS, "interval": [Options(INTERVALS)],
                  "grid": [Interval(Integral, 2, None, hint="e.g. grid=4096")]})
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
    column: str | None = None,
    width: Any = None,
    neighbors: Literal["add_remove", "replace"] = "add_remove",
    grid: int = 4096,
    interval: Literal["calibrated", "pivot"] = "calibrated",
    rng: RngLike = None,
    on_invalid: Literal["error", "drop"] = "error",
) -> QuantilesRelease:
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
    Dates: ``lower``/``upper`` as dates, datetimes or ISO text make a date domain, ``width`` (a
    timedelta, default one day) its resolution for every method (the tree's bucket width; the
    exponential-mechanism methods' points: whole units from ``lower``); estimates and interval ends
    are ``numpy.datetime64``.
    ``interval`` (tree only): ``"calibrated"`` (default) the pivot interval with its multiplier
    and its high-end rule chosen per level by simulating the release's public noise on its own isotonic CDF
    (post-processing, no budget; 199 simulations up to 2^16 buckets, fewer above, the pivot
    interval past 2^20; :mod:`dptree.rangetree.quantile_calibration`), ``"pivot"`` the uncalibrated pivot
    interval (over-covers, 0.97-0.99 at 95%). ``rng``: tests only (a seeded release is not private).
    """
    eps = check_release_budget(epsilon)
    qa = _levels(qs)
    size_n, upper_bound = declared_size(n, n_max)
    enc = encoding(lower, upper, width)
    lo, hi = enc.bounds
    dates = enc.kind == "datetime"
    width = enc.width if dates else width  # a date domain's resolution serves every method
    if method == "auto":
        method = choose_method(qa.size, lower=lo, upper=hi, epsilon=eps, width=width, neighbors=neighbors,
                               n=n if n is not None else n_max)
        width = width if method == "tree" or dates else None  # the tree's bucket width, used when auto picks it
    if method == "joint" and neighbors == "replace":
        raise InvalidParameterError("method='joint' is stated for add/remove-one neighbors; use neighbors='add_remove'")
    if method == "joint":
        _check_joint_size(qa.size, size_n)
    if width is not None and method != "tree" and not dates:
        raise InvalidParameterError("width= is the tree's bucket width; the other methods use every point of the "
                                    "domain")
    metadata = creation_metadata(column=column)  # the clock, read before the data
    src = make_source(rng)
    radius: list[float] | None = None
    used: str | None = None
    if method == "tree":
        from dptree.rangetree.api import range_tree

        tree = range_tree(data, lower=lo, upper=hi, epsilon=eps, width=width, levels=TREE_LEVELS,
                          branching=TREE_BRANCHING, neighbors=neighbors, column=column, missing=on_invalid, rng=src)
        values = [v if dates else v.item() if hasattr(v, "item") else v for v in np.atleast_1d(tree.quantile(qa))]
        sims = calibration_sims(tree.layout.padded_size) if interval == "calibrated" else 0
        low, high = released_intervals(tree, qa, level, source=src, sims=sims, grid=grid)
        used = "calibrated" if sims else "pivot"
        ci_low, ci_high = ([v if dates else v.item() for v in c] for c in (low, high))
        if enc.kind == "float":
            values, ci_low, ci_high = ([float(v) for v in c] for c in (values, ci_low, ci_high))
    else:
        k = joint_module().dither_factor(size_n, enc.size) if method == "joint" else 1  # public: declared n, |X|
        top = enc.size - 1
        per_call = layer_epsilon(eps, qa.size, neighbors) if method == "approx" else eps / qa.size
        # files and relations: every call staged on engine queries, the same law and draws
        staged = None if method == "joint" else staged_quantiles(data, column, enc, on_invalid, qa, method=method,
                                                                  epsilon_call=per_call, rng=src, neighbors=neighbors)
        if staged is not None:
            offs = staged
        elif method == "approx":
            _, vals, cnt = _em_data(data, column, lower, upper, on_invalid, width)
            offs = approx_quantiles(vals, cnt, qa, lower=0, upper=top, rng=src, neighbors=neighbors,
                                    epsilon_call=per_call)
        elif method == "exponential":
            _, vals, cnt = _em_data(data, column, lower, upper, on_invalid, width)
            offs = [em_call(vals, cnt, float(q), 0, top, per_call, src, neighbors) for q in qa]
        else:
            _, vals, cnt = _em_data(data, column, lower, upper, on_invalid, width)
            joint = joint_module().joint_exponential
            jv, jc = _cap_records(np.asarray(vals), np.asarray(cnt, dtype=np.int64), int(size_n))  # type: ignore[arg-type]
            offs = [int(v) for v in joint(jv, jc, qa, lower=0, upper=top, epsilon=eps, rng=src, dither=k)]
        values = [enc.decode(o) for o in offs]
        radius = release_radii(method, qa, size=enc.size, epsilon=eps, neighbors=neighbors, level=level, dither=k)
        r = np.full(qa.size, np.inf) if radius is None else np.asarray(radius)
        ci_low, ci_high = value_intervals(qa, values, r, None if upper_bound else size_n, lo, hi)
    return QuantilesRelease(qa, values, ci_low, ci_high, float(level), method, eps, size_n, lo, hi,
                            statement(method, eps, qa.size, neighbors, src.private, lower=lo, upper=hi, width=width,
                                      n=size_n),
                            neighbors=neighbors, width=width, rank_radius=radius, n_is_upper_bound=upper_bound,
                            metadata=metadata, interval=used)


def _check_joint_size(m: int, size_n: int | None) -> None:
    """JointExp's O(m n) tables are sized from a **declared** size, never from the data."""
    limit = joint_module().JOINT_MAX_CELLS
    if size_n is None:
        raise InvalidParameterError("method='joint' needs a public size: declare n= or n_max= (its O(m n) tables are "
                                    "sized from it, never from the data), or use method='approx'")
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
