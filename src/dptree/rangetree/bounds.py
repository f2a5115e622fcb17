"""Private bounds for a range tree: a declared share of epsilon finds a public
range holding most of the data, and the tree is released over it with the rest.

The search is Durfee's unbounded maximum estimation ("Unbounded Differentially Private Quantile
and Maximum Estimation", NeurIPS 2023): AboveThreshold (Dwork et al. 2009; the sparse vector
technique) over candidates that grow exponentially outward from a public origin (0, or the
caller's ``bounds_origin``: a guess of where the data lies, e.g. a date for timestamps), run once
for each end (:attr:`BoundsSearch.epsilon_per_end`: the whole bounds budget under add/remove,
where the ends read disjoint records; half of it under replace):

* high end: candidates o + 1, o + 2, o + 4, ..., o + 2^62 (integers and ns timestamps; floats
  o + 2^-126, o + 2^-64, ..., o + 2^-1, o + 1, ..., o + 2^1022: :func:`candidates`) and queries ``-#{records > c}``, halting at the first c with
  ``-#above + nu >= -t + rho``, i.e. where at most about t records lie above c;
* low end: candidates o, o - 1, o - 2, o - 4, ... and queries ``-#{records < c}``.

No halt (records at the extremes) gives the last candidate. The ranks t are public (a function of
the budget only, :attr:`BoundsSearch.rank`). Every count has L1 sensitivity k (``max_contributions``)
under add/remove and under replace; the answers of one search all move the same way between
neighbours (monotone) under add/remove and under replace of one record, so the query noise is
2k/eps_end rather than 4k/eps_end there (:func:`dptree.interior.sparse_vector.above_threshold_scales`;
the proof is in docs/notes/privacy.md, "Private bounds"). The search is
:mod:`dptree.rangetree.bounds_search`; this module plans the tree over its ends
(:meth:`PrivateBoundsPlan.found_tree`), :func:`dptree.rangetree.api.release_over_private_bounds`
releases it.

The kind of domain (integer, float, date) is the column's type: an array's or a table's dtype
(schema, chosen by the caller); a file's column types are inferred from its rows, so numbers
read from a file always get a float domain.

The tree's domain is post-processing of the two found ends: the width is the caller's ``width``
(default 1 for integers, one day for dates; for floats the smallest power of two giving at most
:data:`BOUNDS_MAX_LEAVES` buckets), doubled until the range has at most :data:`BOUNDS_MAX_LEAVES`
buckets, and the upper end is raised to give at least two buckets. Records outside the range are
clamped into its end buckets, as with declared bounds (:mod:`dptree.data.domain`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from fractions import Fraction
from numbers import Real
from typing import Any, Mapping, TypeVar, cast

import numpy as np

from dptree import noise as _noise
from dptree._validation import Interval, check_param
from dptree.data.dates import NS_RANGE
from dptree.data.domain import Domain, make_domain
from dptree.data.engines.duckdb_tables import is_csv
from dptree.data.histograms import value_counts
from dptree.data.inputs import refuse_untyped
from dptree.errors import DPTreeError, InvalidParameterError, ReleaseFileError
from dptree.io import release_file as _release_file
from dptree.privacy.statement import Relation
from dptree.rangetree.bounds_search import (
    INT_END,
    BoundsSearch,
    Kind,
    candidates,
    column_kind,
    origin_fits,
    origin_in_units,
    search_values,
)
from dptree.rangetree.calibration import check_budget_range, check_noise_range, level_sensitivities
from dptree.rangetree.layout import build_layout
from dptree.rangetree.plan import TreePlan
from dptree.rangetree.support_search import MIN_LEVEL_WEIGHT

__all__ = [
    "BOUNDS_MAX_LEAVES",
    "origin_in_units",
    "BoundsSearch",
    "PrivateBoundsPlan",
    "candidates",
    "leaf_counts",
    "private_domain",
    "with_private_bounds",
    "plan_private_bounds",
]

#: the most buckets a tree over private bounds gets by default (its width is doubled to fit)
BOUNDS_MAX_LEAVES = 1 << 20
_DAY_NS = 86_400 * 10**9
_NS_LO, _NS_HI = NS_RANGE
#: the kind of tree plan :meth:`PrivateBoundsPlan.found_tree` builds
P = TypeVar("P", bound=TreePlan)



def _fit_width(span: int, start: int) -> int:
    w = start
    while span // w + 1 > BOUNDS_MAX_LEAVES:
        w *= 2
    return w


def _widened(lo: int, hi: int, w: int, ends: tuple[int, int]) -> tuple[int, int]:
    """[lo, hi] widened to at least one width w (two buckets) inside ``ends``: the upper end is
    raised, or, where that would pass the last end, the range is the last width below it."""
    if hi - lo >= w:
        return lo, hi
    if lo + w <= ends[1]:
        return lo, lo + w
    return ends[1] - w, ends[1]


def private_domain(kind: Kind, lower: Any, upper: Any, width: Any = None) -> Domain:
    """The tree's domain over the found ends (post-processing, module docstring): the width is
    ``width`` (or 1, one day, or for floats the smallest power of two that fits; for floats at least
    the spacing of the doubles at the ends) doubled until at most :data:`BOUNDS_MAX_LEAVES`
    buckets; the upper end is raised to give at least two buckets (at the last representable
    value, the lower end is lowered instead). Every pair of candidates (:func:`candidates`) with a
    width that :func:`width_fits` the kind gives a valid domain."""
    if kind == "float":
        lo, hi = float(lower), float(upper)
        if width is None:
            w = math.ldexp(1.0, math.frexp(hi - lo)[1] - 21)  # 2^e / 2^21 with hi - lo < 2^e
        else:
            w = float(width)
        w = max(w, math.ulp(max(abs(lo), abs(hi))))  # buckets the doubles can tell apart
        while (hi - lo) / w > BOUNDS_MAX_LEAVES:
            w *= 2
        top = float(np.finfo(np.float64).max)
        if hi - lo < 2 * w:
            hi, lo = (lo + 2 * w, lo) if lo <= top - 2 * w else (top, top - 2 * w)
        return make_domain(lo, hi, w)
    if kind == "datetime":
        if width is None:
            w0 = _DAY_NS
        else:
            w0 = int(np.timedelta64(width).astype("timedelta64[ns]").astype(np.int64))
        lo_i, hi_i = int(lower), int(upper)
        w = _fit_width(hi_i - lo_i, w0)
        lo_i, hi_i = _widened(lo_i, hi_i, w, (_NS_LO, _NS_HI))
        return make_domain(np.datetime64(lo_i, "ns"), np.datetime64(hi_i, "ns"), np.timedelta64(w, "ns"))
    lo_i, hi_i = int(lower), int(upper)
    w = _fit_width(hi_i - lo_i, 1 if width is None else int(width))
    return make_domain(*_widened(lo_i, hi_i, w, (-INT_END, INT_END)), w)


#: the widest declared width of each kind: two buckets of it fit between the outermost candidates
_MAX_WIDTH: dict[str, float] = {"integer": 2 * INT_END, "datetime": _NS_HI - _NS_LO, "float": 2.0**1022}


def width_fits(kind: Kind, width: Any) -> bool:
    """Whether a declared width fits a column of ``kind``: a positive integer (integers), a
    positive finite number (floats), a positive duration (dates), at most :data:`_MAX_WIDTH`."""
    import datetime as _dt

    duration = isinstance(width, (_dt.timedelta, np.timedelta64))  # numpy counts timedelta64 as an integer
    number = isinstance(width, (int, float, np.integer, np.floating)) and not isinstance(width, bool) and not duration
    if kind == "datetime":
        if not duration:
            return False
        try:
            w: float = int(np.timedelta64(width).astype("timedelta64[ns]").astype(np.int64))
        except (OverflowError, ValueError):
            return False
    elif kind == "integer":
        if not (number and isinstance(width, (int, np.integer))):
            return False
        w = int(width)
    else:
        if not number or not math.isfinite(float(width)):
            return False
        w = float(width)
    return 0 < w <= _MAX_WIDTH[kind]


def _check_width(kind: Kind | None, width: Any) -> None:
    """A declared width must fit the column's kind (``None``: some kind; checked before any budget
    is spent, then again once the column's type is known, before the search)."""
    if width is None or any(width_fits(cast(Kind, k), width) for k in ([kind] if kind else _MAX_WIDTH)):
        return
    column = f"{'an' if kind == 'integer' else 'a'} {kind} column" if kind else "any column"
    raise InvalidParameterError(
        f"width={width!r} does not fit {column}: a positive integer for integers, a positive number "
        "for floats, a positive timedelta for dates (two buckets of it must fit the representable range), or "
        "leave it out and the width is chosen from the found bounds"
    )


def with_private_bounds(tree_statement: Mapping[str, Any], record: Mapping[str, Any]) -> dict[str, Any]:
    """The statement of a release over private bounds: the tree's statement, its mechanism and
    budget extended by the search's (``record``: :meth:`PrivateBoundsPlan.record`)."""
    st = dict(tree_statement)
    total = float(record["total_epsilon"])
    eps_b = float(record["epsilon"])
    st["mechanism"] = f"{tree_statement['mechanism']}, over private bounds (AboveThreshold, Durfee 2023)"
    st["budget_requested"] = {"epsilon": total, "delta": 0.0, "rho": None}
    tree_spent = float(tree_statement["budget_spent"]["epsilon"])
    st["budget_spent"] = {"epsilon": float(Fraction(eps_b) + Fraction(tree_spent)), "delta": 0.0}
    st["budget_split"] = {**dict(tree_statement.get("budget_split") or {}), "bounds": eps_b, "tree": total - eps_b}
    st["bounds"] = dict(record)
    return st


def leaf_counts(tree: TreePlan, values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The exact leaf histogram of sorted distinct ``values`` with their ``counts`` (from
    :func:`~dptree.data.histograms.value_counts`) for ``tree``: clamped and bucketed by the domain,
    the histogram :func:`~dptree.data.histograms.leaf_histogram` gives for the rows (tested equal),
    without a second read of the data. Not private."""
    kind = column_kind(values)
    leaves = tree.domain.to_leaves(values if kind == "datetime" else search_values(values, kind))
    hist = np.bincount(leaves, weights=np.asarray(counts, dtype=np.float64), minlength=tree.layout.padded_size)
    return np.rint(hist).astype(np.int64)  # sums of integer counts below 2^53: exact


@dataclass(frozen=True)
class PrivateBoundsPlan:
    """A range-tree release whose bounds are private: everything public, before any data.

    ``statement`` charges the whole ``epsilon`` (a ledger charges it once); :meth:`release` runs
    the search with ``share * epsilon`` and the tree with the rest (sequential composition)."""

    epsilon: float
    share: float
    width: Any = None
    branching: int | None = None
    neighbors: Relation = "add_remove"
    max_contributions: int = 1
    levels: str = "uniform"
    origin: Any = 0

    def __post_init__(self) -> None:
        self._placeholder()  # every tree parameter is checked now (no data involved)
        self._check_every_tree()
        _check_width(None, self.width)  # a width that fits no column; the column's own kind is checked on reading
        with _noise.noise_scale_of("bounds_share", self.share, given=f"epsilon={self.epsilon!r}"):
            BoundsSearch(self.bounds_epsilon, self.neighbors, self.max_contributions).scales  # drawable noise
        kinds = [k for k in ("integer", "float", "datetime") if origin_fits(cast(Kind, k), self.origin)]
        if not kinds:  # raises, naming what an origin must be (text asks for a date)
            origin_in_units("datetime" if isinstance(self.origin, str) else "float", self.origin)

    def _check_every_tree(self) -> None:
        """The tree over any domain the search can find draws noise in the supported range, known
        before anything is charged: a measured level gets between all of the tree's epsilon and
        1/depth of the deepest tree over :data:`BOUNDS_MAX_LEAVES` buckets (uniform levels), or
        :data:`MIN_LEVEL_WEIGHT` of it (an optimised split)."""
        deepest = build_layout(BOUNDS_MAX_LEAVES, 2 if self.branching is None else int(self.branching)).depth
        least = Fraction(1, deepest) if self.levels == "uniform" else Fraction(MIN_LEVEL_WEIGHT)
        l1 = Fraction(float(level_sensitivities(self.neighbors, self.max_contributions, 1)[0][1]))
        eps = Fraction(self.tree_epsilon)
        try:  # 0.1% margin for the rounding of exact shares
            check_noise_range("laplace", [l1 / (least * eps) * Fraction(1001, 1000), l1 / eps])
        except InvalidParameterError as exc:
            raise InvalidParameterError(
                f"bounds='private' with epsilon={self.epsilon!r}, bounds_share={self.share!r} and "
                f"levels={self.levels!r} cannot release a tree over every domain the search may find: {exc}"
                + ("" if self.levels == "uniform" else " levels='uniform' needs less budget here.")) from None

    def _placeholder(self) -> TreePlan:
        """The tree's plan on a placeholder domain: checks the tree's parameters and policies."""
        return TreePlan.build(lower=0, upper=1, epsilon=self.tree_epsilon, branching=self.branching,
                               neighbors=self.neighbors, max_contributions=self.max_contributions, levels=self.levels)

    @property
    def bounds_epsilon(self) -> float:
        return float(self.share) * float(self.epsilon)

    @property
    def tree_epsilon(self) -> float:
        """epsilon - bounds_epsilon, rounded down so that the two never add up to more than epsilon."""
        t = float(self.epsilon) - self.bounds_epsilon
        while Fraction(t) + Fraction(self.bounds_epsilon) > Fraction(float(self.epsilon)):
            t = math.nextafter(t, 0.0)
        return t

    @property
    def search(self) -> BoundsSearch:
        """The search as declared (the origin in its own units: ns for a date), before the data."""
        import datetime as _dt

        date = isinstance(self.origin, (np.datetime64, _dt.date, str))
        return self.search_for(next(k for k in ("datetime", "integer", "float") if (k == "datetime") == date
                                    and origin_fits(cast(Kind, k), self.origin)))

    def search_for(self, kind: Kind) -> BoundsSearch:
        """The search for a column of ``kind`` (its origin in that kind's units)."""
        return BoundsSearch(self.bounds_epsilon, self.neighbors, self.max_contributions,
                            origin_in_units(kind, self.origin))

    @property
    def statement(self) -> dict[str, Any]:
        """The budget charged before the data is read: the whole epsilon (a ledger's ``charge_for``)."""
        return {"budget_requested": {"epsilon": float(self.epsilon), "delta": 0.0, "rho": None},
                "budget_spent": {"epsilon": float(self.epsilon), "delta": 0.0}, "bounds": self.search.describe()}

    def declared_width(self) -> Any:
        """The caller's width as the file stores it (ns for a timedelta), or None."""
        import datetime as _dt

        w = self.width
        if isinstance(w, (_dt.timedelta, np.timedelta64)):  # before np.integer: numpy's durations are integers
            return int(np.timedelta64(w).astype("timedelta64[ns]").astype(np.int64))
        if isinstance(w, (np.integer, np.floating)):
            return w.item()
        return w

    def record(self, lower: Any, upper: Any, kind: Kind | None = None) -> dict[str, Any]:
        """The public record of a search over a column of ``kind`` that found [lower, upper] (ns
        integers for dates)."""
        search = self.search if kind is None else self.search_for(kind)
        return {"method": "private", "share": float(self.share), "total_epsilon": float(self.epsilon),
                **search.describe(), "found": [lower, upper], "declared_width": self.declared_width(),
                "width_rule": f"the declared width (default 1, one day, or for floats the smallest power of two "
                              f"that fits), doubled until at most {BOUNDS_MAX_LEAVES} buckets"}

    def found_tree(self, values: Any, src: _noise.RandomSource, plan_type: type[P], *, column: str | None = None,
                   on_invalid: str = "error", fmt: str | None = None) -> tuple[P, np.ndarray, dict[str, Any], str]:
        """Read ``values`` once (anything :func:`~dptree.data.histograms.value_counts` reads: arrays,
        tables, CSV/Parquet files with ``fmt``, standard input), find the bounds (the search, drawing
        from ``src``) and plan the tree over them: (the tree's plan, a ``plan_type``; its exact leaf
        histogram, which only the plan's noise may release; the release's statement; the creation
        time, read before the data)."""
        self._placeholder().check_public_total(on_invalid=on_invalid)  # before any budget is spent
        refuse_untyped(values, "bounds='private'", "declare lower= and upper=")
        created = _release_file.utc_now()  # before the data is read (the module's clock: tests can fix it)
        # numbers from a CSV file get a float domain (read as DOUBLE, not DuckDB's guess from the rows);
        # a Parquet file declares its column's type
        csv = isinstance(values, (str, os.PathLike)) and is_csv(values, fmt)
        policy = cast(Any, on_invalid)
        vals, counts = value_counts(values, column=column, on_invalid=policy, fmt=fmt,
                                    domain=("float", 0.0, 0.0) if csv else None)
        kind = column_kind(vals)  # the column's type: schema, not data
        if kind == "integer" and csv:
            vals, kind = vals.astype(np.float64), "float"
        _check_width(kind, self.width)
        search = self.search_for(kind)  # an origin that does not fit the column is refused here
        lower, upper = search.find(kind, vals, counts, src)
        tree = cast(P, self.tree_plan(private_domain(kind, lower, upper, self.width), plan_type))
        statement = with_private_bounds(tree.statement, self.record(lower, upper, kind))
        return tree, leaf_counts(tree, vals, counts), statement, created

    def tree_plan(self, dom: Domain, plan_type: type[TreePlan] = TreePlan) -> TreePlan:
        """The tree's plan (a ``plan_type``) over a found domain with the tree's share of epsilon."""
        if dom.kind == "datetime":
            lower: Any = np.datetime64(int(dom.lower), "ns")
            upper: Any = np.datetime64(int(dom.upper), "ns")
            width: Any = np.timedelta64(int(dom.step), "ns")
        else:
            lower, upper, width = dom.lower, dom.upper, dom.width
        return plan_type.build(lower=lower, upper=upper, width=width, epsilon=self.tree_epsilon,
                               branching=self.branching, neighbors=self.neighbors,
                               max_contributions=self.max_contributions, levels=self.levels)


def checked_statement(record: Any, tree: TreePlan) -> dict[str, Any]:
    """The statement a release file over private bounds must carry, re-derived from its
    ``parameters.bounds`` (``record``) and its tree plan; refuses a record whose split, search or
    domain do not match, or that differs in any field from the record those give (load: the
    checksum is not a signature)."""
    if not isinstance(record, Mapping) or record.get("method") != "private":
        raise ReleaseFileError("release file: parameters.bounds must describe a private bounds search")
    try:
        width = record["declared_width"]
        if width is not None and tree.domain.kind == "datetime":
            width = np.timedelta64(int(width), "ns")
        kind = cast(Kind, tree.domain.kind)
        origin = record.get("origin", 0)
        if kind == "datetime" and origin != 0:
            origin = np.datetime64(int(origin), "ns")
        plan = PrivateBoundsPlan(epsilon=float(record["total_epsilon"]), share=float(record["share"]), width=width,
                                 branching=tree.layout.branching, neighbors=tree.neighbors,
                                 max_contributions=tree.max_contributions, levels=tree.levels, origin=origin)
        lower, upper = record["found"]
        dom = private_domain(tree.domain.kind, lower, upper, width)
    except (KeyError, TypeError, ValueError, OverflowError, DPTreeError) as exc:
        raise ReleaseFileError(f"release file: parameters.bounds is incomplete or invalid: {exc}") from None
    derived = plan.record(lower, upper, kind)
    if dom != tree.domain or plan.tree_epsilon != tree.budget.epsilon or dict(record) != derived:
        raise ReleaseFileError("release file: the domain or the budget split does not match the private bounds "
                               "search it records (tampered?)")
    return with_private_bounds(tree.statement, derived)


def plan_private_bounds(*, lower: Any = None, upper: Any = None, epsilon: float | None, delta: float = 0.0,
                        rho: float | None = None, width: Any = None, branching: int | None = None,
                        noise: str = "laplace", neighbors: str = "add_remove", max_contributions: int = 1,
                        levels: str = "uniform", by: Any = None, user_id: Any = None,
                        share: float = 0.1, origin: Any = 0) -> PrivateBoundsPlan:
    """Every public check of a release over private bounds (``range_tree(bounds="private")``, the
    CLI's ``release --bounds private``), before any data is read or any budget is charged."""
    if lower is not None or upper is not None:
        raise InvalidParameterError("bounds='private' finds lower and upper from the data: leave them out, or pass "
                                    "both with bounds='public' (the default)")
    if noise != "laplace" or rho is not None or delta:
        raise InvalidParameterError("bounds='private' supports noise='laplace' with an epsilon budget (pure DP) "
                                    "only: drop noise=, delta= and rho=, or declare lower= and upper=")
    if epsilon is None:
        raise InvalidParameterError("bounds='private' needs epsilon, e.g. epsilon=1.0 (bounds_share of it finds the "
                                    "bounds)")
    check_param("epsilon", epsilon, [Interval(Real, 0, None, closed="neither", hint="e.g. epsilon=1.0")])
    check_budget_range(epsilon, None)  # the whole epsilon named (the tree's share is checked by its plan)
    check_param("bounds_share", share, [Interval(Real, 0, 1, closed="neither", hint="e.g. bounds_share=0.1")])
    if by is not None or user_id is not None:
        raise InvalidParameterError("bounds='private' does not support by= or user_id= yet: declare lower= and upper= "
                                    "(bounds='public') for group-by and user-bounded releases")
    return PrivateBoundsPlan(epsilon=float(epsilon), share=float(share), width=width, branching=branching,
                             neighbors=cast(Relation, neighbors), max_contributions=max_contributions, levels=levels,
                             origin=0 if origin is None else origin)
