"""``dptree.stream.Counter``: a private running count over a public horizon of T steps.

Each :meth:`Counter.append` adds one step's count (or a batch of steps) and returns the noisy
running total and its exact standard error. The privacy loss of the whole horizon is fixed when
the counter is made (:mod:`dptree.stream.plan`) and charged to a ``ledger`` then, once; every
output is post-processing of noise drawn once and never again. The outputs are online: the
output of step t depends on the counts of steps 1..t only, and on noise that does not depend on
the counts, so changing later counts never changes an earlier output.

The counter's state (:meth:`Counter.save`, :mod:`dptree.stream.state`) holds the exact totals of
open blocks and the noise already drawn for outputs to come: it is as sensitive as the counts
themselves, and it is the only continuation of the stream. The public part is
:meth:`Counter.release` (a :class:`~dptree.stream.release.StreamRelease`).
"""

from __future__ import annotations

from numbers import Integral
from typing import Any, Callable

import numpy as np

from dptree import noise as _noise
from dptree.errors import DataError, InvalidParameterError, StreamStateError
from dptree.stream import toeplitz
from dptree.stream.plan import StreamPlan, plan_counter
from dptree.stream.tree import TreeCore

__all__ = ["Counter", "ToeplitzCore", "make_core", "run_copies", "NOISE_BLOCK"]

#: the Toeplitz counter draws the noise of this many steps at a time, or of as many steps as
#: already passed (the correlated noise of a block is one FFT over all the noise so far)
NOISE_BLOCK = 4096


class ToeplitzCore:
    """The online state of one square-root Toeplitz counter (:mod:`dptree.stream.toeplitz`): the
    running total, the noise w drawn so far (O(t) memory) and the correlated noise B w / 2^p of
    the steps of the current block. Amortised O(log T) per step."""

    def __init__(self, plan: StreamPlan, draw: Callable[[int], np.ndarray]) -> None:
        self.horizon = plan.horizon
        self.bits = toeplitz.lattice_bits(plan.horizon)
        self.b = toeplitz.post_coefficients(plan.horizon, self.bits)
        self.variances = toeplitz.cumulative_squares(plan.horizon, self.bits) * (plan.noise_variance / 4.0**self.bits)
        self.draw = draw
        self.t = 0
        self.total = 0
        self.w = np.zeros(0, dtype=np.int64)
        self.pending: list[float] = []
        self.pending_var: list[float] = []
        self.used = 0

    def _refill(self) -> None:
        s = len(self.w)
        n = min(max(NOISE_BLOCK, s), self.horizon - s)
        self.w = np.concatenate([self.w, np.asarray(self.draw(n), dtype=np.int64)])
        self.pending = toeplitz.correlated_noise(self.b, self.w, s, self.bits).tolist()
        self.pending_var = self.variances[s:s + n].tolist()
        self.used = 0

    def step(self, x: int) -> tuple[float, float]:
        """Add step t + 1's count; return its released running total and its variance."""
        if self.used == len(self.pending):
            self._refill()
        self.total += x
        i = self.used
        self.used = i + 1
        self.t += 1
        return self.total + self.pending[i], self.pending_var[i]

    def to_state(self) -> dict[str, Any]:
        """The core's state (secret: the exact total and the noise drawn)."""
        return {"t": self.t, "total": self.total, "w": self.w.tolist(), "pending": self.pending[self.used:]}

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`to_state` (the noise is kept, never drawn again)."""
        self.t, self.total = int(state["t"]), int(state["total"])
        self.w = np.asarray([int(v) for v in state["w"]], dtype=np.int64)
        self.pending = [float(v) for v in state["pending"]]
        start = len(self.w) - len(self.pending)
        if not 0 <= self.t == start <= self.horizon or len(self.w) > self.horizon:
            raise ValueError("the saved noise does not match the saved step")
        self.pending_var = self.variances[start:len(self.w)].tolist()
        self.used = 0


def make_core(plan: StreamPlan, source: _noise.RandomSource) -> TreeCore | ToeplitzCore:
    """The online state of ``plan``'s counter, drawing its noise from ``source`` (dptree.noise)."""
    sampler = _noise.discrete_laplace if plan.family == "laplace" else _noise.discrete_gaussian
    if plan.mechanism == "tree":
        return TreeCore(plan.horizon, plan.noise_variance,
                        lambda n: sampler(source, plan.parameter, n).tolist())
    return ToeplitzCore(plan, lambda n: sampler(source, plan.parameter, n))


class Counter:
    """A continual counter over ``horizon`` steps (:func:`~dptree.stream.plan.plan_counter` has the
    mechanisms, neighbours and calibration).

    ``epsilon=`` (``noise="laplace"``, the binary-tree counter: pure epsilon-DP) or ``rho=`` /
    ``epsilon=`` with ``delta=`` (``noise="gaussian"``, the square-root Toeplitz counter:
    rho-zCDP). ``max_participations``: steps one user may take part in, one event each (default
    1: event level). ``ledger``: charged for the whole horizon here, before any count is
    appended. ``rng`` is for tests only: a seeded counter is marked not private.

    >>> import dptree.stream
    >>> c = dptree.stream.Counter(horizon=8, epsilon=1.0, rng=3)
    >>> total, stderr = c.append(5)
    >>> round(stderr, 3) == round(float(c.stderrs[0]), 3), c.t
    (True, 1)
    """

    def __init__(self, horizon: int, *, epsilon: float | None = None, delta: float | None = None,
                 rho: float | None = None, noise: str = "laplace", mechanism: str | None = None,
                 max_participations: int = 1, ledger: Any = None, label: str = "",
                 rng: _noise.RngLike = None) -> None:
        plan = plan_counter(horizon=horizon, epsilon=epsilon, delta=delta, rho=rho, noise=noise,
                            mechanism=mechanism, max_participations=max_participations)
        source = _noise.make_source(rng)  # a bad rng fails before the charge
        from dptree.io.release_file import creation_metadata

        self.metadata: dict[str, Any] = creation_metadata()
        if ledger is not None:
            charge = ledger.charge_for(plan, label=label or f"stream counter over {plan.horizon} steps")
            self.metadata["ledger"] = {"path": str(ledger.path), "charge": int(charge.id), "label": str(charge.label)}
        self._setup(plan, source, private=bool(source.private))

    def _setup(self, plan: StreamPlan, source: _noise.RandomSource,
               *, private: bool) -> None:
        self.plan = plan
        self.privacy = dict(plan.statement, private=private)
        self._source = source
        self._core = make_core(plan, source)
        self._estimates: list[float] = []
        self._origin: tuple[str, str] | None = None  # (path, state id) of the saved state to claim
        self.continuable = True

    @classmethod
    def _resumed(cls, plan: StreamPlan, privacy: dict[str, Any], metadata: dict[str, Any],
                 source: _noise.RandomSource) -> Counter:
        out = cls.__new__(cls)
        out.metadata = metadata
        out._setup(plan, source, private=bool(privacy["private"]))
        return out

    # ------------------------------------------------------------------ the stream
    @property
    def horizon(self) -> int:
        return self.plan.horizon

    @property
    def t(self) -> int:
        """Steps appended so far (public: the stream's timeline)."""
        return self._core.t

    @property
    def private(self) -> bool:
        return bool(self.privacy["private"])

    def append(self, counts: Any) -> tuple[Any, Any]:
        """Append one step's count (an integer >= 0) or a batch of steps (a sequence of them);
        return the released running total(s) and their exact standard error(s)."""
        if not self.continuable:
            raise StreamStateError("this counter was loaded from a state that has been continued already; load the "
                                   "state saved by the counter that continued it")
        single = isinstance(counts, (Integral, np.integer)) and not isinstance(counts, bool)
        values = [int(counts)] if single else _batch(counts)
        if any(v < 0 for v in values):
            raise DataError("a step's count must be an integer >= 0")
        if self.t + len(values) > self.horizon:
            raise InvalidParameterError(f"the counter's horizon is {self.horizon} steps and {self.t} were appended: "
                                        f"{len(values)} more do not fit; make a counter with a longer horizon",
                                        parameter="horizon")
        self._claim()
        step = self._core.step
        est, var = [], []
        for x in values:
            e, v = step(x)
            est.append(e)
            var.append(v)
        self._estimates.extend(est)
        if single:
            return est[0], float(np.sqrt(var[0]))
        return np.asarray(est), np.sqrt(np.asarray(var))

    @property
    def estimates(self) -> np.ndarray:
        """Every released running total so far, step 1..t."""
        return np.asarray(self._estimates, dtype=np.float64)

    @property
    def stderrs(self) -> np.ndarray:
        """The exact standard error of each released total (public: a function of t)."""
        return self.plan.stderrs(self.t)

    def release(self) -> Any:
        """The public part: the running totals so far with their standard errors (a
        :class:`~dptree.stream.release.StreamRelease`, saved and loaded like any release)."""
        from dptree.stream.release import StreamRelease

        return StreamRelease(self.plan, self.estimates, dict(self.privacy), dict(self.metadata))

    def plot(self, ax: Any = None, **kwargs: Any) -> Any:
        """Draw the running total with its band (:meth:`StreamRelease.plot`)."""
        return self.release().plot(ax, **kwargs)

    def save(self, path: Any, *, allow_nonprivate: bool = False, force: bool = False) -> None:
        """Write the counter's state (:mod:`dptree.stream.state`): SECRET, as sensitive as the counts,
        and the only continuation of the stream. The first :meth:`append` or :meth:`save` after a
        save or load marks the earlier file continued, so that no state is continued twice."""
        from dptree.stream.state import save_state

        self._claim()  # a state saved or loaded before and not continued since: this save continues it
        self._origin = save_state(self, path, allow_nonprivate=allow_nonprivate, force=force)

    def _claim(self) -> None:
        """Mark the state this counter last saved or loaded continued (:func:`dptree.stream.state.claim`)."""
        if self._origin is not None:
            from dptree.stream.state import claim

            claim(*self._origin, allow_nonprivate=not self.private)
            self._origin = None

    def summary(self) -> str:
        kind = "binary-tree" if self.plan.mechanism == "tree" else "square-root Toeplitz"
        return f"{kind} continual counter: {self.t} of {self.horizon} steps"

    def __repr__(self) -> str:
        return f"<{self.summary()}>"


def _batch(counts: Any) -> list[int]:
    arr = np.asarray(counts)
    if arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)) or arr.dtype == np.bool_:
        raise DataError("append takes an integer count or a one-dimensional sequence of integer counts")
    return [int(v) for v in arr.tolist()]



def run_copies(plan: StreamPlan, counts: Any, copies: int, rng: _noise.RngLike = None) -> np.ndarray:
    """``copies`` independent runs of ``plan``'s counter on ``counts``: their released totals,
    shape (copies, steps), for audits and Monte Carlo. The noise of every copy is drawn in one
    sampler call; copy i takes the i-th run of draws, in the order a counter draws them, so
    ``copies=1`` equals ``Counter(..., rng=rng).append(counts)``. The horizon's noise must fit one
    draw (at most :data:`NOISE_BLOCK` values)."""
    values = _batch(counts)
    T = plan.horizon
    per_copy = sum(T >> j for j in range(T.bit_length())) if plan.mechanism == "tree" else T
    if per_copy > NOISE_BLOCK:
        raise InvalidParameterError(f"run_copies draws a counter's noise at once: a horizon of at most "
                                    f"{NOISE_BLOCK} noise values (got {per_copy})", parameter="plan")
    sampler = _noise.discrete_laplace if plan.family == "laplace" else _noise.discrete_gaussian
    z = sampler(_noise.make_source(rng), plan.parameter, copies * per_copy).reshape(copies, per_copy)
    out = np.empty((copies, len(values)))
    core = make_core(plan, _noise.SystemRandomSource())  # its draws are replaced by each copy's row
    for i in range(copies):
        row = z[i]
        core.restore(_fresh_state(plan, row))
        step = core.step
        out[i] = [step(x)[0] for x in values]
    return out


def _fresh_state(plan: StreamPlan, noise: np.ndarray) -> dict[str, Any]:
    """The state of a counter before its first step that has drawn ``noise`` (a whole horizon's)."""
    if plan.mechanism == "tree":
        L = plan.horizon.bit_length()
        return {"t": 0, "total": 0, "start": [0] * L, "estimate": [0.0] * L, "prefix": 0.0, "variance": 0.0,
                "noise": noise.tolist()}
    b = toeplitz.post_coefficients(plan.horizon, toeplitz.lattice_bits(plan.horizon))
    return {"t": 0, "total": 0, "w": noise.tolist(),
            "pending": toeplitz.correlated_noise(b, noise, 0, toeplitz.lattice_bits(plan.horizon)).tolist()}
