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
from typing import Any, ClassVar, Iterable, Literal, Mapping, Sequence

import numpy as np

from dptree.errors import DataError, InputFormatError, InvalidParameterError, ReleaseFileError, TotalTooLargeError
from dptree.estimation.intervals import check_level, clip_to_counts, normal_multiplier
from dptree.estimation.least_squares import consistent_estimates, node_variances
from dptree.estimation.postprocess import project_families, round_families
from dptree.hierarchy.multiplicative import Tree, mrmse_wrapper, theorem_4_1_tau_min
from dptree.hierarchy.structure import Hierarchy, split_path
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
#: tests/test_hierarchy_boundary.py releases on neighbouring datasets with one seed and checks
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


# ============================================================================ data -> leaf counts


def _as_label_array(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """(labels as str object array, null mask) for a pandas Series."""
    import pandas as pd

    s = pd.Series(values)
    null = s.isna().to_numpy()
    if pd.api.types.is_float_dtype(s.dtype):
        v = s.to_numpy()
        integral = np.isfinite(v) & (np.floor(v) == v)
        out = np.where(
            integral,
            np.char.mod("%d", np.where(integral, v, 0).astype(np.int64)).astype(object),
            s.astype(str).to_numpy(),
        )
        return np.asarray(out, dtype=object), null
    return s.astype(str).to_numpy(dtype=object), null


#: Exclusive upper bound on the total weight (number of records) a hierarchy release accepts.
#: Node counts and noisy measurements are int64 (exact below 2^63); the discrete Laplace and
#: Gaussian samplers return magnitudes below 2^62 on their fast path, and release files accept
#: measurements |y| < 2^62 (:func:`_check_noise`). A total below 2^61 leaves room for any noise
#: draw below 2^61 (probability 1 - exp(-2^61/scale)); a larger draw is refused from the noisy
#: value alone (post-processing). It is a public constant: the guarantee covers datasets whose
#: total weight is below it, and the refusal never states the total.
MAX_TOTAL = 2**61

#: Float weights are accepted only up to 2^53, where every integer is a float64 value: a float
#: above it may already be the rounding of a different integer.
_FLOAT_EXACT = 2**53


def _too_large(name: str | None) -> TotalTooLargeError:
    what = f"the weights in column {name!r}" if name else "the records"
    return TotalTooLargeError(
        f"{what} add up to 2^61 or more, more than hierarchy counts can add noise to exactly "
        "(node counts and noisy measurements are 64-bit integers; the limit is dptree.hierarchy.release.MAX_TOTAL); "
        "split the data or rescale the unit of a record"
    )


def _exact_total(v: np.ndarray) -> int:
    """Exact sum (a Python int) of non-negative int64 values < 2^63, without overflow: high and
    low 32-bit halves are summed separately in int64 (each sum < 2^62 for up to 2^30 rows)."""
    total = 0
    step = 1 << 30
    for s in range(0, v.size, step):
        c = v[s : s + step]
        total += (int(np.sum(c >> 32, dtype=np.int64)) << 32) + int(np.sum(c & 0xFFFFFFFF, dtype=np.int64))
    return total


def _add_at(out: np.ndarray, index: np.ndarray, values: np.ndarray) -> None:
    """out[index] += values, exactly, in int64 (callers check that every sum stays below
    :data:`MAX_TOTAL`). Never through float64 (np.bincount(weights=...) rounds above 2^53)."""
    np.add.at(out, np.asarray(index, dtype=np.int64), np.asarray(values, dtype=np.int64))


def _weight_error(name: str, problem: str) -> DataError:
    return DataError(
        f"weight column {name!r} must hold non-negative integer counts: it has {problem}; "
        "fix or drop those rows first (a weight is a number of records)"
    )


def _object_weights(values: np.ndarray, name: str) -> np.ndarray:
    """Exact Python integers of an object column (ints of any size, integral floats up to
    2^53, integral Decimals); raises without showing any value."""
    from decimal import Decimal

    out = np.empty(values.size, dtype=object)
    for i, x in enumerate(values.tolist()):
        if x is None or (isinstance(x, float) and x != x):
            raise _weight_error(name, "missing values")
        if isinstance(x, (bool, np.bool_)):
            raise _weight_error(name, "true/false values")
        if isinstance(x, (int, np.integer)):
            out[i] = int(x)
        elif isinstance(x, (float, np.floating)):
            out[i] = _float_weight(float(x), name)
        elif isinstance(x, Decimal):
            if not x.is_finite():
                raise _weight_error(name, "non-finite values")
            if x != x.to_integral_value():
                raise _weight_error(name, "non-integer values")
            out[i] = int(x)
        else:
            try:
                import pandas as pd

                if pd.isna(x):
                    raise _weight_error(name, "missing values")
            except (TypeError, ValueError):
                pass
            raise _weight_error(name, "values that are not numbers")
    return out


def _float_weight(f: float, name: str) -> int:
    if not math.isfinite(f):
        raise _weight_error(name, "non-finite values")
    if f != math.floor(f):
        raise _weight_error(name, "non-integer values")
    if f > _FLOAT_EXACT:
        raise _weight_error(name, "float values above 2^53, which are not exact integers (pass an integer column)")
    return int(f)


def _check_weights(w: Any, name: str) -> np.ndarray:
    """Weights as exact int64 counts: integer columns of any width, integral floats up to 2^53,
    Python ints / Decimals in object columns. Refuses missing, negative, non-integer and
    non-finite weights, and (:class:`TotalTooLargeError`) totals of :data:`MAX_TOTAL` or more.
    No message contains a count or a value."""
    import pandas as pd

    s = pd.Series(w)
    if pd.api.types.is_bool_dtype(s.dtype):
        raise _weight_error(name, "true/false values")
    if s.isna().any():
        raise _weight_error(name, "missing values")
    if pd.api.types.is_integer_dtype(s.dtype):
        v = s.to_numpy()
        if v.dtype.kind == "i" and (v < 0).any():
            raise _weight_error(name, "negative values")
        if v.size and v.max() >= MAX_TOTAL:  # unsigned values above 2^63 never reach int64
            raise _too_large(name)
        v = v.astype(np.int64)
    elif pd.api.types.is_float_dtype(s.dtype):
        f = s.to_numpy(dtype=np.float64)
        if not np.isfinite(f).all():
            raise _weight_error(name, "non-finite values")
        if (f < 0).any():
            raise _weight_error(name, "negative values")
        if (np.floor(f) != f).any():
            raise _weight_error(name, "non-integer values")
        if f.size and f.max() > _FLOAT_EXACT:
            raise _weight_error(name, "float values above 2^53, which are not exact integers (pass an integer column)")
        v = f.astype(np.int64)
    elif s.dtype == object:
        ints = _object_weights(s.to_numpy(dtype=object), name)
        if any(x < 0 for x in ints):
            raise _weight_error(name, "negative values")
        if any(x >= MAX_TOTAL for x in ints):
            raise _too_large(name)
        v = ints.astype(np.int64)
    else:
        raise _weight_error(name, "values that are not numbers")
    if _exact_total(v) >= MAX_TOTAL:
        raise _too_large(name)
    return v


def _spark_weight_column(df: Any, weight: str) -> Any:
    """The weight column as an exact DecimalType(38, 0) Spark column, after refusing (without
    counts or values) missing, negative, non-integer, non-finite and inexact float weights."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    dtype = df.schema[weight].dataType
    w = F.col(weight)
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        checks = [("missing values", w.isNull()), ("negative values", w < 0)]
    elif isinstance(dtype, T.DecimalType):
        checks = [("missing values", w.isNull()), ("negative values", w < 0), ("non-integer values", w != F.floor(w))]
    elif isinstance(dtype, (T.FloatType, T.DoubleType)):
        checks = [
            ("missing values", w.isNull()),
            ("non-finite values", F.isnan(w) | (F.abs(w) == float("inf"))),
            ("negative values", w < 0),
            ("non-integer values", w != F.floor(w)),
            ("float values above 2^53, which are not exact integers (pass an integer column)", w > float(_FLOAT_EXACT)),
        ]
    else:
        raise _weight_error(weight, "values that are not numbers (the column type is not numeric)")
    for problem, cond in checks:
        if df.filter(cond).limit(1).count():
            raise _weight_error(weight, problem)
    return w.cast(T.DecimalType(38, 0))


def _spark_leaf_totals(df: Any, levels: Sequence[str], weight: str | None) -> Any:
    """Records (or summed weights) per distinct path, aggregated inside Spark: only these
    per-path totals reach the driver, never the rows. Weights are summed exactly as
    DecimalType(38, 0) (a long sum would wrap, a double sum round above 2^53)."""
    from pyspark.sql import functions as F

    missing = [c for c in list(levels) + ([weight] if weight else []) if c not in df.columns]
    if missing:
        raise InputFormatError(f"Spark DataFrame has no column(s) {missing}; it has {list(df.columns)}")
    if weight is None:
        agg = df.groupBy(*levels).agg(F.count(F.lit(1)).alias("__weight__"))
    else:
        agg = df.groupBy(*levels).agg(F.sum(_spark_weight_column(df, weight)).alias("__weight__"))
    pdf = agg.toPandas()
    # exact Python ints (Decimal -> int); _check_weights then refuses totals >= MAX_TOTAL
    pdf["__weight__"] = np.asarray([int(v) for v in pdf["__weight__"].tolist()], dtype=object)
    return pdf


_DEEP = "__deep__"  # internal column: the row's path ran deeper than the hierarchy (truncated)

UNKNOWN_POLICIES = ("error", "drop", "other")


def _unknown_hint() -> str:
    return (
        "fix the data or the public structure, or declare a policy for such records: "
        "unknown='drop' leaves them out, unknown='other' counts them in the 'other' leaf of their "
        "deepest known ancestor (build the hierarchy with other='(other)'); "
        "CLI: --unknown drop, or --other '(other)' --unknown other"
    )


def _unknown_error(what: str) -> DataError:
    """The data-dependent refusal of unknown="error": says what kind of path was found, never
    how many records, which path or which label (docs/privacy.md: errors are not a counting
    oracle)."""
    return DataError(f"some records {what}; {_unknown_hint()}")


def _paths_frame(paths: list[tuple[str, ...]], levels: Sequence[str], unknown: str) -> dict[str, Any]:
    width = len(levels)
    deep = [len(p) > width for p in paths]
    cols: dict[str, Any] = {lev: [p[j] if j < len(p) else None for p in paths] for j, lev in enumerate(levels)}
    if any(deep):
        if unknown == "error":
            raise _unknown_error("name a path deeper than the hierarchy")
        cols[_DEEP] = deep
    return cols


def _to_frame(
    data: Any, levels: Sequence[str], weight: str | None, unknown: str = "error"
) -> tuple[Any, str | None]:
    """Normalise the accepted data forms to a DataFrame with the level columns (+ weight)."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data, weight
    from dptree.data.engines.spark import _is_spark_df

    if _is_spark_df(data):
        return _spark_leaf_totals(data, levels, weight), "__weight__"
    if type(data).__module__.split(".")[0] in ("duckdb", "_duckdb") and hasattr(data, "df"):
        return data.df(), weight  # a DuckDB relation is a table (it was read as a list of paths)
    if weight is not None and (isinstance(data, Mapping) or not hasattr(data, "to_pandas")):
        raise InvalidParameterError(
            "weight names a column of a table; a list of paths has none (a dict {path: count} carries its "
            "own weights): pass a DataFrame with the level columns and the weight column, or leave weight out"
        )
    if isinstance(data, Mapping):  # {path: count}
        cols = _paths_frame([split_path(p) for p in data.keys()], levels, unknown)
        cols["__weight__"] = list(data.values())
        return pd.DataFrame(cols), "__weight__"
    if hasattr(data, "to_pandas"):  # pyarrow / polars / duckdb relation
        return data.to_pandas(), weight
    if isinstance(data, (str, bytes)) or not isinstance(data, Iterable):
        raise InputFormatError(
            "data must be a pandas DataFrame with the level columns, a list of paths "
            f"('US/CA/SF' or tuples), or a dict {{path: count}}; got {type(data).__name__}"
        )
    cols = _paths_frame([split_path(p) for p in data], levels, unknown)
    return pd.DataFrame(cols, columns=list(levels) + ([_DEEP] if _DEEP in cols else [])), None


def leaf_counts(
    data: Any,
    hierarchy: Hierarchy,
    *,
    levels: Sequence[str] | None = None,
    weight: str | None = None,
    unknown: Literal["error", "drop", "other"] = "error",
) -> list[np.ndarray]:
    """Count records per leaf (seed 001's x in N^leaves), as one array per level.

    Exact and NOT private: this is the input of the mechanism (and of tests and metrics); never
    publish its output. Rows name a leaf through their level columns (one record each) or carry
    a ``weight`` column of non-negative integer counts, summed exactly in integers (totals of
    :data:`MAX_TOTAL` or more raise :class:`TotalTooLargeError`).

    A row whose path is not a leaf of the hierarchy (unknown label, path ending at an internal
    node, path running past a leaf, empty level followed by a label) is handled by the declared
    policy ``unknown``: "error" (default) refuses, without saying how many rows or which paths;
    "drop" leaves the row out; "other" counts it for the "other" leaf under its deepest known
    ancestor (the hierarchy must have been built with ``other=...``). "drop" and "other" act on
    each record alone, so neighbouring datasets stay neighbouring and the sensitivity is
    unchanged. Internal nodes get 0.
    """
    import pandas as pd

    h = hierarchy
    lv = list(h.levels if levels is None else levels)
    if len(lv) != h.depth - 1:
        raise InvalidParameterError(
            f"the hierarchy has {h.depth - 1} levels below the root but {len(lv)} level columns were given"
        )
    if unknown not in UNKNOWN_POLICIES:
        raise InvalidParameterError(f"unknown must be one of {UNKNOWN_POLICIES}, got {unknown!r}")
    if unknown == "other" and h.other is None:
        raise InvalidParameterError(
            "unknown='other' needs a hierarchy with 'other' leaves: build it with other='(other)'"
        )
    frame, wcol = _to_frame(data, lv, weight, unknown)
    missing = [c for c in lv + ([wcol] if wcol else []) if c not in frame.columns]
    if missing:
        raise InputFormatError(f"data has no column(s) {missing}; it has {list(frame.columns)}")
    x = [np.zeros(s, dtype=np.int64) for s in h.sizes]
    if len(frame) == 0:
        return x
    keys = lv + ([_DEEP] if _DEEP in frame.columns else [])
    if wcol is not None:
        wts = _check_weights(frame[wcol], wcol)  # exact int64, total < MAX_TOTAL
        sub = frame[keys].copy()
        sub["__n__"] = wts
        g = sub.groupby(keys, sort=False, dropna=False, observed=True)["__n__"].sum().reset_index()
    else:
        if len(frame) >= MAX_TOTAL:  # pragma: no cover - no table this large fits in memory
            raise _too_large(None)
        g = frame.groupby(keys, sort=False, dropna=False, observed=True).size().reset_index(name="__n__")
    n = g["__n__"].to_numpy(dtype=np.int64)  # every group sum <= total < MAX_TOTAL: exact
    m = len(g)
    vocab, codes = h.vocab()
    node = np.zeros(m, dtype=np.int64)
    level = np.zeros(m, dtype=np.int64)
    ok = np.ones(m, dtype=bool)
    # ran past the deepest level (truncated): past a leaf, unknown below its deepest known node
    deep = g[_DEEP].to_numpy(dtype=bool) if _DEEP in g.columns else np.zeros(m, dtype=bool)
    ended = np.zeros(m, dtype=bool)
    for j in range(1, h.depth):
        lab, null = _as_label_array(g[lv[j - 1]])
        gap = ended & ~null
        if gap.any():
            if unknown == "error":
                raise _unknown_error("have an empty level followed by a label (only trailing levels may be empty)")
            ok[gap] = False  # stays at the node reached before the gap
        ended |= null
        go = np.flatnonzero(ok & ~ended)
        if go.size == 0:
            continue
        leaf_here = h.is_leaf[j - 1][node[go]]
        ok[go[leaf_here]] = False  # deeper than a leaf: unknown below the leaf
        go = go[~leaf_here]
        V = max(len(vocab[j]), 1)
        code = pd.Index(vocab[j]).get_indexer(lab[go]) if len(vocab[j]) else np.full(go.size, -1)
        keys_j = np.asarray(h.parents[j], dtype=np.int64) * V + codes[j]
        key = node[go] * V + np.maximum(code, 0)
        pos = np.minimum(np.searchsorted(keys_j, key), keys_j.size - 1)
        found = (code >= 0) & (keys_j[pos] == key)
        ok[go[~found]] = False
        node[go[found]] = pos[found]
        level[go[found]] = j
    at_leaf = np.zeros(m, dtype=bool)
    for j in range(h.depth):
        sel = level == j
        at_leaf[sel] = h.is_leaf[j][node[sel]]
    bad = ~(ok & at_leaf) | deep
    if bad.any():
        if unknown == "error":
            raise _unknown_error("name a path that is not a leaf of the public hierarchy")
        if unknown == "drop":
            keep = ~bad
            level, node, n = level[keep], node[keep], n[keep]
        else:
            other = h.other_leaf()
            tgt_level = level.copy()
            tgt_node = node.copy()
            idx = np.flatnonzero(bad)
            # deepest known ancestor = node reached; a leaf cannot have an 'other' child: go up one
            for i in idx.tolist():
                j, v = int(level[i]), int(node[i])
                if h.is_leaf[j][v]:
                    v, j = int(h.parents[j][v]), j - 1  # type: ignore[index]
                o = int(other[j][v])
                if o < 0:  # pragma: no cover - every internal node has one by construction
                    raise DataError("the hierarchy has an internal node without an 'other' leaf")
                tgt_level[i], tgt_node[i] = j + 1, o
            level, node = tgt_level, tgt_node
    for j in range(h.depth):
        sel = level == j
        if sel.any():
            _add_at(x[j], node[sel], n[sel])
    return x


def node_weights(x: Sequence[np.ndarray], parents: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """w_u = sum of x over the leaves under u (seed 001, Problem 1.2), bottom-up per level."""
    L = len(x)
    w = [np.asarray(a, dtype=np.int64).copy() for a in x]
    for j in range(L - 1, 0, -1):  # exact int64 sums (the total is < MAX_TOTAL)
        _add_at(w[j - 1], np.asarray(parents[j]), w[j])
    return w


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
