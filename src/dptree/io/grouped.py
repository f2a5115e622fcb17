"""What every group-by release shares: one release per public group, under parallel composition.

Each record belongs to exactly one group, so the releases are computed on disjoint parts of the
data and adding or removing one record changes one group's release only: the set costs the
budget of one release (McSherry 2009, Thm 4). :class:`ByGroup` gives a group-by release kind
(``range_tree_groups``, ``quantiles_groups``) its access by group, its stacked table and its
``save`` into one file or one file per group.
"""

from __future__ import annotations

import os
import re
from typing import Any, ClassVar, Iterator, Mapping, Sequence

from dptree.data.groups import check_groups
from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.io.release_file import check_metadata, check_overwrite
from dptree.privacy.statement import check_statement, read_statement

__all__ = ["ByGroup", "GROUP_KEYS", "SAFE_GROUP_NAME", "composition", "group_statement", "read_group_document"]

#: group names that can be part of a file name (``save("age-{group}.json")``)
SAFE_GROUP_NAME = re.compile(r"^[A-Za-z0-9_.=+-]+$")

#: keys a group release adds to each group's privacy statement
GROUP_KEYS = ("composition", "groups")


def composition(n_groups: int) -> str:
    """The statement's ``composition`` entry of a release over ``n_groups`` public groups."""
    return (
        f"parallel over {n_groups} public groups: each record (each user, after bounding across groups) "
        "is counted in one group, so all groups together cost the budget of one release"
    )


def group_statement(statement: Mapping[str, Any], groups: Sequence[Any], private: bool) -> dict[str, Any]:
    """The statement of a group-by release: one group's statement with the composition and the groups."""
    out = dict(statement)
    out["composition"] = composition(len(groups))
    out["groups"] = list(groups)
    out["private"] = bool(private)
    return out


def read_group_document(doc: Mapping[str, Any], kind: str) -> tuple[list[Any], dict[str, Any], dict[str, Any],
                                                                     dict[str, Any]]:
    """(groups, the full statement, one group's statement, metadata) of a group-by release file,
    refused where the groups are invalid or the statement is not one group's statement with these
    groups (:func:`check_statement`; each group's loader checks that group's statement whole)."""
    privacy = read_statement(doc["privacy"], kind=kind)
    try:
        groups = check_groups(doc["parameters"]["groups"])
    except InvalidParameterError as exc:
        raise ReleaseFileError(f"{kind} release: {exc}") from None
    member = {k: v for k, v in privacy.items() if k not in GROUP_KEYS}
    privacy = check_statement(privacy, group_statement(member, groups, privacy["private"]), kind=kind)
    return groups, privacy, member, check_metadata(doc.get("metadata"))


class ByGroup:
    """Access by group, a stacked table and ``save`` for a release holding ``releases[group]`` for
    each of its public ``groups`` (mixed into a :class:`~dptree.io.contract.Release` dataclass)."""

    #: the file kind of one group's release (what ``save("...{group}...")`` writes)
    MEMBER_KIND: ClassVar[str]
    groups: list[Any]
    releases: Mapping[Any, Any]

    def __getitem__(self, group: Any) -> Any:
        try:
            return self.releases[group]
        except (KeyError, TypeError):
            raise InvalidParameterError(f"group {group!r} is not one of the released groups") from None

    def __iter__(self) -> Iterator[Any]:
        return iter(self.groups)

    def __len__(self) -> int:
        return len(self.groups)

    def items(self) -> Iterator[tuple[Any, Any]]:
        return ((g, self.releases[g]) for g in self.groups)

    def to_frame(self, *args: Any, **kwargs: Any) -> Any:
        """Every group's ``to_frame``, stacked, with a first column ``group``."""
        from dptree.io.frames import concat_frames

        return concat_frames({g: self.releases[g].to_frame(*args, **kwargs) for g in self.groups}, "group")

    def save(self, path: str | os.PathLike[str], *, allow_nonprivate: bool = False,
             force: bool = False) -> list[str]:
        """Write the release: one file of this kind (``dptree.load`` reads it back), or, when
        ``path`` contains ``{group}``, one file per group (of kind ``MEMBER_KIND``) with ``{group}``
        replaced by the group (all paths are checked before the first write). Returns the paths
        written."""
        pattern = str(path)
        if "{group}" not in pattern:
            super().save(path, allow_nonprivate=allow_nonprivate, force=force)  # type: ignore[misc]
            return [pattern]
        paths = []
        for g in self.groups:
            name = str(g)
            if not SAFE_GROUP_NAME.match(name):
                raise InvalidParameterError(
                    f"group {name!r} cannot be part of a file name; use groups made of letters, digits and _.=+-"
                )
            paths.append(pattern.replace("{group}", name))
        for p in paths:  # every path before the first write: all or nothing
            check_overwrite(p, f"release:{self.MEMBER_KIND}", force=force)
        for g, p in zip(self.groups, paths):
            self.releases[g].save(p, allow_nonprivate=allow_nonprivate, force=force)
        return paths
