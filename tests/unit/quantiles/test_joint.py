"""JointExp (dptree.quantiles.joint): the utility's sensitivity by brute force (2 (1 - g) under
add/remove, 2 under replace, and planted calibrations that are too small), the forward tables
against enumeration, the e^epsilon ratio of exact laws of neighbours, refusals and outputs."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from dptree.errors import InvalidParameterError
from dptree.noise import make_source
from dptree.quantiles import joint, logsums
from dptree.quantiles.joint import JOINT_MAX_CELLS, float_slack, joint_exponential, joint_statement, sensitivity

LEVEL_SETS = ([Fraction(1, 2)], [Fraction(1, 4), Fraction(3, 4)], [Fraction(3, 10), Fraction(3, 10), Fraction(9, 10)],
              [Fraction(0), Fraction(1)], [Fraction(1, 3), Fraction(1, 2)])
#: more level sets for the sensitivity: m = 4 at i / 5 (Delta 1.6), the smallest gap below q_1 or above q_m
SENSITIVITY_SETS = LEVEL_SETS + ([Fraction(i, 5) for i in range(1, 5)], [Fraction(1, 10), Fraction(1, 2)],
                                 [Fraction(1, 2), Fraction(7, 8)])


def paper_sensitivity(qs: list[Fraction]) -> Fraction:
    """2 (1 - min(q_1, q_j - q_{j-1}, 1 - q_m)), the add/remove sensitivity of Gillenwater et al."""
    gaps = [b - a for a, b in zip([Fraction(0)] + qs, qs + [Fraction(1)])]
    return 2 * (1 - min(gaps))


#: planted calibrations that are too small: g taken from the largest gap, from the gaps between levels
#: only (q_1 and 1 - q_m left out; m = 1: none, so g = 1/2), and a flat 1 (the m = 1 value)
PLANTED = {
    "largest gap": lambda qs: 2 * (1 - max(b - a for a, b in zip([Fraction(0)] + qs, qs + [Fraction(1)]))),
    "inner gaps only": lambda qs: 2 * (1 - min([b - a for a, b in zip(qs, qs[1:])] or [Fraction(1, 2)])),
    "one": lambda qs: Fraction(1),
}


def psi(d: Fraction, c: Fraction | None) -> Fraction:
    """d up to C, then pieces of slopes 4^-k on (C (4^k - 1) / 3, C (4^(k+1) - 1) / 3], each adding C."""
    if c is None:
        return d
    k = 0
    while d > c * (4 ** (k + 1) - 1) / 3:
        k += 1
    return k * c + (d - c * (4**k - 1) / 3) / 4**k


def utility(data: tuple[int, ...], qs: list[Fraction], o: tuple[int, ...], clamp: Fraction | None) -> Fraction:
    """The definition: -sum_j psi(|e_j - e_{j-1}|), e_j = #{x < o_j} + q_j #{x = o_j} - q_j n."""
    n = len(data)
    e = [Fraction(0)]
    for q, y in zip(qs, o):
        e.append(sum(x < y for x in data) + q * sum(x == y for x in data) - q * n)
    e.append(Fraction(0))
    terms = [abs(b - a) for a, b in zip(e, e[1:])]
    return -sum(psi(t, clamp) for t in terms)


def datasets(domain: int, max_n: int) -> list[tuple[int, ...]]:
    return [d for n in range(max_n + 1) for d in itertools.combinations_with_replacement(range(domain), n)]


def outputs(domain: int, m: int) -> list[tuple[int, ...]]:
    return list(itertools.combinations_with_replacement(range(domain), m))


def brute_sensitivity(qs: list[Fraction], clamp: Fraction | None, domain: int = 4,
                      max_n: int = 3) -> dict[str, Fraction]:
    """max |u_D(o) - u_D'(o)| over every data set D of at most ``max_n`` records on the domain, every
    neighbour D' (add a record; replace a record) and every sorted output o."""
    seen = {"add": Fraction(0), "replace": Fraction(0)}
    outs = outputs(domain, len(qs))
    for data in datasets(domain, max_n):
        u = [utility(data, qs, o, clamp) for o in outs]
        for x in range(domain):  # add x
            bigger = tuple(sorted(data + (x,)))
            du = max(abs(a - b) for a, b in zip(u, (utility(bigger, qs, o, clamp) for o in outs)))
            seen["add"] = max(seen["add"], du)
            for i in range(len(data)):  # replace data[i] by x
                other = tuple(sorted(data[:i] + data[i + 1:] + (x,)))
                du = max(abs(a - b) for a, b in zip(u, (utility(other, qs, o, clamp) for o in outs)))
                seen["replace"] = max(seen["replace"], du)
    return seen


@pytest.mark.parametrize("clamp", [None, Fraction(1, 2)])
def test_sensitivity_is_the_papers_under_add_remove_and_two_under_replace(clamp: Fraction | None) -> None:
    """By brute force over every data set of <= 3 records on 4 points, every neighbour and every
    output: the utility moves by at most sensitivity(qs) = 2 (1 - g) when a record is added and by
    at most 2 when one is replaced; unclamped, both bounds are attained. Each planted calibration
    (a wrong g, a flat 1) is exceeded on some level set, so the check would catch it."""
    exceeded = dict.fromkeys(PLANTED, False)
    for qs in SENSITIVITY_SETS:
        seen = brute_sensitivity(qs, clamp)
        delta = sensitivity([float(q) for q in qs])
        assert delta == paper_sensitivity(qs) and sensitivity([float(q) for q in qs], "replace") == 2
        assert seen["add"] <= delta and seen["replace"] <= 2
        if clamp is None:  # the bounds are attained by the unclamped utility
            assert seen["add"] == delta and seen["replace"] == 2, (qs, seen)
        else:
            assert seen["replace"] > 1
        for name, rule in PLANTED.items():
            exceeded[name] |= seen["add"] > rule(qs)
    assert all(exceeded.values()), exceeded
    assert brute_sensitivity([Fraction(i, 5) for i in range(1, 5)], None)["add"] == Fraction(8, 5)  # 1 at m = 4 fails


def test_sensitivity_of_the_levels_as_used() -> None:
    """sensitivity() reads g off the levels as the utility uses them (k_j / Q), and is public."""
    assert sensitivity([0.5]) == 1 and sensitivity(np.arange(1, 5) / 5) == Fraction(8, 5)
    assert sensitivity(np.arange(1, 21) / 21) == Fraction(40, 21)
    assert sensitivity([0.0, 0.5]) == 2 and sensitivity([0.3, 0.3, 0.9]) == 2  # a gap of 0
    assert sensitivity([0.1234567]) == 2 * (1 - Fraction(10, 81))  # the level as used: denominator <= 1000
    qs = [1 / 997, 2 / 991, 3 / 983]  # the lcm of the denominators exceeds 2^20: k_j = round(q_j 2^20)
    k = [0] + [round(q * 2**20) for q in qs] + [2**20]
    assert sensitivity(qs) == 2 * (1 - Fraction(min(np.diff(k)), 2**20))
    with pytest.raises(InvalidParameterError, match="neighbors"):
        sensitivity([0.5], "swap")


def enumerated_log_weights(data: tuple[int, ...], qs: list[Fraction], span: int, t: joint._Tables) -> dict:
    """log of mu(o) exp(-a sum_j psi(|e_j - e_{j-1}|)) for every sorted o (counting measure)."""
    den = math.lcm(*[q.denominator for q in qs])
    clamp = Fraction(t.clamp, den)
    a = t.scale * den
    return {o: float(a * utility(data, qs, o, clamp)) for o in outputs(span, len(qs))}


def tables(data: tuple[int, ...], qs: list[Fraction], span: int, eps: float,
           delta: Fraction | None = None) -> joint._Tables:
    """The forward tables at ``eps`` for the sensitivity ``delta`` (None: the add/remove one)."""
    u, c = np.unique(np.array(data, dtype=np.int64), return_counts=True)
    qf = np.array([float(q) for q in qs])
    return joint._forward(u, c, qf, span, eps, sensitivity(qf) if delta is None else delta)


@pytest.mark.parametrize("eps", [1.0, 200.0])  # 200: C < 1 rank, psi's pieces all used
@pytest.mark.parametrize("data", [(), (2,), (1, 1, 1, 4), (0, 2, 2, 5, 5, 5), (3, 3, 3, 3, 3),
                                  tuple(sorted([0] * 9 + [1] * 3 + [3] * 20 + [5] * 8))])
def test_forward_tables_match_enumeration(data: tuple[int, ...], eps: float) -> None:
    span = 6
    for qs in LEVEL_SETS:
        t = tables(data, qs, span, eps)
        lw = np.array(list(enumerated_log_weights(data, qs, span, t).values()))
        expected = float(np.logaddexp.reduce(lw))
        assert float(np.logaddexp.reduce(t.end())) == pytest.approx(expected, abs=1e-9)


def exact_law(data: tuple[int, ...], qs: list[Fraction], span: int, eps: float, delta: Fraction | None = None) -> dict:
    lw = enumerated_log_weights(data, qs, span, tables(data, qs, span, eps, delta))
    z = float(np.logaddexp.reduce(np.array(list(lw.values()))))
    return {o: w - z for o, w in lw.items()}


def worst_log_ratio(qs: list[Fraction], eps: float, relation: str, delta: Fraction | None = None,
                    span: int = 4, max_n: int = 2) -> float:
    """The largest |log P_D(o) - log P_D'(o)| of the exact laws of JointExp run at ``eps`` and the
    sensitivity ``delta`` (None: the one for ``relation``) over data sets of <= max_n records, their
    ``relation`` neighbours ("add" or "replace") and every output."""
    if delta is None:
        delta = sensitivity([float(q) for q in qs], "add_remove" if relation == "add" else "replace")
    worst = 0.0
    for data in datasets(span, max_n):
        law = exact_law(data, qs, span, eps, delta)
        for x in range(span):
            others = ([tuple(sorted(data + (x,)))] if relation == "add" else
                      [tuple(sorted(data[:i] + data[i + 1:] + (x,))) for i in range(len(data))])
            for other in others:
                ol = exact_law(other, qs, span, eps, delta)
                worst = max(worst, max(abs(law[o] - ol[o]) for o in law))
    return worst


@pytest.mark.parametrize("eps", [1.0, 100.0])  # 100: the laws concentrate, the ratio nears its bound
def test_exact_laws_of_neighbours_within_e_epsilon(eps: float) -> None:
    """Exact laws (enumeration of the forward tables' weights) of neighbours: add/remove at
    2 (1 - g), replace at 2, within e^epsilon for several level sets; not vacuous."""
    worst = {"add": 0.0, "replace": 0.0}
    for qs in (LEVEL_SETS[0], LEVEL_SETS[1], LEVEL_SETS[2], SENSITIVITY_SETS[-2]):
        for rel in worst:
            worst[rel] = max(worst[rel], worst_log_ratio(qs, eps, rel))
    assert max(worst.values()) <= eps * (1 + 1e-12) + 1e-9
    assert min(worst.values()) > 0.5 * eps  # the guarantee is not vacuous here
    if eps > 50:
        assert worst["add"] > 0.99 * eps  # nearly attained (m = 1): the add/remove calibration is not loose


def test_exact_laws_catch_a_sensitivity_that_is_too_small() -> None:
    """A planted calibration, g from the largest gap (2 (1 - 1/2) = 1 at the levels 1/10, 1/2,
    against 1.8), breaks the e^epsilon bound of the exact laws under add/remove; so does the
    add/remove sensitivity used for replace neighbours at m = 1 (1 against 2)."""
    qs = [Fraction(1, 10), Fraction(1, 2)]
    eps = 100.0
    assert worst_log_ratio(qs, eps, "add") <= eps * (1 + 1e-12)
    assert worst_log_ratio(qs, eps, "add", PLANTED["largest gap"](qs)) > 1.1 * eps
    assert worst_log_ratio([Fraction(1, 2)], eps, "replace", sensitivity([0.5]), max_n=3) > 1.1 * eps


def test_outputs_sorted_in_domain_and_reproducible() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(-50, 50, size=300)
    u, c = np.unique(x, return_counts=True)
    qs = np.array([0.1, 0.5, 0.5, 0.9])
    a = joint_exponential(u, c, qs, lower=-60, upper=60, epsilon=1.0, rng=make_source(5))
    b = joint_exponential(u, c, qs, lower=-60, upper=60, epsilon=1.0, rng=make_source(5))
    assert np.array_equal(a, b) and a.size == 4 and np.all(np.diff(a) >= 0)
    assert a.min() >= -60 and a.max() <= 60
    empty = joint_exponential(np.array([], dtype=np.int64), np.array([], dtype=np.int64), qs, lower=0, upper=9,
                              epsilon=1.0, rng=make_source(1))
    assert empty.size == 4 and np.all((empty >= 0) & (empty <= 9))


def test_accuracy_at_large_epsilon_and_on_a_tie_block() -> None:
    x = np.arange(1000) * 7
    qs = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
    o = joint_exponential(x, np.ones_like(x), qs, lower=0, upper=7000, epsilon=50.0, rng=make_source(2))
    ranks = np.searchsorted(x, o, side="left")
    assert np.abs(ranks - qs * 1000).max() <= 2
    # 90% of the records on one value: the middle levels land on it (rank B + q c is the target)
    vals, cnt = np.array([0, 10, 20]), np.array([50, 900, 50])
    o = joint_exponential(vals, cnt, np.array([0.3, 0.5, 0.7]), lower=0, upper=2**20, epsilon=1.0,
                          rng=make_source(3))
    assert np.all(o == 10)


def test_huge_epsilon_returns_exact_quantiles() -> None:
    x = np.arange(0, 2000, 2)
    qs = np.array([0.1, 0.5, 0.9])
    o = joint_exponential(x, np.ones_like(x), qs, lower=0, upper=2**20, epsilon=1e4, rng=make_source(4))
    assert np.array_equal(np.searchsorted(x, o, side="left"), (qs * 1000).astype(int))


def test_refusals_say_what_to_do() -> None:
    m = 100
    k = JOINT_MAX_CELLS // m
    with pytest.raises(InvalidParameterError, match="approx"):
        joint_exponential(np.arange(k), np.ones(k, dtype=np.int64), np.linspace(0.01, 0.99, m), lower=0,
                          upper=10 * k, epsilon=1.0, rng=make_source(0))
    with pytest.raises(InvalidParameterError, match="sorted"):
        joint_exponential(np.array([1]), np.array([1]), np.array([0.9, 0.1]), lower=0, upper=9, epsilon=1.0,
                          rng=make_source(0))
    with pytest.raises(InvalidParameterError, match="lower, upper"):
        joint_exponential(np.array([10]), np.array([1]), np.array([0.5]), lower=0, upper=9, epsilon=1.0,
                          rng=make_source(0))
    with pytest.raises(InvalidParameterError):
        joint_exponential(np.array([1]), np.array([1]), np.array([0.5]), lower=0, upper=9, epsilon=0.0,
                          rng=make_source(0))


def test_float_slack_is_small_where_joint_runs_and_statement() -> None:
    assert float_slack(20, 2**20, 1.0)[0] < 1e-4
    assert float_slack(100, 2**20, 1.0)[0] < 1e-2
    assert float_slack(300, 2**20, 1.0)[0] > 0.05  # refused at epsilon = 1 (slack > epsilon / 20)
    with pytest.raises(InvalidParameterError, match="float64"):
        joint_exponential(np.array([1]), np.array([1]), np.linspace(0.001, 0.999, 300), lower=0, upper=2**20,
                          epsilon=1.0, rng=make_source(0))
    st = joint_statement(None, np.arange(1, 5) / 5)  # add/remove at the levels i / 5
    assert st["sensitivity"] == 1.6 and st["neighbors"] == "add/remove-one" and "2 (1 - g)" in st["sensitivity_rule"]
    assert joint_statement(None, [0.5])["sensitivity"] == 1
    assert joint_statement(None, [0.5], "replace")["sensitivity"] == 2
    st = joint_statement()  # the statement of a release capped at the declared size, priced at 2
    assert st["sensitivity"] == 2 and "replace" in st["neighbors"] and "sensitivity_rule" not in st


@pytest.mark.parametrize("eps", [0.5, 50.0])  # 50: C is about 4 ranks, several pieces of psi
def test_transition_sums_match_direct_sums(eps: float) -> None:
    """Every new-block entry a1[j, b] = log L_b + log sum_{b' < b} exp(h[j-1, b'] + term(b' -> b)),
    against the O(N^2) sum (checks the windows, anchors and clamp boundaries of the range tables)."""
    g = np.random.default_rng(7)
    for trial in range(8):
        v = np.unique(g.integers(0, 200, size=40))
        c = g.integers(1, 6, size=v.size)
        grid = [0.1, 0.25, 0.3, 0.5, 0.6, 0.75, 0.9] if trial % 2 else [0.0, 0.5, 1.0]  # small denominators too
        qs = np.sort(g.choice(grid, size=4))
        t = joint._forward(v, c, qs, 256, eps, sensitivity(qs))
        for j in range(2, qs.size + 1):
            dt = t.targets[j] - t.targets[j - 1]
            d = t.rank[j][:, None] - t.rank[j - 1][None, :] - dt  # [b, b']
            w = t.h[j - 1][None, :] + t.term(d)
            w = np.where(np.arange(w.shape[1])[None, :] < np.arange(w.shape[0])[:, None], w, -np.inf)
            direct = np.log(t.length.astype(float)) + np.logaddexp.reduce(w, axis=1)
            assert np.allclose(t.a1[j, 1:], direct[1:], rtol=0, atol=1e-9)


def test_logaddexp_in_place_matches_numpy_including_minus_infinity() -> None:
    g = np.random.default_rng(2)
    a, b = g.normal(0, 50, 4000), g.normal(0, 50, 4000)
    b[:1000] = a[:1000] + g.normal(0, 1e-3, 1000)  # near-equal arguments
    a[1000:1100], b[1050:1150] = -np.inf, -np.inf  # one or both -inf
    a[3000:] *= 3000.0  # magnitudes near the bound M of float_slack at m = 20
    b[3000:] = a[3000:] + g.normal(0, 5, 1000)
    expected = np.logaddexp(a, b)
    got = logsums.lae(a, b, a.copy(), np.empty_like(a))
    assert np.array_equal(np.isneginf(got), np.isneginf(expected)) and not np.isnan(got).any()
    fin = np.isfinite(expected)
    assert np.all(np.abs(got[fin] - expected[fin]) <= 4 * np.spacing(np.abs(expected[fin]) + 1.0))
    out = b.copy()  # out may be an argument
    assert np.array_equal(logsums.lae(a, out, out, np.empty_like(a)), got, equal_nan=True)


@pytest.mark.parametrize("nb", [1, 2, 31, 32, 33, 100, 1000, 1025])
def test_range_tables_match_direct_sums(nb: int) -> None:
    """Every window [lo, lo + size) with size < 2^count, against the direct log-sum-exp: windows of 0, 1
    and 2 elements, windows crossing multiples of 2^count and of larger powers, both signs."""
    g = np.random.default_rng(nb)
    x = np.cumsum(g.integers(0, 50, nb)).astype(np.int64) + 10**15  # anchors matter: x is large
    vals = g.normal(0, 20, nb)
    vals[g.random(nb) < 0.05] = -np.inf
    for count in sorted({1, max(1, nb.bit_length() - 2), nb.bit_length()}):
        for coef in (0.37, -0.011):
            lay = logsums.Layout(x, count + 1)  # a wider layout than this table needs, as in a transition
            rows = logsums.range_tables(lay, vals, coef, count)
            lo = g.integers(0, nb + 1, 400)
            size = np.minimum(g.integers(0, 1 << count, 400), nb - lo)
            size[:3] = np.minimum([0, 1, 2], min(nb, (1 << count) - 1))
            lo[:3] = np.minimum(lo[:3], nb - size[:3])
            y = x[np.minimum(lo, nb - 1)] + g.integers(-100, 100, 400)
            got = logsums.range_sums(rows, x, lo, size, y, coef)
            for i in range(lo.size):
                t = np.arange(lo[i], lo[i] + size[i])
                want = np.logaddexp.reduce(vals[t] + coef * (x[t] - y[i]).astype(float)) if t.size else -np.inf
                assert got[i] == pytest.approx(want, abs=1e-9) or (got[i] == want == -np.inf)


@pytest.mark.parametrize("eps", [1.0, 30.0])  # 30: C is about 8 ranks, windows of four pieces and both sides
def test_transition_on_thousands_of_blocks_matches_direct_sums(eps: float) -> None:
    """_transition on about 2000 blocks (table levels past _LOW, the top-level rows) against the O(N^2)
    sum over b' < b of prev[b'] - a psi(|y_b - x_b'|)."""
    g = np.random.default_rng(11)
    x = np.sort(g.integers(0, 4000, 2000)).astype(np.int64) * 20
    y = np.sort(x + g.integers(-400, 200, x.size))
    prev = g.normal(-300, 40, x.size)
    scale, clamp = eps / 4 / 20, max(1, int(joint.clamp_nats(2**20) / (eps / 4) * 20))
    got = joint._transition(x, prev, y, clamp, scale)
    t = joint._Tables(None, None, [], [], None, None, None, scale, clamp)
    w = prev[None, :] + t.term(y[:, None] - x[None, :])
    w = np.where(np.arange(x.size)[None, :] < np.arange(x.size)[:, None], w, -np.inf)
    want = np.logaddexp.reduce(w, axis=1)
    assert got[0] == want[0] == -np.inf
    assert np.allclose(got[1:], want[1:], rtol=0, atol=1e-8)


def test_api_joint_needs_a_declared_size_and_takes_every_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """The joint tables' cell limit is checked against the declared size, before the data is read;
    data beyond it all enter (a cap would make add/remove pairs replace pairs, of sensitivity 2) and
    are never refused, even past the limit."""
    import dptree

    x = np.arange(200)
    with pytest.raises(InvalidParameterError, match="n= or n_max="):
        dptree.quantiles(x, [0.5], lower=0, upper=255, epsilon=1.0, method="joint")
    with pytest.raises(InvalidParameterError, match="limit"):
        dptree.quantiles(x, [0.5] * 3, lower=0, upper=255, epsilon=1.0, method="joint", n_max=10**6)
    monkeypatch.setattr(joint, "JOINT_MAX_CELLS", 150)  # 101 cells declared, 201 in the data
    with pytest.raises(InvalidParameterError, match="size limit"):  # a direct call on the data is checked on it
        joint_exponential(x, np.ones_like(x), np.array([0.25]), lower=0, upper=255, epsilon=1.0, rng=make_source(1))
    r = dptree.quantiles(x, [0.25], lower=0, upper=255, epsilon=50.0, method="joint", n_max=100, rng=1)
    assert 40 <= r.values[0] <= 60  # the 0.25-quantile of all 200 records (50), not of a capped middle 100 (75)


# --- dithered ties (joint_exponential(dither=K)) ---------------------------------------------------

def _honest_draws(n: int, k: int) -> list[tuple[int, ...]]:
    """Every outcome of n independent uniform draws on [0, k) (equally likely)."""
    return list(itertools.product(range(k), repeat=n))


def _size_dependent_draws(n: int, k: int) -> list[tuple[int, ...]]:
    """A planted bug: every record dithered by the data size's parity (not independent per record)."""
    return [tuple([(n % 2) * (k - 1)] * n)]


def dithered_law(data: tuple[int, ...], qs: list[Fraction], span: int, eps: float, k: int, draws,
                 mapped: bool, delta: Fraction | None = None) -> dict:
    """The exact log-law of JointExp run on the keys x k + u (``joint.dither_keys``) at the
    sensitivity ``delta`` (None: the add/remove one), averaged over every outcome of ``draws``;
    ``mapped``: of the outputs mapped back (floor(o / k), the release), else of the keys (the
    composed mechanism before its post-processing)."""
    vals, cnt = np.unique(np.array(data, dtype=np.int64), return_counts=True)
    laws = []
    for u in draws(len(data), k):
        kv, kc = joint.dither_keys(vals, cnt, k, np.array(u, dtype=np.int64))
        law = exact_law(tuple(int(x) for x in np.repeat(kv, kc)), qs, span * k, eps, delta)
        back: dict = {}
        for o, lw in law.items():
            key = tuple(x // k for x in o) if mapped else o
            back[key] = np.logaddexp(back.get(key, -np.inf), lw)
        laws.append(back)
    return {o: float(np.logaddexp.reduce([w[o] for w in laws])) - math.log(len(laws)) for o in laws[0]}


def _worst_dithered_ratio(draws, mapped: bool, eps: float) -> float:
    """Add/remove pairs with JointExp at its add/remove sensitivity, replace pairs at 2."""
    span, k, worst = 3, 2, 0.0
    for qs in LEVEL_SETS[:2]:
        for delta in (None, Fraction(2)):
            for data in datasets(span, 2):
                law = dithered_law(data, qs, span, eps, k, draws, mapped, delta)
                for x in range(span):  # add x (n <= 3), or replace each record by x
                    others = ([tuple(sorted(data + (x,)))] if delta is None else
                              [tuple(sorted(data[:i] + data[i + 1:] + (x,))) for i in range(len(data))])
                    for other in others:
                        ol = dithered_law(other, qs, span, eps, k, draws, mapped, delta)
                        worst = max(worst, max(abs(law[o] - ol[o]) for o in law))
    return worst


@pytest.mark.slow
def test_dithered_exact_laws_of_neighbours_within_e_epsilon_and_a_planted_bug_is_caught() -> None:
    """Brute force, K = 2 over a domain of 3, n <= 3, add/remove and replace neighbours: the exact
    law of the dithered mechanism (average over all K^n dither outcomes of JointExp's exact law)
    stays within e^epsilon, both for the release (outputs mapped back) and for the keys; a dither
    that depends on the data size (all records moved together) breaks the keys' bound."""
    eps = 1.0
    for mapped in (True, False):
        assert _worst_dithered_ratio(_honest_draws, mapped, eps) <= eps + 1e-9
    assert _worst_dithered_ratio(_honest_draws, False, eps) > 0.3 * eps  # not vacuous
    assert _worst_dithered_ratio(_size_dependent_draws, False, eps) > eps * 1.1


def test_dither_factor_and_keys() -> None:
    assert joint.dither_factor(None, 2**20) == 1 and joint.dither_factor(0, 2**20) == 1
    assert joint.dither_factor(1000, 2**20) == 4096 and joint.dither_factor(1024, 2**20) == 4096
    assert joint.dither_factor(1025, 2**20) == 8192
    assert joint.dither_factor(10**6, 2**60) == 2  # |X| K < 2^62
    assert joint.dither_factor(10**6, 2**62 - 1) == 1
    kv, kc = joint.dither_keys(np.array([0, 3]), np.array([2, 3]), 4, np.array([1, 1, 0, 3, 3]))
    assert kv.tolist() == [1, 12, 15] and kc.tolist() == [2, 1, 2]
    with pytest.raises(InvalidParameterError, match="power of two"):
        joint_exponential(np.array([1]), np.array([1]), np.array([0.5]), lower=0, upper=9, epsilon=1.0,
                          rng=make_source(0), dither=3)
    # the draws are uniform on [0, K) and each key maps back to its record's value
    vals, cnt = np.array([5]), np.array([4000])
    u = np.asarray(joint.uniform_below(make_source(9), 8, size=4000))
    kv, kc = joint.dither_keys(vals, cnt, 8, u)
    assert np.all(kv // 8 == 5) and kc.sum() == 4000
    freq = np.bincount(u, minlength=8)
    assert freq.min() > 400 and freq.max() < 600


def test_dithering_meets_consecutive_targets_inside_one_tie_block() -> None:
    """70% of the records on one value, m = 4 levels all inside its block, large epsilon: dithered,
    every output is the tied value (tie-aware error 0); undithered, the block's outputs are ranked at
    their q-points and the outer levels shift off the block."""
    vals, cnt = np.array([100, 500, 900]), np.array([150, 700, 150])
    qs = np.array([0.2, 0.4, 0.6, 0.8])
    k = joint.dither_factor(1000, 1024)
    undithered_off = 0
    for s in range(5):
        o = joint_exponential(vals, cnt, qs, lower=0, upper=1023, epsilon=20.0, rng=make_source(s), dither=k)
        assert np.all(o == 500)
        o = joint_exponential(vals, cnt, qs, lower=0, upper=1023, epsilon=20.0, rng=make_source(s))
        undithered_off += int(np.sum(o != 500))
    assert undithered_off >= 5
