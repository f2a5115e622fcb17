"""PNG files of releases and results (matplotlib, a dependency of dptree), for ``dptree plot`` and
the reports: each writer draws with the same :mod:`dptree.io.drawing` function as ``.plot()`` on a
figure of its own (no pyplot, no global state) and saves it atomically, marked as a dptree plot.
"""

from __future__ import annotations

import io
import os
from typing import Any, Callable

from dptree._validation import require
from dptree.errors import InputFormatError, InvalidParameterError
from dptree.io.drawing import (
    MAX_PLOTTED_GROUPS,
    draw_cdf,
    draw_hierarchy,
    draw_histogram,
    draw_quantiles,
    draw_running,
    hierarchy_height,
    nice_edges,
    value_label,
)
from dptree.io.heatmap import draw_heatmap
from dptree.io.release_file import atomic_write, check_overwrite

__all__ = ["plot_cdf", "plot_histogram", "plot_hierarchy", "plot_quantiles", "plot_heatmap", "plot_running",
           "nice_edges", "value_label", "MAX_PLOTTED_GROUPS"]

def _figure(height: float = 4.2) -> tuple[Any, Any]:
    """A figure of a PNG writer and its axes: a figure of its own, outside pyplot (no global state,
    whatever backend the caller uses)."""
    fig = require("matplotlib.figure", "plotting").Figure(figsize=(7, height), dpi=110)
    return fig, fig.add_subplot()


def _write(path: Any, force: bool, draw: Callable[[Any], Any], height: float = 4.2) -> Any:
    """Check the target, draw on a new figure's axes, save it as a PNG; returns what ``draw`` returned."""
    _check_target(path, force)
    fig, ax = _figure(height)
    out = draw(ax)
    fig.tight_layout()
    _save(fig, path)
    return out


def _check_target(path: Any, force: bool) -> None:
    """Before drawing: a path must be a new file or a dptree plot (``force`` for any other file);
    a file object (the report's buffer) is written directly."""
    if not hasattr(path, "write"):
        suffix = os.path.splitext(os.fspath(path))[1].lower()
        if suffix not in ("", ".png"):
            raise InvalidParameterError(f"plots are PNG images, but the file name ends in {suffix!r}: give a name "
                                        "ending in .png")
        check_overwrite(path, "plot", force=force)


def _save(fig: Any, path: Any) -> None:
    """PNG bytes marked as a dptree plot, written atomically to a path (or to a file object)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": "dptree"})  # marks a dptree plot
    if hasattr(path, "write"):
        path.write(buf.getvalue())
    else:
        atomic_write(path, buf.getvalue(), what="plot", error=InputFormatError)


def plot_cdf(
    release: Any,
    path: Any,
    *,
    level: float = 0.95,
    max_points: int = 4000,
    log: bool = False,
    clip_negative: bool = False,
    force: bool = False,
    groups: Any = None,
) -> None:
    """Save a PNG of :func:`draw_cdf`. An existing file that is not a dptree plot is overwritten
    only with ``force=True``."""
    _write(path, force, lambda ax: draw_cdf(ax, release, level=level, max_points=max_points, log=log,
                                            clip_negative=clip_negative, groups=groups))


def plot_histogram(
    release: Any,
    path: Any,
    *,
    bins: int = 30,
    edges: Any = None,
    level: float = 0.95,
    log: bool = False,
    clip_negative: bool = False,
    force: bool = False,
) -> Any:
    """Save a PNG of :func:`draw_histogram`; returns the
    :class:`~dptree.rangetree.release.HistogramResult` drawn."""
    return _write(path, force, lambda ax: draw_histogram(ax, release, bins=bins, edges=edges, level=level, log=log,
                                                         clip_negative=clip_negative))


def plot_hierarchy(
    release: Any, path: Any, *, level: float = 0.95, depth: int = 1, max_nodes: int = 40, clip_negative: bool = False,
    force: bool = False,
) -> Any:
    """Save a PNG of :func:`draw_hierarchy`; returns the frame that was drawn."""
    height = hierarchy_height(release, depth, max_nodes)
    return _write(path, force, lambda ax: draw_hierarchy(ax, release, level=level, depth=depth, max_nodes=max_nodes,
                                                         clip_negative=clip_negative), height=height)


def plot_quantiles(release: Any, path: Any, *, groups: Any = None, log: bool = False, force: bool = False) -> Any:
    """Save a PNG of :func:`draw_quantiles`; returns the rows drawn."""
    return _write(path, force, lambda ax: draw_quantiles(ax, release, groups=groups, log=log))


def plot_heatmap(release: Any, path: Any, *, resolution: int = 64, level: float = 0.95, clip_negative: bool = False,
                 force: bool = False) -> None:
    """A 2-D release's heat map of a ``resolution`` x ``resolution`` grid of blocks beside their
    standard errors (:func:`~dptree.io.heatmap.draw_heatmap`, which lays its panels out itself)."""
    _check_target(path, force)
    fig = require("matplotlib.figure", "plotting").Figure(figsize=(11, 4.2), dpi=110)
    draw_heatmap(fig.add_subplot(), release, resolution=resolution, level=level, clip_negative=clip_negative)
    _save(fig, path)


def plot_running(release: Any, path: Any, *, level: float = 0.95, force: bool = False) -> None:
    """Save a PNG of :func:`draw_running` (a continual counter's running totals and their band)."""
    _write(path, force, lambda ax: draw_running(ax, release, level=level))
