"""The command line's flag of every library parameter: one table (:data:`FLAGS`).

A library error names its parameter (:attr:`dptree.errors.DPTreeError.parameter`) and opens its
message with it; it writes a setting it suggests as a Python keyword argument (``on_invalid='drop'``,
``delta=1e-6``). :func:`in_cli_terms` shows both as the running command's flags (``--on-invalid
drop``, ``--delta 1e-6``), for the parameters of this table only (where the message gives both
spellings, "unknown='drop' (--unknown-groups drop)", the command line's), and drops the choice of
None that a shell cannot pass.
"""

from __future__ import annotations

import re
from typing import Mapping

from dptree.errors import DPTreeError

__all__ = ["FLAGS", "flag_of", "in_cli_terms"]

#: parameter -> its flag, or {command: flag} where commands spell it differently ("" for the
#: others), or None: a parameter of the Python API that no command takes.
FLAGS: Mapping[str, str | Mapping[str, str] | None] = {
    # the budget and the privacy unit
    "epsilon": "--epsilon", "delta": {"budget": "--total-delta", "": "--delta"}, "rho": "--rho",
    "total_epsilon": "--total-epsilon", "total_delta": "--total-delta", "total_rho": "--total-rho",
    "neighbors": "--neighbors", "max_contributions": "--max-contributions", "user_id": "--user-id",
    "contributions_share": "--contributions-share", "contributions_cap": "--contributions-cap",
    "allow_nonprivate": "--allow-nonprivate", "rng": "--seed", "seed": "--seed",
    # the domain
    "lower": "--lower", "upper": "--upper", "width": "--width", "bounds": "--bounds", "bounds_share": "--bounds-share",
    "origin": "--bounds-origin",
    # the data and its groups
    "column": "--column", "columns": "--columns", "resolution": "--resolution",
    "fmt": "--format", "on_invalid": "--on-invalid", "missing": "--on-invalid",
    "infinite": "--on-invalid", "by": "--by", "groups": "--groups", "max_groups": "--max-groups",
    "groups_share": "--groups-share",
    "unknown": {"release": "--unknown-groups", "quantiles": "--unknown-groups", "": "--unknown"},
    # range trees
    "branching": "--branching", "noise": "--noise", "levels": "--levels", "sparse": "--sparse",
    "weights": "--weights", "weight_bounds": "--weight-bounds", "weight_resolution": "--weight-resolution",
    "sum_share": "--sum-share",
    # hierarchies
    "method": "--method", "alpha": "--alpha", "tau_min": "--tau-min", "weight": "--weight", "other": "--other",
    "consistent": "--no-consistent", "nonnegative": "--nonnegative", "integer": "--integer",
    # quantiles and interior points
    "q": {"query": "--quantile", "": "--q"}, "n": "--n", "n_max": "--n-max", "n_min": "--n-min", "beta": "--beta",
    "run_anyway": "--run-anyway", "interval": "--interval", "interval_share": "--interval-share",
    "level": {"query": "--ci", "plot": "--ci", "report": "--ci", "": "--level"},
    # continual counters
    "horizon": "--horizon", "mechanism": "--mechanism", "max_participations": "--max-participations",
    # outputs
    "force": "--force", "bins": "--bins", "depth": "--depth", "kind": "--kind", "log": "--log",
    "clip_negative": "--clip-negative", "title": "--title", "node": "--node",
    # parameters of the Python API only
    "values": None, "data": None, "hierarchy": None, "paths": None, "frame": None, "parent": None,
    "root_label": None, "name": None, "size": None, "height": None, "sensitivity": None, "eta": None,
    "dither": None, "structure_share": None, "dense_depth": None, "threshold": None, "progress": None,
    "engine": None, "grid": None, "tables": None, "path": None, "source": None, "created": None,
    "confidence": None, "fraction": None, "gaussian_calibration": None, "k": None, "monotone": None,
    "normalize": None, "reps": None, "strategy": None, "total": "--total", "cap": None, "above": None,
}

#: a setting a message suggests: a parameter as a Python keyword argument and its value (quoted or
#: not; none after ``lower=``)
_SETTING = re.compile(r"(?<![\w.-])([a-z][a-z0-9_]*)=('[^']*'|[^\s,;:)']*)")
#: the Python spelling of a setting or function followed by its command-line spelling in parentheses
#: ("unknown='drop' (--unknown-groups drop)", "dptree.sparse_range_tree (dptree release --sparse)")
_BOTH = re.compile(r"(?:[a-z][a-z0-9_]*=(?:'[^']*'|[^\s,;:)']*)|dptree\.[\w.]+) \(((?:--|dptree )[^)]*)\)")
#: choices a shell cannot pass, dropped from a message whose subject is a flag
_PYTHON_ONLY = ("None or ", ", or None to choose it")


def flag_of(parameter: str, command: str | None) -> str | None:
    """The flag of ``parameter`` in ``command`` (None: it has none)."""
    flag = FLAGS.get(parameter)
    if isinstance(flag, Mapping):
        return flag.get(command or "", flag[""])
    return flag


def in_cli_terms(exc: DPTreeError, command: str | None, flags: set[str]) -> str:
    """The message of ``exc`` with its parameter and the settings it suggests shown as the flags of
    ``command`` (``flags``: its options; a parameter whose flag is not one of them keeps its name)."""
    message = str(exc)

    def flag(name: str) -> str | None:
        f = flag_of(name, command)
        return f if f in flags else None

    subject = exc.parameter and flag(exc.parameter)
    if subject and exc.parameter and message.startswith(exc.parameter + " "):
        message = subject + message[len(exc.parameter):]
        for choice in _PYTHON_ONLY:
            message = message.replace(choice, "")

    def setting(m: re.Match[str]) -> str:
        f, value = flag(m.group(1)), m.group(2).strip("'")
        if f is None:
            return m.group(0)
        return f if value in ("", "True") else f"{f} {value}"

    return _SETTING.sub(setting, _BOTH.sub(r"\1", message))
