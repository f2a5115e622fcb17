"""A static HTML report of a range-tree, hierarchy, quantiles or 2-D release: parameters, metadata (column,
source, creation time, ledger charge), privacy in plain language, plots, tables and CSV downloads.

Everything shown is post-processing of the public release (no privacy cost). The page is one
self-contained file: the plots are PNGs and the CSV files are embedded as base64 data URIs, there
is no script and no external resource (matplotlib draws the plots, pandas writes the CSV files).

This module picks the report of a release's kind and writes it; the report of each kind is in
:mod:`dptree.reporting.sections`, the pieces every page shares in :mod:`dptree.reporting.page`.
"""

from __future__ import annotations

import os
from numbers import Integral, Real
from typing import Any, Callable

from dptree._validation import InstanceOf, Interval, validate_params
from dptree.errors import InputFormatError, InvalidParameterError
from dptree.reporting.sections import (
    QUANTILES,
    grouped_range_tree_report,
    hierarchy_privacy_in_words,
    hierarchy_report,
    privacy_in_words,
    quantiles_privacy_in_words,
    quantiles_report,
    range_tree_report,
    sparse_report,
)
from dptree.reporting.spatial import KINDS as SPATIAL
from dptree.reporting.spatial import spatial_report

__all__ = ["render_report", "write_report", "privacy_in_words", "hierarchy_privacy_in_words",
           "quantiles_privacy_in_words", "QUANTILES"]


@validate_params({
    "level": [Interval(Real, 0.5, 1, closed="left")],
    "bins": [Interval(Integral, 1, None)],
    "title": [None, InstanceOf(str)],
    "log": [InstanceOf(bool)],
    "clip_negative": [InstanceOf(bool)],
    "resolution": [None, Interval(Integral, 1, None, hint="e.g. resolution=64")],
})
def render_report(
    release: Any,
    *,
    level: float = 0.95,
    bins: int = 30,
    title: str | None = None,
    log: bool = False,
    clip_negative: bool = False,
    resolution: int | None = None,
) -> str:
    """The report as one HTML string: a range-tree release (CDF, histogram with round bin edges,
    quantiles with intervals), a sparse range tree (CDF, quantiles, its cells), a group-by range tree
    (every group's CDF in one plot; per group its total, quantiles and histogram as CSV), a hierarchy
    release (counts per node), a quantiles release, one or by group (its plot and tables, at the
    release's own level: ``level`` does not apply), or a 2-D release (heat map and standard errors
    of a ``resolution`` x ``resolution`` grid of blocks, default 64, and that grid as CSV). ``log``:
    logarithmic value axis; ``clip_negative``:
    plots in a clearly marked post-processed view with negative estimates shown as 0 (tables and CSV
    files always hold the released estimates)."""
    kind = getattr(release, "KIND", "")
    if kind in SPATIAL:
        if log:
            raise InvalidParameterError("log applies to a value axis; a 2-D release's heat map has none")
        return spatial_report(release, level=level, bins=bins, title=title, log=log, clip_negative=clip_negative,
                              resolution=resolution)
    report = _REPORTS.get(kind)
    if report is None:
        raise InvalidParameterError("a report needs a range-tree, hierarchy or quantiles release (range trees dense, "
                                    "sparse or by group), or a 2-D release")
    if resolution is not None:
        raise InvalidParameterError("resolution applies to 2-D releases (blocks per axis of the heat map)")
    return report(release, level=level, bins=bins, title=title, log=log, clip_negative=clip_negative)


#: the report of each kind of release
_REPORTS: dict[str, Callable[..., str]] = {
    "range_tree": range_tree_report, "range_sums": range_tree_report, "factorized_cdf": range_tree_report, "range_tree_groups": grouped_range_tree_report,
    "range_tree_private_groups": grouped_range_tree_report, "sparse_range_tree": sparse_report,
    "hierarchy": hierarchy_report, "quantiles": quantiles_report, "quantiles_groups": quantiles_report,
    "quantiles_private_groups": quantiles_report}


def write_report(release: Any, path: str | os.PathLike[str], *, force: bool = False, **kw: Any) -> None:
    """Write :func:`render_report` to ``path`` (atomically). An existing file that is not a dptree
    report is overwritten only with ``force=True`` (:func:`dptree.io.release_file.check_overwrite`)."""
    from dptree.io.release_file import atomic_write, check_overwrite

    check_overwrite(path, "report", force=force)
    text = render_report(release, **kw)
    atomic_write(path, text.encode("utf-8"), what="report", error=InputFormatError)
