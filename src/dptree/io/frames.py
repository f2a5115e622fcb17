"""Results as tables: the one helper behind every ``to_frame()``.

Every release and result kind builds its table here, so the columns are named and ordered the
same way everywhere: first the columns that say what was asked (``lo``/``hi``, ``bin_low``/
``bin_high``, ``q``, ``path``, ``group``, ...), then ``estimate``, ``stderr``, ``ci_low``,
``ci_high`` (where the kind has them), then any further public columns. The interval level is kept
in ``frame.attrs["ci_level"]``. Everything in a frame is post-processing of a release.

pandas is a dependency of dptree; it is imported on the first table, not with the package.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["result_frame", "concat_frames", "ESTIMATE_COLUMNS"]

#: the columns every frame with estimates carries, in this order
ESTIMATE_COLUMNS = ("estimate", "stderr", "ci_low", "ci_high")


def _pandas() -> Any:
    import pandas as pd

    return pd


def result_frame(
    keys: Mapping[str, Any],
    *,
    estimate: Any,
    stderr: Any = None,
    ci: tuple[Any, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
    level: float | None = None,
) -> Any:
    """A pandas DataFrame: ``keys`` columns, then estimate/stderr/ci_low/ci_high (those given),
    then ``extra``. ``level`` (the interval's confidence level) goes to ``attrs["ci_level"]``."""
    pd = _pandas()
    cols: dict[str, Any] = dict(keys)
    cols["estimate"] = estimate
    if stderr is not None:
        cols["stderr"] = stderr
    if ci is not None:
        cols["ci_low"], cols["ci_high"] = ci
    cols.update(extra or {})
    frame = pd.DataFrame(cols)
    if ci is not None and level is not None:
        frame.attrs["ci_level"] = float(level)
    return frame


def concat_frames(frames: Mapping[Any, Any], key: str) -> Any:
    """One frame from several (e.g. one per group), with a first column ``key`` naming each part."""
    pd = _pandas()
    parts = []
    for name, f in frames.items():
        f = f.copy()
        f.insert(0, key, [name] * len(f))
        parts.append(f)
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if parts and "ci_level" in parts[0].attrs:
        out.attrs["ci_level"] = parts[0].attrs["ci_level"]
    return out
