"""Resuming a continual counter from its saved state (:mod:`dptree.stream.state`): the loader
``dptree.load`` uses for the kind ``"stream_state"``. The counter is re-planned from the file's
parameters, the statement must equal the plan's whole, and the saved noise is kept: nothing drawn
is drawn again. A state that has been continued loads with ``continuable`` False."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from dptree import noise as _noise
from dptree.errors import ReleaseFileError
from dptree.io.release_file import check_metadata, register_kind
from dptree.privacy.statement import check_statement
from dptree.stream.counter import Counter
from dptree.stream.plan import plan_counter
from dptree.stream.state import KIND

__all__ = ["load_state"]


def _int_list(value: Any, what: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ReleaseFileError(f"stream state: {what} must be a list of integers")
    return value


def _float_list(value: Any, what: str) -> list[float]:
    if not isinstance(value, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise ReleaseFileError(f"stream state: {what} must be a list of numbers")
    return [float(v) for v in value]


def load_state(doc: dict[str, Any], path: Any) -> Any:
    """A :class:`~dptree.stream.counter.Counter` from a validated state document at ``path``
    (re-planned from its parameters; the statement must match the plan whole)."""
    p = doc["parameters"]
    try:
        plan = plan_counter(horizon=p["horizon"], epsilon=p["epsilon"], delta=p["delta"], rho=p["rho"],
                            noise=p["noise"], mechanism=p["mechanism"], max_participations=p["max_participations"])
    except (KeyError, TypeError) as exc:
        raise ReleaseFileError(f"stream state: parameters are incomplete ({exc})") from None
    privacy = check_statement(doc["privacy"], plan.statement, kind=KIND)
    m = doc["measurements"]
    core = m.get("core")
    if not isinstance(core, dict) or not isinstance(m.get("continued"), bool) or not isinstance(m.get("state_id"), str):
        raise ReleaseFileError("stream state: the measurements lack the counter's state")
    estimates = _float_list(m.get("estimates"), "estimates")
    for key in ("start", "noise", "w"):
        if key in core:
            _int_list(core[key], f"core.{key}")
    gen_state = m.get("generator")
    source: _noise.RandomSource = _noise.make_source(None)  # OS randomness, unless a test seed's state was saved
    if gen_state is not None:
        if privacy["private"]:
            raise ReleaseFileError("stream state: a private counter's file holds no generator state (tampered?)")
        try:
            source = _noise.resume_seeded(gen_state)
        except (TypeError, ValueError, KeyError) as exc:
            raise ReleaseFileError(f"stream state: unreadable generator state ({exc})") from None
    counter = Counter._resumed(plan, privacy, check_metadata(doc.get("metadata")), source)
    try:
        counter._core.restore(core)
    except (KeyError, TypeError, ValueError) as exc:
        raise ReleaseFileError(f"stream state: the counter's state is inconsistent ({exc})") from None
    if len(estimates) != counter.t:
        raise ReleaseFileError("stream state: one estimate per step appended is expected")
    counter._estimates = estimates
    if m["continued"]:
        counter.continuable = False
    else:
        counter._origin = (os.fspath(path), m["state_id"])
    return counter


register_kind(KIND, load_state, with_path=True)
