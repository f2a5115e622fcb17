"""The error curves used by ``method="auto"`` (:mod:`dptree.quantiles.auto`): ApproxQuantiles's
mean rank error ~ APPROX_A * L^APPROX_B / epsilon, JointExp's measured mean rank error times
epsilon at m = 2, 4, 8, 16 (JOINT_CURVE, interpolated in log m), and the tree's measured mean rank
error over its closed-form prediction, TREE_FACTOR.
Written by ``benchmarks/quantiles_auto.py`` (uniform data over [0, 2^20): approx and tree with
``--trials 6`` at n = 10000; joint with ``--joint --trials 60`` at n = 10000)."""

APPROX_A = 1.0699
APPROX_B = 1.2265
TREE_FACTOR = 0.5593
JOINT_CURVE = ((2, 3.203), (4, 3.65), (8, 6.826), (16, 8.512))
