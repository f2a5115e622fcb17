"""A private contribution bound: ``range_tree(..., user_id=..., max_contributions="private")``.

A declared share of the budget chooses the bound k on the records kept per user from the data;
the tree is released at that k with the rest (sequential composition). Both steps are in the
plan's :meth:`PrivateContributionsPlan.privacy_loss`, so a ledger charges them before any row is
read.

**The level** (Amin, Kulesza, Munoz Medina & Vassilvitskii, "Bounding user contributions: a
bias-variance trade-off in differential privacy", ICML 2019). Bounding at k drops D(k) =
sum_u max(c_u - k, 0) of the records (c_u: user u's records) and lets the noise grow with k.
Their analysis puts the best k where the two balance: lowering k by one drops one more record of
each of the N(k) = #{u : c_u > k} users above it (D(k) - D(k + 1) = N(k)) and takes one unit of
k off the noise, so the bias and the noise trade at the level of the per-user counts where
N(k) is the noise of one unit of k in records: a quantile of the per-user counts, counted from
the top. For dptree's tree: at bound k every level's noise is k times its noise at k = 1 (Laplace
scale or Gaussian sigma proportional to the level's sensitivity k), so a range r of the workload
has standard error k s_r, s_r its error at k = 1 (public, :meth:`TreePlan.expected_error`). Each
user's kept records are a uniform sample of theirs, so when the values do not depend on which
records a user keeps, a range holding a share f_r of the records loses f_r D(k) of them on
average. Over the workload (all ranges [l, r], or the prefixes with ``levels="prefix"``), with
S^2 = mean s_r^2 and F^2 = mean f_r^2, the error is

    RMSE(k) <= F D(k) + S k,

a bound within a factor sqrt(2) of the root of F^2 D(k)^2 + S^2 k^2. It is convex in k (D is
convex, with slopes -N(k)), least at the smallest k with F N(k) <= S: the k with

    m = ceil(S / F) users above it,

the top (m / U)-quantile of the U users' record counts. S is exact from the plan at k = 1 (the
tree's share of the budget, :func:`~dptree.rangetree.allocation.average_workload_variance`); F
is the value for records spread evenly over the domain ((D + 1)(D + 2) / (6 D^2) for all ranges,
(D + 1)(2 D + 1) / (6 D^2) for the prefixes; D buckets), a public constant that does not depend on
the data.

**The choice** is :func:`dptree.interior.top_rank.top_rank_mechanism` (the tie-aware exponential
mechanism of the quantiles, with a target rank m counted from the top) over bounds k in
[1, ``cap``] (``cap`` public, default :data:`DEFAULT_CAP`), on the public grid g_0 = 1 < g_1 <
... < g_J = cap of :func:`candidate_bounds` (every integer up to 16, then steps of about 9%): the
objective is flat in log k, and on every integer the many large bounds that the data cannot tell
apart (N(k) near 0, all with score about -m) would outweigh the few near the optimum. The users'
record counts capped at ``cap`` (:func:`dptree.data.histograms.records_per_user`, from every
engine) are read as x_u = min(#{j : g_j < c_u}, J) and the output y as k = g_y, so that the score
of g_y is -dist(m, [N(g_y), N(g_(y-1))]) (N(g_(-1)) = U; at y = J: -dist(m, [0, N(g_(J-1))])):
0 at the least grid bound with at most m users above it. Each user is one value: adding or
removing a user moves one value, the score's sensitivity is 1 (:mod:`dptree.interior.top_rank`),
and the choice is epsilon_k-DP under add/remove-one user with any number of records. The tree is then the plan of
:func:`~dptree.rangetree.release.plan_range_tree` at the chosen k with the rest of the budget, its
records bounded to k per user by the engines (:mod:`dptree.data.bounding`): the same privacy
statement for every k, so the release is epsilon-DP (or rho-zCDP) in all, under add/remove one
user. The chosen k is an output (``release.max_contributions``; declared noisy).

**Budget.** Laplace: ``share`` of epsilon chooses k (an exponential mechanism), the rest is the
tree's (rounded down so that the two add up to at most epsilon). Gaussian: the budget as rho (an
(epsilon, delta) budget through :func:`~dptree.privacy.budget.zcdp_rho_for`); the choice at
epsilon_k = sqrt(8 share rho) is (epsilon_k^2 / 8)-zCDP (Cesar & Rogers 2021), the tree gets the
rest of rho with the zCDP calibration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from numbers import Integral, Real
from typing import Any, Mapping, TypeVar, cast

import numpy as np

from dptree import noise as _noise
from dptree._validation import Interval, Options, check_param
from dptree.errors import DPTreeError, InvalidParameterError, ReleaseFileError
from dptree.privacy.budget import BUDGET_RANGE, Budget, zcdp_epsilon
from dptree.privacy.loss import Exponential, Gaussian, Laplace, PrivacyLoss
from dptree.privacy.statement import Neighbors
from dptree.rangetree.allocation import average_workload_variance, canonical_levels
from dptree.rangetree.calibration import check_budget_range, exact_shares
from dptree.rangetree.plan import TreePlan

__all__ = ["DEFAULT_CAP", "DEFAULT_SHARE", "PrivateContributionsPlan", "plan_private_contributions",
           "mean_squared_share", "with_private_contributions", "checked_contributions_statement"]

#: the default largest bound the choice considers (``contributions_cap``)
DEFAULT_CAP = 100
#: the default share of the budget that chooses the bound (``contributions_share``)
DEFAULT_SHARE = 0.15
#: the candidate bounds are ceil(2^(j / GRID_STEPS)), j >= 0: about GRID_STEPS per doubling
GRID_STEPS = 8
_MECHANISM = ("private max_contributions: the top m-th user's record count (Amin, Kulesza, Munoz Medina & "
              "Vassilvitskii 2019), by a tie-aware exponential mechanism over 1..cap")
#: the kind of tree plan :meth:`PrivateContributionsPlan.tree_at` builds
P = TypeVar("P", bound=TreePlan)


def candidate_bounds(cap: int) -> np.ndarray:
    """The bounds the choice considers: the distinct ceil(2^(j / :data:`GRID_STEPS`)) below ``cap``,
    and ``cap`` (every integer up to 16, then steps of about 9%): a scale-free grid, public."""
    out = {int(cap)}
    j = 0
    while True:
        k = math.ceil(2 ** (j / GRID_STEPS) - 1e-12)
        if k >= cap:
            return np.array(sorted(out), dtype=np.int64)
        out.add(k)
        j += 1


def mean_squared_share(buckets: int, workload: str) -> float:
    """F^2: the mean squared share of the records in a range of the workload ("prefix": the
    prefixes [lower, x]; otherwise all ranges) for records spread evenly over ``buckets`` buckets."""
    d = int(buckets)
    if workload == "prefix":
        return (d + 1) * (2 * d + 1) / (6 * d * d)
    return (d + 1) * (d + 2) / (6 * d * d)


@dataclass(frozen=True)
class PrivateContributionsPlan:
    """A range tree whose contribution bound is chosen privately: everything public, before any
    data (module docstring). ``budget`` is the caller's whole budget; ``share`` of it chooses the
    bound among 1..``cap``; the tree (``lower``, ``upper``, ``width``, ``branching``, ``noise``,
    ``levels`` as for :func:`~dptree.rangetree.release.plan_range_tree`) gets the rest."""

    budget: Budget
    noise: str
    lower: Any
    upper: Any
    width: Any = None
    branching: int | None = None
    levels: str = "uniform"
    share: float = DEFAULT_SHARE
    cap: int = DEFAULT_CAP
    #: the kind of tree plan :meth:`release` releases with (:class:`~dptree.rangetree.release.RangeTreePlan`)
    tree_type: Any = field(default=TreePlan, compare=False, repr=False)

    def __post_init__(self) -> None:
        check_param("contributions_share", self.share,
                    [Interval(Real, 0, 1, closed="neither", hint="e.g. contributions_share=0.1")])
        check_param("contributions_cap", self.cap,
                    [Interval(Integral, 1, 1 << 20, hint="the largest bound considered, e.g. contributions_cap=100")])
        lo, hi = BUDGET_RANGE  # the exponential mechanisms' range
        if not lo <= self.choice_epsilon <= hi:
            raise InvalidParameterError(
                f"contributions_share={self.share!r} with the budget {self.budget.describe()} leaves the choice of the "
                f"bound an epsilon of {self.choice_epsilon:.3g}, outside the supported [{lo:g}, {hi:g}]: choose "
                "another contributions_share", parameter="contributions_share")
        self.tree_at(self.cap)  # every tree parameter checked now, at the largest k (the most noise)
        self.tree_at(1)

    # ------------------------------------------------------------------ the split
    @property
    def gaussian(self) -> bool:
        return self.noise == "gaussian"

    @property
    def total_rho(self) -> float:
        """The whole budget as rho (Gaussian noise)."""
        return float(self.budget.as_rho())

    @property
    def choice_epsilon(self) -> float:
        """The exponential mechanism's epsilon: share * epsilon (Laplace), or sqrt(8 share rho),
        (share rho)-zCDP (Gaussian)."""
        if self.gaussian:
            return math.sqrt(8.0 * float(self.share) * self.total_rho)
        return float(self.share) * float(self.budget.epsilon)  # type: ignore[arg-type]

    @property
    def tree_budget(self) -> float:
        """The tree's epsilon (Laplace) or rho (Gaussian): the rest, rounded down so that the two
        steps never add up to more than the whole."""
        whole = self.total_rho if self.gaussian else float(self.budget.epsilon)  # type: ignore[arg-type]
        used = self.choice_epsilon ** 2 / 8 if self.gaussian else self.choice_epsilon
        t = whole - used
        while Fraction(t) + Fraction(used) > Fraction(whole):
            t = math.nextafter(t, 0.0)
        return t

    def tree_at(self, k: int, plan_type: type[P] = TreePlan) -> P:  # type: ignore[assignment]
        """The tree's plan (a ``plan_type``) at bound ``k`` with the tree's share of the budget."""
        budget: dict[str, Any] = {"rho": self.tree_budget} if self.gaussian else {"epsilon": self.tree_budget}
        return plan_type.build(lower=self.lower, upper=self.upper, width=self.width, branching=self.branching,
                               noise=self.noise, max_contributions=int(k), levels=self.levels, **budget)

    # ------------------------------------------------------------------ the level
    @cached_property
    def above(self) -> int:
        """m = ceil(S / F): the number of users the chosen bound leaves above it (module docstring)."""
        tree: TreePlan = self.tree_at(1)
        workload = "prefix" if canonical_levels(tree.levels) == "prefix" else "all_ranges"
        s2 = average_workload_variance(tree.layout, tree.level_variance, workload)
        return max(1, math.ceil(math.sqrt(s2 / mean_squared_share(tree.domain.size, workload))))

    def choice_values(self, per_user: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The values of the choice's mechanism: (x, users with each x), x_u = min(#{g < c_u}, J) for
        the candidate bounds g_0 < ... < g_J (:func:`candidate_bounds`), from ``per_user`` (users per
        capped record count, index 0..cap: :func:`~dptree.data.histograms.records_per_user`). Not
        private: only :meth:`choose` reads it."""
        hist = np.asarray(per_user, dtype=np.int64)
        if hist.shape != (self.cap + 1,):
            raise InvalidParameterError(f"need the users per record count 0..{self.cap} (internal error)")
        grid = candidate_bounds(self.cap)
        x = np.minimum(np.searchsorted(grid, np.arange(1, self.cap + 1), side="left"), grid.size - 1)
        users = np.bincount(x, weights=hist[1:].astype(np.float64), minlength=grid.size)
        users = np.rint(users).astype(np.int64)  # sums of integer counts below 2^53: exact
        found = np.flatnonzero(users)
        return found.astype(np.int64), users[found]

    def choose(self, per_user: np.ndarray, src: _noise.RandomSource | _noise.RngLike) -> int:
        """The bound k among :func:`candidate_bounds` from ``per_user`` (:meth:`choice_values`),
        drawn from ``src`` (a random source, or what :func:`dptree.noise.make_source` takes): the
        private step, :func:`~dptree.interior.top_rank.top_rank_mechanism` with m = :attr:`above`
        over the grid's indices."""
        from dptree.interior.top_rank import top_rank_mechanism

        x, users = self.choice_values(per_user)
        grid = candidate_bounds(self.cap)
        y = top_rank_mechanism(x, counts=users, above=self.above, lower=0, upper=grid.size - 1,
                               epsilon=self.choice_epsilon, rng=src)
        return int(grid[y])

    # ------------------------------------------------------------------ what is charged
    def privacy_loss(self) -> PrivacyLoss:
        """Both steps, before any data: the exponential mechanism at :attr:`choice_epsilon`, then the
        tree's levels at bound ``cap`` with the unrounded noise of the tree's budget share per level
        (Laplace cap / (epsilon_tree w_j) with L1 sensitivity cap; Gaussian cap^2 / (2 rho_tree w_j)
        with L2 sensitivity cap): at every bound k <= cap each level's calibrated noise is that of
        k / (epsilon_tree w_j) (or k^2 / (2 rho_tree w_j)) rounded up, so it spends at most what is
        listed, whichever k is chosen. Under add/remove one user (at most ``cap`` records reach
        either step)."""
        tree: TreePlan = self.tree_at(self.cap)
        shares = exact_shares(tree.weights)
        budget, cap = Fraction(self.tree_budget), Fraction(self.cap)
        steps: list[Any] = [Exponential(self.choice_epsilon, "choice of max_contributions (top-rank exponential "
                                                             "mechanism)")]
        for j, p in enumerate(tree.noise_parameters):
            if p is None:
                continue
            if self.gaussian:
                steps.append(Gaussian(cap * cap / (2 * budget * shares[j]), cap, f"level {j}"))
            else:
                steps.append(Laplace(cap / (budget * shares[j]), cap, f"level {j}"))
        return PrivacyLoss(Neighbors("add_remove", self.cap), tuple(steps))

    def _spent(self, tree_spent: Mapping[str, Any]) -> dict[str, Any]:
        """The budget spent by the choice and a tree that spent ``tree_spent``."""
        if not self.gaussian:
            return {"epsilon": float(Fraction(self.choice_epsilon) + Fraction(tree_spent["epsilon"])), "delta": 0.0}
        rho = float(Fraction(self.choice_epsilon) ** 2 / 8 + Fraction(tree_spent["rho"]))
        out: dict[str, Any] = {"rho": rho}
        if self.budget.kind == "approx":
            out.update(epsilon=zcdp_epsilon(rho, float(self.budget.delta)), delta=float(self.budget.delta))
        return out

    @property
    def requested(self) -> dict[str, Any]:
        b = self.budget
        return {"epsilon": b.epsilon, "delta": b.delta if b.kind == "approx" else 0.0, "rho": b.rho}

    @property
    def statement(self) -> dict[str, Any]:
        """The budget charged before the data is read (a ledger's ``charge_for``; with
        :meth:`privacy_loss`)."""
        return {"budget_requested": self.requested, "budget_spent": self._whole_spent(),
                "contributions": self.describe(), "private": True}

    def _whole_spent(self) -> dict[str, Any]:
        """The whole budget, in the statement's terms (what the two steps spend at most)."""
        if not self.gaussian:
            return {"epsilon": float(self.budget.epsilon), "delta": 0.0}  # type: ignore[arg-type]
        out: dict[str, Any] = {"rho": self.total_rho}
        if self.budget.kind == "approx":
            out.update(epsilon=float(self.budget.epsilon), delta=float(self.budget.delta))  # type: ignore[arg-type]
        return out

    def describe(self) -> dict[str, Any]:
        """The public description of the choice (what the file records, without the chosen k)."""
        return {"method": "private", "share": float(self.share), "cap": int(self.cap), "above": self.above,
                "epsilon": self.choice_epsilon, "total": self.requested, "objective": _OBJECTIVE,
                "candidates": f"ceil(2^(j/{GRID_STEPS})) below cap, and cap"}

    def record(self, k: int) -> dict[str, Any]:
        """The public record of a choice that gave ``k`` (a DP output)."""
        return {**self.describe(), "chosen": int(k)}

    # ------------------------------------------------------------------ the release
    def found_tree(self, data: Any, src: _noise.RandomSource, plan_type: type[P], *, column: str | None,
                   user_id: Any, on_invalid: str = "error", fmt: str | None = None,
                   progress: Any = False) -> tuple[P, np.ndarray, dict[str, Any]]:
        """Read the records per user of ``data``, choose k (drawing from ``src``), plan the tree at
        k and read its leaf histogram bounded to k per user (the same ``src``): (the tree's plan,
        a ``plan_type``; its exact histogram, which only the plan's noise may release; the
        release's statement)."""
        from dptree.data.histograms import leaf_histogram, records_per_user

        policy = cast(Any, on_invalid)
        per_user = records_per_user(data, self.tree_at(1), user_id=user_id, cap=self.cap, column=column,
                                    on_invalid=policy, fmt=fmt, progress=progress)
        k = self.choose(per_user, src)
        tree = self.tree_at(k, plan_type)
        hist = leaf_histogram(data, tree, column=column, user_id=user_id, on_invalid=policy, rng=src, fmt=fmt,
                              progress=progress)
        return tree, hist, with_private_contributions(tree.statement, self.record(k), self)


    def release(self, data: Any, rng: _noise.RngLike = None, *, user_id: Any, column: str | None = None,
                on_invalid: str = "error", source: Any = None, fmt: str | None = None, progress: Any = False) -> Any:
        """The release (a range tree at the chosen bound, ``release.max_contributions``): read the
        records per user of ``data``, choose the bound, read the histogram bounded to it and add the
        tree's noise (:meth:`found_tree`), one random source for all; ``source``: the input path
        the release's metadata names. Needs a plan whose ``tree_type`` releases
        (:func:`dptree.rangetree.api.plan_private_contributions`)."""
        from dptree.io.release_file import utc_now

        if not hasattr(self.tree_type, "release"):
            raise InvalidParameterError("this plan only plans: make it with dptree.rangetree.api."
                                        "plan_private_contributions to release with it")
        src = _noise.make_source(rng)
        created = utc_now()  # before the data is read: no timing of the reading
        tree, hist, statement = self.found_tree(data, src, self.tree_type, column=column, user_id=user_id,
                                                on_invalid=on_invalid, fmt=fmt, progress=progress)
        return tree.release(hist, src, column=column, source=source, created=created, statement=statement)


_OBJECTIVE = ("the least k with F N(k) <= S: N(k) users above k, S the workload's RMS error at k = 1, F its RMS share "
              "of records spread evenly (bound F D(k) + S k on the RMSE, D(k) the records dropped)")


def with_private_contributions(tree_statement: Mapping[str, Any], record: Mapping[str, Any],
                               plan: PrivateContributionsPlan, rest: str = "tree") -> dict[str, Any]:
    """The statement of a release at a private bound: the tree's statement (or what ran with the
    rest of the budget, named ``rest`` in the split), its mechanism, budget and split extended by
    the choice's (``record``: :meth:`PrivateContributionsPlan.record`)."""
    st = dict(tree_statement)
    st["mechanism"] = f"{tree_statement['mechanism']}, at a {_MECHANISM}"
    st["neighbors"] = "add_remove"
    st["budget_requested"] = plan.requested
    st["budget_spent"] = plan._spent(tree_statement["budget_spent"])
    if plan.gaussian:
        st["guarantee"] = "rho-zCDP" + (", implies (epsilon, delta)-DP" if plan.budget.kind == "approx" else "")
    key = "rho" if plan.gaussian else "epsilon"
    choice = plan.choice_epsilon ** 2 / 8 if plan.gaussian else plan.choice_epsilon
    st["budget_split"] = {**dict(tree_statement.get("budget_split") or {}),
                          "contributions": {key: choice}, rest: {key: plan.tree_budget}}
    st["contributions"] = dict(record)
    return st


def checked_contributions_statement(record: Any, tree: TreePlan) -> dict[str, Any]:
    """The statement a release file at a private bound must carry, re-derived from its
    ``parameters.contributions`` (``record``) and its tree plan; refuses a record whose split,
    choice or tree do not match, or that differs in any field from the record those give (load:
    the checksum is not a signature)."""
    if not isinstance(record, Mapping) or record.get("method") != "private":
        raise ReleaseFileError("release file: parameters.contributions must describe a private choice of "
                               "max_contributions")
    try:
        total = record["total"]
        budget = (Budget.zcdp(total["rho"]) if total.get("rho") is not None else
                  Budget.approx(total["epsilon"], total["delta"]) if total.get("delta") else
                  Budget.pure(total["epsilon"]))
        dom = tree.domain
        lower, upper, width = (dom.lower, dom.upper, dom.width) if dom.kind != "datetime" else (
            np.datetime64(int(dom.lower), "ns"), np.datetime64(int(dom.upper), "ns"),
            np.timedelta64(int(dom.step), "ns"))
        plan = PrivateContributionsPlan(budget=budget, noise=tree.noise, lower=lower, upper=upper, width=width,
                                        branching=tree.layout.branching, levels=tree.levels,
                                        share=float(record["share"]), cap=int(record["cap"]))
        k = int(record["chosen"])
    except (KeyError, TypeError, ValueError, OverflowError, AttributeError, DPTreeError) as exc:
        raise ReleaseFileError(f"release file: parameters.contributions is incomplete or invalid: {exc}") from None
    derived = plan.record(k)
    again: TreePlan = plan.tree_at(k)
    if (not 1 <= k <= plan.cap or tree.max_contributions != k or again.noise_parameters != tree.noise_parameters
            or again.domain != tree.domain or dict(record) != derived):
        raise ReleaseFileError("release file: the tree or the budget split does not match the private choice of "
                               "max_contributions it records (tampered?)")
    return with_private_contributions(tree.statement, derived, plan)


def plan_private_contributions(*, lower: Any, upper: Any, epsilon: float | None, delta: float = 0.0,
                               rho: float | None = None, width: Any = None, branching: int | None = None,
                               noise: str = "laplace", neighbors: str = "add_remove", levels: str = "uniform",
                               user_id: Any = None, by: Any = None, bounds: str = "public",
                               share: float = DEFAULT_SHARE, cap: int = DEFAULT_CAP,
                               tree_type: Any = TreePlan) -> PrivateContributionsPlan:
    """Every public check of a release at a private bound (``range_tree(max_contributions="private")``,
    the CLI's ``release --max-contributions private``), before any data is read or any budget is
    charged. ``tree_type``: the tree plan's class (:func:`dptree.rangetree.api.plan_private_contributions`
    passes the one that releases)."""
    from dptree.rangetree.calibration import resolve_budget

    if user_id is None:
        raise InvalidParameterError("max_contributions='private' chooses how many records to keep per user: pass "
                                    "user_id= (the column, or array, of each record's user)", parameter="user_id")
    check_param("neighbors", neighbors, [Options(("add_remove",), hint="a private bound is chosen per user, "
                                                                      "under add/remove one user")])
    if by is not None:
        raise InvalidParameterError("max_contributions='private' releases one tree: for a release by group declare "
                                    "max_contributions=k", parameter="by")
    if bounds != "public":
        raise InvalidParameterError("max_contributions='private' needs public bounds: declare lower= and upper=",
                                    parameter="bounds")
    check_param("noise", noise, [Options(("laplace", "gaussian"))])
    check_budget_range(epsilon, rho)
    budget = resolve_budget(noise, epsilon, delta, rho)
    return PrivateContributionsPlan(budget=budget, noise=noise, lower=lower, upper=upper, width=width,
                                    branching=branching, levels=levels, share=share, cap=cap, tree_type=tree_type)
