"""Reading a hierarchy release's file document: the tree, the privacy statement in the one schema
(:func:`dptree.privacy.statement.read_statement`; files with the old ``neighbors`` /
``library_version`` spelling still load) and the noise re-derived from the stated parameters.

The whole statement is re-derived from the parameters through the release's plan
(:class:`dptree.hierarchy.plan.HierarchyPlanCore`, the code that made the release) and compared
by :func:`dptree.privacy.statement.check_statement`, as for every release kind; the noise
variance or window and the derived parameters must match it too (the checksum is not a
signature: this is what catches an edited budget or claim).
Measurements must have the tree's shape. Nothing here reads private data: a file holds only
public values.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.hierarchy.discovery import FOUND, FoundStructureCore, plan_found_structure
from dptree.hierarchy.measure import METHODS, NodeMechanism, calibrate, calibration_of
from dptree.hierarchy.plan import HierarchyPlanCore
from dptree.hierarchy.structure import Hierarchy
from dptree.privacy.budget import check_delta, check_epsilon, zcdp_rho_for
from dptree.privacy.measurement import MEASUREMENT_LIMIT
from dptree.privacy.statement import check_statement

__all__ = ["read_document", "jsonable"]

#: the mechanism as named by files that state no Gaussian calibration (zCDP only)
_ZCDP_ONLY = ("discrete Gaussian on every node (Ghazi et al. 2023, Corollary 2.7 / Lemma 2.6; zCDP analysis of "
              "Canonne, Kamath, Steinke 2020)")

def read_document(doc: Mapping[str, Any]) -> tuple[Hierarchy, dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(hierarchy, parameters, privacy statement, measurements) of a document, validated."""
    try:
        params = dict(doc["parameters"])
        h = Hierarchy.from_dict(params.pop("hierarchy"))
        stated = dict(doc["privacy"])
        meas = dict(doc["measurements"])
    except ReleaseFileError:
        raise
    except Exception as exc:
        raise ReleaseFileError(f"malformed hierarchy release: {exc}") from exc
    if params.get("method") not in METHODS:
        raise ReleaseFileError(f"unknown method {params.get('method')!r} in release")
    privacy = check_noise(h, params, stated, meas)
    return h, params, privacy, meas


def _mechanism(params: dict[str, Any]) -> NodeMechanism:
    method = params["method"]
    eps = check_epsilon(params["epsilon"])
    dlt = check_delta(params["delta"], required=method != "laplace")
    if method == "laplace" and dlt != 0:
        raise ReleaseFileError("hierarchy release: a Laplace release spends no delta (tampered?)")
    if method != "multiplicative" and (params.get("alpha") is not None or params.get("tau_min") is not None):
        raise ReleaseFileError("hierarchy release: alpha and tau_min belong to the multiplicative method (tampered?)")
    k = params["max_contributions"]
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ReleaseFileError("hierarchy release: max_contributions must be a positive integer")
    if method != "multiplicative":
        return NodeMechanism(method, eps, dlt if method == "gaussian" else 0.0, k)
    alpha, tau_min = float(params["alpha"]), float(params["tau_min"])
    if not 0 < alpha < 1 or not (math.isfinite(tau_min) and tau_min > 0):
        raise ReleaseFileError("hierarchy release: alpha or tau_min out of range")
    return NodeMechanism(method, eps, dlt, k, alpha, tau_min)


def _found_plan(params: dict[str, Any], h: Hierarchy, gaussian: str) -> FoundStructureCore | None:
    """The plan of a hierarchy found from the data (None for a public one), re-derived from the
    stated budget, split and level columns; the counts' budget and the tree's levels must be
    the ones they give."""
    spec = params.get("structure")
    if spec is None:
        return None
    if not isinstance(spec, dict) or spec.get("found") != FOUND or set(spec) != {"found", "levels", "epsilon", "delta",
                                                                                 "structure_share"}:
        raise ReleaseFileError("hierarchy release: malformed 'structure' parameters (tampered?)")
    plan = plan_found_structure(spec["levels"], epsilon=spec["epsilon"], delta=spec["delta"],
                                method=params["method"], structure_share=spec["structure_share"],
                                consistent=params.get("consistent", True), nonnegative=params.get("nonnegative", False),
                                integer=params.get("integer", False), gaussian=gaussian)
    m = plan.mechanism
    if (params["epsilon"], params["delta"], params["max_contributions"]) != (m.epsilon, m.delta, 1) or \
            list(h.levels) != list(plan.levels[:h.depth - 1]) or params.get("levels") != list(h.levels):
        raise ReleaseFileError("hierarchy release: the counts' budget or levels are not the ones the stated split "
                               "gives (tampered?)")
    return plan


def _integers(values: Any, n: int, *, bound: int | None = None) -> bool:
    return isinstance(values, list) and len(values) == n and all(
        isinstance(v, int) and not isinstance(v, bool) and (bound is None or abs(v) < bound) for v in values
    )


def check_noise(h: Hierarchy, params: dict[str, Any], stated: dict[str, Any], meas: dict[str, Any]) -> dict[str, Any]:
    """Re-derive the statement and the noise from the stated parameters; refuse a file where they
    disagree. Returns the privacy statement the release reports."""
    try:
        mech = _mechanism(params)
        d, n = h.depth, h.n_nodes
        if int(params["depth"]) != d:
            raise ReleaseFileError("hierarchy release: depth or max_contributions does not match the hierarchy")
        found = _found_plan(params, h, calibration_of(stated.get("release", stated)))
        plan = HierarchyPlanCore(h, calibrate(mech, d, gaussian=calibration_of(stated))) if found is None else found
        cal = plan.calibration
        derived = plan.statement_for(private=stated.get("private") is True)
        if found is None and mech.method == "gaussian" and "calibration" not in stated:
            # a file that states no calibration (zCDP): its statement names the zCDP mechanism
            del derived["calibration"]
            derived.update(mechanism=_ZCDP_ONLY, rho=zcdp_rho_for(mech.epsilon, mech.delta))
        privacy = check_statement(stated, derived, kind="hierarchy")
        if any(params.get(key) != value for key, value in cal.parameters.items()):
            raise ReleaseFileError(f"hierarchy release: parameters {sorted(cal.parameters)} do not match the ones "
                                   "derived from the budget (tampered?)")
        if cal.spec is not None:
            assert cal.noise_variance is not None
            if not math.isclose(float(meas["noise_variance"]), cal.noise_variance, rel_tol=1e-9):
                raise ReleaseFileError("hierarchy release: noise variance does not match the stated budget (tampered?)")
            if not _integers(meas["y"], n, bound=MEASUREMENT_LIMIT):
                raise ReleaseFileError(f"hierarchy release: measurements must be {n} integers")
        else:
            if int(meas["window"]) != cal.window:
                raise ReleaseFileError("hierarchy release: window does not match the stated budget (tampered?)")
            if not _integers(meas["window_center"], n):
                raise ReleaseFileError(f"hierarchy release: window centres must be {n} integers")
    except ReleaseFileError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, InvalidParameterError) as exc:
        raise ReleaseFileError(f"malformed hierarchy release parameters: {exc}") from exc
    return privacy


def jsonable(v: Any) -> Any:
    """A JSON-safe copy: numpy values to Python numbers, NaN to null, infinities to strings."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return jsonable(v.tolist())
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        if math.isnan(f):
            return None
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f
    if isinstance(v, np.bool_):
        return bool(v)
    return v
