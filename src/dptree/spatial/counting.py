"""The exact cell counts of a 2-D range tree, in Morton order: the one data step of a release.

One :meth:`~dptree.data.engines.base.Engine.counts` call with two
:class:`~dptree.data.engines.base.Bucket` keys (the x and y buckets of the public grid, clamped as
in the 1-D tree) on the engine :func:`dptree.data.histograms.engine_for` picks: numpy for
in-memory data, DuckDB for files and relations, Spark for Spark DataFrames. Not private: the
histogram goes to :meth:`dptree.spatial.release.RangeTree2DPlan.release`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from dptree.data.engines.base import Bucket
from dptree.data.histograms import engine_for
from dptree.errors import InvalidParameterError
from dptree.spatial.grid import morton
from dptree.spatial.plan import QuadtreePlan

if TYPE_CHECKING:
    from dptree.spatial.privtree import PrivTree2DPlan

__all__ = ["grid_histogram", "as_table"]


def as_table(x: Any, y: Any, columns: Sequence[str] | None) -> tuple[Any, tuple[str, str]]:
    """(table, (x column, y column)) from ``x`` = a table with ``columns`` = (x name, y name) and
    ``y`` None, or from two arrays ``x`` and ``y`` (put side by side in a pandas DataFrame)."""
    if y is None:
        if columns is None or isinstance(columns, str) or len(columns) != 2:
            raise InvalidParameterError("pass two arrays x, y, or a table with columns=('x name', 'y name')",
                                        parameter="columns")
        return x, (str(columns[0]), str(columns[1]))
    if columns is not None:
        raise InvalidParameterError("columns= names the columns of one table; with two arrays x, y leave it out",
                                    parameter="columns")
    import pandas as pd

    from dptree.data.inputs import to_numpy

    vx, vy = to_numpy(x, name="x"), to_numpy(y, name="y")
    if vx.size != vy.size:
        raise InvalidParameterError("x and y must have one entry per record (the same length)", parameter="y")
    return pd.DataFrame({"x": vx, "y": vy}, copy=False), ("x", "y")


def grid_histogram(table: Any, plan: QuadtreePlan | PrivTree2DPlan, columns: tuple[str, str], *,
                   on_invalid: str = "error", fmt: str | None = None) -> np.ndarray:
    """The exact count of every cell of ``plan``'s padded grid in Morton order (length 4^L): the
    records of ``table`` by (bucket of ``columns[0]``, bucket of ``columns[1]``). Not private."""
    plan.check_public_total(on_invalid=on_invalid)
    g = plan.grid
    counted = engine_for(table, fmt=fmt).counts(table, [Bucket(columns[0], g.x), Bucket(columns[1], g.y)],
                                               on_invalid=on_invalid)  # type: ignore[arg-type]
    hist = np.zeros(g.cells, np.int64)
    i, j = counted.keys
    hist[morton(i, j)] = counted.n  # every cell once
    return hist
