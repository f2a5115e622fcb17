"""Audit registrations of the continual counters (``dptree.stream``, ``plan_counter``): the binary-tree
counter with discrete Laplace noise and the square-root Toeplitz counter with discrete Gaussian
noise, on short horizons, audited on the released running totals; the neighbouring streams differ
in one event, or in one user's events at two steps (``max_participations=2``)."""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from dptree.testing.audit import AuditConfig
from dptree.testing.registry import MechanismSpec, NeighborPair, register

#: the audited streams: 4 steps; the pairs add one event at the first step (it reaches every
#: output and every level of the tree) or at the last
HORIZON = 4
BASE = [1, 0, 2, 1]


def stream_batch(plan: Any, counts: Any, n: int, seed: int) -> np.ndarray:
    """``n`` independent runs of ``plan``'s counter on ``counts`` from the integer ``seed``
    (:func:`dptree.stream.counter.run_copies`: the library's online core, the noise of all runs in
    one sampler call; n = 1 equals a seeded counter): the released totals, shape (n, steps)."""
    from dptree.stream.counter import run_copies

    return run_copies(plan, counts, n, seed)


def noise_map(plan: Any, steps: int) -> np.ndarray:
    """G (steps x draws): the totals of the first ``steps`` steps as a linear function of the
    noise draws, read off the library's core fed unit noise vectors (public: the plan only)."""
    T = plan.horizon
    draws = sum(T >> j for j in range(T.bit_length())) if plan.mechanism == "tree" else T
    cols = []
    for i in range(draws):
        core = _core_with(plan, np.eye(draws, dtype=np.int64)[i])
        cols.append([core.step(0)[0] for _ in range(steps)])
    return np.array(cols).T


def _core_with(plan: Any, values: np.ndarray) -> Any:
    """The library's online core of ``plan`` fed the given noise values instead of samples."""
    from dptree.stream.counter import make_core

    core = make_core(plan, None)  # type: ignore[arg-type]  (its sampler is replaced below)
    pos = [0]

    def draw(n: int) -> Any:
        out = values[pos[0]:pos[0] + n]
        pos[0] += n
        return out.tolist() if plan.mechanism == "tree" else out

    core.draw = draw
    return core


def projection_statistic(plan: Any, c0: Any, c1: Any) -> Any:
    """The likelihood-ratio direction of Gaussian noise with the claimed covariance of the totals,
    Delta^T Sigma^+ y: a function of the public plan and the two datasets only."""
    G = noise_map(plan, len(c0))
    sigma = G @ G.T * plan.noise_variance
    delta = np.cumsum(np.asarray(c1, dtype=np.float64)) - np.cumsum(np.asarray(c0, dtype=np.float64))
    direction = np.linalg.pinv(sigma) @ delta
    return lambda y: np.asarray(y, dtype=np.float64) @ direction


#: the neighbours of event-level privacy: one event added at the first step or at the last
EVENT_PAIRS = (("one event added at the first step", (0,)), ("one event added at the last step", (HORIZON - 1,)))
#: the neighbours of a user taking part in two steps, one event at each
USER_PAIRS = (("one user with an event at each of the first two steps", (0, 1)),
              ("one user with an event at the first and at the last step", (0, HORIZON - 1)))


def stream_spec(name: str, *, plan: Any, epsilon: float, delta: float, covers: tuple[str, ...] = (),
                claimed: Any = None, pairs: Any = EVENT_PAIRS, sizes: dict[str, Any] | None = None) -> MechanismSpec:
    """A spec auditing ``plan``'s counter on :data:`BASE` against ``pairs`` (a label and the steps
    that get one more event); the statistic uses the ``claimed`` plan's noise (default: ``plan``)."""
    from dptree.stream.counter import Counter

    claim = claimed or plan

    def worst_cases() -> Iterator[NeighborPair]:
        for label, steps in pairs:
            d1 = list(BASE)
            for step in steps:
                d1[step] += 1
            yield NeighborPair(label, list(BASE), d1, statistic=projection_statistic(claim, BASE, d1))

    def release(counts: Any, seed: int) -> Any:
        p = plan.parameters()
        c = Counter(p["horizon"], epsilon=p["epsilon"], delta=p["delta"], rho=p["rho"], noise=p["noise"],
                    mechanism=p["mechanism"], max_participations=p["max_participations"], rng=seed)
        c.append(counts)
        return c.release()

    neighbors = "add_remove" if plan.participations == 1 else f"add_remove_user(k={plan.participations} steps)"
    return MechanismSpec(name=name, covers=covers, neighbors=neighbors, epsilon=epsilon, delta=delta,
                         sample=lambda counts, n, seed: stream_batch(plan, counts, n, seed),
                         worst_cases=worst_cases, release=release, extra={"plan": plan, **(sizes or {})},
                         description=f"{plan.mechanism} counter over {plan.horizon} steps, {plan.family} noise")


def register_streams() -> None:
    """The binary-tree counter at epsilon = 1 and the square-root Toeplitz counter at (1, 1e-6), at
    event level and for users taking part in two steps."""
    from dptree.stream.plan import plan_counter

    register(stream_spec("stream/tree/laplace/add_remove", plan=plan_counter(horizon=HORIZON, epsilon=1.0),
                         epsilon=1.0, delta=0.0, covers=("plan_counter",)))
    register(stream_spec("stream/toeplitz/gaussian/add_remove",
                         plan=plan_counter(horizon=HORIZON, epsilon=1.0, delta=1e-6, noise="gaussian"),
                         epsilon=1.0, delta=1e-6, covers=("plan_counter",)))
    register(stream_spec("stream/tree/laplace/user_k2", plan=plan_counter(horizon=HORIZON, epsilon=1.0,
                                                                          max_participations=2),
                         epsilon=1.0, delta=0.0, covers=("plan_counter",), pairs=USER_PAIRS))
    register(stream_spec("stream/toeplitz/gaussian/user_k2",
                         plan=plan_counter(horizon=HORIZON, epsilon=1.0, delta=1e-6, noise="gaussian",
                                           max_participations=2),
                         epsilon=1.0, delta=1e-6, covers=("plan_counter",), pairs=USER_PAIRS,
                         sizes={"fast": AuditConfig(n_select=4_000, n_eval=12_000),
                                "slow": AuditConfig(n_select=10_000, n_eval=30_000)}))
