"""The list-and-tuple hierarchy builder, kept verbatim as the reference
oracle of tests/unit/hierarchy/test_hierarchy_building.py (not used by dptree)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from dptree.errors import DomainError, InputFormatError, InvalidParameterError

__all__ = ["SEP", "MAX_DEPTH", "split_path", "label", "is_null", "path_columns", "frame_columns",
           "parent_table_columns", "build"]

SEP = "/"
MAX_DEPTH = 1000
Columns = list[list[Any]]


def is_null(v: Any) -> bool:
    """A missing label: None, NaN, or whatever pandas calls missing (labels are never containers)."""
    if v is None or (isinstance(v, float) and v != v):
        return True
    if isinstance(v, (str, tuple, list)):
        return False
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):  # an object pd.isna cannot judge
        return False


def label(v: Any) -> str:
    """Labels are compared as strings; integral floats (from columns with nulls) lose '.0'."""
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    if isinstance(v, bytes):
        return v.decode()
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
    return [[r[j] if j < len(r) else None for r in rows] for j in range(width)]


def path_columns(paths: Iterable[str | Sequence[Any]]) -> Columns:
    """The columns of a list of root-to-leaf paths (every path non-empty, no empty label)."""
    rows = [split_path(p) for p in paths]
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
        cols.append([None if is_null(v) else label(v) for v in col.to_list()])
    return cols


def _pairs(table: Any, node: str, parent: str) -> list[tuple[Any, Any]]:
    if isinstance(table, Mapping):
        return list(table.items())
    if hasattr(table, "columns"):
        for c in (node, parent):
            if c not in table.columns:
                raise InputFormatError(f"parent table has no column {c!r}; it has {list(table.columns)}")
        return list(zip(table[node].tolist(), table[parent].tolist()))
    return [tuple(p) for p in table]


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
    for col in cols:
        for lab in col:
            if lab is not None and SEP in lab:
                raise DomainError(f"label {lab!r} contains {SEP!r}, the path separator; rename it")
            if lab == "":
                raise DomainError("a label of the hierarchy is empty")
    if other is not None and (other == "" or SEP in other):
        raise InvalidParameterError(f"other={other!r} must be a non-empty label without {SEP!r}")


def _levels(cols: Columns, root_label: str) -> tuple[list[np.ndarray | None], list[np.ndarray], np.ndarray, np.ndarray]:
    """Level arrays (nodes of a level sorted by (parent, label)) and where each row ends."""
    n_rows = len(cols[0])
    node = np.zeros(n_rows, dtype=np.int64)
    ended = np.zeros(n_rows, dtype=bool)
    end_level = np.zeros(n_rows, dtype=np.int64)
    end_node = np.zeros(n_rows, dtype=np.int64)
    parents: list[np.ndarray | None] = [None]
    labels: list[np.ndarray] = [np.array([root_label], dtype=object)]
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
        uniq, codes = np.unique(arr[live], return_inverse=True)  # labels are str: sorted as Python sorts
        key = node[live] * len(uniq) + codes.reshape(-1)
        ukey, inv = np.unique(key, return_inverse=True)
        parents.append((ukey // len(uniq)).astype(np.int64))
        labels.append(np.asarray(uniq, dtype=object)[ukey % len(uniq)])
        node[live] = inv.reshape(-1)
    full = ~ended
    end_level[full] = len(parents) - 1
    end_node[full] = node[full]
    return parents, labels, end_level, end_node


def build(cls: Any, cols: Columns, *, levels: Sequence[str] | None, other: str | None, root_label: str) -> Any:
    """A ``cls`` (:class:`~dptree.hierarchy.structure.Hierarchy`) from columns: every row must end
    at a distinct leaf. ``other``: an extra leaf with that label under every internal node, added
    from the public structure alone, before any data is seen."""
    if levels is not None and len(levels) != len(cols):
        raise InvalidParameterError(f"{len(levels)} level names for paths with {len(cols)} levels")
    _check_labels(cols, other)
    parents, labels, end_level, end_node = _levels(cols, root_label)
    lv = None if levels is None else list(levels)[: len(parents) - 1]
    tree = cls(parents, labels, levels=lv, other=None, root_label=root_label)
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
    existing = {tree.path_of(g) for g in range(tree.n_nodes)}
    extra_rows: list[tuple[str, ...]] = []
    reused: list[int] = []
    for g in np.flatnonzero(~leaf_flag).tolist():
        op = tree.path_of(g) + (other,)
        if op in existing:
            if not leaf_flag[tree.node_id(op)]:
                raise DomainError(f"{SEP.join(op)!r} exists and has children; choose another 'other' label")
            reused.append(g)
            continue
        extra_rows.append(op)
    if reused and extra_rows:  # the label is a leaf under some nodes, not all: a real category
        op = tree.path_of(min(reused)) + (other,)
        raise DomainError(f"other={other!r} is already a leaf ({SEP.join(op)!r}) but not under every node: unknown "
                          "rows would be counted in that real category; choose a label that no node has, e.g. "
                          "other='(other)'")
    leaf_rows = [tree.path_of(g) for g in np.flatnonzero(leaf_flag).tolist()] + extra_rows
    out = build(cls, _columns(leaf_rows), levels=tree.levels, other=None, root_label=root_label)
    out.other = other
    return out
