"""``interior_point``: a private point between the minimum and the maximum of the data (Kaplan et al. 2020).

An *interior point* of a multiset S is any y with min S <= y <= max S (Kaplan et al. 2020,
``002_2f350810784938f5.txt``, Def. 1.1). :func:`interior_point` releases one by

* ``"exponential"`` -- the exponential mechanism with q(S, y) = min(#{x<=y}, #{x>=y}) (pure eps);
* ``"treelog"`` -- Algorithm 1 (TreeLog, :mod:`dptree.interior.treelog`), privacy from Lemma 3.7;
* ``"heavypaths"`` -- Algorithms 2-6 (:mod:`dptree.interior.heavypaths`), privacy from Lemmas 4.5,
  4.6, 4.9 and 4.11 with explicit constants (derivation: docs/notes/heavypaths.md);
* ``"auto"`` -- the method whose stated sample requirement at (``|X|``, eps, delta, beta) is smallest.

The walk: public checks -> the plan (:func:`plan_interior_point`, :class:`InteriorPointPlan`; its
calibration in :mod:`dptree.interior.calibration`, public inputs only) -> the
data (:mod:`dptree.interior.encoding`) -> the mechanism -> :class:`InteriorPoint`.

**The number of records is private; a size is public only when the caller declares it.**
TreeLog and HeavyPaths calibrate eps0, delta0 and t from a size (Lemma 3.7 has log n and
delta0 <= eps0/(4n)). dptree never uses the actual ``|S|`` for that: the caller declares ``n=`` (an
exact public size) or ``n_max=`` (a public upper bound) and the declared value N drives every
calibration, the ``method="auto"`` choice and ``guarantee_applies``. To stay private for *any*
data whatever was declared, the tree methods first cap the data at N records (ceil(k/2) smallest,
floor(k/2) largest removed when k = ``|S|`` - N > 0; an interior point of the rest is an interior
point of S) and are calibrated for datasets of at most N + 1 records. No field of a release is
computed from ``|S|``.

**Neighboring relations.** Lemma 3.6 (TreeLog), Lemmas 4.6/4.9/4.11 (HeavyPaths) are proved for
add/remove-one neighbors. The cap maps some add/remove pairs to replace pairs and a replace pair
is a removal followed by an addition, so the tree methods run their calibration at
(eps/2, delta/(1 + e^(eps/2))) and are (eps, delta)-DP under both add/remove-one and replace-one
(group privacy, docs/notes/interior_point.md). The exponential mechanism's quality has sensitivity 1
under both relations (pure eps, no size used).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Mapping

from dptree._validation import Constraint, InstanceOf, check_param, validate_params
from dptree.data.domain import Domain, point_domain
from dptree.data.histograms import COLUMN
from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.interior.calibration import (
    BETA,
    DECLARED_SIZE,
    DELTA,
    EPSILON,
    METHOD,
    ON_INVALID,
    TREE_METHODS,
    Method,
    Plan,
    check_budget,
    declared_size,
    plan,
)
from dptree.interior.encoding import checked_point_domain, domain_document, domain_from_document, prepare
from dptree.interior.heavypaths import run_heavypaths
from dptree.interior.multisets import MS, height
from dptree.interior.selection import exponential_base, interior_badness, ordered_exponential_mechanism
from dptree.interior.sparse_vector import above_threshold_scales
from dptree.interior.staged import staged_point
from dptree.interior.treelog import run_treelog
from dptree.io.contract import Release, shown
from dptree.io.release_file import check_metadata, creation_metadata
from dptree.noise import RngLike, laplace_scale_used, make_source
from dptree.noise.sources import RNG
from dptree.privacy.boundary import Boundary
from dptree.privacy.budget import Budget, check_release_budget
from dptree.privacy.loss import ApproxDP, Exponential, Measurement, PrivacyLoss, PureDP
from dptree.privacy.statement import Neighbors, check_statement, read_statement
from dptree.privacy.unit import PrivacyUnit, privacy_values

__all__ = ["InteriorPoint", "InteriorPointPlan", "interior_point", "plan_interior_point"]


@dataclass(frozen=True, repr=False)
class InteriorPoint(Release):
    """A private interior point: ``value`` (and ``bottom``) is the release, every other field is public.

    Public fields are the caller's parameters or functions of them only (never of the data):
    ``lower``/``upper`` the domain, ``n_declared`` the size the caller declared (``n=`` or
    ``n_max=``; None if none), ``n_is_upper_bound`` whether it was ``n_max``.
    ``guarantee_applies``: whether the method's stated success guarantee (an interior point with
    probability >= 1 - beta) holds at the declared size -- True/False for a declared exact n,
    False or None (unknown: it depends on the actual size) for ``n_max``, None when no size was
    declared; ``n_required`` the size from which it does. ``parameters``: the method's
    calibration. ``privacy``: the statement (``private`` is False when a seeded, test-only random
    source was used). ``metadata``: the creation time.

    ``bottom``: True when the mechanism returned its bottom symbol (no answer: a Choosing
    Mechanism or StoppingPoint's AboveThreshold found nothing heavy enough, or TreeLog's Step 7
    chose nothing); ``value`` is then the data-independent placeholder ``lower`` and is *not*
    an interior point of anything. The bit is part of the private output (the mechanism's
    output is "bottom" or a point; the placeholder is post-processing), hence declared noisy.
    Always False for the exponential mechanism, which has no bottom.
    """

    PLOT: ClassVar[str | None] = "point"  # how plot() draws it (dptree.io.display)
    KIND: ClassVar[str] = "interior_point"
    #: the privacy boundary (:mod:`dptree.privacy.boundary`)
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "metadata", "metadata.*"),
        noisy=("measurements.value", "measurements.bottom"),
    )

    value: Any
    method: str
    epsilon: float
    delta: float
    beta: float
    n_declared: int | None
    n_is_upper_bound: bool
    n_required: int | None
    guarantee_applies: bool | None
    privacy: dict[str, Any]
    parameters: dict[str, Any] = field(default_factory=dict)
    bottom: bool = False
    lower: Any = field(default=0, kw_only=True)
    upper: Any = field(default=0, kw_only=True)
    metadata: dict[str, Any] = field(default_factory=dict, kw_only=True)
    #: a date domain's resolution (numpy timedelta64); None on numeric domains
    width: Any = field(default=None, kw_only=True)

    @property
    def budget(self) -> Budget:
        """The (pure or approximate) DP budget of the release."""
        if self.delta == 0:
            return Budget.pure(self.epsilon)
        return Budget.approx(self.epsilon, self.delta)

    def summary(self) -> str:
        declared = "none" if self.n_declared is None else (
            f"{'n_max' if self.n_is_upper_bound else 'n'}={self.n_declared}")
        out = "bottom (no answer)" if self.bottom else shown(self.value)
        return (f"InteriorPoint {out} by {self.method} over [{shown(self.lower)}, {shown(self.upper)}], "
                f"{self.budget.describe()}, declared {declared}{'' if self.private else ', NOT PRIVATE (test seed)'}")

    def to_frame(self) -> Any:
        """One row: estimate (the released point), then the public fields (no standard error or
        interval: the guarantee is that the point lies between the data's minimum and maximum)."""
        from dptree.io.frames import result_frame

        return result_frame({}, estimate=[self.value], extra={
            "method": [self.method], "epsilon": [self.epsilon], "delta": [self.delta], "beta": [self.beta],
            "n_declared": [self.n_declared], "guarantee_applies": [self.guarantee_applies],
            "private": [self.private]})

    def to_document(self) -> dict[str, Any]:
        """The file's parts (:mod:`dptree.io.release_file`): the domain, budget, declared size and
        calibration are public; the point and the bottom bit are the measurement."""
        enc = point_domain(self.lower, self.upper, self.width)
        params = {
            "domain": domain_document(enc), "method": self.method,
            "epsilon": self.epsilon, "delta": self.delta, "beta": self.beta, "n_declared": self.n_declared,
            "n_is_upper_bound": self.n_is_upper_bound, "n_required": self.n_required,
            "guarantee_applies": self.guarantee_applies, "calibration": _json(self.parameters),
        }
        return {"privacy": self.privacy, "parameters": params,
                "measurements": {"value": enc.dump(self.value), "bottom": self.bottom}, "metadata": self.metadata}

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> InteriorPoint:
        """Rebuild a saved release: the plan is re-derived from the public parameters (method,
        budget, beta, declared size) and must match the file's calibration and statement."""
        kind = cls.KIND
        privacy = read_statement(doc["privacy"], kind=kind)
        p, m = doc["parameters"], doc["measurements"]
        enc = domain_from_document(p["domain"], kind)
        method, cal = p["method"], p["calibration"]
        if method not in ("exponential", *TREE_METHODS) or not isinstance(cal, Mapping):
            raise ReleaseFileError(f"{kind} release: unknown method {method!r}")
        eps, dlt, beta = check_budget(p["epsilon"], p["delta"], p["beta"])
        n, upper = p["n_declared"], p["n_is_upper_bound"]
        check_param("n_declared", n, DECLARED_SIZE)
        check_param("n_is_upper_bound", upper, [InstanceOf(bool)])
        if (n is None and upper) or (method in TREE_METHODS and (n is None or dlt == 0)):
            raise ReleaseFileError(f"{kind} release: {method} needs a declared size and delta > 0")
        lower, upper_end = enc.bounds
        planned = _plan_on(enc, lower, upper_end, enc.resolution, "auto" if "auto" in cal else method, eps, dlt, beta, n,
                           upper, True)
        derived = planned.calibrated
        stated = (method, p["delta"], p["n_required"], p["guarantee_applies"], cal)
        if (derived.method, derived.delta, derived.n_required, derived.guarantee_applies,
                _json(derived.calibration)) != stated:
            raise ReleaseFileError(f"{kind} release: the calibration does not match its public parameters")
        check_statement(privacy, planned.statement, kind=kind)
        value, bottom = enc.load(m["value"]), m["bottom"]
        if type(bottom) is not bool or not enc.contains(value) or (
                bottom and (method == "exponential" or value != enc.value_at(0))):
            raise ReleaseFileError(f"{kind} release: the measurement must be a point of the domain, or bottom")
        return _result(derived, value, bottom, enc, privacy, check_metadata(doc.get("metadata")))


def _json(x: Any) -> Any:
    """``x`` as it reads back from JSON (tuples become lists)."""
    if isinstance(x, dict):
        return {k: _json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json(v) for v in x]
    return x


def _result(pl: Plan, value: Any, bottom: bool, enc: Domain, privacy: dict[str, Any],
            metadata: dict[str, Any]) -> InteriorPoint:
    lower, upper = enc.bounds
    return InteriorPoint(value, pl.method, pl.epsilon, pl.delta, pl.beta, pl.n_declared, pl.n_is_upper_bound,
                         pl.n_required, pl.guarantee_applies, privacy, pl.calibration, bottom,
                         lower=lower, upper=upper, metadata=metadata, width=enc.resolution)


@dataclass(frozen=True)
class InteriorPointPlan:
    """Everything public about an interior-point release (Kaplan, Ligett, Mansour, Naor & Stemmer
    2020), decided before any data is read: the method ``"auto"`` resolved to, its calibration,
    ``n_required`` and ``guarantee_applies`` at the declared size, the budget and the privacy
    statement. :meth:`release` is the one private step.

    >>> plan = plan_interior_point(lower=0, upper=1000, epsilon=1.0)
    >>> plan.method, plan.privacy_loss().epsilon()
    ('exponential', 1.0)
    """

    encoding: Domain
    calibrated: Plan
    lower: Any
    upper: Any
    width: Any = None
    statement: dict[str, Any] = field(default_factory=dict)

    @property
    def method(self) -> str:
        return self.calibrated.method

    @property
    def budget(self) -> Budget:
        """What the release spends: pure epsilon for the exponential mechanism, else (epsilon, delta)."""
        pl = self.calibrated
        return Budget.pure(pl.epsilon) if pl.delta == 0 else Budget.approx(pl.epsilon, pl.delta)

    @property
    def neighbors(self) -> Neighbors:
        return Neighbors("add_remove")

    @property
    def n_required(self) -> int | None:
        return self.calibrated.n_required

    @property
    def guarantee_applies(self) -> bool | None:
        return self.calibrated.guarantee_applies

    @property
    def calibration(self) -> dict[str, Any]:
        return self.calibrated.calibration

    def privacy_loss(self) -> PrivacyLoss:
        """The noisy steps with their public parameters (module docstring for the relations).

        Exponential mechanism: one ``Exponential(epsilon)`` (Lemma 2.2). Tree methods: each is
        calibrated at (e, d) = (epsilon/2, delta/(1 + e^(epsilon/2))) per add/remove change, and one
        change of the capped data is at most two (a removal and an addition), so the steps of the
        first change are listed at their (e, d) shares and those of the second with their deltas
        times e^e (group privacy: (2e, (1 + e^e) d) = (epsilon, delta)). TreeLog: one
        ``ApproxDP`` per change (Lemma 3.7). HeavyPaths: StoppingPoint's AboveThreshold,
        ``PureDP(epsilon1)`` (Theorem 4.2), then the failure event of Lemma 4.5 (<= d/4),
        OneRandomPath (Lemma 4.6) and the LevelUps (Lemma 4.9, advanced composition) as one
        ``ApproxDP`` of the rest; each lemma's proven value is in the label and at most its share.
        """
        pl, cal = self.calibrated, self.calibrated.calibration
        if pl.method == "exponential":
            return PrivacyLoss(self.neighbors, (Exponential(pl.epsilon, "exponential mechanism over the ordered "
                                                "domain, q(S, y) = min(#{x <= y}, #{x >= y}) (Lemma 2.2)"),))
        e_in, d_in = cal["epsilon_per_change"], cal["delta_per_change"]
        proven = "proven ({:.6g}, {:.6g})".format(*cal["privacy"])
        if pl.method == "treelog":
            steps: list[tuple[float, float, str]] = [(e_in, d_in, f"TreeLog (Algorithm 1, Lemma 3.7; {proven})")]
        else:
            steps = [(cal["eps1"], 0.0, "StoppingPoint: AboveThreshold (Algorithm 3, Theorem 4.2)"),
                     (e_in - cal["eps1"], d_in, "StoppingPoint's failure event (Lemma 4.5, <= delta/4), OneRandomPath "
                      f"(Lemma 4.6) and the LevelUps (Lemma 4.9, advanced composition) ({proven} with StoppingPoint)")]
        out: list[Measurement] = []
        for change, factor in (("first change", 1.0), ("second change, group privacy", math.exp(e_in))):
            for e, d, what in steps:
                label = f"{what}; {change}"
                out.append(PureDP(e, label) if d == 0 else ApproxDP(e, d * factor, label))
        return PrivacyLoss(self.neighbors, tuple(out))

    def release(self, data: Any, *, column: str | None = None, on_invalid: Literal["error", "drop"] = "error",
                rng: RngLike = None, counts: Sequence[int] | None = None) -> InteriorPoint:
        """Run the planned mechanism on ``data`` (the one private step; reading options as in
        :func:`interior_point`)."""
        check_param("on_invalid", on_invalid, ON_INVALID)
        check_param("rng", rng, RNG)
        check_param("column", column, COLUMN)
        pl, enc = self.calibrated, self.encoding
        lower, upper, width = self.lower, self.upper, self.width
        metadata = creation_metadata()  # the clock, read before the data (no timing of the reading)
        src = make_source(rng)
        y: int | None
        if pl.method == "exponential":
            eps = pl.epsilon
            # files, relations and Spark DataFrames: staged engine queries, the same law and draws
            # (dptree.interior.staged)
            y = staged_point(data, column, counts, enc, on_invalid, src,
                             lambda n: interior_badness(n) if n < 1 << 62 else None, exponential_base(eps, 1),
                             lambda: ordered_exponential_mechanism([], lower=0, upper=enc.size - 1, epsilon=eps,
                                                                   rng=src))
            if y is None:
                enc, vals, cnt = prepare(data, lower, upper, counts, on_invalid, column, width)
                y = ordered_exponential_mechanism(vals, counts=cnt, lower=0, upper=enc.size - 1, epsilon=eps, rng=src)
        else:
            enc, vals, cnt = prepare(data, lower, upper, counts, on_invalid, column, width)
            assert pl.n_declared is not None
            # the tree methods hold the distinct values and counts as arrays (multisets.MS), not one object per row
            ms = MS(vals, cnt).cap(pl.n_declared)  # at most the declared size (module docstring)
            run = run_treelog if pl.method == "treelog" else run_heavypaths
            y = run(ms, height(enc.size), pl.calibration, src)
        is_bottom = y is None  # part of the mechanism's output (reported as ``bottom``)
        value = enc.value_at(0 if y is None else y)  # bottom -> the data-independent placeholder ``lower``
        return _result(pl, value, is_bottom, enc, {**self.statement, "private": bool(src.private)}, metadata)


def _check_samplers(pl: Plan) -> None:
    """Build every discrete-Laplace scale the planned mechanism draws at (a NoiseScaleError for one
    no sampler can run), so that a parameter no mechanism runs with fails before any charge."""
    if pl.method == "heavypaths":
        for scale in above_threshold_scales(pl.calibration["eps1"]):
            laplace_scale_used(scale)


#: the constraints of the public parameters of an interior-point plan
_PLAN: dict[str, Sequence[Constraint | None]] = {
    "epsilon": EPSILON, "delta": DELTA, "method": METHOD, "beta": BETA, "n": DECLARED_SIZE, "n_max": DECLARED_SIZE,
    "run_anyway": [InstanceOf(bool)],
}


@privacy_values
@validate_params(_PLAN)
def plan_interior_point(
    *,
    lower: Any,
    upper: Any,
    epsilon: float,
    delta: float = 0.0,
    method: Method = "auto",
    beta: float = 0.1,
    run_anyway: bool = False,
    n: int | None = None,
    n_max: int | None = None,
    width: Any = None,
    unit: PrivacyUnit | None = None,
    budget: Budget | None = None,
) -> InteriorPointPlan:
    """The plan of an interior-point release from public parameters only (Kaplan, Ligett, Mansour,
    Naor & Stemmer 2020): validation, the method ``"auto"`` picks, the calibration of TreeLog or
    HeavyPaths at the declared size, ``n_required``, ``guarantee_applies`` and the statement.
    Parameters as in :func:`interior_point`; every refusal they cause happens here."""
    eps = check_release_budget(epsilon)
    dlt, b = float(delta), float(beta)
    if method in TREE_METHODS and dlt == 0:
        raise InvalidParameterError(
            f"method={method!r} needs delta > 0 (approximate DP); pass e.g. delta=1e-6, "
            "or use method='exponential' (pure epsilon-DP)", parameter="method"
        )
    size_n, upper_bound = declared_size(n, n_max)
    if method in TREE_METHODS and size_n is None:
        raise InvalidParameterError(
            f"method={method!r} calibrates eps0, delta0 and t from the number of records, which is "
            "private unless declared: pass n= (the exact public size) or n_max= (a public upper "
            "bound), or use method='exponential', which needs no size", parameter="method"
        )
    return _plan_on(checked_point_domain(lower, upper, width), lower, upper, width, method, eps, dlt, b, size_n, upper_bound,
                    run_anyway)


def _plan_on(enc: Domain, lower: Any, upper: Any, width: Any, method: str, eps: float, dlt: float, beta: float,
             size_n: int | None, upper_bound: bool, run_anyway: bool) -> InteriorPointPlan:
    """The plan over the encoded domain ``enc`` (of [lower, upper] at ``width``), parameters checked."""
    pl = plan(method, enc.size, eps, dlt, beta, size_n, upper_bound, run_anyway=run_anyway)
    _check_samplers(pl)
    return InteriorPointPlan(enc, pl, lower, upper, width, pl.statement(True))


@privacy_values
@validate_params({**_PLAN, "on_invalid": ON_INVALID, "rng": RNG, "column": COLUMN})
def interior_point(
    values: Any,
    *,
    lower: Any,
    upper: Any,
    epsilon: float,
    delta: float = 0.0,
    method: Method = "auto",
    beta: float = 0.1,
    rng: RngLike = None,
    counts: Sequence[int] | None = None,
    run_anyway: bool = False,
    n: int | None = None,
    n_max: int | None = None,
    on_invalid: Literal["error", "drop"] = "error",
    column: str | None = None,
    width: Any = None,
    unit: PrivacyUnit | None = None,
    budget: Budget | None = None,
) -> InteriorPoint:
    """Release a point between min and max of ``values`` with differential privacy (Kaplan et al. 2020).

    ``method``: "exponential" (epsilon-DP; delta ignored; needs no size), "treelog" (Algorithm 1;
    (epsilon, delta)-DP by Lemma 3.7), "heavypaths" (Algorithm 6; (epsilon, delta)-DP by Lemma 4.11
    with the constants of docs/notes/heavypaths.md), or "auto".

    ``n`` / ``n_max`` -- **public** size declared by the caller: ``n`` the exact number of records,
    ``n_max`` an upper bound. Both are treated as public knowledge (publish them or derive them
    from public facts; never compute them from the private data). The declared value N -- never
    the actual number of records -- drives the TreeLog/HeavyPaths calibration (eps0, delta0, t),
    the ``auto`` choice and ``guarantee_applies``. The tree methods require it; they cap the data
    at N records (the most extreme records beyond N are dropped) so that the release is
    (epsilon, delta)-DP for *any* data, whatever was declared; a wrong declaration only costs
    utility. ``auto`` without a declared size uses the exponential mechanism (the only method
    whose calibration needs no size); with one it takes the method with the smallest stated
    sample requirement at (``|X|``, epsilon, delta, beta) and raises :class:`InsufficientDataError`
    when the declared N is below it (public quantities only) unless ``run_anyway=True``.

    Neighboring relation: every method is (epsilon, delta)-DP for add/remove-one *and*
    replace-one neighbors (module docstring; ``privacy["replace"]``). ``counts`` optionally gives
    multiplicities of ``values``. ``on_invalid``: "error" refuses NaN/infinite values (and
    non-integers in an integer domain) without saying which or how many; "drop" removes such
    records (a per-record, data-independent policy; the count dropped is never revealed).

    ``values``: an array-like, or with ``column=`` a table (pandas, polars, Arrow), a CSV/Parquet
    path, a DuckDB relation or a Spark DataFrame; it is counted in its engine (sorted distinct
    values and counts, :func:`dptree.data.histograms.value_counts`), never one Python object per row.

    Dates: ``lower``/``upper`` as dates, datetimes or ISO text make a date domain whose points are
    whole units of ``width`` (a timedelta, default one day) from ``lower`` -- a record at time t
    counts as lower + floor((t - lower) / width) width, the bucket a range tree over the same bounds
    puts it in -- and the point is released as a ``numpy.datetime64``. ``width`` is refused on
    numeric domains.

    Example (``rng=7`` seeds the noise only so that the outputs below are reproducible: a seeded release
    is marked not private; leave ``rng`` out in real use)::

        >>> import numpy as np, dptree
        >>> ages = 18 + np.arange(10_000) % 73  # ages 18 to 90, evenly
        >>> point = dptree.interior_point(ages, lower=0, upper=120, epsilon=1.0, rng=7)
        >>> point.value, point.method  # no declared size: the exponential mechanism
        (54, 'exponential')
        >>> point
        <InteriorPoint 54 by exponential over [0, 120], 1-DP (pure), declared none, NOT PRIVATE (test seed)>
    """
    return plan_interior_point(lower=lower, upper=upper, epsilon=epsilon, delta=delta, method=method, beta=beta,
                               run_anyway=run_anyway, n=n, n_max=n_max, width=width).release(
        values, column=column, on_invalid=on_invalid, rng=rng, counts=counts)
