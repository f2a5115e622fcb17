"""Audit registrations of ``dptree.quantiles``: ApproxQuantiles under add/remove-one and
replace-one (two levels, so the recursion has two layers and the replace calibration matters). The output pair (y_1, y_2) is audited as the one number
16 y_1 + y_2 over [0, 15]."""

from __future__ import annotations

from typing import Any

from dptree.testing.audit import AuditConfig, repeat
from dptree.testing.registry import MechanismSpec, NeighborPair, register


def register_quantiles() -> None:
    """quantiles(method="approx") under add/remove and replace ("exponential" is the audited single
    mechanism composed; "tree" the audited range tree read off)."""
    from dptree.quantiles import quantiles

    # one release per output (about 2 ms each): small samples keep the three specs near 30 s in all
    lite = {"fast": AuditConfig(n_select=1_000, n_eval=3_000), "slow": AuditConfig(n_select=4_000, n_eval=12_000)}
    base = [3, 3, 4, 9, 12]
    pairs = {
        "add_remove": [NeighborPair("add a record between the two quantiles", base, base + [6])],
        "replace": [NeighborPair("move a record from the low piece to the high one", base, [3, 4, 9, 12, 13])],
    }
    for method, neighbors in (("approx", "add_remove"), ("approx", "replace")):

        def release(data: Any, seed: int, method: str = method, neighbors: str = neighbors) -> Any:
            return quantiles(data, [0.25, 0.75], lower=0, upper=15, epsilon=1.0, method=method, neighbors=neighbors,
                             rng=seed)

        def pair_value(data: Any, seed: int, release: Any = release) -> int:
            v = release(data, seed).values
            return 16 * int(v[0]) + int(v[1])

        register(
            MechanismSpec(
                name=f"quantiles/{method}/{neighbors}",
                covers=("quantiles",),
                neighbors=neighbors,
                epsilon=1.0,
                delta=0.0,
                sample=repeat(pair_value),
                worst_cases=lambda pairs=pairs[neighbors]: iter(pairs),
                description=f"dptree.quantiles(method={method!r}) at two levels, eps = 1",
                release=release,
                extra=dict(lite),
            )
        )

    # one release per public group (parallel composition): a record added to group "a" changes
    # that group's median only; the two medians are audited as the one number 16 y_a + y_b
    groups = ["a", "b"]
    base_v, base_g = [3, 4, 9, 5, 12], ["a", "a", "a", "b", "b"]

    def grouped(data: Any, seed: int) -> Any:
        v, g = data
        return quantiles(v, [0.5], lower=0, upper=15, epsilon=1.0, method="approx", by=g, groups=groups, rng=seed)

    def medians(data: Any, seed: int) -> int:
        rel = grouped(data, seed)
        return 16 * int(rel["a"].values[0]) + int(rel["b"].values[0])

    register(
        MechanismSpec(
            name="quantiles/approx/by-group",
            covers=("quantiles",),
            neighbors="add_remove",
            epsilon=1.0,
            delta=0.0,
            sample=repeat(medians),
            worst_cases=lambda: iter([NeighborPair("add a record to group a", (base_v, base_g),
                                                   (base_v + [4], base_g + ["a"]))]),
            description="dptree.quantiles(by=, groups=): one median per public group, eps = 1 for the set",
            release=grouped,
            extra=dict(lite),
        )
    )

