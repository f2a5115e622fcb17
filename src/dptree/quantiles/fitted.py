"""The error curves used by ``method="auto"`` (:mod:`dptree.quantiles.auto`): ApproxQuantiles's
mean rank error ~ APPROX_A * L^APPROX_B / epsilon, the tree's measured mean rank error over its
closed-form prediction, TREE_FACTOR, and JOINT_CURVE: rows (m, JointExp mean, JointExp max,
approx mean, approx max), the tie-aware rank errors (max: over the m levels, averaged over
releases) times epsilon, measured on the same data at m = 2, 4, 8, 16, 20, 32, 50 (interpolated in log m).
Written by ``benchmarks/quantiles_auto.py`` (uniform data over [0, 2^20): approx and tree with
``--trials 6`` at n = 10000; joint, dithered as method='joint' runs it, with
``--joint --trials 60`` at n = 10000)."""

APPROX_A = 1.0699
APPROX_B = 1.2265
TREE_FACTOR = 0.5593
JOINT_CURVE = (
    (2, 3.11, 4.33, 2.96, 4.03),
    (4, 3.6, 6.78, 3.9, 7.12),
    (8, 7.23, 12.83, 6.44, 14.58),
    (16, 8.03, 17.11, 7.04, 20.59),
    (20, 9.23, 19.81, 8.38, 24.06),
    (32, 8.55, 20.68, 8.38, 27.58),
    (50, 17.22, 37.69, 10.72, 36.23),
)
