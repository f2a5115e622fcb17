"""Continual counting: a private running total over a public horizon of steps.

* :class:`Counter` -- append a step's count (or a batch), get the noisy running total and its exact
  standard error: the binary-tree counter with Honaker's online least squares (pure epsilon-DP,
  discrete Laplace) or the square-root Toeplitz counter (rho-zCDP, discrete Gaussian);
* :func:`plan_counter` -- the plan from public parameters (privacy loss, statement; a ledger
  charges it);
* :class:`StreamRelease` -- the public running totals (``Counter.release()``).

A counter's saved state (``Counter.save``, ``dptree.load``) is secret and continues the stream
(:mod:`dptree.stream.state`).
"""

from __future__ import annotations

from dptree.stream.counter import Counter
from dptree.stream.plan import StreamPlan, plan_counter
from dptree.stream.release import StreamRelease

__all__ = ["Counter", "StreamPlan", "plan_counter", "StreamRelease"]
