"""A range tree as a release file's parts, and back (format: :mod:`dptree.io.release_file`).

``parameters`` hold the public inputs of :meth:`~dptree.rangetree.plan.TreePlan.build`;
``measurements`` the noisy node counts of every level (``null`` for an unmeasured level) and the
exact noise parameters as fractions. Loading re-plans from the parameters and refuses a file whose
noise parameters, layout or privacy statement do not match what the plan derives (the checksum
is not a signature). A file without ``gaussian_calibration`` is read as zCDP.
"""

from __future__ import annotations

from typing import Any, Mapping, TypeVar

import numpy as np

from dptree.errors import ReleaseFileError
from dptree.io.release_file import check_metadata
from dptree.privacy.statement import check_statement
from dptree.rangetree.bounds import checked_statement
from dptree.rangetree.contributions import checked_contributions_statement
from dptree.rangetree.plan import TreePlan

__all__ = ["range_tree_document", "range_tree_parts", "plan_from_parameters", "domain_inputs", "checked_levels"]

P = TypeVar("P", bound=TreePlan)


def _fractions(plan: TreePlan) -> list[str | None]:
    return [None if p is None else f"{p.numerator}/{p.denominator}" for p in plan.noise_parameters]


def range_tree_document(plan: TreePlan, measurements: list[np.ndarray | None], privacy: Mapping[str, Any],
                        metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of the file of a release of ``plan``: ``privacy``, ``parameters``, ``measurements``,
    ``metadata``."""
    dom = plan.domain
    if dom.kind == "datetime":
        lower: Any = str(np.datetime64(int(dom.lower), "ns"))
        upper: Any = str(np.datetime64(int(dom.upper), "ns"))
    else:
        lower, upper = dom.lower, dom.upper
    params = {
        "domain": {"kind": dom.kind, "lower": lower, "upper": upper, "width": dom.width, "size": dom.size},
        "branching": plan.layout.branching,
        "fanouts": list(plan.layout.fanouts),
        "noise": plan.noise,
        "neighbors": plan.neighbors,
        "max_contributions": plan.max_contributions,
        "levels": plan.levels,
        "gaussian_calibration": "exact" if "implied_rho" in plan.statement.get("calibration", {}) else "zcdp",
        "budget": {"epsilon": plan.budget.epsilon, "delta": plan.budget.delta, "rho": plan.budget.rho},
    }
    if "bounds" in privacy:  # private bounds: the search, its split and the bounds found (public)
        params["bounds"] = privacy["bounds"]
    if "contributions" in privacy:  # a private bound: the choice, its split and the bound chosen
        params["contributions"] = privacy["contributions"]
    meas = {
        "levels": [None if m is None else [int(v) for v in m] for m in measurements],
        "noise_parameters": _fractions(plan),
    }
    return {"privacy": privacy, "parameters": params, "measurements": meas, "metadata": metadata}


def domain_inputs(params: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """(lower, upper, width) as a plan takes them, from a file's ``parameters``."""
    dom = params["domain"]
    if dom["kind"] == "datetime":
        return np.datetime64(dom["lower"]), np.datetime64(dom["upper"]), np.timedelta64(int(dom["width"]), "ns")
    return dom["lower"], dom["upper"], dom["width"]


def _plan(params: Mapping[str, Any], plan_type: type[P]) -> P:
    dom = params["domain"]
    lower, upper, width = domain_inputs(params)
    budget = params["budget"]
    plan = plan_type.build(
        lower=lower,
        upper=upper,
        width=width,
        branching=params["branching"],
        epsilon=budget["epsilon"],
        delta=budget["delta"] or 0.0,
        rho=budget["rho"],
        noise=params["noise"],
        neighbors=params["neighbors"],
        max_contributions=params["max_contributions"],
        levels=params["levels"],
        gaussian_calibration=params.get("gaussian_calibration", "zcdp"),  # absent: zCDP
    )
    if plan.domain.size != dom["size"] or list(plan.layout.fanouts) != list(params["fanouts"]):
        raise ReleaseFileError("release file: domain or tree layout does not match its parameters")
    return plan


def plan_from_parameters(params: Mapping[str, Any], plan_type: type[P]) -> P:
    """The plan a file's ``parameters`` describe, its domain size and layout checked against them."""
    return _plan(params, plan_type)


def checked_levels(plan: TreePlan, levels: Any) -> list[np.ndarray | None]:
    """A file's noisy counts of every level of ``plan``'s tree, checked against the plan (which levels
    are measured, their sizes, integers below 2^62)."""
    if not isinstance(levels, list) or len(levels) != plan.layout.depth + 1:
        raise ReleaseFileError("release file: wrong number of levels")
    out: list[np.ndarray | None] = []
    for j, (vals, size) in enumerate(zip(levels, plan.layout.level_sizes)):
        should_exist = plan.noise_parameters[j] is not None or (j == 0 and plan.root_exact)
        if vals is None:
            if should_exist:
                raise ReleaseFileError(f"release file: level {j} measurements are missing")
            out.append(None)
            continue
        if not should_exist:
            raise ReleaseFileError(f"release file: level {j} should not be measured")
        if (
            not isinstance(vals, list)
            or len(vals) != size
            or not all(isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2**62 for v in vals)
        ):
            raise ReleaseFileError(f"release file: level {j} must hold {size} integers")
        out.append(np.asarray(vals, dtype=np.int64))
    if plan.root_exact and out[0] is not None and out[0][0] < 0:
        raise ReleaseFileError("release file: the public total cannot be negative")
    return out


def range_tree_parts(doc: Mapping[str, Any], plan_type: type[P]
                     ) -> tuple[P, list[np.ndarray | None], dict[str, Any], dict[str, Any]]:
    """(plan, measurements, privacy statement, metadata) of a validated document: the plan rebuilt
    by ``plan_type.build`` from the file's parameters, and the file's noise parameters, layout and
    privacy statement checked against it (:func:`check_statement`)."""
    plan = _plan(doc["parameters"], plan_type)
    meas = doc["measurements"]
    if meas["noise_parameters"] != _fractions(plan):
        raise ReleaseFileError("release file: noise parameters do not match the stated budget (tampered?)")
    measurements = checked_levels(plan, meas["levels"])
    raw = doc["privacy"]
    if not isinstance(raw, Mapping) or not isinstance(raw.get("private"), bool):
        raise ReleaseFileError("release file: privacy statement lacks the 'private' flag")
    params = doc["parameters"]
    if "bounds" in params and "contributions" in params:
        raise ReleaseFileError("release file: a tree over private bounds has a declared contribution bound")
    full = (checked_statement(params["bounds"], plan) if "bounds" in params else
            checked_contributions_statement(params["contributions"], plan) if "contributions" in params else
            plan.statement)
    derived = dict(full)
    if "budget_split" not in raw:  # a file may not record the workload
        derived.pop("budget_split", None)
    privacy = check_statement(raw, derived, kind="range_tree")
    return plan, measurements, privacy, check_metadata(doc.get("metadata"))
