"""``range_tree``: the one entry point from user data to a range-tree release (seeds 000, 003, 004).

The walk goes downward: plan (public parameters) -> data (leaf histogram through an engine) ->
the plan's measurement and estimation -> :class:`~dptree.rangetree.release.RangeTree`.
"""

from __future__ import annotations

import os
from typing import Any

from dptree import noise as _noise
from dptree.data.histograms import leaf_histogram
from dptree.io import release_file as _serialize
from dptree.rangetree.release import RangeTree, plan_range_tree

__all__ = ["range_tree"]


def range_tree(
    values: Any,
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
    missing: str = "error",
    column: str | None = None,
    user_id: Any = None,
    rng: _noise.RngLike = None,
) -> RangeTree:
    """Release a private b-ary range tree of ``values`` over the public domain [lower, upper].

    Returns a :class:`RangeTree` that answers every range count, CDF value, histogram and quantile
    with exact standard errors, as post-processing (no further privacy cost).

    Privacy: ``noise="laplace"`` gives pure ``epsilon``-DP; ``noise="gaussian"`` gives ``rho``-zCDP,
    or (``epsilon``, ``delta``)-DP when given those, under the ``neighbors`` relation
    (``"add_remove"`` one record, or ``"replace"`` one record with n public), for persons with at
    most ``max_contributions`` records (bounding them is the caller's job here). Values outside
    [lower, upper] are clamped. NaN/None raise unless ``missing="drop"``. ``rng`` is for tests
    only: a seeded release is marked ``private: false``.

    ``values``: an array-like, a table (pandas, polars, Arrow, DuckDB) with ``column``, a
    CSV/Parquet path with ``column`` (read by DuckDB), or a Spark DataFrame with ``column``.
    ``user_id`` (a column name or an array): keep at most ``max_contributions`` records per user,
    chosen uniformly at random before the histogram (:mod:`dptree.data.bounding`).

    ``levels="uniform"`` splits the budget equally over the noised levels (seed 004, Algorithm 1);
    ``"optimal"`` minimises the exact average variance over all ranges. ``branching=None`` picks,
    among 2, 4, ..., 64, the factor with the lowest average range variance (data-independent).
    """
    plan = plan_range_tree(
        lower=lower,
        upper=upper,
        epsilon=epsilon,
        delta=delta,
        rho=rho,
        width=width,
        branching=branching,
        noise=noise,
        neighbors=neighbors,
        max_contributions=max_contributions,
        levels=levels,
    )
    plan.check_public_total(user_id=user_id, missing=missing)
    src = _noise.make_source(rng)  # one source for bounding and noise
    created = _serialize._utc_now()  # before the data is read: no timing of the reading
    hist = leaf_histogram(values, plan, column=column, user_id=user_id, missing=missing, rng=src)
    return plan.release(hist, src, column=column, source=values if isinstance(values, (str, os.PathLike)) else None,
                        created=created)
