"""dptree.Hierarchy: construction from paths / level table / parent table, validation, lookup."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dptree.errors import DataError, DomainError, DPTreeError, InputFormatError, InvalidParameterError
from dptree.hierarchy.api import hierarchy_counts
from dptree.hierarchy.counting import leaf_counts, node_weights
from dptree.hierarchy.structure import Hierarchy

PATHS = ["US/CA/SF", "US/CA/LA", "US/NY", "FR/IDF/Paris", "FR/PACA/Nice"]


def test_from_paths_shape_and_depth() -> None:
    h = Hierarchy.from_paths(PATHS, levels=["country", "state", "city"])
    assert h.depth == 4  # root + 3 levels: nodes on the longest root-to-leaf path
    assert h.sizes == [1, 2, 4, 4]
    assert h.n_leaves == 5 and h.n_nodes == 11
    assert sorted(h.leaf_paths()) == sorted(PATHS)
    # children contiguous and sorted; parent arrays index the level above
    for j in range(1, h.depth):
        assert np.all(np.diff(h.parents[j]) >= 0)
    assert h.path_of(h.node_id("US/CA/LA")) == ("US", "CA", "LA")
    assert h.node_id(("US", "NY")) == h.node_id("US/NY")
    assert h.node_id("") == 0


def test_three_constructors_agree() -> None:
    a = Hierarchy.from_paths(PATHS, levels=["country", "state", "city"])
    frame = pd.DataFrame(
        [p.split("/") + [None] * (3 - len(p.split("/"))) for p in PATHS], columns=["country", "state", "city"]
    )
    b = Hierarchy.from_frame(frame, ["country", "state", "city"])
    edges = {}
    for p in PATHS:
        parts = p.split("/")
        for i in range(len(parts)):
            node = ":".join(parts[: i + 1])
            edges[node] = ":".join(parts[:i]) or None
    c = Hierarchy.from_parent_table(
        pd.DataFrame({"node": list(edges), "parent": list(edges.values())}), levels=["country", "state", "city"]
    )
    # parent-table node ids are full paths here; compare shapes and leaf counts per level
    assert a == b
    assert c.sizes == a.sizes and [x.sum() for x in c.is_leaf] == [x.sum() for x in a.is_leaf]


def test_parent_table_single_top_node_is_root() -> None:
    t = pd.DataFrame({"node": ["World", "US", "CA", "FR"], "parent": [None, "World", "US", "World"]})
    h = Hierarchy.from_parent_table(t)
    assert h.root_label == "World" and h.depth == 3
    assert sorted(h.leaf_paths()) == ["FR", "US/CA"]


def test_other_leaves_are_public_and_data_independent() -> None:
    h = Hierarchy.from_paths(PATHS, other="(other)")
    internal = ["", "US", "US/CA", "FR", "FR/IDF", "FR/PACA"]
    for p in internal:
        gid = h.node_id(p + "/(other)" if p else "(other)")
        assert h.path_of(gid)[-1] == "(other)"
    assert h.depth == 4  # other leaves never deepen the tree
    assert h.n_leaves == 5 + len(internal)


@pytest.mark.parametrize(
    "build, exc, words",
    [
        (lambda: Hierarchy.from_paths([]), DomainError, "empty"),
        (lambda: Hierarchy.from_paths(["US/CA", "US/CA"]), DomainError, "more than once"),
        (lambda: Hierarchy.from_paths(["US", "US/CA"]), DomainError, "listed as a leaf"),
        (lambda: Hierarchy.from_paths(["US//CA"]), DomainError, "empty label"),
        (lambda: Hierarchy.from_parent_table({"a": "b", "b": "a", "c": None}), DomainError, "cycle"),
        (lambda: Hierarchy.from_parent_table({"a": "a"}), DomainError, "own parent"),
        (lambda: Hierarchy.from_parent_table([("a", None), ("a", None)]), DomainError, "twice"),
        (lambda: Hierarchy.from_parent_table({"a": "zzz"}), DomainError, "not a node"),
        (lambda: Hierarchy.from_parent_table({}), DomainError, "empty"),
        # a row of three, a string, a number: typed errors, not a raw ValueError / TypeError
        (lambda: Hierarchy.from_parent_table([("a", None, 1)]), InputFormatError, "list of \\(node, parent\\) pairs"),
        (lambda: Hierarchy.from_parent_table("abc"), InputFormatError, "list of \\(node, parent\\) pairs"),
        (lambda: Hierarchy.from_parent_table(5), InputFormatError, "list of \\(node, parent\\) pairs"),
        (lambda: Hierarchy.from_parent_table(["ab"]), InputFormatError, "list of \\(node, parent\\) pairs"),
        (lambda: Hierarchy.from_frame(pd.DataFrame({"a": []}), ["a"]), DomainError, "empty"),
        (lambda: Hierarchy.from_frame(pd.DataFrame({"a": ["x"]}), ["b"]), InputFormatError, "no column"),
        (
            lambda: Hierarchy.from_frame(pd.DataFrame({"a": ["x", None], "b": [None, "y"]}), ["a", "b"]),
            DomainError,
            "missing level",
        ),
    ],
)
def test_bad_structures(build, exc, words) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(exc, match=words) as info:
        build()
    assert isinstance(info.value, DPTreeError)


def test_count_of_unknown_path_is_an_error() -> None:
    h = Hierarchy.from_paths(PATHS)
    rel = hierarchy_counts(["US/NY"], h, epsilon=1.0, rng=0)
    with pytest.raises(DomainError, match="names no node"):
        rel.count("US/TX")
    with pytest.raises(DomainError, match="names no node"):
        rel.count("US/NY/Albany")
    with pytest.raises(InvalidParameterError):
        rel.count(42)  # type: ignore[arg-type]


def test_leaf_counts_rows_weights_and_other() -> None:
    h = Hierarchy.from_paths(PATHS, levels=["country", "state", "city"], other="(other)")
    df = pd.DataFrame(
        {
            "country": ["US", "US", "US", "FR", "FR", "DE", "US"],
            "state": ["CA", "CA", "NY", "IDF", "PACA", None, "CA"],
            "city": ["SF", "SF", None, "Paris", "Lyon", None, None],
        }
    )
    with pytest.raises(DataError, match="not a leaf"):
        leaf_counts(df, h)
    x = leaf_counts(df, h, unknown="other")
    w = node_weights(x, h.parents)
    get = lambda p: int(np.concatenate(w)[h.node_id(p)])  # noqa: E731
    assert get("US/CA/SF") == 2 and get("US/NY") == 1 and get("") == 7
    assert get("FR/PACA/(other)") == 1  # unknown city under a known state
    assert get("(other)") == 1  # unknown country
    assert get("US/CA/(other)") == 1  # a row naming an internal node
    # weights: same totals
    df["n"] = [1, 2, 3, 4, 5, 6, 7]
    xw = leaf_counts(df, h, weight="n", unknown="other")
    ww = np.concatenate(node_weights(xw, h.parents))
    assert ww[h.node_id("US/CA/SF")] == 3 and ww[0] == 28


@pytest.mark.parametrize("bad", [[1, -1], [1.5, 2.0], [1.0, np.nan], ["a", "b"], [True, False]])
def test_bad_weights(bad) -> None:  # type: ignore[no-untyped-def]
    h = Hierarchy.from_paths(["A", "B"], levels=["x"])
    df = pd.DataFrame({"x": ["A", "B"], "n": bad})
    with pytest.raises(DataError, match="weight"):
        hierarchy_counts(df, h, weight="n", epsilon=1.0, rng=0)


def test_unknown_other_needs_other_leaves() -> None:
    h = Hierarchy.from_paths(["A", "B"])
    with pytest.raises(InvalidParameterError, match="other"):
        leaf_counts(["A"], h, unknown="other")


def test_integer_like_labels_match() -> None:
    h = Hierarchy.from_paths([("94110",), ("94117",)], levels=["zip"])
    df = pd.DataFrame({"zip": [94110.0, 94117.0, 94110.0]})
    x = leaf_counts(df, h)
    assert sorted(x[1].tolist()) == [1, 2]


def test_mapping_matches_python_reference_on_random_data() -> None:
    rng = np.random.default_rng(3)
    from hier_helpers import random_paths

    paths = random_paths(rng, max_depth=4)
    h = Hierarchy.from_paths(paths)
    rows = [paths[i] for i in rng.integers(0, len(paths), 500)]
    x = np.concatenate(node_weights(leaf_counts(rows, h), h.parents))
    ref = np.zeros(h.n_nodes, dtype=np.int64)
    for r in rows:
        for i in range(len(r) + 1):
            ref[h.node_id(r[:i])] += 1
    np.testing.assert_array_equal(x, ref)
