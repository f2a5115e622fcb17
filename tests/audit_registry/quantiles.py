"""Audit registrations of ``dptree.quantiles``: ApproxQuantiles under add/remove-one and
replace-one (two levels, so the recursion has two layers and the replace calibration matters), one
release per public group, and per person (``user_id=``, k = 2), each with its stated-bound
intervals (``interval="bound"``: the estimates get all of epsilon); and the measured intervals
(the default) at both relations, audited through an interval's ends. Outputs on [0, 15]; a pair of
outputs (y_1, y_2) is audited as the one number 16 y_1 + y_2."""

from __future__ import annotations

from typing import Any, Callable

from dptree.testing.audit import AuditConfig, repeat
from dptree.testing.registry import MechanismSpec, NeighborPair, register

#: one release per output (about 2 ms each): small samples keep the specs near 10 s each
LITE = {"fast": AuditConfig(n_select=1_000, n_eval=3_000), "slow": AuditConfig(n_select=2_000, n_eval=6_000)}


def _register(name: str, neighbors: str, release: Callable[[Any, int], Any], output: Callable[[Any], int],
              pairs: list[NeighborPair], description: str) -> None:
    """One spec at epsilon = 1: ``output`` reads the audited number off ``release(data, seed)``."""
    register(
        MechanismSpec(
            name=name,
            covers=("quantiles", "plan_quantiles"),
            neighbors=neighbors,
            epsilon=1.0,
            delta=0.0,
            sample=repeat(lambda data, seed: output(release(data, seed))),
            worst_cases=lambda: iter(pairs),
            description=description,
            release=release,
            extra=dict(LITE),
        )
    )


def register_quantiles() -> None:
    """quantiles(method="approx") under add/remove and replace ("exponential" is the audited single
    mechanism composed; "tree" the audited range tree read off), by group and per person."""
    from dptree.quantiles import quantiles

    def two(rel: Any) -> int:
        return 16 * int(rel.values[0]) + int(rel.values[1])

    base = [3, 3, 4, 9, 12]
    pairs = {
        "add_remove": [NeighborPair("add a record between the two quantiles", base, base + [6])],
        "replace": [NeighborPair("move a record from the low piece to the high one", base, [3, 4, 9, 12, 13])],
    }
    for neighbors in ("add_remove", "replace"):

        def release(data: Any, seed: int, neighbors: str = neighbors) -> Any:
            return quantiles(data, [0.25, 0.75], lower=0, upper=15, epsilon=1.0, method="approx", neighbors=neighbors,
                             interval="bound", rng=seed)

        _register(f"quantiles/approx/{neighbors}", neighbors, release, two, pairs[neighbors],
                  "dptree.quantiles(method='approx') at two levels, eps = 1")

    # the measured intervals (interval="counts", the default): the estimates at 0.9 epsilon and the
    # interval counts at 0.1, audited together through the first level's interval ends
    for neighbors in ("add_remove", "replace"):

        def measured(data: Any, seed: int, neighbors: str = neighbors) -> Any:
            return quantiles(data, [0.25, 0.75], lower=0, upper=15, epsilon=1.0, method="approx", neighbors=neighbors,
                             interval_share=0.5, rng=seed)

        _register(f"quantiles/approx/intervals/{neighbors}", neighbors, measured,
                  lambda rel: 16 * int(rel.ci_low[0]) + int(rel.ci_high[0]), pairs[neighbors],
                  "dptree.quantiles(method='approx') with its measured intervals at half of eps = 1: the first "
                  "level's interval")

    # one release per public group (parallel composition): a record added to group "a" changes
    # that group's median only
    base_v, base_g = [3, 4, 9, 5, 12], ["a", "a", "a", "b", "b"]

    def grouped(data: Any, seed: int) -> Any:
        v, g = data
        return quantiles(v, [0.5], lower=0, upper=15, epsilon=1.0, method="approx", by=g, groups=["a", "b"],
                         interval="bound", rng=seed)

    _register("quantiles/approx/by-group", "add_remove", grouped,
              lambda rel: 16 * int(rel["a"].values[0]) + int(rel["b"].values[0]),
              [NeighborPair("add a record to group a", (base_v, base_g), (base_v + [4], base_g + ["a"]))],
              "dptree.quantiles(by=, groups=): one median per public group, eps = 1 for the set")

    # one person's records bounded to k = 2 (user_id=), every call at epsilon / 2: adding a person with
    # five records at one value (two kept, chosen at random) moves the median by at most two records
    base_x, base_u = [3, 4, 9, 12], [1, 2, 3, 4]

    def per_user(data: Any, seed: int) -> Any:
        x, u = data
        return quantiles(x, [0.5], lower=0, upper=15, epsilon=1.0, method="approx", user_id=u, max_contributions=2,
                         interval="bound", rng=seed)

    _register("quantiles/approx/user_k2", "add_remove_user(k=2, bounded)", per_user, lambda rel: int(rel.values[0]),
              [NeighborPair("add a user with five records at 10", (base_x, base_u),
                            (base_x + [10] * 5, base_u + [9] * 5))],
              "dptree.quantiles(user_id=, max_contributions=2): the median, eps = 1 per user")
