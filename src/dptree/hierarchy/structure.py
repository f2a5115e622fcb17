"""The public tree of a hierarchy release (Ghazi et al. 2023: a rooted tree of any arity, known a priori).

:class:`Hierarchy` is re-exported as ``dptree.Hierarchy``. Internally a tree is stored the way
:func:`dptree.estimation.least_squares.consistent_estimates` wants it: one array per depth, level 0 holding the
root, ``parents[j][i]`` the index (in level j-1) of node i of level j. Nodes of a level are
sorted by (parent, label), so the children of a node are contiguous and sorted by label.
The constructors' parsing and the level arrays are built in :mod:`dptree.hierarchy.building`.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from dptree._validation import Constraint, InstanceOf, validate_params
from dptree.errors import DomainError, InvalidParameterError
from dptree.hierarchy.building import (
    SEP,
    build,
    frame_columns,
    parent_table_columns,
    path_columns,
    split_path,
)

__all__ = ["Hierarchy", "SEP", "split_path"]


class _Listing(Constraint):
    """An iterable of items (a list, tuple, array, Series, generator), but not one string."""

    def __init__(self, what: str, hint: str = "") -> None:
        self.what, self.hint = what, hint

    def is_satisfied_by(self, value: Any) -> bool:
        return value is not None and not isinstance(value, (str, bytes)) and hasattr(value, "__iter__")

    def describe(self) -> str:
        return self.what

    def invalid_examples(self) -> list[Any]:
        return [None, "a/b", 1]


class _Frame(Constraint):
    """A pandas or polars DataFrame (anything with ``columns`` that is not a plain container)."""

    hint = "for a list of paths use Hierarchy.from_paths"

    def is_satisfied_by(self, value: Any) -> bool:
        return getattr(value, "columns", None) is not None and not isinstance(value, (list, tuple, dict))

    def describe(self) -> str:
        return "a pandas or polars DataFrame"

    def invalid_examples(self) -> list[Any]:
        return [[1, 2], {"a": [1]}]


_PATHS = _Listing("a list of root-to-leaf paths such as ['US/CA', 'US/NY'] or [('US', 'CA')]")
_NAMES = _Listing("a list of column names, e.g. ['country', 'state']")
_LABEL = InstanceOf(str, description="a label (a string)")


class Hierarchy:
    """A public rooted tree of any arity and depth (Ghazi et al. 2023, Problem 1.2).

    Build it with :meth:`from_paths` (root-to-leaf label paths), :meth:`from_frame` (a table with
    one column per level, one row per leaf) or :meth:`from_parent_table` (node/parent pairs).
    The structure is public input: it must never be derived from the private rows, so that every
    node (also an unseen county) gets a noisy count.

    The root is implicit (the total; path ``()`` or ``''``); paths start at level 1. The depth
    ``d`` is the number of nodes on the longest root-to-leaf path, root included (Ghazi et al. 2023,
    footnote 2). When leaves sit at different depths, ``d`` is the maximum: one record changes
    the counts of the nodes on its leaf's path, so ``d`` is the largest number of counts one
    record can change (the L1 sensitivity of Corollary 2.7), and ``d`` is the number of
    levels the estimator works on.

    ``other``: if given (e.g. ``"(other)"``), every internal node gets an extra leaf child with
    that label, built from the public structure alone, before any data is seen. Rows whose path
    is unknown can then be mapped to the "other" leaf of their deepest known ancestor (see
    ``hierarchy_counts(..., unknown="other")``). It must exist whether or not any row needs it:
    a leaf created only when the private data holds an unknown path would reveal that fact.
    """

    def __init__(
        self,
        parents: list[np.ndarray | None],
        labels: list[np.ndarray],
        *,
        levels: Sequence[str] | None = None,
        other: str | None = None,
        root_label: str = "(all)",
    ) -> None:
        self.parents = parents
        self.labels = labels
        self.sizes = [int(lab.size) for lab in labels]
        self.depth = len(labels)
        self.other = other
        self.root_label = root_label
        if levels is None:
            levels = [f"level_{j}" for j in range(1, self.depth)]
        self.levels = [str(c) for c in levels]
        if len(self.levels) != self.depth - 1:
            raise InvalidParameterError(
                f"{len(self.levels)} level names given for a tree with {self.depth - 1} levels below the root"
            )
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        self.n_nodes = int(self.offsets[-1])
        # first_child[j][i]: index in level j+1 of the first child of node i of level j
        self.first_child: list[np.ndarray] = []
        self.n_children: list[np.ndarray] = []
        for j in range(self.depth):
            if j + 1 < self.depth:
                par = np.asarray(parents[j + 1], dtype=np.int64)
                cnt = np.bincount(par, minlength=self.sizes[j])
                self.n_children.append(cnt)
                self.first_child.append(np.concatenate([[0], np.cumsum(cnt)[:-1]]).astype(np.int64))
            else:
                self.n_children.append(np.zeros(self.sizes[j], dtype=np.int64))
                self.first_child.append(np.zeros(self.sizes[j], dtype=np.int64))
        self.is_leaf = [c == 0 for c in self.n_children]
        self.n_leaves = int(sum(int(x.sum()) for x in self.is_leaf))
        self._vocab: list[np.ndarray] | None = None
        self._codes: list[np.ndarray] | None = None

    # ------------------------------------------------------------------ constructors

    @classmethod
    @validate_params({"paths": [_PATHS], "levels": [None, _NAMES], "other": [None, _LABEL], "root_label": [_LABEL]})
    def from_paths(
        cls,
        paths: Iterable[str | Sequence[Any]],
        *,
        levels: Sequence[str] | None = None,
        other: str | None = None,
        root_label: str = "(all)",
    ) -> "Hierarchy":
        """A hierarchy from its root-to-leaf paths (``'US/CA/SF'`` or ``('US', 'CA', 'SF')``).

        Every leaf must be listed exactly once; a listed path that is the prefix of another is an
        error (a leaf cannot have children). The root is implicit and not part of the paths.
        """
        return build(cls, path_columns(paths), levels=levels, other=other, root_label=root_label)

    @classmethod
    @validate_params({"frame": [_Frame()], "levels": [_NAMES], "other": [None, _LABEL], "root_label": [_LABEL]})
    def from_frame(
        cls,
        frame: Any,
        levels: Sequence[str],
        *,
        other: str | None = None,
        root_label: str = "(all)",
    ) -> "Hierarchy":
        """A hierarchy from a table with one row per leaf and one column per level.

        Trailing nulls end a path early (that leaf sits higher in the tree); a null followed by
        a label is an error.
        """
        levels = list(levels)
        if not levels:
            raise InvalidParameterError("levels must name at least one column")
        return build(cls, frame_columns(frame, levels), levels=levels, other=other, root_label=root_label)

    @classmethod
    @validate_params({"node": [_LABEL], "parent": [_LABEL], "levels": [None, _NAMES], "other": [None, _LABEL]})
    def from_parent_table(
        cls,
        table: Any,
        *,
        node: str = "node",
        parent: str = "parent",
        levels: Sequence[str] | None = None,
        other: str | None = None,
    ) -> "Hierarchy":
        """A hierarchy from (node, parent) pairs (a mapping, a table or a list of pairs); node ids
        must be unique.

        Nodes whose parent is null/empty hang below the root. If exactly one node has no parent,
        it *is* the root (its label becomes ``root_label``); otherwise the root is implicit.
        Cycles and unknown parents are errors.
        """
        cols, root_label = parent_table_columns(table, node, parent)
        return build(cls, cols, levels=levels, other=other, root_label=root_label)

    # ------------------------------------------------------------------ addressing

    def level_of(self, gid: np.ndarray | int) -> np.ndarray:
        """Level (0 = root) of global node ids."""
        return np.searchsorted(self.offsets, np.asarray(gid), side="right") - 1

    def path_of(self, gid: int) -> tuple[str, ...]:
        """The label path of a node given by its global id (root: ())."""
        j = int(self.level_of(gid))
        i = int(gid) - int(self.offsets[j])
        out = []
        while j > 0:
            out.append(str(self.labels[j][i]))
            i = int(self.parents[j][i])  # type: ignore[index]
            j -= 1
        return tuple(reversed(out))

    def path_string(self, gid: int) -> str:
        return SEP.join(self.path_of(gid))

    def all_paths(self) -> list[str]:
        """Path strings of all nodes in global-id order (level by level)."""
        out: list[np.ndarray] = [np.array([""], dtype=object)]
        for j in range(1, self.depth):
            par = np.asarray(self.parents[j])
            prefix = out[j - 1][par]
            labs = self.labels[j].astype(str)
            if j == 1:
                out.append(labs.astype(object))
            else:
                out.append(np.char.add(np.char.add(prefix.astype(str), SEP), labs).astype(object))
        return [str(p) for level in out for p in level]

    def node_id(self, path: str | Sequence[Any]) -> int:
        """Global id of the node named by ``path``; raises DomainError if there is none."""
        labs = split_path(path)
        j, i = 0, 0
        for depth, lab in enumerate(labs, start=1):
            if depth >= self.depth or self.n_children[j][i] == 0:
                raise DomainError(
                    f"path {SEP.join(labs)!r} names no node: {SEP.join(labs[: depth - 1]) or 'the root'} "
                    "has no children"
                )
            lo = int(self.first_child[j][i])
            hi = lo + int(self.n_children[j][i])
            block = self.labels[depth][lo:hi]
            k = int(np.searchsorted(block, lab))
            if k >= block.size or block[k] != lab:
                raise DomainError(
                    f"path {SEP.join(labs)!r} names no node: {lab!r} is not a child of "
                    f"{SEP.join(labs[: depth - 1]) or 'the root'}"
                )
            j, i = depth, lo + k
        return int(self.offsets[j] + i)

    def vocab(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Sorted label vocabulary per level and each node's code in it (for vectorised lookup)."""
        if self._vocab is None:
            vocab: list[np.ndarray] = [np.array([], dtype=object)]
            codes: list[np.ndarray] = [np.zeros(1, dtype=np.int64)]
            for j in range(1, self.depth):
                u, c = np.unique(self.labels[j], return_inverse=True)
                vocab.append(np.asarray(u, dtype=object))
                codes.append(c.reshape(-1).astype(np.int64))
            self._vocab, self._codes = vocab, codes
        assert self._codes is not None
        return self._vocab, self._codes

    def other_leaf(self) -> list[np.ndarray]:
        """For each node (per level), the index (next level) of its 'other' leaf child or -1."""
        out = []
        for j in range(self.depth):
            res = np.full(self.sizes[j], -1, dtype=np.int64)
            if self.other is not None and j + 1 < self.depth:
                hit = np.flatnonzero(self.labels[j + 1] == self.other)
                res[np.asarray(self.parents[j + 1])[hit]] = hit
            out.append(res)
        return out

    # ------------------------------------------------------------------ serialisation

    def leaf_paths(self) -> list[str]:
        paths = self.all_paths()
        flags = np.concatenate(self.is_leaf)
        return [p for p, f in zip(paths, flags) if f]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description (leaf paths; 'other' leaves are listed like any leaf)."""
        return {
            "levels": list(self.levels),
            "root_label": self.root_label,
            "other": self.other,
            "leaves": self.leaf_paths(),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Hierarchy":
        try:
            leaves = list(d["leaves"])
            levels = list(d["levels"])
            root_label = str(d.get("root_label", "(all)"))
            other = d.get("other")
        except (KeyError, TypeError) as exc:
            raise InvalidParameterError(f"malformed hierarchy description: {exc}") from exc
        h = cls.from_paths(leaves, levels=levels, root_label=root_label)
        h.other = None if other is None else str(other)
        return h

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Hierarchy):
            return NotImplemented
        return (
            self.sizes == other.sizes
            and all(np.array_equal(a, b) for a, b in zip(self.labels, other.labels))
            and all(
                (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))
                for a, b in zip(self.parents, other.parents)
            )
        )

    def __repr__(self) -> str:
        return f"Hierarchy(depth={self.depth}, nodes={self.n_nodes}, leaves={self.n_leaves}, levels={self.levels})"
