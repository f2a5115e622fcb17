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
* :func:`quantiles` -- m quantiles with intervals: range tree, ApproxQuantiles, JointExp or one
  exponential mechanism per level, chosen by predicted error.
* :func:`range_tree_by` (one release per public group), :class:`Ledger` (a persistent budget),
  :func:`leaf_histogram` / :func:`to_numpy` (arrays, DataFrames, Arrow, files via DuckDB, Spark).
* :func:`load` -- read any saved release.

One package per stage: :mod:`dptree.privacy` (budgets, statements, ledger), :mod:`dptree.noise` (the
only code that draws randomness), :mod:`dptree.data`, :mod:`dptree.estimation`, the products
:mod:`dptree.rangetree`, :mod:`dptree.hierarchy`, :mod:`dptree.interior`, then :mod:`dptree.io`,
:mod:`dptree.reporting` and :mod:`dptree.cli`; errors in :mod:`dptree.errors`.
"""

from __future__ import annotations

__version__ = "0.1.0"

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
from dptree.hierarchy.api import hierarchy_counts
from dptree.hierarchy.structure import Hierarchy
from dptree.interior import (
    InteriorPoint,
    QuantileRelease,
    ThresholdClassifier,
    interior_point,
    learn_threshold,
    median,
    method_requirements,
    quantile,
)
from dptree.io.release_file import load
from dptree.privacy.budget import Budget
from dptree.privacy.ledger import Ledger, LedgerCorruptError, LedgerError, LedgerLockedError, LedgerReadOnlyError
from dptree.quantiles import QuantilesRelease, quantiles
from dptree.rangetree.api import range_tree, range_tree_by
from dptree.rangetree.groupby import GroupedRelease
from dptree.rangetree.release import Answers, HistogramResult, QuantileResult, RangeTree, RangeTreePlan, plan_range_tree
from dptree.sparsetree.api import sparse_range_tree
from dptree.sparsetree.release import SparseRangeTree

__all__ = [
    "__version__",
    "Budget",
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
    "HistogramResult",
    "QuantileResult",
    "Answers",
    "load",
    "range_tree_by",
    "GroupedRelease",
    "sparse_range_tree",
    "SparseRangeTree",
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
]
