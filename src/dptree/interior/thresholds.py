"""Learning a threshold classifier privately by the interior-point reduction (Kaplan et al. 2020, section 1).

Threshold functions h(x) = 1{x <= y} over an ordered domain: a private learner is an interior
point of the 2m records nearest the boundary between the labels (``002_2f350810784938f5.txt``,
section 1 and footnote 1). The label counts are noised first so that the sample size m is public.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Real
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from dptree._validation import Constraint, InstanceOf, Interval, check_param, validate_params
from dptree.data.domain import Domain, point_domain
from dptree.errors import DataError, DomainError, InvalidParameterError, ReleaseFileError
from dptree.interior.api import interior_point
from dptree.interior.calibration import (
    BETA,
    DECLARED_SIZE,
    DELTA,
    EPSILON,
    METHOD,
    TREE_METHODS,
    Method,
    check_budget,
    declared_size,
)
from dptree.interior.encoding import INVALID_HINT, domain_document, domain_from_document, encode_values
from dptree.interior.selection import ordered_exponential_mechanism
from dptree.io.contract import Release
from dptree.io.release_file import check_metadata, creation_metadata
from dptree.noise import RngLike, discrete_laplace, laplace_scale_used, make_source
from dptree.noise.sources import RNG
from dptree.privacy.boundary import Boundary
from dptree.privacy.budget import BUDGET_RANGE, Budget, check_release_budget
from dptree.privacy.loss import ApproxDP, Exponential, Laplace, PrivacyLoss
from dptree.privacy.statement import Neighbors, check_statement, make_statement, read_statement
from dptree.privacy.unit import PrivacyUnit, privacy_values

__all__ = ["ThresholdClassifier", "ThresholdPlan", "learn_threshold", "plan_learn_threshold"]

FRACTION = [Interval(Real, 0, 0.5, closed="right", hint="the share of records near the boundary, e.g. 0.1")]
#: the interior point of S runs at epsilon/4, which must itself be in the supported range
SUPPORTED = (4 * BUDGET_RANGE[0], BUDGET_RANGE[1])


def _pure(method: str, delta: float) -> bool:
    """Whether the learner is pure epsilon-DP (the exponential mechanism for the interior point)."""
    return method == "exponential" or (method == "auto" and delta == 0)


def _statement(epsilon: float, delta: float, private: bool) -> dict[str, Any]:
    return make_statement(
        mechanism="threshold learning by the interior-point reduction (Kaplan et al. 2020, section 1): label counts "
        "with discrete Laplace noise of scale 4/epsilon, then an interior point of the 2m records nearest "
        "the boundary at (epsilon/4, delta/(1 + e^(epsilon/4))) per replacement",
        neighbors=Neighbors("add_remove"), guarantee="pure epsilon-DP" if delta == 0 else "(epsilon, delta)-DP",
        private=private,
        replace="also holds: replace-one neighbors (two label counts at epsilon/4 each and two replacements "
        "of the sample: group privacy)",
        budget_spent={"epsilon": epsilon, "delta": delta},
    )


@dataclass(frozen=True, repr=False)
class ThresholdClassifier(Release):
    """h(x) = 1 if x <= threshold else 0 (Kaplan et al. 2020, footnote 1), or a constant classifier.

    ``threshold`` and ``constant`` (which of the two, and its value) are the release; the
    parameters of :func:`learn_threshold` (domain, method, fraction, beta, declared size) are public.
    """

    PLOT: ClassVar[str | None] = "point"  # how plot() draws it (dptree.io.display)
    KIND: ClassVar[str] = "threshold"
    #: the privacy boundary (:mod:`dptree.privacy.boundary`): which classifier, and its threshold, are noisy
    BOUNDARY: ClassVar[Boundary] = Boundary(
        public=("privacy.*", "parameters.*", "metadata", "metadata.*"),
        noisy=("measurements.threshold", "measurements.constant"),
    )

    threshold: int | float | None
    constant: int | None
    epsilon: float
    delta: float
    privacy: dict[str, Any]
    lower: int | float = field(default=0, kw_only=True)
    upper: int | float = field(default=0, kw_only=True)
    method: str = field(default="exponential", kw_only=True)
    fraction: float = field(default=0.1, kw_only=True)
    beta: float = field(default=0.1, kw_only=True)
    n_declared: int | None = field(default=None, kw_only=True)
    n_is_upper_bound: bool = field(default=False, kw_only=True)
    metadata: dict[str, Any] = field(default_factory=dict, kw_only=True)

    def summary(self) -> str:
        h = f"1{{x <= {self.threshold!r}}}" if self.constant is None else f"constant {self.constant}"
        budget = f"{self.epsilon:g}-DP (pure)" if self.delta == 0 else f"({self.epsilon:g}, {self.delta:g})-DP"
        return (f"ThresholdClassifier {h} over [{self.lower!r}, {self.upper!r}], {budget}"
                f"{'' if self.private else ', NOT PRIVATE (test seed)'}")

    def to_frame(self) -> Any:
        """One row: the threshold (or the constant label) and the public fields."""
        from dptree.io.frames import result_frame

        return result_frame({}, estimate=[self.threshold], extra={
            "constant": [self.constant], "epsilon": [self.epsilon], "delta": [self.delta],
            "private": [self.private]})

    def predict(self, x: Any) -> np.ndarray:
        """The labels h(x) (post-processing) of numbers in the classifier's units; NaN, text and
        other non-numbers are refused (a NaN compared as 'not <= threshold' and got the label 0)."""
        arr = np.asarray(x)
        if arr.dtype.kind not in "iuf":
            raise DataError("predict takes numbers (in the units of lower and upper), not text or objects")
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise DataError("predict takes finite numbers: remove NaN and infinities first")
        if self.constant is not None:
            return np.full(arr.shape, self.constant, dtype=np.int64)
        return (arr <= self.threshold).astype(np.int64)

    def to_document(self) -> dict[str, Any]:
        """The file's parts (:mod:`dptree.io.release_file`); the classifier is the measurement."""
        params = {
            "domain": domain_document(point_domain(self.lower, self.upper)), "method": self.method,
            "epsilon": self.epsilon, "delta": self.delta, "fraction": self.fraction, "beta": self.beta,
            "n_declared": self.n_declared, "n_is_upper_bound": self.n_is_upper_bound,
        }
        return {"privacy": self.privacy, "parameters": params,
                "measurements": {"threshold": self.threshold, "constant": self.constant}, "metadata": self.metadata}

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> ThresholdClassifier:
        """Rebuild a saved classifier, re-checking the method, the budget and the statement."""
        kind = cls.KIND
        privacy = read_statement(doc["privacy"], kind=kind)
        p, m = doc["parameters"], doc["measurements"]
        enc = domain_from_document(p["domain"], kind)
        check_param("method", p["method"], METHOD)
        check_param("fraction", p["fraction"], FRACTION)
        check_param("n_declared", p["n_declared"], DECLARED_SIZE)
        check_param("n_is_upper_bound", p["n_is_upper_bound"], [InstanceOf(bool)])
        eps, dlt, beta = check_budget(p["epsilon"], p["delta"], p["beta"])
        check_release_budget(eps, supported=SUPPORTED)
        if (dlt == 0) != _pure(p["method"], dlt):
            raise ReleaseFileError(f"{kind} release: delta does not match the method")
        lo, hi = enc.bounds
        planned = plan_learn_threshold(lower=lo, upper=hi, epsilon=eps, delta=dlt, method=p["method"],
                                       fraction=p["fraction"], beta=beta, n=None if p["n_is_upper_bound"] else
                                       p["n_declared"], n_max=p["n_declared"] if p["n_is_upper_bound"] else None)
        check_statement(privacy, planned.statement, kind=kind)
        threshold, constant = m["threshold"], m["constant"]
        if not ((constant is None and enc.contains(threshold)) or (threshold is None and constant in (0, 1)
                                                                   and type(constant) is int)):
            raise ReleaseFileError(f"{kind} release: the measurement must be a threshold in the domain or a label")
        return ThresholdClassifier(threshold, constant, eps, dlt, privacy, lower=lo, upper=hi, method=p["method"],
                                   fraction=float(p["fraction"]), beta=beta, n_declared=p["n_declared"],
                                   n_is_upper_bound=p["n_is_upper_bound"], metadata=check_metadata(doc.get("metadata")))


def _boundary_sample(keys1: list[int], keys0: list[int], m: int, size: int) -> tuple[list[int], list[int]]:
    """S of exactly 2m offsets, as (values, multiplicities): the m largest 1-labelled and the m
    smallest 0-labelled points, the missing slots padded deterministically with the public domain
    ends (0 for the ones, which lie left of the threshold; size - 1 for the zeros). ``|S|`` = 2m
    depends only on the public m. The padding is one value with a multiplicity, so a huge public
    m (tiny epsilon: the noisy total is huge) costs no memory."""
    ones = sorted(keys1)[-m:] if m else []
    zeros = sorted(keys0)[:m] if m else []
    vals = [0] + ones + zeros + [size - 1]
    cnts = [m - len(ones)] + [1] * (len(ones) + len(zeros)) + [m - len(zeros)]
    keep = [i for i, c in enumerate(cnts) if c]
    return [vals[i] for i in keep], [cnts[i] for i in keep]


@dataclass(frozen=True)
class ThresholdPlan:
    """Everything public about a threshold-learning release (the interior-point reduction of Kaplan,
    Ligett, Mansour, Naor & Stemmer 2020, section 1), decided before any data is read: the domain,
    method, fraction, beta, declared size, the budget spent and the statement. The sample size m
    is drawn by the release from the noisy label counts (unless ``n`` is declared), so with a tree
    method the interior point's own calibration (at the size 2m) is a step of the mechanism.

    >>> plan_learn_threshold(lower=0, upper=100, epsilon=1.0).privacy_loss().epsilon()
    1.0
    """

    encoding: Domain
    epsilon: float
    delta: float  # spent: 0 when the interior point is the exponential mechanism (pure epsilon-DP)
    method: Method
    fraction: float
    beta: float
    n_declared: int | None
    n_is_upper_bound: bool
    requested_delta: float
    statement: dict[str, Any] = field(default_factory=dict)

    @property
    def budget(self) -> Budget:
        return Budget.pure(self.epsilon) if self.delta == 0 else Budget.approx(self.epsilon, self.delta)

    @property
    def neighbors(self) -> Neighbors:
        return Neighbors("add_remove")

    @property
    def count_scale(self) -> Fraction:
        """The discrete Laplace scale of the two label counts, 4 / epsilon."""
        return Fraction(4) / Fraction(self.epsilon)

    def privacy_loss(self) -> PrivacyLoss:
        """The label counts: discrete Laplace of scale 4/epsilon on (m0, m1), L1 sensitivity 2 (a
        replacement moves both; an addition or removal one). The interior point of S at epsilon/4
        per replacement of S, which one record changes by at most two replacements: the
        exponential mechanism at epsilon/2 (its score moves by at most 2), or an interior point
        proven (epsilon/4, delta') per replacement, twice by group privacy: (epsilon/4, delta')
        and (epsilon/4, e^(epsilon/4) delta'), delta' = delta / (1 + e^(epsilon/4))."""
        eps = self.epsilon
        counts = Laplace(self.count_scale, Fraction(2), "label counts (m0, m1), discrete Laplace of scale 4/epsilon")
        if self.delta == 0:
            return PrivacyLoss(self.neighbors, (counts, Exponential(
                eps / 2, "exponential mechanism for an interior point of the boundary sample S at epsilon/4 per "
                "replacement, two replacements")))
        d_ip = self.delta / (1 + math.exp(eps / 4))
        what = f"{self.method} interior point of the boundary sample S at (epsilon/4, delta') per replacement"
        return PrivacyLoss(self.neighbors, (counts, ApproxDP(eps / 4, d_ip, f"{what}; first replacement"),
                                            ApproxDP(eps / 4, d_ip * math.exp(eps / 4),
                                                     f"{what}; second replacement, group privacy")))

    def release(self, x: Any, y: Any, *, rng: RngLike = None) -> ThresholdClassifier:
        """Learn the classifier from the labelled data ``x``, ``y`` (the private step)."""
        check_param("rng", rng, RNG)
        enc, eps, dlt = self.encoding, self.epsilon, self.requested_delta
        method, size_n, upper_bound = self.method, self.n_declared, self.n_is_upper_bound
        xs = np.asarray(x)
        ys = np.asarray(y)
        if xs.shape != ys.shape or xs.ndim != 1:
            raise DataError("x and y must be 1-d sequences of equal length")
        if ys.dtype.kind == "f" and not np.all(np.isfinite(ys)):
            raise DataError("labels contain NaN; labels must be 0 or 1")
        if not np.all((ys == 0) | (ys == 1)):
            raise DataError("labels must be 0 or 1 (threshold functions are 1 left of the threshold)")
        metadata = creation_metadata()  # the clock, read before the data
        try:
            keys = np.array(encode_values(xs, enc), dtype=object)  # validate before any noise is drawn
        except DataError as exc:  # records come with labels: the fix is the caller's, record and label together
            raise DataError(str(exc).replace(INVALID_HINT, "remove those records, with their labels, first")) from None
        src = make_source(rng)
        lo, hi = enc.bounds

        def result(threshold: int | float | None, constant: int | None) -> ThresholdClassifier:
            return ThresholdClassifier(
                threshold, constant, eps, self.delta, {**self.statement, "private": bool(src.private)}, lower=lo,
                upper=hi, method=method, fraction=self.fraction, beta=self.beta, n_declared=size_n,
                n_is_upper_bound=upper_bound, metadata=metadata)

        ys = ys.astype(np.int64)
        m1_true = int(ys.sum())
        m0_true = int(ys.size) - m1_true
        noise = discrete_laplace(src, self.count_scale, 2)  # two counts, eps/4 each
        m0, m1 = m0_true + int(noise[0]), m1_true + int(noise[1])
        total = m0 + m1
        if size_n is not None:
            total = min(total, size_n) if upper_bound else size_n
        m = max(1, int(self.fraction * total))
        if min(m0, m1) < m:
            return result(None, 1 if m1 >= m0 else 0)
        s_vals, s_cnts = _boundary_sample(keys[ys == 1].tolist(), keys[ys == 0].tolist(), m, enc.size)
        e_ip, d_ip = eps / 4, dlt / (1 + math.exp(eps / 4))
        if _pure(method, dlt):
            yv = ordered_exponential_mechanism(
                s_vals, counts=s_cnts, lower=0, upper=enc.size - 1, epsilon=e_ip, rng=src
            )
            return result(enc.value_at(yv), None)
        # interior_point at (e, d) is (e, d)-DP per replacement of its input (replace-one); its
        # calibration reads the size 2m, drawn above from the noisy counts: a step of the mechanism
        ip = interior_point(
            [enc.value_at(v) for v in s_vals],
            counts=s_cnts,
            lower=lo,
            upper=hi,
            epsilon=e_ip,
            delta=d_ip,
            method=method,
            beta=self.beta,
            rng=src,
            run_anyway=True,
            n=2 * m,
        )
        if ip.bottom:  # the tree method failed (its value is only the domain's lower end): no threshold was found
            return result(None, 1 if m1 >= m0 else 0)
        return result(ip.value, None)


#: the constraints of the public parameters of a threshold plan
_PLAN: dict[str, Sequence[Constraint | None]] = {
    "epsilon": EPSILON, "delta": DELTA, "method": METHOD, "fraction": FRACTION, "beta": BETA, "n": DECLARED_SIZE,
    "n_max": DECLARED_SIZE,
}


@privacy_values
@validate_params(_PLAN)
def plan_learn_threshold(*, lower: float, upper: float, epsilon: float, delta: float = 0.0,
                         method: Method = "exponential", fraction: float = 0.1, beta: float = 0.1,
                         n: int | None = None, n_max: int | None = None,
                         unit: PrivacyUnit | None = None, budget: Budget | None = None) -> ThresholdPlan:
    """The plan of :func:`learn_threshold` from public parameters only (Kaplan, Ligett, Mansour,
    Naor & Stemmer 2020, section 1); every refusal they cause happens here."""
    eps = check_release_budget(epsilon, supported=SUPPORTED)
    dlt = float(delta)
    if method in TREE_METHODS and dlt == 0:
        raise InvalidParameterError(f"method={method!r} needs delta > 0 (approximate DP); pass e.g. delta=1e-6")
    size_n, upper_bound = declared_size(n, n_max)
    enc = point_domain(lower, upper)
    if enc.kind == "datetime":
        raise DomainError("learn_threshold works on numeric domains: pass dates as numbers (e.g. days since an "
                          "origin) with numeric bounds")
    spent = 0.0 if _pure(method, dlt) else dlt
    laplace_scale_used(Fraction(4) / Fraction(eps))  # the label counts' sampler (NoiseScaleError if none)
    return ThresholdPlan(enc, eps, spent, method, float(fraction), float(beta), size_n, upper_bound, dlt,
                         _statement(eps, spent, True))


@privacy_values
@validate_params({**_PLAN, "rng": RNG})
def learn_threshold(
    x: Any,
    y: Any,
    *,
    lower: float,
    upper: float,
    epsilon: float,
    delta: float = 0.0,
    method: Method = "exponential",
    fraction: float = 0.1,
    beta: float = 0.1,
    rng: RngLike = None,
    n: int | None = None,
    n_max: int | None = None,
    unit: PrivacyUnit | None = None,
    budget: Budget | None = None,
) -> ThresholdClassifier:
    """Privately learn a threshold classifier from labelled data (Kaplan et al. 2020, section 1 reduction).

    ``n`` / ``n_max``: optional **public** declared number of labelled records (exact / upper
    bound); it replaces (``n``) or caps (``n_max``) the noisy total below. Never the actual size.

    1. The label counts m0 = #{y=0}, m1 = #{y=1} get discrete Laplace noise of scale 4/epsilon
       (eps/4 per unit change of one count). With T = the declared n, or the noisy total
       m0~ + m1~ (capped at n_max), m = max(1, floor(fraction * T)) is public. If
       min(m0~, m1~) < m, the constant classifier of the larger noisy label is returned.
    2. Otherwise S has exactly 2m elements: the m largest points labelled 1 and the m smallest
       labelled 0, missing slots padded with the public domain ends (so ``|S|`` never depends on the
       true label counts). Adding or removing a record changes S by at most one replacement;
       replacing a record by at most two.
    3. y* = an interior point of S at (epsilon/4, delta/(1 + e^(epsilon/4))) per replacement of
       S (the exponential mechanism, or the tree methods with the public size n = 2m, which are
       (eps', delta')-DP per replacement, see :func:`~dptree.interior.api.interior_point`);
       h(x) = 1{x <= y*}. Where a tree method fails (its output is bottom, which the mechanism
       releases), the constant classifier of the larger noisy label is returned, as in step 1
       (post-processing).

    Accounting: add/remove-one: eps/4 (one count) + eps/4 (one replacement of S) = eps/2;
    replace-one: eps/2 (two counts) + 2 * eps/4 with delta' (1 + e^(eps/4)) = delta (group privacy
    over two replacements) = (eps, delta). So (epsilon, delta)-DP under both relations; pure
    epsilon-DP (delta reported 0) with the exponential mechanism.

    Example (``rng=7`` seeds the noise only so that the outputs below are reproducible: a seeded release
    is marked not private; leave ``rng`` out in real use)::

        >>> import numpy as np, dptree
        >>> x = np.arange(1000)
        >>> y = (x < 400).astype(int)  # label 1 left of the true threshold 399.5
        >>> h = dptree.learn_threshold(x, y, lower=0, upper=999, epsilon=1.0, rng=7)
        >>> h
        <ThresholdClassifier 1{x <= 413} over [0, 999], 1-DP (pure), NOT PRIVATE (test seed)>
        >>> h.predict([100, 900]).tolist()
        [1, 0]
    """
    return plan_learn_threshold(lower=lower, upper=upper, epsilon=epsilon, delta=delta, method=method,
                                fraction=fraction, beta=beta, n=n, n_max=n_max).release(x, y, rng=rng)
