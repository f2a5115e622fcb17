"""Declarative parameter validation and the optional-dependency guard.

Each public function declares the constraints on its parameters next to its signature (modelled on
scikit-learn's ``validate_params``)::

    @validate_params({"epsilon": [Interval(Real, 0, None, closed="neither")],
                      "noise": [Options({"laplace", "gaussian"})],
                      "rng": [None, InstanceOf(int, object)]})
    def range_tree(values, *, epsilon, noise="laplace", rng=None): ...

A call that breaks a constraint raises :class:`~dptree.errors.InvalidParameterError` naming the
parameter, what it must be and what it got, before any data is read. The declaration is kept on
the function (``func.constraints``), where the fuzz tests read it to generate invalid values.
Conversions (``float(epsilon)``) stay in the function: the constraints only accept or refuse.

:func:`require` imports an optional dependency or says which extra installs it.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import math
import warnings
from abc import ABC, abstractmethod
from numbers import Integral, Real
from types import ModuleType
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

from dptree.errors import InvalidParameterError, MissingDependencyError

__all__ = [
    "Constraint",
    "Interval",
    "Options",
    "InstanceOf",
    "validate_params",
    "check_param",
    "renamed",
    "require",
    "EXTRAS",
]

F = TypeVar("F", bound=Callable[..., Any])


class Constraint(ABC):
    """One acceptable kind of value for a parameter."""

    hint: str = ""

    @abstractmethod
    def is_satisfied_by(self, value: Any) -> bool: ...

    @abstractmethod
    def describe(self) -> str: ...

    @abstractmethod
    def invalid_examples(self) -> list[Any]:
        """Values this constraint refuses (the fuzz tests call the function with them)."""


class Interval(Constraint):
    """A finite real (``Real``) or integer (``Integral``) number in an interval; booleans, NaN and
    infinities are refused. ``left``/``right`` None: unbounded on that side. ``closed`` is one of
    "both", "left", "right", "neither"."""

    def __init__(self, kind: type, left: float | None, right: float | None, *, closed: str = "both",
                 hint: str = "") -> None:
        if kind not in (Real, Integral) or closed not in ("both", "left", "right", "neither"):
            raise TypeError("Interval(Real | Integral, left, right, closed='both'|'left'|'right'|'neither')")
        self.kind, self.left, self.right, self.closed, self.hint = kind, left, right, closed, hint

    def is_satisfied_by(self, value: Any) -> bool:
        v: int | float
        tv = type(value)  # exact int / float first: the ABC checks below cost ~1 us each
        if tv is int:
            v = value
        elif tv is float:
            if self.kind is Integral or not math.isfinite(value):
                return False
            v = value
        elif isinstance(value, bool) or not isinstance(value, self.kind):
            return False
        elif isinstance(value, Integral):
            v = int(value)  # exact: Python compares any int with a float bound exactly
        else:
            v = float(value)
            if not math.isfinite(v):
                return False
        if self.left is not None and (v < self.left or (v == self.left and self.closed in ("right", "neither"))):
            return False
        if self.right is not None and (v > self.right or (v == self.right and self.closed in ("left", "neither"))):
            return False
        return True

    def describe(self) -> str:
        what = "an integer" if self.kind is Integral else "a finite number"
        lo = hi = ""
        if self.left is not None:
            lo = "{} {:g}".format(">=" if self.closed in ("both", "left") else ">", self.left)
        if self.right is not None:
            hi = "{} {:g}".format("<=" if self.closed in ("both", "right") else "<", self.right)
        bounds = " and ".join(b for b in (lo, hi) if b)
        return what + (f" {bounds}" if bounds else "")

    def invalid_examples(self) -> list[Any]:
        out: list[Any] = [True, "1", float("nan"), float("inf")]
        if self.left is not None:
            out.append(self.left - 1 if self.kind is Integral else self.left - abs(self.left) * 0.5 - 1.0)
            if self.closed in ("right", "neither"):
                out.append(self.left if self.kind is Real else int(self.left))
        if self.right is not None:
            out.append(self.right + 1 if self.kind is Integral else self.right * 2 + 1.0)
        if self.kind is Integral:
            out.append(1.5)
        return out


class Options(Constraint):
    """One of a fixed set of values (strings compared exactly)."""

    def __init__(self, values: Iterable[Any], *, hint: str = "") -> None:
        self.values = tuple(values)
        self.hint = hint

    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, type(self.values[0])) and not isinstance(value, bool) and value in self.values

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)

    def invalid_examples(self) -> list[Any]:
        return ["no such option", 1]


class InstanceOf(Constraint):
    """An instance of one of ``types`` (``description`` names them for the message)."""

    def __init__(self, *types: type, description: str = "", hint: str = "") -> None:
        self.types, self.hint = types, hint
        self.description = description or " or ".join(t.__name__ for t in types)

    def is_satisfied_by(self, value: Any) -> bool:
        return isinstance(value, self.types) and not (isinstance(value, bool) and bool not in self.types)

    def describe(self) -> str:
        return self.description

    def invalid_examples(self) -> list[Any]:
        return [object()] if object not in self.types else []


def _ok(value: Any, options: Sequence[Constraint | None]) -> bool:
    for c in options:
        if value is None if c is None else c.is_satisfied_by(value):
            return True
    return False


def check_param(name: str, value: Any, options: Sequence[Constraint | None]) -> None:
    """Raise InvalidParameterError unless ``value`` meets one of ``options`` (None: None allowed)."""
    if _ok(value, options):
        return
    words = [("None" if c is None else c.describe()) for c in options]
    hints = [c.hint for c in options if c is not None and c.hint]
    shown = repr(value) if len(repr(value)) <= 60 else type(value).__name__
    msg = f"{name} must be {' or '.join(words)}; got {shown}"
    raise InvalidParameterError(msg + (f"; {hints[0]}" if hints else ""), parameter=name)


def renamed(value: Any, old_value: Any, name: str, old: str, default: Any) -> Any:
    """The value of the parameter ``name``, given under its deprecated name ``old`` (``old_value``
    not None): a :class:`DeprecationWarning`, and a refusal when both are given and disagree."""
    if old_value is None:
        return value
    warnings.warn(f"{old}= is a deprecated name of {name}= (the same policy); pass {name}={old_value!r}",
                  DeprecationWarning, stacklevel=4)  # past the validate_params wrapper
    if value != default and value != old_value:
        raise InvalidParameterError(f"{old}= is the deprecated name of {name}=: pass {name}= only")
    return old_value


def validate_params(constraints: Mapping[str, Sequence[Constraint | None]]) -> Callable[[F], F]:
    """Decorator: check the declared parameters of every call before the body runs.

    A call whose arguments bind plainly (no ``*args``/``**kwargs`` or positional-only parameters
    in the signature, no unknown, duplicate or missing argument) is bound here without
    :meth:`inspect.Signature.bind` (which costs ~20 us a call, most of a small release's
    overhead); every other call goes through ``bind``, which raises the usual TypeError for a
    wrong call. Both check the same values: the argument given, else the default.
    """

    def decorate(func: F) -> F:
        sig = inspect.signature(func)
        unknown = set(constraints) - set(sig.parameters)
        if unknown:
            raise TypeError(f"{func.__qualname__}: constraints for unknown parameters {sorted(unknown)}")
        params = list(sig.parameters.values())
        plain = all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params)
        positional = tuple(p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD)
        known = frozenset(sig.parameters)
        required = frozenset(p.name for p in params if p.default is p.empty)
        defaults = {p.name: p.default for p in params if p.default is not p.empty}
        checks = tuple(constraints.items())

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if plain and len(args) <= len(positional):
                given = dict(zip(positional, args))
                if known.issuperset(kwargs) and given.keys().isdisjoint(kwargs):
                    given.update(kwargs)
                    if required.issubset(given):
                        for name, options in checks:
                            check_param(name, given[name] if name in given else defaults[name], options)
                        return func(*args, **kwargs)
            bound = sig.bind(*args, **kwargs)  # a TypeError for a wrong call, as without the decorator
            bound.apply_defaults()
            for name, options in checks:
                check_param(name, bound.arguments[name], options)
            return func(*args, **kwargs)

        wrapper.constraints = dict(constraints)  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


#: optional module -> the extra that installs it (a dependency of dptree itself has none: missing,
#: it is installed by name)
EXTRAS = {"pyspark": "spark", "polars": "polars"}


def require(module: str, feature: str) -> ModuleType:
    """Import an optional dependency, or raise MissingDependencyError naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        extra = EXTRAS.get(top)
        how = f"the optional package {top!r}: pip install 'dptree[{extra}]'" if extra else (
            f"the package {top!r}, which is not installed: pip install {top}")
        raise MissingDependencyError(f"{feature} needs {how}") from exc
