"""The samplers draw only the scales they draw exactly (``LAPLACE_SCALE_LIMITS``,
``GAUSSIAN_SIGMA2_LIMITS``), and a plan names the caller's parameter that leaves a scale outside."""

from __future__ import annotations

import numpy as np
import pytest

import dptree
from dptree import noise
from dptree.errors import InvalidParameterError


@pytest.mark.parametrize(("draw", "limits"), [(noise.discrete_laplace, noise.LAPLACE_SCALE_LIMITS),
                                              (noise.discrete_gaussian, noise.GAUSSIAN_SIGMA2_LIMITS)])
def test_samplers_draw_up_to_their_limits_and_refuse_beyond(draw: object, limits: tuple[float, float]) -> None:
    """At the limits the draws are exact int64 values below the 2^62 a release holds; beyond, a
    typed error (the Laplace sampler's int64 arithmetic wrapped past 2^62, its tables divided by
    zero past 1e300, the Gaussian's proposals are Laplace draws)."""
    src = noise.make_source(1)
    lo, hi = limits
    for scale in (lo, hi):
        x = draw(src, scale, 2000)  # type: ignore[operator]
        assert x.dtype == np.int64 and np.abs(x).max() < 2**62
    assert np.abs(draw(src, hi, 2000)).max() > 2**40  # type: ignore[operator]  # the scale, not a wrapped value
    for scale in (hi * 2, 1e300, lo / 4):
        with pytest.raises(noise.NoiseScaleError) as exc:
            draw(src, scale, 1)  # type: ignore[operator]
        assert isinstance(exc.value, InvalidParameterError) and ("above" if scale > hi else "below") in str(exc.value)


def test_a_plan_names_the_parameter_and_the_value_that_works() -> None:
    """bounds_share=1e-300 (or 1e-20) left the search a noise scale the sampler could not draw: it
    crashed (ZeroDivisionError, OverflowError) after the budget was charged."""
    for share in (1e-300, 1e-20):
        with pytest.raises(noise.NoiseScaleError, match=rf"bounds_share={share!r} with epsilon=1.0 .* too large"):
            dptree.range_tree(np.arange(10), bounds="private", bounds_share=share, epsilon=1.0)
    with pytest.raises(noise.NoiseScaleError) as exc:
        dptree.range_tree(np.arange(10), bounds="private", bounds_share=1e-20, epsilon=1.0)
    least = float(str(exc.value).rsplit("bounds_share=", 1)[1])
    rel = dptree.range_tree(np.arange(10), bounds="private", bounds_share=least * 1.01, epsilon=1.0, rng=1)
    assert rel.privacy["bounds"]["share"] == least * 1.01
    with pytest.raises(noise.NoiseScaleError, match="max_contributions=1180591620717411303424 .* use at most"):
        dptree.sparse_range_tree(np.arange(10, dtype=np.uint64), epsilon=1.0, max_contributions=2**70)
    with pytest.raises(noise.NoiseScaleError, match="use at most max_contributions="):
        dptree.range_tree([1], lower=0, upper=20, epsilon=1.0, max_contributions=2**62)


def test_a_noise_spec_holds_only_drawable_parameters() -> None:
    from fractions import Fraction

    from dptree.privacy.measurement import NoiseSpec

    NoiseSpec("laplace", (None, Fraction(2**56)))
    with pytest.raises(noise.NoiseScaleError):
        NoiseSpec("laplace", (Fraction(2**57),))
    with pytest.raises(noise.NoiseScaleError):
        NoiseSpec("gaussian", (Fraction(1), Fraction(2**111)))
