"""The public tree of a hierarchy release (seed 001: a rooted tree of any arity, known a priori).

:class:`Hierarchy` is re-exported as ``dptree.Hierarchy``. Internally a tree is stored the way
:func:`dptree.estimation.least_squares.consistent_estimates` wants it: one array per depth, level 0 holding the
root, ``parents[j][i]`` the index (in level j-1) of node i of level j. Nodes of a level are
sorted by (parent, label), so the children of a node are contiguous and sorted by label.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from dptree.errors import DomainError, InputFormatError, InvalidParameterError

__all__ = ["Hierarchy", "SEP"]

SEP = "/"
_MAX_DEPTH = 1000


def _is_null(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, float) and v != v:
        return True
    try:
        import pandas as pd

        return bool(pd.isna(v)) if not isinstance(v, (str, tuple, list)) else False
    except (ImportError, TypeError, ValueError):  # no pandas, or an object pd.isna cannot judge
        return False


def _label(v: Any) -> str:
    """Labels are compared as strings; integral floats (from columns with nulls) lose '.0'."""
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    if isinstance(v, bytes):
        return v.decode()
    return str(v)


def split_path(path: str | Sequence[Any]) -> tuple[str, ...]:
    """'US/CA' -> ('US', 'CA'); '' or () -> () (the root); tuples are taken label by label."""
    if isinstance(path, str):
        return tuple(p for p in path.split(SEP)) if path not in ("", SEP) else ()
    if isinstance(path, (tuple, list)):
        labels = list(path)
        while labels and _is_null(labels[-1]):
            labels.pop()  # trailing nulls end a path early, as in a table (from_frame, data frames)
        return tuple("" if _is_null(p) else _label(p) for p in labels)  # an inner null: empty label
    raise InvalidParameterError(f"a path must be a string like 'US/CA' or a tuple of labels, got {type(path).__name__}")


class Hierarchy:
    """A public rooted tree of any arity and depth (seed 001, Problem 1.2).

    Build it with :meth:`from_paths` (root-to-leaf label paths), :meth:`from_frame` (a table with
    one column per level, one row per leaf) or :meth:`from_parent_table` (node/parent pairs).
    The structure is public input: it must never be derived from the private rows, so that every
    node (also an unseen county) gets a noisy count.

    The root is implicit (the total; path ``()`` or ``''``); paths start at level 1. The depth
    ``d`` is the number of nodes on the longest root-to-leaf path, root included (seed 001,
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
        if paths is None or isinstance(paths, (str, bytes)) or not hasattr(paths, "__iter__"):
            raise InvalidParameterError(
                "paths must be a list of root-to-leaf paths such as ['US/CA', 'US/NY'] or [('US', 'CA')]"
            )
        rows = [split_path(p) for p in paths]
        if not rows:
            raise DomainError("the hierarchy is empty: give at least one root-to-leaf path")
        for r in rows:
            if len(r) == 0:
                raise DomainError("an empty path names the root; list root-to-leaf paths such as 'US/CA'")
            for lab in r:
                if lab == "":
                    raise DomainError(f"path {SEP.join(r)!r} has an empty label")
        width = max(len(r) for r in rows)
        cols = [[r[j] if j < len(r) else None for r in rows] for j in range(width)]
        return cls._build(cols, levels=levels, other=other, root_label=root_label)

    @classmethod
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
        if isinstance(levels, str) or not hasattr(levels, "__iter__"):
            raise InvalidParameterError("levels must be a list of column names, e.g. ['country', 'state']")
        levels = list(levels)
        if not levels:
            raise InvalidParameterError("levels must name at least one column")
        names = getattr(frame, "columns", None)
        if names is None or isinstance(frame, (list, tuple, dict)):
            raise InvalidParameterError(
                "from_frame needs a pandas or polars DataFrame; for a list of paths use Hierarchy.from_paths"
            )
        names = [str(c) for c in names]
        missing = [c for c in levels if c not in names]
        if missing:
            raise InputFormatError(f"structure table has no column(s) {missing}; it has {names}")
        duplicated = sorted({c for c in levels if names.count(c) > 1})
        if duplicated:
            raise InputFormatError(f"structure table has duplicate column(s) {duplicated}; rename them first")
        if len(frame) == 0:
            raise DomainError("the hierarchy is empty: the structure table has no rows")
        cols = []
        for c in levels:
            col = frame.get_column(c) if hasattr(frame, "get_column") else frame[c]  # polars, pandas
            vals = col.to_list()
            cols.append([None if _is_null(v) else _label(v) for v in vals])
        return cls._build(cols, levels=levels, other=other, root_label=root_label)

    @classmethod
    def from_parent_table(
        cls,
        table: Any,
        *,
        node: str = "node",
        parent: str = "parent",
        levels: Sequence[str] | None = None,
        other: str | None = None,
    ) -> "Hierarchy":
        """A hierarchy from (node, parent) pairs; node ids must be unique.

        Nodes whose parent is null/empty hang below the root. If exactly one node has no parent,
        it *is* the root (its label becomes ``root_label``); otherwise the root is implicit.
        Cycles and unknown parents are errors.
        """
        if isinstance(table, Mapping):
            pairs = list(table.items())
        elif hasattr(table, "columns"):
            for c in (node, parent):
                if c not in table.columns:
                    raise InputFormatError(f"parent table has no column {c!r}; it has {list(table.columns)}")
            pairs = list(zip(table[node].tolist(), table[parent].tolist()))
        else:
            pairs = [tuple(p) for p in table]
        if not pairs:
            raise DomainError("the hierarchy is empty: the parent table has no rows")
        ids: list[str] = []
        pars: list[str | None] = []
        for a, b in pairs:
            if _is_null(a) or _label(a) == "":
                raise DomainError("a node id in the parent table is empty")
            ids.append(_label(a))
            pars.append(None if (_is_null(b) or _label(b) == "") else _label(b))
        pos: dict[str, int] = {}
        for i, a in enumerate(ids):
            if a in pos:
                raise DomainError(f"node {a!r} appears twice in the parent table; node ids must be unique")
            pos[a] = i
        n = len(ids)
        par = np.full(n, -1, dtype=np.int64)
        for i, b in enumerate(pars):
            if b is not None:
                if b not in pos:
                    raise DomainError(f"node {ids[i]!r} has parent {b!r}, which is not a node of the table")
                if b == ids[i]:
                    raise DomainError(f"node {b!r} is its own parent (a cycle)")
                par[i] = pos[b]
        # depth by walking up, with cycle detection
        depth = np.zeros(n, dtype=np.int64)
        anc = par.copy()
        active = np.flatnonzero(anc >= 0)
        steps = 0
        while active.size:
            steps += 1
            if steps > _MAX_DEPTH:
                start = int(active[0])
                seen = []
                v = start
                for _ in range(n + 1):
                    seen.append(v)
                    v = int(par[v])
                    if v < 0 or v in seen:
                        break
                if v >= 0:
                    cyc = [ids[k] for k in seen[seen.index(v) :]] + [ids[v]]
                    raise DomainError(f"the parent table has a cycle: {' -> '.join(cyc)}")
                raise DomainError(f"the hierarchy is deeper than {_MAX_DEPTH} levels")
            depth[active] += 1
            anc[active] = par[anc[active]]
            active = active[anc[active] >= 0]
        tops = np.flatnonzero(par < 0)
        root_label = "(all)"
        skip = 0
        if tops.size == 1:
            root_label = ids[int(tops[0])]
            skip = 1
        has_child = np.zeros(n, dtype=bool)
        has_child[par[par >= 0]] = True
        leaves = np.flatnonzero(~has_child)
        rows: list[tuple[str, ...]] = []
        for leaf in leaves.tolist():
            chain = []
            v = leaf
            while v >= 0:
                chain.append(ids[v])
                v = int(par[v])
            chain.reverse()
            rows.append(tuple(chain[skip:]))
        if skip and len(rows) == 1 and rows[0] == ():
            raise DomainError("the hierarchy has a single node; it needs at least one leaf below the root")
        width = max(len(r) for r in rows)
        cols = [[r[j] if j < len(r) else None for r in rows] for j in range(width)]
        return cls._build(cols, levels=levels, other=other, root_label=root_label)

    @classmethod
    def _build(
        cls,
        cols: list[list[str | None]],
        *,
        levels: Sequence[str] | None,
        other: str | None,
        root_label: str,
    ) -> "Hierarchy":
        import pandas as pd

        if len(cols) + 1 > _MAX_DEPTH:
            raise DomainError(f"the hierarchy is deeper than {_MAX_DEPTH} levels")
        if levels is not None and len(levels) != len(cols):
            raise InvalidParameterError(f"{len(levels)} level names for paths with {len(cols)} levels")
        n_rows = len(cols[0])
        for col in cols:
            for lab in col:
                if lab is not None and SEP in lab:
                    raise DomainError(f"label {lab!r} contains {SEP!r}, the path separator; rename it")
                if lab == "":
                    raise DomainError("a label of the hierarchy is empty")
        if other is not None:
            other = str(other)
            if other == "" or SEP in other:
                raise InvalidParameterError(f"other={other!r} must be a non-empty label without {SEP!r}")
        node = np.zeros(n_rows, dtype=np.int64)
        ended = np.zeros(n_rows, dtype=bool)
        end_level = np.zeros(n_rows, dtype=np.int64)
        end_node = np.zeros(n_rows, dtype=np.int64)
        parents: list[np.ndarray | None] = [None]
        labels: list[np.ndarray] = [np.array([root_label], dtype=object)]
        prev_size = 1
        for j, col in enumerate(cols, start=1):
            arr = np.array(col, dtype=object)
            null = np.array([v is None for v in col], dtype=bool)
            bad = ended & ~null
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise DomainError(
                    f"structure row {i} has a missing level followed by a label ({col[i]!r}); "
                    "only trailing levels may be empty"
                )
            newly = ~ended & null
            end_level[newly] = j - 1
            end_node[newly] = node[newly]
            ended |= null
            live = np.flatnonzero(~ended)
            if live.size == 0:
                break
            codes, uniq = pd.factorize(arr[live], sort=True)
            key = node[live] * len(uniq) + codes
            ukey, inv = np.unique(key, return_inverse=True)
            parents.append((ukey // len(uniq)).astype(np.int64))
            labels.append(np.asarray(uniq, dtype=object)[ukey % len(uniq)])
            node[live] = inv
            prev_size = ukey.size
        del prev_size
        full = ~ended
        end_level[full] = len(parents) - 1
        end_node[full] = node[full]
        lv = None if levels is None else list(levels)[: len(parents) - 1]
        tree = cls(parents, labels, levels=lv, other=None, root_label=root_label)
        # every listed row must end at a leaf, exactly once
        gid = tree.offsets[end_level] + end_node
        leaf_flag = np.concatenate(tree.is_leaf)
        not_leaf = ~leaf_flag[gid]
        if not_leaf.any():
            i = int(np.flatnonzero(not_leaf)[0])
            shown = SEP.join(str(c[i]) for c in cols if c[i] is not None)
            raise DomainError(
                f"path {shown!r} is listed as a leaf but other paths continue below it; list only root-to-leaf paths"
            )
        uniq_gid, counts = np.unique(gid, return_counts=True)
        if (counts > 1).any():
            g = int(uniq_gid[np.flatnonzero(counts > 1)[0]])
            raise DomainError(f"path {tree.path_string(g)!r} is listed more than once (duplicate structure)")
        if tree.depth < 2:
            raise DomainError("the hierarchy is empty: it needs at least one level below the root")
        if other is None:
            return tree
        # add an "other" leaf under every internal node (public, data-independent)
        internal = np.flatnonzero(~leaf_flag)
        extra_rows: list[tuple[str, ...]] = []
        existing = set()
        for g in range(tree.n_nodes):
            existing.add(tree.path_of(g))
        for g in internal.tolist():
            op = tree.path_of(g) + (other,)
            if op in existing:
                if not leaf_flag[tree.node_id(op)]:
                    raise DomainError(f"{SEP.join(op)!r} exists and has children; choose another 'other' label")
                continue
            extra_rows.append(op)
        leaf_rows = [tree.path_of(g) for g in np.flatnonzero(leaf_flag).tolist()] + extra_rows
        width = tree.depth - 1
        cols2 = [[r[j] if j < len(r) else None for r in leaf_rows] for j in range(width)]
        out = cls._build(cols2, levels=tree.levels, other=None, root_label=root_label)
        out.other = other
        return out

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
            import pandas as pd

            vocab: list[np.ndarray] = [np.array([], dtype=object)]
            codes: list[np.ndarray] = [np.zeros(1, dtype=np.int64)]
            for j in range(1, self.depth):
                c, u = pd.factorize(self.labels[j], sort=True)
                vocab.append(np.asarray(u, dtype=object))
                codes.append(c.astype(np.int64))
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
