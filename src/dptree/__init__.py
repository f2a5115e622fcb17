"""dptree: differential privacy on trees.

* :func:`range_tree` -- one private release of a b-ary tree of counts over an ordered domain that
  answers every range count, CDF value, histogram and quantile with exact standard errors
  (Smith & Ullman 2021; Honaker 2015).
* :func:`hierarchy_counts` -- private counts for every node of a public rooted tree of any shape
  (Laplace and Gaussian baselines, least-squares consistency with exact error bars, the
  multiplicative-error algorithm of Ghazi et al. 2023, non-negative integer output).
* :func:`interior_point`, :func:`median`, :func:`quantile`, :func:`learn_threshold` -- a private
  point between the data's minimum and maximum, single quantiles and threshold classifiers on
  domains of any size: exponential mechanism, TreeLog, HeavyPaths (Kaplan et al. 2020).
* :func:`range_tree_2d` -- one private release of a quadtree over a public 2-D grid that answers
  every rectangle count with exact standard errors (Cormode et al. 2012; Honaker 2015).
* :func:`quantiles` -- m quantiles with intervals: range tree, ApproxQuantiles, JointExp or one
  exponential mechanism per level, chosen by predicted error.
* :func:`plan_range_tree`, :func:`plan_interior_point`, :func:`plan_quantile`,
  :func:`plan_learn_threshold`, :func:`plan_quantiles` -- a release's plan from public parameters
  only (budget, privacy loss, statement), then ``plan.release(data)``.
* :func:`range_tree_by` (one release per public group), :class:`Ledger` (a persistent budget),
  :func:`leaf_histogram` / :func:`to_numpy` (arrays, DataFrames, Arrow, files via DuckDB, Spark).
* :mod:`dptree.stream` -- continual counting: ``dptree.stream.Counter`` appends a step's count and
  returns the private running total with its exact standard error (binary tree with Honaker's
  online least squares, or the square-root Toeplitz factorisation); :func:`plan_counter`.
* :func:`load` -- read any saved release (and a counter's saved state).

One package per stage: :mod:`dptree.privacy` (budgets, statements, ledger), :mod:`dptree.noise` (the
only code that draws randomness), :mod:`dptree.data`, :mod:`dptree.estimation`, the products
:mod:`dptree.rangetree`, :mod:`dptree.hierarchy`, :mod:`dptree.interior`, then :mod:`dptree.io`,
:mod:`dptree.reporting` and :mod:`dptree.cli`; errors in :mod:`dptree.errors`.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from dptree.data.domain import Domain, make_domain
    from dptree.data.histograms import leaf_histogram
    from dptree.data.inputs import to_numpy
    from dptree.errors import (
        BudgetExceededError,
        DataError,
        DomainError,
        DPTreeError,
        InputFormatError,
        InsufficientDataError,
        InvalidParameterError,
        ReleaseFileError,
    )
    from dptree.hierarchy import HierarchyRelease
    from dptree.hierarchy.api import HierarchyCountsPlan, hierarchy_counts, plan_hierarchy_counts
    from dptree.hierarchy.structure import Hierarchy
    from dptree.interior import (
        InteriorPoint,
        InteriorPointPlan,
        QuantilePlan,
        QuantileRelease,
        ThresholdClassifier,
        ThresholdPlan,
        interior_point,
        learn_threshold,
        median,
        method_requirements,
        plan_interior_point,
        plan_learn_threshold,
        plan_quantile,
        quantile,
    )
    from dptree.privacy.budget import Budget
    from dptree.privacy.ledger import Ledger, LedgerCorruptError, LedgerError, LedgerLockedError, LedgerReadOnlyError
    from dptree.privacy.loss import PrivacyLoss
    from dptree.privacy.unit import PerRecord, PerUser, Replace
    from dptree.quantiles import QuantilesPlan, QuantilesRelease, plan_quantiles, quantiles
    from dptree.rangetree.api import range_tree, range_tree_by
    from dptree.rangetree.groupby import GroupedRelease
    from dptree.rangetree.release import (
        Answers,
        HistogramResult,
        QuantileResult,
        RangeTree,
        RangeTreePlan,
        plan_range_tree,
    )
    from dptree.rangetree.sums_release import RangeSums, RangeSumsPlan, plan_range_sums
    from dptree.sparsetree.api import SparseRangeTreePlan, plan_sparse_range_tree, sparse_range_tree
    from dptree.sparsetree.release import SparseRangeTree
    from dptree.spatial.api import range_tree_2d
    from dptree.spatial.privtree import PrivTree2D
    from dptree.spatial.release import RangeTree2D, RangeTree2DPlan, plan_range_tree_2d
    from dptree.stream.plan import plan_counter
    from dptree.stream.release import StreamRelease

#: every public name and the module it lives in: ``import dptree`` loads none of them (a name is
#: imported on first use, PEP 562), so the command line starts, and handles Ctrl-C, at once
_PUBLIC: dict[str, str] = {
    "Domain": "dptree.data.domain",
    "make_domain": "dptree.data.domain",
    "leaf_histogram": "dptree.data.histograms",
    "to_numpy": "dptree.data.inputs",
    "BudgetExceededError": "dptree.errors",
    "DPTreeError": "dptree.errors",
    "DataError": "dptree.errors",
    "DomainError": "dptree.errors",
    "InputFormatError": "dptree.errors",
    "InsufficientDataError": "dptree.errors",
    "InvalidParameterError": "dptree.errors",
    "ReleaseFileError": "dptree.errors",
    "HierarchyRelease": "dptree.hierarchy",
    "hierarchy_counts": "dptree.hierarchy.api",
    "plan_hierarchy_counts": "dptree.hierarchy.api",
    "HierarchyCountsPlan": "dptree.hierarchy.api",
    "Hierarchy": "dptree.hierarchy.structure",
    "InteriorPoint": "dptree.interior",
    "QuantileRelease": "dptree.interior",
    "ThresholdClassifier": "dptree.interior",
    "interior_point": "dptree.interior",
    "learn_threshold": "dptree.interior",
    "median": "dptree.interior",
    "method_requirements": "dptree.interior",
    "quantile": "dptree.interior",
    "InteriorPointPlan": "dptree.interior",
    "plan_interior_point": "dptree.interior",
    "QuantilePlan": "dptree.interior",
    "plan_quantile": "dptree.interior",
    "ThresholdPlan": "dptree.interior",
    "plan_learn_threshold": "dptree.interior",
    "Budget": "dptree.privacy.budget",
    "PrivacyLoss": "dptree.privacy.loss",
    "PerRecord": "dptree.privacy.unit",
    "PerUser": "dptree.privacy.unit",
    "Replace": "dptree.privacy.unit",
    "Ledger": "dptree.privacy.ledger",
    "LedgerCorruptError": "dptree.privacy.ledger",
    "LedgerError": "dptree.privacy.ledger",
    "LedgerLockedError": "dptree.privacy.ledger",
    "LedgerReadOnlyError": "dptree.privacy.ledger",
    "QuantilesRelease": "dptree.quantiles",
    "quantiles": "dptree.quantiles",
    "QuantilesPlan": "dptree.quantiles",
    "plan_quantiles": "dptree.quantiles",
    "range_tree": "dptree.rangetree.api",
    "range_tree_by": "dptree.rangetree.api",
    "GroupedRelease": "dptree.rangetree.groupby",
    "Answers": "dptree.rangetree.release",
    "HistogramResult": "dptree.rangetree.release",
    "QuantileResult": "dptree.rangetree.release",
    "RangeTree": "dptree.rangetree.release",
    "RangeTreePlan": "dptree.rangetree.release",
    "plan_range_tree": "dptree.rangetree.release",
    "FactorizedCDF": "dptree.rangetree.factorized_release",
    "plan_factorized_cdf": "dptree.rangetree.factorized_release",
    "RangeSums": "dptree.rangetree.sums_release",
    "RangeSumsPlan": "dptree.rangetree.sums_release",
    "plan_range_sums": "dptree.rangetree.sums_release",
    "sparse_range_tree": "dptree.sparsetree.api",
    "plan_sparse_range_tree": "dptree.sparsetree.api",
    "SparseRangeTreePlan": "dptree.sparsetree.api",
    "SparseRangeTree": "dptree.sparsetree.release",
    "range_tree_2d": "dptree.spatial.api",
    "plan_range_tree_2d": "dptree.spatial.release",
    "RangeTree2D": "dptree.spatial.release",
    "RangeTree2DPlan": "dptree.spatial.release",
    "PrivTree2D": "dptree.spatial.privtree",
    "plan_counter": "dptree.stream.plan",
    "StreamRelease": "dptree.stream.release",
}

#: the modules that define a release kind: each registers its kind with the loader when imported
_RELEASE_MODULES = (
    "dptree.rangetree.release",
    "dptree.rangetree.sums_release",
    "dptree.rangetree.factorized_release",
    "dptree.rangetree.groupby",
    "dptree.rangetree.private_groups",
    "dptree.sparsetree.release",
    "dptree.spatial.release",
    "dptree.spatial.privtree",
    "dptree.hierarchy.release",
    "dptree.interior.api",
    "dptree.interior.quantiles",
    "dptree.interior.thresholds",
    "dptree.quantiles.release",
    "dptree.quantiles.groups",
    "dptree.quantiles.private_groups",
    "dptree.stream.release",
    "dptree.stream.resume",
)


def load(path: Any) -> Any:
    """Load any saved release: validates the file, then re-derives and checks the release (every
    kind's loader; :func:`dptree.io.release_file.load`).

    Example::

        >>> import os, tempfile, numpy as np, dptree
        >>> ages = 18 + np.arange(10_000) % 73
        >>> rel = dptree.range_tree(ages, lower=0, upper=120, epsilon=1.0, rng=7)
        >>> path = os.path.join(tempfile.mkdtemp(), "ages.json")
        >>> rel.save(path, allow_nonprivate=True)  # a seeded release is saved only when asked
        >>> back = dptree.load(path)
        >>> type(back).__name__, round(back.count(30, 39)) == round(rel.count(30, 39))
        ('RangeTree', True)
    """
    from dptree.io.release_file import load as load_release

    for module in _RELEASE_MODULES:
        importlib.import_module(module)
    return load_release(path)


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'dptree' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


class _Facade(types.ModuleType):
    """``dptree`` itself: a public name that is also a subpackage's (``dptree.quantiles``) stays the
    function when the subpackage is first imported (the import system sets the package's attribute
    to the subpackage then; ``sys.modules`` keeps the subpackage)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and name in _PUBLIC:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Facade


__all__ = [
    "__version__",
    "Budget",
    "PerRecord",
    "PerUser",
    "Replace",
    "PrivacyLoss",
    "Domain",
    "make_domain",
    "DPTreeError",
    "InvalidParameterError",
    "DomainError",
    "DataError",
    "BudgetExceededError",
    "ReleaseFileError",
    "InputFormatError",
    "range_tree",
    "plan_range_tree",
    "RangeTree",
    "RangeTreePlan",
    "plan_range_sums",
    "RangeSums",
    "RangeSumsPlan",
    "HistogramResult",
    "QuantileResult",
    "Answers",
    "load",
    "range_tree_by",
    "GroupedRelease",
    "sparse_range_tree",
    "plan_sparse_range_tree",
    "SparseRangeTree",
    "SparseRangeTreePlan",
    "range_tree_2d",
    "plan_range_tree_2d",
    "RangeTree2D",
    "RangeTree2DPlan",
    "PrivTree2D",
    "leaf_histogram",
    "to_numpy",
    "Ledger",
    "LedgerError",
    "LedgerCorruptError",
    "LedgerLockedError",
    "LedgerReadOnlyError",
    "Hierarchy",
    "HierarchyRelease",
    "hierarchy_counts",
    "plan_hierarchy_counts",
    "HierarchyCountsPlan",
    "interior_point",
    "InteriorPoint",
    "InsufficientDataError",
    "learn_threshold",
    "ThresholdClassifier",
    "median",
    "quantile",
    "QuantileRelease",
    "quantiles",
    "QuantilesRelease",
    "method_requirements",
    "plan_interior_point",
    "InteriorPointPlan",
    "plan_quantile",
    "QuantilePlan",
    "plan_learn_threshold",
    "ThresholdPlan",
    "plan_quantiles",
    "QuantilesPlan",
    "plan_counter",
    "StreamRelease",
]
