"""The error curve of ApproxQuantiles used by ``method="auto"`` (:mod:`dptree.quantiles.auto`):
mean rank error ~ APPROX_A * L^APPROX_B / epsilon, and the tree's measured mean rank error over
its closed-form prediction, TREE_FACTOR. Written by ``benchmarks/quantiles_auto.py``
(uniform n = 10000 over [0, 1048576), 6 trials per point)."""

APPROX_A = 1.0699
APPROX_B = 1.2265
TREE_FACTOR = 0.5593
