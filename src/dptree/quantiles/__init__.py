"""m quantiles with intervals and an automatic choice of method: :func:`quantiles`
returns a :class:`QuantilesRelease`. Methods: the range tree read off, ApproxQuantiles
(:mod:`~dptree.quantiles.approx`), JointExp (``joint``), one exponential mechanism per level;
the choice (:mod:`~dptree.quantiles.auto`) and the intervals (measured,
:mod:`~dptree.quantiles.measured`, or the stated bound, :mod:`~dptree.quantiles.intervals`).
docs/notes/quantiles.md has the proofs and the measured numbers."""

from dptree.quantiles.api import QuantilesPlan, plan_quantiles, quantiles
from dptree.quantiles.release import QuantilesRelease

__all__ = ["quantiles", "plan_quantiles", "QuantilesPlan", "QuantilesRelease"]
