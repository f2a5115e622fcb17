"""Private bounds for range trees: the search's exact privacy by brute force,
the API's checks, the statement, the release file and the ledger."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import json
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from audit_registry.range_trees import above_threshold_law, bounds_search_laws

import dptree
from dptree import InvalidParameterError, ReleaseFileError
from dptree.data.dates import NS_RANGE
from dptree.io.release_file import canonical_checksum
from dptree.privacy.ledger import Ledger
from dptree.rangetree.api import release_over_private_bounds
from dptree.rangetree.bounds import BOUNDS_MAX_LEAVES, BoundsSearch, PrivateBoundsPlan, candidates, private_domain
from dptree.rangetree.bounds_search import INT_END

# --------------------------------------------------------------------------- exact law of the search
# above_threshold_law (tests/audit_registry/range_trees.py): the exact law of one end, in logs


def worst_log_ratio(search: BoundsSearch, pairs: list[tuple[list[int], list[int]]],
                    scales: tuple[Fraction, Fraction] | None = None) -> float:
    """The largest |log P0(o) - log P1(o)| over the outputs o (both ends) of all the pairs."""
    worst = 0.0
    cache: dict[tuple[int, ...], list[np.ndarray]] = {}

    def laws(d: list[int]) -> list[np.ndarray]:
        key = tuple(sorted(d))
        if key not in cache:
            cache[key] = bounds_search_laws(search, list(key), scales=scales)
        return cache[key]

    for d0, d1 in pairs:
        total = 0.0
        for l0, l1 in zip(laws(d0), laws(d1)):
            keep = (l0 > -80) | (l1 > -80)  # the truncation of rho is far below these
            total += float(np.max(np.abs(l0[keep] - l1[keep])))
        worst = max(worst, total)
    return worst


VALUES = range(-3, 4)


def _datasets(max_size: int) -> list[list[int]]:
    return [list(c) for n in range(max_size + 1) for c in itertools.combinations_with_replacement(VALUES, n)]


def add_remove_pairs(max_size: int = 3, k: int = 1) -> list[tuple[list[int], list[int]]]:
    return [(d, d + list(extra)) for d in _datasets(max_size)
            for extra in itertools.combinations_with_replacement(VALUES, k)]


def replace_pairs(max_size: int = 3, k: int = 1) -> list[tuple[list[int], list[int]]]:
    out = []
    for d in _datasets(max_size):
        for old in set(itertools.combinations(sorted(d), k)) if len(d) >= k else []:
            rest = list(d)
            for v in old:
                rest.remove(v)
            out += [(d, rest + list(new)) for new in itertools.combinations_with_replacement(VALUES, k)]
    return out


def test_end_law_matches_the_library_sampler() -> None:
    """The law used below is the law the library draws from (chi-square on 20 000 runs)."""
    search = BoundsSearch(epsilon=8.0)
    vals, cnt = np.array([-2, 0, 1, 3]), np.array([1, 2, 1, 1])
    _, ans = search.answers("integer", vals, cnt, "high")
    law = np.exp(above_threshold_law(ans, -search.rank, *search.scales))
    runs = 20_000
    got = search.halt(ans, dptree.noise.make_source(11), runs=runs)
    obs = np.bincount(np.where(got < 0, ans.size, got), minlength=ans.size + 1)
    assert law.sum() == pytest.approx(1.0, abs=1e-9)
    big = law * runs > 5
    chi2 = float(np.sum((obs[big] - runs * law[big]) ** 2 / (runs * law[big])))
    assert chi2 < 40, (chi2, obs[:8], (runs * law[:8]).round())


@pytest.mark.slow
@pytest.mark.parametrize("eps", [2.0, 8.0])
@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_search_is_exactly_eps_dp_by_brute_force(eps: float, relation: str) -> None:
    """Every pair of neighbouring datasets of <= 3 records over {-3..3}: the worst log-ratio of the
    exact output law (both ends) stays within the bounds budget and is nearly tight (add/remove:
    one record reaches one end, which has the whole budget; replace: both ends, half each); a
    planted bug (half the noise) breaks it."""
    search = BoundsSearch(epsilon=eps, neighbors=relation)  # type: ignore[arg-type]
    pairs = add_remove_pairs() if relation == "add_remove" else replace_pairs()
    worst = worst_log_ratio(search, pairs)
    assert worst <= eps + 1e-9
    assert worst > 0.8 * eps  # the check sees the loss
    s_rho, s_nu = search.scales
    planted = worst_log_ratio(search, pairs, scales=(s_rho / 2, s_nu / 2))
    assert planted > eps * 1.2


@dataclasses.dataclass(frozen=True)
class _ParallelUnderReplace(BoundsSearch):
    """A bug: the whole budget on each end under replace (a replaced record can cross 0)."""

    @property
    def parallel(self) -> bool:
        return True


@pytest.mark.slow
def test_parallel_composition_under_replace_would_break_the_claim() -> None:
    eps = 8.0
    bug = _ParallelUnderReplace(epsilon=eps, neighbors="replace")
    assert bug.epsilon_per_end == eps
    assert worst_log_ratio(bug, replace_pairs()) > eps * 1.2


def test_k_records_under_replace_use_the_general_scale() -> None:
    """Under replace with k = 2 the answers can move both ways (one record up, one down), so the
    search uses the general query scale 4k/eps: within budget by brute force, broken by a bug."""
    eps = 8.0
    search = BoundsSearch(epsilon=eps, neighbors="replace", max_contributions=2)
    assert not search.monotone
    assert search.scales == (Fraction(1), Fraction(2))  # 2k / (eps / 2) and 4k / (eps / 2)
    pairs = replace_pairs(max_size=3, k=2)
    assert worst_log_ratio(search, pairs) <= eps + 1e-9
    s_rho, s_nu = search.scales
    assert worst_log_ratio(search, pairs, scales=(s_rho / 4, s_nu / 4)) > eps * 1.2


@pytest.mark.slow
def test_add_remove_with_k_records_by_brute_force() -> None:
    """A person's k = 2 records may reach both ends, but each end's search is calibrated for k and
    loses (k_side / k) of its budget: the whole budget per end still holds (parallel composition)."""
    search = BoundsSearch(epsilon=4.0, max_contributions=2)
    assert search.monotone and search.parallel and search.epsilon_per_end == 4.0
    pairs = add_remove_pairs(max_size=2, k=2)
    worst = worst_log_ratio(search, pairs)
    assert 0.8 * 4.0 < worst <= 4.0 + 1e-9
    s_rho, s_nu = search.scales  # a bug: half the noise
    assert worst_log_ratio(search, pairs, scales=(s_rho / 2, s_nu / 2)) > 4.0 * 1.2


# --------------------------------------------------------------------------- the search's pieces


@pytest.mark.slow
def test_search_from_an_origin_is_exactly_eps_dp_by_brute_force() -> None:
    """The same brute force with the search starting at 2 (inside the values): the ends still read
    disjoint records (below and above the origin), so the whole budget per end holds under
    add/remove; a planted bug (half the noise) breaks it."""
    eps = 4.0
    search = BoundsSearch(epsilon=eps, origin=2)
    assert candidates("integer", "low", 2)[0] == 2 and candidates("integer", "high", 2)[0] == 3
    worst = worst_log_ratio(search, add_remove_pairs())
    assert 0.8 * eps < worst <= eps + 1e-9
    s_rho, s_nu = search.scales
    assert worst_log_ratio(search, add_remove_pairs(), scales=(s_rho / 2, s_nu / 2)) > eps * 1.2


def test_candidates_from_an_origin_are_the_shifted_candidates_clipped() -> None:
    for o in (10**9, -(2**61), 2**62):
        for side in ("low", "high"):
            steps = [2**j for j in range(63)] if side == "high" else [0] + [-(2**j) for j in range(63)]
            want = np.clip(np.array(steps, dtype=object) + o, -INT_END, INT_END)  # exact integers
            assert candidates("integer", side, o).tolist() == want.tolist()
    t = int(np.datetime64("2262-01-01", "ns").astype(np.int64))
    d = candidates("datetime", "high", t)
    assert np.all(np.diff(d) >= 0) and d[-1] == candidates("datetime", "high")[-1]  # the last boundable date
    for o in (0.0, 1e300, -1.7e308):
        hi, lo = candidates("float", "high", o), candidates("float", "low", o)
        assert np.all(np.isfinite(hi)) and np.all(np.isfinite(lo)) and lo[0] == o
        assert np.all(np.diff(hi) >= 0) and np.all(np.diff(lo) <= 0)


def test_an_origin_near_the_data_gives_a_narrow_range(tmp_path: Path) -> None:
    x = np.random.default_rng(2).integers(10**9, 10**9 + 50_000, 5000)
    far = dptree.range_tree(x, bounds="private", epsilon=1.0, rng=4)
    near = dptree.range_tree(x, bounds="private", bounds_origin=10**9, epsilon=1.0, rng=4)
    assert far.domain.lower <= 0 and far.domain.width >= 1024  # doubling from 0 reaches 2^30
    assert 10**9 - 2**10 <= near.domain.lower <= 10**9 and near.domain.width == 1 and near.domain.upper < 10**9 + 2**17
    assert near.privacy["bounds"]["origin"] == 10**9 and "origin" not in far.privacy["bounds"]
    truth = np.quantile(x, 0.5)
    assert abs(near.quantile(0.5) - truth) < abs(far.quantile(0.5) - truth) + 1024
    ts = np.datetime64("2024-03-01", "ns") + np.random.default_rng(3).integers(0, 86_400 * 10**9, 5000).astype(
        "timedelta64[ns]")
    day = dptree.range_tree(ts, bounds="private", bounds_origin=np.datetime64("2024-01-01"), width=dt.timedelta(
        seconds=1), epsilon=1.0, rng=4)
    assert day.domain.kind == "datetime" and day.domain.width <= 64 * 10**9  # seconds, not 2^41 ns
    assert day.privacy["bounds"]["origin"] == int(np.datetime64("2024-01-01", "ns").astype(np.int64))
    # ISO text and numpy durations, as lower=, upper= and width= take them with public bounds
    text = dptree.range_tree(ts, bounds="private", bounds_origin="2024-01-01", width=np.timedelta64(1, "s"),
                             epsilon=1.0, rng=4)
    assert text.domain == day.domain and text.privacy["bounds"] == day.privacy["bounds"]
    text.save(tmp_path / "t.json", allow_nonprivate=True)  # the width is stored in ns, as a timedelta's is
    assert dptree.load(tmp_path / "t.json").domain == day.domain


@pytest.mark.parametrize(("data", "origin", "match"), [
    (np.array([1, 2, 3]), np.datetime64("2024-01-01"), "an integer column"),
    (np.array([1, 2, 3]), 2**63, "an integer column"),
    (np.array([1.5, 2.0]), np.datetime64("2024-01-01"), "a float column"),
    (np.array(["2024-01-01"], dtype="datetime64[ns]"), 5, "a datetime column"),
    ([1, 2, 3], "soon", "bounds_origin"),
    (np.array(["2024-01-01"], dtype="datetime64[ns]"), "soon", "bounds_origin='soon' is not .* a date"),
    (np.array([1, 2, 3]), "2024-01-01", "an integer column"),
])
def test_an_origin_that_does_not_fit_the_column_is_refused(data: Any, origin: Any, match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        dptree.range_tree(data, bounds="private", bounds_origin=origin, epsilon=1.0, rng=1)


def test_an_origin_with_public_bounds_is_refused() -> None:
    with pytest.raises(InvalidParameterError, match="bounds='private'"):
        dptree.range_tree([1, 2], lower=0, upper=9, bounds_origin=3, epsilon=1.0, rng=1)


def test_candidates_grow_outward_and_cover_the_clamped_values() -> None:
    hi, lo = candidates("integer", "high"), candidates("integer", "low")
    assert hi[0] == 1 and hi[-1] == 2**62 - 1 and np.all(np.diff(hi) > 0)
    assert lo[0] == 0 and lo[-1] == -(2**62 - 1) and np.all(np.diff(lo) < 0)
    f = candidates("float", "high")
    assert f[0] == 2.0**-126 and np.isfinite(f[-1] - candidates("float", "low")[-1])
    d = candidates("datetime", "high")
    assert np.all(np.diff(d) > 0)


def test_float_candidates_thin_out_below_one_and_clamp_less_around_the_origin() -> None:
    """Every candidate inside the bulk of the data is one more chance for a noisy count to halt
    early. 300 normal values around 0 at epsilon = 1 (0.1 for the search): with every power
    2^-126..2^-1 as a step the searches clamped 113 records on average (28% more than 4t = 160);
    the halving exponent (8 steps below 1) clamps fewer on the same data and noise."""
    from dptree.noise import make_source
    from dptree.rangetree import bounds_search

    hi = candidates("float", "high")
    assert np.count_nonzero(hi < 1.0) == 8 and hi[8] == 1.0 and np.all(np.diff(hi) > 0)

    def every_power(kind: str, side: str, origin: float = 0.0) -> np.ndarray:
        steps = np.ldexp(1.0, np.arange(-126, 1023))
        with np.errstate(over="ignore"):
            big = np.finfo(np.float64).max
            return np.minimum(steps, big) if side == "high" else np.concatenate([[0.0], np.maximum(-steps, -big)])

    search = BoundsSearch(epsilon=0.1)
    clamped: dict[str, list[int]] = {"now": [], "before": []}
    for trial in range(60):
        x = np.random.default_rng(trial).normal(size=300)
        v, c = np.unique(x, return_counts=True)
        for name in clamped:
            if name == "before":
                saved, bounds_search.candidates = bounds_search.candidates, every_power
            try:
                lo, hi_ = search.find("float", v, c, make_source(trial))
            finally:
                if name == "before":
                    bounds_search.candidates = saved
            clamped[name].append(int(np.sum((x < lo) | (x > hi_))))
    now, before = np.mean(clamped["now"]), np.mean(clamped["before"])
    assert now < 80 < 95 < before, (now, before)


def test_scales_and_rank_follow_the_budget() -> None:
    s = BoundsSearch(epsilon=0.1)
    assert s.parallel and s.epsilon_per_end == 0.1
    assert s.scales == (Fraction(20), Fraction(20))  # 2k / eps per end, monotone
    assert s.rank == 40
    r1 = BoundsSearch(epsilon=0.1, neighbors="replace")
    assert not r1.parallel and r1.monotone and r1.scales == (Fraction(40), Fraction(40))
    r2 = BoundsSearch(epsilon=0.1, neighbors="replace", max_contributions=2)
    assert r2.scales == (Fraction(80), Fraction(160))  # 2k/(eps/2), 4k/(eps/2)


def test_width_rule_is_the_smallest_power_of_two_that_fits() -> None:
    assert private_domain("integer", -8, 1024).width == 1
    dom = private_domain("integer", 0, 2**30)
    assert dom.width == 2**11 and dom.size == 2**19 + 1  # 2^10 would give 2^20 + 1 buckets
    assert private_domain("integer", 0, 2**30, width=3).width == 3 * 2**9
    f = private_domain("float", 0.0, 128.0)
    assert f.width == 2.0**-13 and f.size <= BOUNDS_MAX_LEAVES and f.size > BOUNDS_MAX_LEAVES // 2
    assert private_domain("float", 0.0, 4.0, width=8.0).upper == 16.0  # raised to two buckets
    assert private_domain("datetime", 0, 2**50).width == 86_400 * 10**9


@pytest.mark.parametrize("values", [
    np.array([-7, 0, 3, 3, 10**15, -(2**63), 2**62 + 5], dtype=np.int64),
    np.array([0, 5, 2**64 - 1], dtype=np.uint64),
    np.array([-1e300, -2.5, 0.0, 0.1, 3.9, 1e9]),
    np.array(["1500-01-01", "2020-05-05", "2021-01-01", "9999-12-31"], dtype="datetime64[D]"),
])
def test_leaf_counts_from_value_counts_equal_leaf_histogram(values: np.ndarray) -> None:
    """One read: the histogram built from the distinct values is the one leaf_histogram gives."""
    from dptree.data.histograms import leaf_histogram, value_counts
    from dptree.rangetree.bounds import leaf_counts

    kind = {"i": "integer", "u": "integer", "f": "float", "M": "datetime"}[values.dtype.kind]
    plan = PrivateBoundsPlan(epsilon=1.0, share=0.1)
    lo, hi = {"integer": (-4, 8), "float": (-2.0, 4.0), "datetime": (0, 2**60)}[kind]
    tree = plan.tree_plan(private_domain(kind, lo, hi))  # type: ignore[arg-type]
    vals, cnt = value_counts(values)
    assert np.array_equal(leaf_counts(tree, vals, cnt), leaf_histogram(values, tree))


# --------------------------------------------------------------------------- the API


def test_release_finds_a_range_holding_most_of_the_data() -> None:
    x = np.random.default_rng(0).integers(1000, 5000, 20_000)
    rel = dptree.range_tree(x, bounds="private", epsilon=1.0, rng=3)
    lo, hi = rel.privacy["bounds"]["found"]
    assert lo == rel.domain.lower and lo <= 1000 and 5000 <= hi <= 16384
    assert rel.total() == pytest.approx(20_000, abs=200)
    assert abs(rel.quantile(0.5) - np.median(x)) < 100
    assert rel.privacy["private"] is False


def test_outliers_beyond_the_found_range_are_clamped_not_dropped() -> None:
    x = np.concatenate([np.random.default_rng(1).integers(0, 100, 10_000), [10**15] * 5])
    rel = dptree.range_tree(x, bounds="private", epsilon=1.0, rng=4)
    assert rel.domain.upper < 10**6  # 5 records (< the rank) do not stretch the range
    assert rel.total() == pytest.approx(10_005, abs=150)
    assert rel.count(rel.domain.upper, rel.domain.upper) == pytest.approx(5, abs=150)


@pytest.mark.parametrize("data", [np.array([], dtype=np.int64), np.array([7]), np.arange(5), np.array([], dtype=np.float64)])
def test_small_and_empty_data_release_without_error(data: Any) -> None:
    """No error and the same kind of output whatever the (private) number of records."""
    rel = dptree.range_tree(data, bounds="private", epsilon=1.0, rng=2)
    assert rel.domain.size >= 2 and rel.privacy["bounds"]["found"][0] == rel.domain.lower


def test_a_width_that_does_not_fit_the_column_is_refused_before_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    from dptree.rangetree import bounds

    monkeypatch.setattr(bounds.BoundsSearch, "find", lambda *a, **k: pytest.fail("the search ran"))
    days = np.array(["2024-01-01", "2024-02-01"], dtype="datetime64[D]")
    floats, ints = np.array([1.5, 2.5]), np.array([1, 2])
    for values, width in ((days, dt.timedelta(0)), (days, 3), (floats, "1d"), (ints, 0.5),
                          (ints, np.timedelta64(1, "D")), (floats, np.timedelta64(1, "D"))):
        with pytest.raises(InvalidParameterError, match="width"):
            dptree.range_tree(values, bounds="private", epsilon=1.0, width=width)


def test_floats_and_dates() -> None:
    x = np.random.default_rng(2).lognormal(0, 1, 5000)
    rel = dptree.range_tree(x, bounds="private", epsilon=1.0, rng=1)
    assert rel.domain.kind == "float" and rel.domain.lower == 0.0 and rel.domain.upper >= 8
    assert abs(rel.cdf(1.0, normalize=True) - 0.5) < 0.03
    days = np.datetime64("2024-01-01") + np.random.default_rng(3).integers(0, 365, 5000).astype("timedelta64[D]")
    rel = dptree.range_tree(days, bounds="private", epsilon=1.0, width=dt.timedelta(days=7), rng=1)
    assert rel.domain.kind == "datetime" and rel.domain.width >= 7 * 86_400 * 10**9
    assert rel.total() == pytest.approx(5000, abs=150)


def test_replace_neighbors_keep_the_public_total() -> None:
    rel = dptree.range_tree(np.arange(300), bounds="private", epsilon=1.0, neighbors="replace", rng=1)
    assert rel.privacy["neighbors"] == "replace" and rel.total() == pytest.approx(300, abs=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"lower": 0}, "leave them out"),
        ({"lower": 0, "upper": 10}, "leave them out"),
        ({"upper": 10}, "leave them out"),
        ({"bounds_share": 0.0}, "bounds_share"),
        ({"bounds_share": 1.0}, "bounds_share"),
        ({"bounds_share": 1.5}, "bounds_share"),
        ({"bounds_share": "half"}, "bounds_share"),
        ({"bounds": "guess"}, "bounds"),
        ({"noise": "gaussian", "delta": 1e-6}, "laplace"),
        ({"delta": 1e-6}, "laplace"),
        ({"epsilon": None}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"by": [0, 1, 1], "groups": [0, 1]}, "by="),
        ({"user_id": [1, 1, 2]}, "user_id"),
        ({"width": 0.5}, "width"),
        ({"neighbors": "replace", "on_invalid": "drop"}, "replace"),
        ({"levels": "nonsense"}, "levels"),
    ],
)
def test_bad_parameters_raise_before_the_data_is_used(kwargs: dict[str, Any], match: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Typed errors; none of them reaches the search (it would spend the budget)."""
    from dptree.rangetree import bounds

    called = []
    monkeypatch.setattr(bounds.BoundsSearch, "find", lambda *a, **k: called.append(1))
    args = {"bounds": "private", "epsilon": 1.0, **kwargs}
    with pytest.raises(dptree.DPTreeError, match=match):
        dptree.range_tree(np.array([1, 2, 3]), **args)
    assert not called


def test_declared_bounds_still_need_both_ends() -> None:
    with pytest.raises(dptree.DomainError, match="bounds='private'"):
        dptree.range_tree([1, 2], epsilon=1.0)


# --------------------------------------------------------------------------- statement, file, ledger


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    x = np.random.default_rng(5).integers(-300, 3000, 2000)
    rel = dptree.range_tree(x, bounds="private", bounds_share=0.25, epsilon=2.0, rng=8)
    p = tmp_path_factory.mktemp("pb") / "rel.json"
    rel.save(p, allow_nonprivate=True)
    return rel, p


def test_statement_records_the_split_and_the_bounds(saved: tuple[Any, Path]) -> None:
    rel, _ = saved
    st = rel.privacy
    assert st["budget_requested"]["epsilon"] == 2.0
    assert 1.99 < st["budget_spent"]["epsilon"] <= 2.0
    assert st["budget_split"]["bounds"] == 0.5 and st["budget_split"]["tree"] == 1.5
    b = st["bounds"]
    assert b["method"] == "private" and b["epsilon"] == 0.5 and b["share"] == 0.25 and b["epsilon_per_end"] == 0.5
    assert b["found"] == [rel.domain.lower, b["found"][1]] and b["found"][1] <= rel.domain.upper
    assert "Durfee" in st["mechanism"] and rel.plan.budget.epsilon == 1.5


def test_release_file_round_trip(saved: tuple[Any, Path]) -> None:
    rel, p = saved
    back = dptree.load(p)
    assert back.privacy == rel.privacy
    assert np.array_equal(back.leaf_estimates, rel.leaf_estimates)
    assert json.loads(p.read_text())["parameters"]["bounds"]["found"] == rel.privacy["bounds"]["found"]


def _tamper(p: Path, tmp: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    d = json.loads(p.read_text())
    edit(d)
    d["checksum"] = canonical_checksum(d)
    out = tmp / "t.json"
    out.write_text(json.dumps(d))
    return out


@pytest.mark.parametrize("edit", [
    lambda d: d["parameters"]["bounds"].__setitem__("share", 0.01),  # claims a cheaper search
    lambda d: d["parameters"]["bounds"].__setitem__("total_epsilon", 1.6),
    lambda d: d["parameters"]["bounds"].__setitem__("found", [0, 4096]),
    lambda d: d["parameters"]["bounds"].__setitem__("found", "everything"),
    lambda d: d["parameters"]["bounds"].__setitem__("method", "public"),
    lambda d: d["parameters"].pop("bounds"),
    lambda d: d["privacy"]["bounds"].__setitem__("rank", 1),
    lambda d: d["privacy"].pop("bounds"),
])
def test_tampered_private_bounds_files_are_refused(saved: tuple[Any, Path], tmp_path: Path,
                                                   edit: Callable[[dict[str, Any]], None]) -> None:
    with pytest.raises(ReleaseFileError):
        dptree.load(_tamper(saved[1], tmp_path, edit))


def test_a_file_with_an_origin_round_trips_and_a_changed_origin_is_refused(tmp_path: Path) -> None:
    x = np.random.default_rng(6).integers(5000, 9000, 1000)
    rel = dptree.range_tree(x, bounds="private", bounds_origin=6000, epsilon=1.0, rng=2)
    p = tmp_path / "o.json"
    rel.save(p, allow_nonprivate=True)
    assert dptree.load(p).privacy == rel.privacy and rel.privacy["bounds"]["origin"] == 6000
    for edit in (lambda d: d["parameters"]["bounds"].__setitem__("origin", 0),
                 lambda d: d["parameters"]["bounds"].pop("origin")):
        with pytest.raises(ReleaseFileError):
            dptree.load(_tamper(p, tmp_path, edit))


def test_ledger_charges_the_whole_epsilon_once(tmp_path: Path) -> None:
    plan = PrivateBoundsPlan(epsilon=1.0, share=0.1)
    assert plan.tree_epsilon + plan.bounds_epsilon <= 1.0
    with Ledger(tmp_path / "b.ledger", total_epsilon=3.0) as led:
        with led.charge_for(plan, label="pb") as charge:
            rel = release_over_private_bounds(plan, np.array([1, 2, 3, 40]), rng=1)
        assert charge.epsilon == 1.0 and led.spent().epsilon == pytest.approx(1.0) and led.spent().charges == 1
    assert rel.privacy["budget_requested"]["epsilon"] == 1.0


def test_a_seeded_release_is_not_private_and_an_unseeded_one_is() -> None:
    assert dptree.range_tree(np.array([1, 2, 3]), bounds="private", epsilon=1.0, rng=1).privacy["private"] is False
    assert dptree.range_tree(np.array([1, 2, 3]), bounds="private", epsilon=1.0).privacy["private"] is True


# --------------------------------------------------------------------------- every candidate is a domain end


def _pairs(lows: np.ndarray, highs: np.ndarray) -> list[tuple[Any, Any]]:
    """Every (low, high) pair of distinct candidates when there are few; else every low with the
    first and last high, every high with the first and last low, and 1000 random pairs."""
    lo, hi = list(dict.fromkeys(lows.tolist())), list(dict.fromkeys(highs.tolist()))
    if len(lo) * len(hi) <= 2000:
        return list(itertools.product(lo, hi))
    rng = np.random.default_rng(0)
    some = [(lo[i], hi[j]) for i, j in zip(rng.integers(0, len(lo), 1000), rng.integers(0, len(hi), 1000))]
    return [(a, b) for a in lo for b in (hi[0], hi[-1])] + [(a, b) for b in hi for a in (lo[0], lo[-1])] + some


_NS_LO, _NS = NS_RANGE
_BIG = float(np.finfo(np.float64).max)


@pytest.mark.parametrize(("kind", "origins", "widths"), [
    ("integer", [0, 10**9, -(2**61), 2**62 - 2, 2**62, -(2**62)], [None, 1, 7, 2 * INT_END]),
    ("float", [0.0, 1e-300, 1e10, 1e300, -1.7e308, _BIG, -_BIG], [None, 0.25, 3.0, 2.0**1022]),
    ("datetime", [0, _NS, _NS_LO], [None, np.timedelta64(1, "ns"), np.timedelta64(7, "D"),
                                  np.timedelta64(2**63 - 1, "ns")]),
])
def test_every_pair_of_candidates_is_a_valid_domain(kind: Any, origins: list[Any], widths: list[Any]) -> None:
    """Whatever each end's AboveThreshold returns (any candidate; no halt: the last one), the tree's
    domain over it exists and covers both ends: a search never spends its budget on a range the
    tree cannot be built on (the last integer candidate was 2^62, which no integer domain takes)."""
    for origin in origins:
        lows, highs = candidates(kind, "low", origin), candidates(kind, "high", origin)
        for width in widths:
            for lo, hi in _pairs(lows, highs):
                dom = private_domain(kind, lo, hi, width)
                assert dom.size >= 2 and dom.lower <= lo and dom.upper >= hi, (origin, width, lo, hi)


def test_the_last_integer_candidate_releases() -> None:
    """A search that never halts ends at the last candidate: 1,000 ids in [2^62, 2^63) (every
    seed) and {0, 1, 2} at seeds whose low end ran past every candidate raised DomainError
    ("integer bounds must lie within +-2^62") after the budget was spent."""
    ids = np.random.default_rng(0).integers(2**62, 2**63, 1000, dtype=np.uint64)
    for seed in (0, 1):
        rel = dptree.range_tree(ids, bounds="private", epsilon=1.0, rng=seed)
        assert rel.domain.upper == INT_END == rel.privacy["bounds"]["found"][1]
    for seed in (82, 154, 280):
        rel = dptree.range_tree(np.array([0, 1, 2]), bounds="private", epsilon=1.0, rng=seed)
        lo, hi = rel.privacy["bounds"]["found"]
        assert lo == -INT_END or hi == INT_END  # a search ran past every candidate, at one end
        assert (rel.domain.lower, rel.domain.upper) == (lo, hi)


@pytest.mark.parametrize("width", [0, -1, 1e308, float("nan"), float("inf"), np.timedelta64(0, "s")])
def test_a_width_that_fits_no_column_is_refused_before_the_data(width: Any) -> None:
    class Unread:
        def __array__(self, *a: Any, **k: Any) -> Any:
            raise AssertionError("the data was read")

    with pytest.raises(InvalidParameterError, match="width=.* does not fit any column"):
        dptree.range_tree(Unread(), bounds="private", width=width, epsilon=1.0)


def test_an_epsilon_out_of_range_is_named_as_given() -> None:
    """The tree's share of epsilon was checked first, so epsilon=1e-20 was refused as 9e-21."""
    with pytest.raises(InvalidParameterError, match=r"epsilon=1e-20 is outside the supported range"):
        dptree.range_tree(np.arange(10), bounds="private", epsilon=1e-20)


@pytest.mark.parametrize("epsilon", [2e-11, 1e-9])
def test_a_budget_too_small_for_the_widest_tree_is_refused_before_the_search(epsilon: float) -> None:
    """The tree's plan over a found domain used to be checked only after the search (after a
    ledger's charge): epsilon = 2e-11 passed the plan, then the widest trees refused their noise."""
    with pytest.raises(InvalidParameterError, match="cannot release a tree over every domain the search may find"):
        PrivateBoundsPlan(epsilon=epsilon, share=0.1, levels="all_ranges" if epsilon == 1e-9 else "uniform")


@pytest.mark.parametrize("levels,branching", [("uniform", None), ("uniform", 2), ("uniform", 16), ("all_ranges", 4)])
@pytest.mark.parametrize("neighbors,k", [("add_remove", 1), ("replace", 50)])
def test_an_accepted_plan_releases_over_the_narrowest_and_widest_domain(levels: str, branching: Any, neighbors: str,
                                                                       k: int) -> None:
    """Every plan the check accepts plans the tree over the extreme domains the search can give
    (2 and BOUNDS_MAX_LEAVES buckets): a refusal after the charge cannot happen."""
    accepted = 0
    for epsilon in np.logspace(-11, 12, 24):
        try:
            plan = PrivateBoundsPlan(epsilon=float(epsilon), share=0.1, levels=levels, branching=branching,
                                     neighbors=neighbors, max_contributions=k)  # type: ignore[arg-type]
        except InvalidParameterError:
            continue
        accepted += 1
        for upper in (1, BOUNDS_MAX_LEAVES - 1):
            plan.tree_plan(private_domain("integer", 0, upper))
    assert accepted >= 10
