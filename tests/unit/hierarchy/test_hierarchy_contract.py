"""The hierarchy release on the shared contract -- a CountRelease of kind "hierarchy"
loaded by dptree.load, its statement in the one schema (make_statement / read_statement), files
written before the schema ("neighbours", "library_version") still loading with the same answers,
and the declared parameter constraints."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import dptree
from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.hierarchy import HierarchyRelease, load_hierarchy_release
from dptree.hierarchy.api import hierarchy_counts
from dptree.hierarchy.structure import Hierarchy
from dptree.io.contract import CountRelease
from dptree.privacy.statement import REQUIRED, library

LEGACY = Path(__file__).parent / "legacy"
H = Hierarchy.from_paths(["US/CA", "US/NY", "FR"], levels=["country", "state"])

#: (file, count("US"), ci("US")) as the code before the schema answered them on these files
OLD_ANSWERS = {
    "laplace.json": (3.7499999999999996, (0.0, 16.44511710619342)),
    "gaussian.json": (3.25, (0.0, 13.386197203033971)),
    "multiplicative.json": (90.0, (0.0, 90.0)),
}


def test_a_count_release_registered_with_the_one_loader(tmp_path: Path) -> None:
    rel = hierarchy_counts(["US/CA"] * 3, H, epsilon=1.0, rng=1)
    assert isinstance(rel, CountRelease) and HierarchyRelease.KIND == "hierarchy"
    assert set(rel.to_document()) == {"privacy", "parameters", "measurements", "metadata"}
    rel.save(tmp_path / "r.json", allow_nonprivate=True)
    for back in (dptree.load(tmp_path / "r.json"), HierarchyRelease.load(tmp_path / "r.json"),
                 load_hierarchy_release(tmp_path / "r.json"), HierarchyRelease.from_document(rel.to_document())):
        assert isinstance(back, HierarchyRelease)
        np.testing.assert_array_equal(back.counts, rel.counts)
        assert back.privacy == rel.privacy and back.metadata == rel.metadata
    assert repr(rel) == f"<{rel.summary()}>"


@pytest.mark.parametrize("method, kw", [("laplace", {}), ("gaussian", {"delta": 1e-6}),
                                        ("multiplicative", {"delta": 1e-6, "alpha": 0.5})])
def test_the_statement_is_in_the_one_schema(method: str, kw: dict) -> None:  # type: ignore[type-arg]
    rel = hierarchy_counts(["FR"], H, epsilon=1.0, method=method, max_contributions=2, rng=1, **kw)
    p = rel.privacy
    assert list(p)[:4] == list(REQUIRED[:4]) and list(p)[-2:] == ["library", "private"]
    assert p["neighbors"] == "add_remove" and p["max_contributions"] == 2 and p["library"] == library()
    assert "neighbours" not in p and "library_version" not in p
    assert "DP" in p["guarantee"] or "zCDP" in p["guarantee"]
    assert "one person's records (at most 2" in rel.summary()


@pytest.mark.parametrize("name", sorted(OLD_ANSWERS))
def test_files_written_before_the_schema_still_load(name: str, tmp_path: Path) -> None:
    old = json.loads((LEGACY / name).read_text())
    assert "neighbours" in old["privacy"] and "library_version" in old["privacy"]
    rel = dptree.load(LEGACY / name)
    assert isinstance(rel, HierarchyRelease)
    count, ci = OLD_ANSWERS[name]
    assert rel.count("US") == count and rel.ci("US") == pytest.approx(ci)
    k = old["parameters"]["max_contributions"]
    assert rel.privacy["neighbors"] == "add_remove" and rel.privacy["max_contributions"] == k
    assert rel.privacy["library"] == "dptree " + old["privacy"]["library_version"]
    assert ("at most 2" in rel.summary()) == (k == 2)
    # an old file is re-saved in the new spelling and loads again with the same answers
    rel.save(tmp_path / "new.json", allow_nonprivate=True)
    again = dptree.load(tmp_path / "new.json")
    assert "neighbours" not in json.loads((tmp_path / "new.json").read_text())["privacy"]
    assert again.count("US") == count


def test_an_old_file_is_still_checked(tmp_path: Path) -> None:
    doc = json.loads((LEGACY / "laplace.json").read_text())
    doc["parameters"]["epsilon"] = 10.0
    with pytest.raises(ReleaseFileError, match="tampered"):
        HierarchyRelease.from_dict({k: v for k, v in doc.items() if k != "checksum"})
    shutil.copy(LEGACY / "laplace.json", tmp_path / "r.json")
    text = (tmp_path / "r.json").read_text().replace('"l1":6', '"l1":7')
    (tmp_path / "r.json").write_text(text)
    with pytest.raises(ReleaseFileError, match="checksum"):
        dptree.load(tmp_path / "r.json")


def test_a_statement_that_disagrees_with_the_parameters_is_refused() -> None:
    d = hierarchy_counts(["FR"], H, epsilon=1.0, max_contributions=2, rng=1).to_dict()
    for key, value in (("max_contributions", 1), ("neighbors", "replace")):
        bad = json.loads(json.dumps(d))
        bad["privacy"][key] = value
        with pytest.raises(ReleaseFileError, match="tampered"):
            HierarchyRelease.from_dict(bad)


def test_constraints_are_declared() -> None:
    declared = hierarchy_counts.constraints  # type: ignore[attr-defined]
    assert {"epsilon", "delta", "method", "alpha", "tau_min", "max_contributions", "consistent", "hierarchy",
            "unknown"} <= set(declared)
    assert {"paths", "levels", "other"} <= set(Hierarchy.from_paths.constraints)  # type: ignore[attr-defined]
    for bad in ({"epsilon": 1e-300}, {"epsilon": 1.0, "unknown": "ignore"}, {"epsilon": 1.0, "integer": 1},
                {"epsilon": 1.0, "max_contributions": 2.0}):
        with pytest.raises(InvalidParameterError, match=next(iter(set(bad) - {"epsilon"}), "epsilon")):
            hierarchy_counts(["FR"], H, rng=0, **bad)  # type: ignore[arg-type]
    rel = hierarchy_counts(["FR"], H, epsilon=1.0, rng=0)
    for level in (0.0, 1.5, "0.9"):
        with pytest.raises(InvalidParameterError, match="confidence level"):
            rel.to_frame(level=level)  # type: ignore[arg-type]
