"""A continual counter's saved state: the only continuation of its stream.

The state is a file in the release format (:mod:`dptree.io.release_file`: checksummed, written
atomically) of kind ``"stream_state"``, loaded by ``dptree.load`` (:mod:`dptree.stream.resume`).
It is **secret**: it holds the exact totals of the blocks still open and the noise already drawn
for outputs to come. Keep it where the counts are kept; publish :meth:`~dptree.stream.counter.Counter.release` instead.

**No redraw, no fork.** Noise already drawn is saved and reused, never drawn again, so a resumed
counter continues the same stream. Continuing one saved state twice would be a privacy hazard:
two continuations share the saved noise, so the difference of their outputs is the difference
of their counts, exactly. So each saved state has a random id and a ``continued`` flag: the first
append or save of a counter after it saved or loaded the state claims the file (under a lock file
``<path>.lock``, the file is re-read, must still hold that id and not be continued, and is
rewritten atomically with ``continued: true``). A continued state still loads (its outputs can be
shown), but appending to it is refused (:class:`~dptree.errors.StreamStateError`); the counter
that continued it saves its own, later state over the same path. A *copy* of a state file is a
fork the library cannot see: never continue one.

With a test seed the numpy generator's state is saved too, so a resumed seeded counter produces
exactly the outputs of an uninterrupted one; a private counter resumes with fresh OS randomness
for the noise not yet drawn.
"""

from __future__ import annotations

import os
from typing import Any

from dptree import noise as _noise
from dptree.errors import ReleaseFileError, StreamStateError
from dptree.io.release_file import read_release, write_release

__all__ = ["KIND", "save_state", "claim"]

KIND = "stream_state"


def _document(counter: Any, state_id: str, continued: bool) -> dict[str, Any]:
    return {"privacy": dict(counter.privacy), "parameters": counter.plan.parameters(),
            "measurements": {"estimates": list(counter._estimates), "core": counter._core.to_state(),
                             "generator": _noise.seeded_state(counter._source),
                             "state_id": state_id, "continued": continued},
            "metadata": dict(counter.metadata)}


def _write(path: Any, doc: dict[str, Any], *, allow_nonprivate: bool, force: bool) -> None:
    write_release(path, KIND, privacy=doc["privacy"], parameters=doc["parameters"],
                  measurements=doc["measurements"], metadata=doc["metadata"], allow_nonprivate=allow_nonprivate,
                  force=force)


def save_state(counter: Any, path: Any, *, allow_nonprivate: bool = False, force: bool = False) -> tuple[str, str]:
    """Write ``counter``'s state to ``path`` with a fresh id; returns (path, id), which the
    counter's next append claims. A state that has been continued is replaced without ``force``
    (the continuation's state supersedes it); any other release only with ``force``."""
    state_id = _noise.random_hex(16)
    if not force and os.path.isfile(path):
        try:
            old = read_release(path)
            force = old.get("kind") == KIND and old["measurements"].get("continued") is True
        except ReleaseFileError:
            pass  # not a release: write_release refuses it without force
    _write(path, _document(counter, state_id, False), allow_nonprivate=allow_nonprivate, force=force)
    return os.fspath(path), state_id


def claim(path: str, state_id: str, *, allow_nonprivate: bool) -> None:
    """Mark the state saved at ``path`` with ``state_id`` continued, or refuse: a
    :class:`StreamStateError` when it was continued already, replaced by another state, or
    another process holds its lock."""
    lock = f"{path}.lock"
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        raise StreamStateError(f"{lock} exists: another process is continuing this counter's state (if none is, "
                               "the lock is stale: remove it)") from None
    except OSError as exc:
        raise StreamStateError(f"cannot lock {path}: {exc.strerror or exc}") from None
    try:
        os.close(fd)
        doc = read_release(path)
        m = doc.get("measurements", {})
        if doc.get("kind") != KIND or m.get("state_id") != state_id or m.get("continued") is not False:
            raise StreamStateError(f"{path} has been continued already (or replaced by another state): continuing "
                                   "this copy too would reuse its noise on other counts; load the latest state")
        m["continued"] = True
        _write(path, doc, allow_nonprivate=allow_nonprivate, force=True)
    finally:
        os.unlink(lock)
