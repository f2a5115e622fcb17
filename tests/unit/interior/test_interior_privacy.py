"""Issue 10, leak 3: interior points must neither publish nor branch on the exact number of records.

Each test here failed on the code before the fix (checked by running it against the old
``src/dptree/interior/points.py``, now split into the modules of ``src/dptree/interior/``); the comment on each says which bug it catches.
"""

from __future__ import annotations

import dataclasses
import math
import random

import numpy as np
import pytest
from audit_registry.interior_points import even_spread, interior_tree_pairs

import dptree.interior.api as API
import dptree.interior.heavypaths as HP
import dptree.interior.thresholds as TH
import dptree.interior.treelog as TL
from dptree.errors import DataError, InsufficientDataError, InvalidParameterError
from dptree.interior.api import interior_point
from dptree.interior.calibration import swap_budget
from dptree.interior.heavypaths import heavypaths_parameters
from dptree.interior.multisets import MS as _MS
from dptree.interior.quantiles import median, quantile
from dptree.interior.selection import _group, ordered_exponential_mechanism
from dptree.interior.thresholds import learn_threshold
from dptree.interior.treelog import run_treelog as _treelog
from dptree.interior.treelog import treelog_parameters, treelog_privacy
from dptree.noise import make_source
from dptree.testing import audit

# ------------------------------------------------------------------ the TreeLog "n <= 3t" shortcut


def _failures(ms: _MS, h: int, p: dict, runs: int, seed: int) -> int:
    src = make_source(seed)
    return sum(_treelog(ms, h, p, src) != 85 for _ in range(runs))


def test_treelog_issue_counterexample_is_private():
    """The issue's numbers: |X| = 2^8, eps = 1, delta = 1e-6, point mass at 85 with n = 3t vs
    n = 3t + 1 (t = 161,140). With the old ``n <= 3t -> exponential mechanism`` shortcut the 3t
    dataset never fails (0/300) and the 3t + 1 one fails ~40% of the time: P[fail | 3t+1] <=
    e P[fail | 3t] + 1e-6 is violated, i.e. not (1, 1e-6)-DP. Without it both behave alike."""
    p = treelog_parameters(483_421, 256, 1.0, 1e-6)
    t = p["t"]
    assert t == 161_140 and 3 * t == 483_420
    runs = 300
    k0 = _failures(_MS([85], [3 * t]), 8, p, runs, 11)
    k1 = _failures(_MS([85], [3 * t + 1]), 8, p, runs, 12)
    for ka, kb in ((k0, k1), (k1, k0)):
        eps_lb, _, _ = audit.epsilon_lower_bound(ka, kb, runs, 1e-6, 1e-6)
        assert eps_lb <= 1.0, (k0, k1)


def _bottoms_at(n: int, n_max: int, runs: int, seed: int) -> int:
    vals, cnt = even_spread(256, n)
    return sum(
        interior_point(vals, counts=cnt, lower=0, upper=255, epsilon=1.0, delta=1e-6, method="heavypaths",
                       n_max=n_max, rng=seed + r).bottom
        for r in range(runs)
    )


def test_heavypaths_halting_depends_only_on_the_declared_size(monkeypatch):
    """Issue 16 (found by the widened Lemma 4.3 check, tests/unit/interior/test_interior_lemma43.py): ConstructPaths
    halted on the private |S_d| <= 10t. With n_max = 10^8 declared on |X| = 2^8, data spread evenly
    with 10t records stopped after S_1 and returned bottom every time, with 10t + 1 records it
    went on to S_2 and answered every time (30/30 each): add/remove neighbors, not (1, 1e-6)-DP. Halting on
    the declared size, both behave alike; planting the old rule back fails the same check."""
    n_max = 10**8
    e_in, d_in = swap_budget(1.0, 1e-6)
    t = heavypaths_parameters(n_max, 256, e_in, d_in)["t"]
    runs = 100

    def eps_lb() -> float:
        k0, k1 = _bottoms_at(10 * t, n_max, runs, 100), _bottoms_at(10 * t + 1, n_max, runs, 200)
        return max(audit.epsilon_lower_bound(a, b, runs, 1e-6, 1e-6)[0] for a, b in ((k0, k1), (k1, k0)))

    assert eps_lb() <= 1.0
    orig = HP.construct_paths
    monkeypatch.setattr(HP, "construct_paths", lambda ms, h, t, n_public=None: orig(ms, h, t))
    assert eps_lb() > 1.0


def _planted_shortcut(orig):
    """The pre-fix TreeLog: the exponential mechanism over the whole domain when n <= 3t."""

    def treelog(ms, h, p, src, depth=0):
        if ms.n <= 3 * p["t"]:
            return ordered_exponential_mechanism(
                ms.vals, counts=ms.cnt, lower=0, upper=(1 << h) - 1, epsilon=p["eps0"], rng=src
            )
        return orig(ms, h, p, src, depth)

    return treelog


def test_audit_catches_the_treelog_shortcut_as_a_planted_bug(monkeypatch):
    """The registered TreeLog audit (public API, declared n_max) passes on the fixed code and
    fails (eps lower bound > 1) when the old shortcut is planted back into _treelog."""
    spec = audit.get("interior_point/treelog/add_remove")
    pair = interior_tree_pairs()["treelog/add_remove"][0]
    cfg = audit.AuditConfig(n_select=300, n_eval=900)
    ok = audit.audit_pair(spec, pair, config=cfg, seed=7)
    assert ok.passed(spec.epsilon), ok
    planted = _planted_shortcut(TL.run_treelog)
    monkeypatch.setattr(TL, "run_treelog", planted)  # every recursive call
    monkeypatch.setattr(API, "run_treelog", planted)  # the top-level call of interior_point
    bad = audit.audit_pair(spec, pair, config=cfg, seed=7)
    assert not bad.passed(spec.epsilon) and bad.epsilon_lower_bound > 2.0, bad


def test_every_method_is_registered_with_the_audit():
    """Issue 10 audit coverage: each interior_point method, median, quantile, learn_threshold,
    under add/remove (neighbors of sizes n and n + 1) and replace."""
    names = {s.name for s in audit.registered()}
    for m in ("exponential", "auto", "treelog", "heavypaths"):
        assert f"interior_point/{m}/add_remove" in names
    for n in (
        "interior_point/exponential/replace",
        "interior_point/treelog/replace",
        "median/exponential/add_remove",
        "median/exponential/replace",
        "quantile/q=0.25/add_remove",
        "learn_threshold/exponential/add_remove",
        "learn_threshold/exponential/replace",
        "learn_threshold/treelog/add_remove",
    ):
        assert n in names
    pairs = interior_tree_pairs()["treelog/add_remove"]
    (v0, c0), (v1, c1) = pairs[0].d0, pairs[0].d1
    assert v0 == v1 == [85] and c1[0] == c0[0] + 1 and c0[0] % 3 == 0  # |S| = 3t vs 3t + 1


# ------------------------------------------------------------------ nothing computed from |S| is released


def _meta(r):
    """Every field but the released value (and the creation time, which is the clock's)."""
    d = dataclasses.asdict(r)
    d.pop("value")
    d.pop("metadata")
    return d


@pytest.mark.parametrize(
    "kw",
    [
        {"method": "exponential"},
        {"method": "auto"},
        {"method": "auto", "delta": 1e-6, "n": 31, "run_anyway": True},
        {"method": "treelog", "delta": 1e-6, "n_max": 1000},
        {"method": "heavypaths", "delta": 1e-6, "n": 1000},
    ],
)
def test_interior_point_metadata_does_not_depend_on_the_data_size(kw):
    """Old code: ``n`` was a field (30 vs 31), and auto raised InsufficientDataError exactly when
    n < 31 at |X| = 256 (n = 30 raised, n = 31 released)."""
    r30 = interior_point([7] * 30, lower=0, upper=255, epsilon=1.0, rng=3, **kw)
    r31 = interior_point([7] * 31, lower=0, upper=255, epsilon=1.0, rng=3, **kw)
    assert not hasattr(r30, "n")
    assert _meta(r30) == _meta(r31)


def test_quantile_and_median_metadata_does_not_depend_on_the_data_size():
    a = quantile([1, 2, 3] * 10, 0.3, lower=0, upper=9, epsilon=1.0, rng=1, n_max=100)
    b = quantile([1, 2, 3] * 10 + [4], 0.3, lower=0, upper=9, epsilon=1.0, rng=1, n_max=100)
    assert _meta(a) == _meta(b) and a.n_declared == 100 and a.n_public
    m = median([5] * 9, lower=0, upper=9, epsilon=1.0, rng=1, n=9)
    assert m.n_declared == 9


def test_tree_methods_need_a_declared_size_and_use_only_it():
    """Old code calibrated eps0, delta0, t from the actual |S| (no n=/n_max= existed)."""
    for method in ("treelog", "heavypaths"):
        with pytest.raises(InvalidParameterError, match=r"n=.*n_max="):
            interior_point([5] * 100, lower=0, upper=255, epsilon=1.0, delta=1e-6, method=method)
        small = interior_point([5] * 50, lower=0, upper=255, epsilon=1.0, delta=1e-6, method=method, n=4000, rng=1)
        big = interior_point([5] * 5000, lower=0, upper=255, epsilon=1.0, delta=1e-6, method=method, n=4000, rng=1)
        assert small.parameters == big.parameters
        assert small.n_declared == 4000 and small.n_is_upper_bound is False


def test_declared_size_is_validated():
    kw = {"lower": 0, "upper": 9, "epsilon": 1.0}
    with pytest.raises(InvalidParameterError, match="not both"):
        interior_point([1], n=1, n_max=2, **kw)
    for bad in (0, -3, True, 2.5, "10"):
        with pytest.raises(InvalidParameterError, match="positive integer"):
            interior_point([1], n=bad, **kw)


def test_auto_without_a_size_uses_the_exponential_mechanism_and_refuses_only_on_the_declared_n():
    r = interior_point([3] * 5, lower=0, upper=2**64 - 1, epsilon=1.0, delta=1e-6, rng=1)
    assert r.method == "exponential" and r.guarantee_applies is None and "auto" in r.parameters
    with pytest.raises(InsufficientDataError, match="declared n=5"):
        interior_point([3] * 10_000, lower=0, upper=2**64 - 1, epsilon=1.0, delta=1e-6, n=5)
    r = interior_point([3] * 2, lower=0, upper=255, epsilon=1.0, rng=1, n_max=10_000)
    assert r.guarantee_applies is None  # an upper bound cannot tell whether the actual n suffices


# ------------------------------------------------------------------ the cap at the declared size


def _capped(xs: list[int], size: int) -> list[int]:
    vals, cnt = _group(xs, None)
    c = _MS(vals, cnt).cap(size)
    return sorted(v for v, k in zip(c.vals, c.cnt) for _ in range(k))


def _sym_diff(a: list[int], b: list[int]) -> tuple[int, int]:
    from collections import Counter

    ca, cb = Counter(a), Counter(b)
    return sum((ca - cb).values()), sum((cb - ca).values())


def test_cap_maps_neighbors_to_neighbors_or_one_replacement():
    """docs/notes/interior_point.md: for add/remove or replace neighbors, the capped multisets are
    add/remove neighbors or differ by one replacement (the basis of the group-privacy step)."""
    rnd = random.Random(0)
    for _ in range(3000):
        m = rnd.randrange(0, 12)
        s = [rnd.randrange(0, 6) for _ in range(m)]
        size = rnd.randrange(1, 10)
        x = rnd.randrange(0, 6)
        a, b = _capped(s, size), _capped(s + [x], size)
        assert len(a) == min(m, size) and set(a) <= set(s)
        assert _sym_diff(a, b) in ((0, 0), (0, 1), (1, 1)), (s, x, size)
        if m:
            r = s[:]
            r[rnd.randrange(m)] = x
            assert _sym_diff(a, _capped(r, size)) in ((0, 0), (1, 1)), (s, r, size)


def test_cap_keeps_the_interior():
    r = interior_point(
        [0] * 10 + [50] * 900 + [255] * 10, lower=0, upper=255, epsilon=1.0, delta=1e-6, method="treelog", n=100, rng=1
    )
    assert 0 <= r.value <= 255


# ------------------------------------------------------------------ replace calibration


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-6), (0.3, 1e-8), (2.0, 1e-5)])
def test_tree_methods_are_calibrated_per_replacement(eps, delta):
    """Old code calibrated the add/remove lemma at (eps, delta) and called the result valid for
    any neighbors; a replacement is a removal plus an addition (group privacy)."""
    e_in, d_in = swap_budget(eps, delta)
    assert 2 * e_in <= eps * (1 + 1e-12) and d_in * (1 + math.exp(e_in)) <= delta * (1 + 1e-12)
    r = interior_point([9] * 40, lower=0, upper=255, epsilon=eps, delta=delta, method="treelog", n=40, rng=1)
    p = r.parameters
    assert p["epsilon_per_change"] == e_in and p["delta_per_change"] == d_in
    e_lemma, d_lemma = treelog_privacy(p["eps0"], p["delta0"], 41, p["n_calls"])
    assert e_lemma <= e_in * (1 + 1e-9) and d_lemma <= d_in * (1 + 1e-9)
    e2, d2 = 2 * e_lemma, d_lemma * (1 + math.exp(e_lemma))  # remove, then add
    assert e2 <= eps * (1 + 1e-9) and d2 <= delta * (1 + 1e-9)
    assert r.privacy["neighbors"] == "add_remove" and "group privacy" in r.privacy["replace"]


# ------------------------------------------------------------------ learn_threshold's sample size


def test_learn_threshold_sample_size_does_not_depend_on_label_counts(monkeypatch):
    """Old code: S = (up to) m ones + (up to) m zeros, so |S| was m + #ones when the noisy count
    of ones exceeded the true one -- a size computed from the true label counts."""
    seen: list[list[int]] = []
    orig = TH.ordered_exponential_mechanism

    def spy(values, **kw):
        counts = kw.get("counts") or [1] * len(values)  # S with its multiplicities (the padding)
        seen.append([v for v, c in zip(values, counts) for _ in range(c)])
        return orig(values, **kw)

    monkeypatch.setattr(TH, "ordered_exponential_mechanism", spy)
    x0 = [1, 2, 3, 4] + list(range(100, 160))
    y0 = [1, 1, 1, 1] + [0] * 60
    hits = 0
    for seed in range(400):
        seen.clear()
        learn_threshold(x0, y0, lower=0, upper=255, epsilon=0.2, fraction=0.1, rng=seed)
        for s in seen:  # the interior-point branch: |S| = 2m, padded slots hold the domain ends
            assert len(s) % 2 == 0
            m = len(s) // 2
            if m > 4:  # fewer true ones than slots: m - 4 pads at the lower end (offset 0)
                hits += 1
                assert s[:m].count(0) == m - 4
    assert hits >= 3
    # with a declared public n the slot count m = floor(fraction * n) is the same for neighbors
    for seed in range(50):
        seen.clear()
        learn_threshold(x0, y0, lower=0, upper=255, epsilon=0.2, fraction=0.1, rng=seed, n=100)
        learn_threshold(x0 + [5], y0 + [1], lower=0, upper=255, epsilon=0.2, fraction=0.1, rng=seed, n=100)
        assert all(len(s) == 20 for s in seen)


# ------------------------------------------------------------------ error messages


def test_error_messages_do_not_echo_data_and_offer_a_policy():
    """Old code: "value 7.25 is not an integer but the domain is integer"."""
    with pytest.raises(DataError) as ei:
        interior_point([1, 7.25, 3], lower=0, upper=9, epsilon=1.0)
    assert "7.25" not in str(ei.value) and "on_invalid='drop'" in str(ei.value)
    with pytest.raises(DataError) as ei:
        interior_point(np.array([1.0, np.nan, 3.0, np.inf]), lower=0.0, upper=9.0, epsilon=1.0)
    assert "on_invalid='drop'" in str(ei.value) and not any(c.isdigit() for c in str(ei.value))
    with pytest.raises(DataError) as ei:
        interior_point([1, "31337"], lower=0, upper=9, epsilon=1.0)
    assert "31337" not in str(ei.value) and "str" not in str(ei.value)
    # beyond the doubles: clamped to upper like any value outside the bounds, never an error about it
    assert 0.0 <= interior_point([1, 10**400], lower=0.0, upper=9.0, epsilon=1.0, rng=0).value <= 9.0
    r = interior_point([4, 7.25, 4, float("nan")], lower=0, upper=9, epsilon=50.0, on_invalid="drop", rng=1)
    assert r.value == 4
    q = quantile(np.array([4.0, np.nan]), 0.5, lower=0.0, upper=9.0, epsilon=1.0, on_invalid="drop", rng=1)
    assert 0.0 <= q.value <= 9.0


# ------------------------------------------------------------------ CLI


@pytest.fixture
def interior_cli(cli_run):
    """``dptree interior-point ARGV``: (code, out, err)."""
    return lambda argv: cli_run(["interior-point", *argv])


def test_cli_does_not_print_the_actual_n(tmp_path, interior_cli):
    """Old CLI printed ``(n=1001, ...)``."""
    outs = []
    for rows in (1000, 1001):
        f = tmp_path / f"d{rows}.csv"
        f.write_text("v\n" + "".join(f"{40 + i % 7}\n" for i in range(rows)))
        code, out, _ = interior_cli([str(f), "--column", "v", "--lower", "0", "--upper", "255", "--epsilon", "1"])
        assert code == 0 and str(rows) not in out
        outs.append([ln for ln in out.splitlines() if not ln.startswith("interior_point:")])
    assert outs[0] == outs[1]
    f = tmp_path / "d1001.csv"
    code, out, _ = interior_cli(
        [str(f), "--column", "v", "--lower", "0", "--upper", "255", "--epsilon", "1", "--delta", "1e-6"]
        + ["--method", "treelog", "--n-max", "5000", "--seed", "1", "--allow-nonprivate"])
    assert code == 0 and "declared n_max=5000" in out and "1001" not in out


def test_cli_missing_values_message_offers_the_drop_policy(tmp_path, interior_cli):
    """Old CLI: a data-dependent refusal with no policy to avoid it."""
    f = tmp_path / "m.csv"
    f.write_text("v\n" + "5\n" * 40 + "\n" * 3)
    base = [str(f), "--column", "v", "--lower", "0", "--upper", "255", "--epsilon", "1", "--seed", "1", "--allow-nonprivate"]
    code, _, err = interior_cli(base)
    assert code == 2 and "--on-invalid drop" in err and "3" not in err.replace("255", "")
    code, out, _ = interior_cli(base + ["--on-invalid", "drop"])
    assert code == 0 and "interior_point: 5" in out
