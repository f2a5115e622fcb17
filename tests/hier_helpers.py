"""Shared helpers for the hierarchy tests: random irregular trees as path lists, the linear map of
the consistent estimator."""

from __future__ import annotations

import numpy as np

from dptree.estimation.least_squares import consistent_estimates
from dptree.hierarchy import Hierarchy


def random_paths(
    rng: np.random.Generator, max_depth: int = 4, max_arity: int = 4, n_top: int | None = None
) -> list[tuple[str, ...]]:
    """Root-to-leaf label paths of a random irregular tree (leaves at different depths)."""
    paths: list[tuple[str, ...]] = []

    def grow(prefix: tuple[str, ...], depth: int) -> None:
        k = int(rng.integers(1, max_arity + 1)) if prefix or n_top is None else n_top
        for c in range(k):
            p = prefix + (f"n{c}",)
            if depth + 1 >= max_depth or (len(p) > 1 and rng.random() < 0.3):
                paths.append(p)
            else:
                grow(p, depth + 1)

    grow((), 0)
    return paths


def random_hierarchy(seed: int, **kw: int) -> Hierarchy:
    return Hierarchy.from_paths(random_paths(np.random.default_rng(seed), **kw))


def flat(levels: list[np.ndarray]) -> np.ndarray:
    return np.concatenate([np.asarray(a) for a in levels])


def linear_map(h: Hierarchy) -> np.ndarray:
    """The GLS estimator is linear: its matrix, column by column, from the production code."""
    n = h.n_nodes
    G = np.zeros((n, n))
    var = [np.ones(s) for s in h.sizes]
    for i in range(n):
        e = np.zeros(n)
        e[i] = 1.0
        ys = np.split(e, np.cumsum(h.sizes)[:-1])
        G[:, i] = flat(consistent_estimates(ys, var, h.parents).x)
    return G
