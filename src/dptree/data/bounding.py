"""User-level contribution bounding: keep at most k records per user before counting.

Under user-level neighbors (add or remove one *user*), a release whose sensitivity assumes
``max_contributions = k`` (DESIGN section 3: L1 k per level, L2 k per level) is only private if no
user contributes more than k records. The engines enforce it with one algorithm, whose
engine-independent part is here:

1. each row gets its cell (leaf, or group x leaf); rows of a user are ranked by cell;
2. the users with c > k rows are numbered in user-id order;
3. :func:`kept_positions` draws, in that order, a uniformly random k-subset of the ranks
   0..c-1 of each of them (:func:`dptree.noise.uniform_subsets`, exact);
4. users with at most k rows keep them all; the kept rows are counted per cell.

Privacy does not rest on the randomness: removing one user changes only that user's kept records,
at most k, whatever the selection. The randomness makes the kept subset unbiased (each of a user's
records is kept with probability k/c), which the test suite checks statistically. Because the
order of the draws is fixed by the user ids and the cells, numpy, DuckDB and Spark give the
*same* histogram for the same random source (tested). Only the number of records of each user
above k (without ids) reaches the random draw.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dptree import noise as _noise
from dptree.errors import InvalidParameterError

if TYPE_CHECKING:  # the engines import this module: the interface only for the type
    from dptree.data.engines.base import LeafPlan

__all__ = ["check_bound", "kept_positions", "kept_pairs"]


def check_bound(plan: LeafPlan, max_contributions: Any = None) -> int:
    """The k to enforce: the plan's ``max_contributions`` unless a smaller k >= 1 is given.

    Refuses a ``replace`` plan, whose exact total the bounding would make data-dependent."""
    plan.check_public_total(user_id="bounded")
    k_plan = int(plan.max_contributions)
    if max_contributions is None:
        return k_plan
    k = max_contributions
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or int(k) < 1:
        raise InvalidParameterError(f"max_contributions must be an integer >= 1, got {k!r}")
    if int(k) > k_plan:
        raise InvalidParameterError(
            f"max_contributions={k} exceeds the plan's max_contributions={k_plan}, whose noise only covers "
            f"{k_plan} records per user; plan with max_contributions={k}"
        )
    return int(k)


def kept_positions(source: _noise.RandomSource, heavy_counts: np.ndarray, k: int) -> np.ndarray:
    """(U, k) ranks to keep, row h for the h-th user (in id order) among those with more than k
    records: a uniform k-subset of 0..c_h-1, sorted (step 3 of the algorithm)."""
    return _noise.uniform_subsets(source, heavy_counts, k)


def kept_pairs(source: _noise.RandomSource, heavy_counts: np.ndarray, k: int) -> dict[str, np.ndarray]:
    """:func:`kept_positions` as a two-column table ``{"h": user number, "pos": rank}`` (one row per
    kept record of a heavy user), for the engines that join it back to the rows."""
    chosen = kept_positions(source, heavy_counts, k)
    return {"h": np.repeat(np.arange(len(heavy_counts), dtype=np.int64), k), "pos": chosen.ravel()}
