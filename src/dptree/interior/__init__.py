"""Interior points, quantiles and thresholds (Kaplan et al. 2020, ``002_2f350810784938f5.txt``).

Read in the order of a release: :mod:`~dptree.interior.api` (``interior_point`` and its result
``InteriorPoint``) -> :mod:`~dptree.interior.calibration` (the public plan: method, requirements,
per-replacement budget, statement) -> :mod:`~dptree.interior.encoding` (domain and values to
integer offsets) -> the mechanisms: :mod:`~dptree.interior.selection` (exponential mechanism,
Choosing Mechanism), :mod:`~dptree.interior.sparse_vector` (AboveThreshold),
:mod:`~dptree.interior.multisets` (the tree over the domain),
:mod:`~dptree.interior.treelog` (Algorithm 1), :mod:`~dptree.interior.heavypaths` (Algorithms
2-6). Built on them: :mod:`~dptree.interior.quantiles` (``quantile``, ``median``) and
:mod:`~dptree.interior.thresholds` (``learn_threshold``). Each release is a plan, built from public
parameters only (``plan_interior_point``, ``plan_quantile``, ``plan_learn_threshold``), then its
``release``.
"""

from dptree.interior.api import InteriorPoint, InteriorPointPlan, interior_point, plan_interior_point
from dptree.interior.calibration import method_requirements, method_requirements_log2
from dptree.interior.quantiles import QuantilePlan, QuantileRelease, median, plan_quantile, quantile
from dptree.interior.thresholds import ThresholdClassifier, ThresholdPlan, learn_threshold, plan_learn_threshold

__all__ = ["InteriorPoint", "InteriorPointPlan", "interior_point", "plan_interior_point", "method_requirements",
           "method_requirements_log2", "QuantilePlan", "QuantileRelease", "median", "plan_quantile", "quantile",
           "ThresholdClassifier", "ThresholdPlan", "learn_threshold", "plan_learn_threshold"]
