"""The audit registrations of every public mechanism of dptree, one module per product.

Importing this package (or any of its modules) registers every spec with
:mod:`dptree.testing.registry`, in a fixed order: range trees, hierarchies, interior points,
group-by, user bounding, sparse trees, quantiles, partition selection, range sums, 2-D range trees,
continual counters, the factorised CDF. Every test that uses the registry imports it first. To audit a new mechanism, add a ``register_*`` function that builds its
:class:`~dptree.testing.registry.MechanismSpec` and calls ``register``, and list it in
``REGISTRATIONS`` below (docs/notes/verification.md).
"""

from __future__ import annotations

from audit_registry import (
    factorized_cdf,
    grouped,
    hierarchies,
    interior_points,
    partitions,
    quantiles,
    range_sums,
    range_trees,
    sparse_trees,
    spatial,
    streams,
    user_bounding,
)

__all__ = ["range_trees", "hierarchies", "interior_points", "grouped", "user_bounding", "sparse_trees", "quantiles",
           "partitions", "range_sums", "spatial", "streams", "factorized_cdf", "REGISTRATIONS"]

#: Every registration, in the order the specs are registered (and the audit tests are listed).
REGISTRATIONS = (
    range_trees.register_range_trees,
    range_trees.register_private_bounds,
    hierarchies.register_hierarchies,
    hierarchies.register_multiplicative,
    hierarchies.register_found_structure,
    interior_points.register_interior_points,
    grouped.register_grouped,
    user_bounding.register_user_bounding,
    user_bounding.register_private_contributions,
    sparse_trees.register_sparse_trees,
    quantiles.register_quantiles,
    partitions.register_partitions,
    range_sums.register_range_sums,
    spatial.register_spatial,
    streams.register_streams,
    factorized_cdf.register_factorized_cdf,
)

for _register in REGISTRATIONS:
    _register()
