"""The drawing of a 2-D release: a heat map of the estimated counts beside a panel of their
standard errors (``RangeTree2D.plot``, :func:`dptree.io.drawing.plot_on`).

Post-processing of the release, read through its public ``to_frame(resolution=...)`` only: blocks
of whole cells, each with its estimate and exact standard error. Negative estimates are drawn as
released (a diverging colour map centred on 0) unless ``clip_negative=True``, which the title then
says. matplotlib is imported when something is drawn.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["draw_heatmap"]


def draw_heatmap(ax: Any, release: Any, *, resolution: int = 64, level: float = 0.95, uncertainty: bool = True,
                 clip_negative: bool = False) -> None:
    """Draw the estimates of a ``resolution`` x ``resolution`` grid of blocks on ``ax`` and, with
    ``uncertainty``, their standard errors on a panel appended on its right."""
    frame = release.to_frame(level=level, resolution=resolution)
    xs, ys = np.unique(frame["x_low"]), np.unique(frame["y_low"])
    shape = (xs.size, ys.size)
    est = frame["estimate"].to_numpy().reshape(shape)
    err = frame["stderr"].to_numpy().reshape(shape)
    extent = (float(frame["x_low"].min()), float(frame["x_high"].max()), float(frame["y_low"].min()),
              float(frame["y_high"].max()))
    names = release.columns or ("x", "y")
    if clip_negative:
        est = np.maximum(est, 0.0)
        image = ax.imshow(est.T, origin="lower", extent=extent, aspect="auto", cmap="viridis")
    else:
        top = float(np.abs(est).max()) or 1.0
        image = ax.imshow(est.T, origin="lower", extent=extent, aspect="auto", cmap="RdBu_r", vmin=-top, vmax=top)
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    fig, divider = ax.figure, make_axes_locatable(ax)  # panels beside ax: plot_on returns ax
    fig.colorbar(image, cax=divider.append_axes("right", size="4%", pad=0.08), label="estimated count")
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    shown = "negative counts shown as 0" if clip_negative else "counts as released"
    ax.set_title(f"private counts per block ({shape[0]}x{shape[1]}; {shown})", fontsize=10)
    if uncertainty:
        side = divider.append_axes("right", size="100%", pad=0.9)
        panel = side.imshow(err.T, origin="lower", extent=extent, aspect="auto", cmap="magma")
        fig.colorbar(panel, cax=divider.append_axes("right", size="4%", pad=0.08), label="standard error")
        side.set_xlabel(names[0])
        side.set_title("exact standard error of each block", fontsize=10)
