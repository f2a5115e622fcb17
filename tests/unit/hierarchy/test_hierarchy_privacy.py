"""Privacy checks for hierarchy counts: brute-force sensitivities on tiny trees, and an audit
that estimates a Clopper-Pearson lower bound on epsilon from many runs on worst-case
neighboring inputs (DESIGN section 8), with a planted bug it must flag."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hier_helpers import random_hierarchy

import dptree.hierarchy.measure as hmod
from dptree.hierarchy.counting import node_weights
from dptree.hierarchy.measure import NodeMechanism, calibrate, measure_nodes
from dptree.hierarchy.multiplicative import Tree, mrmse_wrapper
from dptree.hierarchy.structure import Hierarchy
from dptree.noise import make_source
from dptree.testing.statistics import epsilon_lower_bound

CONF = 1e-6  # each Clopper-Pearson bound fails with probability <= 1e-6


def eps_lower_bound(k1: int, k0: int, n: int, delta: float = 0.0) -> float:
    """Lower bound on epsilon from P[E | D'] <= e^eps P[E | D] + delta, both ways bounded (the shared
    Clopper-Pearson bound, CONF per side)."""
    return epsilon_lower_bound(k1, k0, n, 2 * CONF, delta)[0]


# ---------------------------------------------------------------- brute-force sensitivities


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [1, 2, 3])
def test_sensitivity_brute_force(seed: int, k: int) -> None:
    # k = 3 enumerates many more neighbors: smaller trees keep it fast (and it always runs)
    h = random_hierarchy(seed, max_depth=4 if k < 3 else 3, max_arity=3)
    leaves = [(j, i) for j in range(h.depth) for i in np.flatnonzero(h.is_leaf[j])]
    assert len(leaves) <= (40 if k < 3 else 20)
    best_l1 = best_l2 = 0
    rng = np.random.default_rng(seed)
    bases = [rng.integers(0, 3, len(leaves)) for _ in range(2)]
    # every user change v >= 0 with |v|_1 <= k over the leaves (add/remove one user), on top of
    # several base datasets x (the change is linear, but we check it on real pairs)
    for base in bases:
        x0 = [np.zeros(s, dtype=np.int64) for s in h.sizes]
        for (j, i), b in zip(leaves, base):
            x0[j][i] = b
        w0 = np.concatenate(node_weights(x0, h.parents))
        for combo in itertools.combinations_with_replacement(range(len(leaves)), k):
            x1 = [a.copy() for a in x0]
            for c in combo:
                j, i = leaves[c]
                x1[j][i] += 1
            diff = np.concatenate(node_weights(x1, h.parents)) - w0
            best_l1 = max(best_l1, int(np.abs(diff).sum()))
            best_l2 = max(best_l2, int((diff**2).sum()))
    assert best_l1 == hmod.l1_sensitivity(h.depth, k)
    assert best_l2 == hmod.l2sq_sensitivity(h.depth, k)


# ---------------------------------------------------------------- the audit


def path_chain(depth: int) -> Hierarchy:
    """A tiny tree whose deepest leaf a/b/... sits at the full depth, plus siblings."""
    labels = [f"l{i}" for i in range(depth - 1)]
    paths = ["/".join(labels)] + ["/".join(labels[:i] + ["s"]) for i in range(depth - 1)]
    return Hierarchy.from_paths(paths)


def run_counts(method: str, h: Hierarchy, x_leaf: int, runs: int, seed: int, **kw: float) -> np.ndarray:
    """Noisy measurements of the nodes on the deepest path for D (x_leaf=0) or D' (x_leaf=1)."""
    leaf = h.node_id("/".join(f"l{i}" for i in range(h.depth - 1)))
    x = [np.zeros(s, dtype=np.int64) for s in h.sizes]
    j = int(h.level_of(leaf))
    x[j][leaf - h.offsets[j]] = x_leaf
    w = node_weights(x, h.parents)
    path = [h.node_id("/".join(f"l{i}" for i in range(t))) for t in range(h.depth)]
    src = make_source(seed)
    cal = calibrate(NodeMechanism(method, kw["epsilon"], kw.get("delta", 0.0)), h.depth)
    out = np.empty((runs, len(path)))
    for r in range(runs):
        meas = measure_nodes(src, h, w, cal)
        out[r] = np.asarray(meas["y"])[path]
    return out


def laplace_audit(runs: int = 2000, epsilon: float = 1.0) -> float:
    h = path_chain(2)
    y0 = run_counts("laplace", h, 0, runs, 1, epsilon=epsilon)
    y1 = run_counts("laplace", h, 1, runs, 2, epsilon=epsilon)
    # event: every count on the record's path is >= 1 (the likelihood ratio is maximal there)
    k0 = int((y0 >= 1).all(axis=1).sum())
    k1 = int((y1 >= 1).all(axis=1).sum())
    return eps_lower_bound(k1, k0, runs)


def test_laplace_audit_respects_epsilon() -> None:
    lb = laplace_audit()
    assert lb <= 1.0
    assert lb > 0.4  # the event is informative: the audit is not vacuous


def test_audit_flags_planted_sensitivity_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hmod, "l1_sensitivity", lambda depth, k: k)  # forgets the depth
    lb = laplace_audit()
    assert lb > 1.0, lb


def test_gaussian_audit_respects_epsilon_delta() -> None:
    eps, delta, runs = 1.0, 1e-3, 2000
    h = path_chain(2)
    y0 = run_counts("gaussian", h, 0, runs, 3, epsilon=eps, delta=delta).sum(axis=1)
    y1 = run_counts("gaussian", h, 1, runs, 4, epsilon=eps, delta=delta).sum(axis=1)
    t = np.quantile(y0, 0.9)
    lb = eps_lower_bound(int((y1 > t).sum()), int((y0 > t).sum()), runs, delta)
    assert lb <= eps


def test_multiplicative_audit_respects_epsilon_delta() -> None:
    eps, delta, runs = 1.0, 1e-3, 600
    h = path_chain(3)
    tree = Tree(h.parents, list(h.sizes))
    path = [h.node_id("/".join(f"l{i}" for i in range(t))) for t in range(h.depth)]
    leaf = path[-1]
    res = []
    for x_leaf, seed in ((0, 5), (1, 6)):
        x = [np.zeros(s, dtype=np.int64) for s in h.sizes]
        x[-1][leaf - h.offsets[-1]] = x_leaf
        w = node_weights(x, h.parents)
        src = make_source(seed)
        hits = 0
        for _ in range(runs):
            r = mrmse_wrapper(src, tree, w, alpha=0.5, epsilon=eps, delta=delta, tau_min=40.0)
            ctr = np.concatenate(r.window_center)[path]
            est = np.concatenate(r.estimate)[path]
            hits += bool((ctr >= 1).all() and est[0] >= 1)
        res.append(hits)
    lb = eps_lower_bound(res[1], res[0], runs, delta)
    assert lb <= eps
