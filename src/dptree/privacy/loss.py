"""The privacy loss of a plan: the list of its noisy measurements, from which every accountant works.

A plan (``plan_range_tree``, ``plan_hierarchy_counts``, ``plan_quantiles``, ...) is built from
public parameters only, and :meth:`privacy_loss` returns a :class:`PrivacyLoss`: the privacy unit
it is stated for and one value object per noisy measurement the release will make. Each
measurement carries what an accountant needs, all public: the noise family and its exact
parameter, the sensitivity of the query it noises under the unit, or for the exponential mechanism
its privacy parameter (a bounded-range mechanism). From them follow, exactly:

* pure epsilon by basic composition (:meth:`PrivacyLoss.epsilon`);
* rho-zCDP by adding each measurement's own rho (:meth:`PrivacyLoss.rho`): discrete Laplace at
  epsilon is (epsilon^2 / 2)-zCDP (Bun & Steinke 2016, Prop. 1.4), the discrete Gaussian
  Delta^2 / (2 sigma^2)-zCDP (Canonne, Kamath & Steinke 2020, Theorem 4), the exponential
  mechanism at epsilon, being epsilon-bounded range, (epsilon^2 / 8)-zCDP (Cesar & Rogers 2021,
  Lemma 3.2);
* (epsilon, delta)-DP from either (:meth:`PrivacyLoss.delta_at`).

The measurements are serialisable (:meth:`PrivacyLoss.to_dict`), so a ledger can store what a
release cost and not only a number.

>>> from fractions import Fraction
>>> from dptree.privacy.statement import Neighbors
>>> loss = PrivacyLoss(Neighbors(), (Laplace(Fraction(2), 1, "level 1"), Laplace(Fraction(2), 1, "level 2")))
>>> loss.epsilon()
1.0
>>> loss.rho()
0.25
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal, Mapping, Union

from dptree.errors import InvalidParameterError
from dptree.privacy.statement import Neighbors, Relation

__all__ = ["Laplace", "Gaussian", "Exponential", "PureDP", "Measurement", "PrivacyLoss", "measurement_from_dict"]


def _exact(value: Any, name: str) -> Fraction:
    """A positive exact number (int, Fraction, or a float taken at its exact binary value)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        raise InvalidParameterError(f"{name} must be a number, got {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidParameterError(f"{name} must be finite, got {value}")
    exact = Fraction(value)
    if exact <= 0:
        raise InvalidParameterError(f"{name} must be > 0, got {value}")
    return exact


def _text(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


@dataclass(frozen=True)
class Laplace:
    """Discrete Laplace noise of ``scale`` added to a query of L1 ``sensitivity``: pure
    (sensitivity / scale)-DP (Canonne, Kamath & Steinke 2020, Proposition 7 for the discrete
    Laplace; Dwork, McSherry, Nissim & Smith 2006)."""

    scale: Fraction
    sensitivity: Fraction
    label: str = ""
    family: Literal["laplace"] = field(default="laplace", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", _exact(self.scale, "scale"))
        object.__setattr__(self, "sensitivity", _exact(self.sensitivity, "sensitivity"))

    @property
    def epsilon(self) -> float:
        return float(self.sensitivity / self.scale)

    @property
    def rho(self) -> float:
        return self.epsilon**2 / 2

    def to_dict(self) -> dict[str, Any]:
        return {"family": "laplace", "scale": _text(self.scale), "sensitivity": _text(self.sensitivity),
                "label": self.label}


@dataclass(frozen=True)
class Gaussian:
    """Discrete Gaussian noise of variance parameter ``sigma2`` added to a query of L2
    ``sensitivity``: (sensitivity^2 / (2 sigma2))-zCDP (Canonne, Kamath & Steinke 2020,
    Theorem 4); not pure DP."""

    sigma2: Fraction
    sensitivity: Fraction
    label: str = ""
    family: Literal["gaussian"] = field(default="gaussian", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma2", _exact(self.sigma2, "sigma2"))
        object.__setattr__(self, "sensitivity", _exact(self.sensitivity, "sensitivity"))

    @property
    def epsilon(self) -> float:
        return math.inf

    @property
    def rho(self) -> float:
        return float(self.sensitivity**2 / (2 * self.sigma2))

    def to_dict(self) -> dict[str, Any]:
        return {"family": "gaussian", "sigma2": _text(self.sigma2), "sensitivity": _text(self.sensitivity),
                "label": self.label}


@dataclass(frozen=True)
class Exponential:
    """An exponential mechanism (McSherry & Talwar 2007) with privacy parameter ``epsilon``:
    utility scores of sensitivity Delta at base exp(epsilon / (2 Delta)), or exp(epsilon / Delta)
    for a monotone score. Pure epsilon-DP and epsilon-bounded range, hence (epsilon^2 / 8)-zCDP
    (Cesar & Rogers 2021, Lemma 3.2)."""

    epsilon: float
    label: str = ""
    family: Literal["exponential"] = field(default="exponential", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", float(_exact(self.epsilon, "epsilon")))

    @property
    def rho(self) -> float:
        return self.epsilon**2 / 8

    def to_dict(self) -> dict[str, Any]:
        return {"family": "exponential", "epsilon": self.epsilon, "label": self.label}


@dataclass(frozen=True)
class PureDP:
    """A mechanism proven pure ``epsilon``-DP with no tighter characterisation used here (a
    sparse-vector stage, a composed sub-algorithm); (epsilon^2 / 2)-zCDP (Bun & Steinke 2016,
    Prop. 1.4)."""

    epsilon: float
    label: str = ""
    family: Literal["pure"] = field(default="pure", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", float(_exact(self.epsilon, "epsilon")))

    @property
    def rho(self) -> float:
        return self.epsilon**2 / 2

    def to_dict(self) -> dict[str, Any]:
        return {"family": "pure", "epsilon": self.epsilon, "label": self.label}


Measurement = Union[Laplace, Gaussian, Exponential, PureDP]


def measurement_from_dict(d: Mapping[str, Any]) -> Measurement:
    """The measurement :meth:`to_dict` wrote (an InvalidParameterError for anything else)."""
    try:
        family, label = d["family"], str(d.get("label", ""))
        if family == "laplace":
            return Laplace(Fraction(d["scale"]), Fraction(d["sensitivity"]), label)
        if family == "gaussian":
            return Gaussian(Fraction(d["sigma2"]), Fraction(d["sensitivity"]), label)
        if family == "exponential":
            return Exponential(float(d["epsilon"]), label)
        if family == "pure":
            return PureDP(float(d["epsilon"]), label)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        raise InvalidParameterError(f"not a measurement: {exc}") from None
    raise InvalidParameterError(f"unknown measurement family {family!r}")


@dataclass(frozen=True)
class PrivacyLoss:
    """The noisy measurements of one release under one privacy unit (``neighbors``), in the order
    they are made. Parallel measurements (disjoint groups: one record reaches one group) are listed
    once, for the group a record can reach (``parallel`` says how many copies ran)."""

    neighbors: Neighbors
    measurements: tuple[Measurement, ...]
    parallel: int = 1

    def __post_init__(self) -> None:
        if not self.measurements:
            raise InvalidParameterError("a privacy loss lists at least one measurement")
        object.__setattr__(self, "measurements", tuple(self.measurements))

    def epsilon(self) -> float:
        """Pure epsilon by basic composition (``inf`` when a measurement is not pure)."""
        return math.fsum(m.epsilon for m in self.measurements)

    def rho(self) -> float:
        """rho-zCDP by composition of each measurement's exact rho."""
        return math.fsum(m.rho for m in self.measurements)

    def delta_at(self, epsilon: float) -> float:
        """A delta such that the release is (epsilon, delta)-DP: 0 when pure epsilon allows it,
        else the zCDP conversion of :meth:`rho` (Canonne, Kamath & Steinke 2020, Cor. 13)."""
        from dptree.privacy.budget import zcdp_delta

        if self.epsilon() <= epsilon:
            return 0.0
        return zcdp_delta(self.rho(), epsilon)

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.family for m in self.measurements))

    def to_dict(self) -> dict[str, Any]:
        return {**self.neighbors.to_statement(), "parallel": self.parallel,
                "measurements": [m.to_dict() for m in self.measurements]}

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "PrivacyLoss":
        try:
            who = Neighbors(_relation(d["neighbors"]), int(d["max_contributions"]))
            return PrivacyLoss(who, tuple(measurement_from_dict(m) for m in d["measurements"]),
                               int(d.get("parallel", 1)))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidParameterError(f"not a privacy loss: {exc}") from None


def _relation(x: Any) -> Relation:
    if x not in ("add_remove", "replace"):
        raise ValueError(f"unknown neighboring relation {x!r}")
    return x
