"""The interior-point family's results as releases: the Release contract, the privacy
statement schema, save/load through ``dptree.load`` with re-validation, the boundary declaration
and the declared parameter constraints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

import dptree
from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.interior.api import InteriorPoint, interior_point
from dptree.interior.calibration import method_requirements
from dptree.interior.quantiles import QuantileRelease, median, quantile
from dptree.interior.thresholds import ThresholdClassifier, learn_threshold
from dptree.io.contract import Release
from dptree.io.release_file import canonical_checksum
from dptree.privacy.boundary import undeclared_fields
from dptree.privacy.statement import REQUIRED

X = [3, 4, 5, 9, 12] * 20
LABELS = [1, 1, 1, 0, 0] * 20

RELEASES: dict[str, Callable[[], Release]] = {
    "exponential": lambda: interior_point(X, lower=0, upper=100, epsilon=1.0, rng=1),
    "auto, declared n": lambda: interior_point(X * 2, lower=0, upper=2**64 - 1, epsilon=1.0, delta=1e-6, n=200, rng=1),
    "treelog": lambda: interior_point(X, lower=0, upper=255, epsilon=1.0, delta=1e-6, method="treelog", n_max=500,
                                      rng=2),
    "heavypaths": lambda: interior_point(X, lower=0, upper=255, epsilon=1.0, delta=1e-6, method="heavypaths",
                                         n=100, rng=3),
    "float domain": lambda: interior_point([0.5, 0.25] * 40, lower=0.0, upper=1.0, epsilon=1.0, rng=4),
    "median": lambda: median(X, lower=0, upper=100, epsilon=1.0, rng=5, n_max=200),
    "quantile": lambda: quantile([0.5, 0.25] * 40, 0.9, lower=-1.0, upper=1.0, epsilon=1.0, rng=6),
    "threshold": lambda: learn_threshold(X, LABELS, lower=0, upper=100, epsilon=1.0, rng=7),
    "threshold treelog": lambda: learn_threshold(X, LABELS, lower=0, upper=100, epsilon=2.0, delta=1e-6,
                                                 method="treelog", rng=8),
    "threshold constant": lambda: learn_threshold([1, 2], [1, 1], lower=0, upper=100, epsilon=1.0, rng=9),
}


def _save(rel: Release, path: Path) -> dict[str, Any]:
    rel.save(path, allow_nonprivate=True)
    return json.loads(path.read_text())


def _rewrite(path: Path, doc: dict[str, Any]) -> None:
    """Write an edited document back with a valid checksum (the checksum is no signature)."""
    doc["checksum"] = canonical_checksum(doc)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_round_trip_through_dptree_load(name: str, tmp_path: Path) -> None:
    rel = RELEASES[name]()
    assert isinstance(rel, Release) and rel.private is False
    doc = _save(rel, tmp_path / "r.json")
    assert doc["kind"] == type(rel).KIND
    back = dptree.load(tmp_path / "r.json")
    assert type(back) is type(rel) and back == rel and back.summary() == rel.summary()
    assert repr(rel) == f"<{rel.summary()}>" and "NOT PRIVATE" in rel.summary()
    assert list(back.to_frame().columns) == list(rel.to_frame().columns)


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_statement_schema_and_boundary(name: str) -> None:
    rel = RELEASES[name]()
    st = rel.privacy
    assert set(REQUIRED) <= set(st) and st["neighbors"] == "add_remove" and st["max_contributions"] == 1
    assert st["replace"].startswith("also holds: replace-one") and st["library"].startswith("dptree ")
    assert "neighbours" not in st and "library_version" not in st
    assert undeclared_fields(rel) == []
    assert set(rel.to_document()) == {"privacy", "parameters", "measurements", "metadata"}


def test_kinds_and_statements_keep_the_old_meaning() -> None:
    assert (InteriorPoint.KIND, QuantileRelease.KIND, ThresholdClassifier.KIND) == (
        "interior_point", "quantile", "threshold")
    em, tree = RELEASES["exponential"](), RELEASES["treelog"]()
    assert "sensitivity 1 under both" in em.privacy["replace"] and em.privacy["guarantee"] == "pure epsilon-DP"
    assert "eps/2" in tree.privacy["replace"] and "group privacy" in tree.privacy["replace"]
    assert tree.privacy["budget_spent"] == {"epsilon": 1.0, "delta": 1e-6}
    assert "neighbors" not in tree.parameters  # the relation is the statement's, not the calibration's


def test_seeded_releases_need_allow_nonprivate(tmp_path: Path) -> None:
    with pytest.raises(ReleaseFileError, match="NOT private"):
        RELEASES["median"]().save(tmp_path / "m.json")
    rel = interior_point(X, lower=0, upper=100, epsilon=1.0)
    assert rel.private is True and "NOT PRIVATE" not in rel.summary()
    rel.save(tmp_path / "p.json")
    assert dptree.load(tmp_path / "p.json").private is True


def _tampered(tmp_path: Path, name: str, edit: Callable[[dict[str, Any]], None]) -> Path:
    path = tmp_path / f"{name}.json"
    doc = _save(RELEASES[name](), path)
    edit(doc)
    _rewrite(path, doc)
    return path


@pytest.mark.parametrize(
    "name,edit,match",
    [
        ("treelog", lambda d: d["parameters"]["calibration"].update(t=5), "calibration"),
        ("treelog", lambda d: d["parameters"].update(n_declared=10**9), "calibration"),
        ("treelog", lambda d: d["parameters"].update(n_declared=None, n_is_upper_bound=False), "needs a declared size"),
        ("treelog", lambda d: d["parameters"].update(n_declared=2.5), "n_declared"),
        ("exponential", lambda d: d["parameters"].update(method="magic"), "unknown method"),
        ("exponential", lambda d: d["parameters"].update(epsilon=1e300), "supported range"),
        ("exponential", lambda d: d["privacy"].update(budget_spent={"epsilon": 0.1, "delta": 0.0}), "statement"),
        ("exponential", lambda d: d["privacy"].update(neighbors="replace"), "statement"),
        ("exponential", lambda d: d["measurements"].update(value=101), "point of the domain"),
        ("exponential", lambda d: d["measurements"].update(bottom=True), "point of the domain"),
        ("float domain", lambda d: d["measurements"].update(value=1), "point of the domain"),
        ("auto, declared n", lambda d: d["parameters"].update(method="heavypaths"), "needs a declared size and delta"),
        ("auto, declared n", lambda d: d["parameters"]["calibration"].update(auto="mine"), "calibration"),
        ("treelog", lambda d: d["parameters"]["calibration"].pop("epsilon_per_change"), "calibration"),
        ("quantile", lambda d: d["parameters"].update(q_used="1/2"), "q_used"),
        ("quantile", lambda d: d["parameters"].update(q=1.5), "q must be"),
        ("median", lambda d: d["privacy"].update(guarantee="(epsilon, delta)-DP"), "statement"),
        ("threshold", lambda d: d["parameters"].update(delta=1e-6), "delta does not match"),
        ("threshold", lambda d: d["measurements"].update(threshold=None, constant=2), "threshold in the domain"),
        ("threshold", lambda d: d["parameters"].update(fraction=0.9), "fraction"),
    ],
)
def test_a_file_that_disagrees_with_its_public_parameters_is_refused(
    tmp_path: Path, name: str, edit: Callable[[dict[str, Any]], None], match: str
) -> None:
    with pytest.raises(ReleaseFileError, match=match):
        dptree.load(_tampered(tmp_path, name, edit))


# --------------------------------------------------------------------------- declared constraints


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: interior_point(X, lower=0, upper=9, epsilon=1.0, beta=0), "beta must be a finite number > 0"),
        (lambda: interior_point(X, lower=0, upper=9, epsilon=1.0, method="best"), "method must be one of"),
        (lambda: interior_point(X, lower=0, upper=9, epsilon=1.0, on_invalid="skip"), "on_invalid must be one of"),
        (lambda: interior_point(X, lower=0, upper=9, epsilon=1.0, run_anyway=1), "run_anyway must be bool"),
        (lambda: interior_point(X, lower=0, upper=9, epsilon=1.0, delta=1.0), "delta must be"),
        (lambda: interior_point(X, lower=0, upper=9, epsilon=1.0, method="treelog", n=10), "needs delta > 0"),
        (lambda: quantile(X, "0.5", lower=0, upper=9, epsilon=1.0), "q must be a finite number >= 0 and <= 1"),
        (lambda: median(X, lower=0, upper=9, epsilon=0), "epsilon must be a finite number > 0"),
        (lambda: learn_threshold(X, LABELS, lower=0, upper=9, epsilon=1.0, fraction=0.6), "fraction must be"),
        (lambda: learn_threshold(X, LABELS, lower=0, upper=9, epsilon=1.0, method="treelog"), "needs delta > 0"),
        (lambda: method_requirements(0, epsilon=1.0, delta=1e-6), "size must be a positive integer"),
        (lambda: method_requirements(2**3000, epsilon=1.0, delta=0.0), "delta must be"),
        (lambda: dptree.interior.calibration.method_requirements_log2(0, epsilon=1.0, delta=1e-6), "height"),
    ],
)
def test_declared_constraints_name_the_parameter_and_the_fix(call: Callable[[], Any], match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        call()


def test_constraints_are_declared_on_the_public_functions() -> None:
    for fn, names in ((interior_point, {"epsilon", "delta", "method", "beta", "n", "n_max", "on_invalid"}),
                      (quantile, {"q", "epsilon", "n", "n_max", "on_invalid"}),
                      (median, {"epsilon", "n", "n_max", "on_invalid"}),
                      (learn_threshold, {"epsilon", "delta", "method", "fraction", "beta", "n", "n_max"}),
                      (method_requirements, {"size", "epsilon", "delta", "beta"})):
        assert names <= set(fn.constraints), fn.__name__  # type: ignore[attr-defined]


def test_huge_domains_still_work() -> None:
    """|X| beyond a float: the size is checked as an integer of any size, not through a float."""
    reqs = method_requirements(2**3000, epsilon=1.0, delta=1e-6)
    assert reqs["exponential"] > 0
    r = interior_point([5] * 50, lower=0, upper=2**3000, epsilon=1.0, rng=1)
    assert 0 <= r.value <= 2**3000
