"""The binary-tree counter: the binary mechanism with Honaker's online least-squares estimate.

The binary mechanism (Dwork, Naor, Pitassi & Rothblum 2010; Chan, Shi & Song 2011) measures every
dyadic block of steps [(i - 1) 2^j + 1, i 2^j] of the horizon T when it completes: levels
j = 0..L-1, L = bit_length(T), each block of level j noised once with independent noise of the
same parameter. Step t's prefix [1, t] is the disjoint union of the blocks of the set bits of t.

**Estimate (Honaker 2015).** At step t the measured blocks are those that end by t; every one of
them lies inside exactly one block of t's decomposition, and the blocks of the decomposition are
complete binary trees of measured blocks. The weighted least-squares estimate of a complete
tree's total from its own measurements is the bottom-up pass: z_0 = y, and at level j,
z_j = w_j y + (1 - w_j)(z_left + z_right) with w_j = 2 v_{j-1} / (s + 2 v_{j-1}), whose variance
is v_j = 1 / (1 / s + 1 / (2 v_{j-1})), v_0 = s (s: the variance of one block's noise). The
trees are independent, so the prefix estimate sum_{j in bits(t)} z_j is the least-squares
estimate of the prefix given everything measured by t (tested against dense least squares), with
exact variance sum_{j in bits(t)} v_j.

**Sensitivity.** A user with at most k participations (one event at each of at most k steps)
changes the measured blocks of level j (those inside [1, T], m_j = 2^j floor(T / 2^j) steps) by
at most k_j = min(k, m_j) in total: L1 = sum_j k_j (k L when T is a power of two). Its squared L2
change at level j is largest when the steps are packed into as few blocks as possible,
floor(k_j / 2^j) 4^j + (k_j mod 2^j)^2; steps 1..k reach every level's maximum at once
(:func:`tree_sensitivities`; brute-forced in the tests).

:class:`TreeCore` runs it online: the running total, per level the total at the open block's
start and the latest completed block's estimate, and the noise drawn for the blocks still to
come. Memory O(L) besides the noise buffer; each step costs O(1) amortised (2 completed blocks
per step on average).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable

import numpy as np

#: noise is drawn for at most this many blocks at a time
NOISE_BLOCK = 4096

__all__ = ["NOISE_BLOCK", "levels_of", "tree_sensitivities", "honaker_weights", "prefix_variance", "TreeCore"]


def levels_of(horizon: int) -> int:
    """L = bit_length(T): levels 0..L-1 (the top block [1, 2^(L-1)] completes by T)."""
    return int(horizon).bit_length()


def tree_sensitivities(horizon: int, participations: int = 1) -> tuple[int, int]:
    """(L1, squared L2) of the measured blocks under one user's at most k participations."""
    l1 = l2sq = 0
    for j in range(levels_of(horizon)):
        m = min(participations, (horizon >> j) << j)  # participations inside the level's measured blocks
        l1 += m
        l2sq += (m >> j) * 4**j + (m % (1 << j)) ** 2
    return l1, l2sq


def honaker_weights(levels: int, block_variance: float) -> tuple[list[float], list[float]]:
    """(w_j, v_j) for j = 0..L-1: the weight of a block's own measurement in its estimate, and
    the variance of that estimate (w_0 = 1, v_0 = s)."""
    s = float(block_variance)
    w, v = [1.0], [s]
    for _ in range(1, levels):
        two = 2.0 * v[-1]
        w.append(two / (s + two))
        v.append(s * two / (s + two))
    return w, v


def prefix_variance(t: np.ndarray | int, variances: list[float]) -> np.ndarray:
    """The exact variance of the estimate of each prefix [1, t]: sum of v_j over the bits of t."""
    tt = np.atleast_1d(np.asarray(t, dtype=np.int64))
    out = np.zeros(tt.shape, dtype=np.float64)
    for j, vj in enumerate(variances):
        out += np.where((tt >> j) & 1, vj, 0.0)
    return out


class TreeCore:
    """The online state of one binary-tree counter (see the module docstring).

    ``draw(n)`` returns n fresh noise values (Python ints) for the next blocks, in the order
    they complete: by step, then by level.
    """

    def __init__(self, horizon: int, block_variance: float, draw: Callable[[int], list[int]]) -> None:
        self.horizon = int(horizon)
        self.levels = levels_of(horizon)
        self.w, self.v = honaker_weights(self.levels, block_variance)
        self.cumulative_v = [math.fsum(self.v[:h]) for h in range(self.levels)]
        self.draw = draw
        self.t = 0
        self.total = 0
        self.start = [0] * self.levels
        self.estimate = [0.0] * self.levels
        self.prefix = 0.0
        self.variance = 0.0
        self.noise: list[int] = []
        self.used = 0

    def step(self, x: int) -> tuple[float, float]:
        """Add step t + 1's count; return its prefix estimate and that estimate's variance."""
        t = self.t + 1
        total = self.total + x
        h = (t & -t).bit_length() - 1  # blocks of levels 0..h complete at t
        noise, pos = self.noise, self.used
        if pos + h + 1 > len(noise):
            wanted = min(NOISE_BLOCK, self._blocks_after(t - 1) - (len(noise) - pos))
            noise = self.noise = noise[pos:] + self.draw(wanted)
            pos = 0
        start, est, w = self.start, self.estimate, self.w
        z = float(total - start[0] + noise[pos])
        start[0] = total
        dropped = 0.0
        for j in range(1, h + 1):
            left = est[j - 1]
            dropped += left
            est[j - 1] = z
            z = w[j] * (total - start[j] + noise[pos + j]) + (1.0 - w[j]) * (left + z)
            start[j] = total
        est[h] = z
        self.used = pos + h + 1
        self.prefix = self.prefix - dropped + z
        self.variance = self.variance - self.cumulative_v[h] + self.v[h]
        self.t, self.total = t, total
        return self.prefix, self.variance

    def _blocks_after(self, t: int) -> int:
        """How many blocks complete after step t (the noise values still to be used)."""
        return sum((self.horizon >> j) - (t >> j) for j in range(self.levels))

    def to_state(self) -> dict[str, Any]:
        """The core's state (secret: the open blocks' exact totals and the noise not yet used)."""
        return {"t": self.t, "total": self.total, "start": list(self.start), "estimate": list(self.estimate),
                "prefix": self.prefix, "variance": self.variance, "noise": self.noise[self.used:]}

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`to_state` (the noise is kept, never drawn again)."""
        self.t, self.total = int(state["t"]), int(state["total"])
        self.start = [int(v) for v in state["start"]]
        self.estimate = [float(v) for v in state["estimate"]]
        self.prefix, self.variance = float(state["prefix"]), float(state["variance"])
        self.noise, self.used = [int(v) for v in state["noise"]], 0
        if len(self.start) != self.levels or len(self.estimate) != self.levels:
            raise ValueError("the saved tree has a different number of levels")


def block_variance_exact(parameter: Fraction, family: str) -> float:
    """The exact variance of one block's noise (discrete Laplace scale or discrete Gaussian sigma^2)."""
    from dptree import noise as _noise

    if family == "laplace":
        return _noise.discrete_laplace_variance(parameter)
    return _noise.discrete_gaussian_variance(parameter)
