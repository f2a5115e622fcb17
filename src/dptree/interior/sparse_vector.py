"""AboveThreshold, the sparse vector technique (Dwork, Naor, Reingold, Rothblum, Vadhan 2009;
Kaplan et al. 2020, Theorem 4.2), on integer queries with exact discrete Laplace noise.

:class:`AboveThreshold` answers one query at a time (HeavyPaths' StoppingPoint);
:func:`first_above_threshold` runs it over a fixed list of answers (the private bounds of a range
tree, :mod:`dptree.rangetree.bounds`); :func:`above_threshold_scales` gives the noise scales of
both, with the monotone variant (Lyu, Su and Li 2017) and its proof.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dptree._validation import check_param
from dptree.errors import InvalidParameterError
from dptree.interior.selection import _EPSILON, _ints
from dptree.noise import RandomSource, RngLike, discrete_laplace, laplace_scale_used, make_source

__all__ = ["AboveThreshold", "above_threshold_error_bound", "above_threshold_scales", "first_above_threshold"]


# --------------------------------------------------------------------------- AboveThreshold


def above_threshold_error_bound(epsilon: float, m: int, beta: float) -> float:
    """Accuracy alpha of :class:`AboveThreshold` over m queries with failure probability beta.

    Kaplan et al. 2020, Theorem 4.2, state alpha = (8/eps) log(2m/beta) for continuous Laplace noise; with
    discrete Laplace noise the two-sided tail is at most twice the continuous one, so dptree uses
    the conservative alpha = (8/eps) ln(4m/beta).
    """
    return 8.0 / epsilon * math.log(4.0 * m / beta)


def above_threshold_scales(epsilon: float, sensitivity: int = 1, monotone: bool = False) -> tuple[Fraction, Fraction]:
    """The requested discrete Laplace scales (threshold, query) of an epsilon-DP AboveThreshold.

    Half the budget goes to the threshold and half to the halting query: the threshold noise rho
    has scale 2 D / eps and the query noise nu scale 4 D / eps, or 2 D / eps when the queries are
    *monotone* (on every pair of neighbours, all answers move the same way: all up by 0..D, or all
    down by 0..D; Lyu, Su and Li 2017, "Understanding the Sparse Vector Technique", Alg. 7 with
    c = 1). Proof for integer answers (docs/notes/privacy.md, "Private bounds"): map rho -> rho + D and
    the halting query's nu -> nu + 2 D (general), or, monotone, rho -> rho + D and nu -> nu + D
    when the answers move up, rho unchanged and nu -> nu + D when they move down; every bottom
    stays a bottom, the top stays the top, and the shifts cost D / (2 D / eps) + 2 D / (4 D / eps)
    = eps, or D / (2 D / eps) + D / (2 D / eps) = eps. The integer shifts keep the proof exact for
    the discrete Laplace.
    """
    eps = Fraction(float(epsilon))
    d = int(sensitivity)
    if d < 1 or eps <= 0:
        raise InvalidParameterError("AboveThreshold needs epsilon > 0 and an integer sensitivity >= 1")
    return Fraction(2 * d) / eps, Fraction((2 if monotone else 4) * d) / eps


def first_above_threshold(
    answers: Sequence[int] | np.ndarray,
    threshold: int,
    epsilon: float,
    rng: RngLike | RandomSource = None,
    *,
    sensitivity: int = 1,
    monotone: bool = False,
    runs: int | None = None,
) -> Any:
    """AboveThreshold over a fixed list of integer query answers: the index of the first answer
    with ``answer + nu >= threshold + rho``, or None when no answer gets there.

    rho (drawn once) and the nu (one per query) are exact discrete Laplace at the scales of
    :func:`above_threshold_scales`; pure ``epsilon``-DP for queries of L1 sensitivity
    ``sensitivity`` under the caller's neighbouring relation (and ``monotone`` only when every
    neighbouring pair moves all answers the same way). Vectorised: a nu is drawn for every query,
    and the ones after the first top are never read (the same law as drawing them one at a time).
    ``runs``: that many independent runs on the same answers (an int64 array, -1 for no top).
    """
    src = rng if hasattr(rng, "random_bytes") else make_source(rng)
    s_rho, s_nu = above_threshold_scales(epsilon, sensitivity, monotone)
    vals = np.asarray(answers, dtype=np.int64)
    r = 1 if runs is None else int(runs)
    rho = discrete_laplace(src, s_rho, r)  # type: ignore[arg-type]
    nu = discrete_laplace(src, s_nu, r * int(vals.size)).reshape(r, vals.size)  # type: ignore[arg-type]
    top = vals[None, :] + nu >= int(threshold) + rho[:, None]
    first = np.where(top.any(axis=1), top.argmax(axis=1), -1).astype(np.int64)
    if runs is not None:
        return first
    return None if first[0] < 0 else int(first[0])


@dataclass
class AboveThreshold:
    """AboveThreshold (Dwork, Naor, Reingold, Rothblum, Vadhan 2009; Kaplan et al. 2020, Theorem 4.2).

    ``threshold`` c is public. The noisy threshold is c + rho, rho ~ DLap(2/eps) (drawn once); each
    integer-valued sensitivity-1 query answer f is compared as f + nu >= c + rho with fresh
    nu ~ DLap(4/eps). Returns True (top) and halts at the first success, False (bottom) before.
    Pure epsilon-DP over any number of bottoms and one top, for any neighboring relation under
    which every query has sensitivity 1 (the standard proof with integer shifts rho -> rho + 1,
    nu -> nu + 2 holds verbatim for the discrete Laplace because the queries are integers).
    Accuracy: :func:`above_threshold_error_bound`.
    """

    threshold: float
    epsilon: float
    rng: RngLike | RandomSource = None
    _src: RandomSource = field(init=False, repr=False)
    _noisy: Fraction = field(init=False, repr=False)
    halted: bool = field(init=False, default=False)
    answered: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        check_param("epsilon", self.epsilon, _EPSILON)
        eps = self.epsilon = float(self.epsilon)
        self._src = self.rng if hasattr(self.rng, "random_bytes") else make_source(self.rng)  # type: ignore[assignment]
        rho = int(discrete_laplace(self._src, above_threshold_scales(eps)[0], 1)[0])
        # f + nu >= c + rho  <=>  f + nu - rho >= ceil(c) for integer f, nu, rho
        self._noisy = Fraction(math.ceil(Fraction(self.threshold))) + rho

    @property
    def noise_scales(self) -> tuple[Fraction, Fraction]:
        """The exact discrete Laplace scales used for the threshold and the queries."""
        s_rho, s_nu = above_threshold_scales(self.epsilon)
        return laplace_scale_used(s_rho), laplace_scale_used(s_nu)

    def query(self, value: int) -> bool:
        """Answer one integer query of sensitivity 1; True (top) halts the instance."""
        if self.halted:
            raise InvalidParameterError("AboveThreshold has halted after answering top")
        (v,) = _ints([value], "query value")
        nu = int(discrete_laplace(self._src, above_threshold_scales(self.epsilon)[1], 1)[0])
        self.answered += 1
        if v + nu >= self._noisy:
            self.halted = True
            return True
        return False
