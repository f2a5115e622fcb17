"""Compatibility names: the interior-point family before it was split by stage (issue 11).

The code lives in :mod:`dptree.interior.api` (``interior_point``, ``InteriorPoint``),
:mod:`~dptree.interior.calibration` (``method_requirements``), :mod:`~dptree.interior.quantiles`,
:mod:`~dptree.interior.thresholds`, :mod:`~dptree.interior.treelog`,
:mod:`~dptree.interior.heavypaths`, :mod:`~dptree.interior.multisets` and
:mod:`~dptree.interior.encoding`. Import from there; this module only re-exports the old names.
"""

from __future__ import annotations

from dptree.errors import InsufficientDataError
from dptree.interior.api import InteriorPoint, interior_point
from dptree.interior.calibration import (
    exponential_requirement,
    method_requirements,
    method_requirements_log2,
)
from dptree.interior.calibration import swap_budget as _swap_budget
from dptree.interior.heavypaths import heavypaths_parameters, heavypaths_privacy
from dptree.interior.multisets import MS as _MS
from dptree.interior.multisets import log_star_levels
from dptree.interior.quantiles import QuantileRelease, median, quantile
from dptree.interior.thresholds import ThresholdClassifier, learn_threshold
from dptree.interior.treelog import run_treelog as _treelog
from dptree.interior.treelog import treelog_parameters, treelog_privacy

__all__ = [
    "InsufficientDataError",
    "InteriorPoint",
    "QuantileRelease",
    "ThresholdClassifier",
    "exponential_requirement",
    "heavypaths_parameters",
    "heavypaths_privacy",
    "interior_point",
    "learn_threshold",
    "log_star_levels",
    "median",
    "method_requirements",
    "method_requirements_log2",
    "quantile",
    "treelog_parameters",
    "treelog_privacy",
    "_MS",
    "_swap_budget",
    "_treelog",
]
