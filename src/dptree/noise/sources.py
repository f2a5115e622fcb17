"""Random sources: where every random byte of dptree comes from.

:class:`SystemRandomSource` (a ChaCha20 generator keyed from the operating system's CSPRNG,
:mod:`dptree.noise.chacha`) is the only source whose releases are private. Seeded sources exist
for tests and reproducible experiments; anything made with them is marked not private by its
caller. :func:`make_source` turns the public ``rng`` argument into a source.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any, Mapping, Protocol, Union, cast

import numpy as np

from dptree._validation import Constraint, InstanceOf, Interval
from dptree.errors import InvalidParameterError
from dptree.noise.chacha import ChaChaStream

__all__ = [
    "RandomSource",
    "SystemRandomSource",
    "SeededRandomSource",
    "CountingRandomSource",
    "ExternalRandomSource",
    "random_hex",
    "RngLike",
    "make_source",
    "seeded_state",
    "resume_seeded",
]


class RandomSource(Protocol):
    """A source of uniformly random bytes."""

    @property
    def private(self) -> bool:
        """Whether releases made with this source are private (True for the OS CSPRNG only)."""
        ...

    def random_bytes(self, n: int) -> bytes:
        """Return ``n`` uniformly random bytes."""
        ...


class SystemRandomSource:
    """A cryptographically secure generator in user space: ChaCha20 keyed from the OS CSPRNG
    (``os.urandom``), with fast key erasure, reseeding after at most 1.6 MB and a reseed in
    forked children (:class:`~dptree.noise.chacha.ChaChaStream`). Releases made with it are private.

    Every instance has its own stream (seeded on first use); a copy or pickle starts a new one.
    It is the only private source: ``private`` is a read-only property that is True for this
    exact class only (a subclass could replace ``random_bytes``), and every other source reports
    False whatever attributes it carries.
    """

    @property
    def private(self) -> bool:
        return type(self) is SystemRandomSource

    def __init__(self) -> None:
        self._stream = ChaChaStream()

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), ())  # a copy never replays this source's stream

    def random_bytes(self, n: int) -> bytes:
        return self._stream.random_bytes(n)


class SeededRandomSource:
    """A reproducible pseudo-random source for tests and experiments. NOT private."""

    @property
    def private(self) -> bool:
        return False

    def __init__(self, seed: Union[int, np.random.Generator]) -> None:
        if isinstance(seed, np.random.Generator):
            self._gen = seed
        else:
            self._gen = np.random.Generator(np.random.PCG64(seed))

    def random_bytes(self, n: int) -> bytes:
        return self._gen.bytes(n)


def seeded_state(source: "RandomSource") -> dict[str, Any] | None:
    """The generator state of a seeded (test) source, so that a saved computation resumed from it
    draws what it would have drawn uninterrupted; None for any other source (a private one has none)."""
    return dict(source._gen.bit_generator.state) if isinstance(source, SeededRandomSource) else None


def resume_seeded(state: Mapping[str, Any]) -> SeededRandomSource:
    """A seeded (NOT private) source continuing from ``state`` (:func:`seeded_state`'s output);
    ValueError, TypeError or KeyError for a state that is not one."""
    gen = np.random.Generator(np.random.PCG64())
    gen.bit_generator.state = dict(state)
    return SeededRandomSource(gen)


class CountingRandomSource:
    """A seeded (NOT private) source that counts the calls and bytes a sampler asks for, to
    measure how many random draws a sample needs (tests and ``benchmarks/sampler_cost.py``)."""

    @property
    def private(self) -> bool:
        return False

    def __init__(self, seed: int) -> None:
        self.inner = SeededRandomSource(seed)
        self.calls = 0
        self.bytes = 0

    def random_bytes(self, n: int) -> bytes:
        self.calls += 1
        self.bytes += n
        return self.inner.random_bytes(n)


def random_hex(nbytes: int) -> str:
    """A random identifier (hex) from the OS CSPRNG, for non-statistical uses such as a ledger's id."""
    return SystemRandomSource().random_bytes(nbytes).hex()


class ExternalRandomSource:
    """Any other object with ``random_bytes``, wrapped: its bytes are used, but a release made with
    it is marked NOT private (only :class:`SystemRandomSource` is trusted)."""

    def __init__(self, inner: RandomSource) -> None:
        self.inner = inner

    @property
    def private(self) -> bool:
        return False

    def random_bytes(self, n: int) -> bytes:
        out = self.inner.random_bytes(n)
        if not isinstance(out, bytes) or len(out) != n:
            raise InvalidParameterError("the random source's random_bytes(n) must return exactly n bytes")
        return out


RngLike = Union[None, int, np.random.Generator, RandomSource]


def make_source(rng: RngLike) -> RandomSource:
    """Turn the public ``rng`` argument into a random source.

    ``None`` (the default) gives the OS CSPRNG. An ``int`` seed or a numpy ``Generator`` gives a
    seeded source whose ``private`` attribute is False: use it for tests only.
    """
    if rng is None:
        return SystemRandomSource()
    if isinstance(rng, (SystemRandomSource, SeededRandomSource, CountingRandomSource, ExternalRandomSource)):
        return rng
    if callable(getattr(rng, "random_bytes", None)):
        # any other object with random bytes (a test double, a user's generator): usable, but
        # never private, whatever its own ``private`` attribute says
        return ExternalRandomSource(cast(RandomSource, rng))
    if isinstance(rng, np.random.Generator):
        return SeededRandomSource(rng)
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        if int(rng) < 0:
            raise InvalidParameterError(f"rng seed must be a non-negative integer, got {rng}")
        return SeededRandomSource(int(rng))
    raise InvalidParameterError(
        "rng must be None (private, OS randomness), an int seed or a numpy Generator "
        f"(tests only); got {type(rng).__name__}"
    )


class _RandomSource(Constraint):
    """An object with ``random_bytes(n)`` (:class:`dptree.noise.RandomSource`)."""

    def is_satisfied_by(self, value: Any) -> bool:
        return callable(getattr(value, "random_bytes", None))

    def describe(self) -> str:
        return "a random source"

    def invalid_examples(self) -> list[Any]:
        return [object()]


#: the declared constraint of every public ``rng`` parameter (dptree._validation)
RNG: list[Constraint | None] = [
    None,
    Interval(Integral, 0, None, hint="rng is for tests only: a seeded release is not private"),
    InstanceOf(np.random.Generator),
    _RandomSource(),
]
#: ... of an ``rng`` that only drives a Monte Carlo on a finished release (a quantile interval's
#: calibration): a seed there makes the result reproducible and costs no privacy
SIMULATION_RNG: list[Constraint | None] = [
    None,
    Interval(Integral, 0, None, hint="the simulation's seed (reproducibility only; the release is unchanged)"),
    *RNG[2:],
]
