"""Private bounds for a range tree (issue 15, item 3): a declared share of epsilon finds a public
range holding most of the data, and the tree is released over it with the rest.

The search is Durfee's unbounded maximum estimation ("Unbounded Differentially Private Quantile
and Maximum Estimation", NeurIPS 2023): AboveThreshold (Dwork et al. 2009; the sparse vector
technique) over candidates that grow exponentially outward from a public origin (0, or the
caller's ``bounds_origin``: a guess of where the data lies, e.g. a date for timestamps), run once
for each end (:attr:`BoundsSearch.epsilon_per_end`: the whole bounds budget under add/remove,
where the ends read disjoint records; half of it under replace):

* high end: candidates o + 1, o + 2, o + 4, ..., o + 2^62 (integers and ns timestamps; floats
  o + 2^-126, ..., o + 2^1022) and queries ``-#{records > c}``, halting at the first c with
  ``-#above + nu >= -t + rho``, i.e. where at most about t records lie above c;
* low end: candidates o, o - 1, o - 2, o - 4, ... and queries ``-#{records < c}``.

No halt (records at the extremes) gives the last candidate. The ranks t are public (a function of
the budget only, :attr:`BoundsSearch.rank`). Every count has L1 sensitivity k (``max_contributions``)
under add/remove and under replace; the answers of one search all move the same way between
neighbours (monotone) under add/remove and under replace of one record, so the query noise is
2k/eps_end rather than 4k/eps_end there (:func:`dptree.interior.sparse_vector.above_threshold_scales`;
the proof is in docs/privacy.md, "Private bounds").

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
from numbers import Real
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal, Mapping, cast

import numpy as np

from dptree import noise as _noise
from dptree._validation import Interval, check_param
from dptree.data.domain import NS_RANGE, Domain, dates_to_ns, make_domain, parse_date_bound
from dptree.data.histograms import value_counts
from dptree.errors import DataError, DomainError, DPTreeError, InvalidParameterError, ReleaseFileError
from dptree.interior.sparse_vector import above_threshold_scales, first_above_threshold
from dptree.io import release_file as _release_file
from dptree.noise import laplace_scale_used
from dptree.privacy.statement import Relation
from dptree.rangetree.plan import RangeTreePlan, plan_range_tree

if TYPE_CHECKING:
    from dptree.rangetree.release import RangeTree

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
#: the rank t of each end, in units of the query noise scale: t = ceil(RANK_SCALES * scale)
RANK_SCALES = 2
_DAY_NS = 86_400 * 10**9
_NS_LO, _NS_HI = NS_RANGE

Kind = Literal["integer", "float", "datetime"]
Side = Literal["low", "high"]


def candidates(kind: Kind, side: Side, origin: int | float = 0) -> np.ndarray:
    """The public candidates of one end, in search order (outward from the public ``origin``).

    Integers: o + 1, o + 2, o + 4, ..., o + 2^62 (high) and o, o - 1, o - 2, ..., o - 2^62 (low),
    each clipped to +-2^62: values are clamped to +-2^62 on reading, so the last candidate has no
    record beyond it. Nanosecond timestamps: the same, clipped to, then ending with, the dates a
    range tree can bound. Floats: o + 2^-126, ..., o + 2^1022 and o, o - 2^-126, ..., o - 2^1022,
    clipped to the finite floats (a span of at most 2^1023 stays finite). Each list is monotone
    (float rounding can repeat a candidate, never reverse the order)."""
    if kind == "float":
        o, big = float(origin), float(np.finfo(np.float64).max)
        steps = np.ldexp(1.0, np.arange(-126, 1023))
        with np.errstate(over="ignore"):
            if side == "high":
                return np.minimum(o + steps, big)
            return np.concatenate([[o], np.maximum(o - steps, -big)])
    o = int(origin)
    steps_i = [1 << j for j in range(63)]
    lo_end, hi_end = (_NS_LO, _NS_HI) if kind == "datetime" else (-(2**62), 2**62)
    ups = [min(o + u, hi_end) for u in steps_i]
    downs = [o] + [max(o - u, lo_end) for u in steps_i]
    if kind == "datetime":
        ups, downs = ups + [_NS_HI], downs + [_NS_LO]
    return np.array(ups if side == "high" else downs, dtype=np.int64)


def origin_in_units(kind: Kind, origin: Any) -> int | float:
    """The declared origin in the search's units for a column of ``kind`` (ns for dates), or an
    :class:`InvalidParameterError` when it does not fit that kind or the values' range."""
    import datetime as _dt

    if isinstance(origin, str) and kind == "datetime":  # ISO text, as lower= and upper= take it
        try:
            origin = parse_date_bound(origin, "bounds_origin")
        except DomainError as exc:
            raise InvalidParameterError(str(exc)) from None
    is_date = isinstance(origin, (np.datetime64, _dt.date))
    is_number = isinstance(origin, (int, float, np.integer, np.floating)) and not isinstance(origin, (bool, np.bool_))
    if kind == "datetime" and is_date:
        ns = int(np.datetime64(origin, "ns").astype(np.int64))
        if _NS_LO <= ns <= _NS_HI:
            return ns
    elif kind == "datetime" and is_number and origin == 0:
        return 0  # the default: the Unix epoch
    elif kind == "integer" and is_number and float(origin).is_integer() and abs(int(origin)) <= 2**62:
        return int(origin)
    elif kind == "float" and is_number and math.isfinite(float(origin)):
        return float(origin)
    column, want = {"integer": ("an integer", "an integer within +-2^62"), "float": ("a float", "a finite number"),
                    "datetime": ("a datetime", "a date (e.g. numpy.datetime64('2024-01-01'))")}[kind]
    raise InvalidParameterError(f"bounds_origin={origin!r} does not fit {column} column: give {want}, "
                                "near where the data is expected (a public guess; it is not a bound)")


def _fits(kind: Kind, origin: Any) -> bool:
    try:
        origin_in_units(kind, origin)
    except InvalidParameterError:
        return False
    return True


def _kind_of(values: np.ndarray) -> Kind:
    k = values.dtype.kind
    if k in "iu":
        return "integer"
    if k == "f":
        return "float"
    if k == "M":
        return "datetime"
    raise DataError("bounds='private' needs a column of numbers or dates (one type); convert the values first")


def _as_search_values(values: np.ndarray, kind: Kind) -> np.ndarray:
    """Sorted distinct values in the candidates' units (int64 for integers and ns timestamps)."""
    if kind == "integer":
        if values.dtype.kind == "u":
            return np.minimum(values, np.uint64(2**62)).astype(np.int64)
        return np.clip(values, -(2**62), 2**62).astype(np.int64)
    if kind == "datetime":
        return dates_to_ns(values, _NS_LO, _NS_HI)
    return values.astype(np.float64)


@dataclass(frozen=True)
class BoundsSearch:
    """The public parameters of the search: its budget (both ends), the neighbouring relation and
    the records per person k. Pure ``epsilon``-DP (:attr:`epsilon_per_end`)."""

    epsilon: float
    neighbors: Relation = "add_remove"
    max_contributions: int = 1
    origin: int | float = 0

    @property
    def monotone(self) -> bool:
        """All answers of one search move the same way between neighbours: adding or removing a
        person (every count grows, or every count shrinks, by 0..k), or replacing one record
        (v -> v' changes #above(c) by +1 exactly for c in [v, v') when v < v', else by -1 or 0);
        not when k > 1 records are replaced (some may move up, others down)."""
        return self.neighbors == "add_remove" or self.max_contributions == 1

    @property
    def parallel(self) -> bool:
        """The low end reads only records below the origin o (its queries count v < c <= o) and
        the high end only records above it (v > c >= o). Adding or removing a person's records puts k_low of them
        in the low end's input and k_high in the high end's, k_low + k_high <= k; each end's
        AboveThreshold, calibrated for sensitivity k, loses at most (k_side / k) eps_end (its
        proof's shifts scale with the change), so both together lose at most eps_end (parallel
        composition). Replacing records can move a record across 0 and change both ends by the
        full amount (sequential composition: eps / 2 each). The origin is public, so shifting it changes
        nothing in this argument."""
        return self.neighbors == "add_remove"

    @property
    def epsilon_per_end(self) -> float:
        """The budget of each end's AboveThreshold: epsilon when :attr:`parallel`, else epsilon / 2."""
        return float(self.epsilon) if self.parallel else float(self.epsilon) / 2

    @property
    def scales(self) -> tuple[Fraction, Fraction]:
        """The exact discrete Laplace scales (threshold, query) used for each end."""
        rho, nu = above_threshold_scales(self.epsilon_per_end, self.max_contributions, self.monotone)
        return laplace_scale_used(rho), laplace_scale_used(nu)

    @property
    def rank(self) -> int:
        """t: each end halts where about t records (or fewer) lie beyond it: ceil(2 * query scale)."""
        return int(math.ceil(RANK_SCALES * self.scales[1]))

    def answers(self, kind: Kind, values: np.ndarray, counts: np.ndarray, side: Side) -> tuple[np.ndarray, np.ndarray]:
        """The candidates of one end and their true query answers (private: they only reach the
        caller through :func:`first_above_threshold`), for the sorted distinct ``values`` with
        their ``counts``: -#{v < c} on the low end, -#{v > c} on the high end (one sorted pass)."""
        vals = _as_search_values(np.asarray(values), kind)
        cum = np.concatenate([[0], np.cumsum(np.asarray(counts, dtype=np.int64))])
        cand = candidates(kind, side, self.origin)
        if side == "low":
            return cand, -cum[np.searchsorted(vals, cand, side="left")]
        return cand, cum[np.searchsorted(vals, cand, side="right")] - cum[-1]

    def halt(self, answers: np.ndarray, src: _noise.RandomSource | _noise.RngLike, runs: int | None = None) -> Any:
        """One end's AboveThreshold (:attr:`epsilon_per_end`) on its answers: the halting index, or None (or, with
        ``runs``, an array of indices, -1 for none) (:func:`first_above_threshold`)."""
        return first_above_threshold(answers, -self.rank, self.epsilon_per_end, src, sensitivity=self.max_contributions,
                                     monotone=self.monotone, runs=runs)

    def find(self, kind: Kind, values: np.ndarray, counts: np.ndarray, src: _noise.RandomSource) -> tuple[Any, Any]:
        """The two ends (candidates) for the sorted distinct ``values`` with their ``counts``; an
        end whose search does not halt is its last candidate."""
        out = []
        for side in ("low", "high"):
            cand, answers = self.answers(kind, values, counts, cast(Side, side))
            idx = self.halt(answers, src)
            c = cand[-1] if idx is None else cand[idx]
            out.append(float(c) if kind == "float" else int(c))
        return out[0], out[1]

    def describe(self) -> dict[str, Any]:
        """The search's public description (statement and release file)."""
        s_rho, s_nu = self.scales
        where = "0" if self.origin == 0 else "the declared origin"
        out = {
            "search": f"AboveThreshold per end over candidates doubling outward from {where} (Durfee 2023, "
                      "unbounded maximum estimation)",
            "epsilon": self.epsilon,
            "epsilon_per_end": self.epsilon_per_end,
            "composition": "parallel (the ends read disjoint records)" if self.parallel else "sequential",
            "rank": self.rank,
            "sensitivity": self.max_contributions,
            "monotone": self.monotone,
            "threshold_scale": f"{s_rho.numerator}/{s_rho.denominator}",
            "query_scale": f"{s_nu.numerator}/{s_nu.denominator}",
        }
        if self.origin != 0:  # (files of searches from 0 carry no origin)
            out["origin"] = self.origin
        return out


def _fit_width(span: int, start: int) -> int:
    w = start
    while span // w + 1 > BOUNDS_MAX_LEAVES:
        w *= 2
    return w


def private_domain(kind: Kind, lower: Any, upper: Any, width: Any = None) -> Domain:
    """The tree's domain over the found ends (post-processing, module docstring): the width is
    ``width`` (or 1, one day, or for floats the smallest power of two that fits) doubled until at
    most :data:`BOUNDS_MAX_LEAVES` buckets; the upper end is raised to give at least two buckets."""
    if kind == "float":
        lo, hi = float(lower), float(upper)
        if width is None:
            w = math.ldexp(1.0, math.frexp(hi - lo)[1] - 21)  # 2^e / 2^21 with hi - lo < 2^e
        else:
            w = float(width)
        while (hi - lo) / w > BOUNDS_MAX_LEAVES:
            w *= 2
        return make_domain(lo, max(hi, lo + 2 * w), w)
    if kind == "datetime":
        if width is None:
            w0 = _DAY_NS
        else:
            w0 = int(np.timedelta64(width).astype("timedelta64[ns]").astype(np.int64))
        lo_i, hi_i = int(lower), int(upper)
        w = _fit_width(hi_i - lo_i, w0)
        hi_i = min(max(hi_i, lo_i + w), _NS_HI)
        return make_domain(np.datetime64(lo_i, "ns"), np.datetime64(hi_i, "ns"), np.timedelta64(w, "ns"))
    lo_i, hi_i = int(lower), int(upper)
    w = _fit_width(hi_i - lo_i, 1 if width is None else int(width))
    return make_domain(lo_i, max(hi_i, lo_i + w), w)


def _check_width(kind: Kind, width: Any) -> None:
    """A declared width must fit the column's kind (checked before the search spends budget)."""
    if width is None:
        return
    import datetime as _dt

    duration = isinstance(width, (_dt.timedelta, np.timedelta64))  # numpy counts timedelta64 as an integer
    number = isinstance(width, (int, float, np.integer, np.floating)) and not isinstance(width, bool) and not duration
    if kind == "datetime":
        ok = duration and int(np.timedelta64(width).astype("timedelta64[ns]").astype(np.int64)) > 0
    elif kind == "integer":
        ok = number and isinstance(width, (int, np.integer)) and int(width) >= 1
    else:
        ok = number and math.isfinite(float(width)) and float(width) > 0
    if not ok:
        raise InvalidParameterError(
            f"width={width!r} does not fit {'an' if kind == 'integer' else 'a'} {kind} column: a positive integer for integers, a positive number "
            "for floats, a positive timedelta for dates (or leave it out and the width is chosen from the found bounds)"
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


def leaf_counts(tree: RangeTreePlan, values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The exact leaf histogram of sorted distinct ``values`` with their ``counts`` (from
    :func:`~dptree.data.histograms.value_counts`) for ``tree``: clamped and bucketed by the domain,
    the histogram :func:`~dptree.data.histograms.leaf_histogram` gives for the rows (tested equal),
    without a second read of the data. Not private."""
    kind = _kind_of(values)
    leaves = tree.domain.to_leaves(values if kind == "datetime" else _as_search_values(values, kind))
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
        kinds = [k for k in ("integer", "float", "datetime") if _fits(cast(Kind, k), self.origin)]
        if not kinds:  # raises, naming what an origin must be (text asks for a date)
            origin_in_units("datetime" if isinstance(self.origin, str) else "float", self.origin)

    def _placeholder(self) -> RangeTreePlan:
        """The tree's plan on a placeholder domain: checks the tree's parameters and policies."""
        return plan_range_tree(lower=0, upper=1, epsilon=self.tree_epsilon, branching=self.branching,
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
                                    and _fits(cast(Kind, k), self.origin)))

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

    def release(self, values: Any, rng: _noise.RngLike = None, *, column: str | None = None,
                missing: str = "error", source: Any = None, fmt: str | None = None) -> RangeTree:
        """Read ``values`` once (anything :func:`~dptree.data.histograms.value_counts` reads: arrays,
        tables, CSV/Parquet files with ``fmt``, standard input), find the bounds (the search),
        plan the tree over them and release it; one random source for both."""
        self._placeholder().check_public_total(missing=missing)  # before any budget is spent
        src = _noise.make_source(rng)
        created = _release_file.utc_now()  # before the data is read (the module's clock: tests can fix it)
        path = isinstance(values, (str, os.PathLike))
        # numbers from files always get a float domain (a CSV's read as DOUBLE, not DuckDB's guess)
        vals, counts = value_counts(values, column=column, missing=cast(Any, missing), fmt=fmt,
                                    domain=("float", 0.0, 0.0) if path else None)
        kind = _kind_of(vals)  # the column's type: schema, not data
        if kind == "integer" and path:
            vals, kind = vals.astype(np.float64), "float"
        _check_width(kind, self.width)
        search = self.search_for(kind)  # an origin that does not fit the column is refused here
        lower, upper = search.find(kind, vals, counts, src)
        dom = private_domain(kind, lower, upper, self.width)
        tree = self.tree_plan(dom)
        hist = leaf_counts(tree, vals, counts)
        statement = with_private_bounds(tree.statement, self.record(lower, upper, kind))
        return tree.release(hist, src, column=column, source=source, created=created, statement=statement)

    def tree_plan(self, dom: Domain) -> RangeTreePlan:
        """The tree's plan over a found domain with the tree's share of epsilon."""
        if dom.kind == "datetime":
            lower: Any = np.datetime64(int(dom.lower), "ns")
            upper: Any = np.datetime64(int(dom.upper), "ns")
            width: Any = np.timedelta64(int(dom.width), "ns")
        else:
            lower, upper, width = dom.lower, dom.upper, dom.width
        return plan_range_tree(lower=lower, upper=upper, width=width, epsilon=self.tree_epsilon,
                               branching=self.branching, neighbors=self.neighbors,
                               max_contributions=self.max_contributions, levels=self.levels)


def checked_statement(record: Any, tree: RangeTreePlan) -> dict[str, Any]:
    """The statement a release file over private bounds must carry, re-derived from its
    ``parameters.bounds`` (``record``) and its tree plan; refuses a record whose split, search or
    domain do not match (load: the checksum is not a signature)."""
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
    if dom != tree.domain or plan.tree_epsilon != tree.budget.epsilon:
        raise ReleaseFileError("release file: the domain or the budget split does not match the private bounds "
                               "search it records (tampered?)")
    return with_private_bounds(tree.statement, plan.record(lower, upper, kind))


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
                                    "only: drop noise/delta/rho, or declare lower and upper")
    if epsilon is None:
        raise InvalidParameterError("bounds='private' needs epsilon, e.g. epsilon=1.0 (bounds_share of it finds the "
                                    "bounds)")
    check_param("epsilon", epsilon, [Interval(Real, 0, None, closed="neither", hint="e.g. epsilon=1.0")])
    check_param("bounds_share", share, [Interval(Real, 0, 1, closed="neither", hint="e.g. bounds_share=0.1")])
    if by is not None or user_id is not None:
        raise InvalidParameterError("bounds='private' does not support by= or user_id= yet: declare lower and upper "
                                    "(bounds='public') for group-by and user-bounded releases")
    return PrivateBoundsPlan(epsilon=float(epsilon), share=float(share), width=width, branching=branching,
                             neighbors=cast(Relation, neighbors), max_contributions=max_contributions, levels=levels,
                             origin=0 if origin is None else origin)
