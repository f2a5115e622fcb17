"""The pieces every report page shares (:mod:`dptree.reporting.report`): the page itself, tables,
embedded PNGs and CSV downloads, the metadata rows, the notes and warnings, value formatting.

Nothing here reads data: each piece formats what a release (public) already holds. The plots are
PNGs and the CSV files base64 data URIs, so a page is one self-contained file with no script.
"""

from __future__ import annotations

import base64
import html
import io
import re
from typing import Any, Callable

import numpy as np

__all__ = ["png_of", "csv_link", "file_stem", "metadata_rows", "page", "table", "negative_note",
           "not_private_warning", "fmt_value", "short", "groups_chart"]


def png_of(draw: Callable[..., Any], *args: Any, **kw: Any) -> tuple[str, Any]:
    """Run a :mod:`dptree.reporting.plot` function into memory: (base64 PNG, what it returned)."""
    buf = io.BytesIO()
    out = draw(*args, buf, **kw)
    return base64.b64encode(buf.getvalue()).decode("ascii"), out


def csv_link(frame: Any, name: str, text: str) -> str:
    """A link that downloads ``frame`` as a CSV file (a data: URI; the page has no script)."""
    data = frame.to_csv(index=False).encode("utf-8")
    b64 = base64.b64encode(data).decode("ascii")
    return (f'<a class="csv" download="{html.escape(name)}" '
            f'href="data:text/csv;charset=utf-8;base64,{b64}">{html.escape(text)}</a>')


def file_stem(release: Any, group: Any = None) -> str:
    """The start of a CSV file's name: the released column (or "release"), then the group, if any."""
    parts = [getattr(release, "column", None) or "release"] + ([] if group is None else [group])
    return "-".join(re.sub(r"[^A-Za-z0-9_.-]+", "_", str(part))[:60] or "_" for part in parts)


def metadata_rows(release: Any) -> list[tuple[str, str]]:
    """Column, source, creation time and the ledger charge, when the release has them (public)."""
    meta = getattr(release, "metadata", {}) or {}
    rows = []
    if meta.get("column"):
        rows.append(("Column", str(meta["column"])))
    if meta.get("source"):
        rows.append(("Source", str(meta["source"])))
    if meta.get("created_utc"):
        rows.append(("Created (UTC)", str(meta["created_utc"])))
    led = meta.get("ledger")
    if isinstance(led, dict):
        amounts = ", ".join(f"{k} = {led[k]:.6g}" for k in ("epsilon", "delta", "rho") if led.get(k))
        rows.append(("Ledger charge", f"charge {led.get('charge')} ({led.get('label', '')}) in {led.get('path')}: "
                                      f"{amounts or 'nothing'}"))
    return rows


def page(heading: str, warn: str, sections: str) -> str:
    """The whole HTML page: ``heading`` and ``sections`` are HTML already (escaped by the caller)."""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="generator" content="dptree"><title>{heading}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; color: #222; }}
table {{ border-collapse: collapse; margin: 1rem 0; }}
th, td {{ border: 1px solid #ccc; padding: .3rem .6rem; text-align: left; }}
th {{ background: #f3f3f3; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
.privacy {{ background: #eef5fb; border-left: 4px solid #1f77b4; padding: .8rem 1rem; }}
.warn {{ background: #fdecea; border-left: 4px solid #d62728; padding: .8rem 1rem; font-weight: bold; }}
.note {{ background: #fff8e5; border-left: 4px solid #e6a700; padding: .5rem 1rem; }}
a.csv {{ display: inline-block; margin: .3rem 0; padding: .3rem .7rem; border: 1px solid #0b5394;
         border-radius: 4px; color: #0b5394; text-decoration: none; }}
img {{ max-width: 100%; }}
</style></head><body>
<h1>{heading}</h1>
{warn}
{sections}
</body></html>
"""


def table(rows: list[tuple[str, str]]) -> str:
    """A two-column table of (name, value) rows, both escaped."""
    esc = html.escape
    return "<table>" + "\n".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows) + "</table>"


def negative_note(negative: int, what: str, clip_negative: bool, clipped: str, as_released: str,
                  extra: str = "") -> str:
    """The note about estimates below zero (released noise, not data), or "" when there are none."""
    if not negative:
        return ""
    view = clipped if clip_negative else as_released
    return f'<p class="note">{negative} {what} are below zero: noise, not data. {extra}{view}</p>'


def not_private_warning(release: Any) -> str:
    return "" if release.private else '<p class="warn">NOT PRIVATE: made with a test seed.</p>'


def fmt_value(dom: Any, v: Any) -> str:
    """A value of a range tree's domain as the domain writes it (dates as ISO text)."""
    if dom.kind == "datetime":
        return str(dom.format_value(int(np.asarray(v).astype("datetime64[ns]").astype(np.int64))))
    return str(dom.format_value(float(v) if dom.kind == "float" else int(v)))


def short(v: Any) -> str:
    """A value for a table: floats to 7 significant digits (the CSV keeps them whole)."""
    return f"{v:.7g}" if isinstance(v, float) else str(v)


def groups_chart(release: Any, n_groups: int, draw: Callable[..., Any], alt: str, **kw: Any) -> str:
    """``draw(release, **kw)`` as an embedded image, or, for more groups than one plot draws
    (:data:`~dptree.reporting.plot.MAX_PLOTTED_GROUPS`: it would be unreadable), a line saying why
    there is no plot (the page's tables still cover every group)."""
    from dptree.reporting.plot import MAX_PLOTTED_GROUPS

    if n_groups > MAX_PLOTTED_GROUPS:
        return (f"<p>No plot: one plot draws at most {MAX_PLOTTED_GROUPS} groups (dptree plot --groups a,b draws "
                "some of them).</p>")
    b64, _ = png_of(draw, release, **kw)
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{b64}">'
