"""Drawings of releases and results on a matplotlib ``Axes``: ``.plot(ax=None)`` of every release
and result (:func:`plot_on`), and what the PNG writers of :mod:`dptree.reporting.plot` draw.

Every drawing is post-processing of a release. Each kind has one drawing function
(:func:`draw_cdf`, :func:`draw_histogram`, :func:`draw_hierarchy`, :func:`draw_quantiles`,
:func:`draw_point`, :func:`draw_running`). Axes are labelled with the released column (from
the release's public metadata), histogram edges are round numbers, the value axis can be
logarithmic, and negative estimates are drawn as released: noise can push a count below zero,
and hiding that would overstate the precision. ``clip_negative=True`` draws the post-processed view instead (negative
counts shown as 0, CDF clipped to [0, 1]) and says so in the title. matplotlib is imported when
something is drawn. The drawings read releases through their public methods only, so this module
sits below the products that call it.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from dptree._validation import require
from dptree.data.dates import is_date_bound
from dptree.data.domain import Domain
from dptree.errors import InvalidParameterError
from dptree.io.heatmap import draw_heatmap

__all__ = ["plot_on", "column_of", "draw_cdf", "draw_histogram", "draw_bins", "draw_hierarchy", "draw_quantiles",
           "draw_point", "draw_running", "nice_edges", "value_label", "hierarchy_height", "MAX_PLOTTED_GROUPS"]

def column_of(obj: Any) -> str | None:
    """The released column's name from an object's public metadata, when the caller gave one."""
    col = getattr(obj, "column", None) or (getattr(obj, "metadata", None) or {}).get("column")
    return str(col) if col else None


#: the most groups one quantiles plot draws side by side (``groups=`` picks which)
MAX_PLOTTED_GROUPS = 10


_NICE = (1.0, 2.0, 2.5, 5.0, 10.0)


_DATE_STEPS_S = (1, 5, 10, 30, 60, 300, 600, 1800, 3600, 6 * 3600, 12 * 3600, 86400, 7 * 86400, 14 * 86400,
                 28 * 86400, 91 * 86400, 182 * 86400, 364 * 86400)


def _nice_step(raw: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is >= raw."""
    if raw <= 0:
        return 1.0
    p = 10.0 ** math.floor(math.log10(raw))
    return next(m * p for m in _NICE if m * p >= raw * (1 - 1e-12))


def _log_edges(domain: Domain, bins: int) -> np.ndarray:
    """Round edges evenly spaced on a log scale: 1-2-5 (or 1, 3, or 1..9) times powers of ten."""
    lo, hi = float(domain.lower), float(domain.upper)
    best: np.ndarray | None = None
    for mults in ((1.0,), (1.0, 3.0), (1.0, 2.0, 5.0), tuple(float(m) for m in range(1, 10))):
        pts = [m * 10.0**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1) for m in mults]
        inner = [p for p in pts if lo < p < hi]
        edges = np.unique(np.round(np.array([lo, *inner, hi]), 12))
        if best is None or abs(len(edges) - 1 - bins) < abs(len(best) - 1 - bins):
            best = edges
    assert best is not None
    if domain.kind == "integer":
        return np.unique(np.round(best).astype(np.int64))
    return best


def nice_edges(domain: Domain, bins: int, *, log: bool = False) -> np.ndarray:
    """About ``bins`` histogram edges over the whole domain: the bounds, and between them the
    multiples of a round step (1, 2, 2.5 or 5 times a power of ten; whole days or weeks for
    dates). The step is a multiple of the bucket width, so bins never split a bucket when the
    domain starts on a multiple of its width. ``log`` (a domain above 0): round numbers evenly
    spaced on a log scale instead (1, 2, 5, 10, 20, ...)."""
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
        raise InvalidParameterError(f"bins must be an integer >= 1, got {bins!r}", parameter="bins")
    if log and domain.kind != "datetime" and float(domain.lower) > 0:
        return _log_edges(domain, int(bins))
    lo, hi, w = domain.lower, domain.upper, domain.step
    if domain.kind == "datetime":
        span_s = (int(hi) - int(lo)) / 1e9
        raw = max(span_s / bins, int(w) / 1e9)
        if raw >= 20 * 86400 and int(w) % (86400 * 10**9) == 0:  # calendar months: 1, 2, 3, 6 or 12
            months = min((1, 2, 3, 6, 12), key=lambda m: abs(math.log(m * 30.44 * 86400 / raw)))
            first_m = np.datetime64(int(lo), "ns").astype("datetime64[M]").astype(np.int64)
            last_m = np.datetime64(int(hi), "ns").astype("datetime64[M]").astype(np.int64)
            starts = np.arange((first_m // months + 1) * months, last_m + 1, months).astype("datetime64[M]")
            inner_ns = starts.astype("datetime64[ns]").astype(np.int64)
            inner_ns = inner_ns[(inner_ns > int(lo)) & (inner_ns < int(hi))]
            return np.concatenate([[int(lo)], inner_ns, [int(hi)]]).astype(np.int64).astype("datetime64[ns]")
        if raw > _DATE_STEPS_S[-1]:
            step_ns = int(math.ceil(raw / 86400) * 86400 * 1e9)
        else:  # the whole-unit step nearest to the raw one (weeks, 4 weeks, quarters, ...)
            step_ns = int(min(_DATE_STEPS_S, key=lambda s: abs(math.log(s / raw))) * 1e9)
        step_ns = max(step_ns, int(w))
        first_ns = (int(lo) // step_ns + 1) * step_ns
        inner_ns = np.arange(first_ns, int(hi), step_ns, dtype=np.int64)
        out = np.concatenate([[int(lo)], inner_ns, [int(hi)]]).astype(np.int64)
        return out.astype("datetime64[ns]")
    span = float(hi) - float(lo)
    width = float(w)
    step = width * _nice_step(max(span / bins, width) / width)
    if domain.kind == "integer":
        step = float(max(int(w), int(round(step / int(w))) * int(w)))
    first = math.floor(float(lo) / step + 1) * step
    inner = np.arange(first, float(hi) - 1e-9 * step, step)
    edges = np.concatenate([[float(lo)], inner, [float(hi)]])
    edges = np.unique(np.round(edges, 12))
    if domain.kind == "integer":
        return edges.astype(np.int64)
    return edges


def value_label(release: Any) -> str:
    """The value axis label: the released column's name, or "value"."""
    return column_of(release) or "value"


def _title(kind: str, release: Any, clipped: bool, *, of_column: bool = True) -> str:
    """The title: what is drawn, of which column, under which budget (and NOT PRIVATE for a seeded
    release). A result carries its release's statement; one built by hand has none."""
    priv = getattr(release, "privacy", None)
    col = column_of(release)
    what = f"{kind} of {col}" if col and of_column else kind
    if not priv:
        title = f"{what[0].upper()}{what[1:]} (no privacy statement)"
    else:
        spent = priv.get("budget_spent") or {k: priv[k] for k in ("epsilon", "delta") if priv.get(k)}
        budget = ", ".join(f"{k}={v:.3g}" for k, v in spent.items())
        extra = "" if priv.get("private") else ", NOT PRIVATE"
        title = f"Private {what} ({budget}{extra})"
    if clipped:
        title += "\npost-processed view: negative estimates shown as 0"
    return title


def _set_value_scale(ax: Any, kind: str, lower: Any, linear_near_zero: float, log: bool, axis: str = "x") -> None:
    """``log``: a logarithmic value axis; symlog (linear within ``linear_near_zero`` of 0) when the
    domain reaches 0. Refused for dates."""
    if not log:
        return
    if kind == "datetime":
        raise InvalidParameterError("a log scale needs a numeric domain, not dates")
    setter = ax.set_xscale if axis == "x" else ax.set_yscale
    if float(lower) > 0:
        setter("log")
    else:  # zero or negative values: logarithmic away from zero, linear near it
        setter("symlog", linthresh=max(float(linear_near_zero), 1e-12))


def draw_cdf(
    ax: Any,
    release: Any,
    *,
    level: float = 0.95,
    max_points: int = 4000,
    log: bool = False,
    clip_negative: bool = False,
    groups: Any = None,
) -> None:
    """Draw the estimated CDF (as a fraction of the estimated total) with its pointwise ``level``
    confidence band (:meth:`RangeTree.ci` of each threshold count, divided by the estimated
    total), and the monotone fit, at most ``max_points`` points. ``log``: logarithmic value axis
    (symlog when the domain reaches 0). The y axis shows the estimates as released, below 0 or
    above 1 included; ``clip_negative`` clips them to [0, 1] and marks the plot as a
    post-processed view. A sparse range tree (:class:`~dptree.sparsetree.release.SparseRangeTree`,
    up to 2^64 keys) is drawn between its own released 0.1% and 99.9% quantiles (post-processing),
    its band from ``cdf_ci``. A group-by release (:class:`~dptree.rangetree.groupby.GroupedRelease`)
    draws each group's CDF and band, every group or the ``groups`` listed (at most
    :data:`MAX_PLOTTED_GROUPS`)."""
    members = _plotted_groups(release, groups)
    lows, highs = [], []
    for i, (group, one) in enumerate(members):
        xs, ys, lo, hi, mo, scale = _cdf_curve(one, level, max_points, log, clip_negative)
        color = f"C{i}" if group is not None else "tab:blue"
        band = f"{level:.0%} pointwise band"
        ax.fill_between(xs, lo, hi, color=color, alpha=0.25 if group is None else 0.15,
                        label=band if group is None or i == 0 else None)
        ax.plot(xs, ys, color=color, lw=1.2, label="least-squares estimate" if group is None else str(group))
        if group is None:  # one release: its monotone fit too (per group it would crowd the plot)
            ax.plot(xs, mo, color="tab:orange", lw=1.0, ls="--", label="monotone fit")
        lows.append(float(np.min(lo)))
        highs.append(float(np.max(hi)))
    ymin = min(-0.05, min(lows) - 0.02)
    ymax = max(1.05, max(highs) + 0.02)
    ax.set_ylim(ymin, ymax)
    if ymin < -0.05 or ymax > 1.05:
        ax.axhspan(ymin, 0.0, color="0.85", alpha=0.5, lw=0)
        ax.axhspan(1.0, ymax, color="0.85", alpha=0.5, lw=0)
    col = value_label(release)
    ax.set_xlabel(col)
    ax.set_ylabel(f"fraction of records with {col} <= x")
    _set_value_scale(ax, *scale, log)
    ax.set_title(_title("CDF", release, clip_negative), fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8 if len(members) > 1 else None)


def _cdf_curve(release: Any, level: float, max_points: int, log: bool, clip_negative: bool
               ) -> tuple[Any, Any, Any, Any, Any, tuple[str, Any, float]]:
    """One tree's CDF as drawn: (points, estimate, band low, band high, monotone fit), each a
    fraction of its estimated total, and the value scale."""
    if release.KIND == "range_tree":  # a dense tree (a sparse one has no domain of buckets)
        dom = release.domain
        idx = np.unique(np.linspace(0, dom.size - 1, min(dom.size, max_points)).astype(np.int64))
        xs = dom.leaf_start(idx)
        band_low, band_high = release.ci(np.full(xs.shape, xs[0]), xs, level=level)
        n = max(float(release.cdf(xs[-1:])[0]), 1e-12)
        scale: tuple[str, Any, float] = (dom.kind, dom.lower, dom.width)
    else:
        xs, scale = _sparse_points(release, max_points, log)
        band_low, band_high = release.cdf_ci(xs, level)
        n = max(float(release.total()), 1e-12)
    ys, lo, hi, mo = (release.cdf(xs) / n, band_low / n, band_high / n, release.cdf(xs, monotone=True) / n)
    if clip_negative:
        ys, lo, hi, mo = (np.clip(a, 0.0, 1.0) for a in (ys, lo, hi, mo))
    return xs, ys, lo, hi, mo, scale


def _sparse_points(release: Any, max_points: int, log: bool) -> tuple[np.ndarray, tuple[str, Any, float]]:
    """Where a sparse tree's CDF is drawn: ``max_points`` values between its released 0.1% and 99.9%
    quantiles (evenly spaced, or on a log scale with ``log``), and its value scale."""
    kind = release.domain.kind
    low, high = np.asarray(release.quantile([0.001, 0.999]))
    if kind == "datetime":
        first, last = (int(np.datetime64(v, "ns").astype(np.int64)) for v in (low, high))
        ns = np.unique(np.linspace(first, max(last, first + 1), max_points).astype(np.int64))
        return ns.astype("datetime64[ns]"), ("datetime", 0, 1.0)
    a, b = float(low), float(high)
    if b <= a:  # every estimate at one point: a unit on each side
        a, b = a - 1.0, b + 1.0
    xs = np.geomspace(a, b, max_points) if log and a > 0 else np.linspace(a, b, max_points)
    if kind in ("int", "uint"):
        xs = np.unique(np.round(xs)).astype(np.uint64 if kind == "uint" else np.int64)
    return xs, (kind, a, 1.0 if kind in ("int", "uint") else (b - a) / 1000)


def draw_histogram(
    ax: Any,
    release: Any,
    *,
    bins: int = 30,
    edges: Any = None,
    level: float = 0.95,
    log: bool = False,
    clip_negative: bool = False,
) -> Any:
    """Draw a histogram of a range tree (round edges from :func:`nice_edges`, or ``edges``) with
    ``level`` intervals (:func:`draw_bins`); returns the
    :class:`~dptree.rangetree.release.HistogramResult`."""
    e = nice_edges(release.domain, bins, log=log) if edges is None else np.asarray(edges)
    h = release.histogram(e, level=level)
    dom = release.domain
    _draw_bins(ax, h, release, log=log, clip_negative=clip_negative, scale=(dom.kind, dom.lower, dom.width))
    return h


def draw_bins(ax: Any, result: Any, *, log: bool = False, clip_negative: bool = False) -> None:
    """Draw a :class:`~dptree.rangetree.release.HistogramResult`: one bar per bin at its true
    position and width on the value axis (``log``: logarithmic), with its interval. Negative
    estimates are drawn below the zero line as released; ``clip_negative`` draws them as 0
    (intervals still those of the released estimate) and marks the plot as a post-processed view."""
    e = np.asarray(result.edges)
    if e.dtype.kind in "US":  # dates given as ISO text
        e = e.astype("datetime64[ns]")
    if e.dtype.kind == "M":
        scale: tuple[str, Any, float] = ("datetime", 0, 1.0)
    else:
        scale = ("numeric", e[0], float(np.min(np.diff(e.astype(np.float64)))))
    _draw_bins(ax, result, result, log=log, clip_negative=clip_negative, scale=scale, edges=e)


def _draw_bins(ax: Any, h: Any, labels_from: Any, *, log: bool, clip_negative: bool,
               scale: tuple[str, Any, float], edges: Any = None) -> None:
    """The bars of a histogram result ``h``; axis labels and title from ``labels_from`` (its
    release, or the result itself, which carries its release's column and statement)."""
    e = h.edges if edges is None else edges
    counts = np.clip(h.counts, 0.0, None) if clip_negative else h.counts
    left, right = e[:-1], e[1:]
    widths = right - left
    centers = left + widths / 2
    colors = np.where(h.counts < 0, "tab:red", "tab:blue")
    ax.bar(left, counts, width=widths, align="edge", color=colors, alpha=0.8, edgecolor="white", lw=0.5)
    Patch = require("matplotlib.patches", "plotting").Patch
    # the legend's swatch is blue whatever colour the first bar has
    handles: list[Any] = [Patch(color="tab:blue", alpha=0.8)]
    labels = ["estimated count"]
    if h.ci_low is not None and h.ci_high is not None:
        handles.append(ax.errorbar(centers, h.counts, yerr=[h.counts - h.ci_low, h.ci_high - h.counts], fmt="none",
                                   ecolor="black", capsize=2, lw=0.8))
        labels.append(f"{h.level:.0%} interval")
    ax.axhline(0.0, color="black", lw=0.8)
    if not clip_negative and np.any(h.counts < 0):
        handles.append(Patch(color="tab:red", alpha=0.8))
        labels.append("negative estimate (noise), as released")
    col = value_label(labels_from)
    ax.set_xlabel(col)
    ax.set_ylabel("records")
    _set_value_scale(ax, *scale, log)
    ax.set_title(_title("histogram", labels_from, clip_negative), fontsize=10)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(handles, labels, loc="best", fontsize=8)


def hierarchy_height(release: Any, depth: Any, max_nodes: int) -> float:
    """The figure height (inches) of a hierarchy plot: a row per node drawn (the hierarchy is public)."""
    h = release.hierarchy
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth < h.depth:
        raise InvalidParameterError(f"depth must be an integer in [0, {h.depth - 1}], got {depth!r}")
    return 0.35 * min(int(h.sizes[depth]), max(int(max_nodes), 0)) + 1.8


def draw_hierarchy(ax: Any, release: Any, *, level: float = 0.95, depth: int = 1, max_nodes: int = 40,
                   clip_negative: bool = False) -> Any:
    """Draw a bar chart of the counts of one level of a hierarchy release (``depth`` 1: the
    children of the root) with their ``level`` intervals, largest first (at most ``max_nodes``);
    returns the frame that was drawn. Negative counts are drawn as released unless ``clip_negative``."""
    frame = release.to_frame(level=level)
    h = release.hierarchy
    hierarchy_height(release, depth, max_nodes)  # checks depth
    part = frame[frame["depth"] == depth].sort_values("estimate", ascending=False).head(max_nodes)
    est = part["count"].to_numpy(dtype=np.float64)
    shown = np.clip(est, 0.0, None) if clip_negative else est
    y = np.arange(len(part))[::-1]
    colors = np.where(est < 0, "tab:red", "tab:blue")
    ax.barh(y, shown, color=colors, alpha=0.75, label="released count")
    lo, hi = part["ci_low"].to_numpy(), part["ci_high"].to_numpy()
    ax.errorbar(est, y, xerr=[np.maximum(est - lo, 0.0), np.maximum(hi - est, 0.0)], fmt="none", ecolor="black",
                capsize=2, lw=0.8, label=f"{level:.0%} interval")
    ax.axvline(0.0, color="black", lw=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels(list(part["path"]), fontsize=8)
    levels = list(release.parameters.get("levels") or getattr(h, "levels", []) or [])
    ax.set_ylabel(levels[depth - 1] if 0 < depth <= len(levels) else f"depth {depth}")
    ax.set_xlabel("records")
    ax.set_title(_title(f"counts by {levels[depth - 1]}" if 0 < depth <= len(levels) else "counts", release,
                        clip_negative, of_column=False), fontsize=10)
    ax.grid(alpha=0.3, axis="x")
    ax.legend(loc="lower right", fontsize=8)
    return part


def draw_quantiles(ax: Any, release: Any, *, groups: Any = None, log: bool = False) -> Any:
    """Draw quantiles with intervals (a :func:`dptree.quantiles` release, or a range tree's
    :class:`~dptree.rangetree.results.QuantileResult`): each level q (x axis) against its estimate
    (y axis), one marker per level, with the release's own intervals, at the level it was made
    with, as vertical bars. A group-by release (:class:`~dptree.quantiles.groups.GroupedQuantiles`)
    draws one series per group, side by side at each level: every group, or the ``groups`` listed
    (at most :data:`MAX_PLOTTED_GROUPS`). ``log``: logarithmic value axis. Post-processing of the
    release only; returns the rows drawn (``release.to_frame()``, with a group column for a
    group-by release)."""
    members = _plotted_groups(release, groups)
    first = members[0][1]
    q = np.asarray(first.q, dtype=np.float64)
    gap = float(np.min(np.diff(q))) if q.size > 1 else 0.1
    spread = min(gap, 0.1) * 0.6  # the groups' side-by-side offsets stay inside a level's gap
    frames = []
    for i, (group, rel) in enumerate(members):
        x = q + (spread * (i / (len(members) - 1) - 0.5) if len(members) > 1 else 0.0)
        label = "estimate" if group is None else str(group)
        line = ax.plot(x, np.asarray(rel.values), marker="o", ms=4, lw=0.8, alpha=0.9, label=label)[0]
        lo, hi = np.asarray(rel.ci_low), np.asarray(rel.ci_high)
        ax.vlines(x, lo, hi, color=line.get_color(), lw=1.0, alpha=0.7)
        ax.plot(np.concatenate([x, x]), np.concatenate([lo, hi]), ls="none", marker="_", ms=6, color=line.get_color())
        frame = rel.to_frame()
        if group is not None:
            frame.insert(0, "group", group)
        frames.append(frame)
    method = getattr(first, "method", None)
    ax.plot([], [], color="0.4", lw=1.0, label=f"{first.level:.0%} interval" + (f" ({method})" if method else ""))
    ax.set_xlabel("level q")
    ax.set_ylabel(value_label(release))
    ax.set_xticks(q if q.size <= 12 else np.linspace(0.0, 1.0, 11))
    ax.set_xlim(min(-0.02, float(q[0]) - spread), max(1.02, float(q[-1]) + spread))
    if log:  # a release's public bounds; a result's own interval ends
        lower = getattr(first, "lower", None)
        upper = getattr(first, "upper", None)
        if lower is None or upper is None:
            lower, upper = np.min(np.asarray(first.ci_low)), np.max(np.asarray(first.ci_high))
        dates = is_date_bound(lower)
        integer = isinstance(lower, (int, np.integer))
        near_zero = 1.0 if dates or integer else max((float(upper) - float(lower)) * 1e-3, 1e-12)
        _set_value_scale(ax, "datetime" if dates else "numeric", 0 if dates else lower, near_zero, log, axis="y")
        ax.set_ylim(bottom=max(ax.get_ylim()[0], float(lower)))  # symlog: no empty negative half
    ax.set_title(_title("quantiles", release, False), fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    import pandas as pd

    return pd.concat(frames, ignore_index=True)


def draw_point(ax: Any, release: Any, *, log: bool = False) -> None:
    """Draw a released point on its domain: an interior point, a single quantile or a threshold
    classifier's threshold, as one marker between the public bounds. A release with no point (an
    interior point's bottom, a constant classifier) is drawn as the empty domain with a note."""
    threshold = hasattr(release, "predict")
    value = release.threshold if threshold else release.value
    if threshold:
        what, label = "threshold", "threshold: h(x) = 1 for x <= it"
        missing = None if value is not None else f"constant classifier: h(x) = {release.constant} everywhere"
    else:
        q = getattr(release, "q", None)
        what = "interior point" if q is None else f"{q:g}-quantile"
        label = f"released {what}"
        missing = "bottom: no point released" if getattr(release, "bottom", False) else None
    lower, upper = release.lower, release.upper
    if isinstance(lower, str):  # date bounds given as text
        lower, upper = np.datetime64(lower, "ns"), np.datetime64(upper, "ns")
    ax.plot([lower, upper], [0, 0], color="0.5", lw=2, solid_capstyle="butt", label="domain (public bounds)")
    if missing is None:
        ax.plot([value], [0], ls="none", marker="v", ms=10, color="tab:blue", label=label)
    else:
        ax.text(0.5, 0.6, missing, transform=ax.transAxes, ha="center", va="center")
    dates = is_date_bound(lower)
    _set_value_scale(ax, "datetime" if dates else "numeric", 0 if dates else lower, 1.0, log)
    ax.set_ylim(-1, 1)
    ax.set_yticks([])
    ax.set_xlabel(value_label(release))
    ax.set_title(_title(what, release, False), fontsize=10)
    ax.legend(loc="upper right", fontsize=8)


#: how :func:`plot_on` draws each ``PLOT`` kind (``Displayed.plot`` of :mod:`dptree.io.display`)
def draw_running(ax: Any, release: Any, *, level: float = 0.95) -> None:
    """Draw a continual counter's released running totals against the step, with the band of
    their ``level`` normal intervals (exact standard errors), as released (no clipping)."""
    steps = np.arange(1, release.steps + 1)
    if release.steps:
        low, high = release.ci(steps, level)
        ax.fill_between(steps, low, high, color="tab:blue", alpha=0.2, lw=0, label=f"{level:.0%} interval")
        ax.plot(steps, release.estimates, color="tab:blue", lw=1, label="released running total")
        ax.legend(loc="upper left", fontsize=8)
    ax.set_xlim(0, release.plan.horizon)
    ax.set_xlabel("step")
    ax.set_ylabel("running total")
    ax.set_title(_title("running total", release, False), fontsize=10)


_DRAW: dict[str, Callable[..., Any]] = {"cdf": draw_cdf, "histogram": draw_bins, "quantiles": draw_quantiles,
                                        "hierarchy": draw_hierarchy, "point": draw_point, "heatmap": draw_heatmap,
                                        "running": draw_running}


def plot_on(obj: Any, ax: Any = None, **kwargs: Any) -> Any:
    """Draw a release or result (``obj.plot(ax, **kwargs)``) on ``ax``, or on a new figure's axes
    (pyplot's, so a notebook shows it), and return the axes."""
    kind = getattr(obj, "PLOT", None)
    if kind is None:
        raise InvalidParameterError(f"{type(obj).__name__} has no plot: plot the release it came from, or its "
                                    "histogram(...) or quantiles(...) result")
    draw = _DRAW[kind]
    if ax is None:
        if kind == "hierarchy":
            height = hierarchy_height(obj, kwargs.get("depth", 1), kwargs.get("max_nodes", 40))
        else:
            height = 2.4 if kind == "point" else 4.2
        plt = require("matplotlib.pyplot", "plotting")
        fig, ax = plt.subplots(figsize=(11 if kind == "heatmap" else 7, height))
        draw(ax, obj, **kwargs)
        if kind != "heatmap":  # the heat map lays its panels out itself (beside ax)
            fig.tight_layout()
    else:
        draw(ax, obj, **kwargs)
    return ax


def _plotted_groups(release: Any, groups: Any) -> list[tuple[Any, Any]]:
    """(group, release) pairs to draw: (None, release) for one release; a group-by release's groups."""
    if not hasattr(release, "items"):
        if groups is not None:
            raise InvalidParameterError("groups= applies to a group-by release (by= and groups=)")
        return [(None, release)]
    if not release.groups:
        raise InvalidParameterError("no group was released (the private selection of the groups kept none), so there "
                                    "is nothing to draw; the release's summary and privacy statement say what was run")
    if groups is None:
        picked = list(release.groups)
    else:
        picked = list(groups)
        unknown = [g for g in picked if g not in release.releases]
        if unknown or not picked or len(set(map(str, picked))) != len(picked):
            raise InvalidParameterError(f"groups must name distinct groups of the release, one or more of "
                                        f"{list(release.groups)}; got {picked}")
    if len(picked) > MAX_PLOTTED_GROUPS:
        raise InvalidParameterError(f"the release has {len(picked)} groups; one plot draws at most "
                                    f"{MAX_PLOTTED_GROUPS}: pick them with groups=[...] (--groups a,b)")
    return [(g, release.releases[g]) for g in picked]
