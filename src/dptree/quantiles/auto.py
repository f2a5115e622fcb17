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

* joint: JointExp's mean rank error measured on the same uniform data at m = 2, 4, 8, 16 and
  epsilon = 1 (JOINT_CURVE), interpolated in log m, over epsilon (a power law fits it badly: 3.2 at
  m = 2 against approx's 2.5, 3.65 at m = 4 against 4.1); offered only where its
  measured failure modes cannot occur (:func:`joint_eligible`): a declared n (JointExp needs one),
  add/remove neighbours, its size limits, m <= JOINT_AUTO_MAX_M and epsilon n / (4 (m + 1)) >=
  JOINT_GAP_FACTOR ln |X|.

"exponential" (basic composition, epsilon / m per level) is never predicted to win for m >= 2
(equal to approx at m = 1), so auto chooses among "tree", "approx" and "joint". A declared n (or
n_max) caps every prediction at n / 2.

Why joint's two conditions (docs/quantiles_benchmark.md, section 5). JointExp prices an output by
the counts between consecutive outputs, at a = epsilon / 4 nats per rank, against the counting
measure of the run of outputs it places. (i) Empty gaps: moving the top k outputs into the empty
gap above concentrated data (about |X| points) gains about k ln |X| nats of measure and costs about
2 k n / (m + 1) ranks; where a n / (m + 1) is a small multiple of ln |X| the outputs collapse
there (measured: rank errors near n / 2 on the log-normal and nycflights columns at n = 1000,
m >= 50, and 1.7x approx's error on distance at m = 20, where a n / (m + 1) = 0.86 ln |X|).
(ii) Tie blocks: an output sitting in a tie block of c records is ranked at its q_j-point, so two
consecutive targets inside one block (targets n / (m + 1) apart, a block of more than that) cannot
both be met and the outputs shift by one place (measured: dep_delay, n = 10^4, m = 20, whose
largest block holds 7.5% of the records). Neither is visible without the data, so auto offers
joint only where targets are at least n / (JOINT_AUTO_MAX_M + 1) apart and the gap margin holds.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from dptree.estimation.least_squares import range_variance
from dptree.interior.encoding import encoding
from dptree.quantiles.approx import layer_epsilon, layers
from dptree.quantiles.fitted import APPROX_A, APPROX_B, JOINT_CURVE, TREE_FACTOR
from dptree.rangetree.plan import plan_range_tree

__all__ = ["predicted_errors", "choose_method", "joint_eligible", "TREE_LEVELS", "TREE_BRANCHING",
           "JOINT_AUTO_MAX_M", "JOINT_GAP_FACTOR"]

#: the budget split of the tree method: the prefix workload (quantiles are read off prefixes)
TREE_LEVELS = "prefix"
#: its branching, fixed: choosing it for the prefix workload costs minutes at 2^20 buckets, and 4, 8
#: and 16 give average prefix variances within 10% of each other (measured at 2^10 and 2^20)
TREE_BRANCHING = 8
#: auto offers joint for at most this many levels: consecutive targets at least n / 9 records apart,
#: so only a tie block holding more than 11% of the records can contain two of them (module docstring)
JOINT_AUTO_MAX_M = 8
#: ... and only where epsilon n / (4 (m + 1)) >= JOINT_GAP_FACTOR ln |X| (the empty-gap margin)
JOINT_GAP_FACTOR = 2.0


def joint_eligible(m: int, *, domain_size: int, epsilon: float, neighbors: str, n: int | None) -> bool:
    """Whether auto may run JointExp (module docstring): public quantities only."""
    from dptree.quantiles.joint import JOINT_MAX_CELLS, float_slack

    if n is None or neighbors != "add_remove" or not 2 <= m <= JOINT_AUTO_MAX_M or domain_size >= 1 << 62:
        return False
    if m * (n + 1) > JOINT_MAX_CELLS or float_slack(m, domain_size, epsilon)[0] > epsilon / 20:
        return False
    return epsilon * n / (4 * (m + 1)) >= JOINT_GAP_FACTOR * math.log(domain_size)


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
    """Predicted mean rank error of "approx", "tree" (not on a real-valued domain without a bucket
    ``width``) and, where :func:`joint_eligible`, "joint" (module docstring)."""
    enc = encoding(lower, upper)
    L = layers(m)
    eps_eff = layer_epsilon(epsilon, m, neighbors) * L  # the add/remove-equivalent budget
    out = {"approx": APPROX_A * L**APPROX_B / eps_eff}
    if enc.kind != "float" or width is not None:  # the tree needs a bucket width on a real domain
        plan = plan_range_tree(lower=lower, upper=upper, epsilon=epsilon, width=width, levels=TREE_LEVELS,
                               branching=TREE_BRANCHING, neighbors=neighbors)
        out["tree"] = TREE_FACTOR * tree_error(plan)
    if joint_eligible(m, domain_size=enc.size, epsilon=epsilon, neighbors=neighbors, n=n):
        ms, errs = zip(*JOINT_CURVE)
        out["joint"] = float(np.interp(math.log(m), np.log(ms), errs)) / epsilon
    if n is not None:
        out = {k: min(v, n / 2) for k, v in out.items()}
    return out


def choose_method(m: int, **kw: object) -> str:
    """The method auto runs: the smallest predicted error (on a tie approx, then joint, then tree)."""
    pred = predicted_errors(m, **kw)  # type: ignore[arg-type]
    return min(("approx", "joint", "tree"), key=lambda k: pred.get(k, math.inf))
