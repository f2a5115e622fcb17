"""The markdown tables the benchmarks print (``from _tables import table``; a benchmark runs as
``python benchmarks/<name>.py``, which puts this folder on the import path)."""

from __future__ import annotations


def table(headers: list[str], rows: list[list[str]]) -> str:
    """A markdown table: the first column left-aligned, the others right-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
            + " |" for r in rows]
    return "\n".join([line, sep, *body])
