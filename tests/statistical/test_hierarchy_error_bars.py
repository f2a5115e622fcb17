"""Hierarchy error bars against simulation: standard errors and interval coverage."""

from __future__ import annotations

import numpy as np
import pytest
from hier_helpers import linear_map, random_hierarchy

from dptree.hierarchy.api import hierarchy_counts
from dptree.noise import discrete_gaussian, discrete_laplace, make_source


@pytest.mark.slow
def test_stderr_matches_monte_carlo_within_2pct_on_1000_node_tree() -> None:
    # an irregular tree of about 1000 nodes
    h = random_hierarchy(7, max_depth=6, max_arity=5)
    assert 600 <= h.n_nodes <= 3000, h.n_nodes
    rel = hierarchy_counts([], h, epsilon=1.0, rng=0)
    G = linear_map(h)
    src = make_source(9)
    R = 40000
    scale = h.depth / 1.0
    sd = np.zeros(h.n_nodes)
    acc = np.zeros(h.n_nodes)
    for _ in range(8):
        noise = discrete_laplace(src, scale, (R // 8) * h.n_nodes).reshape(R // 8, h.n_nodes).astype(float)
        acc += ((noise @ G.T) ** 2).sum(axis=0)
    sd = np.sqrt(acc / R)
    ratio = sd / np.sqrt(rel.variances)
    assert np.abs(ratio - 1).max() < 0.02, (ratio.min(), ratio.max(), h.n_nodes)


@pytest.mark.parametrize("method", ["laplace", "gaussian"])
def test_ci_coverage(method: str) -> None:
    h = random_hierarchy(4, max_depth=4)
    rel = hierarchy_counts([], h, epsilon=1.0, delta=0.0 if method == "laplace" else 1e-6, method=method, rng=0)
    G = linear_map(h)
    src = make_source(3)
    R = 4000
    if method == "laplace":
        noise = discrete_laplace(src, h.depth, R * h.n_nodes)
    else:
        noise = discrete_gaussian(src, float(rel.privacy["noise"]["sigma2"]), R * h.n_nodes)
    err = noise.reshape(R, h.n_nodes) @ G.T
    half = rel._half_width(rel.variances, 0.9)
    cover = (np.abs(err) <= half).mean(axis=0)
    assert cover.mean() >= 0.895 and cover.min() >= 0.87, (cover.mean(), cover.min())
