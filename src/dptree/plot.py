"""Plots of releases (needs matplotlib: ``pip install "dptree[plot]"``)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from .errors import InputFormatError
from .ranges import RangeTree
from .serialize import atomic_write, check_overwrite

__all__ = ["plot_cdf"]


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise InputFormatError('plotting needs matplotlib: pip install "dptree[plot]"') from exc
    return plt


def plot_cdf(
    release: RangeTree, path: str, *, level: float = 0.95, max_points: int = 4000, force: bool = False
) -> None:
    """Save a PNG of the estimated CDF (as a fraction of the estimated total) with its
    pointwise ``level`` confidence band (:meth:`RangeTree.ci` of each threshold count, divided by
    the estimated total). An existing file that is not a dptree plot is overwritten only with
    ``force=True``."""
    to_file = not hasattr(path, "write")  # a path; a file object (the report's buffer) is written directly
    if to_file:
        check_overwrite(path, "plot", force=force)
    plt = _pyplot()
    dom = release.domain
    idx = np.unique(np.linspace(0, dom.size - 1, min(dom.size, max_points)).astype(np.int64))
    xs = dom.leaf_start(idx)
    counts = release.cdf(xs)
    band_low, band_high = release.ci(np.full(xs.shape, xs[0]), xs, level=level)
    mono = release.cdf(xs, monotone=True)
    n = max(float(release.cdf(xs[-1:])[0]), 1e-12)
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    ax.fill_between(xs, band_low / n, band_high / n, color="tab:blue", alpha=0.25, label=f"{level:.0%} pointwise band")
    ax.plot(xs, counts / n, color="tab:blue", lw=1.2, label="least-squares estimate")
    ax.plot(xs, mono / n, color="tab:orange", lw=1.0, ls="--", label="monotone fit")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("value")
    ax.set_ylabel("fraction of records <= value")
    spent = ", ".join(f"{k}={v:.3g}" for k, v in release.privacy["budget_spent"].items())
    ax.set_title(f"Private CDF ({spent}{'' if release.private else ', NOT PRIVATE'})")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", metadata={"Software": "dptree"})  # marks a dptree plot
    finally:
        plt.close(fig)
    if to_file:
        atomic_write(path, buf.getvalue(), what="plot", error=InputFormatError)
    else:
        path.write(buf.getvalue())  # type: ignore[attr-defined]
