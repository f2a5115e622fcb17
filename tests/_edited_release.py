"""A saved release whose privacy statement is edited (its checksum recomputed: the checksum is no
signature) must be refused on load: the statement is re-derived from the parameters and compared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import dptree
from dptree.errors import ReleaseFileError
from dptree.io.release_file import canonical_checksum


def assert_edited_statement_refused(rel: Any, tmp_path: Path, field: str, value: Any, match: str | None = None) -> None:
    """Save ``rel`` (it loads back with the same statement), set its statement's ``field`` to
    ``value`` and check that loading raises :class:`ReleaseFileError` (matching ``match``)."""
    path = tmp_path / "edited.json"
    rel.save(path, allow_nonprivate=True, force=True)
    assert dptree.load(path).privacy == rel.privacy
    doc = json.loads(path.read_text())
    doc["privacy"][field] = value
    doc["checksum"] = canonical_checksum(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(ReleaseFileError, match=match):
        dptree.load(path)


def spent_with(rel: Any, **edits: float) -> dict[str, Any]:
    """``rel``'s statement's ``budget_spent`` with ``edits`` applied."""
    return {**rel.privacy["budget_spent"], **edits}
