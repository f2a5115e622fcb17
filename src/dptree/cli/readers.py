"""The public structure file of the ``hierarchy`` command.

``read_structure`` reads it before any charge (it is public); the private data files of every
command are read by the library's engines inside the charge (:mod:`dptree.cli.ledger_options`).
No message of this module holds a count or a value of the data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from dptree.errors import DomainError, InputFormatError
from dptree.hierarchy import Hierarchy

__all__ = ["read_structure"]


def _reader(path: str) -> str:
    p = Path(path)
    if not p.exists():
        raise InputFormatError(f"no such file: {path}")
    suffix = p.suffix.lower()
    lit = "'" + str(p).replace("'", "''") + "'"
    if suffix in (".parquet", ".pq"):
        return f"read_parquet({lit})"
    if suffix in (".csv", ".tsv", ".txt", ".gz"):
        return f"read_csv({lit}, all_varchar=true, header=true)"
    raise InputFormatError(f"{path}: unsupported file type {suffix!r}; use .csv or .parquet")


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _columns(con: Any, rel: str) -> list[str]:
    return [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()]


def read_structure(path: str, levels: Sequence[str], *, other: str | None = None) -> Hierarchy:
    """A :class:`Hierarchy` from a CSV/Parquet file with the level columns or node/parent."""
    import duckdb

    con = duckdb.connect()
    try:
        rel = _reader(path)
        cols = _columns(con, rel)
        if all(c in cols for c in levels):
            sel = ", ".join(f"CAST({_ident(c)} AS VARCHAR) AS {_ident(c)}" for c in levels)
            frame = con.execute(f"SELECT {sel} FROM {rel}").df()
            try:
                return Hierarchy.from_frame(frame, levels, other=other)
            except DomainError as exc:
                extra = [c for c in cols if c not in levels]
                if "more than once" not in str(exc) or not extra:
                    raise
                # the structure is public: its columns may be named
                raise DomainError(f"{exc}: the structure file also has the columns {extra}; name every level "
                                  f"column in --levels, top level first (it has {cols})") from None
        if "node" in cols and "parent" in cols:
            frame = con.execute(
                f"SELECT CAST(node AS VARCHAR) AS node, CAST(parent AS VARCHAR) AS parent FROM {rel}"
            ).df()
            return Hierarchy.from_parent_table(frame, levels=levels, other=other)
        raise InputFormatError(
            f"structure file {path} needs the level columns {list(levels)} or node/parent columns; it has {cols}"
        )
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__  # one line: no SQL excerpt
        raise InputFormatError(f"cannot read structure file {path}: {first}") from exc
    finally:
        con.close()
