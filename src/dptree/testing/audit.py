"""Empirical privacy audits: a lower bound on epsilon from many runs of a mechanism.

An audit runs a mechanism ``n`` times on each of two neighboring datasets ``d0`` and ``d1``
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
A dataset object that several pairs share is sampled once per phase and scored by each of them
(each pair keeps its full, fresh samples; see ``_datasets``).

The harness is split by topic, and this module re-exports the public names of all of them, so
``from dptree.testing import audit`` gives the whole API: :mod:`dptree.testing.registry` (the
specs and the registry), :mod:`dptree.testing.statistics` (Clopper-Pearson, the bound,
likelihood ratios) and :mod:`dptree.testing.sensitivity` (brute-force sensitivities). The
mechanisms are registered by the tests (``tests/audit_registry/``, imported by every test that
uses the registry); ``tests/statistical/test_audit.py`` audits every registered spec and a test
fails when a public function of :mod:`dptree` that releases something is not covered. See
docs/notes/verification.md.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from dptree.errors import InvalidParameterError
from dptree.testing.registry import (
    NOT_MECHANISMS,
    MechanismSpec,
    NeighborPair,
    get,
    register,
    registered,
    unregistered_public_mechanisms,
)
from dptree.testing.sensitivity import brute_force_sensitivity, neighboring_datasets
from dptree.testing.statistics import (
    clopper_pearson,
    epsilon_lower_bound,
    epsilon_lower_bounds,
    gaussian_llr,
    laplace_llr,
)

__all__ = [
    "NeighborPair",
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
    "neighboring_datasets",
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


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class PairResult:
    """The audit of one neighboring pair."""

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


# --------------------------------------------------------------------------- seeds


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


# --------------------------------------------------------------------------- the audit


Stat = Callable[[np.ndarray], np.ndarray]


def _sample_scores(
    spec: MechanismSpec,
    data: Any,
    n: int,
    seed_parts: tuple[Any, ...],
    config: AuditConfig,
    stats: list[Stat | None],
) -> list[np.ndarray]:
    """``n`` fresh outputs on ``data``, sampled in chunks (bounded memory), scored by each of
    ``stats`` (None: the raw outputs): one array per statistic, all from the same outputs."""
    out: list[list[np.ndarray]] = [[] for _ in stats]
    done = 0
    chunk_no = 0
    while done < n:
        m = min(config.chunk, n - done)
        outputs = np.asarray(spec.sample(data, m, derive_seed(*seed_parts, chunk_no)))
        if outputs.shape[:1] != (m,):
            raise InvalidParameterError(f"{spec.name}: sample() returned shape {outputs.shape}, expected ({m}, ...)")
        for parts, stat in zip(out, stats):
            parts.append(outputs if stat is None else np.asarray(stat(outputs), dtype=np.float64))
        done += m
        chunk_no += 1
    return [np.concatenate(parts, axis=0) for parts in out]


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
            bounds = epsilon_lower_bounds(ka, kb, n, alpha, delta)
            k = int(np.argmax(bounds))
            if bounds[k] > best[0]:
                best = (float(bounds[k]), direction, order[: k + 1].copy())
    return best[1], best[2], best[0]


def _datasets(spec: MechanismSpec, pairs: list[NeighborPair], seed: int) -> list[tuple[Any, tuple[Any, ...], list[tuple[int, int]]]]:
    """The distinct dataset objects of ``pairs``: (dataset, seed key, [(pair index, side)]).

    A dataset object shared by several pairs (the same ``d0`` beside different ``d1``) is sampled
    once per phase and scored by each of them: every pair still gets its full selection and
    evaluation samples, fresh and independent of each other, from the mechanism's law on that
    dataset, so each pair's bound keeps its significance (the pairs' results become dependent;
    the audit fails when any pair's bound exceeds epsilon). The seed key is that of the
    dataset's first use, ``(spec name, pair label, seed) + (phase, side)``: a dataset used once is
    sampled exactly as an audit of its pair alone (:func:`audit_pair`) samples it."""
    out: dict[Any, tuple[Any, tuple[Any, ...], list[tuple[int, int]]]] = {}
    for i, pair in enumerate(pairs):
        for side, data in enumerate((pair.d0, pair.d1)):
            # the pairs hold every dataset alive, so ids are not reused; the two sides of one pair
            # never share samples, even if they were the same object
            key: Any = id(data) if pair.d0 is not pair.d1 else (i, side)
            entry = out.setdefault(key, (data, (spec.name, pair.label, seed, side), []))
            entry[2].append((i, side))
    return list(out.values())


def _audit_pairs(
    spec: MechanismSpec, pairs: list[NeighborPair], config: AuditConfig, seed: int, statistic: Stat | None
) -> list[PairResult]:
    """Audit ``pairs``: per pair, select an event on the selection samples, evaluate it on fresh ones."""
    stats: list[Stat | None] = [statistic or pair.statistic for pair in pairs]
    datasets = _datasets(spec, pairs, seed)
    sel: dict[tuple[int, int], np.ndarray] = {}
    for data, (name, label, sd, side), slots in datasets:
        scores = _sample_scores(spec, data, config.n_select, (name, label, sd, "select", side), config,
                                [stats[i] for i, _ in slots])
        sel.update(zip(slots, scores))
    chosen = []
    for i in range(len(pairs)):
        sel0, sel1 = sel.pop((i, 0)), sel.pop((i, 1))
        stat = stats[i]
        if stat is None:
            stat = stats[i] = _default_statistic(sel0, sel1)
            sel0, sel1 = stat(sel0), stat(sel1)
        cats = _Categories(np.concatenate([sel0, sel1]), config.max_bins)
        direction, members, sel_bound = _select_event(
            cats(sel0), cats(sel1), config.n_select, cats.count, config.alpha, spec.delta
        )
        chosen.append((cats, direction, members, sel_bound))
    counts: dict[tuple[int, int], int] = {}
    for data, (name, label, sd, side), slots in datasets:
        scores = _sample_scores(spec, data, config.n_eval, (name, label, sd, "eval", side), config,
                                [stats[i] for i, _ in slots])
        for (i, s), ev in zip(slots, scores):
            cats, _, members, _ = chosen[i]
            in_event = np.zeros(cats.count + 1, dtype=bool)  # last slot: category -1 (unseen)
            in_event[members] = True
            counts[(i, s)] = int(in_event[cats(ev)].sum())
    results = []
    for i, pair in enumerate(pairs):
        cats, direction, members, sel_bound = chosen[i]
        k0, k1 = counts[(i, 0)], counts[(i, 1)]
        ka, kb = (k0, k1) if direction == 0 else (k1, k0)
        eps_lb, pa, pb = epsilon_lower_bound(ka, kb, config.n_eval, config.alpha, spec.delta)
        results.append(PairResult(
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
        ))
    return results


def audit_pair(
    spec: MechanismSpec,
    pair: NeighborPair,
    *,
    config: AuditConfig = FAST,
    seed: int = 0,
    statistic: Callable[[np.ndarray], np.ndarray] | None = None,
) -> PairResult:
    """Audit one neighboring pair: select an event, evaluate it on fresh samples."""
    return _audit_pairs(spec, [pair], config, seed, statistic)[0]


def audit(spec: MechanismSpec, *, config: AuditConfig = FAST, seed: int = 0) -> AuditReport:
    """Audit every worst-case pair of ``spec``; the report fails if any pair's bound exceeds epsilon.

    Pairs sharing a dataset object sample it once per phase (:func:`_datasets`)."""
    report = AuditReport(name=spec.name, epsilon=spec.epsilon, delta=spec.delta, config=config)
    report.pairs.extend(_audit_pairs(spec, list(spec.worst_cases()), config, seed, None))
    return report
