"""The neighboring relation and the privacy statement: one schema for every release kind.

Every release carries a privacy statement (``release.privacy``, the ``"privacy"`` object of its
file). Its keys have one spelling across range trees, group releases, hierarchies and interior
points (:data:`REQUIRED` are always present; a mechanism adds its own, such as ``budget_spent``,
``sensitivity`` or ``calibration``):

==================== ==========================================================================
``mechanism``        what was run, with its source (paper, algorithm, lemma)
``neighbors``        the neighboring relation: ``"add_remove"`` or ``"replace"`` (:class:`Neighbors`)
``max_contributions`` records one person may contribute (the caller bounds them; 1 = record level)
``guarantee``        the privacy notion proven: pure epsilon-DP, (epsilon, delta)-DP or rho-zCDP
``library``          ``"dptree <version>"`` that made the release
``private``          False for a release made with a test seed (never private; see docs/notes/privacy.md)
==================== ==========================================================================

Files written before this schema spelled two keys differently (``neighbors`` as a sentence and
``library_version`` in hierarchy files); :func:`read_statement` reads them under the new names.

A saved file's statement is checked by one function, :func:`check_statement`, for every release
kind: the loader re-derives the whole statement from the file's public parameters (the code that
made the release) and the file's must equal it field for field. The checksum is not a signature:
this is what refuses an edited claim. Only ``library`` and ``private`` are not derived (which
version wrote the file; whether a test seed drew the noise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping

from dptree.errors import InvalidParameterError, ReleaseFileError

__all__ = ["Neighbors", "RELATIONS", "REQUIRED", "NOT_DERIVED", "check_statement", "library", "make_statement",
           "read_statement"]

Relation = Literal["add_remove", "replace"]
RELATIONS: tuple[str, ...] = ("add_remove", "replace")
REQUIRED: tuple[str, ...] = ("mechanism", "neighbors", "max_contributions", "guarantee", "library", "private")
_LEGACY = {"neighbours": "neighbors", "library_version": "library"}
#: the statement's fields that no parameter determines: the version that wrote the file, and
#: whether a test seed drew the noise
NOT_DERIVED: tuple[str, ...] = ("library", "private")
#: fields the schema added that files in the legacy spelling do not state
_ADDED = ("guarantee", "max_contributions")


def library() -> str:
    """``"dptree <version>"``: the one place that names the library in a statement."""
    from dptree import __version__

    return f"dptree {__version__}"


@dataclass(frozen=True)
class Neighbors:
    """The neighboring relation a guarantee is stated under (the privacy unit).

    ``add_remove``: two datasets are neighbors when one is the other plus one person's records.
    ``replace``: one person's records are swapped for another's; the number of records is public
    and the caller must declare it. ``max_contributions`` is how many records one person may have;
    the caller's data must respect it (``user_id=`` bounds it).
    """

    relation: Relation = "add_remove"
    max_contributions: int = 1

    def __post_init__(self) -> None:
        if self.relation not in RELATIONS:
            raise InvalidParameterError(f"neighbors must be one of {list(RELATIONS)}, got {self.relation!r}")
        k = self.max_contributions
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidParameterError(f"max_contributions must be a positive integer, got {k!r}")

    def describe(self) -> str:
        """The relation in words, for summaries and reports."""
        unit = "one record" if self.max_contributions == 1 else (
            f"one person's records (at most {self.max_contributions}, bounded by the caller)"
        )
        if self.relation == "replace":
            return f"replace {unit} (the number of records is public)"
        return f"add or remove {unit}"

    def to_statement(self) -> dict[str, Any]:
        return {"neighbors": self.relation, "max_contributions": self.max_contributions}


def make_statement(*, mechanism: str, neighbors: Neighbors, guarantee: str, private: bool,
                   **extra: Any) -> dict[str, Any]:
    """A privacy statement in the one schema: the required keys first, then the mechanism's own."""
    clash = set(extra) & set(REQUIRED)
    if clash:
        raise TypeError(f"make_statement: {sorted(clash)} are set by the schema")
    bad = set(extra) & set(_LEGACY)
    if bad:
        raise TypeError(f"make_statement: use the schema's spelling instead of {sorted(bad)}")
    return {
        "mechanism": mechanism,
        **neighbors.to_statement(),
        "guarantee": guarantee,
        **extra,
        "library": library(),
        "private": bool(private),
    }


def read_statement(privacy: Any, *, kind: str) -> dict[str, Any]:
    """Validate the statement of a loaded file and return it in the schema's spelling.

    Legacy spellings are renamed (an old hierarchy file's ``neighbors`` sentence becomes
    ``neighbors: "add_remove"``, the only relation hierarchies were ever released under).
    """
    if not isinstance(privacy, Mapping):
        raise ReleaseFileError(f"{kind} release: the privacy statement must be an object")
    out: dict[str, Any] = {_LEGACY.get(str(k), str(k)): v for k, v in privacy.items()}
    if "neighbours" in privacy and out.get("neighbors") not in RELATIONS:
        out["neighbors"] = "add_remove"
    if "library_version" in privacy and isinstance(out.get("library"), str) and not out["library"].startswith("dptree"):
        out["library"] = f"dptree {out['library']}"
    for key in REQUIRED:
        if key == "guarantee" and key not in out:
            out[key] = "unstated (file written before the statement schema)"
        if key == "max_contributions" and key not in out:
            out[key] = 1
        if key not in out:
            raise ReleaseFileError(f"{kind} release: the privacy statement lacks {key!r}")
    if not isinstance(out["private"], bool):
        raise ReleaseFileError(f"{kind} release: the privacy statement's 'private' flag must be true or false")
    if out["neighbors"] not in RELATIONS:
        raise ReleaseFileError(f"{kind} release: unknown neighboring relation {out['neighbors']!r}")
    k = out["max_contributions"]
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ReleaseFileError(f"{kind} release: max_contributions must be a positive integer")
    return out


def check_statement(stated: Any, derived: Mapping[str, Any], *, kind: str) -> dict[str, Any]:
    """The statement a loaded file of ``kind`` reports, refused unless it equals ``derived`` whole.

    ``derived`` is the statement re-derived from the file's public parameters by the code that
    makes the release. Every field but :data:`NOT_DERIVED` must be equal, nested fields included;
    a file in the spelling before the schema (:func:`read_statement`) takes the fields it could not
    state (``guarantee``, ``max_contributions``) from ``derived``. Raises ReleaseFileError naming
    the fields that differ.
    """
    if isinstance(stated, Mapping) and set(stated) & set(_LEGACY):
        stated = {**{k: derived[k] for k in _ADDED if k in derived}, **stated}
    out = read_statement(stated, kind=kind)
    mine = {k: v for k, v in out.items() if k not in NOT_DERIVED}
    want = {k: v for k, v in derived.items() if k not in NOT_DERIVED}
    if mine != want:
        fields = sorted(str(k) for k in set(mine) | set(want) if mine.get(k, _MISSING) != want.get(k, _MISSING))
        raise ReleaseFileError(f"{kind} release: the privacy statement does not match its parameters at "
                               f"{', '.join(fields)} (tampered?)")
    return out


_MISSING = object()
