"""JointExp (Gillenwater, Joseph & Kulesza, "Differentially Private Quantiles", ICML 2021) on an
integer domain, tie-aware, sampled exactly from float64 log-space tables.

Mechanism. Levels 0 <= q_1 <= ... <= q_m <= 1 (used as k_j / Q, see :func:`_levels`), data S of
n records on [lower, upper]. Output: a non-decreasing sequence o_1 <= ... <= o_m of integers of
[lower, upper], drawn with P(o) proportional to exp(a u(o)) under the counting measure
on such sequences (the exponential mechanism, McSherry & Talwar 2007, a = epsilon' / (2 Delta) with
the utility's sensitivity Delta below: 2 (1 - g) under add/remove-one, 2 under replace-one).

Utility (the paper's, Section 3, with ties). The domain is cut into dptree's rank blocks
(:func:`dptree.interior.selection.rank_blocks`): each distinct data value v is a block of its
own, with B = #{x < v} and c = its multiplicity; the gaps between values are blocks with c = 0.
Output j in a block gets the rank r_j = B + q_j c (a gap: #{x < y}; a tie block: the q_j-point of
the block, so quantiles that fall inside a large tie block can land on it), with r_0 = 0 and
r_{m+1} = n. With targets t_j = q_j n (t_0 = 0, t_{m+1} = n) and e_j = r_j - t_j,

    u(o) = -sum_{j=1}^{m+1} psi(|e_j - e_{j-1}|),

i.e. minus the distance between the number of records between consecutive outputs and its target
(q_j - q_{j-1}) n, each passed through psi: psi(d) = d up to C = A / a ranks (a = epsilon' /
(2 Delta), A = :func:`clamp_nats` = 4 (36 + ln |X|) nats), then linear pieces of slopes 1/4, 1/16, ... each
adding C (piece k covers (C (4^k - 1) / 3, C (4^(k+1) - 1) / 3]). psi is 1-Lipschitz, concave and
increasing, and psi(n) <= 31 C for any n < 2^62, so no float log-value grows with n (below) while
far-off outputs still lose weight (a flat clamp would not: when no output lies within C of its
targets, e.g. a target inside a large tie block, a clamp makes every output equally bad and the
longest empty gap wins). Without ties and for terms below C this is exactly the paper's utility.

Sensitivity (proof). Let g_j = q_j - q_{j-1}, j = 1..m+1 (q_0 = 0, q_{m+1} = 1; the levels as
used), g = min_j g_j. psi is 1-Lipschitz, so |du| <= TV(de) = sum_{j=1}^{m+1} |de_j - de_{j-1}|
for the change de of e between neighbours (de_0 = 0).
*Add/remove-one: Delta = 2 (1 - g).* Add a record x (removal is the pair read backwards). Ranks
move by dr_j = [x < o_j] + q_j [x = o_j] (in x's value block, or at the gap point x, which becomes
a block of c = 1, B stays and c grows by 1), targets by dt_j = q_j (n -> n + 1), and r_{m+1},
t_{m+1} by 1 each. With o_1..o_i < x, o_{i+1}..o_k = x, o_{k+1}..o_m > x: de_j = -q_j for j <= i,
0 for i < j <= k, 1 - q_j for j > k (de_{m+1} = 0). Without an output at x (k = i) the increments
are -g_j for j <= i, 1 - g_{i+1} at j = i + 1 and -g_j after, so TV = q_i + (1 - g_{i+1}) +
(1 - q_{i+1}) = 2 (1 - g_{i+1}) <= 2 (1 - g); with outputs at x (k > i) the block contributes q_i
at j = i + 1 and 1 - q_{k+1} at j = k + 1 instead: TV = 2 (1 - (q_{k+1} - q_i)) <= 2 (1 - 2 g).
Attained with x in the slot of the smallest gap (the brute force finds it): the paper's
add/remove sensitivity, which the tie-aware rank (a block's q_j-point) never raises.
*Replace-one: Delta = 2.* t is fixed and dr is the difference of two sequences that both rise
from 0 (j = 0) to 1 (j = m + 1): TV <= 2, attained with an output strictly between the two
records. psi changes neither bound, and :func:`sensitivity` takes g from the rounded levels k_j / Q.
No cap on the records: a cap at the declared size turns the add/remove pairs there into replace
pairs, of sensitivity 2 (docs/notes/quantiles.md, "JointExp: sensitivity and proof"), so every
record enters; the declared size bounds the cell check (``declared_size``) and sets the dither.
``tests/unit/quantiles/test_joint.py`` brute-forces both sensitivities and the e^epsilon ratio of
the exact laws on tiny data sets, with planted calibrations that are too small.

Sampling (the paper's Algorithm 2 in log space). Forward tables over (output j, block b): the
log-weight of all prefixes o_1..o_j ending with a run of k outputs in b. A run of k outputs in a
block of length L has C(L + k - 1, k) placements (the counting measure); value blocks have L = 1.
The transition sum over earlier blocks is split by the sign of the distance and the pieces of
psi (on each the kernel is one exponential, and each block's window is a range of earlier blocks)
and read from range-sum tables (disjoint sparse tables built by doubling, only as deep as the
longest window: two entries per window) whose entries are anchored at an element of the window
that reads them, so no float quantity exceeds the bound M of :func:`float_slack` whatever n is.
O(m N log N log(n / C)) time for the transitions plus O(m^2 G) for the runs in the G gap blocks
longer than 1, O(m N + N log N) memory, N <= 2 len(values) + 1 blocks. Backward sampling then
draws each block and each run length with :func:`dptree.noise.sample_exponential_index` (exact,
given the float log-weights written as integer mantissas times powers of a rational base: no
candidate ever gets probability 0) and the run's points as a uniform multiset (Floyd's algorithm
on exactly uniform integers).

Dithered ties (``dither=K``; dptree's addition, not in the paper). Before the mechanism each
record x is mapped to the key x K + u, u drawn uniformly from [0, K) independently per record
(:func:`dptree.noise.uniform_below`), JointExp runs on the expanded domain of |X| K points, and each
output o is mapped back to floor(o / K). K = 2^k is public (:func:`dither_factor`: the smallest
power of two >= 4 n for the declared size n, halved while |X| K >= 2^62). Why: every point becomes
K points, so the measure of gaps against data is unchanged, but a tie block of c records becomes
c (mostly) distinct keys with gaps between them, so two consecutive targets inside one block can
both be met and an output anywhere in the block maps back to the tied value (tie-aware error 0);
without it, an output in a block is ranked at its q_j-point and the outputs shift by one place
(docs/notes/quantiles_benchmark.md, sections 5 and 6). Residual key collisions are ties that the tie-aware
utility handles. Privacy (proof). Write the release as M(D) = J(T_U(D)) with U the per-record
draws and J the JointExp release, so P[M(D) = o] = E_U P[J(T_U(D)) = o]. Add/remove: for
D' = D + {x} couple the draws of the common records; for every value of the draws, T_U(D') =
T_U(D) + {x K + u_x}, an add/remove pair of J, so P[J(T_U(D')) = o] <= e^epsilon P[J(T_U(D)) = o]
and back; averaging over U (and u_x, which only one side uses) keeps both inequalities. Replace x
by x' likewise gives replace pairs of J. So M keeps J's epsilon under the relation J is priced
for (add/remove at 2 (1 - g), replace at 2); the map back floor(o / K) is post-processing. The
draws must not depend on anything but K (not on the record's rank or the data size): ``tests/unit/quantiles/
test_joint.py`` computes the exact law of M by brute force (n <= 3, K = 2, every dither outcome)
and checks the e^epsilon ratio over neighbours, and that it catches a planted dither that depends
on the data size; ``tests/statistical/test_joint_law.py`` checks the sampled law against it.

Floating point. Every table entry is computed within a relative error rho of its exact value and
every weight handed to the sampler within eta (:func:`float_slack`), so each of the <= m draws has
conditional probability within exp(+-2 (rho + eta)) of the exact sequential sampler's, whose
product is the exponential mechanism's law. The release is therefore (epsilon' + 4 m (rho + eta))-DP;
the mechanism runs at epsilon' = epsilon - 4 m (rho + eta), computed from public m and |X| only,
so the stated epsilon holds.

Zero probabilities. No output may have probability 0 under one data set and not under a
neighbour. Every weight is positive in exact arithmetic and is never rounded to 0: the sampler
gets mantissas times powers of a base, and each term's log-weight is at least -31 a C (psi keeps
the floating-point range bounded). A per-draw floor max(w_i, c max_k w_k) would keep one draw's
e^epsilon ratio but break the telescoping of the m conditionals into the joint law; none is used.
"""

from __future__ import annotations

import math
from fractions import Fraction
from numbers import Integral, Real
from typing import Any, NamedTuple

import numpy as np

from dptree._validation import InstanceOf, Interval, validate_params
from dptree.errors import InvalidParameterError
from dptree.noise import RandomSource, exp_lower_rational, sample_exponential_index, uniform_below, uniform_int
from dptree.quantiles.dither import dither_factor, dither_keys
from dptree.quantiles.logsums import Layout, lae, range_sums, range_tables

__all__ = ["JOINT_MAX_CELLS", "clamp_nats", "dither_factor", "float_slack", "joint_exponential", "joint_statement",
           "sensitivity"]

#: refuse when m * (N + 1) exceeds this, N the declared size (else len(values); m <= 20 at N = 10^5;
#: data beyond the declared size run past it). At the limit a dithered
#: release took 7.3 s CPU / 238 MiB traced (m = 20, n = 10^5) and 11 s / 1.2 GiB (m = 2, n = 1.05e6)
#: on the project's 2-core machine (docs/notes/quantiles_benchmark.md, section 7.3)
JOINT_MAX_CELLS = 2_100_000
_CLAMP_NATS, _CLAMP_FACTOR = 36.0, 4.0  # see clamp_nats
_MAX_DENOMINATOR = 1 << 20  # levels are used as k / Q with Q = lcm of their denominators, or 2^20
_MAX_ROWS = 1 << 40  # scaled ranks Q * n stay below 2^62

_INT = [InstanceOf(Integral, description="an integer")]
_EPS = [Interval(Real, 0, None, closed="neither", hint="pass e.g. epsilon=1.0")]


_RELATION = {"add_remove": "add/remove-one", "replace": "replace-one"}


def joint_statement(dither: int | None = None, levels: Any = None, neighbors: str = "add_remove") -> dict[str, Any]:
    """The privacy statement of :func:`joint_exponential` run with ``dither`` = K (public) at the
    ``levels`` under ``neighbors``, with its sensitivity (:func:`sensitivity`). ``dither`` None: of an
    undithered release; ``levels`` None: of one capped at the declared size and priced at 2 under
    both relations (files that state either load under it)."""
    st: dict[str, Any] = {
        "mechanism": ("JointExp (Gillenwater, Joseph & Kulesza 2021): exponential mechanism over sorted "
                      "integer m-tuples, utility -sum_j psi(|e_j - e_{j-1}|), e_j = r_j - q_j n, "
                      "r_j = #{x < o_j} + q_j #{x = o_j}; counting measure; exact sampling"),
        "neighbors": "add/remove-one and replace-one",
        "sensitivity": 2,
        "guarantee": "pure epsilon-DP (float64 error folded into epsilon, see float_slack)",
    }
    if levels is not None:
        delta = sensitivity(levels, neighbors)
        st["neighbors"] = _RELATION[neighbors]
        st["sensitivity"] = int(delta) if delta.denominator == 1 else float(delta)
        st["sensitivity_rule"] = ("2 (1 - g) under add/remove-one, g = min(q_1, q_j - q_{j-1}, 1 - q_m) of the levels "
                                  "as used (k_j / Q); 2 under replace-one; every record enters (no cap at the "
                                  "declared size)")
    if dither is not None:
        st["dithering"] = ("each record x enters as the key x K + u, u uniform on [0, K) drawn per record; outputs "
                           "mapped back to floor(o / K); K = dither_factor(declared n, |X|), a public power of two "
                           "(1: none); a per-record independent map keeps add/remove and replace neighbours")
        st["dither_factor"] = int(dither)
    return st


def clamp_nats(domain_size: int) -> float:
    """A = a C: the log-weight of a term where psi leaves its linear start, 4 (36 + ln |X|) nats
    (the factor 4 keeps psi linear far enough that JointExp's law matches the paper's where it is
    accurate; measured in docs/notes/quantiles_benchmark.md)."""
    return _CLAMP_FACTOR * (_CLAMP_NATS + math.log(domain_size))


def float_slack(m: int, domain_size: int, epsilon: float) -> tuple[float, float]:
    """(4 m (rho + eta), M): the epsilon the float64 computation may cost -- rho bounds the relative
    error of every computed table entry, eta that of every weight handed to the sampler, and each
    of the <= m draws of each of two neighbours errs by at most 2 (rho + eta) -- and the bound M on
    the magnitude of every float log-value.

    |log-value| <= M = 31 (m + 2) A' + m ln(|X| + m) + 64, A' = max(A, epsilon / 2), A =
    :func:`clamp_nats`: a prefix weight is a sum of at most (|X| + m)^m terms each in
    [exp(-31 (m + 1) a C), 1] (a C <= A': C >= one scaled rank, a = epsilon' / (2 Delta) <= epsilon / 2
    as Delta >= 1), and an anchored
    range sum adds at most 3 a C (a window of piece k is 3 C 4^k wide, its slope a / 4^k).
    Each float64 operation (add, logaddexp, log, exp) errs by at most 2 ulp of a magnitude <= M,
    i.e. 2^-51 (M + 1) (the in-place logaddexp: :func:`dptree.quantiles.logsums.lae`); an entry is
    the end of a chain of at most m (128 + m + 32) operations (m steps, each <= 62 table levels,
    one query and <= 62 combinations of the pieces' and sides' sums, a multiply-add and a logaddexp
    each, within 2 * 64; <= m run extensions and a few more), so
    rho <= m (m + 160) (M + 1) 2^-50 (twice the per-operation bound for margin). A sampler weight
    (an integer mantissa in [2^38 / e, 2^38] times a rational base to an integer power) errs by
    eta <= (M + 4) 2^-50 + 2^-37 (the mantissas' int64 sum stays below 2^62 for N < 2^23 blocks).
    Depends on public quantities only.
    """
    ac = max(clamp_nats(domain_size), epsilon / 2)
    big_m = 31 * (m + 2) * ac + m * math.log(domain_size + m) + 64.0
    rho = m * (m + 160) * (big_m + 1.0) * 2.0**-50
    eta = (big_m + 4.0) * 2.0**-50 + 2.0**-37
    return 4 * m * (rho + eta), big_m


def _levels(qs: np.ndarray) -> tuple[int, list[int]]:
    """(Q, [k_j]): the levels as k_j / Q, Q the lcm of their denominators <= 1000
    (:func:`dptree.interior.selection.quantile_level`), or 2^20 with rounding if that is larger."""
    fr = [Fraction(float(q)).limit_denominator(1000) for q in qs]
    den = 1
    for f in fr:
        den = den * f.denominator // math.gcd(den, f.denominator)
        if den > _MAX_DENOMINATOR:
            den = _MAX_DENOMINATOR
            ks = [round(float(q) * den) for q in qs]
            return den, [max(ks[: i + 1]) for i in range(len(ks))]
    return den, [int(f * den) for f in fr]


def sensitivity(qs: Any, neighbors: str = "add_remove") -> Fraction:
    """The utility's sensitivity Delta (module docstring), exact, for the levels as used (k_j / Q,
    :func:`_levels`): 2 (1 - g) under add/remove-one, g = min(q_1, q_j - q_{j-1}, 1 - q_m) (1 at
    m = 1 and q = 1/2, 1.6 at the levels i/5), 2 under replace-one. Public: the levels only."""
    if neighbors == "replace":
        return Fraction(2)
    if neighbors != "add_remove":
        raise InvalidParameterError("neighbors must be 'add_remove' or 'replace'")
    den, ks = _levels(np.asarray(qs, dtype=np.float64).ravel())
    if not ks:
        raise InvalidParameterError("qs must be a non-empty sorted array of levels in [0, 1]")
    gap = min(b - a for a, b in zip([0] + ks, ks + [den]))
    return Fraction(2 * (den - gap), den)


def _blocks(values: np.ndarray, counts: np.ndarray, span: int) -> tuple[np.ndarray, ...]:
    """(start, length, below, count) of the rank blocks of [0, span) (offsets), in order."""
    v, c = values, counts
    below = np.concatenate([[0], np.cumsum(c)])
    gap_start = np.concatenate([[0], v + 1])
    gap_len = np.concatenate([v, [span]]) - gap_start
    k = v.size
    start = np.empty(2 * k + 1, dtype=np.int64)
    length = np.empty(2 * k + 1, dtype=np.int64)
    blow = np.empty(2 * k + 1, dtype=np.int64)
    cnt = np.zeros(2 * k + 1, dtype=np.int64)
    start[0::2], length[0::2], blow[0::2] = gap_start, gap_len, below
    start[1::2], length[1::2], blow[1::2], cnt[1::2] = v, 1, below[:-1], c
    keep = length > 0
    return start[keep], length[keep], blow[keep], cnt[keep]


def _draw(src: RandomSource, logw: np.ndarray) -> int:
    """Index i with probability exactly proportional to the weight represented for exp(logw[i]):
    an integer mantissa of 38 bits times (q/p)^r_i for the rational base p/q <= e (never 0).

    Two exact stages: the exponent r with weight (sum of the mantissas with that r) (q/p)^r
    (:func:`dptree.noise.sample_exponential_index`), then an index among those with weight its
    mantissa (an exactly uniform integer below their int64 sum)."""
    p, q = exp_lower_rational(1.0)
    lnb = math.log(p) - math.log(q)
    live = np.flatnonzero(np.isfinite(logw))  # -inf: a run that cannot exist (before the first block)
    d = np.max(logw[live]) - logw[live]
    r = np.floor(d / lnb)
    f = np.clip(d - r * lnb, 0.0, lnb)
    mant = np.rint(np.ldexp(np.exp(-f), 38)).astype(np.int64)
    exps, group = np.unique(r.astype(np.int64), return_inverse=True)
    sums = np.zeros(exps.size, dtype=np.int64)
    np.add.at(sums, group, mant)
    g = sample_exponential_index(src, sums.tolist(), exps.tolist(), (p, q))
    members = np.flatnonzero(group == g)
    cum = np.cumsum(mant[members])
    pick = int(uniform_below(src, int(cum[-1]))[0])
    return int(live[members[np.searchsorted(cum, pick, side="right")]])


def _multiset(src: RandomSource, start: int, length: int, k: int) -> list[int]:
    """A uniform non-decreasing k-sequence of [start, start + length): stars and bars over an exactly
    uniform k-subset of {0, ..., length + k - 2} (Floyd's algorithm)."""
    if length == 1:
        return [start] * k
    total = length + k - 1
    chosen: set[int] = set()
    for j in range(total - k, total):
        t = uniform_int(src, 0, j)
        chosen.add(j if t in chosen else t)
    return [start + s - i for i, s in enumerate(sorted(chosen))]


@validate_params({"lower": _INT, "upper": _INT, "epsilon": _EPS})
def joint_exponential(values: np.ndarray, counts: np.ndarray, qs: np.ndarray, *, lower: int, upper: int,
                      epsilon: float, rng: RandomSource, dither: int = 1, neighbors: str = "add_remove",
                      declared_size: int | None = None) -> np.ndarray:
    """m sorted integer points of [lower, upper] estimating the levels ``qs`` jointly (JointExp).

    ``values``: sorted distinct integers of [lower, upper]; ``counts``: their multiplicities (>= 1);
    ``qs``: sorted levels in [0, 1]; ``rng``: a random source of :mod:`dptree.noise`.
    epsilon-DP under ``neighbors`` (add/remove-one at the sensitivity 2 (1 - g), replace-one at 2:
    :func:`sensitivity`, module docstring: utility, proof, float slack). Utility (exponential
    mechanism, McSherry & Talwar 2007): with probability >= 1 - e^-t, u(o) >= max u -
    (2 Delta / epsilon')(m ln(|X| + m) + t).
    ``declared_size``: a public N; the cell limit is then checked against m (N + 1), not the data,
    and larger data run anyway (time and memory grow with their distinct keys). None: checked
    against len(values) (distinct keys), not public: for callers whose data are public. The other
    refusals depend on m, |X|, epsilon and ``dither`` only, but one: over 2^40 records.
    ``dither``: K of the dithered ties (module docstring), a power of two from public quantities
    (:func:`dither_factor`); 1 runs JointExp on the values themselves.
    """
    lo, hi = int(lower), int(upper)
    span = hi - lo + 1
    if span < 1 or span >= 1 << 62:
        raise InvalidParameterError("need lower <= upper and upper - lower < 2^62")
    qv = np.asarray(qs, dtype=np.float64).ravel()
    m = qv.size
    if m == 0 or not np.all((qv >= 0) & (qv <= 1)) or np.any(np.diff(qv) < 0):
        raise InvalidParameterError("qs must be a non-empty sorted array of levels in [0, 1]")
    v = np.asarray(values, dtype=np.int64).ravel() - lo
    c = np.asarray(counts, dtype=np.int64).ravel()
    if v.size != c.size or np.any(c < 1) or np.any(np.diff(v) <= 0) or (v.size and (v[0] < 0 or v[-1] >= span)):
        raise InvalidParameterError("values must be sorted distinct integers of [lower, upper] with counts >= 1 "
                                    "(group and clamp the data first)")
    delta = sensitivity(qv, neighbors)
    kd = int(dither)
    if kd < 1 or kd & (kd - 1) or span * kd >= 1 << 62:
        raise InvalidParameterError("dither must be a power of two K with (upper - lower + 1) K < 2^62: use "
                                    "dither_factor(n, upper - lower + 1)")
    n = int(c.sum())
    if n > _MAX_ROWS:
        raise InvalidParameterError("JointExp supports at most 2^40 records: use method='approx' or 'tree'")
    if kd > 1:
        v, c = dither_keys(v, c, kd, uniform_below(rng, kd, size=n) if n else np.empty(0, dtype=np.int64))
        span *= kd
    if m * ((v.size if declared_size is None else int(declared_size)) + 1) > JOINT_MAX_CELLS:
        raise InvalidParameterError(f"JointExp with {m} levels exceeds its size limit ({JOINT_MAX_CELLS:,} cells "
                                    "= levels x (distinct values + 1)): ask for fewer levels or use method='approx'")
    slack, _ = float_slack(m, span, float(epsilon))
    if slack > float(epsilon) / 20:
        raise InvalidParameterError(f"JointExp with {m} levels cannot bound its float64 error within epsilon/20: "
                                    "ask for fewer levels or use method='approx'")
    return lo + _sample(v, c, qv, span, float(epsilon) - slack, delta, rng) // kd


_PIECES = 31  # psi's linear pieces: piece k covers scaled distances (s_k, s_{k+1}], s_31 > 2^62


def _breaks(clamp: int) -> list[int]:
    """s_0 = 0 < s_1 < ... < s_31: piece k of psi covers distances (s_k, s_{k+1}], s_k = C (4^k - 1) / 3."""
    return [clamp * ((1 << (2 * k)) - 1) // 3 for k in range(_PIECES + 1)]


def _psi(d: np.ndarray, clamp: int) -> np.ndarray:
    """psi(d) = k C + (d - s_k) / 4^k on piece k: 1-Lipschitz, concave, psi(d) = d up to C; d >= 0."""
    br = np.array([min(b, (1 << 62)) for b in _breaks(clamp)], dtype=np.int64)
    k = np.maximum(np.searchsorted(br, d, side="left") - 1, 0)
    return k * float(clamp) + (d - br[k]).astype(np.float64) / np.ldexp(1.0, 2 * k)


class _Tables(NamedTuple):
    """The forward tables of :func:`_forward` and what the backward draws need."""

    start: np.ndarray
    length: np.ndarray
    rank: list[np.ndarray]
    targets: list[int]
    a1: np.ndarray
    h: np.ndarray
    cum: np.ndarray
    scale: float
    clamp: int

    def term(self, d: np.ndarray) -> np.ndarray:
        """The log-weight -a psi(|d|) of a scaled rank distance d (module docstring)."""
        return -self.scale * _psi(np.abs(np.asarray(d, dtype=np.int64)), self.clamp)

    def end(self) -> np.ndarray:
        """log-weights of the last output's block: h[m] plus the term of the gap above it."""
        m = len(self.targets) - 2
        return self.h[m] + self.term(self.rank[m] - self.targets[m])


def _transition(x: np.ndarray, prev: np.ndarray, y: np.ndarray, clamp: int, scale: float) -> np.ndarray:
    """log sum_{b' < b} exp(prev[b'] - scale psi(|y_b - x_b'|)) for every b: per piece of psi and side,
    an anchored range-sum table with that piece's slope (on a window of one piece the kernel is one
    exponential); tables are built only for the pieces some window uses, and only up to the longest
    window's length. x and y are non-decreasing, so each window's ends are too."""
    nb = x.size
    idx = np.arange(nb)
    acc = np.full(nb, -np.inf)
    scratch = np.empty(nb)
    br = _breaks(clamp)
    top = max(int(y.max()) - int(x.min()), int(x.max()) - int(y.min()))
    cuts: dict[tuple[int, int], np.ndarray] = {}

    def cut(side: int, k: int) -> np.ndarray:
        """First index of x past the boundary between pieces k - 1 and k on a side (shared by both)."""
        if (side, k) not in cuts:
            d = min(br[k], 1 << 62)
            if side < 0:
                cuts[side, k] = np.searchsorted(x, y + d, side="right")
            else:
                cuts[side, k] = np.searchsorted(x, y - d, side="right" if k == 0 else "left")
        return cuts[side, k]

    lay = Layout(x, nb.bit_length())  # wide enough for any window of the nb blocks
    for k in range(_PIECES):
        if br[k] > top:
            break
        slope = scale / float(1 << (2 * k))
        const = -scale * (k * clamp - br[k] / float(1 << (2 * k)))
        # below: d = y - x in piece k (d = 0 counts here); above: d = x - y in piece k
        for lo, hi, sign in ((cut(1, k + 1), cut(1, k), 1), (cut(-1, k), cut(-1, k + 1), -1)):
            hi = np.minimum(hi, idx)
            lo = np.minimum(lo, hi)
            size = hi - lo
            count = int(size.max()).bit_length()
            if count:
                coef = sign * slope
                part = range_sums(range_tables(lay, prev, coef, count), x, lo, size, y, coef)
                part += const
                lae(acc, part, acc, scratch)
        cuts.pop((1, k), None)  # the next piece needs only the cuts k + 1 and k + 2 of each side
        cuts.pop((-1, k), None)
    return acc


def _forward(v: np.ndarray, c: np.ndarray, qv: np.ndarray, span: int, eps: float, delta: Fraction) -> _Tables:
    """The forward tables (module docstring) of the exponential mechanism at ``eps`` for a utility of
    sensitivity ``delta`` (ranks): a = eps / (2 delta); offsets in [0, span)."""
    m = qv.size
    den, ks = _levels(qv)
    start, length, below, cnt = _blocks(v, c, span)
    nb = start.size
    n = int(c.sum())
    scale = float(Fraction(eps) / (2 * delta * den))  # a / Q, one rounding: log-weight per scaled rank unit
    clamp = max(1, int(math.floor(clamp_nats(span) / scale)))  # C in scaled ranks, >= 1
    targets = [0] + [k * n for k in ks] + [den * n]  # scaled t_0..t_{m+1}
    levels_k = [0] + ks + [den]
    rank = [den * below + k * cnt for k in levels_k[: m + 1]]  # rank[j][b], j = 0..m (rank[0] unused)
    loglen = np.log(length.astype(np.float64))
    gaps = np.flatnonzero(length > 1)
    kk = np.arange(1, m + 1, dtype=np.float64)[:, None]
    grow = np.log((length[gaps].astype(np.float64) + kk - 1) / kk)  # grow[k - 1]: log((L + k - 1) / k)

    def term(d: np.ndarray) -> np.ndarray:
        return -scale * _psi(np.abs(d), clamp)

    a1 = np.empty((m + 1, nb))  # a1[j, b]: runs of length 1 at j (a new block entered)
    h = np.empty((m + 1, nb))  # h[j, b]: all runs ending at j in b
    cum = np.zeros((m + 1, nb))  # cum[j, b]: sum of the stay terms of b up to j
    runs = np.full((m + 1, gaps.size), -np.inf)  # runs[k, g]: current log-weight of a run of length k in gap g
    for j in range(1, m + 1):
        dt = targets[j] - targets[j - 1]
        y = rank[j] - dt
        if j == 1:
            a1[1] = loglen + term(y)
        else:
            a1[j] = loglen + _transition(rank[j - 1], h[j - 1], y, clamp, scale)
        stay = term(rank[j] - rank[j - 1] - dt) if j > 1 else np.zeros(nb)
        cum[j] = cum[j - 1] + stay
        # runs: value blocks and gaps of length 1 keep one running sum; longer gaps keep every length
        h[j] = a1[j] if j == 1 else np.logaddexp(a1[j], h[j - 1] + stay)
        if gaps.size:
            runs[2: j + 1] = runs[1:j] + stay[gaps] + grow[1:j]
            runs[1] = a1[j, gaps]
            top = runs[1: j + 1].max(axis=0)
            h[j, gaps] = top + np.log(np.exp(runs[1: j + 1] - top).sum(axis=0))
    return _Tables(start, length, rank, targets, a1, h, cum, scale, clamp)


def _sample(v: np.ndarray, c: np.ndarray, qv: np.ndarray, span: int, eps: float, delta: Fraction,
            src: RandomSource) -> np.ndarray:
    """The backward draws (the paper's Algorithm 2): the last output's block, the length of its run,
    its points; then the block before the run, and so on. Offsets in [0, span)."""
    t = _forward(v, c, qv, span, eps, delta)
    m = qv.size
    out = np.empty(m, dtype=np.int64)
    j, nxt = m, -1
    while j >= 1:
        if nxt < 0:
            logw = t.end()
        else:
            logw = t.h[j, :nxt] + t.term(t.rank[j + 1][nxt] - t.rank[j][:nxt] - (t.targets[j + 1] - t.targets[j]))
        b = _draw(src, logw)
        ks = np.arange(1, j + 1)
        lw = t.a1[j - ks + 1, b] + t.cum[j, b] - t.cum[j - ks + 1, b]
        if t.length[b] > 1:
            lw = lw + np.concatenate([[0.0], np.cumsum(np.log((t.length[b] + ks[1:] - 1) / ks[1:]))])
        k = int(ks[_draw(src, lw)])
        out[j - k: j] = _multiset(src, int(t.start[b]), int(t.length[b]), k)
        j, nxt = j - k, b
    return out
