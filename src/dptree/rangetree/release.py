"""Range trees: one private release that answers every range count, CDF value, histogram and quantile.

The mechanism (seeds 000, 003, 004): build a b-ary tree over the leaf buckets of a public ordered
domain, add exact discrete noise to the count of every node of every measured level, and
estimate all counts by generalised least squares (Honaker's estimator, seed 004). Every answer
is post-processing of the noisy node counts and comes with its exact standard error.

Privacy (DESIGN section 3). With k = ``max_contributions`` records per person:

===========================  =====================  ======================
neighbours                   L1 per level            squared L2 per level
===========================  =====================  ======================
``add_remove`` (default)      k                       k^2
``replace``                   2k (root: 0, public n)  2k^2 (root: 0)
===========================  =====================  ======================

One record changes one node per level (its ancestors; seed 003, Claim 2.2). Level l gets a share
w_l of the budget: Laplace noise with scale (L1 sensitivity) / (epsilon w_l) gives epsilon w_l-DP
per level, and discrete Gaussian noise with sigma^2 = (L2 sensitivity)^2 / (2 rho w_l) gives
rho w_l-zCDP per level; basic composition over levels gives epsilon-DP, resp. rho-zCDP (and
(epsilon, delta)-DP through CKS 2020 Cor. 13 when the budget is given as (epsilon, delta)).
Under ``replace`` the total n is public (bounded DP) and used as an exact constraint.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar, Literal, Sequence, cast

import numpy as np

from dptree import __version__ as _version
from dptree import noise as _noise
from dptree.data.domain import Domain, make_domain
from dptree.errors import DataError, DomainError, InvalidParameterError, ReleaseFileError
from dptree.estimation.intervals import laplace_mixture_multiplier, normal_multiplier
from dptree.estimation.least_squares import consistent_estimates, range_error_moments, range_variance
from dptree.io.frames import result_frame
from dptree.io.release_file import check_metadata, creation_metadata, register_kind, write_release
from dptree.privacy.boundary import Boundary
from dptree.privacy.budget import (
    RANGE_TREE_BUDGET_RANGE,
    Budget,
    check_delta,
    check_epsilon,
    check_release_budget,
    check_rho,
    discrete_gaussian_delta,
    discrete_gaussian_exact_feasible,
    discrete_gaussian_sigma2_for,
    zcdp_epsilon,
)
from dptree.rangetree.allocation import choose_branching, level_weights
from dptree.rangetree.layout import TreeLayout, build_layout

__all__ = [
    "plan_range_tree",
    "RangeTree",
    "RangeTreePlan",
    "HistogramResult",
    "QuantileResult",
    "Answers",
    "level_sensitivities",
]

NoiseKind = Literal["laplace", "gaussian"]
Neighbors = Literal["add_remove", "replace"]

# Noise parameters outside these ranges make every answer meaningless (or exact to 1e-400) and
# push integers past int64: such budgets are refused with an explanation.
LAPLACE_SCALE_RANGE = (1e-9, 1e12)
GAUSSIAN_SIGMA2_RANGE = (1e-18, 1e24)


def level_sensitivities(neighbors: str, max_contributions: int, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """(L1, squared L2) sensitivity of each level's vector of counts, root first (DESIGN section 3)."""
    k = max_contributions
    l1 = np.full(depth + 1, float(k))
    l2sq = np.full(depth + 1, float(k * k))
    if neighbors == "replace":
        l1[:] = 2.0 * k
        l2sq[:] = 2.0 * k * k
        l1[0] = 0.0
        l2sq[0] = 0.0
    return l1, l2sq


def _check_choice(value: object, name: str, choices: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise InvalidParameterError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def _check_contributions(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or int(k) < 1:
        raise InvalidParameterError(f"max_contributions must be an integer >= 1, got {k!r}")
    return int(k)


def _resolve_budget(noise: str, epsilon: object, delta: object, rho: object) -> Budget:
    if noise == "laplace":
        if rho is not None:
            raise InvalidParameterError("rho is a zCDP budget for noise='gaussian'; Laplace noise takes epsilon")
        if epsilon is None:
            raise InvalidParameterError("epsilon is required, e.g. epsilon=1.0")
        if check_delta(delta) != 0.0:
            raise InvalidParameterError(
                "Laplace noise is pure epsilon-DP and spends no delta; pass delta=0 or use noise='gaussian'"
            )
        return Budget.pure(check_epsilon(epsilon))
    if rho is not None:
        if epsilon is not None or (delta not in (None, 0, 0.0)):
            raise InvalidParameterError("give the Gaussian budget either as rho or as (epsilon, delta), not both")
        return Budget.zcdp(check_rho(rho))
    if epsilon is None:
        raise InvalidParameterError("noise='gaussian' needs rho, or epsilon together with delta > 0")
    return Budget.approx(check_epsilon(epsilon), check_delta(delta, required=True))


def _extreme_budget(epsilon: object, rho: object) -> str:
    """A message when a budget is too extreme to compute with (checked before exact arithmetic)."""
    for name, v in (("epsilon", epsilon), ("rho", rho)):
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0:
            try:
                check_release_budget(v, name, RANGE_TREE_BUDGET_RANGE)
            except InvalidParameterError as exc:
                return str(exc)
    return ""


#: Peak bytes per bucket of planning and releasing a range tree (measured: about 65 at 2^22
#: buckets, planning included; rounded up for the estimator's temporaries).
BYTES_PER_BUCKET = 100


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def check_memory(buckets: int) -> None:
    """Refuse, before allocating, a domain whose tree would not fit in the available memory (a
    public estimate from the number of buckets; it used to die with MemoryError at 2^26)."""
    need = buckets * BYTES_PER_BUCKET
    avail = available_memory()
    if avail is not None and need > avail:
        fit = max(avail // BYTES_PER_BUCKET, 2)
        raise DomainError(
            f"a range tree over {buckets} buckets needs about {need / 2**30:.1f} GiB of memory, more than the "
            f"{avail / 2**30:.1f} GiB available; choose a larger width or narrower bounds (about {fit} buckets "
            "fit), or free memory"
        )


def _check_noise_range(noise_kind: str, params: list[Fraction | None]) -> None:
    lo, hi = LAPLACE_SCALE_RANGE if noise_kind == "laplace" else GAUSSIAN_SIGMA2_RANGE
    what = "Laplace scale" if noise_kind == "laplace" else "Gaussian variance"
    for p in params:
        if p is None:
            continue
        if p > hi:
            raise InvalidParameterError(
                f"the {what} per level would be {float(p):.3g} (> {hi:g}): every answer would be noise. "
                "Use a larger budget, a smaller max_contributions, or fewer levels (larger branching)."
            )
        if p < lo:
            raise InvalidParameterError(
                f"the {what} per level would be {float(p):.3g} (< {lo:g}): the budget is so large that the "
                "release is not meaningfully private; use a smaller epsilon/rho."
            )


def _exact_shares(weights: np.ndarray) -> list[Fraction]:
    """Budget shares as exact fractions that sum to exactly one (zero stays zero)."""
    fr = [Fraction(float(w)).limit_denominator(1 << 40) if w > 0 else Fraction(0) for w in weights]
    total = sum(fr, Fraction(0))
    return [f / total for f in fr]


@dataclass
class RangeTreePlan:
    """Everything about a range-tree release that depends only on public parameters.

    Built (and validated) before any data is read; :meth:`release` then adds the noise to a leaf
    histogram. ``noise_parameters[l]`` is the exact discrete-Laplace scale or discrete-Gaussian
    sigma^2 used on level l (None: level not measured or, at the root under replace, exact).
    """

    domain: Domain
    layout: TreeLayout
    budget: Budget
    noise: NoiseKind
    neighbors: Neighbors
    max_contributions: int
    levels: str
    weights: np.ndarray
    noise_parameters: list[Fraction | None]
    level_variance: np.ndarray
    statement: dict[str, Any] = field(default_factory=dict)

    @property
    def root_exact(self) -> bool:
        return self.neighbors == "replace"

    def check_public_total(self, *, user_id: Any = None, missing: str = "error", by: Any = None) -> None:
        """Refuse input policies that make the released exact total depend on the private data.

        Under ``neighbors="replace"`` the root is published without noise: sound only when the
        total is the public number of input records. User bounding (Sum_u min(c_u, k)),
        ``missing="drop"`` and a split by group all change the counted total when one record is
        replaced, which would make the exact root an unbounded leak (issue 10, leak 1). Called
        before any data is read.
        """
        if not self.root_exact:
            return
        for active, what in (
            (user_id is not None, "user_id bounding keeps at most max_contributions records per user"),
            (missing == "drop", "missing='drop' drops missing values"),
            (by is not None, "a split by group moves a replaced record between groups"),
        ):
            if active:
                raise InvalidParameterError(
                    "neighbors='replace' publishes the total number of records exactly, which is only "
                    f"private when every input record is counted; {what}, so the counted total depends "
                    "on the private data. Use neighbors='add_remove' (the total is then noised)."
                )

    def release(
        self,
        leaf_counts: np.ndarray,
        rng: _noise.RngLike = None,
        *,
        column: Any = None,
        source: Any = None,
        created: str | None = None,
    ) -> "RangeTree":
        """Add noise to the true counts derived from ``leaf_counts`` and estimate (the private step).

        ``column`` and ``source`` (the caller's column name and input path) are kept, with the
        creation time, in the release's public ``metadata``. ``created``: that time, read from the
        clock (``serialize._utc_now()``) before the data was read; default: now."""
        src = _noise.make_source(rng)
        hist = _check_histogram(leaf_counts)
        if hist.shape != (self.layout.padded_size,):
            if hist.ndim == 1 and hist.size == self.domain.size:
                hist = np.concatenate([hist, np.zeros(self.layout.padded_size - hist.size, np.int64)])
            else:
                raise InvalidParameterError("leaf histogram does not match the domain")
        true_levels = self.layout.level_counts(hist)
        measurements: list[np.ndarray | None] = []
        for j, counts in enumerate(true_levels):
            param = self.noise_parameters[j]
            if j == 0 and self.root_exact:
                measurements.append(counts.copy())  # the public total n
            elif param is None:
                measurements.append(None)
            elif self.noise == "laplace":
                measurements.append(counts + _noise.discrete_laplace(src, param, counts.size))
            else:
                measurements.append(counts + _noise.discrete_gaussian(src, param, counts.size))
        statement = dict(self.statement)
        statement["private"] = bool(src.private)
        meta = creation_metadata(column=column, source=source, created=created)
        return RangeTree(plan=self, measurements=measurements, statement=statement, metadata=meta)


def _check_histogram(leaf_counts: Any) -> np.ndarray:
    """A 1-D array of non-negative int64 counts, or a DataError."""
    try:
        arr = np.asarray(leaf_counts)
    except (TypeError, ValueError, OverflowError) as exc:
        raise DataError(f"leaf histogram must be an array of counts: {exc}") from exc
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise DataError(f"leaf histogram must be a 1-D array of integers, got {arr.dtype} with shape {arr.shape}")
    if arr.dtype.kind == "u" and arr.size and arr.max() >= 2**62:
        raise DataError("leaf histogram counts must be below 2^62")
    hist = arr.astype(np.int64)
    if hist.size and (hist.min() < 0 or hist.max() >= 2**62):
        raise DataError("leaf histogram counts must be non-negative and below 2^62")
    return hist


def plan_range_tree(
    *,
    lower: Any,
    upper: Any,
    epsilon: float | None = None,
    delta: float = 0.0,
    rho: float | None = None,
    width: Any = None,
    branching: int | None = None,
    noise: str = "laplace",
    neighbors: str = "add_remove",
    max_contributions: int = 1,
    levels: str = "uniform",
    gaussian_calibration: str = "exact",
) -> RangeTreePlan:
    """Validate public parameters and compute the per-level noise (no data involved).

    ``gaussian_calibration`` (Gaussian noise with an (epsilon, delta) budget only): ``"exact"``
    (default) gives every noised level the smallest sigma^2 whose exact discrete-Gaussian delta at
    epsilon is <= delta (:func:`dptree.privacy.budget.discrete_gaussian_sigma2_for`; one record moves one
    count per level by 1, or two under ``replace``), when that computation applies: one record per
    person and the same share on every noised level (``levels="uniform"``); otherwise, and with
    ``"zcdp"``, sigma^2 = L2^2 / (2 rho w_l) with rho = zcdp_rho_for(epsilon, delta) (CKS Cor. 13).
    A rho budget always uses the zCDP calibration.
    """
    noise_kind = _check_choice(noise, "noise", ("laplace", "gaussian"))
    calibration = _check_choice(gaussian_calibration, "gaussian_calibration", ("exact", "zcdp"))
    if budget_too_extreme := _extreme_budget(epsilon, rho):
        raise InvalidParameterError(budget_too_extreme)
    nb = _check_choice(neighbors, "neighbors", ("add_remove", "replace"))
    strategy = _check_choice(levels, "levels", ("uniform", "optimal"))
    k = _check_contributions(max_contributions)
    budget = _resolve_budget(noise_kind, epsilon, delta, rho)
    domain = make_domain(lower, upper, width)
    check_memory(domain.size)
    root_exact = nb == "replace"
    if branching is None:
        b = choose_branching(domain.size, noise_kind, strategy, root_exact)
    else:
        b = branching
    layout = build_layout(domain.size, b)
    L = layout.depth
    weights = level_weights(layout, strategy=strategy, noise=noise_kind, root_exact=root_exact)  # type: ignore[arg-type]
    if root_exact:
        weights[0] = 0.0
    shares = _exact_shares(weights)
    l1, l2sq = level_sensitivities(nb, k, L)
    params: list[Fraction | None] = []
    gauss_calibration: dict[str, Any] = {}
    variances = np.empty(L + 1)
    per_level = []
    if noise_kind == "laplace":
        eps = Fraction(budget.epsilon)  # type: ignore[arg-type]
        spent = Fraction(0)
        for j in range(L + 1):
            if (j == 0 and root_exact) or shares[j] == 0:
                params.append(None)
                variances[j] = 0.0 if (j == 0 and root_exact) else np.inf
                continue
            scale = _noise.laplace_scale_used(Fraction(int(l1[j])) / (eps * shares[j]))
            params.append(scale)
            variances[j] = _noise.discrete_laplace_variance(scale)
            eps_j = Fraction(int(l1[j])) / scale
            spent += eps_j
            per_level.append(
                {
                    "level": j,
                    "epsilon": float(eps_j),
                    "l1_sensitivity": float(l1[j]),
                    "laplace_scale": float(scale),
                    "noise_variance": float(variances[j]),
                }
            )
        total = {"epsilon": float(spent), "delta": 0.0}
    else:
        rho_total = Fraction(budget.as_rho())
        spent = Fraction(0)
        noised = [j for j in range(L + 1) if not ((j == 0 and root_exact) or shares[j] == 0)]
        m_units = int(sum(int(l2sq[j]) for j in noised))
        exact = (
            budget.kind == "approx"
            and calibration == "exact"
            and k == 1
            and len({shares[j] for j in noised}) == 1
            and len({int(l2sq[j]) for j in noised}) == 1
            and discrete_gaussian_exact_feasible(float(budget.epsilon), float(budget.delta), m_units)  # type: ignore[arg-type]
        )
        exact_sigma2 = (
            discrete_gaussian_sigma2_for(float(budget.epsilon), float(budget.delta), m_units)  # type: ignore[arg-type]
            if exact
            else None
        )
        for j in range(L + 1):
            if (j == 0 and root_exact) or shares[j] == 0:
                params.append(None)
                variances[j] = 0.0 if (j == 0 and root_exact) else np.inf
                continue
            if exact_sigma2 is not None:
                sigma2 = exact_sigma2
            else:
                sigma2 = _noise.gaussian_sigma2_used(Fraction(int(l2sq[j])) / (2 * rho_total * shares[j]))
            params.append(sigma2)
            variances[j] = _noise.discrete_gaussian_variance(sigma2)
            rho_j = Fraction(int(l2sq[j])) / (2 * sigma2)
            spent += rho_j
            per_level.append(
                {
                    "level": j,
                    "rho": float(rho_j),
                    "l2_sensitivity": math.sqrt(l2sq[j]),
                    "gaussian_sigma2": float(sigma2),
                    "noise_variance": float(variances[j]),
                }
            )
        if exact_sigma2 is not None:
            # (epsilon, delta) by the exact discrete-Gaussian delta over all m unit shifts; the
            # noise is also sum(rho_j)-zCDP, but that is not what is claimed or charged.
            total = {"epsilon": float(budget.epsilon), "delta": budget.delta}  # type: ignore[arg-type]
            gauss_calibration = {
                "method": "exact discrete Gaussian (epsilon, delta): delta(epsilon) of the m-fold "
                "privacy-loss convolution (CKS 2020 Thm 7 extended to m coordinates; "
                "dptree.privacy.budget.discrete_gaussian_delta)",
                "unit_shifts": m_units,
                "delta_at_epsilon": discrete_gaussian_delta(float(budget.epsilon), float(exact_sigma2), m_units),  # type: ignore[arg-type]
                "implied_rho": float(spent),
            }
        else:
            total = {"rho": float(spent)}
            if budget.kind == "approx":
                total["epsilon"] = zcdp_epsilon(float(spent), budget.delta)
                total["delta"] = budget.delta
            gauss_calibration = {
                "method": "zCDP: sigma^2 = L2^2 / (2 rho w_l)"
                + (", rho = zcdp_rho_for(epsilon, delta) (CKS 2020 Cor. 13)" if budget.kind == "approx" else "")
            }
    _check_noise_range(noise_kind, params)
    measured = [j for j in range(L + 1) if params[j] is not None]
    exact_gauss = noise_kind == "gaussian" and "implied_rho" in gauss_calibration
    noise_name = "Laplace" if noise_kind == "laplace" else "Gaussian"
    statement: dict[str, Any] = {
        "mechanism": f"range tree, {layout.branching}-ary, discrete {noise_name} noise per level",
        "neighbors": nb,
        "max_contributions": k,
        "guarantee": (
            "(epsilon, delta)-DP (exact discrete-Gaussian accounting)"
            if exact_gauss
            else {"laplace": "pure epsilon-DP", "gaussian": "rho-zCDP"}[noise_kind]
            + (", implies (epsilon, delta)-DP" if budget.kind == "approx" else "")
        ),
        "budget_requested": {"epsilon": budget.epsilon, "delta": budget.delta, "rho": budget.rho},
        "budget_spent": total,
        "l1_sensitivity": float(l1[measured].sum()),
        "l2_sensitivity": float(math.sqrt(l2sq[measured].sum())),
        "levels": per_level,
        "root": "exact public total (bounded DP)"
        if root_exact
        else ("noised" if params[0] is not None else "not measured"),
        "library": f"dptree {_version}",
        "private": True,
    }
    if noise_kind == "gaussian":
        statement["calibration"] = gauss_calibration
    return RangeTreePlan(
        domain=domain,
        layout=layout,
        budget=budget,
        noise=cast(NoiseKind, noise_kind),
        neighbors=cast(Neighbors, nb),
        max_contributions=k,
        levels=strategy,
        weights=np.asarray(weights, dtype=np.float64),
        noise_parameters=params,
        level_variance=variances,
        statement=statement,
    )


@dataclass(frozen=True)
class HistogramResult:
    """Counts of the bins [edges[i], edges[i+1]) (the last bin closed), their standard errors and
    ``level`` confidence intervals (see :meth:`RangeTree.ci`)."""

    edges: np.ndarray
    counts: np.ndarray
    stderr: np.ndarray
    ci_low: np.ndarray | None = None
    ci_high: np.ndarray | None = None
    level: float = 0.95

    def to_frame(self) -> Any:
        """One row per bin: bin_low, bin_high, estimate, stderr, ci_low, ci_high."""
        ci = None if self.ci_low is None or self.ci_high is None else (self.ci_low, self.ci_high)
        return result_frame(
            {"bin_low": self.edges[:-1], "bin_high": self.edges[1:]},
            estimate=self.counts, stderr=self.stderr, ci=ci, level=self.level,
        )


@dataclass(frozen=True)
class QuantileResult:
    """Quantiles read off the monotone CDF, with intervals: the values whose pointwise ``level``
    CDF band contains the quantile's rank (an approximate interval, see :meth:`RangeTree.quantile_ci`)."""

    q: np.ndarray
    values: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    level: float = 0.95

    def to_frame(self) -> Any:
        """One row per level: q, estimate, ci_low, ci_high (quantiles have no standard error)."""
        return result_frame({"q": self.q}, estimate=self.values, ci=(self.ci_low, self.ci_high), level=self.level)


@dataclass(frozen=True)
class Answers:
    """Answers to several queries of one release (:meth:`RangeTree.answer`), one row each:
    ``query`` (its text), ``estimate``, ``stderr`` (None for quantiles), ``ci_low``, ``ci_high``.
    Numbers stay numbers (dates: ISO text); :meth:`rows` is what ``dptree query --format json``
    prints."""

    rows: list[dict[str, Any]]
    level: float = 0.95

    def to_frame(self) -> Any:
        """One row per query: query, estimate, stderr, ci_low, ci_high."""
        col = {k: [r[k] for r in self.rows] for k in ("query", "estimate", "stderr", "ci_low", "ci_high")}
        col["stderr"] = [np.nan if v is None else v for v in col["stderr"]]  # quantiles have none
        return result_frame({"query": col["query"]}, estimate=col["estimate"], stderr=col["stderr"],
                            ci=(col["ci_low"], col["ci_high"]), level=self.level)


def _quantile_levels(q: Any) -> np.ndarray:
    """Quantile levels as a 1-D float array in [0, 1], or an InvalidParameterError."""
    try:
        raw = np.atleast_1d(np.asarray(q))
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(f"quantile levels q must be numbers in [0, 1]: {exc}") from exc
    if raw.dtype.kind not in "iuf" or raw.ndim != 1:
        raise InvalidParameterError(f"quantile levels q must be numbers in [0, 1], got {raw.dtype}")
    qa = raw.astype(np.float64)
    if qa.size == 0 or not np.all(np.isfinite(qa)) or np.any((qa < 0) | (qa > 1)):
        raise InvalidParameterError("quantile levels q must be numbers in [0, 1]")
    return qa


def _scalar_or_array(x: np.ndarray, like: Any) -> Any:
    return float(x[0]) if np.ndim(like) == 0 else x


class RangeTree:
    """A private range-tree release. All queries are post-processing and cost no budget.

    Counts are of records per bucket (bucket resolution for float and date domains: a query point
    selects the whole bucket that contains it).
    """

    #: the privacy boundary (:mod:`dptree.privacy.boundary`): the noisy node counts are the only fields
    #: that depend on the data (under ``replace`` the root is the public n)
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "measurements.noise_parameters", "metadata", "metadata.*"),
        noisy=("measurements.levels",),
    )

    def __init__(
        self,
        plan: RangeTreePlan,
        measurements: list[np.ndarray | None],
        statement: dict[str, Any],
        metadata: dict[str, Any] | None = None,
    ):
        self.plan = plan
        self.domain = plan.domain
        self.layout = plan.layout
        self.measurements = measurements
        self.privacy = statement
        #: public: the caller's column name, input path and the creation time (and a ledger charge)
        self.metadata: dict[str, Any] = dict(metadata or {})
        self._estimate()

    @property
    def column(self) -> str | None:
        """The name of the released column, when the caller gave one (public)."""
        col = self.metadata.get("column")
        return None if col is None else str(col)

    # ------------------------------------------------------------------ estimation
    def _estimate(self) -> None:
        lay = self.layout
        sizes = lay.level_sizes
        y = [np.zeros(n) if m is None else m.astype(np.float64) for m, n in zip(self.measurements, sizes)]
        var = [float(v) for v in self.plan.level_variance]
        parents: list[np.ndarray | None] = [None] * len(sizes)  # implied by the fanouts
        est = consistent_estimates(y, var, parents, fanouts=lay.fanouts)
        leaf = est.x[-1]
        D, Dp = self.domain.size, lay.padded_size
        self._pad_var = 0.0
        if Dp > D:
            # The padding buckets [D, Dp) hold no records (public). Conditioning the least-squares
            # estimate on "their sum is 0" is the constrained GLS estimate:
            # x' = x - Cov(x, P) / Var(P) * P_hat, Var' = Var - Cov(., P)^2 / Var(P).
            idx = np.arange(D)
            self._pad_var = float(self._raw_variance(np.array([D]), np.array([Dp - 1]))[0])
            if self._pad_var > 0:
                pad_hat = float(leaf[D:].sum())
                leaf = leaf[:D] - self._cov_with_padding(idx, idx) / self._pad_var * pad_hat
        self._leaf = leaf[:D]
        self._cum = np.concatenate([[0.0], np.cumsum(self._leaf)])
        self._monotone_cdf: np.ndarray | None = None

    def _raw_variance(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Closed-form variance of leaf ranges of the whole (padded) tree; 0 for empty ranges."""
        empty = a > b
        v = range_variance(
            self.layout.block_sizes, self.plan.level_variance, np.where(empty, 0, a), np.where(empty, 0, b)
        )
        return np.where(empty, 0.0, v)

    def _cov_with_padding(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Cov(range [a, b] of the domain, padding range P), from four contiguous-range variances:
        with M = [b+1, D-1], 2 Cov(q, P) = Var(q+M+P) + Var(M) - Var(q+M) - Var(M+P)."""
        D, last = self.domain.size, self.layout.padded_size - 1
        end = np.full(a.shape, D - 1)
        return 0.5 * (
            self._raw_variance(a, np.full(a.shape, last))
            + self._raw_variance(b + 1, end)
            - self._raw_variance(a, end)
            - self._raw_variance(b + 1, np.full(a.shape, last))
        )

    @property
    def private(self) -> bool:
        """False when the release was made with a test seed."""
        return bool(self.privacy.get("private", False))

    @property
    def leaf_estimates(self) -> np.ndarray:
        """Consistent (least-squares) estimates of the count in every bucket of the domain."""
        return self._leaf[: self.domain.size].copy()

    # ------------------------------------------------------------------ helpers
    def _leaf_range(self, lo: Any, hi: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        qlo = self.domain._query_array(lo)
        qhi = self.domain._query_array(hi)
        try:
            qlo, qhi = np.broadcast_arrays(np.atleast_1d(qlo), np.atleast_1d(qhi))
        except ValueError:
            raise InvalidParameterError(
                "lo and hi must have the same length (or one of them be a single value)"
            ) from None
        if np.any(qlo > qhi):
            raise InvalidParameterError("count(lo, hi) needs lo <= hi")
        a = np.atleast_1d(self.domain.leaf_of(lo))
        b = np.atleast_1d(self.domain.leaf_of(hi))
        a, b = np.broadcast_arrays(a, b)
        D = self.domain.size
        a = np.clip(a, 0, D)
        b = np.clip(b, -1, D - 1)
        empty = a > b
        return np.where(empty, 0, a), np.where(empty, 0, b), empty

    def _counts(self, a: np.ndarray, b: np.ndarray, empty: np.ndarray) -> np.ndarray:
        return np.where(empty, 0.0, self._cum[b + 1] - self._cum[a])

    def _variances(self, a: np.ndarray, b: np.ndarray, empty: np.ndarray) -> np.ndarray:
        v = range_variance(self.layout.block_sizes, self.plan.level_variance, a, b)
        if self._pad_var > 0:
            v = v - self._cov_with_padding(a, b) ** 2 / self._pad_var
        return np.where(empty, 0.0, np.maximum(v, 0.0))

    # ------------------------------------------------------------------ queries
    def count(self, lo: Any, hi: Any) -> Any:
        """Estimated number of records with lo <= value <= hi (vectorised over arrays)."""
        a, b, e = self._leaf_range(lo, hi)
        return _scalar_or_array(self._counts(a, b, e), lo if np.ndim(lo) else hi)

    def stderr(self, lo: Any, hi: Any) -> Any:
        """Exact standard error of :meth:`count` (closed form, DESIGN section 4)."""
        a, b, e = self._leaf_range(lo, hi)
        return _scalar_or_array(np.sqrt(self._variances(a, b, e)), lo if np.ndim(lo) else hi)

    def ci(self, lo: Any, hi: Any, level: float = 0.95) -> tuple[Any, Any]:
        """Confidence interval count -+ m * stderr for :meth:`count` at the given ``level``.

        Gaussian noise: m is the normal quantile. Laplace noise: m comes from the variance-gamma
        law matched to the range's exact error moments (:mod:`dptree.estimation.intervals`), which widens
        intervals whose error is dominated by one node's Laplace noise.
        """
        a, b, e = self._leaf_range(lo, hi)
        c = self._counts(a, b, e)
        s, m = self._spread(a, b, e, level)
        like = lo if np.ndim(lo) else hi
        return _scalar_or_array(c - m * s, like), _scalar_or_array(c + m * s, like)

    def _spread(self, a: np.ndarray, b: np.ndarray, empty: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
        """(standard error, interval multiplier) of leaf ranges [a, b]."""
        if self.plan.noise == "gaussian":
            return np.sqrt(self._variances(a, b, empty)), np.full(a.shape, normal_multiplier(level))
        v1, v2 = range_error_moments(self.layout.fanouts, self.plan.level_variance, a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            k = np.where(v2 > 0, v1 * v1 / v2, np.inf)
        # with padding, the conditioned variance is exact and the shape k that of the
        # unconditioned estimate (an approximation for the interval multiplier only)
        return np.sqrt(self._variances(a, b, empty)), laplace_mixture_multiplier(k, level)

    def _domain_range(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return np.array([0]), np.array([self.domain.size - 1]), np.array([False])

    def total(self) -> float:
        """Estimated number of records: ``count(lower, upper)``, so totals, histograms and CDFs agree.

        Under ``neighbors='replace'`` n is public and this is exactly n when the domain fills the
        tree; when the tree has padding buckets beyond ``upper`` (which hold no data), their
        noisy estimates are excluded and this is an estimate of n.
        """
        return float(self._counts(*self._domain_range())[0])

    def total_stderr(self) -> float:
        """Exact standard error of :meth:`total`."""
        return float(np.sqrt(self._variances(*self._domain_range())[0]))

    def total_ci(self, level: float = 0.95) -> tuple[float, float]:
        """Confidence interval of :meth:`total` (see :meth:`ci`)."""
        s, m = self._spread(*self._domain_range(), level)
        t = self.total()
        return t - float(m[0] * s[0]), t + float(m[0] * s[0])

    def cdf(self, x: Any, *, normalize: bool = False, monotone: bool = False) -> Any:
        """Threshold count #{records <= x} (seed 003's Phi(x)); a fraction when ``normalize``.

        ``monotone=True`` answers from the isotonic (non-decreasing) fit of the CDF over all
        buckets. Isotonic regression is a projection onto a convex set containing the true CDF, so
        its summed squared error over all thresholds never exceeds the unconstrained one; the
        pointwise ``stderr`` values describe the unconstrained estimate only.
        """
        idx = np.atleast_1d(self.domain.leaf_of(x))
        D = self.domain.size
        idx = np.clip(idx, -1, D - 1)
        if monotone:
            F = np.concatenate([[0.0], self._monotone()])
        else:
            F = self._cum
        out = F[idx + 1]
        if normalize:
            n = F[-1]
            out = out / n if n > 0 else np.zeros_like(out)
        return _scalar_or_array(out, x)

    def cdf_stderr(self, x: Any) -> Any:
        """Exact standard error of the (unnormalised, non-monotone) :meth:`cdf`."""
        idx = np.atleast_1d(self.domain.leaf_of(x))
        D = self.domain.size
        b = np.clip(idx, -1, D - 1)
        empty = b < 0
        a = np.zeros_like(b)
        return _scalar_or_array(np.sqrt(self._variances(a, np.where(empty, 0, b), empty)), x)

    def cdf_ci(self, x: Any, level: float = 0.95) -> tuple[Any, Any]:
        """Confidence interval of the (unnormalised, non-monotone) :meth:`cdf` (see :meth:`ci`)."""
        idx = np.atleast_1d(self.domain.leaf_of(x))
        b = np.clip(idx, -1, self.domain.size - 1)
        empty = b < 0
        b = np.where(empty, 0, b)
        a = np.zeros_like(b)
        c = self._counts(a, b, empty)
        s, m = self._spread(a, b, empty, level)
        return _scalar_or_array(c - m * s, x), _scalar_or_array(c + m * s, x)

    def _monotone(self) -> np.ndarray:
        if self._monotone_cdf is None:
            from scipy.optimize import isotonic_regression

            raw = self._cum[1:]
            fit = isotonic_regression(raw, increasing=True).x
            self._monotone_cdf = np.clip(fit, 0.0, None)
        return self._monotone_cdf

    def quantile(self, q: Any) -> Any:
        """The q-quantile(s): the smallest x with monotone CDF(x) >= q * n_hat (vectorised).

        Read off the isotonic fit of the CDF, so negative noisy counts and a non-monotone raw CDF
        cannot send the search to a wrong bucket. Float domains interpolate inside the bucket;
        integer domains return the bucket's value. With an estimated total <= 0 (no data), every
        quantile is ``lower``.
        """
        qa = _quantile_levels(q)
        F = self._monotone()
        n = F[-1]
        target = qa * n
        idx = np.searchsorted(F, target, side="left")
        idx = np.clip(idx, 0, self.domain.size - 1)
        prev = np.where(idx > 0, F[np.maximum(idx - 1, 0)], 0.0)
        step = F[idx] - prev
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.where(step > 0, (target - prev) / step, 0.0)
        frac = np.clip(frac, 0.0, 1.0)
        if n <= 0:
            idx = np.zeros_like(idx)
            frac = np.zeros_like(frac)
        out = self.domain.interpolate(idx, frac)
        return out[0] if np.ndim(q) == 0 else out

    def quantile_ci(self, q: Any, level: float = 0.95, *, grid: int = 4096) -> tuple[Any, Any]:
        """An interval for each q-quantile: from the first value whose upper ``level`` CDF band
        reaches q * total to the last value of the first bucket whose lower band does.

        It inverts the pointwise interval of :meth:`cdf` at the estimated total (whose own noise
        is ignored), so it is approximate. The band is read on at most ``grid`` evenly spaced
        buckets; between grid points the interval is widened to the neighbouring points, so it
        can only grow. Float domains give bucket edges, integers a bucket's first and last value,
        dates the first and the last bucket's start (bucket resolution, like :meth:`quantile`).
        With an estimated total <= 0 the interval is the whole domain."""
        qa = _quantile_levels(q)
        dom = self.domain
        D = dom.size
        idx = np.unique(np.linspace(0, D - 1, min(D, max(int(grid), 2))).astype(np.int64))
        zero = np.zeros_like(idx)
        c = self._counts(zero, idx, np.zeros(idx.shape, dtype=bool))
        s, m = self._spread(zero, idx, np.zeros(idx.shape, dtype=bool), level)
        lo_band, hi_band = c - m * s, c + m * s
        n = self.total()
        low_leaf = np.zeros(qa.size, dtype=np.int64)
        high_leaf = np.full(qa.size, D - 1, dtype=np.int64)
        for i, target in enumerate(qa * n):
            first_hi = np.flatnonzero(hi_band >= target)
            if n <= 0 or not first_hi.size:
                continue
            j = int(first_hi[0])
            low_leaf[i] = idx[j - 1] + 1 if j > 0 else idx[0]
            first_lo = np.flatnonzero(lo_band >= target)
            if first_lo.size:
                high_leaf[i] = idx[int(first_lo[0])]
        low = dom.leaf_start(low_leaf)
        if dom.kind == "float":
            high: Any = np.minimum(dom.lower + (high_leaf + 1) * dom.width, dom.upper)
        elif dom.kind == "datetime":
            high = dom.leaf_start(high_leaf)
        else:
            high = np.minimum(np.int64(dom.lower) + (high_leaf + 1) * np.int64(dom.width) - 1, np.int64(dom.upper))
        if np.ndim(q) == 0:
            return low[0], high[0]
        return low, high

    def quantiles(self, q: Any, level: float = 0.95) -> QuantileResult:
        """:meth:`quantile` with :meth:`quantile_ci` intervals, as a result with ``to_frame()``."""
        qa = _quantile_levels(q)
        low, high = self.quantile_ci(qa, level)
        return QuantileResult(q=qa, values=np.atleast_1d(self.quantile(qa)), ci_low=low, ci_high=high, level=level)

    def answer(
        self,
        *,
        count: Sequence[tuple[Any, Any]] = (),
        cdf: Sequence[Any] = (),
        quantile: Sequence[float] = (),
        total: bool = False,
        level: float = 0.95,
    ) -> Answers:
        """Several queries at once, one row each (``dptree query`` prints these): range counts
        ``(lo, hi)``, threshold counts, quantiles (with :meth:`quantile_ci` intervals) and the
        total; with no query at all, the total."""
        rows: list[dict[str, Any]] = []
        show = self._json_value
        for lo, hi in count:
            low, high = self.ci(lo, hi, level=level)
            rows.append({"query": f"count[{show(lo)}, {show(hi)}]", "estimate": float(self.count(lo, hi)),
                         "stderr": float(self.stderr(lo, hi)), "ci_low": float(low), "ci_high": float(high)})
        for x in cdf:
            low, high = self.cdf_ci(x, level=level)
            rows.append({"query": f"cdf({show(x)})", "estimate": float(self.cdf(x)),
                         "stderr": float(self.cdf_stderr(x)), "ci_low": float(low), "ci_high": float(high)})
        if len(quantile):
            res = self.quantiles(np.asarray(quantile, dtype=np.float64), level)
            for qv, v, a, b in zip(res.q, res.values, res.ci_low, res.ci_high):
                rows.append({"query": f"quantile({qv:g})", "estimate": show(v), "stderr": None,
                             "ci_low": show(a), "ci_high": show(b)})
        if total or not rows:
            low, high = self.total_ci(level=level)
            rows.append({"query": "total", "estimate": self.total(), "stderr": self.total_stderr(),
                         "ci_low": low, "ci_high": high})
        return Answers(rows=rows, level=level)

    def _json_value(self, v: Any) -> Any:
        """A domain value as a JSON-ready number (dates: ISO text, as in the release file)."""
        dom = self.domain
        if dom.kind == "datetime":
            return dom.format_value(int(np.asarray(v).astype("datetime64[ns]").astype(np.int64)))
        return float(v) if dom.kind == "float" else int(v)

    def to_frame(self, level: float = 0.95) -> Any:
        """One row per bucket of the domain: bucket_low, bucket_high, estimate, stderr, ci_low,
        ci_high. bucket_low is the bucket's smallest value; bucket_high its largest value for
        integers, its right edge (exclusive; the upper bound for the last bucket) for floats and dates."""
        dom = self.domain
        a = np.arange(dom.size)
        empty = np.zeros(dom.size, dtype=bool)
        est = self._counts(a, a, empty)
        s, m = self._spread(a, a, empty, level)
        low = dom.leaf_start(a)
        if dom.kind == "float":
            high: Any = np.minimum(low + dom.width, dom.upper)
        elif dom.kind == "datetime":
            end = np.minimum(np.int64(dom.lower) + (a + 1) * np.int64(dom.width), np.int64(dom.upper))
            high = end.astype("datetime64[ns]")
        else:
            high = np.minimum(np.int64(dom.lower) + (a + 1) * np.int64(dom.width) - 1, np.int64(dom.upper))
        return result_frame({"bucket_low": low, "bucket_high": high}, estimate=est, stderr=s,
                            ci=(est - m * s, est + m * s), level=level)

    def histogram(self, edges: Any, level: float = 0.95) -> HistogramResult:
        """Counts of the bins [edges[i], edges[i+1]) (last bin closed), at bucket resolution, with
        standard errors and ``level`` confidence intervals (as :meth:`ci`)."""
        if isinstance(edges, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in edges):
            raise InvalidParameterError("histogram edges must be values of the domain, not True/False")
        try:
            e = np.asarray(edges)
        except (TypeError, ValueError) as exc:
            raise InvalidParameterError(f"histogram edges must be a flat list of values: {exc}") from exc
        if e.ndim != 1 or e.size < 2:
            raise InvalidParameterError("histogram needs at least two edges")
        q = self.domain._query_array(e)
        if np.any(np.diff(q) <= 0):
            raise InvalidParameterError("histogram edges must be strictly increasing")
        idx = np.asarray(self.domain.leaf_of(e))
        D = self.domain.size
        starts = np.clip(idx[:-1], 0, D)
        ends = np.clip(np.concatenate([idx[1:-1] - 1, [idx[-1]]]), -1, D - 1)
        empty = starts > ends
        a = np.where(empty, 0, starts)
        b = np.where(empty, 0, ends)
        counts = self._counts(a, b, empty)
        s, m = self._spread(a, b, empty, level)
        return HistogramResult(edges=e, counts=counts, stderr=s, ci_low=counts - m * s, ci_high=counts + m * s,
                               level=level)

    # ------------------------------------------------------------------ persistence
    def to_document(self) -> dict[str, Any]:
        """The parts of the release file (see :mod:`dptree.io.release_file`)."""
        dom = self.domain
        if dom.kind == "datetime":
            lower: Any = str(np.datetime64(int(dom.lower), "ns"))
            upper: Any = str(np.datetime64(int(dom.upper), "ns"))
        else:
            lower, upper = dom.lower, dom.upper
        params = {
            "domain": {"kind": dom.kind, "lower": lower, "upper": upper, "width": dom.width, "size": dom.size},
            "branching": self.layout.branching,
            "fanouts": list(self.layout.fanouts),
            "noise": self.plan.noise,
            "neighbors": self.plan.neighbors,
            "max_contributions": self.plan.max_contributions,
            "levels": self.plan.levels,
            "gaussian_calibration": "exact"
            if "implied_rho" in self.plan.statement.get("calibration", {})
            else "zcdp",
            "budget": {
                "epsilon": self.plan.budget.epsilon,
                "delta": self.plan.budget.delta,
                "rho": self.plan.budget.rho,
            },
        }
        meas = {
            "levels": [None if m is None else [int(v) for v in m] for m in self.measurements],
            "noise_parameters": [
                None if p is None else f"{p.numerator}/{p.denominator}" for p in self.plan.noise_parameters
            ],
        }
        return {"privacy": self.privacy, "parameters": params, "measurements": meas, "metadata": self.metadata}

    def save(self, path: Any, *, allow_nonprivate: bool = False, force: bool = False) -> None:
        """Write the release as JSON (format in :mod:`dptree.io.release_file`). Seeded releases need
        ``allow_nonprivate=True``. An existing file that is not a range-tree release is
        overwritten only with ``force=True``; a link, pipe or device never."""
        doc = self.to_document()
        write_release(path, "range_tree", allow_nonprivate=allow_nonprivate, force=force, **doc)

    def summary(self) -> str:
        dom = self.domain
        spent = self.privacy["budget_spent"]
        budget = ", ".join(f"{k}={v:g}" for k, v in spent.items())
        col = f"of {self.column!r} " if self.column else ""
        return (
            f"RangeTree {col}over [{dom.format_value(dom.lower)}, {dom.format_value(dom.upper)}] ({dom.size} buckets), "
            f"{self.layout.branching}-ary, {self.plan.noise} noise, {self.plan.neighbors} neighbours, "
            f"{budget}{'' if self.private else ', NOT PRIVATE (test seed)'}"
        )

    def __repr__(self) -> str:
        return f"<{self.summary()}>"


def _from_document(doc: dict[str, Any]) -> RangeTree:
    """Rebuild a release from a validated document, re-deriving and checking its noise."""
    params = doc["parameters"]
    dom = params["domain"]
    if dom["kind"] == "datetime":
        lower: Any = np.datetime64(dom["lower"])
        upper: Any = np.datetime64(dom["upper"])
        width: Any = np.timedelta64(int(dom["width"]), "ns")
    else:
        lower, upper, width = dom["lower"], dom["upper"], dom["width"]
    budget = params["budget"]
    plan = plan_range_tree(
        lower=lower,
        upper=upper,
        width=width,
        branching=params["branching"],
        epsilon=budget["epsilon"],
        delta=budget["delta"] or 0.0,
        rho=budget["rho"],
        noise=params["noise"],
        neighbors=params["neighbors"],
        max_contributions=params["max_contributions"],
        levels=params["levels"],
        gaussian_calibration=params.get("gaussian_calibration", "zcdp"),  # files before issue 16: zCDP
    )
    if plan.domain.size != dom["size"] or list(plan.layout.fanouts) != list(params["fanouts"]):
        raise ReleaseFileError("release file: domain or tree layout does not match its parameters")
    meas = doc["measurements"]
    stated = meas["noise_parameters"]
    expected = [None if p is None else f"{p.numerator}/{p.denominator}" for p in plan.noise_parameters]
    if stated != expected:
        raise ReleaseFileError("release file: noise parameters do not match the stated budget (tampered?)")
    levels = meas["levels"]
    if not isinstance(levels, list) or len(levels) != plan.layout.depth + 1:
        raise ReleaseFileError("release file: wrong number of levels")
    measurements: list[np.ndarray | None] = []
    for j, (vals, size) in enumerate(zip(levels, plan.layout.level_sizes)):
        should_exist = plan.noise_parameters[j] is not None or (j == 0 and plan.root_exact)
        if vals is None:
            if should_exist:
                raise ReleaseFileError(f"release file: level {j} measurements are missing")
            measurements.append(None)
            continue
        if not should_exist:
            raise ReleaseFileError(f"release file: level {j} should not be measured")
        if (
            not isinstance(vals, list)
            or len(vals) != size
            or not all(isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2**62 for v in vals)
        ):
            raise ReleaseFileError(f"release file: level {j} must hold {size} integers")
        measurements.append(np.asarray(vals, dtype=np.int64))
    privacy = doc["privacy"]
    if not isinstance(privacy.get("private"), bool):
        raise ReleaseFileError("release file: privacy statement lacks the 'private' flag")
    restated = {k: v for k, v in privacy.items() if k != "private"}
    derived = {k: v for k, v in plan.statement.items() if k not in ("private", "library")}
    if {k: v for k, v in restated.items() if k != "library"} != derived:
        raise ReleaseFileError("release file: privacy statement does not match its parameters (tampered?)")
    if plan.root_exact and measurements[0] is not None and measurements[0][0] < 0:
        raise ReleaseFileError("release file: the public total cannot be negative")
    return RangeTree(plan=plan, measurements=measurements, statement=privacy,
                     metadata=check_metadata(doc.get("metadata")))


register_kind("range_tree", _from_document)
