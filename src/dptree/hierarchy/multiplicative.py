"""The multiplicative-error algorithm of Ghazi, Kamath, Kumar, Manurangsi, Wu (2023,
"On Differentially Private Counting on Trees", file ``001_4ad1135f2c911f1b.txt``), Theorem 4.1.

Structure, bottom to top (each function names its algorithm):

* :func:`classification_forest` -- Classification (Algorithm 1) run on every tree of a forest
  (Corollary 4.5), vectorised over the trees; it calls Sparse (Algorithm 3, the sparse vector
  technique that keeps answering bottom after c tops) once per depth of each tree and the
  truncated Laplace mechanism (Lemma 2.8) on the nodes of a depth whose Sparse answer is top;
* :func:`reduction` -- Reduction (Algorithm 2): geometric thresholds, classify, freeze the
  nodes found above the threshold at M_i, recurse on the forest below them;
* :func:`estimation` -- Estimation (Algorithm 4): a private upper bound M of the root by
  truncated Laplace, then the parameters of Theorem A.1 / Corollary 4.7 and Reduction;
* :func:`mrmse_wrapper` -- the algorithm of Lemma 3.3 (proof in Appendix A.3): Estimation with
  (eps/2, delta/2), plus a truncated-Laplace window per node (budget eps/(2d), delta/(2d) per
  depth) into which every estimate is clamped. This is Theorem 4.1's algorithm.

Noise is exact and on the integer lattice (counts are integers): discrete Laplace for Sparse
and truncated discrete Laplace (``noise.truncated_discrete_laplace``) for Lemma 2.8. Reading
notes, where the implementation has to interpret the paper (docs/notes/hierarchy.md explains each):

1. Sparse's cutoff c = M/((1-alpha) tau) is rounded *up* to an integer. Sparse answers top while
   t < c, i.e. ceil(c) times, and Lemma 4.3's privacy proof charges eps/(2c) per top; with a
   fractional c the proof would under-count. Inside Estimation c = ceil(1 + alpha) = 2
   <= 2 M_i / tau_i, the only property of c Lemma 4.3's accuracy proof uses.
2. Truncated Laplace on the lattice: the bound B is the smallest integer that gives the
   (eps, delta) the paper's proof charges (``noise.truncated_laplace_bound``). In Algorithm 1
   B <= R (the paper's R is computed for delta/(2c) but charged delta/c), so line 12's test
   against tau - Delta - R is unchanged. In Algorithm 4 and Lemma 3.3, R is replaced by B
   (B <= ceil(R)); M = w_root + B + TruncLap is still always an upper bound of the root.
3. Algorithm 4 line 4 writes tau_i = alpha tau_min q^i / (1+beta) but Theorem A.1 (and
   condition (4) of Lemma 4.6, M_{i-1} >= (1+beta) tau_i) needs q^(i-1); we use q^(i-1).
4. Algorithm 2 line 8 puts into F_{i-1} the subtrees below each transition node. For every node
   to receive a value (and for the proof of Lemma 4.6, whose trees in F_{i-1} are those with a
   bottom-classified root), F_{i-1} must be all of F_i minus its top-classified nodes; we use
   that forest.
6. Theorem A.1 sets eps_i = (eps/C) i q^(i-1) with C = sum_i i q^(i-1) = (1-q)^-2, but q > 1, so
   that sum diverges and the eps_i would exceed the budget. Its own next step (the requirement
   on tau_min becomes C/(eps i) * ..., "maximised at i = 1") needs eps_i = (eps/C) i q^-(i-1),
   whose normaliser is C = sum_i i q^-(i-1) = (q/(q-1))^2. We use that (privacy then holds
   for every ell), and the default tau_min re-derives Corollary 4.7 with this C
   (:func:`corollary_4_7_tau_min`); the printed constant is available as ``as_printed=True``.
5. Privacy never depends on tau_min, alpha or eta (footnote 7 of Lemma 4.6); only the accuracy
   guarantee needs tau_min >= the bound of Corollary 4.7.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Real
from typing import Any, Sequence

import numpy as np

from dptree._validation import Interval, validate_params
from dptree.noise import (
    LAPLACE_SCALE_LIMITS,
    RandomSource,
    discrete_laplace,
    truncated_discrete_laplace,
    truncated_laplace_bound,
)

__all__ = [
    "corollary_4_7_tau_min",
    "theorem_4_1_tau_min",
    "estimation_schedule",
    "classification_forest",
    "reduction",
    "estimation",
    "mrmse_wrapper",
    "MultiplicativeResult",
    "Tree",
    "RoundParams",
]


# ---------------------------------------------------------------------------- parameters


def _schedule_constants(alpha: float) -> tuple[float, float, float]:
    """(beta, q, C): beta = alpha/(6+5alpha), q = (1+alpha)(1-beta)/(1+beta) > 1 and the
    normaliser C = sum_{i>=1} i q^-(i-1) = (q/(q-1))^2 of the round budgets (reading note 6)."""
    beta = alpha / (6.0 + 5.0 * alpha)
    q = (1.0 + alpha) * (1.0 - beta) / (1.0 + beta)
    C = (q / (q - 1.0)) ** 2
    return beta, q, C


def corollary_4_7_tau_min(
    alpha: float, epsilon: float, delta: float, d: int, eta: float, *, as_printed: bool = False
) -> float:
    """Corollary 4.7's bound on tau_min for Estimation(T, alpha, eps, delta, eta).

    ``as_printed=True``: the paper's expression
    324 (1+alpha)^2 / (alpha^4 eps) * max{8 ln(4d/eta), ln(1 + 2(e^(eps/4)-1)/delta)}.
    Default: the same derivation (proof of Theorem A.1 at i = 1, with Estimation's rounds
    spending eps/2) carried out exactly with the convergent budget normaliser C of reading
    note 6: 2(1+alpha)(1-beta^2)/beta * C * 12/(alpha eps) * max{...}. It is larger than the
    printed value by less than q^2 (1.12x at alpha = 0.1, 1.67x at alpha = 0.5), and it is the
    value for which conditions (2)-(6) of Lemma 4.6 hold for every round (tested).
    """
    m = max(8.0 * math.log(4.0 * d / eta), math.log1p(2.0 * math.expm1(epsilon / 4.0) / delta))
    if as_printed:
        return 324.0 * (1.0 + alpha) ** 2 / (alpha**4 * epsilon) * m
    beta, q, C = _schedule_constants(alpha)
    K = 2.0 * (1.0 + alpha) * (1.0 - beta**2) / beta
    return K * C * 12.0 / (alpha * epsilon) * m


def theorem_4_1_tau_min(alpha: float, epsilon: float, delta: float, d: int, *, as_printed: bool = False) -> float:
    """The threshold Theorem 4.1's proof uses: Corollary 4.7 at (eps/2, delta/2), eta = 1/d^2
    (Estimation gets half of the budget, the Lemma 3.3 window the other half)."""
    return corollary_4_7_tau_min(alpha, epsilon / 2.0, delta / 2.0, d, 1.0 / d**2, as_printed=as_printed)


@dataclass
class RoundParams:
    """Parameters (M_i, eta_i, alpha_i, tau_i, eps_i, delta_i) of round i of Reduction, with the
    derived Classification constants (Algorithm 1 line 2)."""

    i: int
    M: float
    eta: float
    alpha: float
    tau: float
    epsilon: float
    delta: float
    c: int = 0
    Delta: float = 0.0
    R: float = 0.0
    B: int = 0

    def derive(self, d: int) -> "RoundParams":
        if self.M >= self.tau:
            self.c = int(math.ceil(self.M / ((1.0 - self.alpha) * self.tau) - 1e-12))
            if not drawable(self):
                return self  # not run (:func:`estimation`): no window, threshold or bound
            # eta_i = eta / 2^i is 0 past the doubles (over 1074 rounds): no finite Delta holds then
            self.Delta = 16.0 * self.c / self.epsilon * math.log(2.0 * d / self.eta) if self.eta > 0 else math.inf
            self.R = (
                2.0
                * self.c
                / self.epsilon
                * math.log1p(self.c * math.expm1(self.epsilon / (2.0 * self.c)) / self.delta)
            )
            self.B = truncated_laplace_bound(self.epsilon / (2.0 * self.c), self.delta / self.c)
        return self

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def estimation_schedule(
    M: float, alpha: float, epsilon: float, delta: float, eta: float, tau_min: float, d: int
) -> tuple[float, float, float, list[RoundParams]]:
    """Algorithm 4 lines 3-4 (with Theorem A.1's tau_i, reading notes 3 and 6):
    beta = alpha/(6+5alpha), q = (1+alpha)(1-beta)/(1+beta), ell = ceil(ln(M/(alpha tau_min)) / ln q),
    M_i = alpha tau_min q^i, tau_i = alpha tau_min q^(i-1)/(1+beta), eta_i = eta/2^i,
    eps_i = eps/(2C) i q^-(i-1), delta_i = delta/(2C) i q^-(i-1), C = (q/(q-1))^2, so that
    sum_i eps_i <= eps/2 and sum_i delta_i <= delta/2 for every ell.

    Returns (beta, q, M_0, rounds) with rounds[i-1] for i = 1..ell.
    """
    beta, q, C = _schedule_constants(alpha)
    M0 = alpha * tau_min
    ell = int(math.ceil(math.log(M / M0) / math.log(q))) if M > M0 else 0
    rounds = []
    for i in range(1, ell + 1):
        w = i * q ** -(i - 1)
        rounds.append(
            RoundParams(
                i=i,
                M=M0 * q**i,
                eta=math.ldexp(eta, -i),
                alpha=beta,
                tau=M0 / (1.0 + beta) * q ** (i - 1),
                epsilon=epsilon / (2.0 * C) * w,
                delta=delta / (2.0 * C) * w,
            ).derive(d)
        )
    return beta, q, M0, rounds


def drawable(p: RoundParams) -> bool:
    """Whether the samplers draw round ``p``'s noise: its largest scale, Classification's query
    noise 4c / (eps_i / 2), is within :data:`dptree.noise.LAPLACE_SCALE_LIMITS` (rounds with
    M_i < tau_i draw nothing)."""
    return p.M < p.tau or (p.epsilon > 0 and 8.0 * p.c <= LAPLACE_SCALE_LIMITS[1] * p.epsilon)


# ---------------------------------------------------------------------------- the tree


@dataclass
class Tree:
    """Levels of a rooted tree as arrays (level 0 = root), with true weights per node."""

    parents: Sequence[np.ndarray | None]
    sizes: list[int]

    @property
    def depth(self) -> int:
        return len(self.sizes)


def _group_max(groups: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(unique groups, max value per group, inverse index) of values grouped by ``groups``."""
    ug, inv = np.unique(groups, return_inverse=True)
    mx = np.full(ug.size, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(mx, inv, values)
    return ug, mx, inv


def classification_forest(
    src: RandomSource,
    tree: Tree,
    w: Sequence[np.ndarray],
    in_forest: Sequence[np.ndarray],
    tree_of: Sequence[np.ndarray],
    p: RoundParams,
    d: int,
) -> list[np.ndarray]:
    """Classification (Algorithm 1) on every tree of the forest (Corollary 4.5).

    ``in_forest[j]``: nodes of level j in the forest; ``tree_of[j]``: an id of the forest tree
    each node belongs to. Trees are disjoint, so they run independently (parallel composition,
    Fact 2.4); here they run side by side, one absolute level at a time from the deepest up,
    which is Algorithm 1's order (i = d to 1) inside every tree. Each tree has its own Sparse
    (Algorithm 3) instance: noisy threshold tau + Lap(2c/(eps/2)), queries
    f_i = max_{u in S_i} w_u + Lap(4c/(eps/2)), at most c top answers, then bottom forever.
    When Sparse says top, every u in S_i gets w_u + TruncLap(2c/eps, R) and is top (with all its
    ancestors in the tree) if that is >= tau - Delta - R. Privacy: (eps, delta) for any
    M, eta, alpha, tau (Lemma 4.3); accuracy needs Lemma 4.3's condition on tau.
    Returns the top mask per level (False outside the forest).
    """
    L = tree.depth
    top = [np.zeros(tree.sizes[j], dtype=bool) for j in range(L)]
    if p.M < p.tau:  # line 1
        return top
    c, eps = p.c, p.epsilon
    thr_scale = 2.0 * c / (eps / 2.0)  # Algorithm 3 line 1/11 with Sparse's epsilon = eps/2
    query_scale = 4.0 * c / (eps / 2.0)  # Algorithm 3 line 6
    node_scale = 2.0 * c / eps  # Algorithm 1 line 11
    cut = p.tau - p.Delta - p.R  # Algorithm 1 line 12
    # Sparse state per forest tree, sorted by tree id, created at the tree's first query
    state_ids = np.zeros(0, dtype=np.int64)
    state_thr = np.zeros(0, dtype=np.float64)
    state_t = np.zeros(0, dtype=np.int64)
    for j in range(L - 1, -1, -1):
        if j + 1 < L:  # ancestors of top nodes are top (line 13) and leave S_j
            par = np.asarray(tree.parents[j + 1], dtype=np.int64)
            hit = par[np.flatnonzero(top[j + 1])]
            hit = hit[in_forest[j][hit]]  # ancestors within the same forest tree only
            if hit.size:
                top[j][hit] = True
        S = np.flatnonzero(in_forest[j] & ~top[j])
        if S.size == 0:
            continue
        groups, fmax, inv = _group_max(tree_of[j][S], w[j][S])
        # look up / create Sparse state of these trees
        if state_ids.size:
            pos = np.minimum(np.searchsorted(state_ids, groups), state_ids.size - 1)
            known = state_ids[pos] == groups
        else:
            known = np.zeros(groups.size, dtype=bool)
        new = groups[~known]
        if new.size:
            thr0 = p.tau + discrete_laplace(src, thr_scale, new.size)
            state_ids = np.concatenate([state_ids, new])
            state_thr = np.concatenate([state_thr, thr0.astype(np.float64)])
            state_t = np.concatenate([state_t, np.zeros(new.size, dtype=np.int64)])
            order = np.argsort(state_ids, kind="stable")
            state_ids, state_thr, state_t = state_ids[order], state_thr[order], state_t[order]
        k = np.searchsorted(state_ids, groups)
        answering = state_t[k] < c  # line 3: after c tops, answer bottom without noise
        answer = np.zeros(groups.size, dtype=bool)
        a_idx = np.flatnonzero(answering)
        if a_idx.size:
            noisy = fmax[a_idx] + discrete_laplace(src, query_scale, a_idx.size)
            answer[a_idx] = noisy >= state_thr[k[a_idx]]
        t_idx = np.flatnonzero(answer)
        if t_idx.size:  # line 11 of Algorithm 3: fresh threshold, count the top
            state_t[k[t_idx]] += 1
            state_thr[k[t_idx]] = p.tau + discrete_laplace(src, thr_scale, t_idx.size)
        nodes = S[answer[inv]]  # Algorithm 1 lines 10-18 for trees answered top
        if nodes.size:
            noisy_w = w[j][nodes] + truncated_discrete_laplace(src, node_scale, p.B, nodes.size)
            top[j][nodes[noisy_w >= cut]] = True
    return top


def reduction(
    src: RandomSource,
    tree: Tree,
    w: Sequence[np.ndarray],
    M0: float,
    rounds: Sequence[RoundParams],
    d: int,
) -> list[np.ndarray]:
    """Reduction (Algorithm 2): for i = ell down to 1, classify the forest F_i with round i's
    parameters; every top node of F_i (an ancestor in its forest tree of a transition node) gets
    the estimate M_i and leaves the forest; the rest of F_i is F_{i-1} (reading note 4). Nodes
    left in F_0 get M_0. (eps, delta) = (sum eps_i, sum delta_i) by composition (Fact 2.3)."""
    L = tree.depth
    est = [np.full(tree.sizes[j], M0, dtype=np.float64) for j in range(L)]
    in_forest = [np.ones(tree.sizes[j], dtype=bool) for j in range(L)]
    offsets = np.concatenate([[0], np.cumsum(tree.sizes)]).astype(np.int64)
    tree_of = [np.zeros(tree.sizes[j], dtype=np.int64) for j in range(L)]
    for p in sorted(rounds, key=lambda r: -r.i):
        top = classification_forest(src, tree, w, in_forest, tree_of, p, d)
        for j in range(L):
            est[j][top[j]] = p.M
            in_forest[j] &= ~top[j]
        # forest trees of F_{i-1}: a node whose parent left the forest roots a new tree
        for j in range(1, L):
            par = np.asarray(tree.parents[j], dtype=np.int64)
            root_here = ~in_forest[j - 1][par]
            tree_of[j] = np.where(root_here, offsets[j] + np.arange(tree.sizes[j]), tree_of[j - 1][par])
        if not any(f.any() for f in in_forest):
            break
    return est


@dataclass
class MultiplicativeResult:
    """Output of :func:`mrmse_wrapper`: final estimates, the pieces it clamps, and parameters."""

    estimate: list[np.ndarray]
    w_est: list[np.ndarray]
    window_center: list[np.ndarray]
    window: int
    M: int
    info: dict[str, Any] = field(default_factory=dict)


def estimation(
    src: RandomSource,
    tree: Tree,
    w: Sequence[np.ndarray],
    *,
    alpha: float,
    epsilon: float,
    delta: float,
    eta: float,
    tau_min: float,
) -> tuple[list[np.ndarray], int, dict[str, Any]]:
    """Estimation (Algorithm 4, Corollary 4.7): (eps, delta)-DP for any tau_min.

    Line 2: M = w_root + B + TruncLap(2/eps, B), B the lattice bound for (eps/2, delta/2)
    (reading note 2), so M >= w_root always; lines 3-5: :func:`estimation_schedule` and
    :func:`reduction` with (eps/2, delta/2) in total. (alpha, eta)-accurate for Problem 3.1 with
    thresholds tau_u = tau_min when tau_min >= :func:`corollary_4_7_tau_min`. A round whose budget
    is too small for the samplers (far below tau_min's accuracy condition: a small tau_min, a total
    near 2^61) is not run (:func:`drawable`): it spends nothing, and its nodes stay for the next
    rounds; every estimate is still clamped to its window.
    """
    d = tree.depth
    B0 = truncated_laplace_bound(epsilon / 2.0, delta / 2.0)
    root = int(np.asarray(w[0])[0])
    M = root + B0 + int(truncated_discrete_laplace(src, 2.0 / epsilon, B0, 1)[0])
    beta, q, M0, rounds = estimation_schedule(float(max(M, 0)), alpha, epsilon, delta, eta, tau_min, d)
    est = reduction(src, tree, w, M0, [r for r in rounds if drawable(r)], d)
    info = {
        "M": M,
        "M_bound": B0,
        "beta": beta,
        "q": q,
        "M0": M0,
        "ell": len(rounds),
        "eps_spent_rounds": float(sum(r.epsilon for r in rounds)),
        "delta_spent_rounds": float(sum(r.delta for r in rounds)),
        "sparse_cutoffs": sorted({r.c for r in rounds}),
    }
    return est, M, info


_UNIT = Interval(Real, 0, 1, closed="neither")


@validate_params({"alpha": [_UNIT], "epsilon": [Interval(Real, 0, None, closed="neither")], "delta": [_UNIT],
                  "eta": [None, _UNIT], "tau_min": [None, Interval(Real, 0, None, closed="neither")]})
def mrmse_wrapper(
    src: RandomSource,
    tree: Tree,
    w: Sequence[np.ndarray],
    *,
    alpha: float,
    epsilon: float,
    delta: float,
    eta: float | None = None,
    tau_min: float | None = None,
) -> MultiplicativeResult:
    """Theorem 4.1's algorithm: Lemma 3.3's wrapper (Appendix A.3) around Estimation.

    Estimation runs with (eps/2, delta/2) and eta = 1/d^2 (Theorem 4.1's proof) unless given;
    every node also gets w''_u = w_u + TruncLap(1/eps', B) with eps' = eps/(2d),
    delta' = delta/(2d) (nodes of one depth are disjoint: parallel composition; d depths:
    basic composition gives (eps/2, delta/2)). The output clamps Estimation's value into
    [w''_u - B, w''_u + B], a window that always contains w_u, so |error| <= 2B always.
    Privacy: (eps, delta)-DP for every tau_min > 0; the accuracy bound of Theorem 4.1 holds
    when tau_min >= :func:`theorem_4_1_tau_min` (the default).
    """
    d = tree.depth
    if eta is None:
        eta = 1.0 / d**2
    if tau_min is None:
        tau_min = theorem_4_1_tau_min(alpha, epsilon, delta, d)
    est, M, info = estimation(
        src, tree, w, alpha=alpha, epsilon=epsilon / 2.0, delta=delta / 2.0, eta=eta, tau_min=tau_min
    )
    eps_p = epsilon / (2.0 * d)
    delta_p = delta / (2.0 * d)
    B = truncated_laplace_bound(eps_p, delta_p)
    centers = []
    final = []
    for j in range(d):
        wj = np.asarray(w[j], dtype=np.int64)
        center = wj + truncated_discrete_laplace(src, 1.0 / eps_p, B, wj.size)
        centers.append(center)
        final.append(np.clip(est[j], center - B, center + B))
    info.update({"window": B, "eta": eta, "tau_min": tau_min})
    return MultiplicativeResult(estimate=final, w_est=est, window_center=centers, window=B, M=M, info=info)
