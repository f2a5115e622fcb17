"""``range_tree_2d``: one private release that answers every rectangle count of a public 2-D grid.

Plan (public parameters; :mod:`dptree.spatial.plan`) -> the cell counts in Morton order
(:mod:`dptree.spatial.counting`: numpy, DuckDB or Spark) -> noise and least squares
(:class:`~dptree.spatial.release.RangeTree2DPlan`) -> a :class:`~dptree.spatial.release.RangeTree2D`.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

from dptree import noise as _noise
from dptree._validation import Options, validate_params
from dptree.data.histograms import FORMAT, RNG
from dptree.errors import InvalidParameterError
from dptree.io import release_file as _release_file
from dptree.privacy.budget import Budget
from dptree.privacy.unit import PrivacyUnit, privacy_values
from dptree.rangetree.allocation import GRID_WORKLOAD
from dptree.spatial.counting import as_table, grid_histogram
from dptree.spatial.privtree import PrivTree2D, PrivTree2DPlan, plan_privtree_2d
from dptree.spatial.release import RangeTree2D, RangeTree2DPlan, plan_range_tree_2d

__all__ = ["range_tree_2d", "METHODS"]

#: ``method=``: the data-independent quadtree (default) or the data-dependent 2-D PrivTree
METHODS = ("quadtree", "privtree")


def _check_privtree_options(*, delta: float, rho: float | None, noise: str, neighbors: str, levels: str,
                            gaussian_calibration: str) -> None:
    """Refuse the quadtree's options that method='privtree' does not take (they would go unused)."""
    used = [name for name, on in (("delta", delta != 0.0), ("rho", rho is not None), ("noise", noise != "laplace"),
                                  ("neighbors", neighbors != "add_remove"), ("levels", levels != GRID_WORKLOAD),
                                  ("gaussian_calibration", gaussian_calibration != "exact")) if on]
    if used:
        raise InvalidParameterError(f"method='privtree' is pure epsilon-DP with Laplace noise under add/remove of one "
                                    f"person and no per-level split: drop {', '.join(used)}", parameter=used[0])


@privacy_values
@validate_params({"on_invalid": [Options(("error", "drop"))], "rng": RNG, "fmt": FORMAT,
                  "method": [Options(METHODS)]})
def range_tree_2d(
    x: Any,
    y: Any = None,
    *,
    lower: Any,
    upper: Any,
    epsilon: float | None = None,
    delta: float = 0.0,
    rho: float | None = None,
    width: Any = None,
    columns: Sequence[str] | None = None,
    noise: str = "laplace",
    neighbors: str = "add_remove",
    max_contributions: int = 1,
    levels: str = GRID_WORKLOAD,
    gaussian_calibration: str = "exact",
    method: str = "quadtree",
    structure_share: float | str = "auto",
    threshold: int | None = None,
    on_invalid: str = "error",
    fmt: str | None = None,
    rng: _noise.RngLike = None,
    unit: PrivacyUnit | None = None,
    budget: Budget | None = None,
) -> RangeTree2D | PrivTree2D:
    """A private 2-D range tree (quadtree) of the points (x, y) over the public grid from ``lower`` =
    (x0, y0) to ``upper`` = (x1, y1) with buckets of ``width`` (one width, or a pair).

    ``x`` and ``y``: two arrays of coordinates; or ``x`` a table (pandas, polars, Arrow, a DuckDB
    relation, a CSV/Parquet path read by DuckDB, a Spark DataFrame) and ``columns`` = (x name,
    y name). Privacy: add/remove one record (one person with at most ``max_contributions``
    records) changes one cell and so one node per level by at most k; each level is noised for
    its share of the budget and the levels compose (:mod:`dptree.spatial.plan`). ``levels``: the
    budget split, ``"all_rectangles"`` (default), ``"geometric"`` (Cormode et al. 2012) or
    ``"uniform"``. Points outside the grid are clamped into its border cells; ``on_invalid``:
    refuse (default) or drop records with a missing or infinite coordinate.

    ``method="privtree"``: a data-dependent quadtree for skewed data (2-D PrivTree, Zhang, Xiao &
    Xie 2016; :mod:`dptree.spatial.privtree`): a share of epsilon grows the shape by PrivTree's
    biased-count splits at fan-out 4, whose cost does not grow with its depth, the rest counts the
    shape's nodes; least squares on the irregular tree, a leaf's records spread uniformly over its
    cells. ``structure_share`` and ``threshold`` as :func:`dptree.sparse_range_tree`'s; pure
    epsilon, Laplace noise, add/remove neighbours only. ``rng`` seeds the
    noise for tests only (the release is then marked not private).

    Example (``rng=7`` only makes the output reproducible; leave it out in real use)::

        >>> import numpy as np, dptree
        >>> pts = np.random.default_rng(0).uniform(0, 64, size=(10_000, 2))
        >>> rel = dptree.range_tree_2d(pts[:, 0], pts[:, 1], lower=(0.0, 0.0), upper=(64.0, 64.0), width=1.0,
        ...                            epsilon=1.0, rng=7)
        >>> quarter = ((0.0, 31.99), (0.0, 31.99))  # the lower-left quarter: 2422 points
        >>> round(rel.count(*quarter)), round(rel.stderr(*quarter), 1)
        (2410, 20.3)
        >>> [round(v) for v in rel.ci(*quarter)]  # 95%
        [2370, 2451]
    """
    plan: RangeTree2DPlan | PrivTree2DPlan
    if method == "privtree":
        _check_privtree_options(delta=delta, rho=rho, noise=noise, neighbors=neighbors, levels=levels,
                                gaussian_calibration=gaussian_calibration)
        plan = plan_privtree_2d(lower=lower, upper=upper, epsilon=epsilon, width=width,  # type: ignore[arg-type]
                                max_contributions=max_contributions, structure_share=structure_share,
                                threshold=threshold)
    else:
        if structure_share != "auto" or threshold is not None:
            raise InvalidParameterError("structure_share= and threshold= are method='privtree' options",
                                        parameter="method")
        plan = plan_range_tree_2d(lower=lower, upper=upper, epsilon=epsilon, delta=delta, rho=rho, width=width,
                                  noise=noise, neighbors=neighbors, max_contributions=max_contributions,
                                  levels=levels, gaussian_calibration=gaussian_calibration)
    table, names = as_table(x, y, columns)
    plan.check_public_total(on_invalid=on_invalid)
    src = _noise.make_source(rng)
    created = _release_file.utc_now()  # before the data is read: no timing of the reading
    hist = grid_histogram(table, plan, names, on_invalid=on_invalid, fmt=fmt)
    source = x if isinstance(x, (str, os.PathLike)) else None
    return plan.release(hist, src, columns=names if columns is not None else None, source=source, created=created)
