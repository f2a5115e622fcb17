"""Anchored log-space range sums: the tables behind JointExp's transitions
(:mod:`dptree.quantiles.joint`).

For sorted keys x and log-values v, a window [a, e] of consecutive indices needs
log sum_{t in [a, e]} exp(v[t] + coef (x[t] - y)). :func:`range_tables` builds a disjoint sparse
table by doubling (one multiply-add and one logaddexp per entry and level, only as deep as the
longest window), each entry anchored at an element of the window that reads it, so no float
quantity grows with the data; :func:`range_sums` answers a window with two entries. :func:`lae` is
the in-place logaddexp they use, with its error bound (the float slack of
:func:`dptree.quantiles.joint.float_slack` counts it).
"""

from __future__ import annotations

import numpy as np

__all__ = ["Layout", "lae", "range_sums", "range_tables"]


def lae(a: np.ndarray, b: np.ndarray, out: np.ndarray, tmp: np.ndarray) -> np.ndarray:
    """out = logaddexp(a, b) as max + log1p(exp(min - max)), -inf where both are -inf (the fmax drops
    the NaN of -inf - -inf; elsewhere the sum is >= the max, so fmax leaves it); ``out`` may be ``a``
    or ``b``, ``tmp`` (shaped like out) is scratch and neither. numpy's logaddexp runs scalar libm code (about
    15 ns an element); this runs its SIMD exp and log1p in place, about 5x faster. Error (float_slack):
    for inputs of magnitude <= M, the final add rounds by <= (M + 1) 2^-53, the subtraction's rounding
    reaches the result damped by |d| e^-|d| / (1 + e^-|d|) <= 0.3, and errors of u ulp in exp and v
    ulp in log1p by at most (u + v) 2^-53; in all (M + 1.3 + u + v) 2^-53, inside the 2^-51 (M + 1)
    counted per operation for any u + v <= 3 M (numpy's exp and log1p err by a few ulp)."""
    np.maximum(a, b, out=tmp)
    np.minimum(a, b, out=out)
    with np.errstate(invalid="ignore"):
        out -= tmp
        np.exp(out, out=out)
        np.log1p(out, out=out)
        out += tmp
        np.fmax(out, tmp, out=out)
    return out


_LOW = 5  # range_tables runs the levels below this on blocks of 2^_LOW as columns (long contiguous inner loops)


class Layout:
    """What :func:`range_tables` needs of x, shared by every table of one transition: x padded with
    its last element to ``width`` (a multiple of 2^_LOW and of 2^count for every table built) and its
    transpose on blocks of 2^_LOW."""

    def __init__(self, x: np.ndarray, count: int) -> None:
        self.nb = x.size
        self.width = -(-self.nb >> max(count, _LOW)) << max(count, _LOW)
        self.xs = np.empty(self.width, dtype=np.int64)
        self.xs[: self.nb], self.xs[self.nb:] = x, x[-1]
        self.used = -(-self.nb >> _LOW) << _LOW  # the blocks of 2^_LOW that hold data
        self.xt = self.xs[: self.used].reshape(-1, 1 << _LOW).T.copy()

    def view(self, arr: np.ndarray, lev: int) -> np.ndarray:
        """arr (flat, or transposed for lev < _LOW) as (blocks, 2, 2^lev[, columns]) over the blocks
        of 2^(lev + 1) that hold data."""
        if lev < _LOW:
            return arr.reshape(-1, 2, 1 << lev, arr.shape[1])
        return arr[: -(-self.nb >> (lev + 1)) << (lev + 1)].reshape(-1, 2, 1 << lev)

    def dist(self, lev: int, out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(x[right start] - x[t] for t in each left half (into ``out``), x[right start] - x[left start]
        per block), as float64."""
        xv = self.view(self.xt if lev < _LOW else self.xs, lev)
        np.subtract(xv[:, 1, :1], xv[:, 0], out=out)
        return out, (xv[:, 1, :1] - xv[:, 0, :1]).astype(np.float64)


def range_tables(lay: Layout, vals: np.ndarray, coef: float, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Anchored range sums for windows shorter than 2^count (a disjoint sparse table built by doubling).
    With suf_l[s] = log sum_{t = s}^{end of the aligned 2^l block of s} exp(vals[t] + coef (x[t] - x[s]))
    and pre_l[s] = log sum_{t = start of that block}^{s} exp(vals[t] + coef (x[t] - x[start])) (each
    anchored at an element of the window that uses it, so entries used inside a window stay small),
    row l < count holds suf_l on the left half of each aligned 2^(l+1) block and pre_l on the right
    half (the halves a query reads), rows count and count + 1 hold suf_count and pre_count. Level
    l + 1 from level l: each half of an aligned 2^(l+1) block adds the other half's full sum,
    re-anchored (one multiply-add and one logaddexp per entry and level, as in a doubling table).
    Returns the rows end to end and where each starts (row l covers the blocks that hold data). The
    levels below _LOW run on the transposed arrays (:class:`Layout`), the others on the flat ones:
    the same operations."""
    nb, width, used = lay.nb, lay.width, lay.used
    suf = np.full(width, -np.inf)
    suf[:nb] = vals
    pre = suf.copy()
    sizes = [used if lev < _LOW else -(-nb >> (lev + 1)) << (lev + 1) for lev in range(count)] + [nb, nb]
    offs = np.concatenate([[0], np.cumsum(sizes)])
    flat = np.empty(int(offs[-1]))
    rows = [flat[offs[i]: offs[i + 1]] for i in range(count + 2)]
    half = [np.empty(width // 2) for _ in range(2)]  # contiguous scratch (SIMD exp and log1p)
    di = np.empty(width // 2, dtype=np.int64)

    def step(lev: int, sv: np.ndarray, pv: np.ndarray, row: np.ndarray) -> None:
        sv, pv, row = lay.view(sv, lev), lay.view(pv, lev), lay.view(row, lev)
        row[:, 0], row[:, 1] = sv[:, 0], pv[:, 1]
        t0, t1 = (buf[: sv[:, 0].size].reshape(sv[:, 0].shape) for buf in half)
        dl, db = lay.dist(lev, di[: t0.size].reshape(t0.shape))
        np.add(pv[:, 1], coef * db, out=t0)  # right half: add the left half's sum
        pv[:, 1] = lae(t0, sv[:, 0, :1], t0, t1)
        np.multiply(dl, coef, out=t0)  # left half: add the right half's sum
        t0 += sv[:, 1, :1]
        sv[:, 0] = lae(sv[:, 0], t0, t0, t1)

    sub = [arr[:used].reshape(-1, 1 << _LOW).T.copy() for arr in (suf, pre)]  # (2^_LOW, blocks)
    rt = np.empty_like(sub[0])
    for lev in range(min(count, _LOW)):
        step(lev, sub[0], sub[1], rt)
        rows[lev].reshape(-1, 1 << _LOW)[:] = rt.T
    suf[:used], pre[:used] = sub[0].T.ravel(), sub[1].T.ravel()
    for lev in range(_LOW, count):
        step(lev, suf, pre, rows[lev])
    rows[count][:], rows[count + 1][:] = suf[:nb], pre[:nb]
    return flat, offs


def range_sums(tables: tuple[np.ndarray, np.ndarray], x: np.ndarray, lo: np.ndarray, size: np.ndarray, y: np.ndarray,
           coef: float) -> np.ndarray:
    """log sum_{t in [lo, lo + size)} exp(vals[t] + coef (x[t] - y)), -inf for empty ranges, from
    :func:`range_tables`'s rows (sizes below 2^count). A window [a, e] of two or more elements: l the
    highest bit where a and e differ, mid = e with its low l bits cleared; [a, mid) is suf_l[a] and
    [mid, e] is pre_l[e] (a is in the left half of their aligned 2^(l+1) block, e in the right); for
    l >= count the same with suf_count and pre_count (a window shorter than 2^count crosses at most
    one multiple of 2^count)."""
    flat, offs = tables
    count = offs.size - 3
    a = np.minimum(lo, x.size - 1)
    e = np.maximum(lo + size - 1, a)
    lev = np.frexp((a ^ e).astype(np.float64))[1] - 1  # highest differing bit; -1 where a == e
    np.clip(lev, 0, count, out=lev)
    mid = (e >> lev) << lev
    left = (x[a] - y).astype(np.float64)
    left *= coef
    left += flat[offs[lev] + a]
    lev += lev == count
    right = (x[mid] - y).astype(np.float64)
    right *= coef
    right += flat[offs[lev] + e]
    right[size < 2] = -np.inf
    out = lae(left, right, left, x[mid].astype(np.float64))  # the last: scratch
    out[size < 1] = -np.inf
    return out
