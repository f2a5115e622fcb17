"""Interior points, medians, quantiles and threshold learning (seed 002, ``002_2f350810784938f5.txt``).

An *interior point* of a multiset S is any y with min S <= y <= max S (seed 002, Def. 1.1).
:func:`interior_point` releases one with differential privacy by one of

* ``"exponential"`` -- the exponential mechanism with q(S, y) = min(#{x<=y}, #{x>=y}) (pure eps);
* ``"treelog"`` -- Algorithm 1 (TreeLog), privacy from Lemma 3.7;
* ``"heavypaths"`` -- Algorithms 2-6 (ConstructPaths, StoppingPoint, OneRandomPath, LevelUp,
  HeavyPaths), privacy from Lemmas 4.5, 4.6, 4.9 and 4.11 with explicit constants
  (derivation: docs/heavypaths.md);
* ``"auto"`` -- the method whose stated sample requirement at (|X|, eps, delta, beta) is smallest.

Domains are integers [lower, upper] of any size (padded to a power of two for the tree methods) or
floats through an order-preserving 64-bit integer encoding. Values outside [lower, upper] are
clamped (a per-record transformation; how many were clamped is never revealed).

**The number of records is private; a size is public only when the caller declares it.**
TreeLog and HeavyPaths calibrate eps0, delta0 and t from a size (Lemma 3.7 has log n and
delta0 <= eps0/(4n)). dptree never uses the actual |S| for that: the caller declares ``n=`` (an
exact public size) or ``n_max=`` (a public upper bound) and the declared value N drives every
calibration, the ``method="auto"`` choice and ``guarantee_applies``. To stay private for *any*
data whatever was declared, the tree methods first cap the data at N records by removing the
most extreme records (ceil(k/2) smallest, floor(k/2) largest when k = |S| - N > 0; an interior
point of the rest is an interior point of S) and are calibrated for datasets of at most N + 1
records. No field of a release is computed from |S|.

**Neighbouring relations.** Lemma 3.6 (TreeLog), Lemmas 4.6/4.9/4.11 (HeavyPaths) are proved for
add/remove-one neighbours (S' = S + {x}). The cap maps some add/remove pairs to replace pairs and
a replace pair is a removal followed by an addition, so the tree methods run their Lemma-3.7 /
Lemma-4.11 calibration at (eps/2, delta/(1 + e^(eps/2))) and are (eps, delta)-DP under both
add/remove-one and replace-one (group privacy, derivation in docs/interior_point.md). The
exponential mechanism's quality has sensitivity 1 under both relations (pure eps, no size used).
"""

from __future__ import annotations

import bisect
import functools
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar, Literal

import numpy as np

from dptree.errors import (
    DataError,
    DomainError,
    InsufficientDataError,
    InvalidParameterError,
    non_integer_values_error,
)
from dptree.interior.selection import (
    AboveThreshold,
    _group,
    above_threshold_error_bound,
    choosing_error_bound,
    choosing_mechanism,
    effective_epsilon,
    exponential_base,
    exponential_mechanism,
    ordered_exponential_mechanism,
)
from dptree.noise import RandomSource, RngLike, exp_lower_rational, make_source, sample_exponential_index
from dptree.privacy.boundary import Boundary
from dptree.privacy.budget import BUDGET_RANGE, Budget, check_delta, check_epsilon, check_release_budget

__all__ = [
    "InsufficientDataError",
    "InteriorPoint",
    "QuantileRelease",
    "ThresholdClassifier",
    "exponential_requirement",
    "heavypaths_parameters",
    "heavypaths_privacy",
    "interior_point",
    "learn_threshold",
    "log_star_levels",
    "median",
    "method_requirements",
    "method_requirements_log2",
    "quantile",
    "treelog_parameters",
    "treelog_privacy",
]

Method = Literal["auto", "exponential", "treelog", "heavypaths"]
_BASE_DOMAIN = 16  # the "|X| = O(1)" of Algorithms 1 and 2
_BASE_H = 4  # log2(_BASE_DOMAIN): heights are compared, not sizes (|X| may be 2^(2^40))


# --------------------------------------------------------------------------- domain encoding


def _float_key(x: float) -> int:
    """Order-preserving map float64 -> int (monotone; -0.0 and 0.0 both map to 0)."""
    i = struct.unpack(">q", struct.pack(">d", x))[0]
    return -(i & 0x7FFFFFFFFFFFFFFF) if i < 0 else i


def _key_float(k: int) -> float:
    bits = ((-k) | (1 << 63)) if k < 0 else k
    return struct.unpack(">d", struct.pack(">Q", bits))[0]


def _is_intlike(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


@dataclass(frozen=True)
class _Encoding:
    kind: Literal["integer", "float"]
    lo: int  # key of lower
    hi: int  # key of upper

    @property
    def size(self) -> int:
        return self.hi - self.lo + 1

    def decode(self, offset: int) -> int | float:
        key = self.lo + min(max(offset, 0), self.size - 1)
        return key if self.kind == "integer" else _key_float(key)


def _encoding(lower: Any, upper: Any) -> _Encoding:
    for name, b in (("lower", lower), ("upper", upper)):
        if isinstance(b, (bool, np.bool_)) or not (_is_intlike(b) or isinstance(b, (float, np.floating))):
            raise DomainError(f"{name} must be an int or a float, got {type(b).__name__}")
        if isinstance(b, (float, np.floating)) and not math.isfinite(float(b)):
            raise DomainError(f"{name} must be finite, got {b}")
    if _is_intlike(lower) and _is_intlike(upper):
        lo, hi, kind = int(lower), int(upper), "integer"
    else:
        try:
            lo, hi, kind = _float_key(float(lower)), _float_key(float(upper)), "float"
        except OverflowError as exc:
            raise DomainError("bounds do not fit a float64 domain; use integer bounds") from exc
    if lo > hi:
        raise DomainError(f"lower must be <= upper, got lower={lower!r} > upper={upper!r}; swap them")
    return _Encoding(kind, lo, hi)  # type: ignore[arg-type]


_INVALID_HINT = (
    "pass on_invalid='drop' to drop such records (a per-record policy; how many are dropped is "
    "never revealed), or clean the data first"
)


def _encode_values(values: Any, enc: _Encoding, on_invalid: str = "error") -> list[int]:
    """Offsets (key - lo) of the clamped values.

    NaN/infinite values (and non-integers in an integer domain) raise :class:`DataError` with a
    message that names no value, position or count, or are dropped with ``on_invalid="drop"``.
    Values of a wrong type (strings, bools) always raise (a schema error, not a data value)."""
    drop = on_invalid == "drop"
    if isinstance(values, (str, bytes)) or values is None:
        raise DataError("values must be a sequence of numbers")
    if isinstance(values, np.ndarray):
        from dptree.data.inputs import _check_1d

        arr = _check_1d(values, "values")  # as range_tree: a 2-D array is refused, not flattened
        if arr.dtype.kind == "f":
            finite = np.isfinite(arr)
            if not np.all(finite):
                if not drop:
                    raise DataError("values contain NaN or infinity; " + _INVALID_HINT)
                arr = arr[finite]
            items: list[Any] = arr.tolist()
        elif arr.dtype.kind in "iu":
            items = arr.tolist()
        elif arr.dtype.kind == "O":
            items = list(arr)
        else:
            raise DataError(f"values must be numbers, got dtype {arr.dtype}")
    else:
        try:
            items = list(values)
        except TypeError as exc:
            raise DataError("values must be a sequence of numbers") from exc
    out: list[int] = []
    lo, hi = enc.lo, enc.hi
    for v in items:
        if isinstance(v, (bool, np.bool_)):
            raise DataError("values must be numbers, not bools")
        if enc.kind == "integer":
            if _is_intlike(v):
                k = int(v)
            elif isinstance(v, (float, np.floating)):
                fv = float(v)
                if not math.isfinite(fv):
                    if drop:
                        continue
                    raise DataError("values contain NaN or infinity; " + _INVALID_HINT)
                if fv != math.floor(fv):
                    if drop:
                        continue
                    raise non_integer_values_error(
                        "pass float bounds (e.g. lower=0.0) to use the float encoding, or " + _INVALID_HINT
                    )
                k = int(fv)
            else:
                raise DataError("values must be numbers (int or float)")
        else:
            if not (_is_intlike(v) or isinstance(v, (float, np.floating))):
                raise DataError("values must be numbers (int or float)")
            try:
                fv = float(v)
            except OverflowError as exc:
                if drop:
                    continue
                raise DomainError(
                    "a value does not fit the float64 encoding of this domain; use integer bounds, or " + _INVALID_HINT
                ) from exc
            if not math.isfinite(fv):
                if drop:
                    continue
                raise DataError("values contain NaN or infinity; " + _INVALID_HINT)
            k = _float_key(fv)
        out.append(min(max(k, lo), hi) - lo)
    return out


def _height(size: int) -> int:
    return (size - 1).bit_length()


def log_star_levels(h: int, base_height: int = _BASE_H) -> list[int]:
    """Tree heights of the recursion: h, ceil(log2(h+1)), ... until h <= base_height (|X| <= 16)."""
    hs = [h]
    while hs[-1] > base_height:
        hs.append(_height(hs[-1] + 1))
    return hs


# --------------------------------------------------------------------------- multisets on [0, 2^h)


class _MS:
    """A multiset of non-negative ints as sorted distinct values with multiplicities."""

    def __init__(self, vals: list[int], cnt: list[int]) -> None:
        self.vals = vals
        self.cnt = cnt
        pre = [0]
        for c in cnt:
            pre.append(pre[-1] + c)
        self.pre = pre
        self.n = pre[-1]

    def count_range(self, a: int, b: int) -> int:
        """#{x : a <= x < b}."""
        return self.pre[bisect.bisect_left(self.vals, b)] - self.pre[bisect.bisect_left(self.vals, a)]

    def quality(self, y: int) -> int:
        le = self.pre[bisect.bisect_right(self.vals, y)]
        ge = self.n - self.pre[bisect.bisect_left(self.vals, y)]
        return min(le, ge)

    def _drop_ends(self, lo: int, hi: int) -> _MS:
        """Remove the ``lo`` smallest and ``hi`` largest elements (lo + hi < n)."""
        vals, cnt = list(self.vals), list(self.cnt)
        for side, rem in ((0, lo), (1, hi)):
            while rem > 0:
                i = 0 if side == 0 else len(cnt) - 1
                take = min(rem, cnt[i])
                cnt[i] -= take
                rem -= take
                if cnt[i] == 0:
                    vals.pop(i)
                    cnt.pop(i)
        return _MS(vals, cnt)

    def trim(self, t: int) -> _MS:
        """Remove the t smallest and t largest elements."""
        if 2 * t >= self.n:
            return _MS([], [])
        return self._drop_ends(t, t)

    def cap(self, size: int) -> _MS:
        """At most ``size`` elements: drop ceil(k/2) smallest and floor(k/2) largest, k = n - size.

        A data-independent policy (the declared public size is the only input besides the data):
        for add/remove or replace neighbours S, S' the capped multisets are identical, add/remove
        neighbours, or differ by one replacement (docs/interior_point.md, "the cap")."""
        k = self.n - size
        if k <= 0:
            return self
        return self._drop_ends((k + 1) // 2, k // 2)

    def level_weights(self, h: int, level: int) -> tuple[list[int], list[int]]:
        """Nodes at ``level`` with positive weight: (node indices, weights)."""
        shift = h - level
        idx: list[int] = []
        w: list[int] = []
        for v, c in zip(self.vals, self.cnt):
            j = v >> shift
            if idx and idx[-1] == j:
                w[-1] += c
            else:
                idx.append(j)
                w.append(c)
        return idx, w


def _node_weight(ms: _MS, h: int, level: int, j: int) -> int:
    s = h - level
    return ms.count_range(j << s, (j + 1) << s)


def _path_and_D(ms_hat: _MS, h: int, t: int, n: int, chooser: Any) -> _MS:
    """Steps 4-5 of Algorithm 1 (and of ConstructPaths / OneRandomPath): the path and the database D.

    ``chooser(w0, w1)`` returns the child (0/1) to follow when both children have positive weight.
    D has exactly n - 3t elements: the fall-off counts per level, the last node's level filling up.
    """
    total = n - 3 * t
    d_vals: list[int] = []
    d_cnt: list[int] = []
    size = 0
    level, j = 0, 0
    while size < total:
        w = _node_weight(ms_hat, h, level, j)
        if level == h or w <= t:
            d_vals.append(level)
            d_cnt.append(total - size)
            size = total
            break
        # levels where every point of the node lies in one child have fall-off 0 and a forced step
        # (Algorithm 1 step 4c, "if one of them has weight 0 proceed to the other child"): jump
        # straight to the level where the node's smallest and largest points separate (or the leaf)
        s = h - level
        i0 = bisect.bisect_left(ms_hat.vals, j << s)
        i1 = bisect.bisect_left(ms_hat.vals, (j + 1) << s) - 1
        u_min, u_max = ms_hat.vals[i0], ms_hat.vals[i1]
        split = h if u_min == u_max else h - (u_min ^ u_max).bit_length()
        if split > level:
            level, j = split, u_min >> (h - split)
            continue
        w0 = _node_weight(ms_hat, h, level + 1, 2 * j)
        w1 = w - w0
        if w0 == 0:
            b = 1
        elif w1 == 0:
            b = 0
        else:
            b = chooser(w0, w1)
        other = w1 if b == 0 else w0
        add = min(other, total - size)
        if add > 0:
            d_vals.append(level)
            d_cnt.append(add)
            size += add
        level, j = level + 1, 2 * j + b
    return _MS(d_vals, d_cnt)


def _four_candidates(h: int, level: int, j: int) -> list[int]:
    s = h - level
    left, right = j << s, ((j + 1) << s) - 1
    if s == 0:
        return [left]
    mid = (2 * j + 1) << (s - 1)
    return [left, right, mid - 1, mid]


def _best_of_four(ms: _MS, h: int, level: int, j: int, eps: float, src: RandomSource) -> int:
    """Exponential mechanism over v_left, v_right, v_inner-left, v_inner-right with q(S, y)."""
    cands = _four_candidates(h, level, j)
    k = exponential_mechanism([ms.quality(y) for y in cands], epsilon=eps, rng=src)
    return cands[k]


def _choose_node(ms_hat: _MS, h: int, level: int, eps: float, delta: float, src: RandomSource) -> int | None:
    """Choosing Mechanism (k = 1) for a node at ``level`` of T with large weight."""
    idx, w = ms_hat.level_weights(h, level)
    c = choosing_mechanism(w, epsilon=eps, delta=delta, k=1, rng=src)
    return None if c is None else idx[c]


def _random_chooser(eps: float, src: RandomSource) -> Any:
    base = exp_lower_rational(Fraction(eps))  # weights b^w with b <= e^eps (Algorithm 1 step 4c)

    def choose(w0: int, w1: int) -> int:
        m = max(w0, w1)
        return sample_exponential_index(src, [1, 1], [m - w0, m - w1], base)

    return choose


def _heavy_chooser(w0: int, w1: int) -> int:
    return 0 if w0 >= w1 else 1  # ConstructPaths step 4c, ties to the left


# --------------------------------------------------------------------------- exponential mechanism


def exponential_requirement(size: int, epsilon: float, beta: float, *, ln_size: float | None = None) -> int:
    """Smallest n with P(EM fails to return an interior point) <= beta on *every* dataset.

    P(q(S, y) = 0) <= |X| b^-OPT and OPT >= ceil(n/2), so OPT >= (2/eps') ln(|X|/beta) suffices,
    eps' = 2 ln b <= eps the epsilon actually used (seed 002, Lemma 2.2 with |F| = |X|).
    On point-mass data OPT = n, and n = (2/eps) ln(|X|/beta) suffices.
    """
    eps_used = effective_epsilon(exponential_base(epsilon))
    ln_x = _ln_int(size) if ln_size is None else ln_size
    m = math.ceil(2.0 / eps_used * (ln_x - math.log(beta)))
    return max(1, 2 * m - 1)


def _ln_int(x: int) -> float:
    """ln of a positive Python int of any size."""
    b = x.bit_length()
    if b < 1000:
        return math.log(x)
    return math.log(x >> (b - 64)) + (b - 64) * math.log(2.0)


# --------------------------------------------------------------------------- TreeLog (Algorithm 1)


def treelog_privacy(eps0: float, delta0: float, n: int, n_calls: int) -> tuple[float, float]:
    """Seed 002, Lemma 3.6/3.7: TreeLog with per-step (eps0, delta0) and N recursive calls is
    (5 eps0 N log n, 3 delta0 n N e^{3 eps0 N log n})-DP for **add/remove-one** neighbours
    (the proof takes S' = S + {x'}; n the larger size, a public bound), log in base 2 (the conservative base:
    the proof of Claim 3.5 bounds the number of ambiguous steps by log_{3/2} n <= 2 log2 n)."""
    ln = math.log2(max(n, 2))
    return 5 * eps0 * n_calls * ln, 3 * delta0 * n * n_calls * math.exp(3 * eps0 * n_calls * ln)


def treelog_parameters(
    n: int, size: int, epsilon: float, delta: float, beta: float = 0.1, *, height: int | None = None
) -> dict[str, Any]:
    """Per-step (eps0, delta0), trimming t and the utility check for TreeLog on n records, |X| = size.

    ``n`` is a public size (the caller's declaration, see :func:`interior_point`), never the
    actual |S|; ``epsilon``/``delta`` are the add/remove-one budget (interior_point passes the
    per-replacement budget of :func:`_swap_budget`).
    Privacy (Lemma 3.7, add/remove-one, with n + 1 for a neighbour and N = number of calls including the base):
    eps0 = eps / (5 N log2(n+1)); delta0 = min(eps0 / (4(n+1)), delta e^{-3eps/5} / (3 (n+1) N)),
    so that (5 eps0 N log n, 3 delta0 n N e^{3 eps0 N log n}) <= (eps, delta) and
    delta0 <= eps0/(4n) (Claim 3.5). t >= (3/eps0) ln(1/delta0) >= (2/eps0) log2(1/delta0)
    (Claim 3.5 needs the weight to shrink by 1/3 at every ambiguous step, which t >= 3 g gives).
    Utility (Lemma 3.8 with explicit constants, docs/heavypaths.md section 3): t is also large
    enough that a score t + 1 - (2/eps0) ln(4/beta') survives the Choosing Mechanism one level up.
    """
    hs = log_star_levels(_height(size) if height is None else height)
    n_calls = len(hs)
    nn = n + 1
    lg = math.log2(max(nn, 2))
    eps0 = epsilon / (5 * n_calls * lg)
    delta0 = min(eps0 / (4 * nn), delta * math.exp(-3 * epsilon / 5) / (3 * nn * n_calls), math.exp(-1))
    eps_em = effective_epsilon(exponential_base(eps0))
    b_each = beta / (2 * n_calls)
    e_choose = choosing_error_bound(eps0, delta0, b_each, nn)
    e_em4 = 2 / eps_em * math.log(4 / b_each)
    t_priv = math.ceil(3 * math.log(1 / delta0) / (eps0 * (1 - 1e-9)))
    t_util = math.ceil(e_choose + e_em4)
    t = max(t_priv, t_util)
    need = 1 + e_choose  # score the level above needs from its recursive call
    ok = True
    for i in range(n_calls - 1):
        if n - 3 * t * i <= 3 * t + 1:
            ok = False
    n_base = n - 3 * t * (n_calls - 1)
    base_need = 1 if n_calls == 1 else need
    if n_base <= 0 or math.ceil(n_base / 2) - 2 / eps_em * (hs[-1] * math.log(2.0) - math.log(b_each)) < base_need:
        ok = False
    return {
        "heights": hs,
        "n_calls": n_calls,
        "eps0": eps0,
        "delta0": delta0,
        "t": t,
        "t_privacy": t_priv,
        "t_utility": t_util,
        "guarantee_applies": ok,
        "privacy": treelog_privacy(eps0, delta0, nn, n_calls),
    }


def _treelog(ms: _MS, h: int, p: dict[str, Any], src: RandomSource, depth: int = 0) -> int | None:
    """Algorithm 1 on ``ms`` over [0, 2^h); None is the bottom of the Choosing Mechanism in Step 7."""
    eps0, delta0, t = p["eps0"], p["delta0"], p["t"]
    n = ms.n
    if h <= _BASE_H or depth + 1 >= p["n_calls"]:
        # Step 1: |X| = O(1) -> the exponential mechanism. The recursion depth depends only on |X|
        # (public). There is no "n <= 3t" shortcut (it is not in seed 002 and is not private: a
        # point mass of 3t records and one of 3t + 1 then behave completely differently); with
        # n <= 3t, Step 5 gives an empty D and the recursion runs on it as the paper says.
        return ordered_exponential_mechanism(ms.vals, counts=ms.cnt, lower=0, upper=(1 << h) - 1, epsilon=eps0, rng=src)
    ms_hat = ms.trim(t)  # Step 2
    d = _path_and_D(ms_hat, h, t, n, _random_chooser(eps0, src))  # Steps 3-5
    h_next = _height(h + 1)
    # Step 6 (clamp padding: post-processing); a bottom one call down is read as level 0
    inner = _treelog(d, h_next, p, src, depth + 1)
    lstar = min(0 if inner is None else inner, h)
    vstar = _choose_node(ms_hat, h, lstar, eps0, delta0, src)  # Step 7
    if vstar is None:
        return None  # bottom (the guarantee has failed); the caller releases a data-independent 0
    return _best_of_four(ms, h, lstar, vstar, eps0, src)  # Steps 8-9


# --------------------------------------------------------------------------- HeavyPaths (Alg. 2-6)


def _advanced(eps: float, k: int, dstar: float) -> float:
    """Advanced composition (Dwork-Rothblum-Vadhan 2010): k-fold (eps, d) is
    (eps sqrt(2k ln(1/d*)) + k eps (e^eps - 1), k d + d*)-DP; dptree takes the min with k eps."""
    if k == 0:
        return 0.0
    adv = eps * math.sqrt(2 * k * math.log(1 / dstar)) + k * eps * math.expm1(eps)
    return min(k * eps, adv)


def heavypaths_privacy(
    eps1: float, eps2: float, delta2: float, k: int, n: int, levels: int, delta: float
) -> tuple[float, float]:
    """(eps_bar, delta_bar) of HeavyPaths (seed 002, Lemma 4.11 with explicit constants).

    For add/remove-one neighbours: the lemmas are stated for S, S' in X^n but proved with
    Lemma 3.6's path argument (S' = S + {x}); ``n`` is a public bound on the sizes.

    StoppingPoint: pure eps1 on the events d_hat <= d*(S), failure delta_sp = e^{-eps1 (k-2)/8}
    + e^{-eps1 (k-2)/16} (Lemma 4.5 via Lemma 4.4). OneRandomPath: (6 eps2 log2 n,
    4 delta2 n e^{4 eps2 log2 n}) (Lemma 4.6). At most J = levels - 2 LevelUps, each
    (2 eps2, 2 delta2) (Lemma 4.9), composed with advanced composition at delta* = delta/4 (or
    basic, whichever is smaller). Total: (eps1 + eps_hat, delta_sp + delta_hat) (docs/heavypaths.md).
    """
    lg = math.log2(max(n, 2))
    e_orp = 6 * eps2 * lg
    d_orp = 4 * delta2 * n * math.exp(4 * eps2 * lg)
    j = max(levels - 2, 0)
    dstar = delta / 4
    e_lu = _advanced(2 * eps2, j, dstar)
    d_lu = 2 * delta2 * j + (dstar if j and e_lu < j * 2 * eps2 else 0.0)
    d_sp = math.exp(-eps1 * (k - 2) / 8) + math.exp(-eps1 * (k - 2) / 16)
    return eps1 + e_orp + e_lu, d_sp + d_orp + d_lu


def _hp_levels(n: int, h: int, t: int) -> list[int]:
    """Heights of the databases S_1, S_2, ... that ConstructPaths produces (public given n, |X|, t)."""
    hs = [h]
    nd = n
    while hs[-1] > _BASE_H and nd > 10 * t:
        hs.append(_height(hs[-1] + 1))
        nd -= 3 * t
    return hs


def heavypaths_parameters(
    n: int, size: int, epsilon: float, delta: float, beta: float = 0.1, *, height: int | None = None
) -> dict[str, Any]:
    """Explicit parameters of HeavyPaths (Algorithm 6) on n records over |X| = size.

    ``n`` is a public size (declared), never the actual |S|; ``epsilon``/``delta`` the
    add/remove-one budget (interior_point passes the per-replacement budget).

    eps1 = eps/4 for StoppingPoint; eps2 the largest value with eps1 + eps_hat(eps2) <= eps;
    delta2 = min(eps2/(4(n+1)), (delta/2) / (4(n+1) e^{4 eps2 log2(n+1)} + 2J)); k >= 2 +
    (16/eps1) ln(8/delta) (so delta_sp <= delta/4) and the utility constraints of
    docs/heavypaths.md section 4; t = 2k (Lemma 4.3 needs t >= 2k) and t >= (3/eps2) ln(1/delta2).
    """
    h = _height(size) if height is None else height
    nn = n + 1
    lg = math.log2(max(nn, 2))
    eps1 = epsilon / 4
    m_dom = len(log_star_levels(h))
    levels = m_dom
    j = max(levels - 2, 0)

    def eps_hat(e2: float) -> float:
        return 6 * e2 * lg + _advanced(2 * e2, j, delta / 4)

    lo, hi = 0.0, epsilon
    for _ in range(100):
        mid = (lo + hi) / 2
        if eps1 + eps_hat(mid) <= epsilon:
            lo = mid
        else:
            hi = mid
    eps2 = lo
    delta2 = min(eps2 / (4 * nn), (delta / 2) / (4 * nn * math.exp(4 * eps2 * lg) + 2 * j), math.exp(-1))
    b_each = beta / (4 + 2 * j)
    eps2_em = effective_epsilon(exponential_base(eps2))
    e_c = choosing_error_bound(eps2, delta2, b_each, nn)
    e_e = 2 / eps2_em * math.log(4 / b_each)
    k_priv = 2 + 16 / eps1 * math.log(8 / delta)
    k_at = 4 * above_threshold_error_bound(eps1, levels, b_each)  # alpha <= k/4
    k_util = 4 * (1 + 2 * e_c)
    t_util = e_c + e_e
    t_path = 3 * math.log(1 / delta2) / (eps2 * (1 - 1e-9))
    k = math.ceil(max(k_priv, k_at, k_util, t_util / 2, t_path / 2))
    t = 2 * k
    hs = _hp_levels(n, h, t)
    ok = len(hs) == m_dom and (n - 3 * t * (m_dom - 1)) >= max(_BASE_DOMAIN * k, 10 * t + 1)
    return {
        "heights": hs,
        "n_public": n,
        "levels": levels,
        "eps1": eps1,
        "eps2": eps2,
        "delta2": delta2,
        "k": k,
        "t": t,
        "c": k / 2,
        "guarantee_applies": ok,
        "privacy": heavypaths_privacy(eps1, eps2, delta2, k, nn, levels, delta),
    }


def _construct_paths(ms: _MS, h: int, t: int, n_public: int | None = None) -> list[tuple[_MS, int]]:
    """Algorithm 2 (ConstructPaths): the databases S_1 = S, S_2, ... with their tree heights.

    Step 1 halts when |S_d| <= 10t or the domain is O(1). Seed 002 states its lemmas for
    S, S' in X^n, where |S_d| = n - 3t(d - 1) is public. For add/remove neighbours the actual
    size is private and halting on it is not private: S with 10t records would stop after S_1 and
    S + {x} would go on to S_2, so StoppingPoint asks one more query and, on spread data,
    HeavyPaths returns bottom on one and a point on the other (issue 16). With ``n_public`` (the
    declared size N, data capped at N) step 1 tests the public sizes N - 3t(d - 1) instead, so the
    number of databases is a function of (N, |X|, t) only (``heavypaths_parameters()["heights"]``);
    D keeps max(|S_d| - 3t, 0) records as before. Without ``n_public`` (tests), the actual size."""
    out = [(ms, h)]
    size = ms.n if n_public is None else n_public
    while out[-1][1] > _BASE_H and size > 10 * t:
        cur, hh = out[-1]
        d = _path_and_D(cur.trim(t), hh, t, cur.n, _heavy_chooser)
        out.append((d, _height(hh + 1)))
        size = d.n if n_public is None else size - 3 * t
    return out


def _heavypaths(ms: _MS, h: int, p: dict[str, Any], src: RandomSource) -> int | None:
    t, eps1, eps2, delta2 = p["t"], p["eps1"], p["eps2"], p["delta2"]
    dbs = _construct_paths(ms, h, t, p["n_public"])
    levels = len(dbs)  # = len(p["heights"]): public (declared N, |X|, t)
    # Algorithm 3 (StoppingPoint): AboveThreshold on f_d = max multiplicity of S_d, threshold k/2
    at = AboveThreshold(threshold=p["c"], epsilon=eps1, rng=src)
    dhat = None
    for d in range(1, levels + 1):
        if at.query(max(dbs[d - 1][0].cnt, default=0)):
            dhat = d
            break
    if dhat is None:
        return None
    if dhat == 1:  # S itself has a heavy element: choose it (an element of S is an interior point)
        c = choosing_mechanism(ms.cnt, epsilon=eps2, delta=delta2, rng=src)
        return None if c is None else ms.vals[c]
    # Algorithm 4 (OneRandomPath) at d = dhat - 1
    sd, hd = dbs[dhat - 2]
    sd_hat = sd.trim(t)
    dr = _path_and_D(sd_hat, hd, t, sd.n, _random_chooser(eps2, src))
    c = choosing_mechanism(dr.cnt, epsilon=eps2, delta=delta2, rng=src)  # step 6
    if c is None:
        return None
    level = min(dr.vals[c], hd)
    vstar = _choose_node(sd_hat, hd, level, eps2, delta2, src)  # step 7
    if vstar is None:
        return None
    y = _best_of_four(sd, hd, level, vstar, eps2, src)  # steps 8-9
    # Algorithm 5 (LevelUp) for d = dhat - 2 down to 1
    for d in range(dhat - 2, 0, -1):
        sd, hd = dbs[d - 1]
        sd_hat = sd.trim(t)
        level = min(y, hd)
        vstar = _choose_node(sd_hat, hd, level, eps2, delta2, src)
        if vstar is None:
            return None
        y = _best_of_four(sd, hd, level, vstar, eps2, src)
    return y


# --------------------------------------------------------------------------- public API


def _requirement_search(pred: Any, start: int = 8, cap: int = 1 << 62) -> int | None:
    """Smallest n >= 1 with pred(n) (pred monotone from some point on), by doubling + bisection."""
    n = start
    while not pred(n):
        n *= 2
        if n > cap:
            return None
    lo, hi = n // 2, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _swap_budget(epsilon: float, delta: float) -> tuple[float, float]:
    """Per-replacement budget of the tree methods: (eps/2, delta/(1 + e^(eps/2))).

    A mechanism that is (e, d)-DP for add/remove-one neighbours of at most N + 1 records is
    (2e, (1 + e^e) d)-DP for one replacement (remove, then add: group privacy), so calibrating the
    tree methods at (eps/2, delta/(1 + e^(eps/2))) makes them (eps, delta)-DP under add/remove-one
    and replace-one after the cap (docs/interior_point.md)."""
    return epsilon / 2, delta / (1 + math.exp(epsilon / 2))


@functools.lru_cache(maxsize=256)
def _tree_requirement(method: str, size: int, eps: float, delta: float, beta: float) -> int | None:
    """The declared size from which a tree method's success guarantee holds (public inputs only)."""
    fn = treelog_parameters if method == "treelog" else heavypaths_parameters
    return _requirement_search(lambda k: fn(k, size, eps, delta, beta)["guarantee_applies"])


def method_requirements(size: int, *, epsilon: float, delta: float, beta: float = 0.1) -> dict[str, int | None]:
    """The n at which each method's stated success guarantee (probability >= 1 - beta) applies.

    Only public inputs (|X|, epsilon, delta, beta); the tree methods are calibrated as
    :func:`interior_point` calibrates them (at the per-replacement budget, with n declared)."""
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, required=True)
    e_in, d_in = _swap_budget(eps, dlt)
    out: dict[str, int | None] = {"exponential": exponential_requirement(size, eps, beta)}
    out["treelog"] = _tree_requirement("treelog", size, e_in, d_in, beta)
    out["heavypaths"] = _tree_requirement("heavypaths", size, e_in, d_in, beta)
    return out


def method_requirements_log2(height: int, *, epsilon: float, delta: float, beta: float = 0.1) -> dict[str, int | None]:
    """:func:`method_requirements` for |X| = 2^height given by its height (for |X| like 2^(2^40))."""
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, required=True)
    e_in, d_in = _swap_budget(eps, dlt)
    out: dict[str, int | None] = {"exponential": exponential_requirement(2, eps, beta, ln_size=height * math.log(2.0))}
    out["treelog"] = _requirement_search(
        lambda n: treelog_parameters(n, 2, e_in, d_in, beta, height=height)["guarantee_applies"]
    )
    out["heavypaths"] = _requirement_search(
        lambda n: heavypaths_parameters(n, 2, e_in, d_in, beta, height=height)["guarantee_applies"]
    )
    return out


@dataclass(frozen=True)
class InteriorPoint:
    """A private interior point: ``value`` is the release, every other field is public.

    Public fields are the caller's parameters or functions of them only (never of the data):
    ``n_declared`` is the size the caller declared (``n=`` or ``n_max=``; None if none),
    ``n_is_upper_bound`` whether it was ``n_max``. ``guarantee_applies``: whether the method's
    stated success guarantee (an interior point with probability >= 1 - beta) holds at the
    declared size -- True/False for a declared exact n, False or None (unknown: it depends on the
    actual size) for ``n_max``, None when no size was declared; ``n_required`` the size from
    which it does. ``private`` is False when a seeded (test-only) random source was used.

    ``bottom``: True when the mechanism returned its bottom symbol (no answer: a Choosing
    Mechanism or StoppingPoint's AboveThreshold found nothing heavy enough, or TreeLog's Step 7
    chose nothing); ``value`` is then the data-independent placeholder ``lower`` and is *not*
    an interior point of anything. The bit is part of the private output (the mechanism's
    output is "bottom" or a point; the placeholder is post-processing), hence declared noisy.
    Always False for the exponential mechanism, which has no bottom.
    """

    #: the privacy boundary (:mod:`dptree.privacy.boundary`)
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("method", "epsilon", "delta", "beta", "n_declared", "n_is_upper_bound", "n_required",
                "guarantee_applies", "private", "parameters*"),
        noisy=("value", "bottom"),
    )

    value: int | float
    method: str
    epsilon: float
    delta: float
    beta: float
    n_declared: int | None
    n_is_upper_bound: bool
    n_required: int | None
    guarantee_applies: bool | None
    private: bool
    parameters: dict[str, Any] = field(default_factory=dict)
    bottom: bool = False

    @property
    def budget(self) -> Budget:
        if self.delta == 0:
            return Budget.pure(self.epsilon)
        return Budget.approx(self.epsilon, self.delta)

    def to_frame(self) -> Any:
        """One row: estimate (the released point), then the public fields (no standard error or
        interval: the guarantee is that the point lies between the data's minimum and maximum)."""
        from dptree.io.frames import result_frame

        return result_frame({}, estimate=[self.value], extra={
            "method": [self.method], "epsilon": [self.epsilon], "delta": [self.delta], "beta": [self.beta],
            "n_declared": [self.n_declared], "guarantee_applies": [self.guarantee_applies],
            "private": [self.private]})


def _check_beta(beta: Any) -> float:
    try:
        b = float(beta)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(f"beta must be a number in (0, 1), got {beta!r}") from exc
    if not 0 < b < 1:
        raise InvalidParameterError(f"beta must be in (0, 1), got {beta}")
    return b


def _declared_size(n: Any, n_max: Any) -> tuple[int | None, bool]:
    """Validate the caller-declared public size: (N, is_upper_bound); (None, False) if none."""
    if n is not None and n_max is not None:
        raise InvalidParameterError("pass either n= (the exact public size) or n_max= (a public upper bound), not both")
    val, name = (n, "n") if n is not None else (n_max, "n_max")
    if val is None:
        return None, False
    if isinstance(val, (bool, np.bool_)) or not _is_intlike(val) or int(val) < 1:
        raise InvalidParameterError(f"{name} must be a positive integer declared by the caller (a public size)")
    return int(val), n_max is not None


def _guarantee(req: int | None, size: int | None, upper: bool, ok_at_size: bool | None = None) -> bool | None:
    """guarantee_applies from public quantities only (see :class:`InteriorPoint`)."""
    if size is None:
        return None
    ok = (req is not None and size >= req) if ok_at_size is None else ok_at_size
    if upper:
        return False if not ok else None  # the actual size may be smaller than the bound
    return ok


def _prepare(
    values: Any, lower: Any, upper: Any, counts: Sequence[int] | None, on_invalid: str = "error"
) -> tuple[_Encoding, list[int], list[int]]:
    enc = _encoding(lower, upper)
    if counts is not None and on_invalid == "drop":
        raise InvalidParameterError("on_invalid='drop' cannot be combined with counts=; drop the rows first")
    offs = _encode_values(values, enc, on_invalid)
    cl: list[int] | None = None
    if counts is not None:
        cl = [int(c) for c in counts]
        if len(cl) != len(offs) or any(c < 0 for c in cl):
            raise DataError("counts must be non-negative integers, one per value")
    vals, cnt = _group(offs, cl)
    # no refusal on empty data: whether the data is empty is private; the mechanisms are defined
    # on the empty multiset (every quality is 0) and their output is then data-independent noise
    return enc, vals, cnt


def _check_on_invalid(on_invalid: Any) -> str:
    if on_invalid not in ("error", "drop"):
        raise InvalidParameterError("on_invalid must be 'error' or 'drop'")
    return str(on_invalid)


def interior_point(
    values: Any,
    *,
    lower: float,
    upper: float,
    epsilon: float,
    delta: float = 0.0,
    method: Method = "auto",
    beta: float = 0.1,
    rng: RngLike = None,
    counts: Sequence[int] | None = None,
    run_anyway: bool = False,
    n: int | None = None,
    n_max: int | None = None,
    on_invalid: Literal["error", "drop"] = "error",
) -> InteriorPoint:
    """Release a point between min and max of ``values`` with differential privacy (seed 002).

    ``method``: "exponential" (epsilon-DP; delta ignored; needs no size), "treelog" (Algorithm 1;
    (epsilon, delta)-DP by Lemma 3.7), "heavypaths" (Algorithm 6; (epsilon, delta)-DP by Lemma 4.11
    with the constants of docs/heavypaths.md), or "auto".

    ``n`` / ``n_max`` -- **public** size declared by the caller: ``n`` the exact number of records,
    ``n_max`` an upper bound. Both are treated as public knowledge (publish them or derive them
    from public facts; never compute them from the private data). The declared value N -- never
    the actual number of records -- drives the TreeLog/HeavyPaths calibration (eps0, delta0, t),
    the ``auto`` choice and ``guarantee_applies``. The tree methods require it; they cap the data
    at N records (the most extreme records beyond N are dropped) so that the release is
    (epsilon, delta)-DP for *any* data, whatever was declared; a wrong declaration only costs
    utility. ``auto`` without a declared size uses the exponential mechanism (the only method
    whose calibration needs no size); with one it takes the method with the smallest stated
    sample requirement at (|X|, epsilon, delta, beta) and raises :class:`InsufficientDataError`
    when the declared N is below it (public quantities only) unless ``run_anyway=True``.

    Neighbouring relation: every method is (epsilon, delta)-DP for add/remove-one *and*
    replace-one neighbours (module docstring). ``counts`` optionally gives multiplicities of
    ``values``. ``on_invalid``: "error" refuses NaN/infinite values (and non-integers in an
    integer domain) without saying which or how many; "drop" removes such records (a per-record,
    data-independent policy; the count dropped is never revealed).
    """
    eps = check_release_budget(epsilon)
    b = _check_beta(beta)
    if method not in ("auto", "exponential", "treelog", "heavypaths"):
        raise InvalidParameterError(f"method must be auto, exponential, treelog or heavypaths, got {method!r}")
    if method in ("treelog", "heavypaths"):
        dlt = check_delta(delta, required=True)
    else:
        dlt = check_delta(delta)
    size_n, upper_bound = _declared_size(n, n_max)
    oi = _check_on_invalid(on_invalid)
    if method in ("treelog", "heavypaths") and size_n is None:
        raise InvalidParameterError(
            f"method={method!r} calibrates eps0, delta0 and t from the number of records, which is "
            "private unless declared: pass n= (the exact public size) or n_max= (a public upper "
            "bound), or use method='exponential', which needs no size"
        )
    enc = _encoding(lower, upper)
    size = enc.size
    auto_reason = None
    if method == "auto":
        if size_n is None:
            method = "exponential"
            auto_reason = "no public size declared: the exponential mechanism needs none"
        else:
            reqs: dict[str, int | None] = {"exponential": exponential_requirement(size, eps, b)}
            if dlt > 0:
                reqs.update(
                    {
                        k: v
                        for k, v in method_requirements(size, epsilon=eps, delta=dlt, beta=b).items()
                        if k != "exponential"
                    }
                )
            best = min((r, m) for m, r in reqs.items() if r is not None)
            if best[0] > size_n and not run_anyway:
                raise InsufficientDataError(
                    f"no method's success guarantee holds at the declared {'n_max' if upper_bound else 'n'}="
                    f"{size_n}: the smallest requirement is n >= {best[0]} ({best[1]}) for |X|={size}, "
                    f"epsilon={eps}, delta={dlt}, beta={b}; collect more data, raise epsilon/beta, "
                    "or pass run_anyway=True"
                )
            method = best[1]  # type: ignore[assignment]
            auto_reason = "smallest stated requirement at the declared size"
    _, vals, cnt = _prepare(values, lower, upper, counts, oi)
    src = make_source(rng)
    if method == "exponential":
        y = ordered_exponential_mechanism(vals, counts=cnt, lower=0, upper=size - 1, epsilon=eps, rng=src)
        req = exponential_requirement(size, eps, b)
        params: dict[str, Any] = {
            "epsilon_used": effective_epsilon(exponential_base(eps)),
            "neighbors": "add_remove and replace (sensitivity 1 under both)",
        }
        if auto_reason:
            params["auto"] = auto_reason
        return InteriorPoint(
            enc.decode(y),
            "exponential",
            eps,
            0.0,
            b,
            size_n,
            upper_bound,
            req,
            _guarantee(req, size_n, upper_bound),
            src.private,
            params,
        )
    assert size_n is not None
    e_in, d_in = _swap_budget(eps, dlt)
    h = _height(size)
    ms = _MS(vals, cnt).cap(size_n)
    req_t: int | None
    if method == "treelog":
        p = treelog_parameters(size_n, size, e_in, d_in, b)
        out = _treelog(ms, h, p, src)
        req_t = _tree_requirement("treelog", size, e_in, d_in, b)
    else:
        p = heavypaths_parameters(size_n, size, e_in, d_in, b)
        out = _heavypaths(ms, h, p, src)
        req_t = _tree_requirement("heavypaths", size, e_in, d_in, b)
    is_bottom = out is None  # part of the mechanism's output (reported as ``bottom``)
    yt = 0 if out is None else out  # bottom -> the data-independent placeholder ``lower``
    p = dict(p)
    p["neighbors"] = "add_remove and replace (add/remove lemma at eps/2, group privacy for a replacement)"
    p["epsilon_per_change"], p["delta_per_change"] = e_in, d_in
    if auto_reason:
        p["auto"] = auto_reason
    return InteriorPoint(
        enc.decode(yt),
        method,
        eps,
        dlt,
        b,
        size_n,
        upper_bound,
        req_t,
        _guarantee(req_t, size_n, upper_bound, bool(p["guarantee_applies"])),
        src.private,
        p,
        is_bottom,
    )


# --------------------------------------------------------------------------- quantiles


@dataclass(frozen=True)
class QuantileRelease:
    """A private single quantile: ``value`` at level ``q`` (``q_used`` the rational level used).

    ``n_declared``: the public size the caller declared (None if none); the mechanism does not
    need it (the count inside the score is handled by the exponential mechanism's sensitivity).
    """

    #: the privacy boundary (:mod:`dptree.privacy.boundary`)
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("q", "q_used", "epsilon", "n_declared", "private"), noisy=("value",)
    )

    value: int | float
    q: float
    q_used: Fraction
    epsilon: float
    n_declared: int | None
    private: bool

    @property
    def n_public(self) -> bool:
        return self.n_declared is not None

    def to_frame(self) -> Any:
        """One row: q, estimate, then the public fields (no standard error: the exponential
        mechanism's output has no variance model)."""
        from dptree.io.frames import result_frame

        return result_frame({"q": [self.q]}, estimate=[self.value], extra={
            "epsilon": [self.epsilon], "n_declared": [self.n_declared], "private": [self.private]})


def quantile(
    values: Any,
    q: float,
    *,
    lower: float,
    upper: float,
    epsilon: float,
    rng: RngLike = None,
    counts: Sequence[int] | None = None,
    n: int | None = None,
    n_max: int | None = None,
    on_invalid: Literal["error", "drop"] = "error",
) -> QuantileRelease:
    """Single quantile by the exponential mechanism (epsilon-DP, add/remove or replace one record).

    With q = a/b (the level rounded to a denominator <= 1000), the score of y is
    -|b #{x <= y} - a |S||, an integer of sensitivity b under add/remove-one (|S| and the count
    move together: |b dc - a| <= b) and under replace-one (|b dc| <= b); P(y) proportional to
    exp(epsilon * score / (2b)) over [lower, upper], sampled exactly interval by interval (the
    score is constant between data points). The record count only enters inside the mechanism's
    score; nothing else reads it. ``n``/``n_max`` (a **public** declared size, optional) are
    accepted for a uniform API and echoed as ``n_declared``; the mechanism needs no size.
    ``on_invalid`` as in :func:`interior_point`. This is the m = 1 reference for range-tree quantiles.
    """
    eps = check_release_budget(epsilon)
    try:
        qf = float(q)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(f"q must be a number in [0, 1], got {q!r}") from exc
    if not 0.0 <= qf <= 1.0:
        raise InvalidParameterError(f"q must be in [0, 1], got {qf}")
    size_n, _ = _declared_size(n, n_max)
    oi = _check_on_invalid(on_invalid)
    qr = Fraction(qf).limit_denominator(1000)
    a, bden = qr.numerator, qr.denominator
    enc, vals, cnt = _prepare(values, lower, upper, counts, oi)
    n_rows = sum(cnt)  # used only inside the exponential mechanism's score (sensitivity b)
    size = enc.size
    lengths: list[int] = []
    scores: list[int] = []
    starts: list[int] = []
    prev_end, below = -1, 0
    for v, c in zip(vals, cnt):
        if v - 1 > prev_end:
            starts.append(prev_end + 1)
            lengths.append(v - 1 - prev_end)
            scores.append(-abs(bden * below - a * n_rows))
        below += c
        starts.append(v)
        lengths.append(1)
        scores.append(-abs(bden * below - a * n_rows))
        prev_end = v
    if size - 1 > prev_end:
        starts.append(prev_end + 1)
        lengths.append(size - 1 - prev_end)
        scores.append(-abs(bden * below - a * n_rows))
    src = make_source(rng)
    base = exponential_base(eps, bden)
    top = max(scores)
    i = sample_exponential_index(src, lengths, [top - s for s in scores], base)
    from dptree.noise import uniform_int

    y = uniform_int(src, starts[i], starts[i] + lengths[i] - 1)
    return QuantileRelease(enc.decode(y), qf, qr, eps, size_n, src.private)


def median(
    values: Any,
    *,
    lower: float,
    upper: float,
    epsilon: float,
    rng: RngLike = None,
    counts: Sequence[int] | None = None,
    n: int | None = None,
    n_max: int | None = None,
    on_invalid: Literal["error", "drop"] = "error",
) -> QuantileRelease:
    """The private median: :func:`quantile` at q = 1/2 (epsilon-DP, add/remove or replace one
    record). ``n``/``n_max``: an optional **public** declared size (not needed by the mechanism)."""
    return quantile(
        values,
        0.5,
        lower=lower,
        upper=upper,
        epsilon=epsilon,
        rng=rng,
        counts=counts,
        n=n,
        n_max=n_max,
        on_invalid=on_invalid,
    )


# --------------------------------------------------------------------------- learning thresholds


@dataclass(frozen=True)
class ThresholdClassifier:
    """h(x) = 1 if x <= threshold else 0 (seed 002, footnote 1), or a constant classifier."""

    #: the privacy boundary (:mod:`dptree.privacy.boundary`): which classifier, and its threshold, are noisy
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("epsilon", "delta", "private"), noisy=("threshold", "constant")
    )

    threshold: int | float | None
    constant: int | None
    epsilon: float
    delta: float
    private: bool

    def to_frame(self) -> Any:
        """One row: the threshold (or the constant label) and the public fields."""
        from dptree.io.frames import result_frame

        return result_frame({}, estimate=[self.threshold], extra={
            "constant": [self.constant], "epsilon": [self.epsilon], "delta": [self.delta],
            "private": [self.private]})

    def predict(self, x: Any) -> np.ndarray:
        arr = np.asarray(x)
        if self.constant is not None:
            return np.full(arr.shape, self.constant, dtype=np.int64)
        return (arr <= self.threshold).astype(np.int64)


def _boundary_sample(keys1: list[int], keys0: list[int], m: int, size: int) -> tuple[list[int], list[int]]:
    """S of exactly 2m offsets, as (values, multiplicities): the m largest 1-labelled and the m
    smallest 0-labelled points, the missing slots padded deterministically with the public domain
    ends (0 for the ones, which lie left of the threshold; size - 1 for the zeros). |S| = 2m
    depends only on the public m. The padding is one value with a multiplicity, so a huge public
    m (tiny epsilon: the noisy total is huge) costs no memory."""
    ones = sorted(keys1)[-m:] if m else []
    zeros = sorted(keys0)[:m] if m else []
    vals = [0] + ones + zeros + [size - 1]
    cnts = [m - len(ones)] + [1] * (len(ones) + len(zeros)) + [m - len(zeros)]
    keep = [i for i, c in enumerate(cnts) if c]
    return [vals[i] for i in keep], [cnts[i] for i in keep]


def learn_threshold(
    x: Any,
    y: Any,
    *,
    lower: float,
    upper: float,
    epsilon: float,
    delta: float = 0.0,
    method: Method = "exponential",
    fraction: float = 0.1,
    beta: float = 0.1,
    rng: RngLike = None,
    n: int | None = None,
    n_max: int | None = None,
) -> ThresholdClassifier:
    """Privately learn a threshold classifier from labelled data (seed 002, section 1 reduction).

    ``n`` / ``n_max``: optional **public** declared number of labelled records (exact / upper
    bound); it replaces (``n``) or caps (``n_max``) the noisy total below. Never the actual size.

    1. The label counts m0 = #{y=0}, m1 = #{y=1} get discrete Laplace noise of scale 4/epsilon
       (eps/4 per unit change of one count). With T = the declared n, or the noisy total
       m0~ + m1~ (capped at n_max), m = max(1, floor(fraction * T)) is public. If
       min(m0~, m1~) < m, the constant classifier of the larger noisy label is returned.
    2. Otherwise S has exactly 2m elements: the m largest points labelled 1 and the m smallest
       labelled 0, missing slots padded with the public domain ends (so |S| never depends on the
       true label counts). Adding or removing a record changes S by at most one replacement;
       replacing a record by at most two.
    3. y* = an interior point of S at (epsilon/4, delta/(1 + e^(epsilon/4))) per replacement of
       S (the exponential mechanism, or the tree methods with the public size n = 2m, which are
       (eps', delta')-DP per replacement, see :func:`interior_point`); h(x) = 1{x <= y*}.

    Accounting: add/remove-one: eps/4 (one count) + eps/4 (one replacement of S) = eps/2;
    replace-one: eps/2 (two counts) + 2 * eps/4 with delta' (1 + e^(eps/4)) = delta (group privacy
    over two replacements) = (eps, delta). So (epsilon, delta)-DP under both relations.
    """
    from dptree.noise import discrete_laplace

    # the interior point of S runs at epsilon/4, which must itself be in the supported range
    eps = check_release_budget(epsilon, supported=(4 * BUDGET_RANGE[0], BUDGET_RANGE[1]))
    dlt = check_delta(delta)
    size_n, upper_bound = _declared_size(n, n_max)
    xs = np.asarray(x)
    ys = np.asarray(y)
    if xs.shape != ys.shape or xs.ndim != 1:
        raise DataError("x and y must be 1-d sequences of equal length")
    if ys.dtype.kind == "f" and not np.all(np.isfinite(ys)):
        raise DataError("labels contain NaN; labels must be 0 or 1")
    if not np.all((ys == 0) | (ys == 1)):
        raise DataError("labels must be 0 or 1 (threshold functions are 1 left of the threshold)")
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 0.5:
        raise InvalidParameterError(f"fraction must be a number in (0, 0.5], e.g. 0.1; got {fraction!r}")
    if method not in ("auto", "exponential", "treelog", "heavypaths"):
        raise InvalidParameterError(f"method must be auto, exponential, treelog or heavypaths, got {method!r}")
    enc = _encoding(lower, upper)
    keys = np.array(_encode_values(xs, enc), dtype=object)  # validate before any noise is drawn
    src = make_source(rng)
    ys = ys.astype(np.int64)
    m1_true = int(ys.sum())
    m0_true = int(ys.size) - m1_true
    noise = discrete_laplace(src, Fraction(4) / Fraction(eps), 2)  # two counts, eps/4 each
    m0, m1 = m0_true + int(noise[0]), m1_true + int(noise[1])
    total = m0 + m1
    if size_n is not None:
        total = min(total, size_n) if upper_bound else size_n
    m = max(1, int(fraction * total))
    if min(m0, m1) < m:
        return ThresholdClassifier(None, 1 if m1 >= m0 else 0, eps, dlt, src.private)
    s_vals, s_cnts = _boundary_sample(keys[ys == 1].tolist(), keys[ys == 0].tolist(), m, enc.size)
    e_ip, d_ip = eps / 4, dlt / (1 + math.exp(eps / 4))
    if method == "exponential" or (method == "auto" and dlt == 0):
        yv = ordered_exponential_mechanism(
            s_vals, counts=s_cnts, lower=0, upper=enc.size - 1, epsilon=e_ip, rng=src
        )
        return ThresholdClassifier(enc.decode(yv), None, eps, 0.0, src.private)
    # interior_point at (e, d) is (e, d)-DP per replacement of its input (replace-one)
    ip = interior_point(
        [enc.decode(v) for v in s_vals],
        counts=s_cnts,
        lower=lower,
        upper=upper,
        epsilon=e_ip,
        delta=d_ip,
        method=method,
        beta=beta,
        rng=src,
        run_anyway=True,
        n=2 * m,
    )
    return ThresholdClassifier(ip.value, None, eps, dlt, src.private)
