"""The measurement core shared by both tree products: exact counts in, noisy counts out.

This is the one step of a range tree or hierarchy release that reads the private counts. Each
block of counts (a tree level, or every node of a hierarchy) gets independent exact discrete noise
(:mod:`dptree.noise`) with its own parameter; a block whose parameter is ``None`` is not measured
and is never read. Everything after it is post-processing of the returned measurements and
public parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, Sequence

import numpy as np

from dptree import noise as _noise
from dptree.errors import DataError

__all__ = ["NoiseSpec", "measure", "MEASUREMENT_LIMIT"]

#: Release files hold measurements |y| < 2^62; a larger draw is refused from the noisy value
#: alone (post-processing), so the refusal says nothing about the data.
MEASUREMENT_LIMIT = 2**62


@dataclass(frozen=True)
class NoiseSpec:
    """Public noise parameters, one per block: the discrete Laplace scale or the discrete Gaussian
    sigma^2, already rounded up to the dyadic values the samplers use (``None``: not measured)."""

    family: Literal["laplace", "gaussian"]
    parameters: tuple[Fraction | None, ...]

    def __post_init__(self) -> None:
        """Every parameter is one the samplers draw (a :class:`~dptree.noise.NoiseScaleError`
        otherwise): a plan that holds a spec was checked before any budget is spent."""
        used = _noise.laplace_scale_used if self.family == "laplace" else _noise.gaussian_sigma2_used
        for p in self.parameters:
            if p is not None:
                used(p)

    def variances(self) -> np.ndarray:
        """The exact noise variance of each block (``nan`` for an unmeasured block)."""
        var = _noise.discrete_laplace_variance if self.family == "laplace" else _noise.discrete_gaussian_variance
        return np.array([np.nan if p is None else var(p) for p in self.parameters], dtype=np.float64)


def measure(blocks: Sequence[np.ndarray], spec: NoiseSpec, source: _noise.RandomSource) -> list[np.ndarray | None]:
    """Add independent exact discrete noise to each block: ``blocks[j] + Z_j`` with ``Z_j`` drawn
    at ``spec.parameters[j]`` (Canonne, Kamath, Steinke 2020 samplers), int64 out, in the block's
    shape. A block of any shape is one sampler call (e.g. one tree level of every group at once,
    shape (groups, nodes)): its entries get independent noise in C (row-major) order.

    The privacy guarantee is the caller's: it follows from the sensitivity of the blocks and the
    parameters (stated in the release's privacy statement).
    """
    if len(blocks) != len(spec.parameters):
        raise ValueError("measure: one noise parameter per block")
    draw = _noise.discrete_laplace if spec.family == "laplace" else _noise.discrete_gaussian
    out: list[np.ndarray | None] = []
    for counts, param in zip(blocks, spec.parameters):
        if param is None:
            out.append(None)
            continue
        c = np.asarray(counts, dtype=np.int64)  # no copy of int64 counts
        # the samplers return a fresh int64 array: the counts are added into it (no copy, no
        # temporary), and the refusal reads its min and max (no |y| array)
        y = draw(source, param, c.size).astype(np.int64, copy=False).reshape(c.shape)
        y += c
        if y.size and max(-int(y.min()), int(y.max())) >= MEASUREMENT_LIMIT:
            raise DataError(
                "a noisy count reached 2^62, beyond what a release holds exactly; nothing was released "
                "(this depends only on the noisy value)"
            )
        out.append(y)
    return out
