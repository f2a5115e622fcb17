"""Empirical privacy audits: a lower bound on epsilon from many runs of a mechanism.

An audit runs a mechanism ``n`` times on each of two neighbouring datasets ``d0`` and ``d1``
(chosen as worst cases), picks the most revealing output event ``S`` on a *selection* sample,
then counts how often ``S`` occurs on *fresh evaluation* samples and computes, with
Clopper-Pearson intervals at total significance ``alpha`` (``alpha/2`` for each of the two
one-sided bounds),

    eps_lb = log((p1_lower - delta) / p2_upper),

where p1_lower is the lower confidence bound of P[M(d_a) in S] and p2_upper the upper bound of
P[M(d_b) in S] ((a, b) is the direction chosen on the selection sample). If the mechanism is
(epsilon, delta)-DP then P[M(d_a) in S] <= e^epsilon P[M(d_b) in S] + delta for every S, so
``eps_lb > epsilon`` happens with probability at most ``alpha``: the audit *fails* (flags a
privacy violation) exactly when ``eps_lb`` exceeds the claimed epsilon.

Events. The output of a run is mapped to a real score by a statistic (by default: the output
itself if it is a number, else its projection on the difference of the two selection-sample
means; registered mechanisms give the log-likelihood ratio of their claimed noise). Scores are
grouped into categories (their distinct values, or at most ``max_bins`` quantile bins). The
candidate events are the unions of the top-k categories ordered by score (from either end) and
by their empirical likelihood ratio; the one with the largest selection-sample bound is kept.
Choosing on one sample and evaluating on another keeps the bound valid.

Randomness. The harness draws no random numbers itself: it passes integer seeds (derived by
hashing the audit seed, the pair, the phase and the dataset) to the mechanism's seeded ``rng``
argument, so only :mod:`dptree.noise` draws randomness (for dptree's own mechanisms).

Registry. Every public mechanism of dptree registers a :class:`MechanismSpec` with
:func:`register`: its name, the public functions it covers, its neighbouring relation, its
claimed (epsilon, delta), a batched sampler and a generator of worst-case neighbouring pairs.
``tests/test_audit.py`` audits every registered spec and fails when a public function of
:mod:`dptree` that releases something is not covered. See docs/verification.md.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from dptree.errors import InvalidParameterError

__all__ = [
    "NeighbourPair",
    "MechanismSpec",
    "PairResult",
    "AuditReport",
    "AuditConfig",
    "FAST",
    "SLOW",
    "register",
    "registered",
    "get",
    "NOT_MECHANISMS",
    "unregistered_public_mechanisms",
    "audit",
    "audit_pair",
    "clopper_pearson",
    "epsilon_lower_bound",
    "derive_seed",
    "repeat",
    "laplace_llr",
    "gaussian_llr",
    "brute_force_sensitivity",
    "neighbouring_datasets",
    "range_tree_leaf_histogram",
    "range_tree_noised_counts",
    "range_tree_batch",
    "range_tree_spec",
]


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class AuditConfig:
    """Sample sizes (per dataset) and significance of an audit."""

    n_select: int = 10_000
    n_eval: int = 30_000
    alpha: float = 1e-3
    max_bins: int = 64
    chunk: int = 25_000


FAST = AuditConfig()
SLOW = AuditConfig(n_select=100_000, n_eval=300_000)


# --------------------------------------------------------------------------- data types


@dataclass(frozen=True)
class NeighbourPair:
    """Two neighbouring datasets under the spec's relation, and optionally a test statistic.

    ``statistic(outputs) -> scores`` maps an array of ``n`` outputs (first axis) to ``n`` real
    scores; events are sets of scores. It may use anything public (the two datasets, the claimed
    noise), never the samples of the evaluation phase.
    """

    label: str
    d0: Any
    d1: Any
    statistic: Callable[[np.ndarray], np.ndarray] | None = None


@dataclass
class MechanismSpec:
    """What the audit needs to know about a public mechanism.

    * ``name``: unique registry key, e.g. ``"range_tree/laplace/add_remove"``;
    * ``covers``: the public functions of :mod:`dptree` this spec audits;
    * ``neighbors``: the neighbouring relation the claim is about (``"add_remove"``,
      ``"replace"``, ``"add_remove_user(k=3)"``, ...);
    * ``epsilon``, ``delta``: the claimed guarantee;
    * ``sample(dataset, n, seed)``: ``n`` independent outputs of the mechanism on ``dataset``
      (first axis of the returned array), using only the integer ``seed`` for randomness
      (pass it, or seeds derived from it, to the mechanism's ``rng`` argument; see :func:`repeat`);
    * ``worst_cases()``: the neighbouring pairs to audit;
    * ``release(dataset, seed)``: the whole release object the public function returns on
      ``dataset`` with ``rng=seed`` (the privacy-boundary test compares its fields on neighbours).
    """

    name: str
    covers: tuple[str, ...]
    neighbors: str
    epsilon: float
    delta: float
    sample: Callable[[Any, int, int], np.ndarray]
    worst_cases: Callable[[], Iterable[NeighbourPair]]
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. {"plan": RangeTreePlan} for checks
    release: Callable[[Any, int], Any] | None = None


@dataclass(frozen=True)
class PairResult:
    """The audit of one neighbouring pair."""

    label: str
    direction: str  # "d0>d1" (P[M(d0) in S] vs P[M(d1) in S]) or "d1>d0"
    event: str
    count_a: int
    count_b: int
    n: int
    p_a_lower: float
    p_b_upper: float
    epsilon_lower_bound: float
    selection_bound: float

    def passed(self, epsilon: float) -> bool:
        return not self.epsilon_lower_bound > epsilon


@dataclass
class AuditReport:
    """The audit of every worst-case pair of one mechanism."""

    name: str
    epsilon: float
    delta: float
    config: AuditConfig
    pairs: list[PairResult] = field(default_factory=list)

    @property
    def epsilon_lower_bound(self) -> float:
        return max((p.epsilon_lower_bound for p in self.pairs), default=-math.inf)

    @property
    def passed(self) -> bool:
        return all(p.passed(self.epsilon) for p in self.pairs)

    @property
    def failures(self) -> list[PairResult]:
        return [p for p in self.pairs if not p.passed(self.epsilon)]

    def summary(self) -> str:
        lines = [
            f"{self.name}: claimed ({self.epsilon:g}, {self.delta:g}); "
            f"{'PASS' if self.passed else 'FAIL'}; eps lower bound {self.epsilon_lower_bound:.3f}"
        ]
        for p in self.pairs:
            lines.append(
                f"  {p.label}: {p.direction} event {p.event}: {p.count_a}/{p.n} vs {p.count_b}/{p.n}, "
                f"eps_lb {p.epsilon_lower_bound:.3f}"
            )
        return "\n".join(lines)


# --------------------------------------------------------------------------- registry

_REGISTRY: dict[str, MechanismSpec] = {}

#: Public functions of :mod:`dptree` that release nothing (no noise is drawn by them or by the
#: objects they return). Every other public function must be covered by a registered spec.
NOT_MECHANISMS: frozenset[str] = frozenset(
    {"make_domain", "load", "method_requirements", "leaf_histogram", "to_numpy"}  # release nothing
)


def register(spec: MechanismSpec) -> MechanismSpec:
    """Add ``spec`` to the registry (replacing a spec of the same name); returns it."""
    if not isinstance(spec, MechanismSpec):
        raise InvalidParameterError("register() takes a MechanismSpec")
    if not (spec.epsilon > 0 and 0 <= spec.delta < 1):
        raise InvalidParameterError(f"{spec.name}: the claim needs epsilon > 0 and delta in [0, 1)")
    _REGISTRY[spec.name] = spec
    return spec


def registered() -> list[MechanismSpec]:
    """Every registered spec, in registration order."""
    return list(_REGISTRY.values())


def get(name: str) -> MechanismSpec:
    return _REGISTRY[name]


def unregistered_public_mechanisms() -> list[str]:
    """Public functions in ``dptree.__all__`` that may release something but no spec covers."""
    import inspect

    import dptree

    covered = {c for s in _REGISTRY.values() for c in s.covers}
    missing = []
    for name in dptree.__all__:
        obj = getattr(dptree, name, None)
        if not inspect.isfunction(obj):
            continue  # classes (release objects, budgets, errors) and constants
        if name in NOT_MECHANISMS or name in covered:
            continue
        missing.append(name)
    return missing


# --------------------------------------------------------------------------- statistics


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """One-sided Clopper-Pearson bounds, each at level ``alpha``: (lower, upper) for k/n."""
    from scipy.stats import beta

    if n <= 0:
        raise InvalidParameterError("clopper_pearson needs n > 0")
    lo = 0.0 if k <= 0 else float(beta.ppf(alpha, k, n - k + 1))
    hi = 1.0 if k >= n else float(beta.ppf(1.0 - alpha, k + 1, n - k))
    return lo, hi


def epsilon_lower_bound(k_a: int, k_b: int, n: int, alpha: float, delta: float) -> tuple[float, float, float]:
    """(eps_lb, p_a_lower, p_b_upper) at total significance ``alpha`` (alpha/2 per bound)."""
    pa, _ = clopper_pearson(k_a, n, alpha / 2.0)
    _, pb = clopper_pearson(k_b, n, alpha / 2.0)
    num = pa - delta
    if num <= 0.0:
        return -math.inf, pa, pb
    return math.log(num / pb), pa, pb


def _fast_bounds(k_a: np.ndarray, k_b: np.ndarray, n: int, alpha: float, delta: float) -> np.ndarray:
    """Vectorised :func:`epsilon_lower_bound` for candidate events (selection phase)."""
    from scipy.stats import beta

    a = alpha / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        pa = np.where(k_a > 0, beta.ppf(a, np.maximum(k_a, 1), n - k_a + 1), 0.0)
        pb = np.where(k_b < n, beta.ppf(1.0 - a, k_b + 1, np.maximum(n - k_b, 1)), 1.0)
        num = pa - delta
        out = np.where(num > 0, np.log(np.maximum(num, 1e-300) / pb), -np.inf)
    return out


def derive_seed(*parts: Any) -> int:
    """A deterministic 63-bit seed from ``parts`` (a hash, not a random draw)."""
    h = hashlib.sha256(repr(parts).encode()).digest()
    return int.from_bytes(h[:8], "little") >> 1


def repeat(run: Callable[[Any, int], Any]) -> Callable[[Any, int, int], np.ndarray]:
    """Turn ``run(dataset, seed) -> output`` (one release) into a batched ``sample``.

    Run ``i`` of a batch gets the seed ``derive_seed(seed, i)``. Slow (one release per output),
    but it needs nothing from the mechanism beyond its seeded ``rng`` argument.
    """

    def sample(dataset: Any, n: int, seed: int) -> np.ndarray:
        return np.asarray([run(dataset, derive_seed(seed, i)) for i in range(n)])

    return sample


def laplace_llr(c0: np.ndarray, c1: np.ndarray, scales: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """log P0(y)/P1(y) for y = c + discrete Laplace noise (per-coordinate ``scales``).

    (|y - c1| - |y - c0|) / scale, summed over coordinates where c0 != c1.
    """
    c0 = np.asarray(c0, dtype=np.float64)
    c1 = np.asarray(c1, dtype=np.float64)
    s = np.broadcast_to(np.asarray(scales, dtype=np.float64), c0.shape)
    idx = np.flatnonzero(c0 != c1)

    def stat(y: np.ndarray) -> np.ndarray:
        yy = np.asarray(y, dtype=np.float64)[:, idx]
        return ((np.abs(yy - c1[idx]) - np.abs(yy - c0[idx])) / s[idx]).sum(axis=1)

    return stat


def gaussian_llr(c0: np.ndarray, c1: np.ndarray, sigma2: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """log P0(y)/P1(y) for y = c + discrete Gaussian noise (per-coordinate ``sigma2``)."""
    c0 = np.asarray(c0, dtype=np.float64)
    c1 = np.asarray(c1, dtype=np.float64)
    s2 = np.broadcast_to(np.asarray(sigma2, dtype=np.float64), c0.shape)
    idx = np.flatnonzero(c0 != c1)

    def stat(y: np.ndarray) -> np.ndarray:
        yy = np.asarray(y, dtype=np.float64)[:, idx]
        d = c0[idx] - c1[idx]
        return ((yy - (c0[idx] + c1[idx]) / 2.0) * d / s2[idx]).sum(axis=1)

    return stat


# --------------------------------------------------------------------------- the audit


def _sample_scores(
    spec: MechanismSpec,
    data: Any,
    n: int,
    seed_parts: tuple[Any, ...],
    config: AuditConfig,
    stat: Callable[[np.ndarray], np.ndarray] | None,
) -> np.ndarray:
    """Scores of ``n`` fresh outputs, sampled in chunks (bounded memory)."""
    out = []
    done = 0
    chunk_no = 0
    while done < n:
        m = min(config.chunk, n - done)
        outputs = np.asarray(spec.sample(data, m, derive_seed(*seed_parts, chunk_no)))
        if outputs.shape[:1] != (m,):
            raise InvalidParameterError(f"{spec.name}: sample() returned shape {outputs.shape}, expected ({m}, ...)")
        out.append(outputs if stat is None else np.asarray(stat(outputs), dtype=np.float64))
        done += m
        chunk_no += 1
    return np.concatenate(out, axis=0)


def _default_statistic(o0: np.ndarray, o1: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    if o0.ndim == 1:
        return lambda y: np.asarray(y, dtype=np.float64)
    f0 = o0.reshape(o0.shape[0], -1).astype(np.float64)
    f1 = o1.reshape(o1.shape[0], -1).astype(np.float64)
    w = f0.mean(axis=0) - f1.mean(axis=0)
    return lambda y: np.asarray(y, dtype=np.float64).reshape(len(y), -1) @ w


class _Categories:
    """A map from scores to category indices, fixed on the selection sample."""

    def __init__(self, pooled: np.ndarray, max_bins: int) -> None:
        values = np.unique(pooled)
        if values.size <= max_bins:
            self.values: np.ndarray | None = values
            self.edges = np.empty(0)
            self.count = values.size
        else:
            self.values = None
            qs = np.quantile(pooled, np.linspace(0, 1, max_bins + 1)[1:-1], method="inverted_cdf")
            self.edges = np.unique(qs)
            self.count = self.edges.size + 1

    def __call__(self, s: np.ndarray) -> np.ndarray:
        if self.values is not None:
            i = np.searchsorted(self.values, s)
            i = np.minimum(i, self.values.size - 1)
            return np.where(self.values[i] == s, i, -1)  # unseen values belong to no event
        return np.searchsorted(self.edges, s, side="right")

    def describe(self, members: np.ndarray) -> str:
        members = np.sort(members)
        if self.values is not None:
            vals = self.values[members]
            shown = ", ".join(f"{v:.4g}" for v in vals[:6]) + (", ..." if vals.size > 6 else "")
            return f"score in {{{shown}}}"
        lo = np.concatenate([[-np.inf], self.edges])
        hi = np.concatenate([self.edges, [np.inf]])
        parts = [f"[{lo[m]:.4g}, {hi[m]:.4g})" for m in members[:4]]
        return "score in " + " u ".join(parts) + (" u ..." if members.size > 4 else "")


def _select_event(
    cat0: np.ndarray, cat1: np.ndarray, n: int, ncat: int, alpha: float, delta: float
) -> tuple[int, np.ndarray, float]:
    """The (direction, member categories, selection bound) of the best candidate event."""
    c0 = np.bincount(cat0[cat0 >= 0], minlength=ncat).astype(np.int64)
    c1 = np.bincount(cat1[cat1 >= 0], minlength=ncat).astype(np.int64)
    best = (-math.inf, 0, np.arange(0))
    for direction, (ca, cb) in enumerate(((c0, c1), (c1, c0))):
        ratio = (ca + 0.5) / (cb + 0.5)
        orders = [np.arange(ncat), np.arange(ncat)[::-1], np.argsort(-ratio, kind="stable")]
        for order in orders:
            ka = np.cumsum(ca[order])
            kb = np.cumsum(cb[order])
            bounds = _fast_bounds(ka, kb, n, alpha, delta)
            k = int(np.argmax(bounds))
            if bounds[k] > best[0]:
                best = (float(bounds[k]), direction, order[: k + 1].copy())
    return best[1], best[2], best[0]


def audit_pair(
    spec: MechanismSpec,
    pair: NeighbourPair,
    *,
    config: AuditConfig = FAST,
    seed: int = 0,
    statistic: Callable[[np.ndarray], np.ndarray] | None = None,
) -> PairResult:
    """Audit one neighbouring pair: select an event, evaluate it on fresh samples."""
    stat = statistic or pair.statistic
    key = (spec.name, pair.label, seed)
    sel0 = _sample_scores(spec, pair.d0, config.n_select, key + ("select", 0), config, stat)
    sel1 = _sample_scores(spec, pair.d1, config.n_select, key + ("select", 1), config, stat)
    if stat is None:
        stat = _default_statistic(sel0, sel1)
        sel0, sel1 = stat(sel0), stat(sel1)
    cats = _Categories(np.concatenate([sel0, sel1]), config.max_bins)
    direction, members, sel_bound = _select_event(
        cats(sel0), cats(sel1), config.n_select, cats.count, config.alpha, spec.delta
    )
    ev0 = _sample_scores(spec, pair.d0, config.n_eval, key + ("eval", 0), config, stat)
    ev1 = _sample_scores(spec, pair.d1, config.n_eval, key + ("eval", 1), config, stat)
    in_event = np.zeros(cats.count + 1, dtype=bool)  # last slot: category -1 (unseen)
    in_event[members] = True
    k0 = int(in_event[cats(ev0)].sum())
    k1 = int(in_event[cats(ev1)].sum())
    ka, kb = (k0, k1) if direction == 0 else (k1, k0)
    eps_lb, pa, pb = epsilon_lower_bound(ka, kb, config.n_eval, config.alpha, spec.delta)
    return PairResult(
        label=pair.label,
        direction="d0>d1" if direction == 0 else "d1>d0",
        event=cats.describe(members) if members.size else "(empty)",
        count_a=ka,
        count_b=kb,
        n=config.n_eval,
        p_a_lower=pa,
        p_b_upper=pb,
        epsilon_lower_bound=eps_lb,
        selection_bound=sel_bound,
    )


def audit(spec: MechanismSpec, *, config: AuditConfig = FAST, seed: int = 0) -> AuditReport:
    """Audit every worst-case pair of ``spec``; the report fails if any pair's bound exceeds epsilon."""
    report = AuditReport(name=spec.name, epsilon=spec.epsilon, delta=spec.delta, config=config)
    for pair in spec.worst_cases():
        report.pairs.append(audit_pair(spec, pair, config=config, seed=seed))
    return report


# --------------------------------------------------------------------------- sensitivity


def neighbouring_datasets(
    domain_size: int, max_records: int, relation: str = "add_remove", k: int = 1
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every neighbouring pair of leaf histograms on a tiny domain (brute force).

    Datasets are multisets of leaves with at most ``max_records`` records. ``relation``:
    ``"add_remove"`` (d1 = d0 plus up to ``k`` records: a user with <= k records) or ``"replace"``
    (one record of d0 moved to another leaf). Each unordered pair appears once.
    """
    from itertools import combinations_with_replacement

    def multisets(size: int) -> Iterator[np.ndarray]:
        for combo in combinations_with_replacement(range(domain_size), size):
            yield np.bincount(np.asarray(combo, dtype=np.int64), minlength=domain_size)

    for n0 in range(max_records + 1):
        for h0 in multisets(n0):
            if relation == "add_remove":
                for extra in range(1, k + 1):
                    for add in multisets(extra):
                        yield h0, h0 + add
            elif relation == "replace":
                for src in np.flatnonzero(h0):
                    for dst in range(domain_size):
                        if dst > src:  # unordered: moving src->dst and dst->src are the same pair
                            h1 = h0.copy()
                            h1[src] -= 1
                            h1[dst] += 1
                            yield h0, h1
            else:
                raise InvalidParameterError(f"unknown neighbouring relation {relation!r}")


def brute_force_sensitivity(
    query: Callable[[np.ndarray], np.ndarray], pairs: Iterable[tuple[Any, Any]]
) -> tuple[float, float]:
    """(max L1, max L2) of ``query(d0) - query(d1)`` over the given neighbouring pairs."""
    l1 = l2 = 0.0
    for d0, d1 in pairs:
        diff = np.asarray(query(d0), dtype=np.float64) - np.asarray(query(d1), dtype=np.float64)
        l1 = max(l1, float(np.abs(diff).sum()))
        l2 = max(l2, float(np.sqrt((diff * diff).sum())))
    return l1, l2


# --------------------------------------------------------------------------- the range tree


def range_tree_leaf_histogram(plan: Any, values: Any) -> np.ndarray:
    """The leaf histogram ``range_tree`` computes from ``values`` (same validation and clamping)."""
    from dptree.data.domain import coerce_values

    vals = coerce_values(values, plan.domain)
    leaves = plan.domain.to_leaves(vals)
    return np.bincount(leaves, minlength=plan.layout.padded_size)


def range_tree_noised_counts(plan: Any, hist: np.ndarray) -> np.ndarray:
    """True counts of the nodes a release noises (noised levels, root first, concatenated)."""
    levels = plan.layout.level_counts(np.asarray(hist, dtype=np.int64))
    return np.concatenate([c for c, p in zip(levels, plan.noise_parameters) if p is not None])


def range_tree_batch(plan: Any, hist: np.ndarray, n: int, seed: int) -> np.ndarray:
    """``n`` independent releases of ``plan`` on ``hist`` in one call of ``RangeTreePlan.release``.

    The ``n`` copies of the tree hang under a virtual super-root (not measured; exact under
    replace neighbours, like the root), so one call of the library's own release code draws the
    noise of all of them from ``rng=seed``. Returns the noisy counts of the noised levels, shape
    (n, nodes). With ``n = 1`` the draws happen in the same order as ``plan.release(hist, seed)``
    and the output is identical (tested).
    """
    from dptree.rangetree.layout import TreeLayout

    lay = plan.layout
    forest = TreeLayout(
        domain_size=n * lay.padded_size, branching=max(lay.branching, n), fanouts=(n,) + tuple(lay.fanouts)
    )
    var = np.asarray(plan.level_variance, dtype=np.float64).copy()
    if plan.root_exact:
        var[0] = np.inf  # the copies' roots are not measured; the super-root is exact
        top = 0.0
    else:
        top = np.inf
    forest_plan = dataclasses.replace(
        plan,
        layout=forest,
        noise_parameters=[None] + list(plan.noise_parameters),
        level_variance=np.concatenate([[top], var]),
        weights=np.concatenate([[0.0], np.asarray(plan.weights, dtype=np.float64)]),
    )
    tiled = np.tile(np.asarray(hist, dtype=np.int64), n)
    rel = forest_plan.release(tiled, rng=seed)
    cols = []
    for j, p in enumerate(plan.noise_parameters):
        if p is None:
            continue
        m = rel.measurements[j + 1]
        assert m is not None
        cols.append(m.reshape(n, lay.level_sizes[j]))
    return np.concatenate(cols, axis=1)


def _claimed_level_parameters(plan: Any) -> dict[int, float]:
    """Noise parameter of each noised level as stated in the privacy statement (the claim)."""
    key = "laplace_scale" if plan.noise == "laplace" else "gaussian_sigma2"
    return {int(lv["level"]): float(lv[key]) for lv in plan.statement["levels"]}


def range_tree_spec(
    name: str,
    *,
    plan: Any,
    epsilon: float,
    delta: float,
    pairs: Sequence[tuple[str, Any, Any]],
    neighbors: str | None = None,
    covers: tuple[str, ...] = ("range_tree", "plan_range_tree"),
    description: str = "",
) -> MechanismSpec:
    """A spec auditing the range-tree release made by ``plan`` (a :class:`RangeTreePlan`).

    ``pairs``: (label, values0, values1) of neighbouring datasets, given as raw values (they go
    through the same validation, clamping and bucketing as :func:`dptree.range_tree`). The
    statistic of each pair is the log-likelihood ratio of the *claimed* noise (the scales in the
    plan's privacy statement) on the nodes whose counts differ.
    """

    def sample(values: Any, n: int, seed: int) -> np.ndarray:
        return range_tree_batch(plan, range_tree_leaf_histogram(plan, values), n, seed)

    def worst_cases() -> Iterator[NeighbourPair]:
        claimed = _claimed_level_parameters(plan)
        per_node = np.concatenate(
            [
                np.full(size, claimed.get(j, np.nan))
                for j, (size, p) in enumerate(zip(plan.layout.level_sizes, plan.noise_parameters))
                if p is not None
            ]
        )
        for label, v0, v1 in pairs:
            c0 = range_tree_noised_counts(plan, range_tree_leaf_histogram(plan, v0))
            c1 = range_tree_noised_counts(plan, range_tree_leaf_histogram(plan, v1))
            llr = laplace_llr if plan.noise == "laplace" else gaussian_llr
            yield NeighbourPair(label, v0, v1, statistic=llr(c0, c1, per_node))

    return MechanismSpec(
        name=name,
        covers=covers,
        neighbors=neighbors or plan.neighbors,
        epsilon=epsilon,
        delta=delta,
        sample=sample,
        worst_cases=worst_cases,
        description=description,
        extra={"plan": plan},
        release=lambda values, seed: plan.release(range_tree_leaf_histogram(plan, values), seed),
    )


def _register_range_trees() -> None:
    """The range-tree configurations every test run audits (DESIGN section 3 worst cases).

    Small trees keep the audits fast: D = 6 leaves with b = 3 has fan-outs (3, 2), so the bottom
    fan-out differs from b, and 9 noised nodes (root not measured under the uniform rule).
    """
    from dptree.privacy.budget import zcdp_epsilon
    from dptree.rangetree.release import plan_range_tree

    base = [1, 2, 2, 4, 5, 5]  # records already present; the pairs differ by one person
    p = plan_range_tree(lower=0, upper=5, epsilon=1.0, branching=3)
    register(
        range_tree_spec(
            "range_tree/laplace/add_remove",
            plan=p,
            epsilon=1.0,
            delta=0.0,
            pairs=[
                ("add one record (changes every level)", base, base + [3]),
                ("add a record at the lower boundary leaf", base, base + [0]),
                ("add a record clamped into the upper boundary leaf", base, base + [10**9]),
            ],
            description="pure eps = 1, uniform levels",
        )
    )
    p = plan_range_tree(lower=0, upper=5, epsilon=1.0, branching=2, levels="optimal")
    register(
        range_tree_spec(
            "range_tree/laplace/add_remove/optimal_levels",
            plan=p,
            epsilon=1.0,
            delta=0.0,
            pairs=[
                ("add one record (changes every level)", base, base + [3]),
                ("empty dataset vs a record at the upper boundary leaf", [], [5]),
            ],
            description="pure eps = 1, per-level budgets from the closed form (unequal scales)",
        )
    )
    p = plan_range_tree(lower=0, upper=5, epsilon=1.0, branching=3, neighbors="replace")
    register(
        range_tree_spec(
            "range_tree/laplace/replace",
            plan=p,
            epsilon=1.0,
            delta=0.0,
            pairs=[
                ("replace: lowest leaf -> highest leaf", base + [0], base + [5]),
                ("replace: adjacent leaves in different subtrees", base + [1], base + [2]),
            ],
            description="pure eps = 1, n public (root exact)",
        )
    )
    p = plan_range_tree(lower=0, upper=5, epsilon=2.0, branching=3, max_contributions=3)
    register(
        range_tree_spec(
            "range_tree/laplace/user_k3",
            plan=p,
            epsilon=2.0,
            delta=0.0,
            neighbors="add_remove_user(k=3)",
            pairs=[
                ("user with 3 records in one leaf", base, base + [4, 4, 4]),
                ("user with 3 records in the boundary leaves", base, base + [0, 5, 5]),
            ],
            description="pure eps = 2, at most 3 records per person",
        )
    )
    p = plan_range_tree(lower=0.0, upper=1.0, width=0.25, epsilon=1.0, branching=2)
    register(
        range_tree_spec(
            "range_tree/laplace/float_domain",
            plan=p,
            epsilon=1.0,
            delta=0.0,
            pairs=[
                ("add a record at upper (closed last bucket)", [0.3, 0.5], [0.3, 0.5, 1.0]),
                ("add a record below lower (clamped)", [0.3, 0.5], [0.3, 0.5, -5.0]),
            ],
            description="pure eps = 1, float domain with 4 buckets",
        )
    )
    p = plan_range_tree(lower=0, upper=5, epsilon=1.0, delta=1e-6, branching=3, noise="gaussian")
    register(
        range_tree_spec(
            "range_tree/gaussian/add_remove",
            plan=p,
            epsilon=1.0,
            delta=1e-6,
            pairs=[
                ("add one record (changes every level)", base, base + [3]),
                ("add a record at the lower boundary leaf", base, base + [0]),
            ],
            description="(1, 1e-6)-DP by the exact discrete-Gaussian delta (issue 16)",
        )
    )
    p = plan_range_tree(lower=0, upper=5, rho=0.5, branching=3, noise="gaussian", neighbors="replace")
    register(
        range_tree_spec(
            "range_tree/gaussian/replace",
            plan=p,
            epsilon=zcdp_epsilon(0.5, 1e-6),
            delta=1e-6,
            pairs=[("replace: lowest leaf -> highest leaf", base + [0], base + [5])],
            description="rho = 0.5 zCDP, audited as the implied (eps, 1e-6)-DP",
        )
    )


_register_range_trees()


# --------------------------------------------------------------------------- hierarchy counts (seed 001)


def hierarchy_batch(
    hierarchy: Any,
    rows: Any,
    method: str,
    epsilon: float,
    delta: float,
    n: int,
    seed: int,
    weight: str | None = None,
) -> np.ndarray:
    """``n`` independent measurement vectors of ``hierarchy_counts`` from one integer ``seed``
    (``dptree.hierarchy.release.measurement_copies``; n = 1 reproduces ``hierarchy_counts(..., rng=seed)``)."""
    from dptree.hierarchy.release import measurement_copies

    return measurement_copies(
        rows, hierarchy, method=method, epsilon=epsilon, delta=delta, copies=n, rng=seed, weight=weight
    )


#: The weight column of the audit's weighted datasets (pandas DataFrames with the level columns).
HIERARCHY_WEIGHT = "weight"


def hierarchy_weighted_pair(hierarchy: Any) -> tuple[Any, Any]:
    """Issue 10, leak 4: weights [2^52, 2^52, 1] on one leaf vs the same plus one record. Summed
    in float64 (np.bincount(weights=...)), 2^53 + 1 rounds to 2^53 while 2^53 + 2 is exact, so
    every count on the leaf's path moves by 2 instead of 1 (twice the claimed epsilon)."""
    import pandas as pd

    leaf = hierarchy.leaf_paths()[0].split("/")
    lv = list(hierarchy.levels)

    def frame(ws: list[int]) -> Any:
        cols: dict[str, Any] = {c: [leaf[j]] * len(ws) for j, c in enumerate(lv)}
        cols[HIERARCHY_WEIGHT] = np.asarray(ws, dtype=np.int64)
        return pd.DataFrame(cols)

    return frame([2**52, 2**52, 1]), frame([2**52, 2**52, 1, 1])


def _centred(llr: Callable[..., Any], c0: np.ndarray, c1: np.ndarray, param: np.ndarray) -> Callable[..., Any]:
    """The log-likelihood-ratio statistic computed on y - c0 in exact int64, so counts near 2^53
    are not rounded by the float64 arithmetic of :func:`laplace_llr` / :func:`gaussian_llr`."""
    base = np.asarray(c0, dtype=np.int64)
    inner = llr(np.zeros(base.size), np.asarray(c1, dtype=np.int64) - base, param)
    return lambda y: inner(np.asarray(y, dtype=np.int64) - base)


def _register_hierarchies() -> None:
    """Laplace and Gaussian baselines (Corollary 2.7) on a depth-3 tree; worst cases: one record
    at a leaf (changes d counts by one), and a weighted pair whose totals straddle 2^53 (the
    weights must be summed exactly: issue 10, leak 4)."""
    from dptree.hierarchy.release import Hierarchy, hierarchy_counts, leaf_counts, node_weights

    h = Hierarchy.from_paths([("a", "x"), ("a", "y"), ("b", "z")])
    base = [("a", "x"), ("a", "y"), ("b", "z"), ("b", "z")]
    heavy0, heavy1 = hierarchy_weighted_pair(h)
    for method, eps, dlt in (("laplace", 1.0, 0.0), ("gaussian", 1.0, 1e-6)):
        probe = hierarchy_counts(base, h, epsilon=eps, delta=dlt, method=method, rng=0)  # type: ignore[arg-type]
        noise = probe.privacy["noise"]
        param = float(noise["scale"] if method == "laplace" else noise["sigma2"])

        def sample(
            rows: Any, n: int, seed: int, method: str = method, eps: float = eps, dlt: float = dlt
        ) -> np.ndarray:
            weight = HIERARCHY_WEIGHT if hasattr(rows, "columns") else None
            return hierarchy_batch(h, rows, method, eps, dlt, n, seed, weight=weight)

        def worst_cases(method: str = method, param: float = param) -> Iterator[NeighbourPair]:
            for label, r0, r1 in (
                ("add a record at a leaf", base, base + [("a", "x")]),
                ("remove the only record of a subtree", [("a", "y")], []),
                ("weights [2^52, 2^52, 1] at a leaf, add one record", heavy0, heavy1),
            ):
                weight = HIERARCHY_WEIGHT if hasattr(r0, "columns") else None
                c0 = np.concatenate(node_weights(leaf_counts(r0, h, weight=weight), h.parents))
                c1 = np.concatenate(node_weights(leaf_counts(r1, h, weight=weight), h.parents))
                per_node = np.full(h.n_nodes, param)
                llr = laplace_llr if method == "laplace" else gaussian_llr
                yield NeighbourPair(label, r0, r1, statistic=_centred(llr, c0, c1, per_node))

        def release(rows: Any, seed: int, method: str = method, eps: float = eps, dlt: float = dlt) -> Any:
            weight = HIERARCHY_WEIGHT if hasattr(rows, "columns") else None
            return hierarchy_counts(rows, h, epsilon=eps, delta=dlt, method=method, weight=weight,  # type: ignore[arg-type]
                                    rng=seed)

        claimed_eps = eps
        register(
            MechanismSpec(
                name=f"hierarchy_counts/{method}/add_remove",
                covers=("hierarchy_counts",),
                neighbors="add_remove",
                epsilon=claimed_eps,
                delta=dlt,
                sample=sample,
                worst_cases=worst_cases,
                description=f"{method} baseline on every node, depth {h.depth}",
                release=release,
                extra={"hierarchy": h, "method": method},
            )
        )


_register_hierarchies()


def _register_multiplicative() -> None:
    """The multiplicative-error algorithm of seed 001 (Theorem 4.1) at (1, 1e-6): one release per
    output, audited on its noisy released counts (the estimates of every node)."""
    from dptree.hierarchy.release import Hierarchy, hierarchy_counts

    h = Hierarchy.from_paths([("a", "x"), ("a", "y"), ("b", "z")])
    base = [("a", "x")] * 30 + [("b", "z")] * 12

    def release(rows: Any, seed: int) -> Any:
        return hierarchy_counts(rows, h, epsilon=1.0, delta=1e-6, method="multiplicative", alpha=0.5,
                                tau_min=20.0, rng=seed)

    def run(rows: Any, seed: int) -> np.ndarray:
        return np.asarray(release(rows, seed).estimates, dtype=np.float64)

    register(
        MechanismSpec(
            name="hierarchy_counts/multiplicative/add_remove",
            covers=("hierarchy_counts",),
            neighbors="add_remove",
            epsilon=1.0,
            delta=1e-6,
            sample=repeat(run),
            worst_cases=lambda: iter([
                NeighbourPair("add a record at a leaf", base, base + [("a", "x")]),
                NeighbourPair("remove the only record of a subtree", [("a", "y")], []),
            ]),
            description="Ghazi et al. Algorithms 1-4 with the Lemma 3.3 window, alpha = 0.5",
            release=release,
            extra={
                "fast": AuditConfig(n_select=200, n_eval=600),
                "slow": AuditConfig(n_select=600, n_eval=1_800),
            },
        )
    )


_register_multiplicative()


# --------------------------------------------------------------------------- interior points (seed 002)


#: Domain, claim and declared sizes of the tree-method audits (public parameters of the specs).
INTERIOR_TREE_AUDIT = {
    "lower": 0,
    "upper": 255,
    "epsilon": 1.0,
    "delta": 1e-6,
    "n_treelog": 2 * 10**6,
    "n_heavy": 10**8,
}


def interior_tree_pairs() -> dict[str, list[NeighbourPair]]:
    """Worst-case neighbours of the tree methods at the public parameters of
    :data:`INTERIOR_TREE_AUDIT`: datasets are ``(values, counts)`` point masses whose sizes sit on
    the data-size boundaries of the algorithms (TreeLog: |S| = 3t vs 3t + 1, where the removed
    ``n <= 3t`` shortcut switched mechanisms; HeavyPaths: the AboveThreshold threshold k/2 and
    ConstructPaths' |S| <= 10t halt, with a point mass and with spread data)."""
    from dptree.interior.points import _swap_budget, heavypaths_parameters, treelog_parameters

    a = INTERIOR_TREE_AUDIT
    size = int(a["upper"]) - int(a["lower"]) + 1
    e_in, d_in = _swap_budget(float(a["epsilon"]), float(a["delta"]))
    t = int(treelog_parameters(int(a["n_treelog"]), size, e_in, d_in)["t"])
    ph = heavypaths_parameters(int(a["n_heavy"]), size, e_in, d_in)
    k, th = int(ph["k"]), int(ph["t"])
    # every dataset below must fit the declared size, or the cap (not the algorithm) is audited
    assert 4 * t + 1 <= int(a["n_treelog"]) and 10 * th + 1 <= int(a["n_heavy"])
    return {
        "treelog/add_remove": [
            NeighbourPair(
                "TreeLog boundary: point mass at 85, |S| = 3t vs 3t + 1", ([85], [3 * t]), ([85], [3 * t + 1])
            ),
            NeighbourPair(
                "add a record below two clusters", ([3, 200], [2 * t, 2 * t]), ([0, 3, 200], [1, 2 * t, 2 * t])
            ),
        ],
        "treelog/replace": [
            NeighbourPair("replace one record of a 3t + 1 point mass", ([85], [3 * t + 1]), ([0, 85], [1, 3 * t])),
        ],
        "heavypaths/add_remove": [
            NeighbourPair("point mass at the StoppingPoint threshold k/2", ([85], [k // 2]), ([85], [k // 2 + 1])),
            NeighbourPair("point mass at the ConstructPaths halt |S| = 10t", ([85], [10 * th]), ([85], [10 * th + 1])),
            # spread data there: S_1 has no heavy element, so StoppingPoint needs S_2, which exists
            # for 10t + 1 records and, before issue 16, not for 10t (halting on the private size)
            NeighbourPair(
                "spread data at the ConstructPaths halt |S| = 10t", _even(size, 10 * th), _even(size, 10 * th + 1)
            ),
        ],
    }


def _even(size: int, n: int) -> tuple[list[int], list[int]]:
    """n records spread evenly over [0, size) as (values, counts)."""
    base, rem = divmod(n, size)
    return list(range(size)), [base + (i < rem) for i in range(size)]


def _fixed_pairs(pairs: list[NeighbourPair]) -> Callable[[], Iterator[NeighbourPair]]:
    return lambda: iter(pairs)


def _value_of(release: Callable[[Any, int], Any]) -> Callable[[Any, int], Any]:
    """The released value of a seed-002 result (what the audit samples)."""
    return lambda data, seed: release(data, seed).value


def _tree_output_of(release: Callable[[Any, int], Any]) -> Callable[[Any, int], Any]:
    """The whole output of a TreeLog/HeavyPaths release, (value, bottom), as one number: the
    value, or lower - 1 for the bottom output (whose value is only the placeholder ``lower``)."""

    def out(data: Any, seed: int) -> Any:
        r = release(data, seed)
        return INTERIOR_TREE_AUDIT["lower"] - 1 if r.bottom else r.value

    return out


def _register_interior_points() -> None:
    """Seed-002 mechanisms: interior_point with each method (exponential, treelog, heavypaths,
    auto), median, quantile and learn_threshold, under add/remove-one (neighbours of sizes n and
    n + 1) and replace-one. One release per output, so smaller samples
    (``extra["fast"]``/``extra["slow"]`` configs). Sizes are declared (``n=``/``n_max=``, public)."""
    from dptree.interior.points import interior_point, learn_threshold, median, quantile

    small = {"fast": AuditConfig(n_select=4_000, n_eval=12_000), "slow": FAST}
    lite = {"fast": AuditConfig(n_select=1_500, n_eval=4_500), "slow": FAST}
    tree = {"fast": AuditConfig(n_select=500, n_eval=1_500), "slow": AuditConfig(n_select=2_000, n_eval=6_000)}
    base = [3, 3, 4, 9]

    def em_spec(neighbors: str, pairs: list[NeighbourPair], **kw: Any) -> None:
        method = kw.pop("method", "exponential")
        cfg = small if (method, neighbors) == ("exponential", "add_remove") else lite

        def ip(data: Any, seed: int) -> Any:
            return interior_point(data, lower=0, upper=15, epsilon=1.0, method=method, rng=seed, **kw)

        register(
            MechanismSpec(
                name=f"interior_point/{method}/{neighbors}",
                covers=("interior_point",),
                neighbors=neighbors,
                epsilon=1.0,
                delta=0.0,
                sample=repeat(_value_of(ip)),
                worst_cases=lambda: iter(pairs),
                description=f"ordered-domain exponential mechanism (method={method!r}), eps = 1",
                release=ip,
                extra=dict(cfg),
            )
        )

    em_spec(
        "add_remove",
        [
            NeighbourPair("add a record at the top", base, base + [15]),
            NeighbourPair("add a record at the bottom", base, base + [0]),
        ],
    )
    em_spec("replace", [NeighbourPair("move a record from the bottom to the top", base, [3, 4, 9, 15])])
    # auto with a declared (public) n: the choice depends on (|X|, eps, delta, beta, n) only
    em_spec(
        "add_remove",
        [NeighbourPair("add a record at the top", base, base + [15])],
        method="auto",
        n_max=5,
        run_anyway=True,
    )

    a = INTERIOR_TREE_AUDIT
    pairs = interior_tree_pairs()
    for key, method, declared in (
        ("treelog/add_remove", "treelog", "n_treelog"),
        ("treelog/replace", "treelog", "n_treelog"),
        ("heavypaths/add_remove", "heavypaths", "n_heavy"),
    ):

        def tree_ip(data: Any, seed: int, method: str = method, n_max: int = int(a[declared])) -> Any:
            vals, cnt = data
            return interior_point(
                vals,
                counts=cnt,
                lower=a["lower"],
                upper=a["upper"],
                epsilon=a["epsilon"],
                delta=a["delta"],
                method=method,  # type: ignore[arg-type]
                n_max=n_max,
                rng=seed,
            )

        register(
            MechanismSpec(
                name=f"interior_point/{key}",
                covers=("interior_point",),
                neighbors=key.split("/")[1],
                epsilon=float(a["epsilon"]),
                delta=float(a["delta"]),
                sample=repeat(_tree_output_of(tree_ip)),
                worst_cases=_fixed_pairs(pairs[key]),
                description=f"{method} with declared n_max = {a[declared]} on |X| = 256, (1, 1e-6)",
                release=tree_ip,
                extra=dict(tree),
            )
        )

    def med(data: Any, seed: int) -> Any:
        return median(data, lower=0, upper=15, epsilon=1.0, rng=seed)

    def q25(data: Any, seed: int) -> Any:
        return quantile(data, 0.25, lower=0, upper=15, epsilon=1.0, rng=seed)

    for name, fn, neighbors, pair in (
        ("median/exponential/add_remove", med, "add_remove", NeighbourPair("add above the median", base, base + [15])),
        ("median/exponential/replace", med, "replace", NeighbourPair("move a record across", base, [3, 4, 9, 15])),
        ("quantile/q=0.25/add_remove", q25, "add_remove", NeighbourPair("add at the bottom", base, base + [0])),
    ):
        register(
            MechanismSpec(
                name=name,
                covers=("median", "quantile"),
                neighbors=neighbors,
                epsilon=1.0,
                delta=0.0,
                sample=repeat(_value_of(fn)),
                worst_cases=_fixed_pairs([pair]),
                description="single-quantile exponential mechanism, eps = 1",
                release=fn,
                extra=dict(small if name == "median/exponential/add_remove" else lite),
            )
        )

    xs = [1, 2, 3, 10, 11, 12] * 3
    ys = [0, 0, 0, 1, 1, 1] * 3

    for method, delta, neighbors, pair in (
        (
            "exponential",
            0.0,
            "add_remove",
            NeighbourPair("add a labelled example", (xs, ys), (xs + [6], ys + [1])),
        ),
        (
            "exponential",
            0.0,
            "replace",
            NeighbourPair("flip one example's label and move it", (xs, ys), (xs[:-1] + [0], ys[:-1] + [0])),
        ),
        (
            "treelog",
            1e-6,
            "add_remove",
            NeighbourPair("add a labelled example", (xs, ys), (xs + [6], ys + [1])),
        ),
    ):

        def learn(data: Any, seed: int, method: str = method, delta: float = delta) -> Any:
            x, y = data
            return learn_threshold(
                x,
                y,
                lower=0,
                upper=15,
                epsilon=1.0,
                delta=delta,
                method=method,  # type: ignore[arg-type]
                rng=seed,
                n_max=64,
            )

        def learned(data: Any, seed: int, learn: Any = learn) -> Any:
            c = learn(data, seed)
            return -1 - (c.constant or 0) if c.threshold is None else c.threshold

        register(
            MechanismSpec(
                name=f"learn_threshold/{method}/{neighbors}",
                covers=("learn_threshold",),
                neighbors=neighbors,
                epsilon=1.0,
                delta=delta,
                sample=repeat(learned),
                release=learn,
                worst_cases=_fixed_pairs([pair]),
                description="threshold learning via an interior point of the padded boundary sample, eps = 1",
                extra=dict(small if (method, neighbors) == ("exponential", "add_remove") else lite),
            )
        )


_register_interior_points()


# --------------------------------------------------------------------------- group-by releases


def _register_grouped() -> None:
    """``range_tree_by`` (parallel composition): one record added to one group; every group's
    noisy counts are the output. One release per output, so smaller samples."""
    from dptree.rangetree.api import range_tree_by

    groups = ["a", "b"]
    base_v, base_g = [1, 2, 4, 5], ["a", "b", "a", "b"]

    def release(data: Any, seed: int) -> Any:
        v, g = data
        return range_tree_by(v, by=g, groups=groups, lower=0, upper=5, epsilon=1.0, branching=3, rng=seed)

    def run(data: Any, seed: int) -> np.ndarray:
        rel = release(data, seed)
        return np.concatenate([m for k in groups for m in rel[k].measurements if m is not None])

    register(
        MechanismSpec(
            name="range_tree_by/laplace/add_remove",
            covers=("range_tree_by",),
            neighbors="add_remove",
            epsilon=1.0,
            delta=0.0,
            sample=repeat(run),
            worst_cases=lambda: iter(
                [NeighbourPair("add a record to group a", (base_v, base_g), (base_v + [3], base_g + ["a"]))]
            ),
            description="one range tree per public group, eps = 1 for the whole set",
            release=release,
            extra={
                "fast": AuditConfig(n_select=3_000, n_eval=9_000),
                "slow": AuditConfig(n_select=5_000, n_eval=15_000),
            },
        )
    )


_register_grouped()


# --------------------------------------------------------------------------- user-level bounding


def user_bounded_spec(name: str, *, plan: Any, pairs: Sequence[tuple[str, Any, Any]], epsilon: float,
                      release: Callable[[Any, int], Any] | None = None) -> MechanismSpec:
    """``range_tree(values, user_id=...)`` with ``plan``'s parameters: at most k records per user
    kept (uniformly at random, :mod:`dptree.data.bounding`), then the noise of ``plan``. A dataset is a
    pair (values, user ids); neighbours add or remove one *user* with any number of records."""
    def release_default(data: Any, seed: int) -> Any:
        from dptree.rangetree.api import range_tree

        values, users = data
        budget = plan.statement["budget_requested"]
        return range_tree(values, user_id=users, lower=plan.domain.lower, upper=plan.domain.upper,
                          branching=plan.layout.branching, max_contributions=plan.max_contributions,
                          neighbors=plan.neighbors, levels=plan.levels, noise=plan.noise, rng=seed, **budget)

    rel = release or release_default

    def run(data: Any, seed: int) -> np.ndarray:
        out = rel(data, seed)
        return np.concatenate([m for m in out.measurements if m is not None])

    return MechanismSpec(
        name=name,
        covers=("range_tree",),
        neighbors=f"{plan.neighbors}_user(k={plan.max_contributions}, bounded)",
        epsilon=epsilon,
        delta=0.0,
        sample=repeat(run),
        worst_cases=lambda: iter([NeighbourPair(label, d0, d1) for label, d0, d1 in pairs]),
        description="user-level contribution bounding before the tree",
        release=rel,
        extra={
            "bounded_plan": plan,
            "fast": AuditConfig(n_select=1_000, n_eval=3_000),
            "slow": AuditConfig(n_select=3_000, n_eval=9_000),
        },
    )


#: neighbouring datasets (values, user ids) for user bounding with k = 2
USER_BOUNDING_PAIRS: list[tuple[str, Any, Any]] = [
    ("add a user with 5 records in one leaf (bounded to 2)",
     ([1, 2, 4], [10, 11, 12]), ([1, 2, 4, 3, 3, 3, 3, 3], [10, 11, 12, 99, 99, 99, 99, 99])),
    ("remove a user with 2 records", ([1, 1, 1, 5, 5], [7, 7, 7, 8, 8]), ([1, 1, 1], [7, 7, 7])),
]


def _register_user_bounding() -> None:
    """``range_tree(values, user_id=..., max_contributions=2)`` under user-level add/remove. (Under
    ``replace`` the combination is refused: the exact total would depend on the data.)"""
    from dptree.rangetree.release import plan_range_tree

    plan = plan_range_tree(lower=0, upper=5, epsilon=1.0, branching=3, max_contributions=2)
    register(user_bounded_spec("range_tree/laplace/user_bounding_k2", plan=plan, pairs=USER_BOUNDING_PAIRS,
                               epsilon=1.0))


_register_user_bounding()
