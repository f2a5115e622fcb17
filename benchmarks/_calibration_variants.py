"""Calibration rules dptree does not ship, rebuilt to measure the shipped one against them.

:class:`Variant` is :class:`dptree.rangetree.quantile_calibration.Calibration` (the released rule)
with switches that turn each of its choices back into an alternative; ``Variant()`` is the released
rule itself (``python benchmarks/_calibration_variants.py`` checks that it gives the released
factors, and that two of the others differ from it where they should), and ``dataclasses.replace(SHIPPED, ...)`` builds the others:

* ``tail_plug_ins=False``: past the data's end, the isotonic fit's tail alone instead of the three
  tails (abrupt, spread, the isotonic fit's own);
* ``split=False``: one straight line through the plug-in's window instead of two meeting at the
  target; ``split_everywhere=False``: two lines only where the window reaches the plug-in's first or
  last rank;
* ``far=False``: the line on the data's side keeps its own slope where the window reaches the
  first rank; ``far_top=True``: it takes the steeper slope at the last rank too;
* ``phase="uniform"``: each simulation draws where q n falls inside its bucket uniformly, instead
  of the two extreme phases with the larger factor kept;
* ``negative=False``: factors floored at 0.

Used by quantile_ci_coverage.py, quantiles_coverage.py and calibration_rules.py (docs/quantiles.md
records what they measured). Run with ``PYTHONPATH=src:benchmarks``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from dptree.noise import RandomSource
from dptree.noise.integers import uniform_below
from dptree.rangetree.quantile_calibration import Calibration, _steeper, straight_window

__all__ = ["Variant", "SHIPPED"]

#: resolution of a uniformly drawn phase (where q n falls inside its bucket)
PHASES = 1 << 52


@dataclass(frozen=True)
class Variant(Calibration):
    """The released calibration with each choice a switch (module docstring); the defaults are
    the released choices."""

    split: bool = True
    split_everywhere: bool = True
    far: bool = True
    far_top: bool = False
    tail_plug_ins: bool = True
    phase: Literal["worst", "uniform"] = "worst"
    negative: bool = True

    def plug_ins(self, pos: np.ndarray, val: np.ndarray, est: Any, n_hat: float, size: int,
                 v_total: float) -> list[tuple[np.ndarray, np.ndarray]]:
        if self.tail_plug_ins:
            return super().plug_ins(pos, val, est, n_hat, size, v_total)
        return [(pos, val)]

    def straight(self, pos: np.ndarray, val: np.ndarray, target: float, half: float
                 ) -> tuple[np.ndarray, np.ndarray]:
        if (self.split, self.split_everywhere, self.far, self.far_top) == (True, True, True, False):
            return straight_window(pos, val, target, half)
        lo_t, hi_t = max(target - half, val[0]), min(target + half, val[-1])
        a, b = np.interp(lo_t, val, pos), np.interp(hi_t, val, pos)
        if not b > a:
            return pos, val
        left, right = pos < a, pos > b
        clipped = target - half < val[0] or target + half > val[-1]
        mid_p, mid_v = (([float(np.interp(target, val, pos))], [target])
                        if self.split and (clipped or self.split_everywhere) and lo_t < target < hi_t else ([], []))
        top = target + half > val[-1]
        if mid_p and clipped and self.far and (self.far_top or not top):
            mid = float(mid_p[0])
            mid_p = [_steeper_left(pos, val, target, half, float(a), mid) if top
                     else _steeper(pos, val, target, half, float(b), mid)]
        return (np.concatenate([pos[left], [a], mid_p, [b], pos[right]]),
                np.concatenate([val[left], [lo_t], mid_v, [hi_t], val[right]]))

    def phases(self, source: RandomSource, sims: int) -> list[np.ndarray]:
        if self.phase == "uniform":  # each simulation's phase, uniform on (0, 1]
            return [(uniform_below(source, PHASES, sims) + 1.0) / PHASES]
        return super().phases(source, sims)

    def floor(self, high: str) -> float:
        return super().floor(high) if self.negative else 0.0


def _steeper_left(pos: np.ndarray, val: np.ndarray, target: float, half: float, a: float, mid: float) -> float:
    """``far_top``: where the window reaches the last rank, the left line, from (a, target - half)
    to (mid, target), takes the steeper of its own slope and the plug-in's slope over the next
    ``half`` ranks further into the data."""
    ranks = target - max(target - half, val[0])
    far_lo = max(target - 2 * half, val[0])
    a2 = float(np.interp(far_lo, val, pos))
    if a - a2 > 0 and ranks > 0 and (target - half - far_lo) > 0:
        dens = max(ranks / (mid - a), (target - half - far_lo) / (a - a2))
        return min(mid, a + ranks / dens)
    return mid


#: the released rule, as a variant (every switch at its released value)
SHIPPED = Variant()


def _check_variants() -> None:
    """``Variant()`` gives the released factors and intervals, bit for bit; ``far_top=True`` and
    ``split_everywhere=False`` move the plug-in quantile where they should."""
    import dptree
    from dptree.noise import make_source
    from dptree.rangetree.quantile_calibration import CALIBRATION, calibrated_intervals

    qs = np.array([0.05, 0.5, 0.95, 0.99, 1.0])
    for seed, x in enumerate((np.random.default_rng(0).integers(0, 256, 1000),
                              np.minimum(np.random.default_rng(1).lognormal(4, 1, 1000).astype(int), 4095))):
        t = dptree.range_tree(x, lower=0, upper=4095, epsilon=1.0, rng=seed)
        mine = calibrated_intervals(t, qs, 0.95, source=make_source(7), sims=39, calibration=SHIPPED)
        theirs = calibrated_intervals(t, qs, 0.95, source=make_source(7), sims=39, calibration=CALIBRATION)
        assert np.array_equal(mine[0], theirs[0]) and mine[1] == theirs[1], (mine, theirs)
    print("Variant() gives the released calibration")
    # ranks 0..900 at 10 a bucket over [0, 90], then 900..1000 spread over [90, 100_090]: with
    # far_top the left line takes the density of ranks 830..890 where the window reaches the last rank
    pos, val = np.array([0.0, 90.0, 100_090.0]), np.array([0.0, 900.0, 1000.0])
    far_p, far_v = replace(SHIPPED, far_top=True).straight(pos, val, 950.0, 60.0)
    a = float(np.interp(890.0, val, pos))
    assert abs(float(np.interp(950.0, far_v, far_p)) - (a + 60.0 / 10.0)) < 1e-9
    assert float(np.interp(950.0, *SHIPPED.straight(pos, val, 950.0, 60.0)[::-1])) > 40_000
    # data that start late (30 pooled ranks over [0, 768), then 3.9 records a bucket): one straight
    # line puts the plug-in quantile of q n = 51.3 in the empty head, two lines at 773.5
    pos, val = np.array([0.0, 768.0, 768.0 + 970 / 3.9]), np.array([0.0, 30.0, 1000.0])
    one = replace(SHIPPED, split_everywhere=False).straight(pos, val, 51.3, 45.0)
    assert 450 < float(np.interp(51.3, one[1], one[0])) < 500 and len(one[0]) == len(pos) + 1
    two = SHIPPED.straight(pos, val, 51.3, 45.0)
    assert abs(float(np.interp(51.3, two[1], two[0])) - (768 + 21.3 / 3.9)) < 1e-9
    print("far_top and split_everywhere=False move the plug-in quantile as documented")


if __name__ == "__main__":
    _check_variants()
