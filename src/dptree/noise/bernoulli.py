"""Exact Bernoulli draws: Bernoulli(num/den), Bernoulli(a / 2^bits) for integers of any size, and
Bernoulli(exp(-gamma)) for rational gamma >= 0.

:func:`bernoulli_exp_neg` is Algorithm 1 of Canonne, Kamath and Steinke, "The Discrete Gaussian
for Differential Privacy" (NeurIPS 2020), vectorised over the samples still undecided, in integer
arithmetic only (an exact Python-integer path takes over where int64 could overflow).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dptree.errors import InvalidParameterError
from dptree.noise.integers import _INT64_SAFE, _uniform_below_scalar, _words, uniform_below, uniform_int
from dptree.noise.sources import RandomSource

__all__ = ["bernoulli_ratio", "bernoulli_dyadic", "bernoulli_exp_neg"]

_DEN_SAFE = 1 << 53  # denominators the vectorised Bernoulli(exp(-gamma)) path accepts


def bernoulli_ratio(src: RandomSource, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Exact Bernoulli(num/den) for int64 arrays with 0 <= num <= den < 2^62."""
    num = np.asarray(num, dtype=np.int64)
    den = np.asarray(den, dtype=np.int64)
    num, den = np.broadcast_arrays(num, den)
    return uniform_below(src, den) < num.ravel()


def bernoulli_dyadic(src: RandomSource, numerators: Sequence[int], bits: int, which: np.ndarray) -> np.ndarray:
    """Exact Bernoulli(numerators[w] / 2^bits) for each entry w of ``which`` (an int array of
    indices into ``numerators``, Python integers with 0 <= a <= 2^bits, ``bits`` of any size).

    A uniform U in [0, 1) is drawn 32 bits at a time and compared with the probability's binary
    digits, only for the entries still undecided: the first digit where they differ decides U < p
    (an entry whose drawn digits all equal p's has U >= p: False). No rounding decides any
    outcome; an entry needs one 32-bit word unless its word equals p's digit (probability 2^-32).
    """
    idx = np.asarray(which, dtype=np.int64).ravel()
    out = np.zeros(idx.size, dtype=bool)
    if bits < 1 or not numerators:
        raise InvalidParameterError("bernoulli_dyadic needs bits >= 1 and at least one probability")
    digits = -(-bits // 32)
    one = 1 << (32 * digits)
    nums = [int(a) << (32 * digits - bits) for a in numerators]
    if any(not 0 <= a <= one for a in nums):
        raise InvalidParameterError("bernoulli_dyadic needs 0 <= numerator <= 2^bits")
    if idx.size == 0:
        return out
    if int(idx.min()) < 0 or int(idx.max()) >= len(nums):
        raise InvalidParameterError("bernoulli_dyadic: an index is outside the list of probabilities")
    sure = np.array([a == one for a in nums], dtype=bool)
    table = np.array([[0 if a == one else (a >> (32 * (digits - 1 - d))) & 0xFFFFFFFF for d in range(digits)]
                      for a in nums], dtype=np.int64)
    out[sure[idx]] = True
    todo = np.flatnonzero(~sure[idx])
    for d in range(digits):
        if todo.size == 0:
            break
        word = _words(src, todo.size, 32)
        digit = table[idx[todo], d]
        out[todo[word < digit]] = True
        todo = todo[word == digit]
    return out


def _fraction_loop_scalar(src: RandomSource, rest: int, den: int, k: int) -> bool:
    """The loop of CKS Algorithm 1 for gamma = rest/den in [0, 1], continued from K = k."""
    while True:
        if uniform_int(src, 0, den * k - 1) < rest:
            k += 1
        else:
            return k % 2 == 1


def _bernoulli_exp_neg_scalar(src: RandomSource, num: int, den: int) -> bool:
    """CKS 2020 Algorithm 1 for one rational gamma = num/den >= 0, in Python integers."""
    whole = (num - 1) // den if num > den else 0  # leaves rest/den in [0, 1]
    rest = num - whole * den
    for _ in range(whole):  # Bernoulli(exp(-1)) must succeed `whole` times
        if not _bernoulli_exp_neg_scalar(src, 1, 1):
            return False
    return _fraction_loop_scalar(src, rest, den, 1)


def bernoulli_exp_neg(src: RandomSource, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) for non-negative integers num, den > 0 (CKS 2020, Alg. 1).

    For gamma in [0, 1]: K = 1; while Bernoulli(gamma/K) succeeds, K += 1; return [K odd].
    For gamma > 1: w = ceil(gamma) - 1 independent Bernoulli(exp(-1)) must all succeed, then
    Bernoulli(exp(-(gamma - w))) with gamma - w in (0, 1]. Inputs may be int64 or Python-int object arrays;
    entries whose arithmetic could overflow int64 take an exact Python-integer path.
    """
    num_a = np.atleast_1d(np.asarray(num))
    den_a = np.atleast_1d(np.asarray(den))
    num_a, den_a = np.broadcast_arrays(num_a, den_a)
    num_a = num_a.ravel()
    den_a = den_a.ravel()
    n = num_a.size
    out = np.zeros(n, dtype=bool)
    if n == 0:
        return out
    if num_a.dtype == object or den_a.dtype == object:
        safe = np.array(
            [0 <= int(a) < _INT64_SAFE and 0 < int(b) < _DEN_SAFE for a, b in zip(num_a, den_a)],
            dtype=bool,
        )
    else:
        safe = (den_a > 0) & (den_a < _DEN_SAFE) & (num_a >= 0)
    for i in np.flatnonzero(~safe):
        num_i, den_i = int(num_a[i]), int(den_a[i])
        if num_i < 0 or den_i <= 0:
            raise InvalidParameterError("bernoulli_exp_neg needs num >= 0 and den > 0")
        out[i] = _bernoulli_exp_neg_scalar(src, num_i, den_i)
    idx = np.flatnonzero(safe)
    if idx.size == 0:
        return out
    out[idx] = _bernoulli_exp_neg_int64(src, num_a[idx].astype(np.int64), den_a[idx].astype(np.int64))
    return out


def _bernoulli_exp_one(src: RandomSource, n: int) -> np.ndarray:
    """``n`` exact Bernoulli(exp(-1)) draws: CKS Algorithm 1 with gamma = 1 (Bernoulli(1/K))."""
    result = np.zeros(n, dtype=bool)
    todo = np.arange(n)
    k = 1
    while todo.size:
        success = _uniform_below_scalar(src, k, todo.size) == 0  # Bernoulli(1/k)
        result[todo[~success]] = k % 2 == 1
        todo = todo[success]
        k += 1
    return result


def _bernoulli_exp_neg_int64(src: RandomSource, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Vectorised CKS Algorithm 1 for gamma = a/b with int64 a >= 0 and 0 < b < 2^53."""
    n = a.size
    whole = np.where(a > b, (a - 1) // b, 0)  # leaves rest/b in [0, 1]
    rest = a - whole * b
    alive = np.ones(n, dtype=bool)
    remaining = whole.copy()
    while True:  # the integer part: `whole` Bernoulli(exp(-1)) draws must all succeed
        need = np.flatnonzero(alive & (remaining > 0))
        if need.size == 0:
            break
        ok = _bernoulli_exp_one(src, need.size)
        alive[need[~ok]] = False
        remaining[need] -= 1
    live = np.flatnonzero(alive)
    result = np.zeros(live.size, dtype=bool)
    rest_l = rest[live]
    b_l = b[live]
    constant_den = b_l.size > 0 and bool((b_l == b_l[0]).all())
    todo = np.arange(live.size)
    k = 1  # K advances in lockstep for every undecided sample
    while todo.size:
        if (k + 1) * int(b_l[todo].max()) >= _INT64_SAFE:
            for j in todo:  # b*K nears the int64 range: finish exactly in Python integers
                result[j] = _fraction_loop_scalar(src, int(rest_l[j]), int(b_l[j]), k)
            break
        if constant_den:
            draw = _uniform_below_scalar(src, int(b_l[0]) * k, todo.size)
        else:
            draw = uniform_below(src, b_l[todo] * k)
        success = draw < rest_l[todo]  # Bernoulli(rest / (b K))
        result[todo[~success]] = k % 2 == 1
        todo = todo[success]
        k += 1
    final = np.zeros(n, dtype=bool)
    final[live] = result
    return final
