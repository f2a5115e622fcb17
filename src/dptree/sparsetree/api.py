"""``sparse_range_tree``: a private range tree over a 64-bit key domain with no width to choose.

Plan (public parameters; :mod:`dptree.sparsetree.plan`) -> keys (the column as order-preserving
64-bit offsets, :func:`dptree.data.domain.key_domain`, sorted once) -> the mechanism
(:meth:`dptree.sparsetree.plan.SparsePlan.measure`) -> a
:class:`~dptree.sparsetree.release.SparseRangeTree`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

from dptree import noise as _noise
from dptree._validation import Options, validate_params
from dptree.data import histograms
from dptree.data.domain import key_domain
from dptree.data.engines.duckdb import is_csv, is_relation
from dptree.data.engines.spark import is_spark_df
from dptree.data.histograms import COLUMN, FORMAT, RNG, is_file
from dptree.data.inputs import declared_kind, refuse_untyped, to_numpy
from dptree.data.values import INVALID_VALUES
from dptree.errors import InvalidParameterError
from dptree.io import release_file as _release_file
from dptree.io.release_file import creation_metadata
from dptree.privacy.budget import Budget
from dptree.privacy.loss import PrivacyLoss
from dptree.privacy.unit import PerRecord, PrivacyUnit, privacy_values
from dptree.sparsetree.counting import BinnedKeys
from dptree.sparsetree.plan import SparsePlan, plan_sparse_tree
from dptree.sparsetree.release import SparseRangeTree

__all__ = ["sparse_range_tree", "sparse_plans", "plan_sparse_range_tree", "SparseRangeTreePlan"]

_READING: dict[str, Any] = {"on_invalid": [Options(("error", "drop"))], "column": COLUMN, "rng": RNG, "fmt": FORMAT}


@dataclass(frozen=True, eq=False)
class SparseRangeTreePlan:
    """Everything about a sparse range tree that depends only on public parameters.

    ``tree`` is the mechanism's plan (:class:`~dptree.sparsetree.plan.SparsePlan`) for a column of
    integers, or of the bounds' type; without bounds the column's declared type (schema, not data)
    sets the key domain when :meth:`release` reads it, and the tree, its privacy loss and its
    statement do not depend on that type (every such domain has 2^64 keys). ``parameters``: the
    public keywords the plan was built from.
    """

    tree: SparsePlan
    parameters: dict[str, Any]

    @property
    def budget(self) -> Budget:
        """The pure epsilon budget the release is charged (the ledger's :meth:`charge_for`)."""
        return Budget.pure(self.tree.epsilon)

    @property
    def unit(self) -> PerRecord:
        """Add or remove one person with at most ``max_contributions`` records."""
        return PerRecord(self.tree.max_contributions)

    def privacy_loss(self) -> PrivacyLoss:
        """The release's noisy measurements (:meth:`dptree.sparsetree.plan.SparsePlan.privacy_loss`):
        its pure epsilon is the statement's ``budget_spent``."""
        return self.tree.privacy_loss()

    @property
    def statement(self) -> dict[str, Any]:
        """The privacy statement a release of this plan carries (``private`` set by the release)."""
        return dict(self.tree.statement)

    def for_kind(self, kind: str) -> SparsePlan:
        """The mechanism's plan for a column of numpy kind letter ``kind`` (``"i"``, ``"u"``,
        ``"f"``, ``"M"``): its type sets the key domain when no bounds were given."""
        p = self.parameters
        return plan_sparse_tree(key_domain(p["lower"], p["upper"], kind), epsilon=p["epsilon"],
                                branching=p["branching"], max_contributions=p["max_contributions"],
                                dense_depth=p["dense_depth"], threshold=p["threshold"], method=p["method"],
                                structure_share=p["structure_share"])

    def check_input(self, data: Any, *, column: str | None = None, fmt: str | None = None) -> None:
        """The checks of the input's form (never its values) before anything is read."""
        if self.parameters["lower"] is None:
            refuse_untyped(data, "a sparse tree without bounds", "give lower= and upper=")
        in_engine = is_file(data) or is_relation(data) or is_spark_df(data)
        if in_engine and column is None:
            raise InvalidParameterError("a file, DuckDB relation or Spark DataFrame needs column= (the column to "
                                        "release)")
        if fmt is not None and not is_file(data):
            raise InvalidParameterError("fmt applies to files only")
        if self.parameters["lower"] is None and is_file(data) and is_csv(data, fmt):
            raise InvalidParameterError("a CSV column has no declared type (DuckDB would guess it from the rows): "
                                        "give lower= and upper= (their type, integers, floats or dates, sets the "
                                        "domain)")

    @validate_params(_READING)
    def release(self, data: Any, *, column: str | None = None, on_invalid: str = "error",
                rng: _noise.RngLike = None, fmt: str | None = None) -> SparseRangeTree:
        """Read ``data`` and run the mechanism (the private step): :func:`sparse_range_tree`
        describes the inputs, ``on_invalid``, ``rng`` and ``fmt``."""
        self.check_input(data, column=column, fmt=fmt)
        plan = self.tree
        lower, upper = self.parameters["lower"], self.parameters["upper"]
        in_engine = is_file(data) or is_relation(data) or is_spark_df(data)
        created = _release_file.utc_now()  # before the data is read (the module's clock: tests can fix it)
        if in_engine:  # counted in the engine: distinct values and their counts, typed by the schema
            policy: Literal["error", "drop"] = "drop" if on_invalid == "drop" else "error"
            vals = histograms.values(data, column=column, on_invalid=policy, message=INVALID_VALUES,
                                     domain=None if lower is None else (plan.domain.kind, lower, upper), fmt=fmt)
            if lower is None:
                plan = self.for_kind(vals.dtype.kind)  # the column's type is schema, not data
            src = _noise.make_source(rng)
            keys = plan.domain.read_positions(vals, on_invalid=on_invalid)
        else:
            arr = to_numpy(data, column=column)
            if lower is None:  # the column's declared type is schema, not data (missing entries make ints floats)
                plan = self.for_kind(declared_kind(data, column=column) or arr.dtype.kind)
            src = _noise.make_source(rng)
            keys = plan.domain.read_positions(arr, on_invalid=on_invalid)
        measurement = plan.measure(BinnedKeys(keys), src)  # counted from a histogram: no sort of every key
        if measurement.totals is not None:  # "auto": the plan the noisy total resolved
            plan = plan.resolved(int(measurement.totals[0]))
        statement = dict(plan.statement)
        statement["private"] = bool(src.private)
        metadata = creation_metadata(column=column, source=data if is_file(data) else None, created=created)
        return SparseRangeTree(plan, measurement, statement, metadata)


@privacy_values
@validate_params(plan_sparse_tree.constraints)  # type: ignore[attr-defined]
def plan_sparse_range_tree(*, epsilon: float, lower: Any = None, upper: Any = None, branching: int = 16,
                           max_contributions: int = 1, dense_depth: int | None = None, threshold: int | None = None,
                           method: str = "privtree", structure_share: float | str = "auto",
                           unit: PrivacyUnit | None = None, budget: Budget | None = None) -> SparseRangeTreePlan:
    """Plan a sparse range tree from public parameters only (no data): validate them, calibrate
    every noise scale (a parameter no sampler can draw fails here, before any charge) and derive
    the privacy statement and loss. ``release(data)`` then runs it; :func:`sparse_range_tree` is
    the two in one call and describes the parameters.

    The mechanisms: PrivTree's biased-count splits for the shape (Zhang, Xiao & Xie 2016,
    Algorithm 2, Thm 3.1) then discrete Laplace counts of its count tree (``"privtree"``), or
    Laplace counts level by level (``"levels"``), :mod:`dptree.sparsetree.mechanism`.

        >>> import dptree
        >>> plan = dptree.plan_sparse_range_tree(epsilon=1.0, method="levels", lower=0, upper=4095)
        >>> [m.label for m in plan.privacy_loss().measurements], plan.privacy_loss().epsilon()
        (['level 1', 'level 2', 'level 3'], 1.0)
    """
    params = {"epsilon": epsilon, "lower": lower, "upper": upper, "branching": branching,
              "max_contributions": max_contributions, "dense_depth": dense_depth, "threshold": threshold,
              "method": method, "structure_share": structure_share}
    plan = SparseRangeTreePlan(plan_sparse_tree(key_domain(lower, upper, "i"), epsilon=epsilon, branching=branching,
                                                max_contributions=max_contributions, dense_depth=dense_depth,
                                                threshold=threshold, method=method, structure_share=structure_share),
                               params)
    tree = plan.tree  # the number of levels does not depend on the column's type
    if threshold is not None and tree.dense_depth >= tree.layout.depth:
        raise InvalidParameterError(
            f"threshold= decides which nodes are expanded, but every level of this tree is expanded (dense_depth "
            f"reaches its {tree.layout.depth} levels: 2^{tree.domain.bits} keys at branching {tree.layout.branching}), "
            f"so no count is compared with it: leave threshold out, or give dense_depth < {tree.layout.depth}")
    return plan


@privacy_values
@validate_params(_READING)
def sparse_range_tree(
    data: Any,
    *,
    epsilon: float,
    lower: Any = None,
    upper: Any = None,
    branching: int = 16,
    max_contributions: int = 1,
    dense_depth: int | None = None,
    threshold: int | None = None,
    method: str = "privtree",
    structure_share: float | str = "auto",
    column: str | None = None,
    on_invalid: str = "error",
    rng: _noise.RngLike = None,
    fmt: str | None = None,
    unit: PrivacyUnit | None = None,
    budget: Budget | None = None,
) -> SparseRangeTree:
    """Release a private sparse range tree of ``data``: integers up to 64 bits, floats or
    nanosecond timestamps, with no bucket width (the leaves are single 64-bit keys).

    Privacy: pure ``epsilon``-DP under add/remove of one person with at most
    ``max_contributions`` records (:mod:`dptree.sparsetree.mechanism`). ``method="privtree"``
    (default): a share of epsilon grows the tree's shape by PrivTree's biased-count rule, whose
    cost does not grow with the depth, and the rest measures every node of the shape; the share is
    ``structure_share``, or with ``"auto"`` (default) 0.2, 0.15 or 0.1 as a noisy total (1% of
    epsilon) finds fewer than 10^4 / epsilon records, fewer than 2 x 10^5 / epsilon or more
    (:data:`~dptree.sparsetree.plan.AUTO_SHARES`);
    ``method="levels"``: every level is noised at epsilon / L and a node's children are measured
    where its noisy count reaches ``threshold`` (adaptive composition over the L levels). Without ``lower`` and
    ``upper`` the tree covers every key of the column's type (int64, uint64, float64 or
    datetime64[ns]): the top levels cover everything, so no bounds are needed and none are
    estimated. With bounds, values outside them are clamped and the tree has fewer levels.
    NaN, NaT, None and infinities raise unless ``on_invalid="drop"``. ``rng`` is for tests only: a
    seeded release is marked ``private: false``.

    ``data``: an array, a table with ``column`` (pandas, polars, Arrow), or, read by their engine
    with ``column``, a Parquet or CSV path or a DuckDB relation (one scan of the valid values into
    numpy) or a Spark DataFrame (its distinct values and counts); memory O(n) keys. A CSV column has no
    declared type, so a CSV needs ``lower`` and ``upper`` (their type sets the domain). ``fmt``:
    ``"csv"`` or ``"parquet"`` for a path (default: from its name, else its first bytes).

    ``branching``: a power of two (2 .. 256). ``dense_depth``, ``threshold``: see
    :func:`~dptree.sparsetree.plan.plan_sparse_tree`.

    Example (``rng=7`` seeds the noise only so that the outputs below are reproducible: a seeded release
    is marked not private; leave ``rng`` out in real use)::

        >>> import numpy as np, dptree
        >>> latency_ms = np.exp(np.linspace(0.0, 6.0, 10_000))  # 1 to 403 ms; no bounds, no width
        >>> rel = dptree.sparse_range_tree(latency_ms, epsilon=1.0, rng=7)
        >>> [round(float(v), 1) for v in rel.quantile([0.5, 0.99])]  # the data's own: 20.1 and 379.9
        [20.0, 378.2]
    """
    plan = plan_sparse_range_tree(epsilon=epsilon, lower=lower, upper=upper, branching=branching,
                                  max_contributions=max_contributions, dense_depth=dense_depth, threshold=threshold,
                                  method=method, structure_share=structure_share)
    return plan.release(data, column=column, on_invalid=on_invalid, rng=rng, fmt=fmt)


def sparse_plans(data: Any, *, epsilon: float, lower: Any, upper: Any, branching: int, max_contributions: int,
                 dense_depth: int | None, threshold: int | None, method: str, structure_share: float | str,
                 column: str | None, fmt: str | None) -> Callable[[str], SparsePlan]:
    """Every public check of a sparse release before the data is read (the CLI runs them before it
    charges a ledger); returns the plan for a column of numpy kind letter ``"i"``, ``"u"``, ``"f"``
    or ``"M"`` (the type of the column sets the domain when no bounds are given: schema, not data)."""
    plan = plan_sparse_range_tree(epsilon=epsilon, lower=lower, upper=upper, branching=branching,
                                  max_contributions=max_contributions, dense_depth=dense_depth, threshold=threshold,
                                  method=method, structure_share=structure_share)
    plan.check_input(data, column=column, fmt=fmt)
    return plan.for_kind
