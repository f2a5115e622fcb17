"""The report of a 2-D release (a quadtree, ``range_tree_2d``, or a 2-D PrivTree,
``range_tree_2d(method="privtree")``): privacy in plain language, parameters, the heat map of the
estimates beside their standard errors, and the grid of blocks as CSV.

Everything is read from the release (its noisy estimates and public parameters, through
``to_frame(resolution=...)``): post-processing, no privacy cost.
"""

from __future__ import annotations

import html
from typing import Any

from dptree.reporting.page import csv_link, metadata_rows, not_private_warning, page, png_of, table

__all__ = ["spatial_report", "KINDS"]

#: the release kinds this report describes
KINDS = ("range_tree_2d", "range_tree_2d_privtree")

_ROWS = 64  # blocks listed in the page's table (the CSV has all)


def _axis(dom: Any) -> str:
    return (f"[{dom.format_value(dom.lower)}, {dom.format_value(dom.upper)}], {dom.size} buckets"
            + ("" if dom.width is None else f" of width {dom.format_value(dom.width)}"))


def _tree_row(release: Any) -> tuple[str, str]:
    if release.KIND == "range_tree_2d_privtree":
        return ("Tree", f"2-D PrivTree (Zhang, Xiao & Xie 2016): a data-dependent quadtree of {release.leaves} "
                        f"leaves, {release.depth} counted depths; a leaf's records spread uniformly over its cells")
    plan = release.plan
    return ("Tree", f"quadtree of depth {release.grid.depth} over a {release.grid.side}x{release.grid.side} grid, "
                    f"{plan.levels} budget split, {plan.noise} noise")


def spatial_report(release: Any, *, level: float, bins: int, title: str | None, log: bool, clip_negative: bool,
                   resolution: int | None = None) -> str:
    """A 2-D release: privacy, parameters, the heat map and standard-error panel of a ``resolution``
    x ``resolution`` grid of blocks (default 64, at most the buckets), and that grid as CSV."""
    from dptree.reporting.plot import plot_heatmap
    from dptree.reporting.sections import privacy_in_words

    esc = html.escape
    res = 64 if resolution is None else resolution
    p, g = release.privacy, release.grid
    names = release.columns or ("x", "y")
    b64, _ = png_of(plot_heatmap, release, resolution=res, level=level, clip_negative=clip_negative)
    frame = release.to_frame(level=level, resolution=res)
    total = release.total()
    params = metadata_rows(release) + [
        (f"x ({names[0]})", _axis(g.x)),
        (f"y ({names[1]})", _axis(g.y)),
        _tree_row(release),
        ("Neighbors", f"{p.get('neighbors')}, at most {p.get('max_contributions', 1)} record(s) per person"),
        ("Budget spent", ", ".join(f"{k} = {v:.6g}" for k, v in p.get("budget_spent", {}).items())),
        ("Estimated total", f"{total:,.1f}"),
        ("Library", str(p.get("library"))),
    ]
    shown = frame.head(_ROWS)
    rows = "".join(f"<tr><td>[{r.x_low:.6g}, {r.x_high:.6g}] x [{r.y_low:.6g}, {r.y_high:.6g}]</td>"
                   f"<td>{r.estimate:,.1f}</td><td>{r.stderr:,.1f}</td>"
                   f"<td>[{r.ci_low:,.1f}, {r.ci_high:,.1f}]</td></tr>" for r in shown.itertuples())
    clipped = " Negative estimates are drawn as 0 (a post-processed view); the CSV holds them as released." \
        if clip_negative else ""
    sections = f"""<h2>Privacy</h2>
<p class="privacy">{esc(privacy_in_words(p))}</p>
<h2>Parameters</h2>
{table(params)}
<h2>Counts per block</h2>
<p>The estimated count of each block of a {res}x{res} grid of whole cells (left) and its exact standard error
(right).{esc(clipped)}</p>
<img alt="heat map of the estimated counts and their standard errors" src="data:image/png;base64,{b64}">
<h2>Blocks</h2>
<p>{len(frame):,} blocks, each with its count, exact standard error and {level:.0%} interval
{'(the first ' + str(_ROWS) + ' below)' if len(frame) > _ROWS else ''}.
{csv_link(frame, f"{'-'.join(names)}-grid-{res}.csv", "Download every block (CSV)")}</p>
<table><tr><th>block (x, y)</th><th>estimate</th><th>stderr</th><th>{level:.0%} CI</th></tr>{rows}</table>"""
    heading = esc(title or f"Private 2-D counts of {names[0]}, {names[1]}")
    return page(heading, not_private_warning(release), sections)
