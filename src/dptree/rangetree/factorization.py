"""A batch CDF through the square-root factorisation of the prefix-sum matrix, on an integer lattice.

The D prefix counts of a histogram x over a public ordered domain are A x, A the D x D
lower-triangular all-ones matrix. ``range_tree(..., noise="gaussian", levels="factorization")``
releases them by the factorisation mechanism A = B C~ of :mod:`dptree.stream.toeplitz`
(Henzinger, Upadhyay & Upadhyay, SODA 2023; Fichtenberger, Henzinger & Upadhyay, ICML 2023), in
one batch: C~ = C~int / 2^p is the Toeplitz square root c_k = binom(2k, k) / 4^k rounded to the
lattice 2^-p Z, the integer vector q = C~int x gets i.i.d. discrete Gaussian noise through the
measurement core (Canonne, Kamath & Steinke 2020, Theorem 4), and the released prefixes are the
post-processing B (q + w) / 2^p = A x + B w / 2^p.

**Neighbours and sensitivity** (the stated L2 sensitivity of q; G = C~int^T C~int, G_00 the
squared norm of column 0, sum_k ci_k^2 = :func:`~dptree.stream.toeplitz.lattice_sensitivity_squared`):

* ``add_remove``, a person with at most k records: x moves by a non-negative integer vector d of
  sum <= k. G's entries are non-negative and G_ij <= sqrt(G_ii G_jj) <= G_00 (columns shrink with
  i), so ||C~int d||^2 = d^T G d <= k^2 G_00, reached by k records in the first bucket: exactly
  k^2 G_00.
* ``replace``, k records moved: d = d+ - d-, both non-negative of sum <= k. C~int d+ and C~int d-
  are non-negative vectors, so ||C~int d||^2 <= ||C~int d+||^2 + ||C~int d-||^2 <= 2 k^2 G_00:
  a bound (the exact maximum is smaller; brute-forced in the tests).

Both are brute-forced over every d on small domains (tests/unit/rangetree/test_factorization.py).
sigma^2 = Delta^2 / (2 rho), rounded up to the sampler's dyadic value (rho-zCDP); an (epsilon,
delta) budget is converted to the largest rho implying it (CKS 2020, Cor. 13), as the Gaussian
range tree does with ``gaussian_calibration="zcdp"`` (its exact (epsilon, delta) calibration
needs unit shifts of the noised counts, which q does not have).

**Exact variances.** With v = Var(w) and b = the coefficients of B, the noise of prefix t (buckets
0 .. t-1) is e_t = sum_{k<t} b_k w_{t-1-k} / 2^p: Var(e_t) = v / 4^p S_t with S_t = sum_{k<t} b_k^2,
and the range [s, t-1] = e_t - e_s has variance v / 4^p (S_d + sum_{k<s} (b_{k+d} - b_k)^2),
d = t - s (the covariance of the two prefixes taken exactly from B).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np

from dptree import noise as _noise
from dptree.data.domain import Domain, make_domain
from dptree.errors import DataError, DomainError, InvalidParameterError
from dptree.estimation.intervals import multiplier
from dptree.privacy.budget import Budget
from dptree.privacy.loss import Gaussian, PrivacyLoss
from dptree.privacy.measurement import NoiseSpec, measure
from dptree.privacy.statement import Neighbors, Relation, make_statement
from dptree.rangetree.calibration import calibrate_gaussian, check_budget_range, check_noise_range, resolve_budget
from dptree.rangetree.estimates import LeafEstimates
from dptree.rangetree.plan import _check_histogram, _l2_up
from dptree.stream import toeplitz

__all__ = ["FactorizationPlan", "build_factorization", "sensitivity_squared", "lattice_query",
           "unit_average_prefix_variance", "unit_average_range_variance", "FactorizedEstimates", "MAX_BUCKETS"]

#: the largest domain: O(D) coefficients and FFTs of size 2D per release
MAX_BUCKETS = 1 << 20
#: a simulated batch of quantile_ci's calibration holds at most this many noise draws
_SIM_CHUNK = 1 << 22


def sensitivity_squared(buckets: int, relation: str, max_contributions: int) -> int:
    """The stated squared L2 sensitivity of q = C~int x (module docstring): k^2 G_00 under
    ``add_remove`` (exact), 2 k^2 G_00 under ``replace`` (a bound)."""
    g00 = toeplitz.lattice_sensitivity_squared(int(buckets), 1, toeplitz.lattice_bits(buckets))
    k = int(max_contributions)
    return (2 if relation == "replace" else 1) * k * k * g00


def lattice_query(hist: np.ndarray, bits: int) -> np.ndarray:
    """q = C~int x exactly, int64 (x: non-negative counts). The convolution runs as float FFTs of
    12-bit limbs of x (every partial sum stays far below 2^53, so rounding recovers it exactly);
    a q reaching 2^62 (more than 2^(62-p) records) is refused."""
    x = np.asarray(hist, dtype=np.int64)
    D = x.size
    if int(x.sum(dtype=np.float64)) >= 2 ** (62 - bits - 1):
        raise DataError(f"the factorised CDF holds at most 2^{62 - bits - 1} records (its lattice query multiplies "
                        f"counts by 2^{bits}); use a range tree (levels='prefix')")
    ci = toeplitz.lattice_coefficients(D, bits).astype(np.float64)
    size = 1 << (2 * D - 1).bit_length()
    fc = np.fft.rfft(ci, size)
    q = np.zeros(D, dtype=np.int64)
    rest, shift = x.copy(), 0
    while rest.any():
        limb = (rest & 0xFFF).astype(np.float64)
        part = np.rint(np.fft.irfft(fc * np.fft.rfft(limb, size), size)[:D]).astype(np.int64)
        q += part << shift
        rest >>= 12
        shift += 12
    return q


def _unit_prefix(b: np.ndarray) -> np.ndarray:
    """S_t = sum_{k<t} b_k^2 for t = 0..D (S_0 = 0)."""
    return np.concatenate([[0.0], np.cumsum(b * b)])


def unit_average_prefix_variance(buckets: int) -> float:
    """The average variance of the D prefixes, in units of Var(w) / 4^p (exact for the B used)."""
    bits = toeplitz.lattice_bits(buckets)
    return float(np.mean(toeplitz.cumulative_squares(int(buckets), bits)))


def unit_average_range_variance(buckets: int) -> float:
    """The average variance of all D(D+1)/2 ranges, in units of Var(w) / 4^p: summed over the
    pairs s < t of prefixes 0..D (e_0 = 0), Var(e_t - e_s) totals (D + 1) sum_t S_t - Var(sum_t e_t),
    and Var(sum_t e_t) = sum_j (b_0 + .. + b_{D-1-j})^2."""
    D = int(buckets)
    b = toeplitz.post_coefficients(D, toeplitz.lattice_bits(D))
    total = (D + 1) * float(np.sum(toeplitz.cumulative_squares(D, toeplitz.lattice_bits(D))))
    total -= float(np.sum(np.cumsum(b) ** 2))
    return total / (D * (D + 1) / 2)


@dataclass(frozen=True)
class Buckets:
    """The cells the data stage fills for this plan: one per bucket (no padding)."""

    padded_size: int


P = TypeVar("P", bound="FactorizationPlan")


@dataclass
class FactorizationPlan:
    """Everything about a factorised-CDF release decided from public parameters, before any data."""

    domain: Domain
    budget: Budget
    neighbors: Relation
    max_contributions: int
    sigma2: Fraction
    l2sq: int
    statement: dict[str, Any] = field(default_factory=dict)
    noise: str = "gaussian"
    levels: str = "factorization"
    root_exact: bool = False  # nothing is published exactly (quantile_ci's simulation reads it)

    @property
    def layout(self) -> Buckets:
        return Buckets(self.domain.size)

    @property
    def bits(self) -> int:
        return toeplitz.lattice_bits(self.domain.size)

    @property
    def noise_spec(self) -> NoiseSpec:
        """One block: the D coordinates of q."""
        return NoiseSpec("gaussian", (self.sigma2,))

    @property
    def unit_variance(self) -> float:
        """Var(w) / 4^p: the exact noise variance per unit of sum b_k^2."""
        return _noise.discrete_gaussian_variance(self.sigma2) / 4.0**self.bits

    def privacy_loss(self) -> PrivacyLoss:
        """One Gaussian measurement: q = C~int x, L2 sensitivity sqrt(l2sq) rounded up to a double."""
        step = Gaussian(self.sigma2, _l2_up(self.l2sq), "the lattice query q = C~int x")
        return PrivacyLoss(Neighbors(self.neighbors, self.max_contributions), (step,))

    def check_public_total(self, *, user_id: Any = None, on_invalid: str = "error", by: Any = None) -> None:
        """Nothing is published exactly (the total is a noisy prefix too): every input policy is sound."""

    def prefix_variances(self) -> np.ndarray:
        """The exact variance of the released prefixes 0..D (prefix 0: the empty one)."""
        return _unit_prefix(toeplitz.post_coefficients(self.domain.size, self.bits)) * self.unit_variance

    def measure(self, leaf_counts: np.ndarray, src: _noise.RandomSource) -> np.ndarray:
        """The private step: q + w, w ~ N_Z(0, sigma^2) i.i.d. (:func:`~dptree.privacy.measurement.measure`)."""
        hist = _check_histogram(leaf_counts)
        if hist.size != self.domain.size:
            raise InvalidParameterError("leaf histogram does not match the domain")
        out = measure([lattice_query(hist, self.bits)], self.noise_spec, src)[0]
        assert out is not None
        return out

    def measurement_copies(self, leaf_counts: np.ndarray, copies: int, rng: _noise.RngLike) -> np.ndarray:
        """``copies`` independent draws of :meth:`measure` on the same histogram, in one sampler call
        (for audits; copies = 1 draws what ``measure`` draws from the same ``rng``). Shape (copies, D)."""
        q = lattice_query(_check_histogram(leaf_counts), self.bits)
        out = measure([np.broadcast_to(q, (copies, q.size))], self.noise_spec, _noise.make_source(rng))[0]
        assert out is not None
        return np.asarray(out).reshape(copies, q.size)

    def parameters(self) -> dict[str, Any]:
        """The public keywords of :func:`plan_factorized_cdf` (the domain as the file writes it)."""
        b = self.budget
        return {"noise": self.noise, "neighbors": self.neighbors, "max_contributions": self.max_contributions,
                "levels": self.levels, "budget": {"epsilon": b.epsilon, "delta": b.delta, "rho": b.rho}}


def build_factorization(plan_type: type[P], *, lower: Any, upper: Any, epsilon: float | None = None,
                        delta: float = 0.0, rho: float | None = None, width: Any = None, noise: str = "gaussian",
                        neighbors: str = "add_remove", max_contributions: int = 1) -> P:
    """Plan a factorised CDF (a ``plan_type``: :class:`FactorizationPlan` or the release's plan,
    :func:`dptree.rangetree.factorized_release.plan_factorized_cdf`) from public parameters only: domain, sensitivity (module docstring),
    sigma^2 and the privacy statement. Gaussian noise only (the columns of C~ have L1 norm growing
    like sqrt(D): Laplace noise would need far more)."""
    if noise != "gaussian":
        raise InvalidParameterError("levels='factorization' adds discrete Gaussian noise: pass noise='gaussian' with "
                                    "rho= or epsilon= and delta=", parameter="noise")
    if neighbors not in ("add_remove", "replace"):
        raise InvalidParameterError("neighbors is 'add_remove' or 'replace'", parameter="neighbors")
    if isinstance(max_contributions, bool) or not isinstance(max_contributions, (int, np.integer)) \
            or max_contributions < 1:
        raise InvalidParameterError("max_contributions must be a positive integer, e.g. 1",
                                    parameter="max_contributions")
    check_budget_range(epsilon, rho)
    budget = resolve_budget(noise, epsilon, delta, rho)
    domain = make_domain(lower, upper, width)
    D = domain.size
    if D > MAX_BUCKETS:
        raise DomainError(f"the factorised CDF handles at most {MAX_BUCKETS} buckets ({D} given): choose a larger "
                          "width or a range tree (levels='prefix')")
    k = int(max_contributions)
    l2sq = sensitivity_squared(D, neighbors, k)
    if l2sq >= 1 << 53:
        raise InvalidParameterError("max_contributions is too large for the factorised CDF's exact sensitivity; "
                                    "use a range tree", parameter="max_contributions")
    with _noise.noise_scale_of("max_contributions", k, 2):
        level = calibrate_gaussian(budget, [Fraction(1)], np.array([float(l2sq)]), False, calibration="zcdp",
                                   max_contributions=k)
    check_noise_range("gaussian", level.parameters)
    sigma2 = level.parameters[0]
    assert sigma2 is not None
    plan = plan_type(domain, budget, neighbors, k, sigma2, l2sq)  # type: ignore[arg-type]
    plan.statement = _statement(plan, level.spent, level.calibration)
    return plan


def _statement(plan: FactorizationPlan, spent: dict[str, Any], calibration: dict[str, Any]) -> dict[str, Any]:
    b, D, p = plan.budget, plan.domain.size, plan.bits
    guarantee = "rho-zCDP" + (", implies (epsilon, delta)-DP" if b.kind == "approx" else "")
    bound = "exact" if plan.neighbors == "add_remove" else "bound 2 k^2 G_00"
    return make_statement(
        mechanism=(f"factorised CDF over {D} buckets: square-root Toeplitz factorisation A = B C~ on the lattice "
                   f"2^-{p} (Henzinger, Upadhyay & Upadhyay 2023; Fichtenberger, Henzinger & Upadhyay 2023), "
                   "the discrete Gaussian mechanism (Canonne, Kamath & Steinke 2020) on the integer vector "
                   f"q = C~int x, post-processed by B / 2^{p}"),
        neighbors=Neighbors(plan.neighbors, plan.max_contributions), guarantee=guarantee, private=True,
        budget_requested={"epsilon": b.epsilon, "delta": b.delta, "rho": b.rho}, budget_spent=spent,
        l2_sensitivity=float(_l2_up(plan.l2sq)),
        noise={"family": "discrete gaussian", "sigma2": str(plan.sigma2), "l2_sensitivity_squared": plan.l2sq,
               "sensitivity": bound, "lattice_bits": p},
        calibration=calibration)


class FactorizedEstimates(LeafEstimates):
    """The released prefixes ``cum`` (B y / 2^p, y = q + w) with the estimator interface of a range
    tree's :class:`~dptree.rangetree.estimates.LeafEstimates` (counts, exact variances, intervals,
    the isotonic CDF, simulated errors), so every query of a range tree applies unchanged."""

    def __init__(self, plan: FactorizationPlan, y: np.ndarray) -> None:
        D, self.size, self.noise = plan.domain.size, plan.domain.size, "gaussian"
        self._monotone_cdf = None
        self._bits, self._unit = plan.bits, plan.unit_variance
        self._b = np.asarray(toeplitz.post_coefficients(D, plan.bits))
        self._S = _unit_prefix(self._b)
        self._R: np.ndarray | None = None
        self.cum = np.concatenate([[0.0], toeplitz.correlated_noise(self._b, np.asarray(y), 0, plan.bits)])

    def _autocorrelation(self) -> np.ndarray:
        """R_m = sum_{k <= D-1-m} b_k b_{k+m}: Cov(e_s, e_D) = R_{D-s} (units)."""
        if self._R is None:
            size = 1 << (2 * self.size).bit_length()
            f = np.fft.rfft(self._b, size)
            self._R = np.fft.irfft(f * np.conj(f), size)[: self.size]
        return self._R

    def variances(self, a: np.ndarray, b: np.ndarray, empty: np.ndarray) -> np.ndarray:
        """Exact variances of the leaf ranges [a, b] (module docstring), in the shape of ``a``."""
        shape = np.shape(a)
        s, t, empty = np.ravel(a).astype(np.int64), np.ravel(b).astype(np.int64) + 1, np.ravel(empty)
        s, t = np.where(empty, 0, s), np.where(empty, 1, t)
        out = np.empty(s.shape)
        S, D, bb = self._S, self.size, self._b
        first, last = s == 0, (t == D) & (s > 0)
        out[first] = S[t[first]]
        if last.any():
            out[last] = S[D] + S[s[last]] - 2 * self._autocorrelation()[D - s[last]]
        rest = np.flatnonzero(~first & ~last)
        d = t[rest] - s[rest]
        for g in np.unique(d):
            sel = rest[d == g]
            if sel.size > 8:  # one pass over the domain for every range of this length
                q = np.concatenate([[0.0], np.cumsum((bb[g:] - bb[: D - g]) ** 2)])
                out[sel] = S[g] + q[s[sel]]
            else:
                for i in sel:
                    out[i] = S[g] + float(np.sum((bb[g:g + s[i]] - bb[: s[i]]) ** 2))
        return np.where(empty, 0.0, out * self._unit).reshape(shape)

    def spread(self, a: np.ndarray, b: np.ndarray, empty: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
        """(standard error, normal multiplier at ``level``): the noise is Gaussian."""
        return np.sqrt(self.variances(a, b, empty)), np.reshape(multiplier("gaussian", level, np.ravel(a)), np.shape(a))

    def simulated_cdf_errors(self, spec: NoiseSpec, root_exact: bool, sims: int, source: _noise.RandomSource,
                             at: np.ndarray) -> np.ndarray:
        """Errors of the prefixes ``cum[at]`` in ``sims`` simulated releases: fresh noise of the public
        ``spec`` (the measurement core on zero counts) through B / 2^p; no data is read."""
        D, at = self.size, np.asarray(at)
        out = np.empty((int(sims), at.size))
        size = 1 << (2 * D - 1).bit_length()
        fb = np.fft.rfft(self._b, size)
        chunk = max(1, min(int(sims), _SIM_CHUNK // D))
        for s0 in range(0, int(sims), chunk):
            c = min(chunk, int(sims) - s0)
            w = measure([np.zeros((c, D), dtype=np.int64)], spec, source)[0]
            e = np.zeros((c, D + 1))
            e[:, 1:] = np.ldexp(np.fft.irfft(fb * np.fft.rfft(np.asarray(w, dtype=np.float64), size, axis=1),
                                             size, axis=1)[:, :D], -self._bits)
            out[s0:s0 + c] = e[:, at]
        return out


def measurement_seed(plan: FactorizationPlan, y: np.ndarray) -> int:
    """A seed hashed from the public plan and the noisy measurement (post-processing)."""
    h = hashlib.sha256(repr((plan.domain, "factorization", str(plan.sigma2))).encode())
    h.update(np.ascontiguousarray(y, dtype=np.int64).tobytes())
    return int.from_bytes(h.digest()[:8], "big")
