"""The vectorised hierarchy builder (integer codes per level) against the
list-and-tuple reference builder in reference_building.py: same arrays, same errors, same messages."""

from __future__ import annotations

import random
from typing import Any, Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import reference_building as ref

from dptree.errors import DomainError, DPTreeError
from dptree.hierarchy.levels import sort_strings
from dptree.hierarchy.structure import Hierarchy

ALPHABET = ["a", "b", "B", "é", "\U0001F600", "0", "10", "2", "ab", "a b", "\x00", "Z\x00"]


def _old_from_paths(paths: list[Any], **kw: Any) -> Hierarchy:
    cols = ref.path_columns(paths)
    return ref.build(Hierarchy, cols, levels=kw.get("levels"), other=kw.get("other"),
                     root_label=kw.get("root_label", "(all)"))


def _same(new: Callable[[], Hierarchy], old: Callable[[], Hierarchy]) -> str:
    """Both builders give identical trees, or the same error type and message."""
    try:
        a = new()
    except DPTreeError as exc:
        with pytest.raises(type(exc)) as info:
            old()
        assert str(info.value) == str(exc)
        return "error"
    b = old()
    assert a.sizes == b.sizes and a.levels == b.levels and a.root_label == b.root_label and a.other == b.other
    for x, y in zip(a.labels, b.labels):
        assert x.dtype == y.dtype == object and x.tolist() == y.tolist()
        assert all(type(v) is str for v in x)
    for x, y in zip(a.parents[1:], b.parents[1:]):
        assert x is not None and y is not None
        assert x.dtype == y.dtype and np.array_equal(x, y)
    assert a == b and a.n_leaves == b.n_leaves
    return "ok"


def _random_paths(rng: random.Random, valid: bool) -> list[str]:
    """Irregular trees: random arity and depth per branch; sometimes with defects (duplicates, a
    leaf that is also an inner node, empty labels, root paths) when not ``valid``."""
    out: list[str] = []

    def grow(prefix: list[str], depth: int) -> None:
        if depth >= 1 and (depth >= 5 or rng.random() < 0.35):
            out.append("/".join(prefix))
            return
        labs = {rng.choice(ALPHABET) + rng.choice(["", "x", "é"]) for _ in range(rng.randint(1, 4))}
        for lab in sorted(labs):
            grow(prefix + [lab], depth + 1)

    grow([], 0)
    rng.shuffle(out)
    if not valid and out:
        kind = rng.randrange(5)
        p = rng.choice(out)
        if kind == 0:
            out.insert(rng.randrange(len(out) + 1), p)  # duplicate leaf
        elif kind == 1 and "/" in p:
            out.insert(rng.randrange(len(out) + 1), p.rsplit("/", 1)[0])  # a leaf that has children
        elif kind == 2:
            out.insert(rng.randrange(len(out) + 1), p + "//x")  # empty label
        elif kind == 3:
            out.insert(rng.randrange(len(out) + 1), rng.choice(["", "/"]))  # the root
        else:
            out.insert(rng.randrange(len(out) + 1), p + "/")  # trailing empty label
    return out


@pytest.mark.parametrize("seed", range(60))
def test_from_paths_equals_the_reference_builder(seed: int) -> None:
    rng = random.Random(seed)
    paths = _random_paths(rng, valid=seed % 3 != 0)
    other = "(other)" if seed % 4 == 1 else ("a" if seed % 4 == 2 else None)
    _same(lambda: Hierarchy.from_paths(paths, other=other), lambda: _old_from_paths(paths, other=other))
    tuples: list[Any] = [tuple(p.split("/")) for p in paths]
    _same(lambda: Hierarchy.from_paths(tuples, other=other), lambda: _old_from_paths(tuples, other=other))


def test_reference_comparison_sees_valid_trees_and_each_error() -> None:
    outcomes = set()
    for seed in range(60):
        paths = _random_paths(random.Random(seed), valid=seed % 3 != 0)
        outcomes.add(_same(lambda: Hierarchy.from_paths(paths), lambda: _old_from_paths(paths)))
    assert outcomes == {"ok", "error"}


@pytest.mark.parametrize("seed", range(30))
def test_from_frame_and_parent_table_equal_the_reference_builder(seed: int) -> None:
    rng = random.Random(1000 + seed)
    paths = _random_paths(rng, valid=True)
    width = max(p.count("/") + 1 for p in paths)
    rows = [p.split("/") + [None] * (width - p.count("/") - 1) for p in paths]
    if seed % 5 == 0 and width > 1:
        rows[rng.randrange(len(rows))][0] = None  # a missing level followed by a label
    names = [f"l{j}" for j in range(width)]
    frame = pd.DataFrame(rows, columns=names)
    _same(lambda: Hierarchy.from_frame(frame, names),
          lambda: ref.build(Hierarchy, ref.frame_columns(frame, names), levels=names, other=None, root_label="(all)"))
    edges: dict[str, Any] = {}
    for p in paths:
        parts = p.split("/")
        for i in range(len(parts)):
            edges[":".join(parts[: i + 1])] = ":".join(parts[:i]) or None

    def old() -> Hierarchy:
        cols, root = ref.parent_table_columns(edges, "node", "parent")
        return ref.build(Hierarchy, cols, levels=None, other="(o)", root_label=root)

    _same(lambda: Hierarchy.from_parent_table(edges, other="(o)"), old)


@pytest.mark.parametrize("labels", [["a/b", "c"], ["c", ""], ["", "a/b"]])
def test_bad_labels_in_tuples_give_the_reference_message(labels: list[str]) -> None:
    paths: list[Any] = [("x", labels[0]), ("y", labels[1])]
    frame = pd.DataFrame({"a": ["x", "y"], "b": labels})
    assert _same(lambda: Hierarchy.from_paths(paths), lambda: _old_from_paths(paths)) == "error"
    assert _same(lambda: Hierarchy.from_frame(frame, ["a", "b"]),
                 lambda: ref.build(Hierarchy, ref.frame_columns(frame, ["a", "b"]), levels=["a", "b"], other=None,
                                   root_label="(all)")) == "error"


def test_other_label_clash_gives_the_reference_message() -> None:
    paths = ["US/(other)/x", "US/CA", "FR/(other)/y"]
    assert _same(lambda: Hierarchy.from_paths(paths, other="(other)"),
                 lambda: _old_from_paths(paths, other="(other)")) == "error"


def test_an_other_label_that_is_a_real_category_is_refused() -> None:
    """other='CA' beside a real leaf US/CA (and none under FR) used to reuse US/CA as US's 'other'
    leaf, so unknown US rows were counted as California. A label that is a leaf under some nodes
    but not all is refused; one under every node (a hierarchy built with other= before, its paths
    listed again) is reused, and gives the same tree as the first build."""
    paths = [("US", "CA"), ("US", "NY"), ("FR", "IDF")]
    with pytest.raises(DomainError, match=r"other='CA' is already a leaf \('US/CA'\) but not under every node"):
        Hierarchy.from_paths(paths, other="CA")
    assert _same(lambda: Hierarchy.from_paths(paths, other="CA"), lambda: _old_from_paths(paths, other="CA")) == "error"
    first = Hierarchy.from_paths(paths, other="(other)")
    again = Hierarchy.from_paths(first.leaf_paths(), other="(other)")
    assert again == first and again.other == "(other)"


def test_labels_in_bytes_that_are_not_utf8_are_refused_by_name() -> None:
    frame = pd.DataFrame({"a": [b"US", b"US"], "b": [b"\xff", b"x"]})
    for build in (lambda: Hierarchy.from_paths([("US", b"\xff"), ("US", "x")]),
                  lambda: Hierarchy.from_frame(frame, ["a", "b"]),
                  lambda: Hierarchy.from_parent_table({b"\xff": "US", "x": "US"})):
        with pytest.raises(DomainError, match="bytes that are not UTF-8 text; decode the labels first"):
            build()
    assert Hierarchy.from_paths([("US", b"CA"), ("US", "x")]) == Hierarchy.from_paths(["US/CA", "US/x"])


def test_lone_surrogates_fall_back_to_the_object_sort() -> None:
    paths = ["a/\ud800", "a/b", "\udfff/c"]
    assert _same(lambda: Hierarchy.from_paths(paths), lambda: _old_from_paths(paths)) == "ok"


@pytest.mark.parametrize("rounds", [1, 2, 4])
def test_sort_strings_is_python_order(rounds: int) -> None:
    rng = random.Random(rounds)
    for _ in range(200):
        vals = list({"".join(rng.choice(ALPHABET) for _ in range(rng.choice([0, 1, 3, 7, 8, 9, 16, 17])))
                     for _ in range(rng.randint(0, 50))})
        if rng.random() < 0.3:
            vals = ["common-prefix-" * 2 + v for v in vals]
        arr = pa.array(vals, type=pa.string())
        if len(vals) > 2 and rng.random() < 0.3:
            arr, vals = arr.slice(1), vals[1:]
        perm = sort_strings(arr, rounds=rounds)
        assert [vals[i] for i in perm] == sorted(vals)


def test_large_random_three_level_tree_equals_the_reference() -> None:
    rng = np.random.default_rng(7)
    n = 20000
    a, b, c = rng.integers(0, 30, n), rng.integers(0, 100, n), rng.permutation(n)
    paths = [f"A{x}/B{y}/C{z}" for x, y, z in zip(a, b, c)]
    assert _same(lambda: Hierarchy.from_paths(paths), lambda: _old_from_paths(paths)) == "ok"
