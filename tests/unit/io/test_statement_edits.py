"""One-field edits of a saved release's privacy statement are refused, for every release kind.

The checksum is not a signature: anyone can edit a file and recompute it. What stops an edited
claim is that every loader re-derives the whole statement from the file's public parameters
(:func:`dptree.privacy.statement.check_statement`) and refuses a file whose statement differs in
any field. Here every leaf of every kind's statement is changed to another plausible value (a
value of the same field in another kind's statement, a neighbouring number, the other boolean),
the checksum is recomputed as the format does, and the load must refuse. ``library`` (the version
that wrote the file) and ``private`` (whether a test seed drew the noise) are not derived from the
parameters and are left out. Each parameter leaf is edited too: the load must refuse, or report
the very statement the file was made with (a parameter the statement is not derived from, such as
a post-processing choice); a parameter the statement also states (the same path in both, such as a
hierarchy's ``epsilon`` and ``delta`` or a private-bounds search's record) must be refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

import dptree
from dptree import ReleaseFileError
from dptree.io.release_file import canonical_checksum

#: statement fields that are not derived from the parameters (see the module docstring); a file
#: in the spelling before the schema names the library ``library_version`` and describes its
#: neighbors in a sentence, which loading replaces by the relation hierarchies are released under
NOT_DERIVED = {("library",), ("private",), ("library_version",), ("neighbours",)}
LEGACY = Path(__file__).parents[1] / "hierarchy" / "legacy"
#: elements of a list edited (the first and the last): enough to reach every field of a level
LIST_EDITS = 2


def _releases() -> dict[str, Any]:
    """One small release of every kind (test seeds: the files are saved with allow_nonprivate)."""
    x = np.random.default_rng(0).integers(0, 30, 300)
    by = np.where(x < 15, "a", "b")
    h = dptree.Hierarchy.from_paths([("US", "CA"), ("US", "NY"), ("FR", "IDF")])
    rows = [("US", "CA")] * 5 + [("FR", "IDF")] * 3
    box = {"lower": 0, "upper": 31, "branching": 4}
    out: dict[str, Any] = {
        "range tree, uniform levels, Laplace": dptree.range_tree(x, **box, epsilon=1.0, levels="uniform", rng=1),
        "range tree, all-ranges levels, Laplace, k = 2": dptree.range_tree(
            x, **box, epsilon=1.0, levels="all_ranges", max_contributions=2, rng=1),
        "range tree, prefix levels, Gaussian (epsilon, delta)": dptree.range_tree(
            x, **box, epsilon=1.0, delta=1e-6, noise="gaussian", levels="prefix", rng=1),
        "range tree, uniform levels, Gaussian exact": dptree.range_tree(
            x, **box, epsilon=1.0, delta=1e-6, noise="gaussian", levels="uniform", rng=1),
        "range tree, Gaussian rho": dptree.range_tree(x, **box, rho=0.5, noise="gaussian", rng=1),
        "range tree, replace neighbors": dptree.range_tree(x, **box, epsilon=1.0, neighbors="replace", rng=1),
        "range tree, private bounds": dptree.range_tree(x.astype(float), bounds="private", epsilon=1.0, width=1.0,
                                                        branching=4, rng=1),
        "range tree by group": dptree.range_tree_by(x, by=by, groups=["a", "b"], **box, epsilon=1.0, rng=1),
        "factorised CDF": dptree.range_tree(x, lower=0, upper=31, rho=0.5, noise="gaussian", levels="factorization",
                                            rng=1),
        "range tree with sums": dptree.range_tree(x, **box, weights=x % 7, weight_bounds=(0, 10), epsilon=1.0, rng=1),
        "hierarchy found from the data": dptree.hierarchy_counts(rows * 40, "private", levels=["country", "state"],
                                                                 epsilon=1.0, delta=1e-6, rng=1),
        "2-D range tree, all-rectangles split": dptree.range_tree_2d(x, x[::-1], lower=(0, 0), upper=(29, 29),
                                                                     epsilon=1.0, rng=1),
        "2-D range tree, geometric split, Gaussian, replace": dptree.range_tree_2d(
            x, x[::-1], lower=(0, 0), upper=(29, 29), epsilon=1.0, delta=1e-6, noise="gaussian", levels="geometric",
            neighbors="replace", rng=1),
        "2-D PrivTree": dptree.range_tree_2d(x, x[::-1], lower=(0, 0), upper=(29, 29), epsilon=1.0, method="privtree",
                                             rng=1),
        "sparse range tree, privtree": dptree.sparse_range_tree(x, epsilon=1.0, rng=1),
        "sparse range tree, levels": dptree.sparse_range_tree(x, epsilon=1.0, method="levels", rng=1),
        "quantiles by group": dptree.quantiles(x, [0.5], lower=0, upper=31, epsilon=1.0, method="approx", by=by,
                                               groups=["a", "b"], rng=1),
        "range tree by groups found privately": dptree.range_tree(x, by=by, groups="private", **box, epsilon=1.0,
                                                                  delta=1e-6, rng=1),
        "quantiles by groups found privately": dptree.quantiles(x, [0.5], lower=0, upper=31, epsilon=1.0, delta=1e-6,
                                                                method="approx", by=by, groups="private", rng=1),
        "interior point, exponential": dptree.interior_point(x, lower=0, upper=2**20, epsilon=1.0, rng=1),
        "interior point, treelog": dptree.interior_point(x, lower=0, upper=2**20, epsilon=1.0, delta=1e-6,
                                                         method="treelog", n=300, run_anyway=True, rng=1),
        "single quantile": dptree.quantile(x, 0.9, lower=0, upper=1000, epsilon=1.0, rng=1),
        "threshold": dptree.learn_threshold(x, (x > 15).astype(int), lower=0, upper=31, epsilon=1.0, delta=1e-6,
                                            rng=1),
    }
    from dptree.stream import Counter

    for name, kw in (("tree", dict(epsilon=1.0)), ("toeplitz", dict(epsilon=1.0, delta=1e-6, noise="gaussian"))):
        counter = Counter(16, max_participations=2, rng=1, **kw)
        counter.append([1, 0, 2])
        out[f"stream counter, {name}"] = counter.release()
        out[f"stream counter state, {name}"] = counter
    for method in ("tree", "approx", "exponential", "joint"):
        out[f"quantiles, {method}"] = dptree.quantiles(
            x, [0.25, 0.5, 0.75], lower=0, upper=31, epsilon=1.0, method=method, n=300 if method == "joint" else None, rng=1)
    for method, delta, k in (("laplace", 0.0, 1), ("laplace", 0.0, 2), ("gaussian", 1e-6, 1), ("gaussian", 1e-6, 2),
                             ("multiplicative", 1e-6, 1), ("multiplicative", 1e-6, 2)):
        out[f"hierarchy, {method}, k = {k}"] = dptree.hierarchy_counts(
            rows, h, epsilon=1.0, delta=delta, method=method, max_contributions=k,
            alpha=0.5 if method == "multiplicative" else None, rng=1)
    return out


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """name -> (the saved document, the statement its load reports)."""
    root = tmp_path_factory.mktemp("kinds")
    out = {}
    for i, (name, rel) in enumerate(_releases().items()):
        path = root / f"{i}.json"
        rel.save(path, allow_nonprivate=True)
        out[name] = (json.loads(path.read_text()), dptree.load(path).privacy)
    for path in sorted(LEGACY.glob("*.json")):
        out[f"hierarchy file in the old spelling, {path.stem}"] = (json.loads(path.read_text()),
                                                                  dptree.load(path).privacy)
    return out


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list) and node:
        for i in sorted({0, len(node) - 1})[:LIST_EDITS]:
            yield from _leaves(node[i], (*path, i))
    else:
        yield path, node


def _field_values(docs: list[dict[str, Any]]) -> dict[Any, set[str]]:
    """Every string a statement field holds in some kind's file: plausible edits of that field."""
    seen: dict[Any, set[str]] = {}
    for doc in docs:
        for path, value in _leaves(doc["privacy"]):
            if isinstance(value, str):
                seen.setdefault(path[-1], set()).add(value)
    return seen


def _edits(path: tuple[Any, ...], value: Any, seen: dict[Any, set[str]]) -> list[Any]:
    """Other plausible values of one leaf: a number moved the way that claims more privacy (a
    smaller budget or sensitivity, more records per person protected), the other boolean, up to
    two strings the same field holds in other files and the string itself edited."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1]
    if isinstance(value, float):
        return [value / 2 if value else 1e-6]
    if value is None:
        return [0.5]
    if isinstance(value, str):
        return sorted(seen.get(path[-1], set()) - {value})[:2] + [value + " (edited)"]
    return []


def _set(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(doc))
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    out["checksum"] = canonical_checksum(out)
    return out


def _load(doc: dict[str, Any], path: Path) -> Any:
    path.write_text(json.dumps(doc))
    return dptree.load(path)


def test_every_kind_is_covered(saved: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> None:
    from dptree.io.release_file import _LOADERS  # every release class with a KIND registers its loader

    assert {doc["kind"] for doc, _ in saved.values()} == set(_LOADERS)


def test_a_one_field_edit_of_any_statement_is_refused(saved: dict[str, tuple[dict[str, Any], dict[str, Any]]],
                                                      tmp_path: Path) -> None:
    seen = _field_values([doc for doc, _ in saved.values()])
    loaded: list[str] = []
    tried = 0
    for name, (doc, _) in saved.items():
        for path, value in _leaves(doc["privacy"]):
            if path[:1] in NOT_DERIVED:
                continue
            for new in _edits(path, value, seen):
                tried += 1
                try:
                    _load(_set(doc, ("privacy", *path), new), tmp_path / "edited.json")
                except ReleaseFileError:
                    continue
                loaded.append(f"{name}: privacy.{'.'.join(map(str, path))} = {new!r}")
    assert tried > 500
    assert not loaded, "edited statements loaded:\n" + "\n".join(loaded)


def test_a_one_field_edit_of_the_parameters_never_changes_the_reported_statement(
        saved: dict[str, tuple[dict[str, Any], dict[str, Any]]], tmp_path: Path) -> None:
    seen = _field_values([doc for doc, _ in saved.values()])
    changed: list[str] = []
    refused = 0
    for name, (doc, statement) in saved.items():
        stated = {path for path, _ in _leaves(doc["privacy"])}
        for path, value in _leaves(doc["parameters"]):
            for new in _edits(path, value, seen):
                try:
                    rel = _load(_set(doc, ("parameters", *path), new), tmp_path / "edited.json")
                except ReleaseFileError:
                    refused += 1
                    continue
                if rel.privacy != statement or path in stated:
                    changed.append(f"{name}: parameters.{'.'.join(map(str, path))} = {new!r}")
    assert refused > 100
    assert not changed, "edited parameters loaded:\n" + "\n".join(changed)


@pytest.mark.parametrize("name, field, value", [
    ("hierarchy, gaussian, k = 1", ("guarantee",), "pure epsilon-DP"),
    ("hierarchy, gaussian, k = 1", ("rho",), None),
    ("hierarchy, gaussian, k = 1", ("calibration", "delta_at_epsilon"), 0.0),
    ("hierarchy, gaussian, k = 1", ("sensitivity", "depth"), 2),
    ("hierarchy, laplace, k = 2", ("max_contributions",), 1),
    ("hierarchy, multiplicative, k = 2", ("run_at", "epsilon"), 1.0),
])
def test_a_hierarchy_file_with_an_edited_claim_is_refused(saved: dict[str, tuple[dict[str, Any], dict[str, Any]]],
                                                          tmp_path: Path, name: str, field: tuple[str, ...],
                                                          value: Any) -> None:
    doc, statement = saved[name]
    if value is None:  # half the stated rho
        value = statement[field[0]] / 2
    with pytest.raises(ReleaseFileError, match=f"{field[0]}.*tampered"):
        _load(_set(doc, ("privacy", *field), value), tmp_path / "edited.json")


#: the citations of current statements as older files wrote them (the reference documents'
#: numbers), most specific first; written out here, independently of the loader's table
OLD_WORDING = (
    ("(Smith & Ullman 2021; Honaker 2015)", "(seeds 000, 003, 004)"),
    ("Ghazi et al. 2023, ", "seed 001 "),
    ("one per level, Kaplan et al. 2020, Lemma", "one per level, seed 002 Lemma"),
    ("Kaplan et al. 2020, ", "seed 002, "),
)


def _old_wording(mechanism: str) -> str:
    for new, old in OLD_WORDING:
        mechanism = mechanism.replace(new, old)
    return mechanism


def test_a_statement_in_the_old_source_wording_loads_and_an_edit_of_it_is_refused(
        saved: dict[str, tuple[dict[str, Any], dict[str, Any]]], tmp_path: Path) -> None:
    reworded = []
    for name, (doc, reported) in saved.items():
        old = _old_wording(doc["privacy"]["mechanism"])
        if old == doc["privacy"]["mechanism"]:
            continue
        reworded.append(name)
        assert "seed" not in reported["mechanism"], name
        loaded = _load(_set(doc, ("privacy", "mechanism"), old), tmp_path / "old.json")
        assert loaded.privacy == reported, name  # read in the current wording
        swapped = old.replace("seed 001", "seed 002") if "seed 001" in old else old.replace("seed 00", "seed 001")
        for edited in (swapped, old + " (edited)", old.replace("Lemma", "Theorem")):
            if edited == old:
                continue
            with pytest.raises(ReleaseFileError, match="mechanism"):
                _load(_set(doc, ("privacy", "mechanism"), edited), tmp_path / "edited.json")
    assert len(reworded) >= 12, reworded  # hierarchies, interior points, quantiles, thresholds


def test_a_hierarchy_file_naming_its_source_by_file_name_loads_with_the_citation(tmp_path: Path) -> None:
    for path in sorted(LEGACY.glob("*.json")):
        doc = json.loads(path.read_text())
        assert "seed 001" in doc["privacy"]["mechanism"] and doc["privacy"]["seed"].startswith("001_")
        rel = dptree.load(path)
        assert "seed" not in rel.privacy and "seed 00" not in json.dumps(rel.privacy)
        assert rel.privacy["source"].startswith("Ghazi, Kamath, Kumar, Manurangsi & Wu 2023")
        rel.save(tmp_path / path.name, allow_nonprivate=True)  # saved again in the current wording
        assert dptree.load(tmp_path / path.name).privacy == rel.privacy
        edited = _set(doc, ("privacy", "seed"), doc["privacy"]["seed"].replace("Wu", "Wu et al."))
        with pytest.raises(ReleaseFileError, match="source"):
            _load(edited, tmp_path / "edited.json")
