"""Releases and results in a notebook: ``_repr_html_`` and ``.plot()``, the same for every kind.

:class:`Displayed` is mixed into every release (:class:`~dptree.io.contract.Release`) and every
multi-row result (histograms, quantiles with intervals, batches of answers). Jupyter shows an
object through ``_repr_html_``: a short summary (the kind, the released column, the privacy
statement in one line, and whether the noise was private or made with a test seed) above the
table of ``to_frame()``, cut after :data:`MAX_ROWS` rows with a note. The number of rows is a
public quantity (buckets, cells, nodes, levels, bins or groups), never a count of records.
``plot(ax=None, **kwargs)`` draws the object on a matplotlib ``Axes``
(:mod:`dptree.io.drawing`, which the PNG writers share) and returns it.

Everything shown is post-processing of a release. Every text is escaped: a column or group name
is the caller's and may hold markup.
"""

from __future__ import annotations

import html
import math
from typing import Any, ClassVar, Mapping

from dptree.io.drawing import column_of, plot_on

__all__ = ["Displayed", "MAX_ROWS", "column_of", "privacy_line", "html_view"]

#: rows of ``to_frame()`` an HTML view shows (``to_frame()`` has all)
MAX_ROWS = 20


def _budget(privacy: Mapping[str, Any]) -> str:
    """epsilon / delta / rho of a statement: what was spent, where the statement records it."""
    spent = privacy.get("budget_spent")
    if not isinstance(spent, Mapping):
        spent = {k: privacy.get(k) for k in ("epsilon", "delta", "rho")}
    parts = []
    for key in ("epsilon", "delta", "rho"):
        v = spent.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and (v or key == "epsilon") and math.isfinite(v):
            parts.append(f"{key}={v:.4g}")
    return ", ".join(parts)


def privacy_line(privacy: Mapping[str, Any] | None) -> str:
    """A privacy statement (:mod:`dptree.privacy.statement`) in one line: the guarantee, its budget,
    the neighboring relation, the composition of a group-by release, and whether it is private."""
    if not privacy:
        return "privacy statement unknown: this object was not made by a release"
    from dptree.privacy.statement import Neighbors

    try:
        unit = Neighbors(privacy.get("neighbors", "add_remove"),
                         int(privacy.get("max_contributions", 1))).describe()
    except Exception:  # a statement this version does not know: say what it says
        unit = str(privacy.get("neighbors"))
    parts = [str(privacy.get("guarantee", "guarantee unstated")), _budget(privacy), f"neighbors: {unit}"]
    groups = privacy.get("groups")
    if isinstance(groups, list):
        parts.append(f"parallel over {len(groups)} public groups")
    parts.append("private" if privacy.get("private") else "NOT PRIVATE: made with a test seed")
    return "; ".join(p for p in parts if p)


def _cell(v: Any) -> str:
    """A table cell as text: floats to 7 significant digits, dates as ISO text, others as str()."""
    import numpy as np

    if isinstance(v, (float, np.floating)):
        return f"{float(v):.7g}"
    if isinstance(v, np.datetime64):
        return str(np.datetime_as_string(v, unit="auto"))
    if hasattr(v, "isoformat"):  # pandas Timestamp, datetime
        return str(v.isoformat())
    return str(v)


def _table(frame: Any, max_rows: int) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(str(c))}</th>" for c in frame.columns)
    rows = []
    for rec in frame.head(max_rows).itertuples(index=False, name=None):
        rows.append("<tr>" + "".join(f"<td>{esc(_cell(v))}</td>" for v in rec) + "</tr>")
    return f'<table class="dptree-frame"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def html_view(obj: Any, *, max_rows: int = MAX_ROWS) -> str:
    """The HTML Jupyter shows for a release or result: its kind and column, its one-line summary,
    the privacy statement in one line, and the first ``max_rows`` rows of ``to_frame()``."""
    esc = html.escape
    privacy = getattr(obj, "privacy", None)
    col = column_of(obj)
    kind = type(obj).__name__
    head = f"<strong>{esc(kind)}</strong>" + (f" of <code>{esc(col)}</code>" if col else "")
    summary = obj.summary() if hasattr(obj, "summary") else ""
    private = bool(privacy and privacy.get("private"))
    style = "" if private else ' style="color:#b00020;font-weight:bold"'
    frame = obj.to_frame()
    n = len(frame)
    level = frame.attrs.get("ci_level")
    note = f"{n} rows" if n <= max_rows else f"first {max_rows} of {n} rows; to_frame() has all"
    if level is not None:
        note += f"; intervals at level {level:g}"
    return (f'<div class="dptree">{head}<br>'
            + (f"<span>{esc(summary)}</span><br>" if summary else "")
            + f"<span{style}>Privacy: {esc(privacy_line(privacy))}</span>"
            + _table(frame, max_rows)
            + f"<small>{esc(note)}</small></div>")


class Displayed:
    """``_repr_html_`` (:func:`html_view`) and ``plot`` for a release or result with ``to_frame()``.

    ``PLOT`` names how :mod:`dptree.io.drawing` draws it ("cdf", "histogram", "quantiles",
    "hierarchy", "point"); None: the object has no plot."""

    PLOT: ClassVar[str | None] = None

    def _repr_html_(self) -> str:
        return html_view(self)

    def plot(self, ax: Any = None, **kwargs: Any) -> Any:
        """Draw on ``ax`` (a matplotlib ``Axes``; default: a new figure) and return the ``Axes``.
        ``kwargs`` are the drawing's options (``level``, ``log``, ``clip_negative``, ...), as in
        :mod:`dptree.io.drawing`. Post-processing: no privacy cost."""
        return plot_on(self, ax, **kwargs)
