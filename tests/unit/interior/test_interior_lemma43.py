"""Seed 002, Lemma 4.3 (and the sensitivity claim of Lemma 4.5) checked by brute force on ConstructPaths.

Lemma 4.3: for neighboring S, S' and t >= 2k, the databases S_d, S'_d that ConstructPaths
(Algorithm 2) produces are neighboring for every d < d*(S), where d*(S) is the first d with
f_d(S) = max multiplicity of S_d >= k. Lemma 4.5's proof adds |f_d(S) - f_d(S')| <= 1 for every
d <= d*(S) (so StoppingPoint's AboveThreshold sees sensitivity-1 queries). The paper states both for
S, S' in X^n (replace-one); dptree reads the HeavyPaths lemmas for add/remove-one as well
(docs/notes/heavypaths.md section 0), so both relations are checked, with ConstructPaths halting on the
public size as dptree runs it (N = |S| + 1, at least every neighbor's size).

Each case is a data set S (a multiset on [0, 2^h)) with its neighbors: one record added (beside
the heavy path of S at its split levels and at forced levels -- which raises one level's fall-off
by one or creates a new one, the change the lemma is about --, copies of data values and their
+-1 neighbors, the domain ends, random points), removed (the extremes and a sample), or replaced
(a removal with one of those additions). ``_violations`` runs dptree's ``construct_paths`` on S
and on every neighbor and returns every broken statement. Data shapes:

* ``designed-d2`` / ``designed-d3`` -- S_1 is built from a chosen S_2 (one fall-off group per value
  of S_2 beside a random path, t trimmed records at each end, a t-record tail under the path), with
  S_2 heavy (d*(S) = 2) or spread over many levels with multiplicities < k, or < k - 1 so that a
  one-off error cannot push them to k (d*(S) = 3); also with |S_2| = 10t and 10t + 1 (the halt);
* ``uniform`` (random values; also with |S| = 10t and 10t + 1 exactly), ``clusters`` (dyadic
  clusters of geometric sizes), ``near-tie`` (two sibling subtrees whose weights differ by 0, 1 or
  2, the case Lemma 4.5's proof treats separately), ``point-masses`` (d* = 1).

Heights 5, 8 (two databases), 20, 24, 31, 64 (three), 2^15, 2^16 (four); (t, k) from (2, 1) to
(50, 25), with t = 2k and t > 2k. d*(S) = 3 needs |S_2| > 10t >= 20k records spread (< k each)
over its at most h values, so h > 20k/(k - 1): it appears from h = 31 (k >= 5) and h = 64.
d*(S) >= 4 is out of reach of any test: S_3 must likewise be spread over the at most h_2 values of
its domain, so h_2 > 20 and |X| > 2^(2^20), with ~10^3 distinct 2^20-bit values.

The fast test runs every shape at heights <= 64 and the designed d* = 3 cases at 2^(2^15); the
full sweep is marked slow. A reference implementation of Algorithm 2, written step by step from
the paper (level-by-level walk, no jumps), is compared with dptree's on the cases with h <= 64.
Planted bugs: an off-by-one in the fall-off count (caught by the lemma check), an off-by-one in the
forced-step jump (caught by the reference comparison), and the old halting on the private size
(caught by the lemma check at the add/remove boundary).
"""

from __future__ import annotations

import bisect
import inspect
import random
from collections import Counter
from itertools import chain, repeat
from typing import Any

import pytest

import dptree.interior.heavypaths as HP
import dptree.interior.multisets as MSET
from dptree.interior.selection import _group

Case = tuple[str, int, int, int, list[int], list[tuple[str, list[int]]]]  # shape, h, t, k, S, neighbors
#: one database S_d: (its records sorted, f_d = its largest multiplicity, the height of X_d). Sorted
#: tuples, not Counters: equal tuples are equal multisets, and comparing them costs no hashing of
#: the 2^16-bit values (the Counters made this test ~30% slower)
Db = tuple[tuple[int, ...], int, int]


# --------------------------------------------------------------------------- ConstructPaths


def _dbs(values: list[int], h: int, t: int, n_public: int | None = None) -> list[Db]:
    """dptree's ConstructPaths on ``values``: [S_d as a :data:`Db`]; ``n_public`` the
    declared size that decides when step 1 halts (None: the actual size, as the paper's fixed n)."""
    vals, cnt = _group(values, None)
    dbs = HP.construct_paths(MSET.MS(vals, cnt), h, t, n_public)
    return [(tuple(chain.from_iterable(map(repeat, ms.vals, ms.cnt))), max(ms.cnt, default=0), hh) for ms, hh in dbs]


def _reference_dbs(values: list[int], h: int, t: int) -> list[Db]:
    """Algorithm 2 (ConstructPaths) step by step, as printed in seed 002 (|X| = O(1): height <= 4)."""
    out = []
    s = sorted(values)
    while True:
        out.append((tuple(s), max(Counter(s).values(), default=0), h))
        n = len(s)
        if n <= 10 * t or h <= MSET.BASE_H:  # step 1
            return out
        s_hat = s[t : n - t]  # step 2

        def w(level: int, j: int, s_hat: list[int] = s_hat, h: int = h) -> int:  # step 3
            lo, hi = j << (h - level), (j + 1) << (h - level)
            return bisect.bisect_left(s_hat, hi) - bisect.bisect_left(s_hat, lo)

        path = []  # step 4: (level, node, child taken or None for the last node)
        level, j = 0, 0
        while True:
            if level == h or w(level, j) <= t:
                path.append((level, j, None))
                break
            w0, w1 = w(level + 1, 2 * j), w(level + 1, 2 * j + 1)
            b = 0 if w0 >= w1 else 1  # the heavier child (ties: left)
            path.append((level, j, b))
            level, j = level + 1, 2 * j + b
        d: list[int] = []  # step 5
        for level, j, b in path:
            if len(d) >= n - 3 * t:
                break
            if b is None:
                d += [level] * (n - 3 * t - len(d))
                break
            d += [level] * min(w(level + 1, 2 * j + 1 - b), n - 3 * t - len(d))
        s = sorted(d)
        h = MSET.height(h + 1)


# --------------------------------------------------------------------------- the statements


def _first_difference(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """The first index where a and b differ (min of the lengths if one is a prefix of the other),
    by bisection on slice equality (C-level comparisons, equal values mostly the same objects)."""
    lo, hi = 0, min(len(a), len(b))  # a[:lo] == b[:lo]; the answer lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _neighboring(a: tuple[int, ...], b: tuple[int, ...], relation: str) -> bool:
    """On sorted records. replace: same size, one element swapped (or equal); add_remove: one is
    the other plus one. Between the first and the last differing index i..j, a swap of x = a[i]
    for y = b[j] (or of a[j] for b[i]) shifts the records in between by one place; one added
    record shifts everything after the first difference by one place."""
    if relation == "replace":
        if len(a) != len(b):
            return False
        i = _first_difference(a, b)
        if i == len(a):
            return True
        j = len(a) - 1 - _first_difference(a[::-1], b[::-1])
        return a[i + 1 : j + 1] == b[i:j] or a[i:j] == b[i + 1 : j + 1]
    small, big = (a, b) if len(a) < len(b) else (b, a)
    if len(big) - len(small) != 1:
        return False
    i = _first_difference(small, big)
    return small[i:] == big[i + 1 :]


def test_neighboring_on_sorted_records_is_the_multiset_relation() -> None:
    """The sorted-records check equals the multiset definition (Counter differences) on every
    pair of small multisets, for both relations."""
    rng = random.Random(5)
    for _ in range(3000):
        a = sorted(rng.choices(range(4), k=rng.randrange(6)))
        b = sorted(rng.choices(range(4), k=len(a) + rng.choice([-1, 0, 0, 1])))
        ca, cb = Counter(a), Counter(b)
        na, nb = len(a), len(b)
        replace = na == nb and sum((ca - cb).values()) <= 1
        small, big = (ca, cb) if na < nb else (cb, ca)
        add_remove = abs(na - nb) == 1 and not (small - big)
        assert _neighboring(tuple(a), tuple(b), "replace") == replace, (a, b)
        assert _neighboring(tuple(a), tuple(b), "add_remove") == add_remove, (a, b)


def _dstar(dbs: list[Db], k: int) -> int | None:
    """d*(S): the first d (1-based) with f_d(S) >= k; None when no database of S reaches k."""
    for d, (_, f, _) in enumerate(dbs, 1):
        if f >= k:
            return d
    return None


def _violations(case: Case, public_halt: bool = True) -> tuple[list[str], Counter]:
    """Every broken statement of Lemma 4.3 / Lemma 4.5 on one case, and what was checked.

    ``public_halt``: ConstructPaths halts on the public size N = |S| + 1 (>= every neighbor's
    size, as dptree runs it with the declared N after the cap); False: on each data set's own
    size (what dptree did before issue 16)."""
    shape, h, t, k, s, neighbors = case
    assert t >= 2 * k  # the lemma's hypothesis
    n_pub = len(s) + 1 if public_halt else None
    dbs = _dbs(s, h, t, n_pub)
    ds = _dstar(dbs, k)
    checked: Counter = Counter()
    bad = []
    for relation, s2 in neighbors:
        dbs2 = _dbs(s2, h, t, n_pub)
        last = len(dbs) if ds is None else ds
        for d in range(1, last + 1):
            if d > len(dbs2):
                bad.append(f"{shape} h={h} t={t} {relation}: S has database {d} (d*={ds}), S' stops at {len(dbs2)}")
                break
            (a, fa, ha), (b, fb, hb) = dbs[d - 1], dbs2[d - 1]
            assert ha == hb
            if abs(fa - fb) > 1:  # Lemma 4.5's sensitivity claim, for d <= d*(S)
                bad.append(f"{shape} h={h} t={t} {relation}: |f_{d}(S) - f_{d}(S')| = {abs(fa - fb)} (d*={ds})")
            if (ds is None or d < ds) and not _neighboring(a, b, relation):  # Lemma 4.3
                bad.append(f"{shape} h={h} t={t} {relation}: S_{d} and S'_{d} not neighbors (d*={ds})")
            checked[(relation, "lemma 4.3" if ds is None or d < ds else "lemma 4.5 at d*")] += 1
        checked[("d*", ds)] += 1
    checked[("cases with d*", ds)] += 1
    return bad, checked


# --------------------------------------------------------------------------- data shapes


def _spread_sample(rng: random.Random, lo: int, hi: int, c: int, k: int) -> list[int] | None:
    """c values in [lo, hi), each at most k - 1 times (None if the range is too small)."""
    size = hi - lo
    if size <= 0 or c > size * (k - 1):
        return None
    if size >= 4 * c:
        return [lo + rng.randrange(size) for _ in range(c)] if size > 10**6 else rng.sample(range(lo, hi), c)
    pool = [v for v in range(lo, hi) for _ in range(k - 1)]
    return rng.sample(pool, c)


def _realise(m: list[int], h: int, hi: int, t: int, k: int, rng: random.Random) -> list[int] | None:
    """A multiset S on [0, hi) (tree of height h) whose ConstructPaths database is m, all
    multiplicities < k: one fall-off group of size c_l beside the path at each level l of m, t
    records below and above everything (trimmed), a t-record tail under the path."""
    counts = Counter(m)
    if not counts or max(counts) >= h:
        return None
    last = max(counts)
    if hi - t <= max(t, hi // 2):
        return None
    p = rng.randrange(max(t, hi // 2), hi - t)  # the path leads towards p
    lo_ok, hi_ok = t, hi - t
    out = list(range(t)) + list(range(hi - t, hi))
    for level, c in counts.items():
        s = h - level - 1
        q = ((p >> s) ^ 1) << s  # the sibling of the path's child at this level
        vals = _spread_sample(rng, max(q, lo_ok), min(q + (1 << s), hi_ok), c, k)
        if vals is None:
            return None
        out += vals
    s = h - last - 1
    base = (p >> s) << s
    tail = _spread_sample(rng, max(base, lo_ok), min(base + (1 << s), hi_ok), t, k)
    if tail is None:
        return None
    return out + tail


def _designed(h: int, t: int, k: int, spread: bool, size: int, rng: random.Random) -> list[int] | None:
    """S_1 spread (multiplicities < k) whose S_2 has ``size`` records: heavy (some level holds
    >= k of them: d*(S) = 2) or spread over many levels (``spread``: d*(S) = 3 when S_3 exists)."""
    top = h - 3  # levels 0 .. h-4: the tail needs a subtree below the last one
    if spread:
        cap = rng.choice([k - 1, max(1, k - 2)])  # fall-off per level below k, with slack or without
        if top * cap < size:
            cap = k - 1
        if top * cap < size:
            return None
        levels = rng.sample(range(top), min(top, max(size // cap + 1, rng.randrange(1, top + 1))))
        room = Counter({lv: cap for lv in levels})
        if sum(room.values()) < size:
            levels, room = list(range(top)), Counter({lv: cap for lv in range(top)})
        m: list[int] = []
        while len(m) < size:
            lv = rng.choice(levels)
            if room[lv]:
                room[lv] -= 1
                m.append(lv)
    else:
        heavy = rng.randrange(top)
        m = [heavy] * k + [rng.randrange(top) for _ in range(size - k)]
    return _realise(m, h, 1 << h, t, k, rng)


def _uniform(h: int, t: int, k: int, rng: random.Random) -> list[int]:
    n = 10 * t + rng.randrange(-2, 20 * t)
    return [rng.randrange(1 << h) for _ in range(n)]


def _clusters(h: int, t: int, k: int, rng: random.Random) -> list[int]:
    out = []
    n = 12 * t + rng.randrange(10 * t)
    while len(out) < n:
        level = rng.randrange(1, h)
        base = rng.randrange(1 << level) << (h - level)
        c = max(1, int(n * rng.random() ** 2 / 2))
        out += [base + rng.randrange(1 << (h - level)) for _ in range(min(c, n - len(out)))]
    return out


def _near_tie(h: int, t: int, k: int, rng: random.Random) -> list[int]:
    """Two sibling subtrees whose weights differ by 0, 1 or 2, under a random node."""
    level = rng.randrange(0, h - 2)
    base = rng.randrange(1 << level) << (h - level)
    half = 1 << (h - level - 1)
    w = 6 * t + rng.randrange(4 * t)
    gap = rng.choice([0, 1, 2])
    left = [base + rng.randrange(half) for _ in range(w)]
    right = [base + half + rng.randrange(half) for _ in range(w + gap)]
    return left + right + [rng.randrange(1 << h) for _ in range(rng.randrange(2 * t))]


def _point_masses(h: int, t: int, k: int, rng: random.Random) -> list[int]:
    out = [rng.randrange(1 << h) for _ in range(11 * t)]
    return out + [rng.randrange(1 << h)] * (k + rng.randrange(3))


def _off_path(s: list[int], h: int, t: int, rng: random.Random) -> list[int]:
    """Points beside S's heavy path (step 4 of ConstructPaths on the trimmed S): adding one raises
    the fall-off at exactly one level by one, or creates a fall-off at a level that had none --
    the change Lemma 4.3 is about. One point per level where the path's node splits, and one at a
    the first, last and a random level of each run of forced levels (where one child is empty)."""
    srt = sorted(s)
    hat = srt[t : len(srt) - t]
    out = []
    level, j = 0, 0
    while level < h:
        sh = h - level
        i0, i1 = bisect.bisect_left(hat, j << sh), bisect.bisect_left(hat, (j + 1) << sh)
        if i1 - i0 <= t:
            break
        u_min, u_max = hat[i0], hat[i1 - 1]
        split = h if u_min == u_max else h - (u_min ^ u_max).bit_length()
        if split > level:  # forced levels level .. split-1: the path follows u_min's prefix
            for lv in {level, split - 1, rng.randrange(level, split)}:
                sib = (u_min >> (h - lv - 1)) ^ 1
                out.append((sib << (h - lv - 1)) + rng.randrange(1 << (h - lv - 1)))
            level, j = split, u_min >> (h - split)
            continue
        half_end = ((2 * j + 1) << (sh - 1))
        w0 = bisect.bisect_left(hat, half_end) - i0
        b = 0 if w0 >= i1 - i0 - w0 else 1
        sib = 2 * j + 1 - b
        out.append((sib << (sh - 1)) + rng.randrange(1 << (sh - 1)))
        level, j = level + 1, 2 * j + b
    return out


def _neighbors(s: list[int], h: int, t: int, rng: random.Random, n_each: int) -> list[tuple[str, list[int]]]:
    """Records to add: points beside the heavy path (a sample of levels), copies of data values,
    their +-1 neighbors, the domain ends, random points; records to remove: a sample of data
    values (smallest and largest included); replacements: a removal with one of the additions."""
    srt = sorted(s)
    distinct = sorted(set(s))
    off = _off_path(s, h, t, rng)
    adds = {0, (1 << h) - 1} | set(rng.sample(off, min(len(off), 4 * n_each)))
    for v in rng.sample(distinct, min(len(distinct), n_each)):
        adds |= {v, max(v - 1, 0), min(v + 1, (1 << h) - 1)}
    adds |= {rng.randrange(1 << h) for _ in range(n_each)}
    removes = {srt[0], srt[-1]} | set(rng.sample(distinct, min(len(distinct), n_each)))
    out: list[tuple[str, list[int]]] = []
    for x in sorted(adds):
        out.append(("add_remove", s + [x]))
    for y in sorted(removes):
        rest = list(s)
        rest.remove(y)
        out.append(("add_remove", rest))
        for x in rng.sample(sorted(adds), min(len(adds), 6)):
            out.append(("replace", rest + [x]))
    return out


HEIGHTS = [5, 8, 20, 24, 31, 64, 1 << 15, 1 << 16]
FAST_HEIGHTS = [5, 8, 20, 31, 64, 1 << 15]
TK = [(2, 1), (4, 2), (6, 3), (8, 4), (9, 4), (12, 5), (20, 10), (50, 25)]  # (t, k), all with t >= 2k
FAST_TK = [(2, 1), (4, 2), (9, 4), (12, 5), (50, 25)]


def _sweep(
    seed: int,
    per_cell: int,
    n_each: int,
    heights: list[int] = HEIGHTS,
    tk: list[tuple[int, int]] = TK,
    only: str = "",
) -> list[Case]:
    """Cases for every height, (t, k) and shape (``only``: shapes whose name starts with it)."""
    rng = random.Random(seed)
    cases: list[Case] = []
    for h in heights:
        for t, k in tk:
            for _ in range(per_cell):
                shapes: list[tuple[str, list[int] | None]] = [
                    ("uniform", _uniform(h, t, k, rng)),
                    ("clusters", _clusters(h, t, k, rng)),
                    ("near-tie", _near_tie(h, t, k, rng) if h > 3 else None),
                    ("point-masses", _point_masses(h, t, k, rng)),
                ]
                # S_2 just above / at / below the 10t halt of step 1 (the add/remove boundary)
                for spread, size in ((False, 10 * t + 1 + rng.randrange(5 * t)), (True, 10 * t + 1 + rng.randrange(5 * t)),
                                     (True, 10 * t), (True, 10 * t + 1)):
                    s = _designed(h, t, k, spread, size, rng)
                    if s is not None:
                        shapes.append((f"designed-{'d3' if spread else 'd2'}-{size - 10 * t:+d}", s))
                for n in (10 * t, 10 * t + 1):  # S_1 at the halt
                    shapes.append((f"uniform-{n - 10 * t:+d}", [rng.randrange(1 << h) for _ in range(n)]))
                for shape, s in shapes:
                    if s and shape.startswith(only):
                        cases.append((shape, h, t, k, s, _neighbors(s, h, t, rng, n_each)))
    return cases


def _run(cases: list[Case]) -> tuple[list[str], Counter]:
    bad: list[str] = []
    total: Counter = Counter()
    for case in cases:
        b, c = _violations(case)
        bad += b
        total += c
    return bad, total


# --------------------------------------------------------------------------- tests


def test_reference_construct_paths_matches_dptree():
    """dptree's ConstructPaths (path jumps over forced levels, prefix sums) equals Algorithm 2
    written step by step, on every shape and height <= 64 of the sweep."""
    for shape, h, t, _k, s, neighbors in _sweep(7, 1, 2, heights=[5, 8, 20, 31, 64]):
        for data in [s] + [x for _, x in neighbors[:6]]:
            assert _dbs(data, h, t) == _reference_dbs(data, h, t), (shape, h, t)


def _fast_cases() -> list[Case]:
    """Every shape and (t, k) of FAST_TK at heights <= 64 (two and three databases), plus the
    designed d* = 3 cases at |X| = 2^(2^15) (four databases)."""
    cases = _sweep(1, 1, 2, heights=[h for h in FAST_HEIGHTS if h <= 64], tk=FAST_TK)
    return cases + _sweep(1, 1, 2, heights=[1 << 15], tk=[(4, 2), (12, 5)], only="designed-d3")


def test_lemma_4_3_brute_force():
    """Lemma 4.3 and Lemma 4.5's sensitivity claim on the fast sample, for add/remove and replace
    neighbors, with ConstructPaths halting on the public size. Coverage floors make sure the
    deep cases (d* = 3, i.e. S_1 and S_2 both spread) are really there. Measured: 183 data sets,
    7,870 neighboring pairs (961 of them with d*(S) = 3, from 21 data sets), 5,191 Lemma 4.3
    comparisons (2,796 replace, 2,395 add/remove)."""
    bad, checked = _run(_fast_cases())
    assert not bad, bad[:5]
    assert checked[("cases with d*", 3)] >= 20 and checked[("d*", 3)] >= 900, checked
    assert checked[("d*", 2)] >= 3000 and checked[("d*", 1)] >= 3000, checked
    assert checked[("replace", "lemma 4.3")] >= 2500 and checked[("add_remove", "lemma 4.3")] >= 2000, checked


@pytest.mark.slow
def test_lemma_4_3_brute_force_wide():
    """The full sweep (another seed): heights up to 2^(2^16), every (t, k) of TK, every shape, more
    neighbors per case. Measured: 503 data sets, 39,264 neighboring pairs (6,591 with d*(S) = 3,
    from 73 data sets), 33,200 Lemma 4.3 comparisons (the same counts since the databases are
    compared as sorted tuples instead of Counters: docs/notes/verification.md, "Suite time")."""
    bad, checked = _run(_sweep(2, 1, 5))
    assert not bad, bad[:5]
    assert checked[("cases with d*", 3)] >= 60 and checked[("d*", 3)] >= 5000, checked


def test_halting_on_the_actual_size_breaks_lemma_4_5_for_add_remove():
    """What dptree did before issue 16: step 1 of ConstructPaths halting on the private |S_d|. At
    |S| = 10t + 1 against its neighbor with 10t records, S has a second database (d*(S) = 2 on
    spread data) and S' has none, so StoppingPoint's query sequences differ in length -- the
    brute-force check reports it; halting on the public size (the default above) does not."""
    cases = [c for c in _sweep(1, 1, 2, heights=[8, 20, 64], tk=[(4, 2), (9, 4)]) if c[0].startswith("uniform-")]
    old = [b for c in cases for b in _violations(c, public_halt=False)[0]]
    assert any("stops at" in b for b in old), old[:3]
    assert not [b for c in cases for b in _violations(c)[0]]


def _planted(monkeypatch: Any, old: str, new: str) -> None:
    """Recompile multisets.path_and_D with one line changed (a planted bug), as ConstructPaths
    (heavypaths.py) calls it."""
    src = inspect.getsource(MSET.path_and_D)
    assert src.count(old) == 1
    ns: dict[str, Any] = {}
    exec(compile(src.replace(old, new), MSET.__file__, "exec"), MSET.__dict__, ns)  # noqa: S102
    monkeypatch.setattr(HP, "path_and_D", ns["path_and_D"])


_PLANT_CASES = {"heights": [8, 20, 64], "tk": [(4, 2), (9, 4)]}


def test_lemma_4_3_check_catches_a_planted_off_by_one(monkeypatch):
    """Teeth: one extra record per fall-off level in ConstructPaths' database D (an off-by-one in
    step 5d) breaks Lemma 4.3 -- a record added beside the heavy path now changes D by two
    elements -- and the brute-force check reports it on the d* = 3 cases."""
    cases = _sweep(1, 1, 2, **_PLANT_CASES)  # type: ignore[arg-type]
    assert not _run(cases)[0]
    _planted(monkeypatch, "add = min(other, total - size)", "add = min(other + 1, total - size)")
    bad, _ = _run(cases)
    assert any("not neighbors" in b for b in bad), bad[:3]


def test_reference_check_catches_a_planted_off_by_one_in_the_path_jump(monkeypatch):
    """Teeth for the reference comparison: jumping one level past the level where a node's points
    separate (an off-by-one in the forced-step shortcut) follows the left child whatever the
    weights and drops a fall-off. The Lemma 4.3 check does not see this one (D then is a
    single level repeated, which is 'neighboring' trivially), the step-by-step reference does."""
    cases = _sweep(1, 1, 2, **_PLANT_CASES)  # type: ignore[arg-type]
    _planted(
        monkeypatch,
        "split = h if u_min == u_max else h - (u_min ^ u_max).bit_length()",
        "split = h if u_min == u_max else h - (u_min ^ u_max).bit_length() + 1",
    )
    differ = sum(_dbs(s, h, t) != _reference_dbs(s, h, t) for _, h, t, _, s, _ in cases)
    assert differ >= len(cases) // 2, (differ, len(cases))
