"""A static HTML report of a range-tree, hierarchy or quantiles release: parameters, metadata (column,
source, creation time, ledger charge), privacy in plain language, plots, tables and CSV downloads.

Everything shown is post-processing of the public release (no privacy cost). The page is one
self-contained file: the plots are PNGs and the CSV files are embedded as base64 data URIs, there
is no script and no external resource (needs matplotlib: ``pip install "dptree[plot]"``, and
pandas for the CSV files).
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
import re
from numbers import Integral, Real
from typing import Any

import numpy as np

from dptree._validation import InstanceOf, Interval, validate_params
from dptree.errors import InputFormatError, InvalidParameterError
from dptree.io.contract import shown
from dptree.rangetree.release import RangeTree

__all__ = ["render_report", "write_report", "privacy_in_words", "hierarchy_privacy_in_words",
           "quantiles_privacy_in_words"]

QUANTILES = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)
_MAX_ROWS = 500  # nodes listed in a hierarchy report's table (the CSV has all)


def privacy_in_words(privacy: dict[str, Any]) -> str:
    """The privacy statement of a release as one plain-language paragraph."""
    k = int(privacy.get("max_contributions", 1))
    unit = "one person's record" if k == 1 else f"one person's records (at most {k} per person)"
    if privacy.get("neighbors") == "replace":
        unit = unit.replace("one person's", "changing one person's") + " while the number of records stays public"
        change = f"Changing {unit.split('changing ', 1)[1]}"
    else:
        change = f"Adding or removing {unit}"
    spent = privacy.get("budget_spent", {})
    if "rho" in spent:
        rho = spent["rho"]
        text = (f"{change} changes the distribution of this release by at most rho = {rho:.4g} in "
                "zero-concentrated differential privacy (Gaussian noise)")
        if "epsilon" in spent:
            text += (f", which implies (epsilon = {spent['epsilon']:.4g}, delta = {spent['delta']:.3g})-differential "
                     "privacy")
        text += "."
    elif spent.get("delta"):  # (epsilon, delta) by the exact discrete-Gaussian accounting
        eps = spent.get("epsilon", float("nan"))
        text = (f"{change} changes the probability of any set of outcomes of this release by at most a factor "
                f"e^epsilon = {math.exp(eps):.4g} plus an additive delta = {spent['delta']:.3g} "
                f"((epsilon = {eps:.4g}, delta = {spent['delta']:.3g})-differential privacy with Gaussian noise, "
                "calibrated by the exact discrete-Gaussian privacy loss).")
    else:
        eps = spent.get("epsilon", float("nan"))
        text = (f"{change} changes the probability of any outcome of this release by at most a factor "
                f"e^epsilon = {math.exp(eps):.4g} (epsilon = {eps:.4g}, pure differential privacy with Laplace noise).")
    text += (" Every number on this page is computed from the released noisy counts only, so it costs no "
             "further privacy. Values outside the public bounds were counted at the nearest bound.")
    if not privacy.get("private", False):
        text = ("NOT PRIVATE: this release was made with a test seed, so its noise is predictable and it "
                "protects nobody. " + text)
    return text


def hierarchy_privacy_in_words(rel: Any) -> str:
    """The privacy statement of a hierarchy release as one plain-language paragraph."""
    p = rel.parameters
    k = int(p.get("max_contributions", 1))
    unit = "one record" if k == 1 else f"one person's records (at most {k}, bounded by the data holder)"
    eps, dlt = float(p["epsilon"]), float(p.get("delta") or 0.0)
    if dlt > 0:
        text = (f"Adding or removing {unit} changes the probability of any outcome of this release by at most a "
                f"factor e^epsilon = {math.exp(eps):.4g}, plus delta = {dlt:.3g} "
                f"((epsilon = {eps:.4g}, delta = {dlt:.3g})-differential privacy, {p['method']} method).")
    else:
        text = (f"Adding or removing {unit} changes the probability of any outcome of this release by at most a "
                f"factor e^epsilon = {math.exp(eps):.4g} (epsilon = {eps:.4g}, pure differential privacy with "
                "Laplace noise).")
    text += " Every number on this page is computed from the released noisy counts only."
    if not rel.private:
        text = "NOT PRIVATE: this release was made with a test seed, so it protects nobody. " + text
    return text


def _png_of(draw: Any, *args: Any, **kw: Any) -> tuple[str, Any]:
    """Run a :mod:`dptree.reporting.plot` function into memory: (base64 PNG, what it returned)."""
    buf = io.BytesIO()
    out = draw(*args, buf, **kw)
    return base64.b64encode(buf.getvalue()).decode("ascii"), out


def _csv_link(frame: Any, name: str, text: str) -> str:
    """A link that downloads ``frame`` as a CSV file (a data: URI; the page has no script)."""
    data = frame.to_csv(index=False).encode("utf-8")
    b64 = base64.b64encode(data).decode("ascii")
    return (f'<a class="csv" download="{html.escape(name)}" '
            f'href="data:text/csv;charset=utf-8;base64,{b64}">{html.escape(text)}</a>')


def _file_stem(release: Any) -> str:
    col = getattr(release, "column", None) or "release"
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(col))[:60] or "release"


def _metadata_rows(release: Any) -> list[tuple[str, str]]:
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


def _page(heading: str, warn: str, sections: str) -> str:
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


def _table(rows: list[tuple[str, str]]) -> str:
    esc = html.escape
    return "<table>" + "\n".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows) + "</table>"


@validate_params({
    "level": [Interval(Real, 0.5, 1, closed="left")],
    "bins": [Interval(Integral, 1, None)],
    "title": [None, InstanceOf(str)],
    "log": [InstanceOf(bool)],
    "clip_negative": [InstanceOf(bool)],
})
def render_report(
    release: Any,
    *,
    level: float = 0.95,
    bins: int = 30,
    title: str | None = None,
    log: bool = False,
    clip_negative: bool = False,
) -> str:
    """The report as one HTML string: a range-tree release (CDF, histogram with round bin edges,
    quantiles with intervals), a sparse range tree (CDF, quantiles, its cells), a hierarchy release (counts per node) or a quantiles release, one or
    by group (its plot and tables, at the release's own level: ``level`` does not apply). ``log``: logarithmic
    value axis; ``clip_negative``: plots in a clearly marked post-processed view with negative
    estimates shown as 0 (tables and CSV files always hold the released estimates)."""
    report = _REPORTS.get(getattr(release, "KIND", ""))
    if report is None:
        raise InvalidParameterError("a report needs a range-tree, hierarchy or quantiles release (range trees dense or sparse)")
    return report(release, level=level, bins=bins, title=title, log=log, clip_negative=clip_negative)


def _range_tree_report(release: RangeTree, *, level: float, bins: int, title: str | None, log: bool,
                       clip_negative: bool) -> str:
    from dptree.reporting.plot import plot_cdf, plot_histogram, value_label

    esc = html.escape
    p = release.privacy
    dom = release.domain
    col = value_label(release)
    cdf_b64, _ = _png_of(plot_cdf, release, level=level, log=log, clip_negative=clip_negative)
    hist_b64, hist = _png_of(plot_histogram, release, bins=bins, level=level, log=log, clip_negative=clip_negative)
    total_lo, total_hi = release.total_ci(level=level)
    if dom.kind == "datetime":
        width = str(np.timedelta64(int(dom.width), "ns").astype("timedelta64[s]"))
    else:
        width = dom.format_value(dom.width)
    params = _metadata_rows(release) + [
        ("Domain", f"{dom.kind}, [{dom.format_value(dom.lower)}, {dom.format_value(dom.upper)}], "
                   f"{dom.size} buckets of width {width}"),
        ("Tree", f"{release.layout.branching}-ary, {release.layout.depth + 1} levels, root {p.get('root')}"),
        ("Noise", f"discrete {release.plan.noise} ({p.get('guarantee')})"),
        ("Neighbors", f"{p.get('neighbors')}, at most {p.get('max_contributions')} record(s) per person"),
        ("Budget spent", ", ".join(f"{k} = {v:.6g}" for k, v in p.get("budget_spent", {}).items())),
        ("Sensitivity", f"L1 {p.get('l1_sensitivity'):g}, L2 {p.get('l2_sensitivity'):.4g}"),
        ("Estimated total", f"{release.total():,.1f} ({level:.0%} interval [{total_lo:,.1f}, {total_hi:,.1f}])"),
        ("Library", str(p.get("library"))),
    ]
    show = release.json_value
    hframe = hist.to_frame()
    for c in ("bin_low", "bin_high"):
        hframe[c] = [show(v) for v in hframe[c]]
    stem = _file_stem(release)
    hrows = "\n".join(
        f"<tr><td>[{esc(str(a))}, {esc(str(b))}{']' if i == len(hframe) - 1 else ')'}</td>"
        f'<td class="num">{e:,.1f}</td><td class="num">{s:,.1f}</td>'
        f'<td class="num">[{lo:,.1f}, {hi:,.1f}]</td></tr>'
        for i, (a, b, e, s, lo, hi) in enumerate(hframe.itertuples(index=False))
    )
    neg_note = _negative_note(
        int((hist.counts < 0).sum()), "bin estimate(s)", clip_negative,
        "The plots show them as 0 (a post-processed view); the table and the CSV file hold the released estimates.",
        "They are shown as released (red bars below zero).",
        "True counts are never negative, and the interval says how far the true count may be. ",
    )
    heading = esc(title or f"Private range-tree release of {col}")
    warn = _not_private_warning(release)
    sections = f"""<h2>Privacy</h2>
<p class="privacy">{esc(privacy_in_words(p))}</p>
<h2>Parameters</h2>
{_table(params)}
<h2>Cumulative distribution</h2>
<p>Fraction of records with {esc(col)} at or below each value, with a pointwise {level:.0%} confidence band.</p>
<img alt="CDF of {esc(col)} with confidence band" src="data:image/png;base64,{cdf_b64}">
<h2>Histogram</h2>
<p>Estimated counts per bin with {level:.0%} intervals (exact standard errors of the least-squares estimate).</p>
{neg_note}
<img alt="histogram of {esc(col)} with confidence intervals" src="data:image/png;base64,{hist_b64}">
<p>{_csv_link(hframe, f"{stem}-histogram.csv", "Download the histogram (CSV)")}</p>
<table><tr><th>bin of {esc(col)}</th><th>estimate</th><th>stderr</th><th>{level:.0%} interval</th></tr>
{hrows}
</table>
{_quantiles_section(release, level, lambda v: _fmt(dom, v),
                    f"Each {level:.0%} interval is calibrated by simulating this release's public noise on its own "
                    "estimated CDF (post-processing: no budget); measured coverage is in docs/quantiles.md of dptree.")}"""
    return _page(heading, warn, sections)


def _quantiles_section(release: Any, level: float, text: Any, note: str) -> str:
    """A range tree's (dense or sparse) quantiles at :data:`QUANTILES` with intervals: a table and its CSV."""
    esc = html.escape
    quant = release.quantiles(np.asarray(QUANTILES), level)
    rows = "\n".join(
        f"<tr><td>{q:g}</td><td>{esc(text(v))}</td><td>[{esc(text(a))}, {esc(text(b))}]</td></tr>"
        for q, v, a, b in zip(quant.q, quant.values, quant.ci_low, quant.ci_high)
    )
    frame = quant.to_frame()
    for c in ("estimate", "ci_low", "ci_high"):
        frame[c] = [release.json_value(v) for v in frame[c]]
    return f"""<h2>Quantiles</h2>
<p>{esc(note)}</p>
<p>{_csv_link(frame, f"{_file_stem(release)}-quantiles.csv", "Download the quantiles (CSV)")}</p>
<table><tr><th>q</th><th>estimate</th><th>interval</th></tr>
{rows}
</table>"""


def _short(v: Any) -> str:
    """A value for a table: floats to 7 significant digits (the CSV keeps them whole)."""
    return f"{v:.7g}" if isinstance(v, float) else str(v)


def _sparse_report(release: Any, *, level: float, bins: int, title: str | None, log: bool,
                   clip_negative: bool) -> str:
    """A sparse range tree: privacy, parameters, the CDF between its 0.1% and 99.9% quantiles,
    quantiles with intervals, every cell's count as CSV (a histogram needs round edges over a
    bounded domain: ``dptree query --histogram``)."""
    from dptree.reporting.plot import plot_cdf, value_label

    esc = html.escape
    p, dom, col = release.privacy, release.domain, value_label(release)
    cdf_b64, _ = _png_of(plot_cdf, release, level=level, log=log, clip_negative=clip_negative)
    total_lo, total_hi = release.total_ci(level)
    lower, upper = dom.bounds
    params = _metadata_rows(release) + [
        ("Domain", f"{dom.kind}, [{lower}, {upper}], 2^{dom.bits} keys, no bucket width"),
        ("Tree", f"{release.layout.branching}-ary, {release.plan.method}, {release.depth} levels, "
                 f"{release.measured_nodes} measured ranges"),
        ("Neighbors", f"{p.get('neighbors')}, at most {p.get('max_contributions')} record(s) per person"),
        ("Budget spent", ", ".join(f"{k} = {v:.6g}" for k, v in p.get("budget_spent", {}).items())),
        ("Estimated total", f"{release.total():,.1f} ({level:.0%} interval [{total_lo:,.1f}, {total_hi:,.1f}])"),
        ("Library", str(p.get("library"))),
    ]
    cells = release.to_frame(level)
    for c in ("cell_low", "cell_high"):
        cells[c] = [release.json_value(v) for v in cells[c]]
    sections = f"""<h2>Privacy</h2>
<p class="privacy">{esc(privacy_in_words(p))}</p>
<h2>Parameters</h2>
{_table(params)}
<h2>Cumulative distribution</h2>
<p>Fraction of records with {esc(col)} at or below each value, with a pointwise {level:.0%} confidence band,
between the release's own 0.1% and 99.9% quantiles.</p>
<img alt="CDF of {esc(col)} with confidence band" src="data:image/png;base64,{cdf_b64}">
{_quantiles_section(release, level, lambda v: _short(release.json_value(v)),
                    f"Each {level:.0%} interval is where the CDF band, widened by the spread bound of the cell it "
                    "cuts, reaches q times the estimated total: conservative (docs/sparse_tree.md of dptree).")}
<h2>Cells</h2>
<p>{len(cells):,} cells partition the domain; each has a least-squares count with its exact standard error.
{_csv_link(cells, f"{_file_stem(release)}-cells.csv", "Download every cell's count (CSV)")}</p>"""
    return _page(esc(title or f"Private sparse range tree of {col}"), _not_private_warning(release), sections)


def _negative_note(negative: int, what: str, clip_negative: bool, clipped: str, as_released: str,
                   extra: str = "") -> str:
    """The note about estimates below zero (released noise, not data), or "" when there are none."""
    if not negative:
        return ""
    view = clipped if clip_negative else as_released
    return f'<p class="note">{negative} {what} are below zero: noise, not data. {extra}{view}</p>'


def _not_private_warning(release: Any) -> str:
    return "" if release.private else '<p class="warn">NOT PRIVATE: made with a test seed.</p>'


def _fmt(dom: Any, v: Any) -> str:
    if dom.kind == "datetime":
        return str(dom.format_value(int(np.asarray(v).astype("datetime64[ns]").astype(np.int64))))
    return str(dom.format_value(float(v) if dom.kind == "float" else int(v)))


def _hierarchy_report(rel: Any, *, level: float, bins: int, title: str | None, log: bool, clip_negative: bool) -> str:
    from dptree.reporting.plot import plot_hierarchy

    esc = html.escape
    p = rel.parameters
    h = rel.hierarchy
    frame = rel.to_frame(level=level)
    charts = []
    for depth in range(1, min(h.depth, 3)):
        b64, _ = _png_of(plot_hierarchy, rel, level=level, depth=depth, clip_negative=clip_negative)
        charts.append(f'<img alt="counts at depth {depth}" src="data:image/png;base64,{b64}">')
    levels = ", ".join(map(str, p.get("levels") or []))
    params = _metadata_rows(rel) + [
        ("Hierarchy", f"{h.n_nodes} nodes, depth {h.depth}, levels {levels}"),
        ("Method", f"{p['method']}" + (f", alpha = {p['alpha']}" if p.get("alpha") is not None else "")),
        ("Budget", f"epsilon = {p['epsilon']:.6g}, delta = {float(p.get('delta') or 0):.3g}"),
        ("Post-processing", ", ".join(k for k in ("consistent", "nonnegative", "integer") if p.get(k)) or "none"),
        ("Library", str(rel.privacy.get("library"))),
    ]
    shown = frame.head(_MAX_ROWS)
    rows = "\n".join(
        f"<tr><td>{esc(str(r.path) or '(total)')}</td><td class=\"num\">{r.count:,.1f}</td>"
        f"<td class=\"num\">{r.stderr:,.1f}</td><td class=\"num\">[{r.ci_low:,.1f}, {r.ci_high:,.1f}]</td></tr>"
        for r in shown.itertuples(index=False)
    )
    more = (f"<p>The first {_MAX_ROWS} of {len(frame)} nodes; the CSV file has all of them.</p>"
            if len(frame) > _MAX_ROWS else "")
    neg_note = _negative_note(
        int((frame["count"] < 0).sum()), "node count(s)", clip_negative,
        "The charts show them as 0 (a post-processed view); the table and the CSV file hold the released counts.",
        "They are shown as released (red bars left of zero).",
    )
    heading = esc(title or f"Private hierarchy counts by {levels or 'node'}")
    warn = _not_private_warning(rel)
    sections = f"""<h2>Privacy</h2>
<p class="privacy">{esc(hierarchy_privacy_in_words(rel))}</p>
<h2>Parameters</h2>
{_table(params)}
<h2>Counts</h2>
<p>Released counts with {level:.0%} intervals{'' if p['method'] != 'multiplicative' else ' (the Lemma 3.3 window)'}.</p>
{neg_note}
{''.join(charts)}
<p>{_csv_link(frame, f"{_file_stem(rel)}-nodes.csv", "Download every node's count (CSV)")}</p>
{more}
<table><tr><th>node</th><th>count</th><th>stderr</th><th>{level:.0%} interval</th></tr>
{rows}
</table>"""
    return _page(heading, warn, sections)


def quantiles_privacy_in_words(rel: Any) -> str:
    """The privacy statement of a quantiles release (or of its groups) as one plain-language paragraph."""
    st = rel.privacy
    k = int(st.get("max_contributions", 1))
    unit = "one person's record" if k == 1 else f"one person's records (at most {k} per person)"
    eps = float(st.get("budget_spent", {}).get("epsilon", float("nan")))
    change = ("Changing " + unit + " while the number of records stays public" if st.get("neighbors") == "replace"
              else "Adding or removing " + unit)
    text = (f"{change} changes the probability of any outcome of this release by at most a factor "
            f"e^epsilon = {math.exp(eps):.4g} (epsilon = {eps:.4g}, pure differential privacy; {st.get('mechanism')}).")
    if st.get("composition"):
        text += f" Groups: {st['composition']}."
    text += (" The intervals are computed from the released values and the public parameters only, so they cost no "
             "further privacy.")
    if not st.get("private", False):
        text = "NOT PRIVATE: this release was made with a test seed, so it protects nobody. " + text
    return text


def _quantiles_report(rel: Any, *, level: float, bins: int, title: str | None, log: bool, clip_negative: bool) -> str:
    """Each level's estimate and interval (every group's, for a group-by release), at the level the
    release was made with (``level`` does not apply: the intervals are part of the release)."""
    from dptree.reporting.plot import MAX_PLOTTED_GROUPS, plot_quantiles

    esc = html.escape
    parts = list(rel.items()) if hasattr(rel, "items") else [(None, rel)]
    first = parts[0][1]
    frame = rel.to_frame()
    chart = (f"<p>No plot: one plot draws at most {MAX_PLOTTED_GROUPS} groups (dptree plot --groups a,b draws "
             "some of them).</p>")
    if len(parts) <= MAX_PLOTTED_GROUPS:  # more groups: the tables only (one plot would be unreadable)
        b64, _ = _png_of(plot_quantiles, rel, log=log)
        chart = f'<img alt="quantiles with their intervals" src="data:image/png;base64,{b64}">'
    tables = []
    for group, one in parts:
        radius = one.rank_radius or [None] * len(one.values)
        rows = "\n".join(
            f"<tr><td class=\"num\">{q:g}</td><td class=\"num\">{esc(shown(v))}</td>"
            f"<td class=\"num\">[{esc(shown(lo))}, {esc(shown(hi))}]</td>"
            f"<td class=\"num\">{'' if r is None else f'{r:,.1f}'}</td></tr>"
            for q, v, lo, hi, r in zip(one.q, one.values, one.ci_low, one.ci_high, radius))
        head = "" if group is None else f"<h3>Group {esc(str(group))}</h3>"
        tables.append(f"""{head}<table><tr><th>level q</th><th>estimate</th><th>{one.level:.0%} interval</th>
<th>rank radius</th></tr>
{rows}
</table>""")
    n = first.n_declared
    params = _metadata_rows(rel) + [
        ("Domain", f"[{shown(first.lower)}, {shown(first.upper)}]"),
        ("Method", first.method + ("" if first.interval is None else f" ({first.interval} intervals)")),
        ("Budget", f"epsilon = {first.epsilon:.6g} (pure)"),
        ("Declared size", ("none" if n is None else f"{n:,}" + (" (an upper bound)" if first.n_is_upper_bound else ""))
         + ("" if first.n_min is None else f"; at least {first.n_min:,}")),
        ("Library", str(rel.privacy.get("library"))),
    ]
    if len(parts) > 1 or parts[0][0] is not None:
        params.insert(0, ("Groups", ", ".join(str(g) for g, _ in parts)))
    radius_note = ("<p>The rank radius bounds, for every level at once with the interval's probability, how many "
                   "ranks an estimate may be from its level (a stated worst case: docs/quantiles.md).</p>"
                   if first.rank_radius is not None else "")
    heading = esc(title or f"Private quantiles by {first.method}")
    sections = f"""<h2>Privacy</h2>
<p class="privacy">{esc(quantiles_privacy_in_words(rel))}</p>
<h2>Parameters</h2>
{_table(params)}
<h2>Quantiles</h2>
{radius_note}
{chart}
<p>{_csv_link(frame, f"{_file_stem(first)}-quantiles.csv", "Download the quantiles (CSV)")}</p>
{''.join(tables)}"""
    return _page(heading, _not_private_warning(rel), sections)


_REPORTS = {"range_tree": _range_tree_report, "sparse_range_tree": _sparse_report, "hierarchy": _hierarchy_report,
            "quantiles": _quantiles_report, "quantiles_groups": _quantiles_report}


def write_report(release: Any, path: str | os.PathLike[str], *, force: bool = False, **kw: Any) -> None:
    """Write :func:`render_report` to ``path`` (atomically). An existing file that is not a dptree
    report is overwritten only with ``force=True`` (:func:`dptree.io.release_file.check_overwrite`)."""
    from dptree.io.release_file import atomic_write, check_overwrite

    check_overwrite(path, "report", force=force)
    text = render_report(release, **kw)
    atomic_write(path, text.encode("utf-8"), what="report", error=InputFormatError)
