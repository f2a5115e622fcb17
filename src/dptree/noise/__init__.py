"""Exact discrete noise on the integers: the only package of dptree that draws randomness.

Samplers follow Canonne, Kamath and Steinke, "The Discrete Gaussian for Differential Privacy"
(NeurIPS 2020), in integer arithmetic only, vectorised over numpy arrays (each loop of the paper
runs on the samples still undecided). Random bits come from ChaCha20 keyed by the operating
system's CSPRNG (``os.urandom``) through :class:`SystemRandomSource` (:mod:`~dptree.noise.chacha`);
a seeded source exists for tests and reproducible experiments only, and anything made with it
is marked not private by its caller.
Noise parameters are used as exact rationals, rounded *up* (more noise) where needed.
Running time depends on the sampled values (rejection loops), as in CKS 2020; see
docs/notes/verification.md.

One module per family; the public names are re-exported here:

* :mod:`~dptree.noise.chacha` -- the ChaCha20 generator behind the private source;
* :mod:`~dptree.noise.sources` -- random sources and :func:`make_source`;
* :mod:`~dptree.noise.integers` -- exactly uniform integers;
* :mod:`~dptree.noise.bernoulli` -- Bernoulli(num/den), Bernoulli(a / 2^bits) and Bernoulli(exp(-gamma))
  (CKS Alg. 1);
* :mod:`~dptree.noise.parameters` -- the exact parameters used and the variances they give;
* :mod:`~dptree.noise.laplace` -- discrete Laplace (CKS Alg. 2) and its truncation (Ghazi et al. 2023);
* :mod:`~dptree.noise.gaussian` -- discrete Gaussian (CKS Alg. 3);
* :mod:`~dptree.noise.exponential` -- exact exponential-mechanism sampling (Kaplan et al. 2020);
* :mod:`~dptree.noise.subsets` -- uniform k-subsets for contribution bounding.
"""

from __future__ import annotations

from dptree.noise.bernoulli import bernoulli_dyadic, bernoulli_exp_neg, bernoulli_ratio
from dptree.noise.exponential import bernoulli_pow_ratio, exp_lower_rational, sample_exponential_index
from dptree.noise.gaussian import discrete_gaussian
from dptree.noise.integers import uniform_below, uniform_int
from dptree.noise.laplace import (
    discrete_laplace,
    truncated_discrete_laplace,
    truncated_laplace_bound,
    truncated_laplace_delta,
)
from dptree.noise.parameters import (
    GAUSSIAN_SIGMA2_LIMITS,
    LAPLACE_SCALE_LIMITS,
    NoiseScaleError,
    discrete_gaussian_variance,
    discrete_laplace_variance,
    gaussian_sigma2_used,
    laplace_scale_used,
    noise_scale_of,
)
from dptree.noise.sources import (
    CountingRandomSource,
    ExternalRandomSource,
    RandomSource,
    RngLike,
    SeededRandomSource,
    SystemRandomSource,
    make_source,
    random_hex,
    resume_seeded,
    seeded_state,
)
from dptree.noise.subsets import uniform_subsets

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
    "uniform_below",
    "uniform_int",
    "bernoulli_ratio",
    "bernoulli_dyadic",
    "bernoulli_exp_neg",
    "discrete_laplace",
    "discrete_gaussian",
    "laplace_scale_used",
    "gaussian_sigma2_used",
    "LAPLACE_SCALE_LIMITS",
    "GAUSSIAN_SIGMA2_LIMITS",
    "NoiseScaleError",
    "noise_scale_of",
    "discrete_laplace_variance",
    "discrete_gaussian_variance",
    "truncated_discrete_laplace",
    "truncated_laplace_delta",
    "truncated_laplace_bound",
    "exp_lower_rational",
    "bernoulli_pow_ratio",
    "sample_exponential_index",
    "uniform_subsets",
]
