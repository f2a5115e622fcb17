"""What a quantiles release's plan derives from public inputs alone: the method (``"auto"`` resolved
by predicted error, :mod:`dptree.quantiles.auto`), the domain, the declared sizes, the budget per
exponential-mechanism call, the range tree's plan for the tree method, the privacy loss and the
privacy statement (:func:`statement`). A file's loader (:mod:`dptree.quantiles.release`) re-derives
the statement through :func:`plan_for_file`; :class:`dptree.quantiles.api.QuantilesPlan` adds the
private step (``release``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from dataclasses import replace as _replace
from fractions import Fraction
from typing import Any, Literal, TypeVar

import numpy as np

from dptree._validation import Options
from dptree.data.domain import point_domain
from dptree.errors import InvalidParameterError
from dptree.interior.calibration import declared_size
from dptree.io.grouped import group_statement
from dptree.partitions.composed import composed_statement
from dptree.privacy.budget import BUDGET_RANGE, Budget
from dptree.privacy.loss import Exponential, Laplace, PrivacyLoss
from dptree.privacy.statement import Neighbors, make_statement
from dptree.privacy.unit import PerRecord, PerUser, PrivacyUnit, Replace
from dptree.quantiles.approx import layer_epsilon, layers
from dptree.quantiles.auto import TREE_BRANCHING, TREE_LEVELS, choose_method
from dptree.quantiles.dither import approx_dither_factor
from dptree.quantiles.measured import INTERVAL_SHARE, counts_scale

__all__ = ["QuantilesPlanCore", "make_plan", "selected_statement", "plan_for_file", "statement", "joint_module",
           "interval_budget", "resolve_interval", "METHODS", "NEIGHBORS", "TREE_GRID", "BOUNDED_POINTS",
           "INTERVAL_OPTIONS", "TREE_INTERVALS", "MECHANISM_INTERVALS"]

Relation = Literal["add_remove", "replace"]

METHODS: tuple[str, ...] = ("auto", "tree", "approx", "joint", "exponential")
NEIGHBORS = [Options(("add_remove", "replace"))]
#: the tree's intervals (:mod:`dptree.rangetree.quantile_calibration`)
TREE_INTERVALS: tuple[str, ...] = ("calibrated", "pivot")
#: the exponential-mechanism methods' intervals: measured by noisy counts at a share of epsilon
#: (:mod:`dptree.quantiles.measured`), or the stated bound from the utility tail at no extra
#: budget (:mod:`dptree.quantiles.intervals`)
MECHANISM_INTERVALS: tuple[str, ...] = ("counts", "bound")
#: ``interval=``: "auto" is each method's default ("calibrated" for the tree, "counts" otherwise)
INTERVAL_OPTIONS: tuple[str, ...] = ("auto",) + TREE_INTERVALS + MECHANISM_INTERVALS
#: the sensitivity every exponential-mechanism call is calibrated to, for the level a/b
_SENSITIVITY = {"add_remove": "max(a, b - a) (add/remove-one)", "replace": "b (replace-one)"}


def joint_module() -> Any:
    """:mod:`dptree.quantiles.joint` (JointExp, written beside this package), imported when used."""
    import importlib

    try:
        return importlib.import_module("dptree.quantiles.joint")
    except ModuleNotFoundError as exc:
        raise InvalidParameterError("method='joint' is not available in this build; use 'approx' or 'tree'") from exc


def interval_budget(epsilon: float, share: float, neighbors: str, k: int) -> tuple[float, Fraction, int]:
    """(the mechanisms' epsilon, the interval counts' discrete Laplace scale, their L1 sensitivity)
    for ``interval="counts"`` at ``share`` of ``epsilon`` (:mod:`dptree.quantiles.measured`): the
    sensitivity is k (one person's k records, each in one cell) or 2 under replace-one (a record
    moves between two cells); the scale is rounded up by the sampler, and the mechanisms get the
    rest of epsilon exactly, so the two add up to epsilon."""
    sensitivity = 2 if neighbors == "replace" else int(k)
    scale = counts_scale(epsilon, share, sensitivity)
    return epsilon - float(Fraction(sensitivity) / scale), scale, sensitivity


def _interval_fields(epsilon: float, share: float, neighbors: str, k: int) -> dict[str, Any]:
    """The statement's account of the interval counts (``interval="counts"``; none for the bound)."""
    if not share:
        return {}
    mech, scale, sens = interval_budget(epsilon, share, neighbors, k)
    return {"intervals": (f"one histogram over cells cut at public functions of the released estimates, discrete "
                          f"Laplace noise of scale {float(scale):.17g} at L1 sensitivity {sens}: {share:g} of epsilon, "
                          "the estimates the rest (sequential composition)"),
            "interval_share": float(share), "epsilon_mechanism": mech}


def statement(method: str, epsilon: float, m: int, neighbors: str, private: bool, *, lower: Any = None,
              upper: Any = None, width: Any = None, n: int | None = None, levels: Any = None,
              dithered: bool = True, joint_capped: bool = False,
              max_contributions: int = 1, interval_share: float = 0.0) -> dict[str, Any]:
    """The privacy statement of a quantiles release, from public parameters only (``n``: the declared
    size or bound, which sets JointExp's dither factor; ``levels``: the m levels, which set
    JointExp's sensitivity; ``dithered=False``: the statement of an undithered JointExp or
    ApproxQuantiles release (no ``dither_factor``), ``joint_capped=True``: of a JointExp release whose
    records were capped at the declared size and priced at sensitivity 2, for loading files that
    state them; ``max_contributions`` = k: the
    privacy unit is one person's at most k records, and the exponential-mechanism methods run at
    epsilon / k, so that by group privacy k records cost epsilon; ``interval_share``: the share of
    epsilon the interval counts spend, ``interval="counts"``, 0 for the stated bound and the tree)."""
    k = int(max_contributions)
    who = Neighbors(neighbors, max_contributions=k)  # type: ignore[arg-type]
    budget = {"epsilon": epsilon, "delta": 0.0}
    counts = {} if method == "tree" else _interval_fields(epsilon, interval_share, neighbors, k)
    mech = counts.get("epsilon_mechanism", epsilon)
    per_record = mech / k
    group = {} if k == 1 else {
        "group_privacy": f"calibrated for one record at epsilon / {k}: one person's k = {k} records cost epsilon "
                         "(a chain of k single-record changes)", "epsilon_per_record": epsilon / k}
    group.update(counts)
    if method == "tree":
        from dptree.rangetree.release import plan_range_tree

        plan = plan_range_tree(lower=lower, upper=upper, epsilon=epsilon, width=width, levels=TREE_LEVELS,
                               branching=TREE_BRANCHING, neighbors=neighbors, max_contributions=k)
        st = dict(plan.statement)
        st["mechanism"] = "quantiles read off a " + st["mechanism"] + " (Smith & Ullman 2021; Honaker 2015)"
        st["private"] = bool(private)
        return st
    if method == "exponential":
        return make_statement(
            mechanism=f"{m} tie-aware exponential mechanisms (one per level, Kaplan et al. 2020, Lemma 2.2) at "
                      f"epsilon/{m}: basic composition", neighbors=who, guarantee="pure epsilon-DP", private=private,
            budget_spent=budget, epsilon_per_call=per_record / m, sensitivity=_SENSITIVITY[neighbors], **group)
    if method == "approx":
        L = layers(m)
        ties = ("each call on the keys x K + u of its piece's records (u uniform on [0, K), drawn per record and "
                "call), records split at the chosen key, those at it by a fair coin; outputs floor(key / K)"
                if dithered else "ties at a split sent to one side by a fair coin")
        dither = {"dither_factor": approx_dither_factor(point_domain(lower, upper, width).size)} if dithered else {}
        return make_statement(
            mechanism=f"ApproxQuantiles (Kaplan, Schnapp & Stemmer, ICML 2022, Algorithm 1): {L} layers of tie-aware "
                      f"exponential mechanisms on disjoint pieces (parallel composition within a layer), {ties}",
            neighbors=who, guarantee="pure epsilon-DP",
            private=private, budget_spent=budget, layers=L,
            epsilon_per_call=layer_epsilon(per_record, m, who.relation), sensitivity=_SENSITIVITY[neighbors],
            calibration=("epsilon / L per layer" if neighbors == "add_remove" else
                         "epsilon / (2L - 1) per layer: below the first layer a replaced record can move between "
                         "two pieces, so a layer costs twice its budget"), **dither, **group)
    if method == "joint":
        base = make_statement(mechanism="JointExp (Gillenwater, Joseph & Kulesza, ICML 2021)", neighbors=who,
                              guarantee="pure epsilon-DP", private=private, budget_spent=budget, **group)
        if levels is None and not joint_capped:
            raise ValueError("JointExp's statement needs its levels (they set its sensitivity)")
        jm = joint_module()
        kd = jm.dither_factor(n, point_domain(lower, upper, width).size) if dithered else None
        st = jm.joint_statement(kd, None if joint_capped else levels, neighbors)  # "neighbors": the sensitivity's
        return {**base, **st, "neighbors": base["neighbors"], "sensitivity_relations": st["neighbors"],
                "private": bool(private), **counts}
    raise ValueError(method)



def selected_statement(selection: Any, member: Any, *, epsilon: float, delta: float, share: float,
                       release_epsilon: float, groups: Any, private: bool) -> dict[str, Any]:
    """The statement of quantiles by groups found privately (:mod:`dptree.quantiles.private_groups`;
    ``groups`` None: the plan's, before the selection)."""
    return composed_statement(selection, member, epsilon=epsilon, delta=delta, share=share,
                              release_budget=(release_epsilon, 0.0), groups=groups, private=private,
                              product="quantiles release")


#: the default read-off grid of the tree's intervals (``grid=``; the tree's own default)
TREE_GRID = 4096
#: the largest domain the exponential-mechanism methods bound per user (one count per point)
BOUNDED_POINTS = 1 << 24


@dataclass(frozen=True, eq=False)
class QuantilesPlanCore:
    """Everything public about a quantiles release, decided before any data is read: the method
    (``"auto"`` resolved from public quantities only: m, epsilon, the domain, the relation, a
    declared size; :mod:`dptree.quantiles.auto`), the domain, the declared sizes, the budget per
    exponential-mechanism call, the range tree's plan for the tree method, the groups of a
    group-by release and the privacy statement. :class:`dptree.quantiles.api.QuantilesPlan` adds
    the one private step."""

    method: str
    enc: Any
    lo: Any
    hi: Any
    width: Any
    epsilon: float
    neighbors: Relation
    size_n: int | None
    upper_bound: bool
    dither: int
    per_call: float
    k: int
    n_min: int | None = None
    q: np.ndarray = field(default_factory=lambda: np.zeros(0), kw_only=True)
    level: float = field(default=0.95, kw_only=True)
    #: the intervals: the tree's "calibrated" or "pivot", the other methods' "counts" or "bound"
    interval: str = field(default="calibrated", kw_only=True)
    #: the share of epsilon the interval counts spend (``interval="counts"``; 0 otherwise)
    interval_share: float = field(default=0.0, kw_only=True)
    grid: int = field(default=TREE_GRID, kw_only=True)
    user_id: Any = field(default=None, kw_only=True)
    groups: list[Any] | None = field(default=None, kw_only=True)
    #: the range tree's plan (method "tree"); None for the other methods
    tree: Any = field(default=None, kw_only=True)
    #: the statement of one release (of each group's, with groups)
    member_statement: dict[str, Any] = field(default_factory=dict, kw_only=True)
    #: the caller's bounds and width, as the data readers take them
    lower: Any = field(default=None, kw_only=True)
    upper: Any = field(default=None, kw_only=True)
    input_width: Any = field(default=None, kw_only=True)
    #: groups found from the data (``groups="private"``): the selection's plan, and the whole budget
    #: (epsilon, delta, groups_share) of which ``epsilon`` above is the releases' part
    selection: Any = field(default=None, kw_only=True)
    total: tuple[float, float, float] | None = field(default=None, kw_only=True)

    @property
    def statement(self) -> dict[str, Any]:
        """The privacy statement the release carries (a group-by release: with its groups; with
        groups found from the data, the composed statement before the selection)."""
        if self.selection is not None and self.total is not None:
            eps, delta, share = self.total
            return selected_statement(self.selection, self.member_statement, epsilon=eps, delta=delta, share=share,
                                      release_epsilon=self.epsilon, groups=None, private=True)
        if self.groups is None:
            return dict(self.member_statement)
        return group_statement(self.member_statement, self.groups, True)

    @property
    def budget(self) -> Budget:
        if self.total is not None:
            return Budget.approx(self.total[0], self.total[1])
        return Budget.pure(self.epsilon)

    @property
    def mechanism_epsilon(self) -> float:
        """The epsilon the quantile mechanisms spend (all of it but the interval counts' share)."""
        return interval_budget(self.epsilon, self.interval_share, self.neighbors, self.k)[0] if self.interval_share \
            else self.epsilon

    def counts_noise(self) -> tuple[Fraction, int]:
        """(discrete Laplace scale, L1 sensitivity) of the interval counts (``interval="counts"``)."""
        _, scale, sens = interval_budget(self.epsilon, self.interval_share, self.neighbors, self.k)
        return scale, sens

    @property
    def unit(self) -> PrivacyUnit:
        if self.neighbors == "replace":
            return Replace(self.k)
        return PerRecord(self.k) if self.user_id is None else PerUser(self.user_id, self.k)

    def privacy_loss(self) -> PrivacyLoss:
        """The noisy measurements, each at its share of epsilon (one person's k records: each
        exponential mechanism at 1/k of its share per record, k records move its score by k times
        its sensitivity, so it is listed at its share; group privacy). tree: the range tree's
        levels (discrete Laplace, scale and L1 sensitivity per level); approx: one exponential
        mechanism per layer of the recursion (the calls of a layer run on disjoint pieces: parallel
        composition), under replace-one two per layer below the first (a replaced record can sit in
        two pieces); joint: one exponential mechanism (Gillenwater, Joseph & Kulesza 2021);
        exponential: one per level at epsilon / m. With ``interval="counts"`` the mechanisms share
        the rest of epsilon and the interval counts are one discrete Laplace histogram (scale and
        L1 sensitivity, :func:`interval_budget`). With groups, one group's loss (``parallel`` = the
        number of groups); with groups found from the data, the selection's (epsilon, delta) step
        first, then one group's loss (their number is not public)."""
        who = Neighbors(self.neighbors, self.k)
        parallel = 1 if self.groups is None else len(self.groups)
        if self.selection is not None:
            steps = self.selection.measurements() + _replace(self, selection=None).privacy_loss().measurements
            return PrivacyLoss(who, steps)
        m = int(self.q.size)
        items: list[Any]
        if self.method == "tree":
            return PrivacyLoss(who, self.tree.privacy_loss().measurements, parallel)
        mech = self.mechanism_epsilon
        if self.method == "joint":
            items = [Exponential(mech, "JointExp over the m levels")]
        elif self.method == "exponential":
            items = [Exponential(mech / m, f"tie-aware exponential mechanism, level {float(q):g}") for q in self.q]
        else:
            share = self.per_call * self.k
            items = [Exponential(share, "ApproxQuantiles, layer 1")]
            for layer in range(2, layers(m) + 1):
                calls = ("one call of layer", "another call of layer") if self.neighbors == "replace" else ("layer",)
                items += [Exponential(share, f"ApproxQuantiles, {what} {layer}") for what in calls]
        if self.interval_share:
            scale, sens = self.counts_noise()
            items.append(Laplace(scale, Fraction(sens), "interval counts: one histogram over cells cut at the estimates"))
        return PrivacyLoss(who, tuple(items), parallel)


P = TypeVar("P", bound=QuantilesPlanCore)


def plan_for_file(method: str, eps: float, qa: np.ndarray, neighbors: Relation, lower: Any, upper: Any, width: Any,
                  n_declared: int | None, n_is_upper_bound: bool, n_min: int | None, k: int, *,
                  dithered: bool = True, joint_capped: bool = False, interval: str | None = None,
                  interval_share: float = INTERVAL_SHARE) -> QuantilesPlanCore:
    """The plan of a saved release (its loader re-derives the statement from it): the method that
    ran, the file's domain, declared sizes and unit, and for the mechanism methods their intervals
    (``interval`` None: the stated bound, as files without the field were made)."""
    n, n_max = (None, n_declared) if n_is_upper_bound else (n_declared, None)
    if interval is None:
        interval = "calibrated" if method == "tree" else "bound"
    return make_plan(qa, lower, upper, eps, method, width, neighbors, n, n_max, k, None, n_min,
                     dithered=dithered, joint_capped=joint_capped, interval=interval,
                     interval_share=interval_share)


def resolve_interval(method: str, named: str, interval: str) -> str:
    """The intervals a release of ``method`` (auto resolved) gets for ``interval=``: "auto" is
    the method's default (the tree's "calibrated", the others' "counts"); with ``method="auto"``
    an option of the other kind of method gives way to the default of the one picked; beside a
    named method it is refused."""
    own, default = (TREE_INTERVALS, "calibrated") if method == "tree" else (MECHANISM_INTERVALS, "counts")
    if interval == "auto":
        return default
    if interval in own:
        return interval
    if named == "auto":
        return default
    if method == "tree":
        raise InvalidParameterError(f"interval={interval!r} is for the exponential-mechanism methods; the tree's "
                                    "intervals are 'calibrated' (default) or 'pivot'", parameter="interval")
    raise InvalidParameterError(f"interval={interval!r} chooses the tree's intervals; method={named!r} has its own: "
                                "leave interval out (measured by noisy counts, 'counts') or pass 'bound' (the stated "
                                "worst-case bound, no extra budget)", parameter="interval")


def make_plan(qa: np.ndarray, lower: Any, upper: Any, eps: float, method: str, width: Any, neighbors: Relation,
              n: int | None, n_max: int | None, k: int = 1, user_id: Any = None, n_min: int | None = None, *,
              level: float = 0.95, interval: str = "auto", interval_share: float = INTERVAL_SHARE,
              grid: int = TREE_GRID, dithered: bool = True, joint_capped: bool = False,
              cls: type[P] = QuantilesPlanCore) -> P:  # type: ignore[assignment]
    """The method (auto resolved from public quantities) and its public parameters; every refusal
    that depends on the parameters, before the data is read. ``cls``: the plan's class
    (:class:`dptree.quantiles.api.QuantilesPlan` for a plan that releases)."""
    input_width, original_method = width, method
    if (k != 1 or user_id is not None) and neighbors == "replace":
        raise InvalidParameterError("quantiles per person (user_id=, max_contributions=) are stated for add/remove "
                                    "neighbors; use neighbors='add_remove'")
    if user_id is not None and n is not None:
        raise InvalidParameterError("with user_id= the number of records kept (at most max_contributions per user) "
                                    "depends on the data, so it cannot be declared exactly: pass n_max= (a public "
                                    "upper bound) instead of n=")
    if k > 1 and not BUDGET_RANGE[0] <= eps / k:  # every mechanism runs at epsilon / k per record
        raise InvalidParameterError(f"epsilon={eps:g} / max_contributions={k} leaves {eps / k:g} per record, below "
                                    f"the supported {BUDGET_RANGE[0]:g}: lower max_contributions or raise epsilon")
    size_n, upper_bound = declared_size(n, n_max)
    if n_min is not None and n is not None:
        raise InvalidParameterError("n= is the exact size, which is also its lower bound: drop n_min=")
    if n_min is not None and n_max is not None and n_min > n_max:
        raise InvalidParameterError(f"n_min={n_min} exceeds n_max={n_max}: a lower bound cannot exceed the upper one")
    enc = point_domain(lower, upper, width)
    lo, hi = enc.bounds
    dates = enc.kind == "datetime"
    width = enc.resolution if dates else width  # a date domain's resolution serves every method
    users_need_tree = user_id is not None and (enc.kind != "integer" or enc.size > BOUNDED_POINTS)
    if method == "auto" and users_need_tree:  # only the tree bounds users on this domain (public facts)
        method = "tree"
    elif method == "auto":
        # the mechanisms' budget if auto picks one: epsilon less their interval counts' share, per record
        em_share = float(interval_share) if resolve_interval("approx", "auto", interval) == "counts" else 0.0
        mech_eps = interval_budget(eps, em_share, neighbors, k)[0] if em_share else eps
        method = choose_method(qa.size, lower=lo, upper=hi, epsilon=eps / k, width=width, neighbors=neighbors,
                               n=n if n is not None else n_max, mechanism_epsilon=mech_eps / k)
        width = width if method == "tree" or dates else None  # the tree's bucket width, used when auto picks it
    if method == "joint" and neighbors == "replace":
        raise InvalidParameterError("method='joint' is stated for add/remove-one neighbors; use neighbors='add_remove'")
    if method == "joint":
        _check_joint_size(qa.size, size_n)
        if enc.size >= 1 << 62:
            raise InvalidParameterError(f"method='joint' needs a domain of fewer than 2^62 points; this {enc.kind} "
                                        f"domain has {enc.size:.3g} (a float domain counts every float64 between its "
                                        "bounds): use method='approx' or 'tree', or integer bounds")
    if width is not None and method != "tree" and not dates:
        raise InvalidParameterError("width= is the tree's bucket width; the other methods use every point of the "
                                    "domain")
    if users_need_tree and method != "tree":
        raise InvalidParameterError(f"user_id= with method={method!r} needs an integer domain of at most 2^24 points "
                                    "(the records kept per user are counted per point); use method='tree' (on a float "
                                    "domain with a bucket width=), which bounds users on any domain")
    named = interval
    interval = resolve_interval(method, original_method, interval)
    share = float(interval_share) if interval == "counts" else 0.0
    if interval_share != INTERVAL_SHARE and not share and original_method != "auto":
        raise InvalidParameterError(f"interval_share= is the share of epsilon the interval counts spend "
                                    f"(interval='counts'); method={original_method!r} with interval={named!r} has "
                                    "none: drop interval_share=", parameter="interval_share")
    mech = interval_budget(eps, share, neighbors, k)[0] if share else eps
    dither = 1  # public: JointExp's from the declared n and |X|, ApproxQuantiles' from |X|
    if dithered and method == "joint":
        dither = joint_module().dither_factor(size_n, enc.size)
    elif dithered and method == "approx":
        dither = approx_dither_factor(enc.size)
    # one person's k records: every exponential-mechanism call at 1/k of its share (group privacy)
    per_call = (layer_epsilon(mech, qa.size, neighbors) if method == "approx" else mech / qa.size) / k
    tree = None
    if method == "tree":
        from dptree.rangetree.release import plan_range_tree

        tree = plan_range_tree(lower=lo, upper=hi, epsilon=eps, width=width, levels=TREE_LEVELS,
                               branching=TREE_BRANCHING, neighbors=neighbors, max_contributions=int(k))
    member = statement(method, eps, qa.size, neighbors, True, lower=lo, upper=hi, width=width, n=size_n,
                       levels=qa, max_contributions=int(k), dithered=dithered, joint_capped=joint_capped,
                       interval_share=share)
    return cls(method, enc, lo, hi, width, eps, neighbors, size_n, upper_bound, dither, per_call, int(k),
               None if n_min is None else int(n_min), q=qa, level=float(level), interval=interval,
               interval_share=share, grid=int(grid),
               user_id=user_id, tree=tree, member_statement=member, lower=lower, upper=upper, input_width=input_width)



def _check_joint_size(m: int, size_n: int | None) -> None:
    """JointExp's O(m n) tables are sized from a **declared** size, never from the data."""
    limit = joint_module().JOINT_MAX_CELLS
    if size_n is None:
        raise InvalidParameterError("method='joint' needs a public size: declare n= or n_max= (its O(m n) tables are "
                                    "sized from it, never from the data), or use method='approx'", parameter="method")
    if size_n > 2**40 or m * (size_n + 1) > limit:
        raise InvalidParameterError(f"method='joint' with {m} levels and a declared size of {size_n:,} exceeds its "
                                    f"limit of {limit:,} cells (levels x (size + 1)); use method='approx' or 'tree'")
