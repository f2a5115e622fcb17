"""Building the level arrays of a public hierarchy from its description (Ghazi et al. 2023: a rooted tree of
any arity, known a priori).

Every constructor of :class:`~dptree.hierarchy.structure.Hierarchy` reduces its input (label
paths, a table with one column per level, node/parent pairs) to *columns*: one list per level
below the root, one entry per leaf, ``None`` where a leaf ends above that level. :func:`build`
turns the columns into the sorted level arrays. Only public structure passes through here.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from dptree.errors import DomainError, InputFormatError, InvalidParameterError
from dptree.hierarchy.levels import Column, check_labels, column_from_list, level_arrays, string_path_columns

__all__ = ["SEP", "MAX_DEPTH", "split_path", "label", "is_null", "path_columns", "frame_columns",
           "parent_table_columns", "build"]

SEP = "/"
MAX_DEPTH = 1000
Columns = list[Column]


def is_null(v: Any) -> bool:
    """A missing label: None, NaN, or whatever pandas calls missing (labels are never containers)."""
    if v is None or (isinstance(v, float) and v != v):
        return True
    if isinstance(v, (str, tuple, list)):
        return False
    import pandas as pd

    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):  # an object pd.isna cannot judge
        return False


def label(v: Any) -> str:
    """Labels are compared as strings; integral floats (from columns with nulls) lose '.0'."""
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    if isinstance(v, bytes):
        try:
            return v.decode()
        except UnicodeDecodeError:
            raise DomainError("a label is bytes that are not UTF-8 text; decode the labels first (for example "
                              "with bytes.decode and the encoding they were written in)") from None
    return str(v)


def split_path(path: str | Sequence[Any]) -> tuple[str, ...]:
    """'US/CA' -> ('US', 'CA'); '' or () -> () (the root); tuples are taken label by label."""
    if isinstance(path, str):
        return tuple(path.split(SEP)) if path not in ("", SEP) else ()
    if isinstance(path, (tuple, list)):
        labels = list(path)
        while labels and is_null(labels[-1]):
            labels.pop()  # trailing nulls end a path early, as in a table (from_frame, data frames)
        return tuple("" if is_null(p) else label(p) for p in labels)  # an inner null: empty label
    raise InvalidParameterError(f"a path must be a string like 'US/CA' or a tuple of labels, got {type(path).__name__}")


def _columns(rows: Sequence[tuple[str, ...]]) -> Columns:
    width = max(len(r) for r in rows)
    return [column_from_list([r[j] if j < len(r) else None for r in rows]) for j in range(width)]


def path_columns(paths: Iterable[str | Sequence[Any]]) -> Columns:
    """The columns of a list of root-to-leaf paths (every path non-empty, no empty label)."""
    listed = list(paths)
    if listed and set(map(type, listed)) == {str}:
        cols = string_path_columns(listed)  # type: ignore[arg-type]  # split in Arrow, not one tuple per path
        if cols is not None:
            return cols
    rows = [split_path(p) for p in listed]
    if not rows:
        raise DomainError("the hierarchy is empty: give at least one root-to-leaf path")
    for r in rows:
        if len(r) == 0:
            raise DomainError("an empty path names the root; list root-to-leaf paths such as 'US/CA'")
        if "" in r:
            raise DomainError(f"path {SEP.join(r)!r} has an empty label")
    return _columns(rows)


def frame_columns(frame: Any, levels: list[str]) -> Columns:
    """The columns of a pandas or polars table with one row per leaf and one column per level."""
    names = [str(c) for c in frame.columns]
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
        cols.append(column_from_list([None if is_null(v) else label(v) for v in col.to_list()]))
    return cols


def _pairs(table: Any, node: str, parent: str) -> list[tuple[Any, Any]]:
    if isinstance(table, Mapping):
        return list(table.items())
    if hasattr(table, "columns"):
        for c in (node, parent):
            if c not in table.columns:
                raise InputFormatError(f"parent table has no column {c!r}; it has {list(table.columns)}")
        return list(zip(table[node].tolist(), table[parent].tolist()))
    bad = InputFormatError("a parent table is a mapping {node: parent}, a table with columns "
                           f"{node!r} and {parent!r}, or a list of (node, parent) pairs")
    if isinstance(table, (str, bytes)):
        raise bad
    try:
        rows = list(table)
        pairs = [tuple(p) for p in rows if not isinstance(p, (str, bytes))]
    except TypeError:
        raise bad from None
    if len(pairs) != len(rows) or any(len(p) != 2 for p in pairs):
        raise bad
    return pairs


def _cycle_or_depth_error(ids: list[str], par: np.ndarray, start: int) -> DomainError:
    seen: list[int] = []
    v = start
    for _ in range(len(ids) + 1):
        seen.append(v)
        v = int(par[v])
        if v < 0 or v in seen:
            break
    if v >= 0:
        cyc = [ids[k] for k in seen[seen.index(v):]] + [ids[v]]
        return DomainError(f"the parent table has a cycle: {' -> '.join(cyc)}")
    return DomainError(f"the hierarchy is deeper than {MAX_DEPTH} levels")


def parent_table_columns(table: Any, node: str, parent: str) -> tuple[Columns, str]:
    """The columns of (node, parent) pairs, and the root label: the one node without a parent, if
    there is exactly one (else the root is implicit, "(all)"). Cycles and unknown parents are errors."""
    pairs = _pairs(table, node, parent)
    if not pairs:
        raise DomainError("the hierarchy is empty: the parent table has no rows")
    ids: list[str] = []
    pars: list[str | None] = []
    for a, b in pairs:
        if is_null(a) or label(a) == "":
            raise DomainError("a node id in the parent table is empty")
        ids.append(label(a))
        pars.append(None if (is_null(b) or label(b) == "") else label(b))
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
    anc = par.copy()  # walk every node up to its top node, detecting cycles
    active = np.flatnonzero(anc >= 0)
    steps = 0
    while active.size:
        steps += 1
        if steps > MAX_DEPTH:
            raise _cycle_or_depth_error(ids, par, int(active[0]))
        anc[active] = par[anc[active]]
        active = active[anc[active] >= 0]
    tops = np.flatnonzero(par < 0)
    root_label, skip = (ids[int(tops[0])], 1) if tops.size == 1 else ("(all)", 0)
    has_child = np.zeros(n, dtype=bool)
    has_child[par[par >= 0]] = True
    rows: list[tuple[str, ...]] = []
    for leaf in np.flatnonzero(~has_child).tolist():
        chain = []
        v = leaf
        while v >= 0:
            chain.append(ids[v])
            v = int(par[v])
        rows.append(tuple(reversed(chain))[skip:])
    if skip and len(rows) == 1 and rows[0] == ():
        raise DomainError("the hierarchy has a single node; it needs at least one leaf below the root")
    return _columns(rows), root_label


def _check_labels(cols: Columns, other: str | None) -> None:
    if len(cols) + 1 > MAX_DEPTH:
        raise DomainError(f"the hierarchy is deeper than {MAX_DEPTH} levels")
    check_labels(cols)
    if other is not None and (other == "" or SEP in other):
        raise InvalidParameterError(f"other={other!r} must be a non-empty label without {SEP!r}")


def _with_other(tree: Any, other: str, leaf_flag: np.ndarray) -> Columns:
    """Columns of the tree's leaves plus an ``other`` leaf under every internal node. A leaf that
    already has that label is reused only where every internal node has one (the paths of a
    hierarchy already built with ``other=``); under some nodes but not all it is a real category
    (``other="CA"`` beside US/CA), whose count unknown rows would silently join: an error, as is an
    existing ``other`` child with children of its own."""
    has_other = np.zeros(tree.n_nodes, dtype=bool)
    clash: list[int] = []
    for j in range(1, tree.depth):
        hit = np.flatnonzero(tree.labels[j] == other)
        owner = tree.offsets[j - 1] + np.asarray(tree.parents[j])[hit]
        has_other[owner] = True
        clash.extend(owner[~tree.is_leaf[j][hit]].tolist())
    if clash:
        g = min(clash)
        raise DomainError(f"{SEP.join(tree.path_of(g) + (other,))!r} exists and has children; "
                          "choose another 'other' label")
    internal = ~leaf_flag
    if has_other.any() and (internal & ~has_other).any():
        g = int(np.flatnonzero(has_other)[0])
        raise DomainError(f"other={other!r} is already a leaf ({SEP.join(tree.path_of(g) + (other,))!r}) but not "
                          "under every node: unknown rows would be counted in that real category; choose a "
                          "label that no node has, e.g. other='(other)'")
    ends = np.concatenate([np.flatnonzero(leaf_flag), np.flatnonzero(~leaf_flag & ~has_other)])
    n_leaf = int(leaf_flag.sum())
    end_level = tree.level_of(ends)
    extra = np.arange(ends.size) >= n_leaf  # rows that end in a new 'other' leaf below their node
    row_depth = end_level + extra
    cur = ends - tree.offsets[end_level]
    lev = end_level.copy()
    width = int(row_depth.max())
    cols: Columns = []
    at_level: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * (width + 1)
    for j in range(width, 0, -1):  # walk every row up from its end node, one level at a time
        idx = np.full(ends.size, -1, dtype=np.int64)
        here = lev == j
        idx[here] = cur[here]
        cur[here] = np.asarray(tree.parents[j])[cur[here]]
        lev[here] -= 1
        at_level[j] = idx
    for j in range(1, width + 1):
        present = row_depth >= j
        lab = np.empty(ends.size, dtype=object)
        inner = at_level[j] >= 0
        lab[inner] = tree.labels[j][at_level[j][inner]]
        lab[extra & (row_depth == j)] = other
        cols.append(column_from_list(lab[present].tolist(), present))
    return cols


def build(cls: Any, cols: Columns, *, levels: Sequence[str] | None, other: str | None, root_label: str) -> Any:
    """A ``cls`` (:class:`~dptree.hierarchy.structure.Hierarchy`) from columns: every row must end
    at a distinct leaf. ``other``: an extra leaf with that label under every internal node, added
    from the public structure alone, before any data is seen."""
    if levels is not None and len(levels) != len(cols):
        raise InvalidParameterError(f"{len(levels)} level names for paths with {len(cols)} levels")
    _check_labels(cols, other)
    parents, labels, end_level, end_node = level_arrays(cols, root_label)
    lv = None if levels is None else list(levels)[: len(parents) - 1]
    tree = cls(parents, labels, levels=lv, other=None, root_label=root_label)
    gid = tree.offsets[end_level] + end_node
    leaf_flag = np.concatenate(tree.is_leaf)
    not_leaf = ~leaf_flag[gid]
    if not_leaf.any():
        i = int(np.flatnonzero(not_leaf)[0])
        shown = SEP.join(lab for lab in (c.label_at(i) for c in cols) if lab is not None)
        raise DomainError(
            f"path {shown!r} is listed as a leaf but other paths continue below it; list only root-to-leaf paths"
        )
    counts = np.bincount(gid, minlength=tree.n_nodes)
    if (counts > 1).any():
        g = int(np.flatnonzero(counts > 1)[0])
        raise DomainError(f"path {tree.path_string(g)!r} is listed more than once (duplicate structure)")
    if tree.depth < 2:
        raise DomainError("the hierarchy is empty: it needs at least one level below the root")
    if other is None:
        return tree
    out = build(cls, _with_other(tree, other, leaf_flag), levels=tree.levels, other=None, root_label=root_label)
    out.other = other
    return out
