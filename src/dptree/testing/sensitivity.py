"""Brute-force sensitivities: the largest change of a query over every neighboring pair of tiny datasets.

Checks a privacy statement's L1/L2 sensitivity against the exhaustive maximum (an upper bound
that is tight when the statement is), for the add/remove (up to k records) and replace relations.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

import numpy as np

from dptree.errors import InvalidParameterError

__all__ = ["neighboring_datasets", "brute_force_sensitivity"]


def neighboring_datasets(
    domain_size: int, max_records: int, relation: str = "add_remove", k: int = 1
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every neighboring pair of leaf histograms on a tiny domain (brute force).

    Datasets are multisets of leaves with at most ``max_records`` records. ``relation``:
    ``"add_remove"`` (d1 = d0 plus up to ``k`` records: a user with <= k records) or ``"replace"``
    (one record of d0 moved to another leaf). Each unordered pair appears once.
    """
    from itertools import combinations_with_replacement

    def multisets(size: int) -> Iterator[np.ndarray]:
        for combo in combinations_with_replacement(range(domain_size), size):
            yield np.bincount(np.asarray(combo, dtype=np.int64), minlength=domain_size)

    for n0 in range(max_records + 1):
        for h0 in multisets(n0):
            if relation == "add_remove":
                for extra in range(1, k + 1):
                    for add in multisets(extra):
                        yield h0, h0 + add
            elif relation == "replace":
                for src in np.flatnonzero(h0):
                    for dst in range(domain_size):
                        if dst > src:  # unordered: moving src->dst and dst->src are the same pair
                            h1 = h0.copy()
                            h1[src] -= 1
                            h1[dst] += 1
                            yield h0, h1
            else:
                raise InvalidParameterError(f"unknown neighboring relation {relation!r}")


def brute_force_sensitivity(
    query: Callable[[np.ndarray], np.ndarray], pairs: Iterable[tuple[Any, Any]]
) -> tuple[float, float]:
    """(max L1, max L2) of ``query(d0) - query(d1)`` over the given neighboring pairs."""
    l1 = l2 = 0.0
    for d0, d1 in pairs:
        diff = np.asarray(query(d0), dtype=np.float64) - np.asarray(query(d1), dtype=np.float64)
        l1 = max(l1, float(np.abs(diff).sum()))
        l2 = max(l2, float(np.sqrt((diff * diff).sum())))
    return l1, l2
