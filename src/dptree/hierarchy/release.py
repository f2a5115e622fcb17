"""The hierarchy release: private counts for every node of a public hierarchy (Ghazi,
Kamath, Kumar, Manurangsi, Wu 2023, "On Differentially Private Counting on Trees",
``001_4ad1135f2c911f1b.txt``), made by :func:`dptree.hierarchy.api.hierarchy_counts`.

:class:`HierarchyRelease` holds the public tree, the parameters, the privacy statement and the
noisy measurements; everything else is post-processing of them, recomputed on load:

* Laplace/Gaussian with ``consistent=True``: generalised least squares over the whole tree
  (Honaker's two passes, :func:`dptree.estimation.least_squares.consistent_estimates`), children
  summing to parents, with the exact variance of every node
  (:func:`dptree.estimation.least_squares.node_variances`).
* ``nonnegative``/``integer``: top-down simplex projection of each family and sum-preserving
  rounding (:mod:`dptree.estimation.postprocess`): post-processing that adds bias (docs/notes/hierarchy.md).
* multiplicative: Estimation's values clamped into the Lemma 3.3 windows [w'' - B, w'' + B].

Queries (``count``, ``stderr``, ``ci``, ``to_frame``) cost no budget. Saving and loading are the
release contract's (:class:`dptree.io.contract.CountRelease`, kind ``"hierarchy"``; ``dptree.load``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from numbers import Real
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from dptree._validation import Interval, validate_params
from dptree.errors import ReleaseFileError
from dptree.estimation.intervals import clip_to_counts, normal_multiplier
from dptree.estimation.least_squares import consistent_estimates, node_variances
from dptree.estimation.postprocess import project_families, round_families
from dptree.hierarchy.document import jsonable, read_document
from dptree.hierarchy.structure import Hierarchy
from dptree.io.contract import CountRelease
from dptree.io.release_file import FORMAT, VERSION, check_metadata, load, validate_document
from dptree.privacy.boundary import Boundary
from dptree.privacy.statement import Neighbors

__all__ = ["HierarchyRelease", "FoundHierarchyRelease", "load_hierarchy_release", "assemble", "NOISY_MEASUREMENTS", "KIND"]

KIND = "hierarchy"

#: The privacy boundary of a hierarchy release, declared in one place. Every field of its
#: document is a caller-supplied public parameter (the hierarchy, epsilon, delta, method, alpha,
#: tau_min, k, the ``unknown`` policy, ...) or one of these noisy measurements, or
#: post-processing of them (estimates, variances, counts, windows: recomputed from the
#: measurements on load). ``rounds`` (Estimation's ell) is a function of the noisy M.
#: tests/unit/hierarchy/test_hierarchy_boundary.py releases on neighboring datasets with one
#: seed and checks that every other field is identical.
NOISY_MEASUREMENTS: dict[str, tuple[str, ...]] = {
    "laplace": ("y",),
    "gaussian": ("y",),
    "multiplicative": ("estimation", "window_center", "M", "rounds"),
}

#: a confidence level (``ci``, ``to_frame``)
LEVEL = Interval(Real, 0, 1, closed="neither", hint="a confidence level is a number in (0, 1), e.g. 0.95")


def _split(flat: np.ndarray, sizes: Sequence[int]) -> list[np.ndarray]:
    out, s = [], 0
    for k in sizes:
        out.append(flat[s : s + k])
        s += k
    return out


@dataclass(repr=False, eq=False)
class HierarchyRelease(CountRelease):
    """A private release of counts for every node of a public :class:`Hierarchy`.

    Everything here is public: the noisy measurements, the parameters and the privacy
    statement; ``count``/``stderr``/``ci``/``to_frame`` are post-processing.
    """

    KIND: ClassVar[str] = KIND
    PLOT: ClassVar[str | None] = "hierarchy"  # how plot() draws it (dptree.io.display)
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
    counts: np.ndarray
    estimates: np.ndarray
    variances: np.ndarray
    lower_bounds: np.ndarray | None = None
    upper_bounds: np.ndarray | None = None
    #: public: the caller's level columns, input path and the creation time (and a ledger charge)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def column(self) -> str | None:
        """The released level columns, comma-separated, when known (public)."""
        col = self.metadata.get("column")
        return None if col is None else str(col)

    @property
    def method(self) -> str:
        return str(self.parameters["method"])

    # ------------------------------------------------------------------ queries

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

    @validate_params({"level": [LEVEL]})
    def ci(self, path: str | Sequence[Any] = "", level: float = 0.95) -> tuple[float, float]:
        """A confidence interval for the true count of the node.

        Gaussian noise: estimate +- z sigma (normal quantile). Laplace noise: estimate +- the
        quantile of a Laplace law with the same variance (exact for a single raw measurement up
        to lattice rounding; conservative for least-squares combinations). Multiplicative: the
        Lemma 3.3 window [w'' - B, w'' + B], which contains the true count with probability 1
        (``level`` is ignored). The lower end is clipped at 0 (true counts are >= 0).
        """
        g = self._gid(path)
        if self.lower_bounds is not None and self.upper_bounds is not None:
            lo, hi = clip_to_counts(self.lower_bounds[g], self.upper_bounds[g])
        else:
            half = float(self._half_width(np.array([self.variances[g]]), float(level))[0])
            est = float(self.estimates[g])
            lo, hi = clip_to_counts(est - half, est + half)
        return float(lo), float(hi)

    def _half_width(self, var: np.ndarray, level: float) -> np.ndarray:
        sd = np.sqrt(var)
        if self.parameters["method"] == "laplace":
            return sd / math.sqrt(2.0) * -math.log1p(-level)
        return sd * normal_multiplier(level)

    @validate_params({"level": [LEVEL]})
    def to_frame(self, level: float = 0.95) -> Any:
        """One row per node: path, depth (root 0), leaf flag, count (the released, possibly
        post-processed, count), estimate, stderr, ci_low, ci_high."""
        from dptree.io.frames import result_frame

        h = self.hierarchy
        depth = np.repeat(np.arange(h.depth), h.sizes)
        if self.lower_bounds is not None and self.upper_bounds is not None:
            lo, hi = clip_to_counts(self.lower_bounds, self.upper_bounds.astype(np.float64))
        else:
            half = self._half_width(self.variances, float(level))
            lo, hi = clip_to_counts(self.estimates - half, self.estimates + half)
        counts = self.counts.astype(np.int64) if self.parameters.get("integer") else self.counts
        return result_frame(
            {"path": h.all_paths(), "depth": depth, "leaf": np.concatenate(h.is_leaf), "count": counts},
            estimate=self.estimates, stderr=np.sqrt(self.variances), ci=(lo, hi), level=level,
        )

    def summary(self) -> str:
        p = self.parameters
        extra = f", alpha={p['alpha']}" if p.get("alpha") is not None else ""
        neighbors = Neighbors(self.privacy["neighbors"], self.privacy["max_contributions"])
        found = p.get("structure")
        how = "" if found is None else (
            f"tree found from the data (epsilon={found['epsilon']:g}, delta={found['delta']:g} in all, "
            f"{found['structure_share']:g} of epsilon finding it), counts ")
        return (
            f"Hierarchy release: {self.hierarchy.n_nodes} nodes, depth {self.hierarchy.depth}, {how}"
            f"{p['method']} (epsilon={p['epsilon']:g}, delta={p['delta']:g}{extra}), "
            f"{neighbors.describe()}{'' if self.private else ', NOT PRIVATE (test seed)'}"
        )

    # ------------------------------------------------------------------ the file document

    def to_document(self) -> dict[str, Any]:
        """The file's parts (:mod:`dptree.io.release_file`, kind "hierarchy"): the privacy
        statement, the parameters (with the public hierarchy), the noisy measurements and the
        metadata. Estimates are not stored: loading recomputes them from the measurements
        (post-processing), so a file cannot carry estimates that disagree with them."""
        params = dict(self.parameters)
        params["hierarchy"] = self.hierarchy.to_dict()
        return {
            "privacy": jsonable(self.privacy),
            "parameters": jsonable(params),
            "measurements": jsonable(self.measurements),
            "metadata": jsonable(self.metadata),
        }

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> HierarchyRelease:
        """Rebuild from a validated document: the tree, the statement and the re-derived noise are
        checked (:mod:`dptree.hierarchy.document`); estimates are recomputed."""
        h, params, privacy, meas = read_document(doc)
        return assemble(h, params, privacy, meas, check_metadata(doc.get("metadata")))

    def to_dict(self) -> dict[str, Any]:
        """:meth:`to_document` inside the file envelope (format, version, kind), without checksum."""
        return {"format": FORMAT, "version": VERSION, "kind": KIND, **self.to_document()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HierarchyRelease:
        """Rebuild from :meth:`to_dict` output or a loaded file (its checksum is checked if it has one)."""
        if not isinstance(d, Mapping):
            raise ReleaseFileError("a hierarchy release must be a JSON object")
        doc = dict(d)
        if "checksum" in doc:
            validate_document(doc)
        if doc.get("format") != FORMAT or doc.get("version") != VERSION:
            raise ReleaseFileError(
                f"not a dptree release of a supported version (format={doc.get('format')!r}, "
                f"version={doc.get('version')!r})"
            )
        if doc.get("kind") != KIND:
            raise ReleaseFileError(f"not a hierarchy release (kind={doc.get('kind')!r})")
        return cls.from_document(doc)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> HierarchyRelease:
        """``dptree.load(path)``, refusing a file of another kind."""
        return load_hierarchy_release(path)


@dataclass(repr=False, eq=False)
class FoundHierarchyRelease(HierarchyRelease):
    """A :class:`HierarchyRelease` whose tree was found from the data
    (:mod:`dptree.hierarchy.discovery`): the tree, its level columns and its 'other' label are the
    discovery's noisy output; everything else is as for a public hierarchy."""

    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=HierarchyRelease.BOUNDARY.public,
        noisy=HierarchyRelease.BOUNDARY.noisy + ("parameters.hierarchy*", "parameters.levels", "parameters.depth"),
    )


def load_hierarchy_release(path: str | os.PathLike[str]) -> HierarchyRelease:
    """Read a release written by :meth:`HierarchyRelease.save` (``dptree.load``, kind checked)."""
    rel = load(path)
    if not isinstance(rel, HierarchyRelease):
        raise ReleaseFileError(f"{path}: not a hierarchy release (kind={getattr(rel, 'KIND', None)!r})")
    return rel


def assemble(h: Hierarchy, params: dict[str, Any], privacy: dict[str, Any], meas: dict[str, Any],
             metadata: dict[str, Any] | None = None) -> HierarchyRelease:
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
            if params.get("integer"):  # hierarchy_counts refuses integer=True; saved files that state it load
                counts = np.rint(counts)
            estimates = counts.copy()
            variances = np.full(n, np.nan)
            lo, hi = center - B, center + B
    except (KeyError, TypeError, ValueError) as exc:
        raise ReleaseFileError(f"malformed hierarchy release measurements: {exc}") from exc
    kind = HierarchyRelease if params.get("structure") is None else FoundHierarchyRelease
    return kind(
        hierarchy=h,
        parameters=params,
        privacy=privacy,
        measurements=meas,
        counts=counts,
        estimates=estimates,
        variances=variances,
        lower_bounds=lo,
        upper_bounds=hi,
        metadata=metadata or {},
    )
