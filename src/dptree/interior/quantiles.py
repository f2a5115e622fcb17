"""A single private quantile (and the median) by the tie-aware exponential mechanism (Kaplan et al. 2020, section 2).

The m = 1 reference for the range-tree quantiles: with q = a/b (the level rounded to a
denominator <= 1000), the utility of y is -dist(q ``|S|``, [#{x < y}, #{x <= y}]) -- 0 when the target
rank falls inside y's tie block -- as the integer score b times it, of sensitivity b under
add/remove-one and replace-one; P(y) is proportional to exp(epsilon * score / (2b)) over the
public domain [lower, upper], sampled exactly block by block
(:func:`dptree.interior.selection.quantile_exponential_mechanism`, which states the proof;
McSherry & Talwar 2007; Kaplan et al. 2020, Lemma 2.2).

Releases made with the untied score (statement ``_LEGACY_MECHANISM``, score
-|b #{x <= y} - a ``|S|``|, also sensitivity b) still load: their statement names the mechanism that
made them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Real
from typing import Any, ClassVar, Literal, Mapping

from dptree._validation import Constraint, InstanceOf, Interval, check_param, validate_params
from dptree.data.domain import Domain, point_domain
from dptree.data.histograms import COLUMN
from dptree.errors import ReleaseFileError
from dptree.interior.calibration import DECLARED_SIZE, EPSILON, ON_INVALID, declared_size
from dptree.interior.encoding import checked_point_domain, domain_document, domain_from_document, prepare
from dptree.interior.selection import exponential_base, quantile_badness, quantile_exponential_mechanism, quantile_level
from dptree.interior.staged import staged_point
from dptree.io.contract import Release, shown
from dptree.io.release_file import check_metadata, creation_metadata
from dptree.noise import RngLike, make_source
from dptree.noise.sources import RNG
from dptree.privacy.boundary import Boundary
from dptree.privacy.budget import Budget, check_release_budget
from dptree.privacy.loss import Exponential, PrivacyLoss
from dptree.privacy.statement import Neighbors, check_statement, make_statement, read_statement
from dptree.privacy.unit import PrivacyUnit, privacy_values

__all__ = ["QuantilePlan", "QuantileRelease", "median", "plan_quantile", "quantile"]

Q = [Interval(Real, 0, 1, hint="the quantile level as a fraction, e.g. q=0.9 for the 90th percentile")]


_MECHANISM = ("single quantile: tie-aware exponential mechanism with score -dist(a |S|, [b #{x < y}, b #{x <= y}]) "
              "for the level q ~ a/b, b <= 1000, counting measure on the domain (sensitivity b; Kaplan et al. 2020, "
              "Lemma 2.2)")
#: the statement of releases made with the untied score (loaded, never made)
_LEGACY_MECHANISM = ("single quantile: exponential mechanism with score -|b #{x <= y} - a |S|| for the level "
                     "q ~ a/b, b <= 1000 (sensitivity b; Kaplan et al. 2020, Lemma 2.2)")


def _statement(epsilon: float, private: bool, mechanism: str = _MECHANISM) -> dict[str, Any]:
    return make_statement(
        mechanism=mechanism,
        neighbors=Neighbors("add_remove"), guarantee="pure epsilon-DP", private=private,
        replace="also holds: replace-one neighbors (the score has sensitivity b under both)",
        budget_spent={"epsilon": epsilon, "delta": 0.0},
    )


@dataclass(frozen=True, repr=False)
class QuantileRelease(Release):
    """A private single quantile: ``value`` at level ``q`` (``q_used`` the rational level used).

    ``n_declared``: the public size the caller declared (None if none; ``n_is_upper_bound`` when
    it was ``n_max``); the mechanism does not need it (the count inside the score is handled by
    the exponential mechanism's sensitivity). Everything but ``value`` is public.
    """

    KIND: ClassVar[str] = "quantile"
    PLOT: ClassVar[str | None] = "point"  # how plot() draws it (dptree.io.display)
    #: the privacy boundary (:mod:`dptree.privacy.boundary`)
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "metadata", "metadata.*"), noisy=("measurements.value",)
    )

    value: Any
    q: float
    q_used: Fraction
    epsilon: float
    n_declared: int | None
    privacy: dict[str, Any]
    n_is_upper_bound: bool = field(default=False, kw_only=True)
    lower: Any = field(default=0, kw_only=True)
    upper: Any = field(default=0, kw_only=True)
    metadata: dict[str, Any] = field(default_factory=dict, kw_only=True)
    #: a date domain's resolution (numpy timedelta64); None on numeric domains
    width: Any = field(default=None, kw_only=True)

    @property
    def n_public(self) -> bool:
        """Whether the caller declared a (public) size."""
        return self.n_declared is not None

    def summary(self) -> str:
        return (f"QuantileRelease q={self.q:g}: {shown(self.value)} over [{shown(self.lower)}, {shown(self.upper)}], "
                f"{self.epsilon:g}-DP (pure){'' if self.private else ', NOT PRIVATE (test seed)'}")

    def to_frame(self) -> Any:
        """One row: q, estimate, then the public fields (no standard error: the exponential
        mechanism's output has no variance model)."""
        from dptree.io.frames import result_frame

        return result_frame({"q": [self.q]}, estimate=[self.value], extra={
            "epsilon": [self.epsilon], "n_declared": [self.n_declared], "private": [self.private]})

    def to_document(self) -> dict[str, Any]:
        """The file's parts (:mod:`dptree.io.release_file`); the quantile is the measurement."""
        enc = point_domain(self.lower, self.upper, self.width)
        params = {
            "domain": domain_document(enc), "q": self.q,
            "q_used": f"{self.q_used.numerator}/{self.q_used.denominator}", "epsilon": self.epsilon,
            "n_declared": self.n_declared, "n_is_upper_bound": self.n_is_upper_bound,
        }
        return {"privacy": self.privacy, "parameters": params, "measurements": {"value": enc.dump(self.value)},
                "metadata": self.metadata}

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> QuantileRelease:
        """Rebuild a saved quantile, re-checking the level, the budget and the statement."""
        kind = cls.KIND
        privacy = read_statement(doc["privacy"], kind=kind)
        p, value = doc["parameters"], doc["measurements"]["value"]
        enc = domain_from_document(p["domain"], kind)
        check_param("q", p["q"], Q)
        check_param("epsilon", p["epsilon"], EPSILON)
        check_param("n_declared", p["n_declared"], DECLARED_SIZE)
        check_param("n_is_upper_bound", p["n_is_upper_bound"], [InstanceOf(bool)])
        eps, qf = check_release_budget(p["epsilon"]), float(p["q"])
        q_used = quantile_level(qf)
        if p["q_used"] != f"{q_used.numerator}/{q_used.denominator}":
            raise ReleaseFileError(f"{kind} release: q_used does not match q")
        if privacy.get("mechanism") == _LEGACY_MECHANISM:  # the untied score: its own statement
            derived = _statement(eps, privacy["private"], _LEGACY_MECHANISM)
        else:
            derived = _plan_on(qf, eps, enc, *enc.bounds, enc.resolution, p["n_declared"], p["n_is_upper_bound"]).statement
        check_statement(privacy, derived, kind=kind)
        value = enc.load(value)
        if not enc.contains(value):
            raise ReleaseFileError(f"{kind} release: the measurement must be a point of the domain")
        return QuantileRelease(value, qf, q_used, eps, p["n_declared"], privacy, n_is_upper_bound=p["n_is_upper_bound"],
                               lower=enc.bounds[0], upper=enc.bounds[1], metadata=check_metadata(doc.get("metadata")),
                               width=enc.resolution)


@dataclass(frozen=True)
class QuantilePlan:
    """Everything public about a single-quantile release, decided before any data is read: the
    level q and the rational q_used = a/b, the domain, the declared size (echoed, not used), the
    budget and the statement. The mechanism is one tie-aware exponential mechanism (McSherry &
    Talwar 2007; Kaplan, Ligett, Mansour, Naor & Stemmer 2020, Lemma 2.2); :meth:`release` runs it.

    >>> plan_quantile(0.9, lower=0, upper=100, epsilon=0.5).privacy_loss().epsilon()
    0.5
    """

    q: float
    q_used: Fraction
    epsilon: float
    encoding: Domain
    lower: Any
    upper: Any
    width: Any = None
    n_declared: int | None = None
    n_is_upper_bound: bool = False
    statement: dict[str, Any] = field(default_factory=dict)

    @property
    def budget(self) -> Budget:
        return Budget.pure(self.epsilon)

    @property
    def neighbors(self) -> Neighbors:
        return Neighbors("add_remove")

    def privacy_loss(self) -> PrivacyLoss:
        """One exponential mechanism at epsilon (its integer score has sensitivity b under
        add/remove-one and replace-one)."""
        return PrivacyLoss(self.neighbors, (Exponential(self.epsilon, f"tie-aware exponential mechanism, level "
                                                        f"{self.q_used.numerator}/{self.q_used.denominator}"),))

    def release(self, data: Any, *, column: str | None = None, on_invalid: Literal["error", "drop"] = "error",
                rng: RngLike = None, counts: Sequence[int] | None = None) -> QuantileRelease:
        """Run the exponential mechanism on ``data`` (the one private step; reading options as in
        :func:`quantile`)."""
        check_param("on_invalid", on_invalid, ON_INVALID)
        check_param("rng", rng, RNG)
        check_param("column", column, COLUMN)
        eps, qf, qr, enc = self.epsilon, self.q, self.q_used, self.encoding
        metadata = creation_metadata()  # the clock, read before the data
        src = make_source(rng)
        # the only step that reads the data: the tie-aware exponential mechanism (sensitivity b); files,
        # relations and Spark DataFrames by staged engine queries, the same law and draws (dptree.interior.staged)
        b = qr.denominator
        y = staged_point(data, column, counts, enc, on_invalid, src,
                         lambda n: quantile_badness(qr, n) if b * n < 1 << 62 else None, exponential_base(eps, b),
                         lambda: quantile_exponential_mechanism([], q=qf, lower=0, upper=enc.size - 1, epsilon=eps,
                                                                rng=src))
        if y is None:
            enc, vals, cnt = prepare(data, self.lower, self.upper, counts, on_invalid, column, self.width)
            y = quantile_exponential_mechanism(vals, counts=cnt, q=qf, lower=0, upper=enc.size - 1, epsilon=eps,
                                               rng=src)
        lo, hi = enc.bounds
        return QuantileRelease(enc.value_at(y), qf, qr, eps, self.n_declared,
                               {**self.statement, "private": bool(src.private)}, n_is_upper_bound=self.n_is_upper_bound,
                               lower=lo, upper=hi, metadata=metadata, width=enc.resolution)


#: the constraints of the public parameters of a single-quantile plan, and of reading the data
_PLAN: dict[str, Sequence[Constraint | None]] = {"epsilon": EPSILON, "n": DECLARED_SIZE, "n_max": DECLARED_SIZE}
_READING: dict[str, Sequence[Constraint | None]] = {"on_invalid": ON_INVALID, "rng": RNG, "column": COLUMN}


@privacy_values
@validate_params({"q": Q, **_PLAN})
def plan_quantile(q: float, *, lower: Any, upper: Any, epsilon: float, n: int | None = None,
                  n_max: int | None = None, width: Any = None,
                  unit: PrivacyUnit | None = None, budget: Budget | None = None) -> QuantilePlan:
    """The plan of a single-quantile release (:func:`quantile`) from public parameters only; every
    refusal they cause happens here. ``q=0.5`` plans :func:`median`."""
    eps = check_release_budget(epsilon)
    size_n, upper_bound = declared_size(n, n_max)
    return _plan_on(float(q), eps, checked_point_domain(lower, upper, width), lower, upper, width, size_n, upper_bound)


def _plan_on(q: float, eps: float, enc: Domain, lower: Any, upper: Any, width: Any, size_n: int | None,
             upper_bound: bool) -> QuantilePlan:
    """The plan over the encoded domain ``enc`` (of [lower, upper] at ``width``), parameters checked."""
    return QuantilePlan(q, quantile_level(q), eps, enc, lower, upper, width, size_n, upper_bound, _statement(eps, True))


@privacy_values
@validate_params({"q": Q, **_PLAN, **_READING})
def quantile(
    values: Any,
    q: float,
    *,
    lower: Any,
    upper: Any,
    epsilon: float,
    rng: RngLike = None,
    counts: Sequence[int] | None = None,
    n: int | None = None,
    n_max: int | None = None,
    on_invalid: Literal["error", "drop"] = "error",
    column: str | None = None,
    width: Any = None,
    unit: PrivacyUnit | None = None,
    budget: Budget | None = None,
) -> QuantileRelease:
    """Single quantile by the tie-aware exponential mechanism (epsilon-DP, add/remove or replace one record).

    With q = a/b (the level rounded to a denominator <= 1000), the utility of y is
    -dist(q ``|S|``, [#{x < y}, #{x <= y}]): 0 when the target rank q ``|S|`` falls inside y's tie block
    (so on tied data the tied value itself is the answer), minus the distance in ranks otherwise.
    Its integer form b times that has sensitivity b under add/remove-one and replace-one (proof in
    :func:`~dptree.interior.selection.quantile_exponential_mechanism`); P(y) proportional to
    exp(epsilon * score / (2b)) over [lower, upper], sampled exactly block by block (the score is
    constant on each distinct data value and on each gap between them). The record count only
    enters inside the mechanism's score; nothing else reads it. ``n``/``n_max`` (a **public**
    declared size, optional) are accepted for a uniform API and echoed as ``n_declared``; the
    mechanism needs no size. ``on_invalid``, ``column`` (tables, files, DuckDB relations, Spark
    DataFrames, counted in their engine) and dates (``lower``/``upper`` dates, ``width`` the
    resolution) as in :func:`~dptree.interior.api.interior_point`.

    Example (``rng=7`` seeds the noise only so that the outputs below are reproducible: a seeded release
    is marked not private; leave ``rng`` out in real use)::

        >>> import numpy as np, dptree
        >>> ages = 18 + np.arange(10_000) % 73  # ages 18 to 90, evenly: the 0.9-quantile is 83
        >>> dptree.quantile(ages, 0.9, lower=0, upper=120, epsilon=1.0, rng=7).value
        83
    """
    return plan_quantile(q, lower=lower, upper=upper, epsilon=epsilon, n=n, n_max=n_max, width=width).release(
        values, column=column, on_invalid=on_invalid, rng=rng, counts=counts)


@privacy_values
@validate_params({**_PLAN, **_READING})
def median(
    values: Any,
    *,
    lower: Any,
    upper: Any,
    epsilon: float,
    rng: RngLike = None,
    counts: Sequence[int] | None = None,
    n: int | None = None,
    n_max: int | None = None,
    on_invalid: Literal["error", "drop"] = "error",
    column: str | None = None,
    width: Any = None,
    unit: PrivacyUnit | None = None,
    budget: Budget | None = None,
) -> QuantileRelease:
    """The private median: :func:`quantile` at q = 1/2 (epsilon-DP, add/remove or replace one
    record). ``n``/``n_max``: an optional **public** declared size (not needed by the mechanism);
    ``column``, ``width``: as in :func:`quantile`.

    Example (``rng=7`` seeds the noise only so that the outputs below are reproducible: a seeded release
    is marked not private; leave ``rng`` out in real use)::

        >>> import numpy as np, dptree
        >>> ages = 18 + np.arange(10_000) % 73  # ages 18 to 90, evenly
        >>> dptree.median(ages, lower=0, upper=120, epsilon=1.0, rng=7).value
        54
    """
    return quantile(values, 0.5, lower=lower, upper=upper, epsilon=epsilon, rng=rng, counts=counts, n=n,
                    n_max=n_max, on_invalid=on_invalid, column=column, width=width)
