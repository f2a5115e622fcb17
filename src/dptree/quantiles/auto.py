"""``method="auto"``: the method with the smallest PREDICTED mean rank error, from public quantities
only (m, epsilon, the domain, the neighbouring relation; never the data).

* tree: sqrt(2 / pi) times the root-mean-square standard deviation of a prefix count of the
  planned release (the exact closed form of the least-squares variance,
  :func:`dptree.estimation.least_squares.range_variance`, on :func:`plan_range_tree`'s levels),
  flat in m and in n, times TREE_FACTOR: the measured ratio of the read-off's error (isotonic
  fit, interpolation) to that closed form;
* approx: a * L^b / epsilon ranks (L = floor(log2 m) + 1 layers; epsilon the budget as the
  add/remove calibration spends it, rescaled by the replace calibration's per-layer budget),
  with (a, b) fitted by ``benchmarks/quantiles_auto.py`` on uniform data (table in
  :mod:`dptree.quantiles.fitted`): an exponential-mechanism call's typical rank error is about
  2 / epsilon' whatever the domain size when the data are spread (the ln |X| of the tail bound is
  the worst case), and the path of an output crosses L calls at epsilon / L each.

"exponential" (basic composition, epsilon / m per level) is never predicted to win for m >= 2
(equal to approx at m = 1) and "joint" has no measured curve in this table, so auto chooses
between "tree" and "approx". A declared n (or n_max) caps both predictions at n / 2.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from dptree.estimation.least_squares import range_variance
from dptree.quantiles.approx import layer_epsilon, layers
from dptree.quantiles.fitted import APPROX_A, APPROX_B, TREE_FACTOR
from dptree.rangetree.plan import plan_range_tree

__all__ = ["predicted_errors", "choose_method", "TREE_LEVELS", "TREE_BRANCHING"]

#: the budget split of the tree method: the prefix workload (quantiles are read off prefixes)
TREE_LEVELS = "prefix"
#: its branching, fixed: choosing it for the prefix workload costs minutes at 2^20 buckets, and 4, 8
#: and 16 give average prefix variances within 10% of each other (measured at 2^10 and 2^20)
TREE_BRANCHING = 8


def tree_error(plan: object) -> float:
    """sqrt(2/pi) * root-mean-square standard deviation of the prefix counts [0, x] of the plan."""
    layout, var = plan.layout, plan.level_variance  # type: ignore[attr-defined]
    D = plan.domain.size  # type: ignore[attr-defined]
    b = np.unique(np.linspace(0, D - 1, min(D, 1024)).astype(np.int64))
    v = range_variance(layout.block_sizes, var, np.zeros_like(b), b)
    return float(math.sqrt(2.0 / math.pi) * math.sqrt(float(np.mean(v))))


def predicted_errors(m: int, *, lower: object, upper: object, epsilon: float, width: object = None,
                     neighbors: Literal["add_remove", "replace"] = "add_remove",
                     n: int | None = None) -> dict[str, float]:
    """Predicted mean rank error of "tree" and "approx" (module docstring)."""
    plan = plan_range_tree(lower=lower, upper=upper, epsilon=epsilon, width=width, levels=TREE_LEVELS,
                           branching=TREE_BRANCHING,                            neighbors=neighbors)
    L = layers(m)
    eps_eff = layer_epsilon(epsilon, m, neighbors) * L  # the add/remove-equivalent budget
    out = {"tree": TREE_FACTOR * tree_error(plan), "approx": APPROX_A * L**APPROX_B / eps_eff}
    if n is not None:
        out = {k: min(v, n / 2) for k, v in out.items()}
    return out


def choose_method(m: int, **kw: object) -> str:
    """The method auto runs: the smaller predicted error (approx on a tie)."""
    pred = predicted_errors(m, **kw)  # type: ignore[arg-type]
    return "tree" if pred["tree"] < pred["approx"] else "approx"
