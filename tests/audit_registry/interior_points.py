"""Audit registrations of the seed-002 mechanisms: ``interior_point`` (each method), ``median``,
``quantile`` and ``learn_threshold``, with the tree methods' worst cases at their data-size
boundaries."""

from __future__ import annotations

from typing import Any, Callable, Iterator

from dptree.testing.audit import FAST, AuditConfig, repeat
from dptree.testing.registry import MechanismSpec, NeighborPair, register

#: Domain, claim and declared sizes of the tree-method audits (public parameters of the specs).
INTERIOR_TREE_AUDIT = {
    "lower": 0,
    "upper": 255,
    "epsilon": 1.0,
    "delta": 1e-6,
    "n_treelog": 2 * 10**6,
    "n_heavy": 10**8,
}


def interior_tree_pairs() -> dict[str, list[NeighborPair]]:
    """Worst-case neighbors of the tree methods at the public parameters of
    :data:`INTERIOR_TREE_AUDIT`: datasets are ``(values, counts)`` point masses whose sizes sit on
    the data-size boundaries of the algorithms (TreeLog: |S| = 3t vs 3t + 1, where the removed
    ``n <= 3t`` shortcut switched mechanisms; HeavyPaths: the AboveThreshold threshold k/2 and
    ConstructPaths' |S| <= 10t halt, with a point mass and with spread data)."""
    from dptree.interior.calibration import swap_budget as _swap_budget
    from dptree.interior.heavypaths import heavypaths_parameters
    from dptree.interior.treelog import treelog_parameters

    a = INTERIOR_TREE_AUDIT
    size = int(a["upper"]) - int(a["lower"]) + 1
    e_in, d_in = _swap_budget(float(a["epsilon"]), float(a["delta"]))
    t = int(treelog_parameters(int(a["n_treelog"]), size, e_in, d_in)["t"])
    ph = heavypaths_parameters(int(a["n_heavy"]), size, e_in, d_in)
    k, th = int(ph["k"]), int(ph["t"])
    # every dataset below must fit the declared size, or the cap (not the algorithm) is audited
    assert 4 * t + 1 <= int(a["n_treelog"]) and 10 * th + 1 <= int(a["n_heavy"])
    return {
        "treelog/add_remove": [
            NeighborPair(
                "TreeLog boundary: point mass at 85, |S| = 3t vs 3t + 1", ([85], [3 * t]), ([85], [3 * t + 1])
            ),
            NeighborPair(
                "add a record below two clusters", ([3, 200], [2 * t, 2 * t]), ([0, 3, 200], [1, 2 * t, 2 * t])
            ),
        ],
        "treelog/replace": [
            NeighborPair("replace one record of a 3t + 1 point mass", ([85], [3 * t + 1]), ([0, 85], [1, 3 * t])),
        ],
        "heavypaths/add_remove": [
            NeighborPair("point mass at the StoppingPoint threshold k/2", ([85], [k // 2]), ([85], [k // 2 + 1])),
            NeighborPair("point mass at the ConstructPaths halt |S| = 10t", ([85], [10 * th]), ([85], [10 * th + 1])),
            # spread data there: S_1 has no heavy element, so StoppingPoint needs S_2, which exists
            # for 10t + 1 records and, were the halt on the private size, not for 10t
            NeighborPair(
                "spread data at the ConstructPaths halt |S| = 10t", even_spread(size, 10 * th), even_spread(size, 10 * th + 1)
            ),
        ],
    }


def even_spread(size: int, n: int) -> tuple[list[int], list[int]]:
    """n records spread evenly over [0, size) as (values, counts)."""
    base, rem = divmod(n, size)
    return list(range(size)), [base + (i < rem) for i in range(size)]


def _fixed_pairs(pairs: list[NeighborPair]) -> Callable[[], Iterator[NeighborPair]]:
    return lambda: iter(pairs)


def _value_of(release: Callable[[Any, int], Any]) -> Callable[[Any, int], Any]:
    """The released value of a seed-002 result (what the audit samples)."""
    return lambda data, seed: release(data, seed).value


def _tree_output_of(release: Callable[[Any, int], Any]) -> Callable[[Any, int], Any]:
    """The whole output of a TreeLog/HeavyPaths release, (value, bottom), as one number: the
    value, or lower - 1 for the bottom output (whose value is only the placeholder ``lower``)."""

    def out(data: Any, seed: int) -> Any:
        r = release(data, seed)
        return INTERIOR_TREE_AUDIT["lower"] - 1 if r.bottom else r.value

    return out


def register_interior_points() -> None:
    """Seed-002 mechanisms: interior_point with each method (exponential, treelog, heavypaths,
    auto), median, quantile and learn_threshold, under add/remove-one (neighbors of sizes n and
    n + 1) and replace-one. One release per output, so smaller samples
    (``extra["fast"]``/``extra["slow"]`` configs). Sizes are declared (``n=``/``n_max=``, public)."""
    from dptree.interior import interior_point, learn_threshold, median, quantile

    small = {"fast": AuditConfig(n_select=4_000, n_eval=12_000), "slow": FAST}
    lite = {"fast": AuditConfig(n_select=1_500, n_eval=4_500), "slow": FAST}
    tree = {"fast": AuditConfig(n_select=500, n_eval=1_500), "slow": AuditConfig(n_select=2_000, n_eval=6_000)}
    base = [3, 3, 4, 9]

    def em_spec(neighbors: str, pairs: list[NeighborPair], **kw: Any) -> None:
        method = kw.pop("method", "exponential")
        cfg = small if (method, neighbors) == ("exponential", "add_remove") else lite
        if method == "auto":  # it runs the exponential mechanism audited above: the slow run checks nothing new
            cfg = {"fast": lite["fast"], "slow": lite["fast"]}

        def ip(data: Any, seed: int) -> Any:
            return interior_point(data, lower=0, upper=15, epsilon=1.0, method=method, rng=seed, **kw)

        register(
            MechanismSpec(
                name=f"interior_point/{method}/{neighbors}",
                covers=("interior_point", "plan_interior_point"),
                neighbors=neighbors,
                epsilon=1.0,
                delta=0.0,
                sample=repeat(_value_of(ip)),
                worst_cases=lambda: iter(pairs),
                description=f"ordered-domain exponential mechanism (method={method!r}), eps = 1",
                release=ip,
                extra=dict(cfg),
            )
        )

    em_spec(
        "add_remove",
        [
            NeighborPair("add a record at the top", base, base + [15]),
            NeighborPair("add a record at the bottom", base, base + [0]),
        ],
    )
    em_spec("replace", [NeighborPair("move a record from the bottom to the top", base, [3, 4, 9, 15])])
    # auto with a declared (public) n: the choice depends on (|X|, eps, delta, beta, n) only
    em_spec(
        "add_remove",
        [NeighborPair("add a record at the top", base, base + [15])],
        method="auto",
        n_max=5,
        run_anyway=True,
    )

    a = INTERIOR_TREE_AUDIT
    pairs = interior_tree_pairs()
    for key, method, declared in (
        ("treelog/add_remove", "treelog", "n_treelog"),
        ("treelog/replace", "treelog", "n_treelog"),
        ("heavypaths/add_remove", "heavypaths", "n_heavy"),
    ):

        def tree_ip(data: Any, seed: int, method: str = method, n_max: int = int(a[declared])) -> Any:
            vals, cnt = data
            return interior_point(
                vals,
                counts=cnt,
                lower=a["lower"],
                upper=a["upper"],
                epsilon=a["epsilon"],
                delta=a["delta"],
                method=method,  # type: ignore[arg-type]
                n_max=n_max,
                rng=seed,
            )

        register(
            MechanismSpec(
                name=f"interior_point/{key}",
                covers=("interior_point", "plan_interior_point"),
                neighbors=key.split("/")[1],
                epsilon=float(a["epsilon"]),
                delta=float(a["delta"]),
                sample=repeat(_tree_output_of(tree_ip)),
                worst_cases=_fixed_pairs(pairs[key]),
                description=f"{method} with declared n_max = {a[declared]} on |X| = 256, (1, 1e-6)",
                release=tree_ip,
                extra=dict(tree),
            )
        )

    def med(data: Any, seed: int) -> Any:
        return median(data, lower=0, upper=15, epsilon=1.0, rng=seed)

    def q25(data: Any, seed: int) -> Any:
        return quantile(data, 0.25, lower=0, upper=15, epsilon=1.0, rng=seed)

    for name, fn, neighbors, pair in (
        ("median/exponential/add_remove", med, "add_remove", NeighborPair("add above the median", base, base + [15])),
        ("median/exponential/replace", med, "replace", NeighborPair("move a record across", base, [3, 4, 9, 15])),
        ("quantile/q=0.25/add_remove", q25, "add_remove", NeighborPair("add at the bottom", base, base + [0])),
    ):
        register(
            MechanismSpec(
                name=name,
                covers=("median", "quantile", "plan_quantile"),
                neighbors=neighbors,
                epsilon=1.0,
                delta=0.0,
                sample=repeat(_value_of(fn)),
                worst_cases=_fixed_pairs([pair]),
                description="single-quantile exponential mechanism, eps = 1",
                release=fn,
                extra=dict(small if name == "median/exponential/add_remove" else lite),
            )
        )

    xs = [1, 2, 3, 10, 11, 12] * 3
    ys = [0, 0, 0, 1, 1, 1] * 3

    for method, delta, neighbors, pair in (
        (
            "exponential",
            0.0,
            "add_remove",
            NeighborPair("add a labelled example", (xs, ys), (xs + [6], ys + [1])),
        ),
        (
            "exponential",
            0.0,
            "replace",
            NeighborPair("flip one example's label and move it", (xs, ys), (xs[:-1] + [0], ys[:-1] + [0])),
        ),
        (
            "treelog",
            1e-6,
            "add_remove",
            NeighborPair("add a labelled example", (xs, ys), (xs + [6], ys + [1])),
        ),
    ):

        def learn(data: Any, seed: int, method: str = method, delta: float = delta) -> Any:
            x, y = data
            return learn_threshold(
                x,
                y,
                lower=0,
                upper=15,
                epsilon=1.0,
                delta=delta,
                method=method,  # type: ignore[arg-type]
                rng=seed,
                n_max=64,
            )

        def learned(data: Any, seed: int, learn: Any = learn) -> Any:
            c = learn(data, seed)
            return -1 - (c.constant or 0) if c.threshold is None else c.threshold

        register(
            MechanismSpec(
                name=f"learn_threshold/{method}/{neighbors}",
                covers=("learn_threshold", "plan_learn_threshold"),
                neighbors=neighbors,
                epsilon=1.0,
                delta=delta,
                sample=repeat(learned),
                release=learn,
                worst_cases=_fixed_pairs([pair]),
                description="threshold learning via an interior point of the padded boundary sample, eps = 1",
                extra=dict(small if (method, neighbors) == ("exponential", "add_remove") else lite),
            )
        )
