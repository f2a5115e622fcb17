"""What several benchmarks share: the markdown tables they print and a wall-clock timer
(``from _common import table, timed``; a benchmark runs as ``python benchmarks/<name>.py``, which
puts this folder on the import path)."""

from __future__ import annotations

import time
from typing import Any, Callable


def table(headers: list[str], rows: list[list[str]]) -> str:
    """A markdown table: the first column left-aligned, the others right-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
            + " |" for r in rows]
    return "\n".join([line, sep, *body])


def timed(f: Callable[[], Any]) -> float:
    """The wall-clock seconds one call of ``f`` takes."""
    t = time.perf_counter()
    f()
    return time.perf_counter() - t
