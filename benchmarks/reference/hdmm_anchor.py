"""The HDMM anchor of benchmarks/range_tree_2d_hdmm.py: HDMM's optimised Kronecker p-Identity
strategy (McKenna, Miklau, Hay & Machanavajjhala, "Optimizing error of high-dimensional statistical
queries under differential privacy", VLDB 2018; the authors' code, github.com/dpcomp-org/hdmm) for
all rectangles of a side x side grid, and its expected error.

Run by the benchmark under a Python that has HDMM's dependencies (numpy < 2, scipy, autograd) with
HDMM's ``src`` on the path:

    PYTHONPATH=/tmp/hdmm/src /tmp/hdmmenv/bin/python benchmarks/reference/hdmm_anchor.py SIDE RESTARTS

Prints JSON: for every p tried, the smallest average variance per rectangle at epsilon = 1 over
``RESTARTS`` random starts of HDMM's optimiser (``error.expected_error`` at eps = 1 divided by the
number of rectangles: Laplace noise, variance 2 / eps^2 per unit of L1 sensitivity), and the
identity strategy's (a flat grid) in the same units. HDMM's ``EkteloMatrix.sensitivity`` calls
``np.abs`` on an object that refuses numpy ufuncs under current numpy; it is replaced by the same
computation through the object's own ``__abs__`` (nothing else of HDMM is changed).
"""

from __future__ import annotations

import json
import sys

import numpy as np
from hdmm import error, matrix, templates, workload

matrix.EkteloMatrix.sensitivity = lambda self: np.max(self.__abs__().sum(axis=0))


def main() -> None:
    side, restarts = int(sys.argv[1]), int(sys.argv[2])
    rng = workload.AllRange(side)
    W = workload.Kronecker([rng, rng])
    queries = W.shape[0]
    out: dict[str, float] = {}
    for p in (1, 2, 4, 8, 16):
        best = np.inf
        for seed in range(restarts):
            kron = templates.Kronecker([templates.BestTemplate([templates.Identity(side), templates.Total(side),
                                                                templates.PIdentity(p, side, seed=seed + 7 * d)])
                                        for d in range(2)])  # templates.KronPIdentity, with a seed per start
            kron.optimize(W)
            best = min(best, float(error.expected_error(W, kron.strategy(), eps=1.0)) / queries)
        out[f"p={p}"] = best
    identity = workload.Kronecker([workload.Identity(side), workload.Identity(side)])
    out["identity"] = float(error.expected_error(W, identity, eps=1.0)) / queries
    print(json.dumps(out))


if __name__ == "__main__":
    main()
