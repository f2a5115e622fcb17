"""The private search for a column's range (Durfee 2023: AboveThreshold over candidates that grow
outward from a public origin, one search per end): the candidates, the origin in the column's
units, and :class:`BoundsSearch`. The release over the bounds found, its statement and the proof
are in :mod:`dptree.rangetree.bounds`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal, cast

import numpy as np

from dptree import noise as _noise
from dptree.data.dates import NS_RANGE, dates_to_ns, parse_date_bound
from dptree.errors import DataError, DomainError, InvalidParameterError
from dptree.interior.sparse_vector import above_threshold_scales, first_above_threshold
from dptree.noise import laplace_scale_used
from dptree.privacy.statement import Relation

__all__ = ["BoundsSearch", "Kind", "Side", "RANK_SCALES", "INT_END", "candidates", "column_kind", "origin_fits",
           "origin_in_units", "search_values"]

#: the exponents of the float candidates' steps below 1 (then every power 2^0..2^1022)
FLOAT_STEPS_BELOW_ONE = np.array([-126, -64, -32, -16, -8, -4, -2, -1])
#: the rank t of each end, in units of the query noise scale: t = ceil(RANK_SCALES * scale)
RANK_SCALES = 2
_NS_LO, _NS_HI = NS_RANGE
#: the outermost integer candidates, +-(2^62 - 1): the widest ends an integer domain takes
#: (:func:`~dptree.data.domain.make_domain` refuses |bound| >= 2^62)
INT_END = 2**62 - 1

Kind = Literal["integer", "float", "datetime"]
Side = Literal["low", "high"]


def candidates(kind: Kind, side: Side, origin: int | float = 0) -> np.ndarray:
    """The public candidates of one end, in search order (outward from the public ``origin``).

    Integers: o + 1, o + 2, o + 4, ..., o + 2^62 (high) and o, o - 1, o - 2, ..., o - 2^62 (low),
    each clipped to +-(2^62 - 1) (:data:`INT_END`), so that every candidate is a valid end of an
    integer domain (values are clamped to +-2^62 on reading: the domain's end buckets hold those
    beyond the last candidate). Nanosecond timestamps: the same, clipped to, then ending with, the
    dates a range tree can bound. Floats: the steps 2^-126, 2^-64, 2^-32, 2^-16, 2^-8, 2^-4, 2^-2, 2^-1
    (the exponent halving towards 0), then 1, 2, 4, ..., 2^1022, added to or subtracted from o
    (the low end starts at o), clipped to the finite floats (a span of at most 2^1023 stays finite).
    Each list is monotone (float rounding can repeat a candidate, never reverse the order).

    Below 1 the float steps thin out because every candidate inside the bulk of the data is one
    more chance for AboveThreshold to halt early (a noisy count crossing the threshold): with all
    126 powers 2^-126..2^-1, 300 normal values around the origin at epsilon = 1 had a mean of 110
    records clamped (27% of searches clamped more than 160); with these 8, 63 (4.5%).
    ``benchmarks/private_bounds.py --ladder``; tiny-scale data get a range up to 2^8 times wider."""
    if kind == "float":
        o, big = float(origin), float(np.finfo(np.float64).max)
        steps = np.ldexp(1.0, np.concatenate([FLOAT_STEPS_BELOW_ONE, np.arange(0, 1023)]))
        with np.errstate(over="ignore"):
            if side == "high":
                return np.minimum(o + steps, big)
            return np.concatenate([[o], np.maximum(o - steps, -big)])
    o = int(origin)
    steps_i = [1 << j for j in range(63)]
    lo_end, hi_end = (_NS_LO, _NS_HI) if kind == "datetime" else (-INT_END, INT_END)
    ups = [min(max(o + u, lo_end), hi_end) for u in steps_i]
    downs = [max(min(o - u, hi_end), lo_end) for u in [0, *steps_i]]
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


def origin_fits(kind: Kind, origin: Any) -> bool:
    try:
        origin_in_units(kind, origin)
    except InvalidParameterError:
        return False
    return True


def column_kind(values: np.ndarray) -> Kind:
    k = values.dtype.kind
    if k in "iu":
        return "integer"
    if k == "f":
        return "float"
    if k == "M":
        return "datetime"
    raise DataError("bounds='private' needs a column of numbers or dates (one type); convert the values first")


def search_values(values: np.ndarray, kind: Kind) -> np.ndarray:
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
        vals = search_values(np.asarray(values), kind)
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
