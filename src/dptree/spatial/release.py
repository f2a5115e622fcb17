"""2-D range trees: one private release that answers every rectangle count of a public grid.

The mechanism: a quadtree (Finkel & Bentley 1974) over the public grid, which in Morton order is
the 1-D range tree's regular 4-ary tree over the cells (:mod:`dptree.spatial.grid`); exact
discrete noise on every node of every measured level, the budget split over the levels for the
all-rectangles workload (:mod:`dptree.spatial.plan`: an exact optimum, or the geometric budget
of Cormode, Procopiuc, Srivastava, Shen & Yu 2012), and Honaker's (2015) least squares
(:mod:`dptree.spatial.estimates`). Qardaji, Yang & Li (2013) compare such hierarchies with flat
grids for 2-D range queries; docs/notes/spatial.md measures both on the same grids. Every answer
is post-processing with its exact standard error.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral
from typing import Any, ClassVar, Mapping

import numpy as np

from dptree._validation import Interval, validate_params
from dptree.errors import ReleaseFileError
from dptree.estimation.intervals import LEVEL, symmetric_interval
from dptree.io.contract import CountRelease
from dptree.io.frames import result_frame
from dptree.io.release_file import check_metadata, creation_metadata
from dptree.noise import RngLike, make_source
from dptree.privacy.boundary import Boundary
from dptree.privacy.statement import check_statement
from dptree.rangetree.document import checked_levels
from dptree.spatial.estimates import GridEstimates
from dptree.spatial.plan import QuadtreePlan, noise_fractions

__all__ = ["RangeTree2D", "RangeTree2DPlan", "plan_range_tree_2d"]

KIND = "range_tree_2d"


def _axis(dom: Any) -> dict[str, Any]:
    return {"kind": dom.kind, "lower": dom.lower, "upper": dom.upper, "width": dom.width, "size": dom.size}


class RangeTree2D(CountRelease):
    """A private 2-D range-tree release. All queries are post-processing and cost no budget.

    Counts are of records per cell (bucket resolution on each axis, as the 1-D tree: a query end
    selects the whole bucket that holds it)."""

    KIND: ClassVar[str] = KIND
    PLOT: ClassVar[str | None] = "heatmap"
    #: the noisy node counts are the only fields that depend on the data
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "measurements.noise_parameters", "metadata", "metadata.*"),
        noisy=("measurements.levels",),
    )

    def __init__(self, plan: QuadtreePlan, measurements: list[np.ndarray | None], statement: dict[str, Any],
                 metadata: dict[str, Any] | None = None) -> None:
        self.plan, self.grid, self.measurements = plan, plan.grid, measurements
        self.privacy = statement
        #: public: the caller's column names, input path and the creation time
        self.metadata: dict[str, Any] = dict(metadata or {})
        self._est = GridEstimates(plan.grid, plan.noise, plan.tree.level_variance, measurements)

    @property
    def columns(self) -> tuple[str, str] | None:
        """The names of the released columns, when the caller gave them (public)."""
        col = self.metadata.get("column")
        return None if not col else tuple(str(col).split(",", 1))  # type: ignore[return-value]

    @property
    def cell_estimates(self) -> np.ndarray:
        """The least-squares estimate of every cell, shape (x buckets, y buckets)."""
        return self._est.cells

    def _rectangles(self, x: Any, y: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return self.grid.rectangles(x, y)

    @staticmethod
    def _shaped(v: np.ndarray, x: Any, y: Any) -> Any:
        return float(v[0]) if all(np.ndim(e) == 0 for e in (*x, *y)) else v

    def count(self, x: tuple[Any, Any], y: tuple[Any, Any]) -> Any:
        """Estimated records with x_lo <= x <= x_hi and y_lo <= y <= y_hi (vectorised over arrays of ends)."""
        r = self._rectangles(x, y)
        return self._shaped(self._est.counts(*r), x, y)

    def stderr(self, x: tuple[Any, Any], y: tuple[Any, Any]) -> Any:
        """Exact standard error of :meth:`count` (:func:`~dptree.spatial.estimates.rectangle_variance`)."""
        r = self._rectangles(x, y)
        return self._shaped(np.sqrt(self._est.variances(*r)), x, y)

    @validate_params({"level": LEVEL})
    def ci(self, x: tuple[Any, Any], y: tuple[Any, Any], level: float = 0.95) -> tuple[Any, Any]:
        """Confidence interval count -+ m * stderr at ``level`` (m: :meth:`GridEstimates.spread`)."""
        r = self._rectangles(x, y)
        s, m = self._est.spread(*r, level)
        low, high = symmetric_interval(self._est.counts(*r), s, m)
        return self._shaped(low, x, y), self._shaped(high, x, y)

    def total(self) -> float:
        """Estimated number of records in the grid."""
        g = self.grid
        return float(self.count((g.x.lower, g.x.upper), (g.y.lower, g.y.upper)))

    @validate_params({"level": LEVEL, "resolution": [None, Interval(Integral, 1, None, hint="e.g. resolution=64")]})
    def to_frame(self, level: float = 0.95, resolution: int | None = None) -> Any:
        """One row per block of a ``resolution`` x ``resolution`` grid over the domain (default: one
        row per cell): x_low, x_high, y_low, y_high (bucket indices' values, as the 1-D tree's
        bucket_low and bucket_high), estimate, stderr, ci_low, ci_high. A block joins whole cells:
        ``resolution`` is capped at the number of buckets of each axis."""
        g = self.grid
        ex, ey = (np.unique(np.linspace(0, d.size, min(resolution or d.size, d.size) + 1).astype(np.int64))
                  for d in (g.x, g.y))
        ax, ay, bx, by = (v.ravel() for v in (*np.meshgrid(ex[:-1], ey[:-1], indexing="ij"),
                                               *np.meshgrid(ex[1:] - 1, ey[1:] - 1, indexing="ij")))
        empty = np.zeros(ax.size, dtype=bool)
        est = self._est.counts(ax, bx, ay, by, empty)
        s, m = self._est.spread(ax, bx, ay, by, empty, level)
        keys = {"x_low": g.x.leaf_start(ax), "x_high": g.x.leaf_end(bx),
                "y_low": g.y.leaf_start(ay), "y_high": g.y.leaf_end(by)}
        return result_frame(keys, estimate=est, stderr=s, ci=symmetric_interval(est, s, m), level=level)

    # ------------------------------------------------------------------ the release contract
    def to_document(self) -> dict[str, Any]:
        """``parameters``: the public inputs of the plan; ``measurements``: every level's noisy
        counts (Morton order; null where not measured) and the exact noise parameters."""
        p = self.plan
        params = {
            "x": _axis(p.grid.x), "y": _axis(p.grid.y), "depth": p.grid.depth,
            "noise": p.noise, "neighbors": p.neighbors, "max_contributions": p.max_contributions,
            "levels": p.levels,
            "gaussian_calibration": "exact" if "implied_rho" in p.statement.get("calibration", {}) else "zcdp",
            "budget": {"epsilon": p.budget.epsilon, "delta": p.budget.delta, "rho": p.budget.rho},
        }
        meas = {"levels": [None if m is None else [int(v) for v in m] for m in self.measurements],
                "noise_parameters": noise_fractions(p)}
        return {"privacy": self.privacy, "parameters": params, "measurements": meas, "metadata": self.metadata}

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> RangeTree2D:
        """Re-plan from the file's parameters and refuse a file whose grid, noise parameters or
        privacy statement differ from the plan's (the checksum is not a signature)."""
        params = doc["parameters"]
        try:
            budget = params["budget"]
            plan = RangeTree2DPlan.build(
                lower=(params["x"]["lower"], params["y"]["lower"]), upper=(params["x"]["upper"], params["y"]["upper"]),
                width=(params["x"]["width"], params["y"]["width"]), epsilon=budget["epsilon"],
                delta=budget["delta"] or 0.0, rho=budget["rho"], noise=params["noise"],
                neighbors=params["neighbors"], max_contributions=params["max_contributions"],
                levels=params["levels"], gaussian_calibration=params["gaussian_calibration"])
        except (KeyError, TypeError) as exc:
            raise ReleaseFileError(f"{KIND} release: parameters are incomplete ({exc})") from None
        if (plan.grid.depth != params["depth"] or plan.grid.x.size != params["x"]["size"]
                or plan.grid.y.size != params["y"]["size"]):
            raise ReleaseFileError(f"{KIND} release: the grid does not match its parameters")
        meas = doc["measurements"]
        if meas.get("noise_parameters") != noise_fractions(plan):
            raise ReleaseFileError(f"{KIND} release: noise parameters do not match the stated budget (tampered?)")
        measurements = checked_levels(plan.tree, meas.get("levels"))
        privacy = check_statement(doc["privacy"], plan.statement, kind=KIND)
        return cls(plan, measurements, privacy, check_metadata(doc.get("metadata")))

    def summary(self) -> str:
        """One line: grid, tree, noise, neighboring relation and the budget spent."""
        g = self.grid
        spent = ", ".join(f"{k}={v:g}" for k, v in self.privacy["budget_spent"].items())
        cols = f"of {self.columns[0]!r}, {self.columns[1]!r} " if self.columns else ""
        return (f"RangeTree2D {cols}over [{g.x.format_value(g.x.lower)}, {g.x.format_value(g.x.upper)}] x "
                f"[{g.y.format_value(g.y.lower)}, {g.y.format_value(g.y.upper)}] ({g.x.size}x{g.y.size} cells), "
                f"quadtree of depth {g.depth}, {self.plan.levels} split, {self.plan.noise} noise, "
                f"{self.plan.neighbors} neighbors, {spent}{'' if self.private else ', NOT PRIVATE (test seed)'}")


@dataclass
class RangeTree2DPlan(QuadtreePlan):
    """The plan of a 2-D range-tree release (:class:`~dptree.spatial.plan.QuadtreePlan`); :meth:`release`
    is its one private step."""

    def release(self, cell_counts: np.ndarray, rng: RngLike = None, *, columns: Any = None, source: Any = None,
                created: str | None = None) -> RangeTree2D:
        """Add noise to the node counts derived from ``cell_counts`` (the Morton-ordered cell
        histogram, :func:`~dptree.spatial.counting.grid_histogram`) and estimate them by least squares."""
        src = make_source(rng)
        measurements = self.tree.measure(cell_counts, src)
        stated = dict(self.statement)
        stated["private"] = bool(src.private)
        return RangeTree2D(self, measurements, stated, creation_metadata(column=columns, source=source,
                                                                         created=created))


#: validate public parameters and plan a 2-D range-tree release (:meth:`QuadtreePlan.build`)
plan_range_tree_2d = RangeTree2DPlan.build
