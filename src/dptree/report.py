"""A static HTML report of a range-tree release: parameters, privacy in plain language, plots, quantiles.

Everything shown is post-processing of the public release (no privacy cost). The page is one
self-contained file: the plots are PNGs embedded as base64 data URIs, there is no script and no
external resource (needs matplotlib: ``pip install "dptree[plot]"``).
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
from typing import Any

import numpy as np

from .errors import InputFormatError, InvalidParameterError
from .ranges import RangeTree

__all__ = ["render_report", "write_report", "privacy_in_words"]

QUANTILES = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)
_GRID = 4096  # CDF evaluation points for the quantile intervals


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


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _cdf_png(release: RangeTree, level: float) -> str:
    from .plot import plot_cdf

    buf = io.BytesIO()
    plot_cdf(release, buf, level=level)  # type: ignore[arg-type]  # savefig accepts file objects
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _histogram_edges(release: RangeTree, bins: int) -> np.ndarray:
    dom = release.domain
    nb = min(bins, dom.size)
    idx = np.unique(np.linspace(0, dom.size, nb + 1).round().astype(np.int64))
    starts = dom.leaf_start(np.minimum(idx, dom.size - 1))
    if dom.kind == "datetime":
        edges = starts.astype("datetime64[ns]")
        edges[-1] = np.datetime64(int(dom.upper), "ns")
    else:
        edges = np.asarray(starts, dtype=np.float64 if dom.kind == "float" else np.int64)
        edges[-1] = dom.upper
    # as many bins as buckets: the last bucket's start can equal upper; merge it into the last bin
    return edges[np.r_[edges[1:] > edges[:-1], True]]


def _hist_png(release: RangeTree, level: float, bins: int) -> tuple[str, Any]:
    from .plot import _pyplot

    plt = _pyplot()
    edges = _histogram_edges(release, bins)
    h = release.histogram(edges)
    a = np.atleast_1d(release.domain.leaf_of(edges[:-1]))
    b = np.concatenate([np.atleast_1d(release.domain.leaf_of(edges[1:-1])) - 1, [release.domain.size - 1]])
    lows, highs = release.ci(release.domain.leaf_start(a), release.domain.leaf_start(b), level=level)
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    x = np.arange(h.counts.size)
    ax.bar(x, h.counts, width=0.9, color="tab:blue", alpha=0.8, label="estimated count")
    ax.errorbar(x, h.counts, yerr=[h.counts - lows, highs - h.counts], fmt="none", ecolor="black",
                capsize=2, lw=0.8, label=f"{level:.0%} interval")
    labels = [release.domain.format_value(_as_number(e, release)) for e in edges[:-1]]
    step = max(1, len(labels) // 8)
    ax.set_xticks(x[::step])
    ax.set_xticklabels(labels[::step], rotation=30, ha="right", fontsize=8)
    ax.set_xlabel("bin start")
    ax.set_ylabel("records")
    ax.set_title("Private histogram")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(loc="upper right")
    fig.tight_layout()
    try:
        return _png(fig), (edges, h, lows, highs)
    finally:
        plt.close(fig)


def _as_number(v: Any, release: RangeTree) -> Any:
    if release.domain.kind == "datetime":
        return int(np.asarray(v).astype("datetime64[ns]").astype(np.int64))
    return float(v) if release.domain.kind == "float" else int(v)


def _bucket_last(release: RangeTree, leaf: int) -> Any:
    """The largest value of a bucket (floats: its right edge), as a number for ``format_value``."""
    dom = release.domain
    if dom.kind == "float":
        return min(dom.lower + (leaf + 1) * dom.width, dom.upper)
    return min(int(dom.lower) + (leaf + 1) * int(dom.width) - 1, int(dom.upper))


def _quantile_rows(release: RangeTree, level: float) -> list[tuple[str, str, str]]:
    """(q, estimate, interval) where the interval inverts the pointwise CDF band on a grid."""
    dom = release.domain
    idx = np.unique(np.linspace(0, dom.size - 1, min(dom.size, _GRID)).astype(np.int64))
    xs = dom.leaf_start(idx)
    lo_band, hi_band = release.ci(np.full(xs.shape, xs[0]), xs, level=level)
    n = release.total()
    est = np.atleast_1d(release.quantile(np.asarray(QUANTILES)))
    rows = []
    for q, v in zip(QUANTILES, est):
        target = q * n
        # the values whose CDF band contains q*n run from the first bucket whose upper band reaches
        # q*n to the first bucket whose lower band does; on a coarse grid both ends are widened to
        # the neighbouring grid points, so the interval can only grow
        first_hi = np.flatnonzero(hi_band >= target)
        first_lo = np.flatnonzero(lo_band >= target)
        if n <= 0 or not first_hi.size:
            rows.append((f"{q:g}", dom.format_value(_as_number(v, release)), "-"))
            continue
        j = int(first_hi[0])
        a_leaf = idx[j - 1] + 1 if j > 0 else idx[0]
        a = dom.format_value(_as_number(dom.leaf_start(np.array([a_leaf]))[0], release))
        if first_lo.size:
            b = dom.format_value(_bucket_last(release, int(idx[first_lo[0]])))
        else:
            b = dom.format_value(_bucket_last(release, dom.size - 1))
        rows.append((f"{q:g}", dom.format_value(_as_number(v, release)), f"[{a}, {b}]"))
    return rows


def render_report(release: RangeTree, *, level: float = 0.95, bins: int = 30, title: str | None = None) -> str:
    """The report as one HTML string."""
    if not isinstance(release, RangeTree):
        raise InvalidParameterError("a report needs a range-tree release")
    if not (isinstance(level, float) and 0.5 <= level < 1.0):
        raise InvalidParameterError(f"level must be a float in [0.5, 1), got {level!r}")
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise InvalidParameterError(f"bins must be an integer >= 1, got {bins!r}")
    esc = html.escape
    p = release.privacy
    dom = release.domain
    cdf_b64 = _cdf_png(release, level)
    hist_b64, _ = _hist_png(release, level, bins)
    total_lo, total_hi = release.total_ci(level=level)
    if dom.kind == "datetime":
        width = str(np.timedelta64(int(dom.width), "ns").astype("timedelta64[s]"))
    else:
        width = dom.format_value(dom.width)
    params = [
        ("Domain", f"{dom.kind}, [{dom.format_value(dom.lower)}, {dom.format_value(dom.upper)}], "
                   f"{dom.size} buckets of width {width}"),
        ("Tree", f"{release.layout.branching}-ary, {release.layout.depth + 1} levels, root {p.get('root')}"),
        ("Noise", f"discrete {release.plan.noise} ({p.get('guarantee')})"),
        ("Neighbours", f"{p.get('neighbors')}, at most {p.get('max_contributions')} record(s) per person"),
        ("Budget spent", ", ".join(f"{k} = {v:.6g}" for k, v in p.get("budget_spent", {}).items())),
        ("Sensitivity", f"L1 {p.get('l1_sensitivity'):g}, L2 {p.get('l2_sensitivity'):.4g}"),
        ("Estimated total", f"{release.total():,.1f} ({level:.0%} interval [{total_lo:,.1f}, {total_hi:,.1f}])"),
        ("Library", str(p.get("library"))),
    ]
    prow = "\n".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in params)
    qrow = "\n".join(
        f"<tr><td>{esc(q)}</td><td>{esc(v)}</td><td>{esc(iv)}</td></tr>" for q, v, iv in _quantile_rows(release, level)
    )
    heading = esc(title or "Private range-tree release")
    warn = "" if release.private else '<p class="warn">NOT PRIVATE: made with a test seed.</p>'
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="generator" content="dptree"><title>{heading}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; color: #222; }}
table {{ border-collapse: collapse; margin: 1rem 0; }}
th, td {{ border: 1px solid #ccc; padding: .3rem .6rem; text-align: left; }}
th {{ background: #f3f3f3; }}
.privacy {{ background: #eef5fb; border-left: 4px solid #1f77b4; padding: .8rem 1rem; }}
.warn {{ background: #fdecea; border-left: 4px solid #d62728; padding: .8rem 1rem; font-weight: bold; }}
img {{ max-width: 100%; }}
</style></head><body>
<h1>{heading}</h1>
{warn}
<h2>Privacy</h2>
<p class="privacy">{esc(privacy_in_words(p))}</p>
<h2>Parameters</h2>
<table>{prow}</table>
<h2>Cumulative distribution</h2>
<p>Fraction of records at or below each value, with a pointwise {level:.0%} confidence band.</p>
<img alt="CDF with confidence band" src="data:image/png;base64,{cdf_b64}">
<h2>Histogram</h2>
<p>Estimated counts per bin with {level:.0%} intervals (exact standard errors of the least-squares estimate).</p>
<img alt="histogram with confidence intervals" src="data:image/png;base64,{hist_b64}">
<h2>Quantiles</h2>
<p>The interval holds the values where the {level:.0%} pointwise CDF band contains the quantile's rank
(an approximate interval, read off the band on a grid of at most {_GRID} points).</p>
<table><tr><th>q</th><th>estimate</th><th>interval</th></tr>
{qrow}
</table>
</body></html>
"""


def write_report(release: RangeTree, path: str | os.PathLike[str], *, force: bool = False, **kw: Any) -> None:
    """Write :func:`render_report` to ``path`` (atomically). An existing file that is not a dptree
    report is overwritten only with ``force=True`` (:func:`dptree.serialize.check_overwrite`)."""
    from .serialize import atomic_write, check_overwrite

    check_overwrite(path, "report", force=force)
    text = render_report(release, **kw)
    atomic_write(path, text.encode("utf-8"), what="report", error=InputFormatError)
