"""The registry of audited mechanisms: what each public mechanism claims and how to sample it.

Every public mechanism of dptree registers a :class:`MechanismSpec` with :func:`register`: its
name, the public functions it covers, its neighboring relation, its claimed (epsilon, delta), a
batched sampler and a generator of worst-case neighboring pairs. The registrations live in the
tests (``tests/audit_registry/``, one module per product), which register everything when
imported; :func:`unregistered_public_mechanisms` names every public function of :mod:`dptree`
that may release something and that no registered spec covers. See docs/notes/verification.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from dptree.errors import InvalidParameterError

__all__ = [
    "NeighborPair",
    "MechanismSpec",
    "NOT_MECHANISMS",
    "register",
    "registered",
    "get",
    "unregistered_public_mechanisms",
]


@dataclass(frozen=True)
class NeighborPair:
    """Two neighboring datasets under the spec's relation, and optionally a test statistic.

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
    * ``neighbors``: the neighboring relation the claim is about (``"add_remove"``,
      ``"replace"``, ``"add_remove_user(k=3)"``, ...);
    * ``epsilon``, ``delta``: the claimed guarantee;
    * ``sample(dataset, n, seed)``: ``n`` independent outputs of the mechanism on ``dataset``
      (first axis of the returned array), using only the integer ``seed`` for randomness
      (pass it, or seeds derived from it, to the mechanism's ``rng`` argument; see :func:`dptree.testing.audit.repeat`);
    * ``worst_cases()``: the neighboring pairs to audit;
    * ``release(dataset, seed)``: the whole release object the public function returns on
      ``dataset`` with ``rng=seed`` (the privacy-boundary test compares its fields on neighbors).
    """

    name: str
    covers: tuple[str, ...]
    neighbors: str
    epsilon: float
    delta: float
    sample: Callable[[Any, int, int], np.ndarray]
    worst_cases: Callable[[], Iterable[NeighborPair]]
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. {"plan": RangeTreePlan} for checks
    release: Callable[[Any, int], Any] | None = None


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
    """The registered spec called ``name`` (KeyError if none: import the registrations first)."""
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
