"""Private counts for every node of a public hierarchy (seed 001: Ghazi, Kamath, Kumar,
Manurangsi, Wu, "On Differentially Private Counting on Trees", ``001_4ad1135f2c911f1b.txt``).

:func:`hierarchy_counts` releases a noisy count of every node of a :class:`Hierarchy`
(geography country -> state -> city, product categories) and returns a
:class:`HierarchyRelease`; queries on it (``count``, ``stderr``, ``ci``, ``to_frame``) are
post-processing and cost no budget.

Methods (``method=``):

* ``"laplace"`` -- Corollary 2.7's pure-DP baseline (Lemma 2.5): exact discrete Laplace noise of
  scale k d / eps on every node; L1 sensitivity of the node counts is d (depth, root included),
  k d for users with at most k records. (eps, 0)-DP.
* ``"gaussian"`` -- Corollary 2.7's approximate-DP baseline (Lemma 2.6, with the zCDP analysis of
  the discrete Gaussian instead of the classical constant): L2 sensitivity sqrt(d) (k sqrt(d));
  rho = the largest zCDP parameter implying (eps, delta) (CKS 2020, Cor. 13), sigma^2 = D2^2/(2 rho).
* ``"multiplicative"`` -- Theorem 4.1's algorithm (see ``dptree.hierarchy.multiplicative``): alpha-mRMSE
  O(log(d/delta)/eps / alpha^3) instead of Theta(sqrt(d)); (eps, delta)-DP for every tau_min.

``consistent=True`` (Laplace/Gaussian): generalised least squares over the whole tree (Honaker's
two passes, :func:`dptree.estimation.least_squares.consistent_estimates`), children summing to parents, with
the exact variance of every node (:func:`dptree.estimation.least_squares.node_variances`).
``nonnegative``/``integer``: top-down simplex projection of each family and sum-preserving
rounding (:mod:`dptree.estimation.postprocess`): post-processing that adds bias (docs/hierarchy.md).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any, ClassVar, Literal, Mapping, Sequence

import numpy as np

from dptree.errors import DataError, InvalidParameterError, ReleaseFileError, TotalTooLargeError
from dptree.estimation.intervals import check_level, clip_to_counts, normal_multiplier
from dptree.estimation.least_squares import consistent_estimates, node_variances
from dptree.estimation.postprocess import project_families, round_families
from dptree.hierarchy.counting import (  # noqa: F401  (re-exported)
    _FLOAT_EXACT,
    MAX_TOTAL,
    _too_large,
    leaf_counts,
    node_weights,
)
from dptree.hierarchy.multiplicative import Tree, mrmse_wrapper, theorem_4_1_tau_min
from dptree.hierarchy.structure import Hierarchy
from dptree.io import release_file as _serialize
from dptree.io.release_file import FORMAT as _ENVELOPE
from dptree.io.release_file import VERSION as _ENVELOPE_VERSION
from dptree.io.release_file import (
    check_metadata,
    creation_metadata,
    read_release,
    register_kind,
    validate_document,
    write_release,
)
from dptree.noise import (
    RngLike,
    discrete_gaussian,
    discrete_gaussian_variance,
    discrete_laplace,
    discrete_laplace_variance,
    gaussian_sigma2_used,
    laplace_scale_used,
    make_source,
    truncated_laplace_bound,
)
from dptree.privacy.boundary import Boundary
from dptree.privacy.budget import (
    check_delta,
    check_epsilon,
    check_release_budget,
    discrete_gaussian_delta,
    discrete_gaussian_exact_feasible,
    discrete_gaussian_sigma2_for,
    zcdp_rho_for,
)

__all__ = [
    "Hierarchy",
    "HierarchyRelease",
    "hierarchy_counts",
    "leaf_counts",
    "node_weights",
    "load_hierarchy_release",
    "MAX_TOTAL",
    "TotalTooLargeError",
]

KIND = "hierarchy"
METHODS = ("laplace", "gaussian", "multiplicative")

#: The privacy boundary of a hierarchy release, declared in one place. Every field of
#: ``HierarchyRelease.to_dict()`` is a caller-supplied public parameter (the hierarchy, epsilon,
#: delta, method, alpha, tau_min, k, the ``unknown`` policy, ...) or one of these noisy
#: measurements, or post-processing of them (estimates, variances, counts, windows: recomputed
#: from the measurements on load). ``rounds`` (Estimation's ell) is a function of the noisy M.
#: tests/unit/hierarchy/test_hierarchy_boundary.py releases on neighbouring datasets with one seed and checks
#: that every other field is identical.
NOISY_MEASUREMENTS: dict[str, tuple[str, ...]] = {
    "laplace": ("y",),
    "gaussian": ("y",),
    "multiplicative": ("estimation", "window_center", "M", "rounds"),
}


def _library_version() -> str:
    try:
        from dptree import __version__

        return str(__version__)
    except Exception:
        pass
    try:
        from importlib.metadata import version

        return version("dptree")
    except Exception:
        return "0.1.0"


# ============================================================================ the release


def _split(flat: np.ndarray, sizes: Sequence[int]) -> list[np.ndarray]:
    out, s = [], 0
    for k in sizes:
        out.append(flat[s : s + k])
        s += k
    return out


@dataclass
class HierarchyRelease:
    """A private release of counts for every node of a public :class:`Hierarchy`.

    Everything here is public: the noisy measurements, the parameters and the privacy
    statement; ``count``/``stderr``/``ci``/``to_frame`` are post-processing.
    """

    #: the privacy boundary (:mod:`dptree.privacy.boundary`): the measurements listed in
    #: ``NOISY_MEASUREMENTS`` are noisy; the noise variance and the window are public
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("format", "version", "kind", "privacy.*", "parameters.*", "measurements.noise_variance",
                "measurements.window", "metadata", "metadata.*"),
        noisy=tuple(sorted({f"measurements.{f}*" for fs in NOISY_MEASUREMENTS.values() for f in fs})),
    )

    hierarchy: Hierarchy
    parameters: dict[str, Any]
    privacy: dict[str, Any]
    measurements: dict[str, Any]
    counts: np.ndarray = field(repr=False)
    estimates: np.ndarray = field(repr=False)
    variances: np.ndarray = field(repr=False)
    lower_bounds: np.ndarray | None = field(default=None, repr=False)
    upper_bounds: np.ndarray | None = field(default=None, repr=False)
    #: public: the caller's level columns, input path and the creation time (and a ledger charge)
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def column(self) -> str | None:
        """The released level columns, comma-separated, when known (public)."""
        col = self.metadata.get("column")
        return None if col is None else str(col)

    # ------------------------------------------------------------------ queries

    @property
    def private(self) -> bool:
        return bool(self.privacy.get("private", False))

    @property
    def method(self) -> str:
        return str(self.parameters["method"])

    def _gid(self, path: str | Sequence[Any]) -> int:
        return self.hierarchy.node_id(path)

    def count(self, path: str | Sequence[Any] = "") -> float:
        """The released count of the node named by ``path`` ('US/CA', ('US', 'CA'); '' = total)."""
        v = float(self.counts[self._gid(path)])
        return float(int(round(v))) if self.parameters.get("integer") else v

    def stderr(self, path: str | Sequence[Any] = "") -> float:
        """Standard error of the (unbiased, least-squares or raw) estimate of the node.

        Exact (the variance of the discrete noise propagated through GLS, DESIGN section 5). With
        ``nonnegative``/``integer`` it describes the estimate before projection. NaN for the
        multiplicative method, which has no variance model (use :meth:`ci`).
        """
        return float(math.sqrt(self.variances[self._gid(path)]))

    def ci(self, path: str | Sequence[Any] = "", level: float = 0.95) -> tuple[float, float]:
        """A confidence interval for the true count of the node.

        Gaussian noise: estimate +- z sigma (normal quantile). Laplace noise: estimate +- the
        quantile of a Laplace law with the same variance (exact for a single raw measurement up
        to lattice rounding; conservative for least-squares combinations). Multiplicative: the
        Lemma 3.3 window [w'' - B, w'' + B], which contains the true count with probability 1
        (``level`` is ignored). The lower end is clipped at 0 (true counts are >= 0).
        """
        level = check_level(level)
        g = self._gid(path)
        if self.lower_bounds is not None and self.upper_bounds is not None:
            lo, hi = clip_to_counts(self.lower_bounds[g], self.upper_bounds[g])
        else:
            half = float(self._half_width(np.array([self.variances[g]]), level)[0])
            est = float(self.estimates[g])
            lo, hi = clip_to_counts(est - half, est + half)
        return float(lo), float(hi)

    def _half_width(self, var: np.ndarray, level: float) -> np.ndarray:
        sd = np.sqrt(var)
        if self.parameters["method"] == "laplace":
            return sd / math.sqrt(2.0) * -math.log1p(-level)
        return sd * normal_multiplier(level)

    def to_frame(self, level: float = 0.95) -> Any:
        """One row per node: path, depth (root 0), leaf flag, count (the released, possibly
        post-processed, count), estimate, stderr, ci_low, ci_high."""
        from dptree.io.frames import result_frame

        h = self.hierarchy
        depth = np.repeat(np.arange(h.depth), h.sizes)
        if self.lower_bounds is not None and self.upper_bounds is not None:
            lo, hi = clip_to_counts(self.lower_bounds, self.upper_bounds.astype(np.float64))
        else:
            half = self._half_width(self.variances, check_level(level))
            lo, hi = clip_to_counts(self.estimates - half, self.estimates + half)
        counts = self.counts.astype(np.int64) if self.parameters.get("integer") else self.counts
        return result_frame(
            {"path": h.all_paths(), "depth": depth, "leaf": np.concatenate(h.is_leaf), "count": counts},
            estimate=self.estimates, stderr=np.sqrt(self.variances), ci=(lo, hi), level=level,
        )

    # ------------------------------------------------------------------ serialisation

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict in the shared release format (:mod:`dptree.io.release_file`, kind
        "hierarchy"): parameters (including the public hierarchy), the privacy statement
        {mechanism, neighbours, epsilon, delta, sensitivity, library_version, private, ...} and the
        noisy measurements. Estimates are not stored: :meth:`from_dict` recomputes them from the
        measurements (post-processing), so a file cannot carry estimates that disagree with them.
        """
        params = dict(self.parameters)
        params["hierarchy"] = self.hierarchy.to_dict()
        return {
            "format": _ENVELOPE,
            "version": _ENVELOPE_VERSION,
            "kind": KIND,
            "privacy": _jsonable(self.privacy),
            "parameters": _jsonable(params),
            "measurements": _jsonable(self.measurements),
            "metadata": _jsonable(self.metadata),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "HierarchyRelease":
        """Rebuild a release from :meth:`to_dict` output (or a loaded file), validating it: the
        envelope (and checksum, if present), the hierarchy, the measurements' shapes and types, and
        the noise parameters re-derived from the stated privacy parameters."""
        if not isinstance(d, Mapping):
            raise ReleaseFileError("a hierarchy release must be a JSON object")
        doc = dict(d)
        if "checksum" in doc:
            validate_document(doc)
        if doc.get("format") != _ENVELOPE or doc.get("version") != _ENVELOPE_VERSION:
            raise ReleaseFileError(
                f"not a dptree release of a supported version (format={doc.get('format')!r}, "
                f"version={doc.get('version')!r})"
            )
        if doc.get("kind") != KIND:
            raise ReleaseFileError(f"not a hierarchy release (kind={doc.get('kind')!r})")
        return _from_document(doc)

    def save(self, path: str | os.PathLike[str], *, allow_nonprivate: bool = False, force: bool = False) -> None:
        """Write the release with the shared writer (:func:`dptree.io.release_file.write_release`:
        JSON, checksum, atomic rename). A release made with a seeded ``rng`` is not private and
        is refused unless ``allow_nonprivate=True`` (DESIGN section 3)."""
        doc = self.to_dict()
        write_release(
            path,
            KIND,
            privacy=doc["privacy"],
            parameters=doc["parameters"],
            measurements=doc["measurements"],
            metadata=doc["metadata"],
            allow_nonprivate=allow_nonprivate,
            force=force,
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "HierarchyRelease":
        return load_hierarchy_release(path)

    def summary(self) -> str:
        p = self.parameters
        extra = f", alpha={p['alpha']}" if p.get("alpha") is not None else ""
        return (
            f"Hierarchy release: {self.hierarchy.n_nodes} nodes, depth {self.hierarchy.depth}, "
            f"{p['method']} (epsilon={p['epsilon']:g}, delta={p['delta']:g}{extra}), "
            f"{self.privacy['neighbours']}{'' if self.private else ', NOT PRIVATE (test seed)'}"
        )

    def __repr__(self) -> str:
        p = self.parameters
        return (
            f"HierarchyRelease(method={p['method']!r}, epsilon={p['epsilon']}, delta={p['delta']}, "
            f"nodes={self.hierarchy.n_nodes}, depth={self.hierarchy.depth}, private={self.private})"
        )


def load_hierarchy_release(path: str | os.PathLike[str]) -> HierarchyRelease:
    """Read a release written by :meth:`HierarchyRelease.save` (validated; also ``dptree.load``)."""
    doc = read_release(path)
    if doc.get("kind") != KIND:
        raise ReleaseFileError(f"{path}: not a hierarchy release (kind={doc.get('kind')!r})")
    return _from_document(doc)


def _from_document(doc: dict[str, Any]) -> HierarchyRelease:
    """Loader registered with :mod:`dptree.io.release_file` for kind "hierarchy"."""
    try:
        params = dict(doc["parameters"])
        h = Hierarchy.from_dict(params.pop("hierarchy"))
        privacy = dict(doc["privacy"])
        meas = dict(doc["measurements"])
    except ReleaseFileError:
        raise
    except Exception as exc:
        raise ReleaseFileError(f"malformed hierarchy release: {exc}") from exc
    for key in ("mechanism", "neighbours", "epsilon", "delta", "sensitivity", "library_version", "private"):
        if key not in privacy:
            raise ReleaseFileError(f"hierarchy release lacks privacy field {key!r}")
    if not isinstance(privacy["private"], bool):
        raise ReleaseFileError("hierarchy release: the 'private' flag must be true or false")
    if params.get("method") not in METHODS:
        raise ReleaseFileError(f"unknown method {params.get('method')!r} in release")
    _check_noise(h, params, privacy, meas)
    rel = _assemble(h, params, privacy, meas)
    rel.metadata = check_metadata(doc.get("metadata"))
    return rel


def _check_noise(h: Hierarchy, params: dict[str, Any], privacy: dict[str, Any], meas: dict[str, Any]) -> None:
    """Re-derive the noise parameters from the stated budget; reject a file where they disagree."""
    try:
        eps = check_epsilon(params["epsilon"])
        method = params["method"]
        dlt = check_delta(params["delta"], required=method != "laplace")
        k = int(params["max_contributions"])
        d = h.depth
        if int(params["depth"]) != d or k < 1:
            raise ReleaseFileError("hierarchy release: depth or max_contributions does not match the hierarchy")
        if float(privacy["epsilon"]) != eps or float(privacy["delta"]) != (dlt if method != "laplace" else 0.0):
            raise ReleaseFileError("hierarchy release: privacy statement disagrees with the parameters (tampered?)")
        n = h.n_nodes
        if method in ("laplace", "gaussian"):
            if method == "laplace":
                expected = _lap_var(_l1_sensitivity(d, k) / eps)
            else:
                expected = _gauss_var(_gauss_sigma2(d, k, eps, dlt, _calibration_of(privacy))[0])
            if not math.isclose(float(meas["noise_variance"]), expected, rel_tol=1e-9):
                raise ReleaseFileError("hierarchy release: noise variance does not match the stated budget (tampered?)")
            if method == "laplace":
                stated_ok = privacy["sensitivity"].get("l1") == _l1_sensitivity(d, k) and math.isclose(
                    float(privacy["noise"]["scale"]),
                    float(laplace_scale_used(_l1_sensitivity(d, k) / eps)),
                    rel_tol=1e-12,
                )
            else:
                s2 = _gauss_sigma2(d, k, eps, dlt, _calibration_of(privacy))[0]
                stated_ok = privacy["sensitivity"].get("l2_squared") == _l2sq_sensitivity(d, k) and math.isclose(
                    float(privacy["noise"]["sigma2"]), float(gaussian_sigma2_used(s2)), rel_tol=1e-12
                )
            if not stated_ok:
                raise ReleaseFileError("hierarchy release: privacy statement does not match its parameters (tampered?)")
            y = meas["y"]
            if (
                not isinstance(y, list)
                or len(y) != n
                or not all(isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2**62 for v in y)
            ):
                raise ReleaseFileError(f"hierarchy release: measurements must be {n} integers")
        else:
            alpha = float(params["alpha"])
            if not 0 < alpha < 1 or not float(params["tau_min"]) > 0:
                raise ReleaseFileError("hierarchy release: alpha or tau_min out of range")
            eps_run, dlt_run = eps, dlt
            if k > 1:
                eps_run, dlt_run = eps / k, dlt * math.expm1(eps / k) / math.expm1(eps)
            if int(meas["window"]) != truncated_laplace_bound(eps_run / (2.0 * d), dlt_run / (2.0 * d)):
                raise ReleaseFileError("hierarchy release: window does not match the stated budget (tampered?)")
            c = meas["window_center"]
            if (
                not isinstance(c, list)
                or len(c) != n
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in c)
            ):
                raise ReleaseFileError(f"hierarchy release: window centres must be {n} integers")
    except ReleaseFileError:
        raise
    except (KeyError, TypeError, ValueError, InvalidParameterError) as exc:
        raise ReleaseFileError(f"malformed hierarchy release parameters: {exc}") from exc


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return _jsonable(v.tolist())
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        if math.isnan(f):
            return None
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f
    if isinstance(v, (np.bool_,)):
        return bool(v)
    return v


def _assemble(h: Hierarchy, params: dict[str, Any], privacy: dict[str, Any], meas: dict[str, Any]) -> HierarchyRelease:
    """Post-processing: measurements -> estimates, variances and final counts."""
    sizes = h.sizes
    n = h.n_nodes
    method = params["method"]
    try:
        if method in ("laplace", "gaussian"):
            y = np.asarray(meas["y"], dtype=np.float64)
            var = float(meas["noise_variance"])
            if y.shape != (n,) or not np.isfinite(y).all() or not var > 0:
                raise ValueError("measurements do not match the hierarchy")
            lo = hi = None
            if params.get("consistent", True):
                ys = _split(y, sizes)
                vs = [np.full(k, var) for k in sizes]
                est = consistent_estimates(ys, vs, h.parents)
                x = est.x
                variances = np.concatenate(node_variances(vs, h.parents, est.V))
            else:
                x = _split(y, sizes)
                variances = np.full(n, var)
            estimates = np.concatenate(x)
            final = [a.copy() for a in x]
            if params.get("nonnegative"):
                final = project_families(final, h.parents)
                if params.get("integer"):
                    final = round_families(final, h.parents)
            elif params.get("integer") and params.get("consistent", True):
                final = round_families(final, h.parents)
            counts = np.concatenate(final)
        else:
            center = np.asarray(meas["window_center"], dtype=np.float64)
            west = np.asarray(meas["estimation"], dtype=np.float64)
            B = int(meas["window"])
            if center.shape != (n,) or west.shape != (n,) or B < 0:
                raise ValueError("measurements do not match the hierarchy")
            counts = np.clip(west, center - B, center + B)
            if params.get("nonnegative"):
                counts = np.maximum(counts, 0.0)
            if params.get("integer"):  # refused by hierarchy_counts since issue 16; files written before
                counts = np.rint(counts)
            estimates = counts.copy()
            variances = np.full(n, np.nan)
            lo, hi = center - B, center + B
    except (KeyError, TypeError, ValueError) as exc:
        raise ReleaseFileError(f"malformed hierarchy release measurements: {exc}") from exc
    return HierarchyRelease(
        hierarchy=h,
        parameters=params,
        privacy=privacy,
        measurements=meas,
        counts=counts,
        estimates=estimates,
        variances=variances,
        lower_bounds=lo,
        upper_bounds=hi,
    )


# ============================================================================ the mechanism


def hierarchy_counts(
    data: Any,
    hierarchy: Hierarchy,
    *,
    epsilon: float,
    delta: float = 0.0,
    method: Literal["laplace", "gaussian", "multiplicative"] = "laplace",
    alpha: float | None = None,
    consistent: bool = True,
    nonnegative: bool = False,
    integer: bool = False,
    max_contributions: int = 1,
    tau_min: float | None = None,
    levels: Sequence[str] | None = None,
    weight: str | None = None,
    unknown: Literal["error", "drop", "other"] = "error",
    rng: RngLike = None,
) -> HierarchyRelease:
    """Release a differentially private count for every node of ``hierarchy`` (seed 001).

    Released: one noisy measurement per node (Laplace/Gaussian), or Theorem 4.1's estimates
    and windows (multiplicative). Neighbours: add/remove one record (``max_contributions=1``)
    or one user with at most ``max_contributions`` records; dptree cannot see users here, so
    the caller must have bounded contributions before. With a ``weight`` column each unit of
    weight is one record (seed 001: x in N^leaves, neighbours at L1 distance 1).

    * ``laplace``: (epsilon, 0)-DP; discrete Laplace of scale k d / epsilon per node
      (Corollary 2.7 / Lemma 2.5; L1 sensitivity k d, d = depth of the hierarchy).
    * ``gaussian``: (epsilon, delta)-DP, delta > 0; discrete Gaussian. With k = 1, sigma^2 is the
      smallest (sampler-grid) value whose exact discrete-Gaussian delta(epsilon) over the d unit
      shifts of a root-leaf path is <= delta (:func:`dptree.privacy.budget.discrete_gaussian_sigma2_for`;
      sigma = 4.22 sqrt(d) at (1, 1e-6), against 4.53 sqrt(d) through zCDP); with k > 1,
      sigma^2 = k^2 d / (2 rho), rho = zcdp_rho_for(epsilon, delta). The statement's
      ``calibration`` says which.
    * ``multiplicative``: (epsilon, delta)-DP, delta > 0, ``alpha`` in (0, 1) required; the
      algorithm of Theorem 4.1 (Lemma 3.3 wrapper around Estimation, Algorithm 4). ``tau_min``
      defaults to the bound of Corollary 4.7 used in Theorem 4.1's proof; a smaller value may
      be passed: privacy does not depend on tau_min, only the accuracy guarantee does. For
      k > 1 the algorithm runs at (epsilon/k, delta (e^(epsilon/k)-1)/(e^epsilon-1)) and group
      privacy (Fact 2.2) gives (epsilon, delta) for users with k records. ``consistent`` does
      not apply; ``nonnegative`` clips at 0; ``integer=True`` is refused (rounding node by node
      would not keep children summing to parents, and these estimates are not consistent anyway).

    ``consistent`` (Laplace/Gaussian): least-squares estimates for any tree shape, children
    summing to parents, exact variance per node. ``nonnegative``/``integer``: top-down simplex
    projection and sum-preserving rounding (biased post-processing; docs/hierarchy.md).
    ``rng``: ``None`` (default) uses the OS CSPRNG; a seed makes the release reproducible and
    marks it not private. ``unknown``: the declared policy for records whose path is not a leaf
    of the public hierarchy: "error" (default; the message never says how many or which),
    "drop" or "other" (see :func:`leaf_counts`).

    Weights are summed exactly in integers (numpy, pandas, Spark and the CLI's DuckDB reader);
    missing, negative, non-integer or non-finite weights are refused, and a total of
    :data:`MAX_TOTAL` (2^61) or more raises :class:`TotalTooLargeError`. The guarantee covers
    datasets below that public limit; no error message contains a count, a total or a value.
    """
    eps = check_release_budget(epsilon)
    if method not in METHODS:
        raise InvalidParameterError(f"method must be one of {METHODS}, got {method!r}")
    needs_delta = method in ("gaussian", "multiplicative")
    dlt = check_delta(delta, required=needs_delta)
    if alpha is not None:
        if (
            isinstance(alpha, bool)
            or not isinstance(alpha, (int, float, np.floating))
            or not (0.0 < float(alpha) < 1.0)
        ):
            raise InvalidParameterError(
                f"alpha must be in (0, 1), got {alpha!r}; it is the multiplicative error allowance of "
                "seed 001's alpha-mRMSE (e.g. alpha=0.1)"
            )
        alpha = float(alpha)
    if method == "multiplicative" and alpha is None:
        raise InvalidParameterError("method='multiplicative' needs alpha in (0, 1), e.g. alpha=0.5")
    if tau_min is not None:
        if method != "multiplicative":
            raise InvalidParameterError("tau_min only applies to method='multiplicative'")
        if (
            isinstance(tau_min, bool)
            or not isinstance(tau_min, (int, float, np.floating))
            or not (math.isfinite(float(tau_min)) and float(tau_min) > 0)
        ):
            raise InvalidParameterError(f"tau_min must be a finite number > 0, got {tau_min!r}")
        tau_min = float(tau_min)
    if (
        isinstance(max_contributions, bool)
        or not isinstance(max_contributions, (int, np.integer))
        or max_contributions < 1
    ):
        raise InvalidParameterError(f"max_contributions must be an integer >= 1, got {max_contributions!r}")
    k = int(max_contributions)
    for name, flag in (("consistent", consistent), ("nonnegative", nonnegative), ("integer", integer)):
        if not isinstance(flag, (bool, np.bool_)):
            raise InvalidParameterError(f"{name} must be True or False, got {flag!r}")
    if integer and method == "multiplicative":
        # rounding the multiplicative estimates node by node breaks children-sum-to-parent, and
        # those estimates are not consistent to begin with (no family projection applies to them)
        raise InvalidParameterError(
            "integer=True does not apply to method='multiplicative': its per-node estimates are not "
            "consistent (children need not sum to parents), so there is no sum-preserving rounding to "
            "apply; round them yourself, or use method='laplace'/'gaussian' with integer=True"
        )
    if not isinstance(hierarchy, Hierarchy):
        raise InvalidParameterError(f"hierarchy must be a dptree.Hierarchy, got {type(hierarchy).__name__}")
    h = hierarchy
    src = make_source(rng)
    created = _serialize._utc_now()  # before the data is read: no timing of the reading
    x = leaf_counts(data, h, levels=levels, weight=weight, unknown=unknown)
    w = node_weights(x, h.parents)
    d = h.depth
    neighbours = (
        "add/remove one record"
        if k == 1
        else f"add/remove one user contributing at most {k} records (bounded by the caller)"
    )
    params: dict[str, Any] = {
        "method": method,
        "epsilon": eps,
        "delta": dlt if needs_delta else 0.0,
        "alpha": alpha,
        "consistent": bool(consistent) if method != "multiplicative" else False,
        "nonnegative": bool(nonnegative),
        "integer": bool(integer),
        "max_contributions": k,
        "depth": d,
        "levels": list(h.levels if levels is None else levels),
        "unknown": unknown,
    }
    privacy: dict[str, Any] = {
        "neighbours": neighbours,
        "epsilon": eps,
        "library_version": _library_version(),
        "private": bool(src.private),
        "seed": "001_4ad1135f2c911f1b.txt (Ghazi, Kamath, Kumar, Manurangsi, Wu)",
    }
    meas, p_upd, priv_upd = _measure(src, h, w, method, eps, dlt, k, alpha, tau_min)
    params.update(p_upd)
    privacy.update(priv_upd)
    rel = _assemble(h, params, privacy, meas)
    rel.metadata = creation_metadata(column=params["levels"], source=data if isinstance(data, (str, os.PathLike))
                                     else None, created=created)
    return rel


@lru_cache(maxsize=256)
def _rho_for(eps: float, dlt: float) -> float:
    return zcdp_rho_for(eps, dlt)


def _calibration_of(privacy: dict[str, Any]) -> str:
    """The Gaussian calibration a release states (files written before issue 16: zCDP)."""
    cal = privacy.get("calibration")
    return "exact" if isinstance(cal, dict) and cal.get("kind") == "exact" else "zcdp"


def _gauss_sigma2(d: int, k: int, eps: float, dlt: float, calibration: str = "exact") -> tuple[Fraction, str]:
    """sigma^2 of the Gaussian baseline and the calibration used.

    ``exact`` (default) when one record per person (k = 1): a neighbour moves the d counts of one
    root-leaf path by exactly 1 (a shallower leaf: fewer counts, a marginal of the full path, so no
    larger delta); sigma^2 is the smallest grid value with the exact discrete-Gaussian
    delta(epsilon) <= delta over those d unit shifts (:func:`dptree.privacy.budget.discrete_gaussian_sigma2_for`).
    With k > 1 the shifts are not all equal (k records can spread over leaves) and the discrete
    Gaussian's delta is not a function of the L2 norm alone, so the zCDP calibration
    sigma^2 = k^2 d / (2 zcdp_rho_for(epsilon, delta)) (sound for every shift of that L2 norm) is used.
    """
    if calibration == "exact" and k == 1 and discrete_gaussian_exact_feasible(eps, dlt, d):
        return discrete_gaussian_sigma2_for(eps, dlt, d), "exact"
    return gaussian_sigma2_used(_l2sq_sensitivity(d, k) / (2.0 * _rho_for(eps, dlt))), "zcdp"


@lru_cache(maxsize=256)
def _gauss_var(sigma2: float) -> float:
    return discrete_gaussian_variance(sigma2)


@lru_cache(maxsize=256)
def _lap_var(scale: float) -> float:
    return discrete_laplace_variance(scale)


def _l1_sensitivity(depth: int, k: int) -> int:
    """L1 sensitivity of all node counts (Corollary 2.7): one record changes the d counts on its
    leaf's path by 1; a user with k records changes each by at most k (brute-forced in tests)."""
    return k * depth


def _l2sq_sensitivity(depth: int, k: int) -> int:
    """Squared L2 sensitivity of all node counts: k^2 d (worst case: all k records on one leaf)."""
    return k * k * depth


def measurement_copies(
    data: Any,
    hierarchy: Hierarchy,
    *,
    method: str,
    epsilon: float,
    delta: float,
    copies: int,
    rng: RngLike,
    levels: Sequence[str] | None = None,
    weight: str | None = None,
    unknown: Literal["error", "drop", "other"] = "error",
) -> np.ndarray:
    """``copies`` independent measurement vectors of a Laplace/Gaussian release, for audits.

    Runs :func:`_measure` (the only data-touching step of :func:`hierarchy_counts`) once on the
    node counts stacked ``copies`` times; with ``copies = 1`` the draws equal those of
    ``hierarchy_counts(data, hierarchy, ..., rng=rng).measurements["y"]``.
    """
    import types

    x = leaf_counts(data, hierarchy, levels=levels, weight=weight, unknown=unknown)
    w = np.concatenate(node_weights(x, hierarchy.parents))
    stacked = types.SimpleNamespace(depth=hierarchy.depth, n_nodes=hierarchy.n_nodes * copies)
    meas, _, _ = _measure(
        make_source(rng), stacked, [np.tile(w, copies)], method, epsilon, delta, 1, None, None  # type: ignore[arg-type]
    )
    return np.asarray(meas["y"]).reshape(copies, hierarchy.n_nodes)


_Y_LIMIT = 2**62  # release files hold measurements |y| < 2^62 (_check_noise)


def _noisy(w: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """w + noise in exact int64 (w < MAX_TOTAL = 2^61 and |noise| < 2^62 cannot overflow). A
    noisy value outside the file range is refused from the noisy values alone (post-processing;
    probability below exp(-2^61 / scale))."""
    y = np.asarray(w, dtype=np.int64) + np.asarray(noise, dtype=np.int64)
    if y.size and int(np.abs(y).max()) >= _Y_LIMIT:  # pragma: no cover - needs a 2^61 noise draw
        raise DataError("a noisy count fell outside the range a release file can hold; run the release again")
    return y


def _measure(
    src: Any,
    h: Hierarchy,
    w: Sequence[np.ndarray],
    method: str,
    eps: float,
    dlt: float,
    k: int,
    alpha: float | None,
    tau_min: float | None,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The only step that touches the private counts w: returns (measurements, parameter and
    privacy-statement updates). Everything after it is post-processing."""
    d = h.depth
    params: dict[str, Any] = {}
    privacy: dict[str, Any] = {}
    if method == "laplace":
        scale = _l1_sensitivity(d, k) / eps
        noise = discrete_laplace(src, scale, h.n_nodes)
        var = _lap_var(scale)
        privacy.update(
            mechanism="discrete Laplace on every node (seed 001 Corollary 2.7 / Lemma 2.5)",
            delta=0.0,
            sensitivity={"l1": _l1_sensitivity(d, k), "depth": d},
            noise={"scale": float(laplace_scale_used(scale))},
        )
        meas = {"y": _noisy(np.concatenate(w), noise), "noise_variance": var}
    elif method == "gaussian":
        l2sq = _l2sq_sensitivity(d, k)
        sigma2, cal = _gauss_sigma2(d, k, eps, dlt)
        noise = discrete_gaussian(src, sigma2, h.n_nodes)
        var = _gauss_var(float(sigma2))
        rho = l2sq / (2.0 * float(sigma2))  # the zCDP this noise gives (<= the requested one for zcdp)
        if cal == "exact":
            calibration = {
                "kind": "exact",
                "method": "exact discrete Gaussian (epsilon, delta): delta(epsilon) of the privacy loss "
                "of d unit shifts, by exact convolution (Canonne, Kamath, Steinke 2020, Theorem 7, "
                "extended to d coordinates; dptree.privacy.budget.discrete_gaussian_delta)",
                "delta_at_epsilon": discrete_gaussian_delta(eps, float(sigma2), d),
            }
        else:
            calibration = {
                "kind": "zcdp",
                "method": "zCDP: sigma^2 = k^2 d / (2 rho), rho = zcdp_rho_for(epsilon, delta) (CKS 2020 "
                "Cor. 13); used with max_contributions > 1",
            }
        privacy.update(
            mechanism="discrete Gaussian on every node (seed 001 Corollary 2.7 / Lemma 2.6; Canonne, "
            "Kamath, Steinke 2020)",
            delta=dlt,
            rho=rho,
            calibration=calibration,
            sensitivity={"l2": math.sqrt(l2sq), "l2_squared": l2sq, "depth": d},
            noise={"sigma2": float(sigma2)},
        )
        meas = {"y": _noisy(np.concatenate(w), noise), "noise_variance": var}
    else:
        assert alpha is not None
        eps_run, dlt_run = eps, dlt
        if k > 1:  # group privacy, Fact 2.2
            eps_run = eps / k
            dlt_run = dlt * math.expm1(eps / k) / math.expm1(eps)
        default_tau = theorem_4_1_tau_min(alpha, eps_run, dlt_run, d)
        tm = default_tau if tau_min is None else tau_min
        res = mrmse_wrapper(
            src, Tree(h.parents, list(h.sizes)), w, alpha=alpha, epsilon=eps_run, delta=dlt_run, tau_min=tm
        )
        params.update(tau_min=tm, tau_min_default=default_tau, eta=res.info["eta"])
        privacy.update(
            mechanism="multiplicative-error algorithm of seed 001 Theorem 4.1 (Lemma 3.3 wrapper around "
            "Estimation, Algorithm 4; truncated discrete Laplace, Lemma 2.8; Sparse, Algorithm 3)",
            delta=dlt,
            sensitivity={"per_node_count": k, "depth": d, "group_privacy_k": k},
            run_at={"epsilon": eps_run, "delta": dlt_run},
            tau_min_note=(
                "privacy does not depend on tau_min; the accuracy guarantee of Theorem 4.1 needs "
                f"tau_min >= {default_tau:.6g} (Corollary 4.7), "
                + ("which holds" if tm >= default_tau else f"which does NOT hold (tau_min = {tm:.6g})")
            ),
        )
        meas = {
            "estimation": np.concatenate(res.w_est),
            "window_center": np.concatenate(res.window_center).astype(np.int64),
            "window": int(res.window),
            "M": int(res.M),
            "rounds": int(res.info["ell"]),
        }
    return meas, params, privacy


register_kind(KIND, _from_document)
