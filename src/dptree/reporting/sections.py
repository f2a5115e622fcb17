"""The report of each kind of release (:mod:`dptree.reporting.report` picks one by the release's
kind): a range tree (dense, sparse or one per group), a hierarchy, quantiles (one or by group),
and the privacy statements in plain language.

Every builder reads the release only (its noisy estimates and public parameters): post-processing,
no privacy cost. Each returns the whole page (:func:`dptree.reporting.page.page`).
"""

from __future__ import annotations

import html
import math
from typing import Any, Callable, Mapping

import numpy as np

from dptree.io.contract import shown
from dptree.reporting.page import (
    csv_link,
    file_stem,
    fmt_value,
    groups_chart,
    metadata_rows,
    negative_note,
    not_private_warning,
    page,
    png_of,
    short,
    table,
)

__all__ = ["QUANTILES", "privacy_in_words", "hierarchy_privacy_in_words", "quantiles_privacy_in_words",
           "range_tree_report", "grouped_range_tree_report", "sparse_report", "hierarchy_report", "quantiles_report"]

QUANTILES = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)
_MAX_ROWS = 500  # nodes listed in a hierarchy report's table (the CSV has all)


def privacy_in_words(privacy: dict[str, Any]) -> str:
    """The privacy statement of a range-tree release (one, sparse or by group) as one plain-language paragraph."""
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
    if privacy.get("composition"):  # a group-by release: one budget for all its groups
        text += f" Groups: {privacy['composition']}."
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


# --------------------------------------------------------------------------- range trees


def _total_text(release: Any, level: float) -> str:
    """A range tree's (dense or sparse) estimated total with its ``level`` interval."""
    total_lo, total_hi = release.total_ci(level)
    return f"{release.total():,.1f} ({level:.0%} interval [{total_lo:,.1f}, {total_hi:,.1f}])"


def _tree_rows(release: Any, extra: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A dense range tree's parameters (domain, tree, noise, neighbors, budget, sensitivity), then
    ``extra``, then the library."""
    p, dom = release.privacy, release.domain
    if dom.kind == "datetime":
        width = str(np.timedelta64(int(dom.width), "ns").astype("timedelta64[s]"))
    else:
        width = dom.format_value(dom.width)
    return [
        ("Domain", f"{dom.kind}, [{dom.format_value(dom.lower)}, {dom.format_value(dom.upper)}], "
                   f"{dom.size} buckets of width {width}"),
        ("Tree", f"{release.layout.branching}-ary, {release.layout.depth + 1} levels, root {p.get('root')}"
                 if hasattr(release.layout, "branching") else
                 f"none: the prefix counts through a square-root Toeplitz factorisation over {dom.size} buckets"),
        ("Noise", f"discrete {release.plan.noise} ({p.get('guarantee')})"),
        ("Neighbors", f"{p.get('neighbors')}, at most {p.get('max_contributions')} record(s) per person"),
        ("Budget spent", ", ".join(f"{k} = {v:.6g}" for k, v in p.get("budget_spent", {}).items())),
        ("Sensitivity", _sensitivity_text(p)),
        *extra,
        ("Library", str(p.get("library"))),
    ]


def _sensitivity_text(p: Mapping[str, Any]) -> str:
    """The tree's sensitivities; with sums, the count tree's and the sum tree's (in weight units)."""
    counts = p if "l2_sensitivity" in p else p.get("counts", {})
    l1 = counts.get("l1_sensitivity")
    text = ("" if l1 is None else f"L1 {l1:g}, ") + f"L2 {counts.get('l2_sensitivity'):.4g}"
    sums = p.get("sums")
    if isinstance(sums, Mapping):
        text += (f"; sums of weights: L1 {sums.get('l1_sensitivity'):g}, L2 {sums.get('l2_sensitivity'):.4g} "
                 "(weight-grid units)")
    return text


def _histogram_frame(release: Any, hist: Any) -> Any:
    """A histogram's table as its CSV file holds it: bin edges as the release file writes values."""
    frame = hist.to_frame()
    for c in ("bin_low", "bin_high"):
        frame[c] = [release.json_value(v) for v in frame[c]]
    return frame


def _quantiles_section(release: Any, level: float, text: Callable[[Any], str], note: str, *,
                       stem: str | None = None, heading: str = "h2") -> str:
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
    return f"""<{heading}>Quantiles</{heading}>
<p>{esc(note)}</p>
<p>{csv_link(frame, f"{stem or file_stem(release)}-quantiles.csv", "Download the quantiles (CSV)")}</p>
<table><tr><th>q</th><th>estimate</th><th>interval</th></tr>
{rows}
</table>"""


def _tree_quantiles(release: Any, level: float, **kw: Any) -> str:
    """A dense range tree's quantile section (values as its domain writes them, calibrated intervals)."""
    return _quantiles_section(
        release, level, lambda v: fmt_value(release.domain, v),
        f"Each {level:.0%} interval is calibrated by simulating this release's public noise on its own "
        "estimated CDF (post-processing: no budget); measured coverage is in docs/notes/quantiles.md of dptree.", **kw)


def range_tree_report(release: Any, *, level: float, bins: int, title: str | None, log: bool,
                      clip_negative: bool) -> str:
    from dptree.reporting.plot import plot_cdf, plot_histogram, value_label

    esc = html.escape
    col = value_label(release)
    cdf_b64, _ = png_of(plot_cdf, release, level=level, log=log, clip_negative=clip_negative)
    hist_b64, hist = png_of(plot_histogram, release, bins=bins, level=level, log=log, clip_negative=clip_negative)
    params = metadata_rows(release) + _tree_rows(release, [("Estimated total", _total_text(release, level))])
    hframe = _histogram_frame(release, hist)
    sums = "sum" in hframe.columns  # a release with sums of weights: their columns too

    def cells(r: Any, name: str) -> str:
        return (f'<td class="num">{getattr(r, name):,.1f}</td><td class="num">{getattr(r, name + "_stderr"):,.1f}</td>'
                f'<td class="num">[{getattr(r, name + "_ci_low"):,.1f}, {getattr(r, name + "_ci_high"):,.1f}]</td>')

    hrows = "\n".join(
        f"<tr><td>[{esc(str(r.bin_low))}, {esc(str(r.bin_high))}{']' if i == len(hframe) - 1 else ')'}</td>"
        f'<td class="num">{r.estimate:,.1f}</td><td class="num">{r.stderr:,.1f}</td>'
        f'<td class="num">[{r.ci_low:,.1f}, {r.ci_high:,.1f}]</td>'
        + (cells(r, "sum") + cells(r, "mean") if sums else "") + "</tr>"
        for i, r in enumerate(hframe.itertuples(index=False))
    )
    sum_heads = "".join(f"<th>{w}</th><th>stderr</th><th>{level:.0%} interval</th>"
                        for w in ("sum of weights", "mean weight")) if sums else ""
    neg_note = _negative_bins_note(
        hist, clip_negative,
        "The plots show them as 0 (a post-processed view); the table and the CSV file hold the released estimates.",
        "They are shown as released (red bars below zero).")
    heading = esc(title or f"Private range-tree release of {col}")
    warn = not_private_warning(release)
    sections = f"""<h2>Privacy</h2>
<p class="privacy">{esc(privacy_in_words(release.privacy))}</p>
<h2>Parameters</h2>
{table(params)}
<h2>Cumulative distribution</h2>
<p>Fraction of records with {esc(col)} at or below each value, with a pointwise {level:.0%} confidence band.</p>
<img alt="CDF of {esc(col)} with confidence band" src="data:image/png;base64,{cdf_b64}">
<h2>Histogram</h2>
<p>Estimated counts per bin with {level:.0%} intervals (exact standard errors of the least-squares estimate).</p>
{neg_note}
<img alt="histogram of {esc(col)} with confidence intervals" src="data:image/png;base64,{hist_b64}">
<p>{csv_link(hframe, f"{file_stem(release)}-histogram.csv", "Download the histogram (CSV)")}</p>
<table><tr><th>bin of {esc(col)}</th><th>estimate</th><th>stderr</th><th>{level:.0%} interval</th>{sum_heads}</tr>
{hrows}
</table>
{_tree_quantiles(release, level)}"""
    return page(heading, warn, sections)


def _negative_bins_note(hist: Any, clip_negative: bool, clipped: str, as_released: str) -> str:
    return negative_note(int((hist.counts < 0).sum()), "bin estimate(s)", clip_negative, clipped, as_released,
                         "True counts are never negative, and the interval says how far the true count may be. ")


def grouped_range_tree_report(rel: Any, *, level: float, bins: int, title: str | None, log: bool,
                              clip_negative: bool) -> str:
    """A group-by range tree (:class:`~dptree.rangetree.groupby.GroupedRelease`): its privacy
    statement (one budget for all groups), the trees' shared parameters, every group's CDF and band
    in one plot (at most :data:`~dptree.reporting.plot.MAX_PLOTTED_GROUPS` groups), then per group
    the single tree's pieces: its total with an interval, its quantiles and its histogram (CSV)."""
    from dptree.reporting.plot import nice_edges, plot_cdf, value_label

    esc = html.escape
    col = value_label(rel)
    trees = list(rel.items())
    chart = groups_chart(rel, len(trees), plot_cdf, f"CDF of {col} in each group with confidence bands",
                         level=level, log=log, clip_negative=clip_negative)
    params = metadata_rows(rel) + [("Groups", ", ".join(str(g) for g, _ in trees))] + _tree_rows(trees[0][1], [])
    parts = [f"""<h2>Privacy</h2>
<p class="privacy">{esc(privacy_in_words(rel.privacy))}</p>
<h2>Parameters</h2>
{table(params)}
<h2>Cumulative distribution</h2>
<p>Fraction of each group's records with {esc(col)} at or below each value (of the group's estimated total), with
a pointwise {level:.0%} confidence band.</p>
{chart}"""]
    for group, tree in trees:
        stem = file_stem(tree, group)
        hist = tree.histogram(nice_edges(tree.domain, bins, log=log), level=level)
        csv_note = "The CSV file holds the released estimates."
        parts.append(f"""<h2>Group {esc(str(group))}</h2>
{table([("Estimated total", _total_text(tree, level))])}
{_negative_bins_note(hist, clip_negative, csv_note, csv_note)}
<p>{csv_link(_histogram_frame(tree, hist), f"{stem}-histogram.csv",
             f"Download the histogram of group {group} (CSV)")}</p>
{_tree_quantiles(tree, level, stem=stem, heading="h3")}""")
    heading = esc(title or f"Private range trees of {col} by group")
    return page(heading, not_private_warning(rel), "\n".join(parts))


def sparse_report(release: Any, *, level: float, bins: int, title: str | None, log: bool,
                  clip_negative: bool) -> str:
    """A sparse range tree: privacy, parameters, the CDF between its 0.1% and 99.9% quantiles,
    quantiles with intervals, every cell's count as CSV (a histogram needs round edges over a
    bounded domain: ``dptree query --histogram``)."""
    from dptree.reporting.plot import plot_cdf, value_label

    esc = html.escape
    p, dom, col = release.privacy, release.domain, value_label(release)
    cdf_b64, _ = png_of(plot_cdf, release, level=level, log=log, clip_negative=clip_negative)
    lower, upper = dom.bounds
    params = metadata_rows(release) + [
        ("Domain", f"{dom.key_kind}, [{lower}, {upper}], 2^{dom.bits} keys, no bucket width"),
        ("Tree", f"{release.layout.branching}-ary, {release.plan.method}, {release.depth} levels, "
                 f"{release.measured_nodes} measured ranges"),
        ("Neighbors", f"{p.get('neighbors')}, at most {p.get('max_contributions')} record(s) per person"),
        ("Budget spent", ", ".join(f"{k} = {v:.6g}" for k, v in p.get("budget_spent", {}).items())),
        ("Estimated total", _total_text(release, level)),
        ("Library", str(p.get("library"))),
    ]
    cells = release.to_frame(level)
    for c in ("cell_low", "cell_high"):
        cells[c] = [release.json_value(v) for v in cells[c]]
    sections = f"""<h2>Privacy</h2>
<p class="privacy">{esc(privacy_in_words(p))}</p>
<h2>Parameters</h2>
{table(params)}
<h2>Cumulative distribution</h2>
<p>Fraction of records with {esc(col)} at or below each value, with a pointwise {level:.0%} confidence band,
between the release's own 0.1% and 99.9% quantiles.</p>
<img alt="CDF of {esc(col)} with confidence band" src="data:image/png;base64,{cdf_b64}">
{_quantiles_section(release, level, lambda v: short(release.json_value(v)),
                    f"Each {level:.0%} interval is where the CDF band, widened by the spread bound of the cell it "
                    "cuts, reaches q times the estimated total: conservative (docs/notes/sparse_tree.md of dptree).")}
<h2>Cells</h2>
<p>{len(cells):,} cells partition the domain; each has a least-squares count with its exact standard error.
{csv_link(cells, f"{file_stem(release)}-cells.csv", "Download every cell's count (CSV)")}</p>"""
    return page(esc(title or f"Private sparse range tree of {col}"), not_private_warning(release), sections)


# --------------------------------------------------------------------------- hierarchies and quantiles


def hierarchy_report(rel: Any, *, level: float, bins: int, title: str | None, log: bool, clip_negative: bool) -> str:
    from dptree.reporting.plot import plot_hierarchy

    esc = html.escape
    p = rel.parameters
    h = rel.hierarchy
    frame = rel.to_frame(level=level)
    charts = []
    for depth in range(1, min(h.depth, 3)):
        b64, _ = png_of(plot_hierarchy, rel, level=level, depth=depth, clip_negative=clip_negative)
        charts.append(f'<img alt="counts at depth {depth}" src="data:image/png;base64,{b64}">')
    levels = ", ".join(map(str, p.get("levels") or []))
    params = metadata_rows(rel) + [
        ("Hierarchy", f"{h.n_nodes} nodes, depth {h.depth}, levels {levels}"),
        ("Method", f"{p['method']}" + (f", alpha = {p['alpha']}" if p.get("alpha") is not None else "")),
        ("Budget", f"epsilon = {p['epsilon']:.6g}, delta = {float(p.get('delta') or 0):.3g}"),
        ("Post-processing", ", ".join(k for k in ("consistent", "nonnegative", "integer") if p.get(k)) or "none"),
        ("Library", str(rel.privacy.get("library"))),
    ]
    listed = frame.head(_MAX_ROWS)
    rows = "\n".join(
        f"<tr><td>{esc(str(r.path) or '(total)')}</td><td class=\"num\">{r.count:,.1f}</td>"
        f"<td class=\"num\">{r.stderr:,.1f}</td><td class=\"num\">[{r.ci_low:,.1f}, {r.ci_high:,.1f}]</td></tr>"
        for r in listed.itertuples(index=False)
    )
    more = (f"<p>The first {_MAX_ROWS} of {len(frame)} nodes; the CSV file has all of them.</p>"
            if len(frame) > _MAX_ROWS else "")
    neg_note = negative_note(
        int((frame["count"] < 0).sum()), "node count(s)", clip_negative,
        "The charts show them as 0 (a post-processed view); the table and the CSV file hold the released counts.",
        "They are shown as released (red bars left of zero).",
    )
    heading = esc(title or f"Private hierarchy counts by {levels or 'node'}")
    warn = not_private_warning(rel)
    sections = f"""<h2>Privacy</h2>
<p class="privacy">{esc(hierarchy_privacy_in_words(rel))}</p>
<h2>Parameters</h2>
{table(params)}
<h2>Counts</h2>
<p>Released counts with {level:.0%} intervals{'' if p['method'] != 'multiplicative' else ' (the Lemma 3.3 window)'}.</p>
{neg_note}
{''.join(charts)}
<p>{csv_link(frame, f"{file_stem(rel)}-nodes.csv", "Download every node's count (CSV)")}</p>
{more}
<table><tr><th>node</th><th>count</th><th>stderr</th><th>{level:.0%} interval</th></tr>
{rows}
</table>"""
    return page(heading, warn, sections)


def quantiles_report(rel: Any, *, level: float, bins: int, title: str | None, log: bool, clip_negative: bool) -> str:
    """Each level's estimate and interval (every group's, for a group-by release), at the level the
    release was made with (``level`` does not apply: the intervals are part of the release)."""
    from dptree.reporting.plot import plot_quantiles

    esc = html.escape
    parts = list(rel.items()) if hasattr(rel, "items") else [(None, rel)]
    first = parts[0][1]
    frame = rel.to_frame()
    chart = groups_chart(rel, len(parts), plot_quantiles, "quantiles with their intervals", log=log)
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
    params = metadata_rows(rel) + [
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
                   "ranks an estimate may be from its level (a stated worst case: docs/notes/quantiles.md).</p>"
                   if first.rank_radius is not None else "")
    heading = esc(title or f"Private quantiles by {first.method}")
    sections = f"""<h2>Privacy</h2>
<p class="privacy">{esc(quantiles_privacy_in_words(rel))}</p>
<h2>Parameters</h2>
{table(params)}
<h2>Quantiles</h2>
{radius_note}
{chart}
<p>{csv_link(frame, f"{file_stem(first)}-quantiles.csv", "Download the quantiles (CSV)")}</p>
{''.join(tables)}"""
    return page(heading, not_private_warning(rel), sections)
