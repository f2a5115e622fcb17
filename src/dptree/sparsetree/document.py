"""A sparse range tree as a release file's parts, and back (format: :mod:`dptree.io.release_file`).

``parameters``: the domain (kind and bounds), branching, method, ``max_contributions``,
``dense_depth``, the threshold, the shape's share (a number or ``"auto"``) and epsilon.
``measurements``: ``"auto"``: the noisy total that picked the share; per level the
node indices of the shape (``"levels"``: with their noisy counts; ``"privtree"``: then
``counts``, per depth of the shape's count tree, its noisy counts in the order of the ranges'
starts), the count tree's number of depths H (``"levels"``: the deepest level) and the exact
noise scale of the counts. Loading re-plans from the parameters and refuses a file whose noise scale or
statement differ from what the plan derives, or whose measured nodes are not a tree the method can
release: every level is the children of some nodes of the level above (all of them above
``dense_depth``; for ``"levels"``, exactly those the expansion rule picks from the stored noisy
counts), the counts match the count tree the shape determines, and H is that tree's (or the
deepest non-empty level).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from dptree.data.domain import Domain, key_domain
from dptree.errors import DPTreeError, ReleaseFileError
from dptree.io.release_file import check_metadata
from dptree.privacy.statement import check_statement
from dptree.sparsetree.mechanism import (
    Level,
    Measurement,
    Nodes,
    children,
    count_tree,
    expanded,
    level_nodes,
    realised_depths,
)
from dptree.sparsetree.plan import SparsePlan, plan_sparse_tree

__all__ = ["sparse_document", "sparse_parts", "checked_measurement"]

_KINDS = {"int": "i", "uint": "u", "float": "f", "datetime": "M"}


def _fraction(plan: SparsePlan, depth: int) -> str:
    s = plan.count_scale(depth)
    return f"{s.numerator}/{s.denominator}"


def sparse_document(plan: SparsePlan, measurement: Measurement, privacy: dict[str, Any],
                    metadata: dict[str, Any]) -> dict[str, Any]:
    """The parts of the release file of the release of ``plan`` that measured ``measurement``:
    ``privacy``, ``parameters``, ``measurements``, ``metadata``."""
    dom = plan.domain
    depth = int(measurement.heights[0])
    lower, upper = (dom.dump(b) for b in dom.bounds)
    params = {
        "domain": {"kind": dom.key_kind, "lower": lower, "upper": upper, "bits": dom.bits},
        "branching": plan.layout.branching,
        "method": plan.method,
        "max_contributions": plan.max_contributions,
        "dense_depth": plan.dense_depth,
        "threshold": plan.threshold,
        "structure_share": "auto" if plan.total_scale is not None else plan.structure_share,
        "budget": {"epsilon": plan.epsilon},
    }
    if plan.method == "levels":  # every node of the shape is counted, level by level
        levels = [{"index": [int(v) for v in idx], "noisy": [int(v) for v in nd.noisy]}
                  for idx, nd in zip(measurement.shape, measurement.nodes)]
        meas: dict[str, Any] = {"levels": levels}
    else:  # the shape, then the counts of its count tree (a function of the shape), depth by depth
        meas = {"levels": [{"index": [int(v) for v in idx]} for idx in measurement.shape],
                "counts": [[int(v) for v in nd.noisy] for nd in measurement.nodes]}
    if plan.noisy_total is not None:  # "auto": the noisy total that picked the shape's share
        meas["total"] = plan.noisy_total
    meas.update({"depth": depth, "noise_parameters": _fraction(plan, depth)})
    return {"privacy": privacy, "parameters": params, "measurements": meas, "metadata": metadata}


def _domain(doc: Any) -> Domain:
    if not isinstance(doc, Mapping) or doc.get("kind") not in _KINDS:
        raise ReleaseFileError("sparse range tree: parameters.domain must give a kind among " + str(list(_KINDS)))
    kind = doc["kind"]
    lower, upper = doc.get("lower"), doc.get("upper")
    if kind == "datetime":
        lower, upper = np.datetime64(str(lower), "ns"), np.datetime64(str(upper), "ns")
    want = float if kind == "float" else int
    if kind != "datetime" and not (type(lower) is want and type(upper) is want):
        raise ReleaseFileError(f"sparse range tree: the domain bounds must be {want.__name__}s")
    whole = key_domain(None, None, _KINDS[kind])  # the unbounded tree of this kind
    if kind == "datetime" and (lower, upper) == whole.bounds:
        return _checked_bits(whole, doc)  # its ends are the ns range's, beyond the dates a caller may bound
    dom = key_domain(lower, upper, _KINDS[kind])
    if dom.key_kind != kind and not (kind == "int" and dom.key_kind == "uint"):
        raise ReleaseFileError("sparse range tree: the domain kind does not match its bounds")
    return _checked_bits(dom, doc)


def _checked_bits(dom: Domain, doc: Mapping[str, Any]) -> Domain:
    if dom.bits != doc.get("bits"):
        raise ReleaseFileError("sparse range tree: the domain's number of key bits does not match its bounds")
    return dom


def _int_list(raw: Any, what: str, lo: int, hi: int) -> list[int]:
    if not (isinstance(raw, list) and all(type(v) is int and lo <= v < hi for v in raw)):
        raise ReleaseFileError(f"sparse range tree: {what} must be a list of integers")
    return raw


def _levels(plan: SparsePlan, raw: Any) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The shape (node indices per level) and, for ``"levels"``, the noisy counts per level."""
    L = plan.layout.depth
    if not isinstance(raw, list) or len(raw) != L:
        raise ReleaseFileError(f"sparse range tree: the file must hold {L} measured levels")
    shape: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    parents = np.zeros(1, dtype=np.uint64)
    for d, lv in enumerate(raw, start=1):
        if not isinstance(lv, Mapping):
            raise ReleaseFileError(f"sparse range tree: level {d} must give an 'index' list")
        index = np.asarray(_int_list(lv.get("index"), f"level {d}'s index", 0, 2**64), dtype=np.uint64)
        if plan.method == "privtree" and d > plan.dense_depth:  # the children of some nodes of the level above
            step = np.uint64(plan.layout.shifts[d - 1] - plan.layout.shifts[d])
            parents = np.unique(index >> step)
            if not np.all(np.isin(parents, shape[-1])):
                parents = np.full(1, np.uint64(2**64 - 1))  # not a tree: refused below
        if not np.array_equal(index, children(parents, plan.layout.fanout(d - 1))):
            raise ReleaseFileError(f"sparse range tree: the measured nodes of level {d} are not a tree the method "
                                   "releases (tampered?)")
        shape.append(index)
        parents = index
        if plan.method == "levels":
            noisy = np.asarray(_int_list(lv.get("noisy"), f"level {d}'s noisy counts", -2**62, 2**62), dtype=np.int64)
            if noisy.size != index.size:
                raise ReleaseFileError(f"sparse range tree: level {d} must hold one noisy count per node")
            counts.append(noisy)
            parents = expanded(Level(index, noisy), d, plan.layout, plan.dense_depth, plan.threshold)
    return shape, counts


def _measurement(plan: SparsePlan, meas: Mapping[str, Any]) -> Measurement:
    shape, counts = _levels(plan, meas.get("levels"))
    if plan.method == "levels":
        nodes = level_nodes(plan.layout, [Level(i, c) for i, c in zip(shape, counts)])
        return Measurement(shape, nodes, realised_depths(plan.layout, shape))
    ranges, heights = count_tree(plan.layout, shape)
    raw = meas.get("counts")
    if not isinstance(raw, list) or len(raw) != len(ranges):
        raise ReleaseFileError(f"sparse range tree: the file must hold the counts of the {len(ranges)} depths of "
                               "its shape's count tree")
    nodes = []
    for j, ((start, last, parent), c) in enumerate(zip(ranges, raw), start=1):
        noisy = np.asarray(_int_list(c, f"the counts of depth {j}", -2**62, 2**62), dtype=np.int64)
        if noisy.size != start.size:
            raise ReleaseFileError(f"sparse range tree: depth {j} of the count tree must hold {start.size} counts")
        nodes.append(Nodes(start, last, parent, noisy))
    return Measurement(shape, nodes, heights)


def checked_measurement(plan: SparsePlan, meas: Any) -> tuple[SparsePlan, Measurement]:
    """The plan (``"auto"``: resolved at the stored noisy total) and the measurement of a file's
    ``measurements``, its measured sets, number of levels and noise scale checked against ``plan``."""
    if not isinstance(meas, Mapping):
        raise ReleaseFileError("sparse range tree: measurements must be a mapping")
    if plan.total_scale is not None:
        total = meas.get("total")
        if type(total) is not int or abs(total) >= 2**62:
            raise ReleaseFileError("sparse range tree: structure_share 'auto' needs the noisy total in the "
                                   "measurements")
        plan = plan.resolved(total)
    measurement = _measurement(plan, meas)
    depth = int(measurement.heights[0])
    if meas.get("depth") != depth:
        raise ReleaseFileError("sparse range tree: the stated number of levels is not the released tree's (tampered?)")
    if meas.get("noise_parameters") != _fraction(plan, depth):
        raise ReleaseFileError("sparse range tree: noise parameters do not match the stated budget (tampered?)")
    return plan, measurement


def sparse_parts(doc: Mapping[str, Any]) -> tuple[SparsePlan, Measurement, dict[str, Any], dict[str, Any]]:
    """The plan, measurement, privacy statement and metadata of a validated document, its noise,
    statement and measured sets re-derived and checked (a release is built from them)."""
    params = doc["parameters"]
    try:
        dom = _domain(params.get("domain"))
        plan = plan_sparse_tree(dom, epsilon=params["budget"]["epsilon"], branching=params["branching"],
                                max_contributions=params["max_contributions"], dense_depth=params["dense_depth"],
                                threshold=params["threshold"], method=params["method"],
                                structure_share=params["structure_share"] or 0.2)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ReleaseFileError(f"sparse range tree: malformed parameters ({type(exc).__name__})") from None
    except ReleaseFileError:
        raise
    except DPTreeError as exc:
        raise ReleaseFileError(f"sparse range tree: invalid parameters: {exc}") from None
    plan, measurement = checked_measurement(plan, doc["measurements"])
    raw = doc["privacy"]
    if not isinstance(raw, Mapping) or not isinstance(raw.get("private"), bool):
        raise ReleaseFileError("sparse range tree: privacy statement lacks the 'private' flag")
    privacy = check_statement(raw, plan.statement, kind="sparse_range_tree")
    return plan, measurement, privacy, check_metadata(doc.get("metadata"))
