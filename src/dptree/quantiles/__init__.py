"""m quantiles with intervals and an automatic choice of method: :func:`quantiles`
returns a :class:`QuantilesRelease`. Methods: the range tree read off, ApproxQuantiles
(:mod:`~dptree.quantiles.approx`), JointExp (``joint``), one exponential mechanism per level;
the choice (:mod:`~dptree.quantiles.auto`) and the intervals (:mod:`~dptree.quantiles.intervals`).
docs/notes/quantiles.md has the proofs and the measured numbers."""

from dptree.quantiles.api import quantiles
from dptree.quantiles.release import QuantilesRelease

__all__ = ["quantiles", "QuantilesRelease"]
