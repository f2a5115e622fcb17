"""A textbook floating-point Laplace mechanism (deliberately broken: Mironov 2012), for the audit tests.

    y = x - b * sign(u) * log(1 - 2|u|),   u = U[0, 1) - 1/2 in double precision.

Its outputs are doubles whose low-order bits depend on x: the set of outputs it can produce from
x = 0 differs from the set it can produce from x = 1, so an attacker who sees one output can
often tell which count it came from, whatever the scale b.
"""

from __future__ import annotations

import numpy as np


def textbook_laplace(x: float, b: float, n: int, seed: int) -> np.ndarray:
    """``n`` outputs of the textbook mechanism on the true count ``x`` (uses numpy's RNG: test code)."""
    u = np.random.default_rng(seed).random(n) - 0.5
    return x - b * np.sign(u) * np.log(1.0 - 2.0 * np.abs(u))


def producible_from_zero(y: np.ndarray, b: float, window: int = 64) -> np.ndarray:
    """Whether each output ``y`` is in the image of the mechanism at x = 0.

    At x = 0 the output is -b*sign(u)*log(t) with t = m * 2^-52 exactly (m = 1 .. 2^52), so
    y is producible iff fl(b * log(m 2^-52)) == -|y| for some m. Search m around exp(-|y|/b) 2^52.
    """
    y = np.asarray(y, dtype=np.float64)
    a = -np.abs(y)
    est = np.rint(np.exp(a / b) * 2.0**52)
    found = np.zeros(y.shape, dtype=bool)
    for d in range(-window, window + 1):
        m = np.clip(est + d, 1.0, 2.0**52)
        found |= (b * np.log(m * 2.0**-52)) == a
    return found
