"""Level arrays of a public hierarchy from integer codes.

A :class:`Column` holds one level's labels for the rows (leaves) that reach that level: a mask of
the rows that have a label there, and the labels of those rows in row order. Each column is
encoded once into integer codes over its sorted vocabulary (hash encoding in Arrow, then one sort
of the distinct labels); the level arrays are then built from ``(parent node, label code)``
integer keys, never from one Python tuple per leaf. Labels are compared as Python compares
strings (by code point: Arrow sorts UTF-8 bytes, which is the same order); strings Arrow cannot
hold (lone surrogates) fall back to NumPy's object sort. Only public structure passes through here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from dptree.errors import DomainError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Column", "column_from_list", "string_path_columns", "check_labels", "level_arrays"]

SEP = "/"


def _arrow(values: Any) -> pa.Array | None:
    """Arrow large strings of a list/array of Python strings, or None if Arrow cannot hold them."""
    import pyarrow as pa

    try:
        arr = pa.array(values, type=pa.large_string())
    except (pa.ArrowException, UnicodeError, TypeError, ValueError):
        return None
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def _chunk(data: np.ndarray, start: np.ndarray, length: np.ndarray, at: int) -> np.ndarray:
    """Bytes [at, at + 8) of each UTF-8 string as a big-endian uint64, zero past its end
    (``data`` carries 8 zero bytes of padding past the last string)."""
    pos = np.arange(at, at + 8, dtype=np.int64)
    raw = data[np.minimum(start[:, None] + pos, data.size - 1)]
    raw[pos >= length[:, None]] = 0
    return np.ascontiguousarray(raw).view(">u8").reshape(-1).astype(np.uint64)


def sort_strings(arr: pa.Array, rounds: int = 4) -> np.ndarray:
    """The permutation sorting distinct Arrow strings by UTF-8 bytes (Python's order for str).

    Sorts 8-byte big-endian prefixes as integers, then refines only the tied groups on the next
    8 bytes (ties of padded-equal strings broken by length, the shorter first, as a prefix
    sorts first); after ``rounds`` rounds Arrow's string sort finishes the job."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = arr.cast(pa.large_string())
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset: arr.offset + n + 1]
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8) if n else np.zeros(0, dtype=np.uint8)
    data = np.concatenate([data[: int(offsets[-1]) if n else 0], np.zeros(8, dtype=np.uint8)])
    start, length = offsets[:-1], np.diff(offsets)
    perm = np.arange(n, dtype=np.int64)
    grp = np.zeros(n, dtype=np.int64)  # start position (in perm) of each position's group
    active = perm.copy() if n > 1 else np.zeros(0, dtype=np.int64)
    for r in range(rounds):
        if active.size == 0:
            return perm
        el = perm[active]
        key = _chunk(data, start[el], length[el], 8 * r)
        sub = np.argsort(key, kind="stable") if r == 0 else np.lexsort((length[el], key, grp[active]))
        el, key, g = el[sub], key[sub], grp[active][sub]
        perm[active] = el
        new = np.ones(active.size, dtype=bool)
        new[1:] = (g[1:] != g[:-1]) | (key[1:] != key[:-1])
        g = np.maximum.accumulate(np.where(new, active, 0))
        grp[active] = g
        size = np.bincount(np.cumsum(new) - 1)
        more = np.bincount(np.cumsum(new) - 1, weights=length[el] > 8 * (r + 1)) > 0
        keep = ((size > 1) & (more | (r == 0)))[np.cumsum(new) - 1]  # round 0 breaks no tie by length
        active = active[keep]
    if active.size == 0:
        return perm
    return np.asarray(pc.sort_indices(arr), dtype=np.int64)


class Column:
    """One level: ``present[i]`` says row i has a label at this level; ``values`` are those labels
    (row order), as an Arrow string array or a NumPy object array of ``str``."""

    __slots__ = ("present", "values", "clean", "_codes", "_vocab", "_pos", "_sorted")

    def __init__(self, present: np.ndarray, values: Any, clean: bool = False) -> None:
        self.present = present
        self.values = values
        self.clean = clean  # known to hold no empty label and no SEP (split from string paths)
        self._codes: np.ndarray | None = None
        self._vocab: np.ndarray | None = None
        self._pos: np.ndarray | None = None
        self._sorted: pa.Array | None = None

    def encode(self) -> tuple[np.ndarray, np.ndarray]:
        """(codes, vocab): vocab the sorted distinct labels (object array), codes per present row."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if self._codes is None:
            if isinstance(self.values, pa.Array):
                enc = pc.dictionary_encode(self.values)
                dic = enc.dictionary
                order = sort_strings(dic)
                rank = np.empty(order.size, dtype=np.int64)
                rank[order] = np.arange(order.size, dtype=np.int64)
                self._codes = rank[np.asarray(enc.indices, dtype=np.int64)]
                self._sorted = dic.take(pa.array(order))
                self._vocab = np.asarray(self._sorted.to_numpy(zero_copy_only=False), dtype=object)
            else:
                vocab, codes = np.unique(np.asarray(self.values, dtype=object), return_inverse=True)
                self._codes = codes.reshape(-1).astype(np.int64)
                self._vocab = np.asarray(vocab, dtype=object)
        assert self._vocab is not None
        return self._codes, self._vocab

    def bad_vocab(self) -> tuple[np.ndarray, np.ndarray]:
        """Masks over the vocabulary: labels containing SEP, and empty labels."""
        import pyarrow as pa
        import pyarrow.compute as pc

        _, vocab = self.encode()
        if self.clean:
            return np.zeros(vocab.size, dtype=bool), np.zeros(vocab.size, dtype=bool)
        if isinstance(self.values, pa.Array):
            dic = self._sorted
            has_sep = np.asarray(pc.match_substring(dic, SEP), dtype=bool)
            empty = np.asarray(pc.equal(pc.utf8_length(dic), 0), dtype=bool)
        else:
            has_sep = np.array([SEP in v for v in vocab], dtype=bool)
            empty = np.array([v == "" for v in vocab], dtype=bool)
        return has_sep, empty

    def label_at(self, row: int) -> str | None:
        """The label of one row (None if the row has none at this level)."""
        if not self.present[row]:
            return None
        if self._pos is None:
            self._pos = np.cumsum(self.present) - 1
        codes, vocab = self.encode()
        return str(vocab[codes[int(self._pos[row])]])


def column_from_list(col: Sequence[Any], present: np.ndarray | None = None) -> Column:
    """A Column from one list per level (``None`` where a row has no label), or from the labels
    of the present rows only and their mask."""
    if present is None:
        present = np.fromiter((v is not None for v in col), dtype=bool, count=len(col))
        labels = [v for v in col if v is not None]
    else:
        labels = list(col)
    arr = _arrow(labels)
    return Column(present, np.array(labels, dtype=object) if arr is None else arr)


def string_path_columns(paths: list[str]) -> list[Column] | None:
    """Columns of 'US/CA'-style string paths split in Arrow; None if Arrow cannot hold them.

    Raises the same errors, for the same first offending path, as splitting one path at a time:
    a root path ('' or '/') and a path with an empty label."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = _arrow(paths)
    if arr is None:
        return None
    n = len(arr)
    parts = pc.split_pattern(arr, SEP)
    lengths = np.asarray(pc.list_value_length(parts), dtype=np.int64)
    flat = pc.list_flatten(parts)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    root = np.asarray(pc.is_in(arr, value_set=pa.array(["", SEP], type=pa.large_string())), dtype=bool)
    empty_piece = np.asarray(pc.equal(pc.utf8_length(flat), 0), dtype=bool)
    has_empty = np.zeros(n, dtype=bool)
    if empty_piece.any():
        has_empty[np.repeat(np.arange(n), lengths)[empty_piece]] = True
    bad = root | has_empty
    if bad.any():
        i = int(np.argmax(bad))
        if root[i]:
            raise DomainError("an empty path names the root; list root-to-leaf paths such as 'US/CA'")
        raise DomainError(f"path {paths[i]!r} has an empty label")
    cols = []
    for j in range(int(lengths.max())):
        present = lengths > j
        cols.append(Column(present, flat.take(pa.array(starts[present] + j)), clean=True))
    return cols


def check_labels(cols: list[Column]) -> None:
    """No label contains SEP or is empty; the error names the first one, column by column."""
    for col in cols:
        has_sep, empty = col.bad_vocab()
        bad = has_sep | empty
        if not bad.any():
            continue
        codes, vocab = col.encode()
        lab = str(vocab[codes[int(np.argmax(bad[codes]))]])
        if SEP in lab:
            raise DomainError(f"label {lab!r} contains {SEP!r}, the path separator; rename it")
        raise DomainError("a label of the hierarchy is empty")


def _unique_inverse(key: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(key, return_inverse=True) for keys in [0, bound): by counting when the range is
    small (no sort), else by sorting."""
    if bound <= 4 * key.size + 1024:
        seen = np.bincount(key, minlength=bound) > 0
        ukey = np.flatnonzero(seen).astype(np.int64)
        return ukey, (np.cumsum(seen) - 1)[key]
    ukey, inv = np.unique(key, return_inverse=True)
    return ukey, inv.reshape(-1)


def level_arrays(cols: list[Column], root_label: str) -> tuple[list[np.ndarray | None], list[np.ndarray], np.ndarray,
                                                               np.ndarray]:
    """Level arrays (nodes of a level sorted by (parent, label)) and where each row ends."""
    n_rows = int(cols[0].present.size)
    node = np.zeros(n_rows, dtype=np.int64)
    ended = np.zeros(n_rows, dtype=bool)
    end_level = np.zeros(n_rows, dtype=np.int64)
    end_node = np.zeros(n_rows, dtype=np.int64)
    parents: list[np.ndarray | None] = [None]
    labels: list[np.ndarray] = [np.array([root_label], dtype=object)]
    for j, col in enumerate(cols, start=1):
        null = ~col.present
        bad = ended & ~null
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DomainError(
                f"structure row {i} has a missing level followed by a label ({col.label_at(i)!r}); "
                "only trailing levels may be empty"
            )
        newly = ~ended & null
        end_level[newly] = j - 1
        end_node[newly] = node[newly]
        ended |= null
        live = np.flatnonzero(~ended)  # the present rows, in row order, as col.values
        if live.size == 0:
            break
        codes, vocab = col.encode()
        k = max(int(vocab.size), 1)
        key = node[live] * k + codes
        ukey, inv = _unique_inverse(key, int(node[live].max()) * k + k if live.size else 0)
        parents.append(ukey // k)
        labels.append(vocab[ukey % k])
        node[live] = inv.reshape(-1)
    full = ~ended
    end_level[full] = len(parents) - 1
    end_node[full] = node[full]
    return parents, labels, end_level, end_node
