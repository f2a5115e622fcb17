"""Saving and loading releases: one documented JSON format for every kind of release.

A release file is a JSON object::

    {
      "format": "dptree-release",
      "version": 1,
      "kind": "range_tree" | "hierarchy" | ...,
      "privacy": {...},        # mechanism, neighbors, budget, sensitivity, library, private flag
      "parameters": {...},     # public parameters needed to interpret the measurements
      "measurements": {...},   # the noisy values (integers) and their noise variances
      "metadata": {...},       # optional: column, source, created_utc, ledger charge (all public)
      "checksum": "sha256:..." # over the canonical JSON of every other field
    }

``metadata`` holds only what the caller supplied or the clock: the column name(s), the input's
path (``"stdin"`` for standard input, null for in-memory data), the UTC creation time and, with a
ledger, the charge. A file without ``metadata`` still loads.

Everything in a release is public: it is the mechanism's output plus the public parameters.
Loading only parses JSON (never pickle, never code), bounds the file size, rejects NaN/Infinity
literals and excessive nesting, checks the checksum and then hands the document to the loader
registered for its kind, which re-validates every field. The checksum detects corruption and
edits; it is not a signature (anyone can recompute it), so each loader also re-derives the noise
parameters from the stated privacy parameters and rejects a file where they disagree.

A release made with a test seed (not private) is refused by :func:`write_release` unless
``allow_nonprivate=True`` is passed explicitly.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable

from dptree.errors import ReleaseFileError

__all__ = [
    "FORMAT",
    "VERSION",
    "MAX_FILE_BYTES",
    "write_release",
    "read_release",
    "load",
    "register_kind",
    "canonical_checksum",
    "creation_metadata",
    "check_metadata",
    "check_overwrite",
    "is_sqlite_file",
    "atomic_write",
    "utc_now",
]

FORMAT = "dptree-release"
VERSION = 1
MAX_FILE_BYTES = 2 * 1024**3
MAX_DEPTH = 32

_LOADERS: dict[str, Callable[..., Any]] = {}
_WITH_PATH: set[str] = set()


def register_kind(kind: str, loader: Callable[..., Any], *, with_path: bool = False) -> None:
    """Register the function that turns a validated document of ``kind`` into a release object
    (``with_path``: it is called with the file's path too, for a state bound to its file)."""
    _LOADERS[kind] = loader
    if with_path:
        _WITH_PATH.add(kind)


def utc_now() -> str:
    """The clock (public); one function so that tests can freeze it. Read it before the data is
    read: a time taken after reading would tell how long the reading took (about the size)."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _source_name(source: Any) -> str | None:
    if source is None:
        return None
    if isinstance(source, os.PathLike):
        return str(os.fspath(source))
    if isinstance(source, str):
        return "stdin" if source == "-" else source
    return None  # in-memory data: nothing to name


def creation_metadata(*, column: Any = None, source: Any = None, created: str | None = None) -> dict[str, Any]:
    """A release's public metadata: the caller's column name(s), the input path (a caller-supplied
    name; None for in-memory data) and the creation time: ``created``, read with :func:`utc_now`
    before the data was read (now, if not given). Nothing here is computed from the rows."""
    if isinstance(column, (list, tuple)):
        col: Any = ",".join(str(c) for c in column)
    else:
        col = None if column is None else str(column)
    return {"column": col, "source": _source_name(source), "created_utc": created or utc_now()}


_META_KEYS = {"column", "source", "created_utc", "ledger"}


def check_metadata(meta: Any, source: str = "release") -> dict[str, Any]:
    """Validate a document's optional ``metadata`` (``{}`` when absent)."""
    if meta is None:
        return {}
    if not isinstance(meta, dict) or not set(meta) <= _META_KEYS:
        raise ReleaseFileError(f"{source}: metadata must be an object with keys among {sorted(_META_KEYS)}")
    for key in ("column", "source", "created_utc"):
        if not isinstance(meta.get(key), (str, type(None))):
            raise ReleaseFileError(f"{source}: metadata.{key} must be a string or null")
    led = meta.get("ledger")
    if led is not None and not (
        isinstance(led, dict) and all(isinstance(k, str) and isinstance(v, (str, int, float)) for k, v in led.items())
    ):
        raise ReleaseFileError(f"{source}: metadata.ledger must be an object of strings and numbers")
    return dict(meta)


def canonical_checksum(doc: dict[str, Any]) -> str:
    body = {k: v for k, v in doc.items() if k != "checksum"}
    data = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    return "sha256:" + hashlib.sha256(data).hexdigest()


def write_release(
    path: str | os.PathLike[str],
    kind: str,
    *,
    privacy: dict[str, Any],
    parameters: dict[str, Any],
    measurements: dict[str, Any],
    metadata: dict[str, Any] | None = None,
    allow_nonprivate: bool = False,
    force: bool = False,
) -> None:
    """Write a release document atomically (temporary file, then rename). An existing file is
    overwritten only when it is a dptree release of the same kind, or with ``force``
    (:func:`check_overwrite`)."""
    _check_path(path)
    if not privacy.get("private", False) and not allow_nonprivate:
        raise ReleaseFileError(
            "this release was made with a test seed and is NOT private; refusing to save it. "
            "Pass allow_nonprivate=True if you really want a file of a non-private experiment."
        )
    doc: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "kind": kind,
        "privacy": privacy,
        "parameters": parameters,
        "measurements": measurements,
    }
    if metadata:
        doc["metadata"] = metadata
    try:
        doc["checksum"] = canonical_checksum(doc)
    except ValueError as exc:
        raise ReleaseFileError(f"release contains a non-finite number and cannot be saved: {exc}") from exc
    check_overwrite(path, f"release:{kind}", force=force)
    text = json.dumps(doc, separators=(",", ":"), allow_nan=False)
    atomic_write(path, text.encode("utf-8"), what="release", error=ReleaseFileError)


def _check_path(path: object) -> None:
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise ReleaseFileError(f"a release path must be a non-empty string or path, got {path!r}")
    if "\0" in os.fspath(path):
        raise ReleaseFileError("a file path must not contain a NUL byte")


# A file dptree may overwrite without force: a dptree artefact of the same kind (a release of
# the same kind, a report, a plot). Anything else is refused without force; a link, pipe,
# device or directory always (os.replace would swap it for a regular file).
_MARKER = b"dptree"


def _is_artefact(path: Path, kind: str) -> bool:
    if kind.startswith("release:"):
        try:
            return read_release(path).get("kind") == kind.split(":", 1)[1]
        except ReleaseFileError:
            return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return False
    magic = {"plot": b"\x89PNG", "report": b"<!"}.get(kind, b"")
    return head.startswith(magic) and _MARKER in head


def is_sqlite_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an SQLite file (the budget ledger's format), by its header."""
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def check_overwrite(path: str | os.PathLike[str], kind: str, *, force: bool = False, flag: str = "") -> None:
    """Refuse to write ``path`` when it exists and is not a regular file (always), and unless
    ``force`` when it holds a release (which spent budget: never replaced silently) or anything but
    a dptree artefact of ``kind`` ("report", "plot": those are made again from the release for
    free), and never when it is an SQLite file (a budget ledger). ``flag`` names the CLI option in
    the message (e.g. "--out")."""
    _check_path(path)
    p = Path(path)
    shown = f"{flag} {p}" if flag else str(p)
    if p.name in ("", ".", ".."):
        raise ReleaseFileError(f"{shown} is a directory; give a file name such as release.json")
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ReleaseFileError(f"cannot check {shown}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ReleaseFileError(f"{shown} is a directory; give a file name such as release.json")
    if not stat.S_ISREG(st.st_mode):
        raise ReleaseFileError(
            f"{shown} exists and is not a regular file (a link, pipe or device); write to another path"
        )
    if is_sqlite_file(p):  # even with force: a ledger replaced by a file forgets the budget it spent
        raise ReleaseFileError(f"{shown} is an SQLite database (a budget ledger?); it is never overwritten: write to "
                               "another path")
    if force:
        return
    again = "--force" if flag else "force=True"
    if kind.startswith("release:") and _is_artefact(p, kind):
        # a release spent budget and cannot be made again for free: never replaced silently
        raise ReleaseFileError(f"{shown} already holds a dptree {kind.split(':')[-1]} release; choose another path, "
                               f"or replace it with {again}")
    if not _is_artefact(p, kind):
        what = {"report": "dptree report", "plot": "dptree plot"}.get(kind, f"dptree {kind.split(':')[-1]} release")
        raise ReleaseFileError(f"{shown} exists and is not a {what}; choose another path, or overwrite it with {again}")


def atomic_write(
    path: str | os.PathLike[str], data: bytes, *, what: str = "file", error: type[Exception] = ReleaseFileError
) -> None:
    """Write ``data`` to a private temporary file next to ``path``, then rename it over ``path``.
    A failed write leaves neither a partial file nor a temporary file behind."""
    p = Path(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, p)
        tmp = None
    except OSError as exc:
        raise error(f"cannot write {what} to {p}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _parse_float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ReleaseFileError(f"release file contains the out-of-range number {text[:40]}")
    return v


def _reject_constant(name: str) -> None:
    raise ReleaseFileError(f"release file contains the non-standard JSON value {name}")


def _depth(obj: Any, limit: int) -> int:
    stack = [(obj, 1)]
    deepest = 0
    while stack:
        cur, d = stack.pop()
        deepest = max(deepest, d)
        if d > limit:
            return d
        if isinstance(cur, dict):
            stack.extend((v, d + 1) for v in cur.values() if isinstance(v, (dict, list)))
        elif isinstance(cur, list):
            # lists of numbers are flat; only descend into containers
            stack.extend((v, d + 1) for v in cur if isinstance(v, (dict, list)))
    return deepest


def read_release(path: str | os.PathLike[str], *, max_bytes: int = MAX_FILE_BYTES) -> dict[str, Any]:
    """Read and validate the envelope of a release file; returns the document."""
    _check_path(path)
    p = Path(path)
    try:
        size = p.stat().st_size
    except FileNotFoundError as exc:
        raise ReleaseFileError(f"release file not found: {p}") from exc
    except OSError as exc:
        raise ReleaseFileError(f"cannot read release file {p}: {exc.strerror or exc}") from exc
    if size > max_bytes:
        raise ReleaseFileError(f"release file {p} is {size} bytes, more than the limit of {max_bytes}")
    try:
        with open(p, "rb") as fh:
            raw = fh.read(size + 1)  # the size was checked; never reserve max_bytes
        if len(raw) > max_bytes:
            raise ReleaseFileError(f"release file {p} grew beyond the limit of {max_bytes} bytes")
        text = raw.decode("utf-8")
        doc = json.loads(text, parse_constant=_reject_constant, parse_float=_parse_float)
    except ReleaseFileError:
        raise
    except UnicodeDecodeError as exc:
        raise ReleaseFileError(f"{p} is not a dptree release (not UTF-8 text)") from exc
    except RecursionError as exc:
        raise ReleaseFileError(f"{p} is nested too deeply to be a dptree release") from exc
    except json.JSONDecodeError as exc:
        raise ReleaseFileError(
            f"{p} is not valid JSON (truncated or corrupted?): {exc.msg} at line {exc.lineno}"
        ) from exc
    except ValueError as exc:  # e.g. an integer literal longer than Python's digit limit
        raise ReleaseFileError(f"{p} holds a number dptree cannot read: {str(exc)[:120]}") from exc
    except OSError as exc:
        raise ReleaseFileError(f"cannot read release file {p}: {exc.strerror or exc}") from exc
    return validate_document(doc, source=str(p))


def validate_document(doc: Any, *, source: str = "release") -> dict[str, Any]:
    """Check format, version, shape and checksum of a release document."""
    if not isinstance(doc, dict):
        raise ReleaseFileError(f"{source}: a release must be a JSON object")
    if _depth(doc, MAX_DEPTH) > MAX_DEPTH:
        raise ReleaseFileError(f"{source}: nested too deeply to be a dptree release")
    if doc.get("format") != FORMAT:
        raise ReleaseFileError(f"{source}: not a dptree release (format field is {doc.get('format')!r})")
    version = doc.get("version")
    if type(version) is not int or version != VERSION:
        raise ReleaseFileError(
            f"{source}: release format version {version!r} is not supported (this dptree reads version {VERSION})"
        )
    for key in ("kind", "privacy", "parameters", "measurements", "checksum"):
        if key not in doc:
            raise ReleaseFileError(f"{source}: missing field {key!r}")
    for key in ("privacy", "parameters", "measurements"):
        if not isinstance(doc[key], dict):
            raise ReleaseFileError(f"{source}: field {key!r} must be an object")
    if "metadata" in doc:
        check_metadata(doc["metadata"], source)
    if not isinstance(doc["checksum"], str) or canonical_checksum(doc) != doc["checksum"]:
        raise ReleaseFileError(f"{source}: checksum mismatch: the file was modified or corrupted")
    return doc


def load(path: str | os.PathLike[str]) -> Any:
    """Load any saved release (``dptree.load``): validates the file, then the release itself."""
    doc = read_release(path)
    kind = doc["kind"]
    loader = _LOADERS.get(kind) if isinstance(kind, str) else None
    if loader is None:
        raise ReleaseFileError(f"{path}: unknown release kind {kind!r}")
    try:
        return loader(doc, path) if kind in _WITH_PATH else loader(doc)
    except ReleaseFileError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, OverflowError) as exc:
        raise ReleaseFileError(f"{path}: malformed {kind} release: {exc}") from exc
