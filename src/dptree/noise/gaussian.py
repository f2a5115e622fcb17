"""Exact discrete Gaussian noise N_Z(0, sigma2): P(x) proportional to exp(-x^2/(2 sigma2)) on Z.

Canonne, Kamath and Steinke, "The Discrete Gaussian for Differential Privacy" (NeurIPS 2020),
Algorithm 3: discrete Laplace proposals accepted by an exact Bernoulli(exp(-gamma)), in integer
arithmetic only. Running time depends on the sampled values (a rejection loop).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dptree.errors import InvalidParameterError
from dptree.noise.bernoulli import _DEN_SAFE, bernoulli_exp_neg
from dptree.noise.laplace import discrete_laplace
from dptree.noise.parameters import _as_fraction, _dyadic_upper
from dptree.noise.sources import RandomSource

__all__ = ["discrete_gaussian"]


def discrete_gaussian(src: RandomSource, sigma2: float | Fraction, size: int) -> np.ndarray:
    """``size`` exact samples of the discrete Gaussian N_Z(0, sigma2) (CKS 2020, Algorithm 3).

    t = floor(sigma) + 1; Y ~ discrete Laplace(t); accept with
    Bernoulli(exp(-(|Y| - sigma2/t)^2 / (2 sigma2))). Adding it to an integer query whose
    change has squared L2 norm D2 gives (D2 / (2 sigma2))-zCDP (CKS 2020, Theorem 4 composed
    over coordinates).
    """
    if size < 0:
        raise InvalidParameterError("size must be non-negative")
    p, q = _dyadic_upper(_as_fraction(sigma2))  # sigma2 = p/q exactly
    t = math.isqrt(p // q) + 1  # floor(sqrt(p/q)) = isqrt(floor(p/q)), so t = floor(sigma) + 1
    out = np.zeros(size, dtype=np.int64)
    todo = np.arange(size)
    den_py = 2 * p * q * t * t
    while todo.size:
        y = discrete_laplace(src, t, todo.size)
        ay = np.abs(y)
        # gamma = (|Y| q t - p)^2 / (2 p q t^2), in int64 where it fits, else Python ints
        if den_py < _DEN_SAFE and int(ay.max(initial=0)) * q * t + p < (1 << 31):
            num = (ay * (q * t) - p) ** 2
            den = np.full(todo.size, den_py, dtype=np.int64)
        else:
            num = np.array([(int(v) * q * t - p) ** 2 for v in ay], dtype=object)
            den = np.full(todo.size, den_py, dtype=object)
        accept = bernoulli_exp_neg(src, num, den)
        out[todo[accept]] = y[accept]
        todo = todo[~accept]
    return out
