"""The estimates behind every range-tree answer: least-squares leaf counts and exact range errors.

From the noisy node counts, :class:`LeafEstimates` computes the generalised least-squares
estimate of every leaf (Honaker 2015, two passes on a regular tree,
:func:`dptree.estimation.least_squares.regular_passes`), conditioned on the public fact that
the padding leaves beyond the domain hold no records. Any range of leaves then has the estimate
``cum[b+1] - cum[a]``, its exact variance in O(levels)
(:func:`~dptree.estimation.least_squares.range_variance`, DESIGN section 4) and its interval
multiplier (:mod:`dptree.estimation.intervals`). Everything here is post-processing.
"""

from __future__ import annotations

import numpy as np

from dptree.estimation.intervals import gamma_shape, multiplier
from dptree.estimation.least_squares import range_error_moments, range_variance, regular_passes
from dptree.noise import RandomSource
from dptree.privacy.measurement import NoiseSpec, measure
from dptree.rangetree.calibration import NoiseKind
from dptree.rangetree.layout import TreeLayout

__all__ = ["LeafEstimates", "ForestEstimates"]


class _Padding:
    """The public part of conditioning on the empty padding leaves [D, Dp): Var(P) of their sum P
    and Cov(leaf i, P), the same for every tree of a layout and noise (no measurement involved)."""

    def __init__(self, layout: TreeLayout, domain_size: int, level_variance: np.ndarray) -> None:
        self.layout, self.size, self.level_variance = layout, domain_size, level_variance
        D, Dp = domain_size, layout.padded_size
        self.var = float(self.raw_variance(np.array([D]), np.array([Dp - 1]))[0]) if Dp > D else 0.0
        if self.var > 0:
            self._segments()

    def raw_variance(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Closed-form variance of leaf ranges of the whole (padded) tree; 0 for empty ranges."""
        empty = a > b
        v = range_variance(self.layout.block_sizes, self.level_variance, np.where(empty, 0, a), np.where(empty, 0, b))
        return np.where(empty, 0.0, v)

    def cov_direct(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Cov(range [a, b] of the domain, padding range P), from four contiguous-range variances:
        with M = [b+1, D-1], 2 Cov(q, P) = Var(q+M+P) + Var(M) - Var(q+M) - Var(M+P)."""
        D, last = self.size, self.layout.padded_size - 1
        end = np.full(a.shape, D - 1)
        return 0.5 * (
            self.raw_variance(a, np.full(a.shape, last))
            + self.raw_variance(b + 1, end)
            - self.raw_variance(a, end)
            - self.raw_variance(b + 1, np.full(a.shape, last))
        )

    def _segments(self) -> None:
        """Cov(leaf i, P) is constant on the segments [t_j, t_{j+1}) of leaves whose lowest common
        ancestor with leaf D is at level j (t_j: the first leaf of D's level-j block): the covariance
        of two leaf estimates depends only on the level of their common ancestor, and every padding
        leaf meets all leaves of a segment at the same level. One direct covariance per segment."""
        D = self.size
        t = np.array([D // s * s for s in self.layout.block_sizes] + [D], dtype=np.int64)
        self.seg_start = np.unique(t)  # t_0 = 0 <= ... <= t_L = D, empty segments dropped
        first = self.seg_start[:-1]
        self.seg_cov = self.cov_direct(first, first)
        # prefix sums of Cov(leaf i, P) at the segment starts (for ranges)
        self.seg_prefix = np.concatenate([[0.0], np.cumsum(self.seg_cov * np.diff(self.seg_start))])

    def condition(self, leaf: np.ndarray) -> None:
        """Condition the padded leaf estimates ``leaf`` (shape (..., Dp): one tree per row) on
        "the padding holds no records", in place: x' = x - Cov(x, P) / Var(P) * P_hat."""
        if self.var <= 0:
            return
        pad_hat = np.asarray(leaf[..., self.size:].sum(axis=-1))[..., None]
        for t0, t1, cov in zip(self.seg_start[:-1], self.seg_start[1:], self.seg_cov):
            leaf[..., t0:t1] -= cov / self.var * pad_hat

    def cov_prefix(self, t: np.ndarray) -> np.ndarray:
        """The sum of Cov(leaf i, P) over the leaves i < t (piecewise linear over the segments)."""
        k = np.clip(np.searchsorted(self.seg_start, t, side="right") - 1, 0, self.seg_cov.size - 1)
        return self.seg_prefix[k] + (t - self.seg_start[k]) * self.seg_cov[k]


class LeafEstimates:
    """Consistent estimates of the ``domain_size`` real leaves of a tree, and the exact error of
    any leaf range [a, b] (vectorised; ``empty`` marks empty ranges, whose count and error are 0)."""

    def __init__(self, layout: TreeLayout, domain_size: int, noise: NoiseKind, level_variance: np.ndarray,
                 measurements: list[np.ndarray | None]) -> None:
        self._public(layout, domain_size, noise, level_variance, _Padding(layout, domain_size, level_variance))
        D, Dp = domain_size, layout.padded_size
        # one buffer: [0, leaf estimates of the padded tree], turned into the prefix sums in place
        buf = np.empty(Dp + 1)
        buf[0] = 0.0
        leaf = buf[1:]
        regular_passes(measurements, [float(v) for v in level_variance], layout.fanouts, out=leaf)  # unmeasured: None
        self._padding.condition(leaf)
        #: cum[i] = estimated number of records in buckets 0 .. i-1 (the leaf estimates' prefix
        #: sums, computed in place: no second array of the tree's size)
        self.cum = buf[: D + 1]
        np.cumsum(self.cum[1:], out=self.cum[1:])

    def _public(self, layout: TreeLayout, domain_size: int, noise: NoiseKind, level_variance: np.ndarray,
                padding: _Padding) -> None:
        self.layout, self.size, self.noise = layout, domain_size, noise
        self.level_variance = level_variance
        self._padding = padding
        self._pad_var = padding.var
        self._monotone_cdf: np.ndarray | None = None

    @classmethod
    def forest(cls, layout: TreeLayout, domain_size: int, noise: NoiseKind, level_variance: np.ndarray,
               measurements: list[np.ndarray | None]) -> ForestEstimates:
        """The estimates of many trees of one layout and noise at once (:class:`ForestEstimates`):
        ``measurements[j]`` of shape (trees, nodes of level j)."""
        return ForestEstimates(layout, domain_size, noise, level_variance, measurements)

    @property
    def leaf(self) -> np.ndarray:
        """The estimate of every bucket of the domain (differences of :attr:`cum`, a new array)."""
        return np.diff(self.cum)

    def _cov_with_padding_direct(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Cov(range [a, b] of the domain, padding range P) from contiguous-range variances."""
        return self._padding.cov_direct(a, b)

    def _cov_with_padding(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Cov(range [a, b] of the domain, padding range P) = F(b + 1) - F(a), F(t) the sum of the
        per-leaf covariances below t (piecewise linear over the segments of :class:`_Padding`)."""
        return self._padding.cov_prefix(np.asarray(b) + 1) - self._padding.cov_prefix(np.asarray(a))

    def counts(self, a: np.ndarray, b: np.ndarray, empty: np.ndarray) -> np.ndarray:
        """Estimated counts of the leaf ranges [a, b]."""
        return np.where(empty, 0.0, self.cum[b + 1] - self.cum[a])

    def variances(self, a: np.ndarray, b: np.ndarray, empty: np.ndarray) -> np.ndarray:
        """Exact variances of :meth:`counts` (conditioned on the empty padding), in the shape of ``a``."""
        shape = np.shape(a)
        a, b, empty = np.ravel(a), np.ravel(b), np.ravel(empty)
        v = range_variance(self.layout.block_sizes, self.level_variance, a, b)
        if self._pad_var > 0:
            v = v - self._cov_with_padding(a, b) ** 2 / self._pad_var
        return np.where(empty, 0.0, np.maximum(v, 0.0)).reshape(shape)

    def spread(self, a: np.ndarray, b: np.ndarray, empty: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
        """(standard error, interval multiplier at ``level``) of the leaf ranges [a, b].

        Gaussian noise: the normal quantile. Laplace noise: the variance-gamma quantile at the
        range's exact error moments; with padding, the conditioned variance is exact and the shape
        that of the unconditioned estimate (an approximation for the multiplier only). Both in the
        shape of ``a``."""
        shape = np.shape(a)
        if self.noise == "gaussian":
            return np.sqrt(self.variances(a, b, empty)), np.reshape(multiplier("gaussian", level, np.ravel(a)), shape)
        a, b, empty = np.ravel(a), np.ravel(b), np.ravel(empty)
        v1, v2 = range_error_moments(self.layout.fanouts, self.level_variance, a, b)
        if self._pad_var > 0:
            s = np.sqrt(self.variances(a, b, empty))
        else:  # no padding: v1 is the exact variance (range_variance), computed once
            s = np.sqrt(np.where(empty, 0.0, np.maximum(v1, 0.0)))
        return s.reshape(shape), np.reshape(multiplier("laplace", level, gamma_shape(v1, v2)), shape)

    def simulated_cdf_errors(self, spec: NoiseSpec, root_exact: bool, sims: int, source: RandomSource,
                             at: np.ndarray) -> np.ndarray:
        """Errors F_hat(x) - F(x) of the prefix counts ``cum[at]`` in ``sims`` simulated releases of this
        plan, shape (sims, at.size): fresh noise of the public ``spec`` (:func:`~dptree.privacy.measurement.measure`
        on zero counts; the root exact under ``root_exact``) through the same estimator. The estimator is
        linear, so these are the errors of a release of any data set; no data and no measurement of
        this release is read. Simulated as one forest of at most about 2^22 leaves at a time."""
        fan, Dp = self.layout.fanouts, self.layout.padded_size
        sizes = self.layout.level_sizes
        out = np.empty((int(sims), np.asarray(at).size))
        chunk = max(1, min(int(sims), (1 << 22) // Dp))
        for s0 in range(0, int(sims), chunk):
            c = min(chunk, int(sims) - s0)
            meas = measure([np.zeros(c * k, dtype=np.int64) for k in sizes], spec, source)
            if root_exact:
                meas[0] = np.zeros(c, dtype=np.int64)
            leaf = regular_passes(meas, [float(v) for v in self.level_variance], fan).x[0].reshape(c, Dp)
            self._padding.condition(leaf)
            cum = np.zeros((c, self.size + 1))
            np.cumsum(leaf[:, :self.size], axis=1, out=cum[:, 1:])
            out[s0:s0 + c] = cum[:, at]
        return out

    def monotone_cdf(self) -> np.ndarray:
        """The isotonic (non-decreasing, non-negative) fit of ``cum[1:]``, computed once."""
        if self._monotone_cdf is None:
            from scipy.optimize import isotonic_regression

            fit = isotonic_regression(self.cum[1:], increasing=True).x
            self._monotone_cdf = np.clip(fit, 0.0, None)
        return self._monotone_cdf


class ForestEstimates:
    """The least-squares estimates of many trees of one layout and noise (one per group), computed
    together: Honaker's estimator is linear and the same for every tree, so the two passes
    (:func:`~dptree.estimation.least_squares.regular_passes`) run once over the forest (a block of
    children never crosses two trees) and each tree's :class:`LeafEstimates` is a view of one row.

    ``measurements[j]``: the noisy counts of level j of every tree, shape (trees, nodes of level j)
    (``None``: not measured). Holds the prefix sums of every tree, 8 bytes per padded leaf."""

    def __init__(self, layout: TreeLayout, domain_size: int, noise: NoiseKind, level_variance: np.ndarray,
                 measurements: list[np.ndarray | None]) -> None:
        self.layout, self.size, self.noise, self.level_variance = layout, domain_size, noise, level_variance
        self._padding = _Padding(layout, domain_size, level_variance)
        leaves = measurements[-1]
        if leaves is None or leaves.ndim != 2:
            raise ValueError("ForestEstimates: the leaves of every tree are needed, shape (trees, leaves)")
        n, Dp = leaves.shape
        flat = [None if m is None else m.reshape(-1) for m in measurements]
        rows = regular_passes(flat, [float(v) for v in level_variance], layout.fanouts).x[0].reshape(n, Dp)
        self._padding.condition(rows)
        #: rows[i, :D] = the prefix sums cum[1:] of tree i (computed in place)
        np.cumsum(rows[:, :domain_size], axis=1, out=rows[:, :domain_size])
        self._rows = rows

    def __len__(self) -> int:
        return int(self._rows.shape[0])

    def member(self, i: int) -> LeafEstimates:
        """Tree i's :class:`LeafEstimates` (its own copy of its prefix sums)."""
        est = LeafEstimates.__new__(LeafEstimates)
        est._public(self.layout, self.size, self.noise, self.level_variance, self._padding)
        cum = np.empty(self.size + 1)
        cum[0] = 0.0
        cum[1:] = self._rows[i, : self.size]
        est.cum = cum
        return est
