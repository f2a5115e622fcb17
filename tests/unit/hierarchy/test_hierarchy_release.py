"""hierarchy_counts: baselines (Corollary 2.7), GLS consistency against dense least squares,
exact variances and error bars, non-negative integer post-processing, release round trips."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hier_helpers import flat, linear_map, random_hierarchy
from oracle import dense_gls, incidence

from dptree.errors import DPTreeError, ReleaseFileError
from dptree.hierarchy import HierarchyRelease, load_hierarchy_release
from dptree.hierarchy.api import hierarchy_counts
from dptree.hierarchy.counting import leaf_counts, node_weights
from dptree.hierarchy.structure import Hierarchy
from dptree.noise import discrete_laplace, discrete_laplace_variance, make_source
from dptree.privacy.budget import zcdp_rho_for


def random_rows(h: Hierarchy, rng: np.random.Generator, n: int) -> list[str]:
    leaves = h.leaf_paths()
    p = rng.pareto(1.0, len(leaves)) + 1e-3
    idx = rng.choice(len(leaves), size=n, p=p / p.sum())
    return [leaves[i] for i in idx]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("method", ["laplace", "gaussian"])
def test_consistent_release_equals_dense_gls(seed: int, method: str) -> None:
    h = random_hierarchy(seed, max_depth=4)
    rng = np.random.default_rng(seed)
    rel = hierarchy_counts(random_rows(h, rng, 300), h, epsilon=1.0, delta=1e-5 if method == "gaussian" else 0.0,
                           method=method, rng=seed)
    A, _ = incidence(list(h.parents), list(h.sizes))
    y = np.asarray(rel.measurements["y"], dtype=float)
    var = np.full(h.n_nodes, rel.measurements["noise_variance"])
    expected, cov = dense_gls(A, y, var)
    np.testing.assert_allclose(rel.estimates, expected, rtol=1e-9, atol=1e-8)
    np.testing.assert_allclose(rel.variances, np.diag(cov), rtol=1e-9, atol=1e-10)
    # children sum to parents
    x = rel.estimates
    for j in range(1, h.depth):
        off, offp = h.offsets[j], h.offsets[j - 1]
        sums = np.bincount(h.parents[j], weights=x[off : off + h.sizes[j]], minlength=h.sizes[j - 1])
        has = h.n_children[j - 1] > 0
        np.testing.assert_allclose(sums[has], x[offp : offp + h.sizes[j - 1]][has], atol=1e-8)


def test_noise_scales_follow_corollary_2_7() -> None:
    h = Hierarchy.from_paths(["a/b/c/d", "a/b/c/e", "f"])  # depth 5 (root + 4), irregular
    assert h.depth == 5
    lap = hierarchy_counts(["f"], h, epsilon=0.5, max_contributions=3, consistent=False, rng=1)
    assert lap.privacy["sensitivity"]["l1"] == 15
    assert lap.privacy["noise"]["scale"] == pytest.approx(15 / 0.5, rel=1e-6)
    assert lap.privacy["delta"] == 0.0
    gau = hierarchy_counts(["f"], h, epsilon=1.0, delta=1e-6, method="gaussian", max_contributions=2, rng=1)
    rho = zcdp_rho_for(1.0, 1e-6)
    assert gau.privacy["sensitivity"]["l2_squared"] == 4 * 5
    assert gau.privacy["noise"]["sigma2"] == pytest.approx(20 / (2 * rho), rel=1e-5)
    assert gau.privacy["rho"] == pytest.approx(rho)


def test_baseline_error_grows_like_d_and_sqrt_d() -> None:
    """Table 1 / Corollary 2.7: mRMSE of Laplace is Theta(d/eps), of Gaussian Theta(sqrt(d))."""

    def brooms(depth: int) -> Hierarchy:  # 1000 chains of depth `depth` under the root
        return Hierarchy.from_paths(["/".join(f"c{b}_{i}" for i in range(depth - 1)) for b in range(1000)])

    out = {}
    for method in ("laplace", "gaussian"):
        for d in (2, 8):
            h = brooms(d)
            err = np.concatenate(
                [
                    hierarchy_counts([], h, epsilon=1.0, delta=0.0 if method == "laplace" else 1e-6, method=method, consistent=False, rng=s).counts
                    for s in range(6)
                ]
            )
            out[method, d] = float(np.sqrt((err**2).mean()))
    assert out["laplace", 8] / out["laplace", 2] == pytest.approx(4.0, rel=0.04)
    assert out["gaussian", 8] / out["gaussian", 2] == pytest.approx(2.0, rel=0.04)


def test_variance_reduction_matches_exact_formula() -> None:
    h = random_hierarchy(11, max_depth=5)
    rel = hierarchy_counts([], h, epsilon=1.0, rng=0)
    G = linear_map(h)
    src = make_source(5)
    scale = h.depth / 1.0
    R = 6000
    noise = discrete_laplace(src, scale, R * h.n_nodes).reshape(R, h.n_nodes)
    emp = (noise @ G.T).var(axis=0)
    raw = discrete_laplace_variance(scale)
    predicted = rel.variances.mean() / raw
    measured = emp.mean() / noise.var(axis=0).mean()
    assert measured == pytest.approx(predicted, rel=0.03)
    assert predicted < 0.9  # consistency helps


def test_nonnegative_integer_outputs_and_bias() -> None:
    h = random_hierarchy(2, max_depth=4)
    rng = np.random.default_rng(0)
    rows = random_rows(h, rng, 2000)
    truth = flat(node_weights(leaf_counts(rows, h), h.parents))
    errs = []
    for s in range(30):
        rel = hierarchy_counts(rows, h, epsilon=1.0, nonnegative=True, integer=True, rng=s)
        c = rel.counts
        assert (c >= 0).all() and np.array_equal(c, np.rint(c))
        for j in range(1, h.depth):
            off, offp = h.offsets[j], h.offsets[j - 1]
            sums = np.bincount(h.parents[j], weights=c[off : off + h.sizes[j]], minlength=h.sizes[j - 1])
            has = h.n_children[j - 1] > 0
            np.testing.assert_array_equal(sums[has], c[offp : offp + h.sizes[j - 1]][has])
        assert isinstance(rel.count(""), float) and rel.count("") == c[0]
        errs.append(c - truth)
    bias = np.mean(errs, axis=0)
    zero = truth == 0
    if zero.any():
        assert bias[zero].mean() > 0  # projection onto c >= 0 pushes empty nodes up (documented)


def _children_sum_to_parents(h: Hierarchy, c: np.ndarray) -> bool:
    for j in range(1, h.depth):
        off, offp = h.offsets[j], h.offsets[j - 1]
        sums = np.bincount(h.parents[j], weights=c[off : off + h.sizes[j]], minlength=h.sizes[j - 1])
        has = h.n_children[j - 1] > 0
        if not np.array_equal(sums[has], c[offp : offp + h.sizes[j - 1]][has]):
            return False
    return True


@pytest.mark.parametrize("method", ["laplace", "gaussian"])
def test_integer_without_nonnegative_is_sum_preserving(method: str) -> None:
    """integer=True alone: integer counts, children summing exactly to parents, each count within
    1 of the least-squares estimate, and the root's rounding kept (sum-preserving rounding, not
    node-by-node np.rint, which breaks the sums on almost every tree)."""
    for seed in range(6):
        h = random_hierarchy(5 + seed, max_depth=4)
        rel = hierarchy_counts([], h, epsilon=1.0, delta=0.0 if method == "laplace" else 1e-6, method=method, integer=True, rng=seed)
        c = rel.counts
        assert np.array_equal(c, np.rint(c))
        assert (np.abs(c - rel.estimates) < 1 + 1e-9).all()
        assert _children_sum_to_parents(h, c), seed
    # node-by-node rounding of the same estimates does break the sums (so the check has teeth)
    assert not _children_sum_to_parents(h, np.rint(rel.estimates))


def test_integer_is_refused_with_the_multiplicative_method() -> None:
    h = Hierarchy.from_paths(["a/b", "a/c", "d"])
    with pytest.raises(DPTreeError, match="integer=True does not apply to method='multiplicative'"):
        hierarchy_counts(["a/b"], h, epsilon=1.0, delta=1e-6, method="multiplicative", alpha=0.5, integer=True)


def test_baseline_error_scales_like_one_over_epsilon() -> None:
    """Table 1 / Corollary 2.7: the baselines' error is proportional to 1/epsilon. Measured on
    releases (Monte Carlo): Laplace RMSE at eps = 0.25 is 4x that at eps = 1; the Gaussian's
    follows the (eps, delta) calibration, whose sigma is the analytic Gaussian mechanism's
    (Balle & Wang 2018, computed here independently) to 0.5%, i.e. ~ sqrt(2 ln(1/delta)) / eps."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    h = Hierarchy.from_paths([f"c{b}/x/y" for b in range(400)])  # depth 4, 1601 nodes
    d, delta = h.depth, 1e-6

    def analytic_sigma(eps: float) -> float:
        D = math.sqrt(d)
        f = lambda s: norm.cdf(D / (2 * s) - eps * s / D) - math.exp(eps) * norm.cdf(-D / (2 * s) - eps * s / D) - delta  # noqa: E731
        return brentq(f, 0.01, 1e4)

    out = {}
    for method in ("laplace", "gaussian"):
        for eps in (0.25, 1.0):
            err = np.concatenate(
                [
                    hierarchy_counts([], h, epsilon=eps, delta=0.0 if method == "laplace" else delta, method=method, consistent=False, rng=s).counts
                    for s in range(8)
                ]
            )
            out[method, eps] = float(np.sqrt((err**2).mean()))
    assert out["laplace", 0.25] / out["laplace", 1.0] == pytest.approx(4.0, rel=0.04)
    assert out["laplace", 1.0] == pytest.approx(math.sqrt(2) * d / 1.0, rel=0.04)
    for eps in (0.25, 1.0):
        assert out["gaussian", eps] == pytest.approx(analytic_sigma(eps), rel=0.03)
    ratio = out["gaussian", 0.25] / out["gaussian", 1.0]
    assert ratio == pytest.approx(analytic_sigma(0.25) / analytic_sigma(1.0), rel=0.04)
    assert 3.0 < ratio < 4.0  # ~1/eps (sigma eps grows slowly as eps -> 0 at fixed delta)


def test_round_trip_and_tamper_detection(tmp_path) -> None:  # type: ignore[no-untyped-def]
    h = Hierarchy.from_paths(["US/CA/SF", "US/NY", "FR"], levels=["country", "state", "city"])
    for method, kw in (
        ("laplace", {}),
        ("gaussian", {"delta": 1e-6}),
        ("multiplicative", {"delta": 1e-6, "alpha": 0.5}),
    ):
        rel = hierarchy_counts(["US/NY"] * 10, h, epsilon=1.0, method=method, rng=3, nonnegative=True, **kw)  # type: ignore[arg-type]
        d = json.loads(json.dumps(rel.to_dict()))
        again = HierarchyRelease.from_dict(d)
        np.testing.assert_array_equal(again.counts, rel.counts)
        assert again.privacy == d["privacy"] and d["privacy"]["private"] is False
        with pytest.raises(DPTreeError, match="NOT private"):
            rel.save(tmp_path / "r.json")
        rel.save(tmp_path / "r.json", allow_nonprivate=True, force=True)
        back = load_hierarchy_release(tmp_path / "r.json")
        assert back.count("US/NY") == rel.count("US/NY")
        assert back.ci("US/NY") == pytest.approx(rel.ci("US/NY"))
    bad = dict(d)
    bad["measurements"] = dict(d["measurements"], window_center=[1, 2])
    with pytest.raises(ReleaseFileError):
        HierarchyRelease.from_dict(bad)
    wider = dict(d)
    wider["measurements"] = dict(d["measurements"], window=d["measurements"]["window"] + 5)
    with pytest.raises(ReleaseFileError, match="tampered"):
        HierarchyRelease.from_dict(wider)
    lap = hierarchy_counts(["US/NY"], h, epsilon=1.0, rng=0).to_dict()
    lap["parameters"] = dict(lap["parameters"], epsilon=10.0)
    with pytest.raises(ReleaseFileError, match="tampered"):
        HierarchyRelease.from_dict(lap)
    # the shared loader: dptree.io.release_file.load dispatches on kind "hierarchy"
    from dptree.io.release_file import load

    assert isinstance(load(tmp_path / "r.json"), HierarchyRelease)
    text = (tmp_path / "r.json").read_text().replace('"window":', '"window":1', 1)
    (tmp_path / "t.json").write_text(text)
    with pytest.raises(ReleaseFileError):
        load(tmp_path / "t.json")
    with pytest.raises(ReleaseFileError):
        HierarchyRelease.from_dict({"format": "something else"})
    priv = dict(d)
    priv["privacy"] = {k: v for k, v in d["privacy"].items() if k != "epsilon"}
    with pytest.raises(ReleaseFileError, match="epsilon"):
        HierarchyRelease.from_dict(priv)
    (tmp_path / "junk.json").write_text("{not json")
    with pytest.raises(ReleaseFileError):
        load_hierarchy_release(tmp_path / "junk.json")


def test_private_release_can_be_saved(tmp_path) -> None:  # type: ignore[no-untyped-def]
    h = Hierarchy.from_paths(["a", "b"])
    rel = hierarchy_counts(["a"], h, epsilon=1.0)  # OS randomness
    assert rel.private and rel.privacy["private"] is True
    rel.save(tmp_path / "p.json")
    assert load_hierarchy_release(tmp_path / "p.json").private


def test_to_frame() -> None:
    h = Hierarchy.from_paths(["US/CA", "US/NY", "FR"])
    rel = hierarchy_counts(["US/CA"] * 5, h, epsilon=2.0, rng=0)
    f = rel.to_frame()
    assert list(f.columns) == ["path", "depth", "leaf", "count", "estimate", "stderr", "ci_low", "ci_high"]
    assert len(f) == h.n_nodes and f.loc[f.path == "US/CA", "count"].item() == rel.count("US/CA")
    assert (f.ci_low <= f.ci_high).all() and (f.ci_low >= 0).all()


@pytest.mark.parametrize(
    "kw, words",
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"epsilon": 1.0, "method": "gaussian"}, "delta > 0"),
        ({"epsilon": 1.0, "method": "multiplicative", "alpha": 0.5}, "delta > 0"),
        ({"epsilon": 1.0, "delta": 1.5, "method": "gaussian"}, "delta"),
        ({"epsilon": 1.0, "delta": 1e-6, "method": "multiplicative"}, "alpha"),
        ({"epsilon": 1.0, "delta": 1e-6, "method": "multiplicative", "alpha": 1.0}, r"\(0, 1\)"),
        ({"epsilon": 1.0, "alpha": 0.0}, r"\(0, 1\)"),
        ({"epsilon": 1.0, "alpha": -0.2}, r"\(0, 1\)"),
        ({"epsilon": 1.0, "delta": 1e-6, "method": "multiplicative", "alpha": 0.5, "tau_min": 0.0}, "tau_min"),
        ({"epsilon": 1.0, "delta": 1e-6, "method": "multiplicative", "alpha": 0.5, "tau_min": -3}, "tau_min"),
        ({"epsilon": 1.0, "tau_min": 10.0}, "tau_min"),
        ({"epsilon": 1.0, "method": "median"}, "method"),
        ({"epsilon": 1.0, "max_contributions": 0}, "max_contributions"),
        ({"epsilon": 1.0, "consistent": "yes"}, "consistent"),
    ],
)
def test_bad_parameters(kw, words) -> None:  # type: ignore[no-untyped-def]
    h = Hierarchy.from_paths(["a", "b"])
    with pytest.raises(DPTreeError, match=words):
        hierarchy_counts(["a"], h, rng=0, **kw)


def test_bad_data_types() -> None:
    h = Hierarchy.from_paths(["a", "b"])
    with pytest.raises(DPTreeError):
        hierarchy_counts(42, h, epsilon=1.0, rng=0)
    with pytest.raises(DPTreeError, match="not a leaf"):
        hierarchy_counts(["c"], h, epsilon=1.0, rng=0)
    with pytest.raises(DPTreeError, match="no column"):
        hierarchy_counts(pd.DataFrame({"x": ["a"]}), h, epsilon=1.0, rng=0)
    with pytest.raises(DPTreeError, match="Hierarchy"):
        hierarchy_counts(["a"], "a/b", epsilon=1.0, rng=0)  # type: ignore[arg-type]


def test_empty_data_is_a_valid_release() -> None:
    h = Hierarchy.from_paths(["a", "b"])
    rel = hierarchy_counts([], h, epsilon=1.0, rng=0)
    assert math.isfinite(rel.count("a"))
