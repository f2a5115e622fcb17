"""The privacy boundary: which fields of a release are public and which are noisy.

Every release kind declares, in one place (its class attribute ``BOUNDARY``), each field of its
document as either

* **public** -- a caller-supplied parameter (bounds, budget, groups, the hierarchy, a declared n),
  a constant, or something derived from those alone (noise scales, the privacy statement); or
* **noisy** -- a noisy measurement, or post-processing of noisy measurements and public fields.

Nothing else may be part of a release: no count, size or value computed from the private rows
outside the noise. ``tests/system/test_privacy_boundary.py`` enforces the declaration: it
builds every registered mechanism (``tests/audit_registry/``) on two neighboring datasets with the same
test seed, so the noise is identical, and checks field by field that every field that differs is
declared noisy, and that every field is declared.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fnmatch import fnmatchcase
from fractions import Fraction
from typing import Any, Iterable

import numpy as np

__all__ = ["Boundary", "release_fields", "undeclared_fields", "boundary_violations"]


@dataclass(frozen=True)
class Boundary:
    """Glob patterns over dotted field paths (``"measurements.levels"``, ``"privacy.*"``)."""

    public: tuple[str, ...]
    noisy: tuple[str, ...] = ()

    def kind(self, path: str) -> str | None:
        """"public", "noisy", or None when the field is not declared."""
        if any(fnmatchcase(path, p) for p in self.noisy):
            return "noisy"
        if any(fnmatchcase(path, p) for p in self.public):
            return "public"
        return None


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = value


def release_fields(release: Any) -> dict[str, Any]:
    """Every field of a release as {dotted path: value}: its file document (``to_document``) or,
    for results without a file format, its dataclass fields."""
    if hasattr(release, "to_document"):
        doc = release.to_document()
    elif hasattr(release, "to_dict"):
        doc = release.to_dict()
    elif dataclasses.is_dataclass(release) and not isinstance(release, type):
        doc = {f.name: getattr(release, f.name) for f in dataclasses.fields(release)}
    else:
        raise TypeError(f"{type(release).__name__} is not a release")
    out: dict[str, Any] = {}
    _flatten("", doc, out)
    return out


def _boundary_of(release: Any) -> Boundary:
    b = getattr(type(release), "BOUNDARY", None)
    if not isinstance(b, Boundary):
        raise TypeError(f"{type(release).__name__} declares no privacy BOUNDARY")
    return b


def undeclared_fields(release: Any) -> list[str]:
    """Fields of ``release`` that its kind's boundary declares neither public nor noisy."""
    b = _boundary_of(release)
    return sorted(p for p in release_fields(release) if b.kind(p) is None)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple, np.ndarray)) or isinstance(b, (list, tuple, np.ndarray)):
        if not (isinstance(a, (list, tuple, np.ndarray)) and isinstance(b, (list, tuple, np.ndarray))):
            return False
        la, lb = list(a), list(b)
        return len(la) == len(lb) and all(_same(x, y) for x, y in zip(la, lb))
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and all(
            _same(a[k], b[k]) for k in a
        )
    if isinstance(a, (float, np.floating)) and isinstance(b, (float, np.floating)):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, Fraction) or isinstance(b, Fraction):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def boundary_violations(r0: Any, r1: Any) -> list[str]:
    """For releases of the same mechanism on neighboring data with the same test seed: the fields
    that are undeclared, or that differ without being declared noisy (each a line of text)."""
    b = _boundary_of(r0)
    f0, f1 = release_fields(r0), release_fields(r1)
    problems = [f"{p}: not declared public or noisy" for p in sorted(set(f0) | set(f1)) if b.kind(p) is None]
    for p in sorted(set(f0) | set(f1)):
        if b.kind(p) == "public" and (p not in f0 or p not in f1 or not _same(f0[p], f1[p])):
            seen = f"{_short(f0.get(p))} vs {_short(f1.get(p))}"
            problems.append(f"{p}: declared public but depends on the data ({seen})")
    return problems


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def check_declared(releases: Iterable[Any]) -> list[str]:
    """Undeclared fields of each release (empty when every field is declared)."""
    return [f"{type(r).__name__}.{p}" for r in releases for p in undeclared_fields(r)]
