"""Reading a hierarchy release's file document: the tree, the privacy statement in the one schema
(:func:`dptree.privacy.statement.read_statement`; files with the old ``neighbors`` /
``library_version`` spelling still load) and the noise re-derived from the stated parameters.

A file whose stated budget, sensitivity, noise parameter, noise variance or window disagrees with
what :func:`dptree.hierarchy.measure.calibrate` derives from its parameters is refused (the
checksum is not a signature: this is what catches an edited budget). Measurements must have the
tree's shape. Nothing here reads private data: a file holds only public values.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from dptree.errors import InvalidParameterError, ReleaseFileError
from dptree.hierarchy.measure import METHODS, NodeMechanism, calibrate, calibration_of
from dptree.hierarchy.structure import Hierarchy
from dptree.privacy.budget import check_delta, check_epsilon
from dptree.privacy.measurement import MEASUREMENT_LIMIT
from dptree.privacy.statement import read_statement

__all__ = ["read_document", "jsonable"]

#: statement fields every hierarchy release states besides the schema's required ones
_STATED = ("epsilon", "delta", "sensitivity")


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
    if "max_contributions" not in stated and "neighbours" in stated:  # files before the schema
        stated["max_contributions"] = params.get("max_contributions")
    privacy = read_statement(stated, kind="hierarchy")
    for key in _STATED:
        if key not in privacy:
            raise ReleaseFileError(f"hierarchy release lacks privacy field {key!r}")
    if params.get("method") not in METHODS:
        raise ReleaseFileError(f"unknown method {params.get('method')!r} in release")
    check_noise(h, params, privacy, meas)
    return h, params, privacy, meas


def _mechanism(params: dict[str, Any]) -> NodeMechanism:
    method = params["method"]
    eps = check_epsilon(params["epsilon"])
    dlt = check_delta(params["delta"], required=method != "laplace")
    k = params["max_contributions"]
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ReleaseFileError("hierarchy release: max_contributions must be a positive integer")
    if method != "multiplicative":
        return NodeMechanism(method, eps, dlt if method == "gaussian" else 0.0, k)
    alpha, tau_min = float(params["alpha"]), float(params["tau_min"])
    if not 0 < alpha < 1 or not (math.isfinite(tau_min) and tau_min > 0):
        raise ReleaseFileError("hierarchy release: alpha or tau_min out of range")
    return NodeMechanism(method, eps, dlt, k, alpha, tau_min)


def _integers(values: Any, n: int, *, bound: int | None = None) -> bool:
    return isinstance(values, list) and len(values) == n and all(
        isinstance(v, int) and not isinstance(v, bool) and (bound is None or abs(v) < bound) for v in values
    )


def check_noise(h: Hierarchy, params: dict[str, Any], privacy: dict[str, Any], meas: dict[str, Any]) -> None:
    """Re-derive the noise from the stated parameters; reject a file where they disagree."""
    try:
        mech = _mechanism(params)
        d, n = h.depth, h.n_nodes
        if int(params["depth"]) != d:
            raise ReleaseFileError("hierarchy release: depth or max_contributions does not match the hierarchy")
        if privacy["max_contributions"] != mech.max_contributions or privacy["neighbors"] != "add_remove":
            raise ReleaseFileError("hierarchy release: privacy statement disagrees with the parameters (tampered?)")
        if float(privacy["epsilon"]) != mech.epsilon or float(privacy["delta"]) != mech.delta:
            raise ReleaseFileError("hierarchy release: privacy statement disagrees with the parameters (tampered?)")
        cal = calibrate(mech, d, gaussian=calibration_of(privacy))
        if cal.spec is not None:
            assert cal.noise_variance is not None
            if not math.isclose(float(meas["noise_variance"]), cal.noise_variance, rel_tol=1e-9):
                raise ReleaseFileError("hierarchy release: noise variance does not match the stated budget (tampered?)")
            sens_key = "l1" if mech.method == "laplace" else "l2_squared"
            want_sens, want_noise = cal.statement["sensitivity"], cal.statement["noise"]
            stated_ok = privacy["sensitivity"].get(sens_key) == want_sens[sens_key] and all(
                math.isclose(float(privacy["noise"][key]), v, rel_tol=1e-12) for key, v in want_noise.items()
            )
            if not stated_ok:
                raise ReleaseFileError("hierarchy release: privacy statement does not match its parameters (tampered?)")
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
