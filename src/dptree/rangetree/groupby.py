"""Group-by releases: one range tree per group of a public list, under parallel composition.

Each record belongs to exactly one group (its ``by`` value), so the groups' histograms are
computed on disjoint parts of the data and adding or removing one record changes one group's tree
only: the set of all group releases is as private as a single release (parallel composition,
McSherry 2009, Thm 4). With user-level bounding (``user_id=``, ``max_contributions=k``), at most k
records of a user are kept *across all groups* before the split, so the trees of all groups
together change by at most k per level (L1; and L2 <= k since sum k_g^2 <= (sum k_g)^2) when a
user is added or removed: the same guarantee again.

The list of groups is public and fixed by the caller: every listed group gets a release even when
it has no records (its counts are pure noise), so the set of groups seen in the data is never
revealed. A row whose group is not listed (or is missing) raises, or is dropped with
``unknown="drop"``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar, Iterator, Sequence, cast

import numpy as np

from dptree import noise as _noise
from dptree.data.bounding import (
    _bound_leaves,
    _leaf_sql,
    _present,
    check_bound,
    duckdb_bounded_counts,
    user_codes,
    user_sql,
)
from dptree.data.domain import coerce_values
from dptree.data.inputs import to_numpy
from dptree.errors import (
    DataError,
    InputFormatError,
    InvalidParameterError,
    engine_error,
    length_mismatch_error,
    missing_values_error,
    unknown_groups_error,
)
from dptree.privacy.boundary import Boundary
from dptree.rangetree.release import RangeTree, RangeTreePlan, plan_range_tree

__all__ = ["GroupedRelease", "range_tree_by", "grouped_histograms", "file_grouped_histograms", "release_groups"]


def check_groups(groups: Any) -> list[Any]:
    """Validate the public list of groups: non-empty, distinct, all str or all int, no None."""
    if groups is None or isinstance(groups, (str, bytes)) or not hasattr(groups, "__iter__"):
        raise InvalidParameterError("groups must be a list of the public group values, e.g. groups=['a', 'b']")
    gs = list(groups)
    if not gs:
        raise InvalidParameterError("groups must list at least one group")
    if all(isinstance(g, str) for g in gs):
        pass
    elif all(isinstance(g, (int, np.integer)) and not isinstance(g, (bool, np.bool_)) for g in gs):
        gs = [int(g) for g in gs]
    else:
        raise InvalidParameterError("groups must be all strings or all integers (and never None)")
    if len(set(gs)) != len(gs):
        raise InvalidParameterError("groups must be distinct")
    return gs


def _check_unknown(unknown: str) -> str:
    if unknown not in ("error", "drop"):
        raise InvalidParameterError(f"unknown must be 'error' or 'drop', got {unknown!r}")
    return unknown


def group_codes(by: Any, groups: list[Any], n: int, unknown: str) -> np.ndarray:
    """Index of each row's group in ``groups``; -1 for rows dropped as unknown."""
    arr = to_numpy(by, name="by")
    if arr.size != n:
        raise length_mismatch_error("by")
    lookup = {g: i for i, g in enumerate(groups)}
    present = _present(arr)
    codes = np.full(n, -1, dtype=np.int64)
    if present.any():
        vals = arr[present]
        if vals.dtype.kind == "f":  # integer groups read through a float column (with NaN)
            whole = vals == np.floor(vals)
            vals = np.where(whole, vals, np.nan)
            uniq, inv = np.unique(vals, return_inverse=True)
            table = np.array([lookup.get(int(u), -1) if u == u else -1 for u in uniq.tolist()], dtype=np.int64)
        else:
            try:
                uniq, inv = np.unique(vals, return_inverse=True)
            except TypeError as exc:
                raise DataError("by values must be of one comparable type (all numbers or all strings)") from exc
            table = np.array([lookup.get(u, -1) for u in uniq.tolist()], dtype=np.int64)
        codes[present] = table[inv.ravel()] if table.size else -1
    if unknown == "error" and (codes < 0).any():
        raise unknown_groups_error()
    return codes


def grouped_histograms(
    values: Any,
    by: Any,
    plan: RangeTreePlan,
    *,
    groups: Sequence[Any],
    unknown: str = "error",
    user_ids: Any = None,
    max_contributions: int | None = None,
    missing: str = "error",
    rng: _noise.RngLike = None,
) -> np.ndarray:
    """Leaf histograms of every group, shape (len(groups), padded_size), in numpy.

    With ``user_ids``, at most k records per user are kept (across groups) before the split.
    """
    plan.check_public_total(by=by)
    gs = check_groups(groups)
    _check_unknown(unknown)
    raw = to_numpy(values, name="values")
    n = raw.size
    codes = group_codes(by, gs, n, unknown)
    ucodes = user_codes(user_ids, n) if user_ids is not None else None
    k = check_bound(plan, max_contributions) if ucodes is not None else None
    present = _present(raw) if n else np.ones(0, bool)
    if missing == "error" and not present.all():
        raise missing_values_error(cli_flag=False)
    keep = (codes >= 0) & present
    raw, codes = raw[keep], codes[keep]
    vals = coerce_values(raw, plan.domain, missing=missing)
    leaves = plan.domain.to_leaves(vals)
    P = plan.layout.padded_size
    cells = codes * P + leaves
    if ucodes is None:
        hist = np.bincount(cells, minlength=len(gs) * P)
    else:
        assert k is not None
        hist = _bound_leaves(cells, ucodes[keep], k, len(gs) * P, _noise.make_source(rng))
    return hist.astype(np.int64).reshape(len(gs), P)


def file_grouped_histograms(
    path: str,
    column: str,
    by_column: str,
    plan: RangeTreePlan,
    *,
    groups: Sequence[Any],
    unknown: str = "error",
    user_column: str | None = None,
    max_contributions: int | None = None,
    missing: str = "error",
    rng: _noise.RngLike = None,
    fmt: str | None = None,
    progress: Any = False,
) -> np.ndarray:
    """:func:`grouped_histograms` of a CSV/Parquet file, computed in DuckDB (same results).
    ``progress``: as :func:`dptree.data.bounding.file_bounded_histogram` (stderr only)."""
    import pyarrow as pa

    from dptree.data.engines.duckdb import _column_type, _quote_ident, open_table

    plan.check_public_total(by=by_column)
    gs = check_groups(groups)
    _check_unknown(unknown)
    k = check_bound(plan, max_contributions) if user_column is not None else None
    P, G = plan.layout.padded_size, len(gs)
    try:
        with open_table(path, fmt, progress) as (con, expr):
            con.execute("SET disabled_optimizers = 'statistics_propagation'")  # see bounding.py (NaN)
            btype = _column_type(con, expr, by_column)
            if isinstance(gs[0], str) != ("VARCHAR" in btype or "CHAR" in btype or "TEXT" in btype):
                raise DataError(
                    f"by column {by_column!r} has type {btype} but groups are "
                    f"{'strings' if isinstance(gs[0], str) else 'integers'}; give groups of the column's type"
                )
            if not isinstance(gs[0], str) and not any(t in btype for t in ("INT", "DOUBLE", "FLOAT", "DECIMAL")):
                raise DataError(f"by column {by_column!r} has type {btype}; integer groups need a numeric column")
            con.register("dpt_groups", pa.table({"gv": pa.array(gs), "gi": pa.array(np.arange(G, dtype=np.int64))}))
            leaf_sql, bad_sql = _leaf_sql(con, expr, column, plan.domain, missing)
            ucol = user_sql(con, expr, user_column) if user_column is not None else "NULL"
            bcol = _quote_ident(by_column)
            joined = (
                f"SELECT {ucol} AS u, g.gi AS gi, CASE WHEN {bad_sql} THEN NULL ELSE {leaf_sql} END AS leaf "
                f"FROM {expr} t LEFT JOIN dpt_groups g ON t.{bcol} = g.gv"
            )
            con.execute(f"CREATE TEMP TABLE dpt_joined AS {joined}")
            n_unknown = con.execute("SELECT count_if(gi IS NULL) FROM dpt_joined").fetchone()[0]
            if n_unknown and unknown == "error":
                raise unknown_groups_error()
            con.execute(
                f"CREATE TEMP TABLE dpt_rows AS SELECT u, gi * {P} + leaf AS leaf FROM dpt_joined "
                "WHERE gi IS NOT NULL AND leaf IS NOT NULL"
            )
            if k is None:
                rows = con.execute("SELECT leaf, count(*) AS n FROM dpt_rows GROUP BY leaf").fetchnumpy()
                hist = np.zeros(G * P, dtype=np.int64)
                np.add.at(hist, np.asarray(rows["leaf"], dtype=np.int64), np.asarray(rows["n"], dtype=np.int64))
            else:
                from dptree.data.engines.duckdb import progress_reporter

                hist = duckdb_bounded_counts(con, "dpt_rows", k, G * P, _noise.make_source(rng),
                                             progress_reporter(progress))
            return hist.reshape(G, P)
    except (DataError, InputFormatError, InvalidParameterError):
        raise
    except Exception as exc:
        raise engine_error("grouped histograms", column, exc) from None


_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.=+-]+$")


@dataclass
class GroupedRelease:
    """One :class:`RangeTree` per public group (``release[group]``), made under parallel composition:
    the whole set costs the budget of one release."""

    #: the privacy boundary (:mod:`dptree.privacy.boundary`): each group's noisy node counts only
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "groups", "releases.*.privacy.*", "releases.*.parameters.*",
                "releases.*.measurements.noise_parameters", "releases.*.metadata", "releases.*.metadata.*"),
        noisy=("releases.*.measurements.levels",),
    )

    groups: list[Any]
    releases: dict[Any, RangeTree]
    privacy: dict[str, Any]

    def __getitem__(self, group: Any) -> RangeTree:
        try:
            return self.releases[group]
        except KeyError:
            raise InvalidParameterError(f"group {group!r} is not one of the released groups") from None

    def __iter__(self) -> Iterator[Any]:
        return iter(self.groups)

    def __len__(self) -> int:
        return len(self.groups)

    def items(self) -> Iterator[tuple[Any, RangeTree]]:
        return ((g, self.releases[g]) for g in self.groups)

    @property
    def private(self) -> bool:
        return bool(self.privacy.get("private", False))

    def to_frame(self, level: float = 0.95) -> Any:
        """Every group's :meth:`RangeTree.to_frame`, stacked, with a first column ``group``."""
        from dptree.io.frames import concat_frames

        return concat_frames({g: self.releases[g].to_frame(level) for g in self.groups}, "group")

    def to_document(self) -> dict[str, Any]:
        """The privacy statement, the public groups and each group's release document."""
        return {
            "privacy": self.privacy,
            "groups": list(self.groups),
            "releases": {str(g): self.releases[g].to_document() for g in self.groups},
        }

    def save(self, pattern: str, *, allow_nonprivate: bool = False, force: bool = False) -> list[str]:
        """Save each group's release to ``pattern`` with ``{group}`` replaced by the group."""
        if "{group}" not in pattern:
            raise InvalidParameterError("the output name must contain {group}, e.g. 'age-{group}.json'")
        paths = []
        for g in self.groups:
            name = str(g)
            if not _SAFE_NAME.match(name):
                raise InvalidParameterError(
                    f"group {name!r} cannot be part of a file name; use groups made of letters, digits and _.=+-"
                )
            paths.append(pattern.replace("{group}", name))
        from dptree.io.release_file import check_overwrite

        for p in paths:  # every path before the first write: all or nothing
            check_overwrite(p, "release:range_tree", force=force)
        for g, p in zip(self.groups, paths):
            self.releases[g].save(p, allow_nonprivate=allow_nonprivate, force=force)
        return paths


def release_groups(
    plan: RangeTreePlan,
    hists: np.ndarray,
    groups: Sequence[Any],
    rng: _noise.RngLike = None,
    *,
    column: Any = None,
    source: Any = None,
    created: str | None = None,
) -> GroupedRelease:
    """Add noise to every group's histogram (independent noise per group) and estimate."""
    plan.check_public_total(by="groups")
    gs = check_groups(groups)
    h = np.asarray(hists)
    if h.ndim != 2 or h.shape[0] != len(gs):
        raise InvalidParameterError(f"need one histogram per group: got shape {h.shape} for {len(gs)} groups")
    src = _noise.make_source(rng)  # one stream for all groups: a seed must not repeat the same noise
    releases = {g: plan.release(h[i], src, column=column, source=source, created=created) for i, g in enumerate(gs)}
    privacy = dict(plan.statement)
    privacy["composition"] = (
        f"parallel over {len(gs)} public groups: each record (each user, after bounding across groups) "
        "is counted in one group, so all groups together cost the budget of one release"
    )
    privacy["groups"] = list(gs)
    privacy["private"] = bool(src.private)
    return GroupedRelease(groups=gs, releases=releases, privacy=privacy)


def range_tree_by(
    values: Any,
    *,
    by: Any,
    groups: Sequence[Any],
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
    unknown: str = "error",
    user_id: Any = None,
    missing: str = "error",
    rng: _noise.RngLike = None,
) -> GroupedRelease:
    """Release one range tree of ``values`` per group of ``by`` (parallel composition).

    Privacy: as :func:`dptree.range_tree` for the whole set of groups (each record, or each user
    bounded to ``max_contributions`` records across groups with ``user_id``, affects one group).
    Every listed group is released, present in the data or not; rows of unlisted groups raise, or
    are dropped with ``unknown="drop"``.
    """
    plan = plan_range_tree(
        lower=lower, upper=upper, epsilon=epsilon, delta=delta, rho=rho, width=width, branching=branching,
        noise=noise, neighbors=neighbors, max_contributions=max_contributions, levels=levels,
    )
    if neighbors == "replace":
        raise InvalidParameterError(
            "group-by releases use add/remove neighbours: under 'replace' a record could move between groups "
            "and each group's total would not be public"
        )
    src = cast(_noise.RngLike, _noise.make_source(rng))  # one stream for bounding and noise
    from dptree.io.release_file import _utc_now

    created = _utc_now()  # before the data is read
    hists = grouped_histograms(values, by, plan, groups=groups, unknown=unknown, user_ids=user_id,
                               missing=missing, rng=src)
    return release_groups(plan, hists, groups, src, created=created)
