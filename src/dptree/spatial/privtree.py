"""2-D PrivTree: a data-dependent quadtree for skewed spatial data (``range_tree_2d(method="privtree")``).

The mechanism is the sparse range tree's PrivTree (:mod:`dptree.sparsetree.mechanism`; Zhang,
Xiao & Xie, SIGMOD 2016, Algorithm 2 and Theorem 3.1) run with fan-out 4 on the Morton codes of
the public grid's cells (:mod:`dptree.spatial.grid`): a node of the 4-ary tree over the 4^L
Morton codes is a square of the grid, so the shape PrivTree grows is a quadtree that splits a
square while its biased noisy count exceeds the threshold. Privacy (add/remove one person with at
most k records; a record is one Morton code, points outside the grid clamped into its border
cells): the shape is eps_1-DP with eps_1 = k (2b - 1) / ((b - 1) lambda_1) = 7k / (3 lambda_1)
for b = 4, whatever its depth; the ranges of its count tree are counted with discrete Laplace
noise at k H / eps_2 on each of its H depths; with ``structure_share="auto"`` a noisy total at 1%
of epsilon picks the shape's share first; sequential composition (:mod:`dptree.sparsetree.plan`).
Estimates: least squares on the irregular count tree, a leaf's records spread uniformly over its
cells (:mod:`dptree.spatial.shape_estimates` states the bias this can add and how the intervals
cover it).
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral
from typing import Any, ClassVar, Mapping

import numpy as np

from dptree._validation import Interval, validate_params
from dptree.data.domain import key_domain
from dptree.errors import DPTreeError, InvalidParameterError, ReleaseFileError
from dptree.estimation.intervals import LEVEL
from dptree.io.contract import CountRelease
from dptree.io.frames import result_frame
from dptree.io.release_file import check_metadata, creation_metadata
from dptree.noise import RngLike, make_source
from dptree.privacy.boundary import Boundary
from dptree.privacy.budget import Budget
from dptree.privacy.loss import PrivacyLoss
from dptree.privacy.statement import check_statement
from dptree.sparsetree.document import checked_measurement, sparse_document
from dptree.sparsetree.estimates import MeasuredTree
from dptree.sparsetree.mechanism import Measurement
from dptree.sparsetree.plan import SparsePlan, plan_sparse_tree
from dptree.spatial.grid import Grid, make_grid
from dptree.spatial.shape_estimates import ShapeEstimates

__all__ = ["PrivTree2D", "PrivTree2DPlan", "plan_privtree_2d", "CellCounts"]

KIND = "range_tree_2d_privtree"


class CellCounts:
    """The records' Morton codes as PrivTree reads them (:class:`dptree.sparsetree.counting.KeyCounts`),
    from the exact Morton-ordered cell histogram: a node or range is two lookups in its prefix sums."""

    def __init__(self, hist: np.ndarray) -> None:
        self.cum = np.concatenate([[0], np.cumsum(np.asarray(hist, dtype=np.int64))])
        self.size = int(self.cum[-1])

    def nodes(self, index: np.ndarray, shift: int) -> np.ndarray:
        start = index.astype(np.int64) << shift
        return self.cum[start + (1 << shift)] - self.cum[start]

    def ranges(self, start: np.ndarray, last: np.ndarray) -> np.ndarray:
        return self.cum[last.astype(np.int64) + 1] - self.cum[start.astype(np.int64)]


def _axis(dom: Any) -> dict[str, Any]:
    return {"kind": dom.kind, "lower": dom.lower, "upper": dom.upper, "width": dom.width, "size": dom.size}


@dataclass(frozen=True, eq=False)
class PrivTree2DPlan:
    """The public part of a 2-D PrivTree release: the grid and the sparse tree's PrivTree plan over
    its 4^L Morton codes (4-ary). :meth:`release` is the one private step."""

    grid: Grid
    tree: SparsePlan
    structure_share: float | str
    threshold: int | None

    @property
    def budget(self) -> Budget:
        """The pure epsilon the release is charged (the ledger's :meth:`charge_for`)."""
        return Budget.pure(self.tree.epsilon)

    @property
    def max_contributions(self) -> int:
        return self.tree.max_contributions

    @property
    def statement(self) -> dict[str, Any]:
        """The sparse tree's PrivTree statement, its mechanism named for the grid."""
        s = dict(self.tree.statement)
        s["mechanism"] = (f"2-D PrivTree: a quadtree over a {self.grid.side}x{self.grid.side} grid in Morton order, "
                          f"grown by PrivTree's biased-count splits (Zhang, Xiao, Xie 2016, Thm 3.1) at fan-out 4; "
                          f"{s['mechanism'].split('; ', 1)[1]}")
        return s

    def privacy_loss(self) -> PrivacyLoss:
        """The noisy measurements (:meth:`dptree.sparsetree.plan.SparsePlan.privacy_loss`)."""
        return self.tree.privacy_loss()

    def check_public_total(self, *, on_invalid: str = "error") -> None:
        """Nothing to check: add/remove neighbours, the number of records is not public."""

    def release(self, cell_counts: np.ndarray, rng: RngLike = None, *, columns: Any = None, source: Any = None,
                created: str | None = None) -> PrivTree2D:
        """Run PrivTree on the Morton-ordered cell histogram (:func:`~dptree.spatial.counting.grid_histogram`)."""
        src = make_source(rng)
        measurement = self.tree.measure(CellCounts(cell_counts), src)
        tree = self.tree if measurement.totals is None else self.tree.resolved(int(measurement.totals[0]))
        stated = dict(self.statement)
        stated["private"] = bool(src.private)
        return PrivTree2D(self, tree, measurement, stated, creation_metadata(column=columns, source=source,
                                                                             created=created))


@validate_params({
    "threshold": [None, Interval(Integral, -(2**53), 2**53, hint="an integer count, e.g. threshold=0")],
    "max_contributions": [Interval(Integral, 1, None, hint="records one person may contribute, e.g. 1")],
})
def plan_privtree_2d(*, lower: Any, upper: Any, epsilon: float, width: Any = None, max_contributions: int = 1,
                     structure_share: float | str = "auto", threshold: int | None = None) -> PrivTree2DPlan:
    """Validate the public parameters of a 2-D PrivTree and calibrate its noise (no data involved):
    the grid as :func:`dptree.plan_range_tree_2d`; ``structure_share``, ``threshold`` (theta,
    default 0) as :func:`dptree.plan_sparse_range_tree`'s PrivTree."""
    if epsilon is None:
        raise InvalidParameterError("method='privtree' is pure epsilon-DP: give epsilon=", parameter="epsilon")
    grid = make_grid(lower, upper, width)
    dom = key_domain(0, grid.cells - 1, "i")
    tree = plan_sparse_tree(dom, epsilon=epsilon, branching=4, max_contributions=max_contributions,
                            threshold=threshold, method="privtree", structure_share=structure_share)
    assert tree.layout.depth == grid.depth
    return PrivTree2DPlan(grid, tree, structure_share, threshold)


class PrivTree2D(CountRelease):
    """A private 2-D PrivTree release (:mod:`dptree.spatial.privtree`); every query is post-processing.

    Counts are of records per cell (bucket resolution on each axis); inside a leaf of the released
    shape the records are taken as spread uniformly over its cells (the intervals cover the bias
    this can add where a rectangle cuts a leaf, :mod:`dptree.spatial.shape_estimates`)."""

    KIND: ClassVar[str] = KIND
    PLOT: ClassVar[str | None] = "heatmap"
    #: the shape (which nodes split) and the counts of its count tree, and what the shape
    #: determines (its number of depths, the counts' scale), plus the noisy total, are noisy output
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "metadata", "metadata.*"),
        noisy=("measurements.levels", "measurements.counts", "measurements.depth", "measurements.noise_parameters",
               "measurements.total"),
    )

    def __init__(self, plan: PrivTree2DPlan, tree: SparsePlan, measurement: Measurement, statement: dict[str, Any],
                 metadata: dict[str, Any] | None = None) -> None:
        self.plan, self.grid, self._tree_plan, self._measurement = plan, plan.grid, tree, measurement
        #: H, the number of depths of the count tree (a function of the released shape)
        self.depth = int(measurement.heights[0])
        self.privacy = statement
        self.metadata: dict[str, Any] = dict(metadata or {})
        measured = MeasuredTree(measurement.nodes, tree.variances(self.depth), plan.grid.cells)
        self._est = ShapeEstimates(plan.grid, measured)

    @property
    def columns(self) -> tuple[str, str] | None:
        """The names of the released columns, when the caller gave them (public)."""
        col = self.metadata.get("column")
        return None if not col else tuple(str(col).split(",", 1))  # type: ignore[return-value]

    @property
    def leaves(self) -> int:
        """How many leaves the count tree of the released shape has (public: a function of the shape)."""
        return int(self._est.start.size)

    @property
    def cell_estimates(self) -> np.ndarray:
        """The estimate of every cell, shape (x buckets, y buckets) (uniform inside a leaf)."""
        return self._est.cells

    def _rectangles(self, x: Any, y: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        ax, bx, ay, by, empty = self.grid.rectangles(x, y)
        return np.ravel(ax), np.ravel(bx), np.ravel(ay), np.ravel(by), np.ravel(empty)

    @staticmethod
    def _shaped(v: np.ndarray, x: Any, y: Any) -> Any:
        return float(v[0]) if all(np.ndim(e) == 0 for e in (*x, *y)) else v

    def count(self, x: tuple[Any, Any], y: tuple[Any, Any]) -> Any:
        """Estimated records with x_lo <= x <= x_hi and y_lo <= y <= y_hi (vectorised over arrays of ends)."""
        return self._shaped(self._est.counts(*self._rectangles(x, y)), x, y)

    def stderr(self, x: tuple[Any, Any], y: tuple[Any, Any]) -> Any:
        """Exact standard error of :meth:`count`'s least-squares estimate (the noise only)."""
        return self._shaped(self._est.answer(*self._rectangles(x, y), 0.95)[1], x, y)

    @validate_params({"level": LEVEL})
    def ci(self, x: tuple[Any, Any], y: tuple[Any, Any], level: float = 0.95) -> tuple[Any, Any]:
        """Interval for :meth:`count`: the variance-gamma multiplier of the exact error moments,
        widened by the uniform-spread bound of every leaf the rectangle cuts."""
        _, _, low, high = self._est.answer(*self._rectangles(x, y), level)
        return self._shaped(low, x, y), self._shaped(high, x, y)

    def total(self) -> float:
        """Estimated number of records in the grid."""
        return float(self._est.cum[-1, -1])

    @validate_params({"level": LEVEL, "resolution": [None, Interval(Integral, 1, None, hint="e.g. resolution=64")]})
    def to_frame(self, level: float = 0.95, resolution: int | None = None) -> Any:
        """One row per block of a ``resolution`` x ``resolution`` grid over the domain (default: one
        row per cell; as :meth:`dptree.RangeTree2D.to_frame`): x_low, x_high, y_low, y_high,
        estimate, stderr, ci_low, ci_high."""
        g = self.grid
        ex, ey = (np.unique(np.linspace(0, d.size, min(resolution or d.size, d.size) + 1).astype(np.int64))
                  for d in (g.x, g.y))
        ax, ay, bx, by = (v.ravel() for v in (*np.meshgrid(ex[:-1], ey[:-1], indexing="ij"),
                                               *np.meshgrid(ex[1:] - 1, ey[1:] - 1, indexing="ij")))
        est, s, low, high = self._est.answer(ax, bx, ay, by, np.zeros(ax.size, dtype=bool), level)
        keys = {"x_low": g.x.leaf_start(ax), "x_high": g.x.leaf_end(bx),
                "y_low": g.y.leaf_start(ay), "y_high": g.y.leaf_end(by)}
        return result_frame(keys, estimate=est, stderr=s, ci=(low, high), level=level)

    # ------------------------------------------------------------------ the release contract
    def to_document(self) -> dict[str, Any]:
        """``parameters``: the grid and PrivTree's public inputs; ``measurements``: the shape and the
        counts of its count tree as the sparse tree stores them (:mod:`dptree.sparsetree.document`)."""
        p = self.plan
        params = {"x": _axis(p.grid.x), "y": _axis(p.grid.y), "depth": p.grid.depth, "method": "privtree",
                  "max_contributions": p.max_contributions, "structure_share": p.structure_share,
                  "threshold": p.threshold, "budget": {"epsilon": p.tree.epsilon}}
        meas = sparse_document(self._tree_plan, self._measurement, self.privacy, self.metadata)["measurements"]
        return {"privacy": self.privacy, "parameters": params, "measurements": meas, "metadata": self.metadata}

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> PrivTree2D:
        """Re-plan from the file's parameters, then refuse a file whose shape is not a tree PrivTree
        releases, or whose counts, noise scale or statement differ from what the plan derives."""
        params = doc["parameters"]
        if not isinstance(params, Mapping) or params.get("method") != "privtree":
            raise ReleaseFileError(f"{KIND} release: parameters.method must be 'privtree'")
        try:
            plan = plan_privtree_2d(
                lower=(params["x"]["lower"], params["y"]["lower"]), upper=(params["x"]["upper"], params["y"]["upper"]),
                width=(params["x"]["width"], params["y"]["width"]), epsilon=params["budget"]["epsilon"],
                max_contributions=params["max_contributions"], structure_share=params["structure_share"],
                threshold=params["threshold"])
        except (KeyError, TypeError) as exc:
            raise ReleaseFileError(f"{KIND} release: parameters are incomplete ({exc})") from None
        except DPTreeError as exc:
            raise ReleaseFileError(f"{KIND} release: invalid parameters: {exc}") from None
        if (plan.grid.depth != params["depth"] or plan.grid.x.size != params["x"]["size"]
                or plan.grid.y.size != params["y"]["size"]):
            raise ReleaseFileError(f"{KIND} release: the grid does not match its parameters")
        tree, measurement = checked_measurement(plan.tree, doc["measurements"])
        privacy = check_statement(doc["privacy"], plan.statement, kind=KIND)
        return cls(plan, tree, measurement, privacy, check_metadata(doc.get("metadata")))

    def summary(self) -> str:
        """One line: grid, shape, neighbouring relation and the budget spent."""
        g = self.grid
        eps = self.privacy["budget_spent"]["epsilon"]
        cols = f"of {self.columns[0]!r}, {self.columns[1]!r} " if self.columns else ""
        return (f"PrivTree2D {cols}over [{g.x.format_value(g.x.lower)}, {g.x.format_value(g.x.upper)}] x "
                f"[{g.y.format_value(g.y.lower)}, {g.y.format_value(g.y.upper)}] ({g.x.size}x{g.y.size} cells), "
                f"quadtree shape of {self.leaves} leaves over {self.depth} count depths, add_remove neighbors, "
                f"epsilon={eps:g}{'' if self.private else ', NOT PRIVATE (test seed)'}")
