"""``dptree query``: answer queries from a saved release (post-processing, no privacy cost).

Range trees answer ``--count``/``--cdf``/``--quantile``/``--total`` and ``--histogram``/``--bins``
(a range tree with sums also ``--sum``/``--mean``, and its bins' sums and means);
hierarchy releases answer ``--node PATH``; 2-D releases answer ``--rect X0:X1,Y0:Y1`` and
``--total``; a quantiles release shows its levels. Options that the
release's kind does not answer are refused, never ignored.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from typing import Any, Callable

import numpy as np

from dptree.cli import core
from dptree.errors import InvalidParameterError
from dptree.io.contract import shown

__all__ = ["register", "query_hierarchy", "print_rows", "quantiles_rows"]


def register(sub: Any) -> None:
    p = sub.add_parser("query", help="answer queries from a saved release (no privacy cost)")
    p.add_argument("release")
    p.add_argument("--count", action="append", default=[], metavar="LO:HI",
                   help="records with LO <= value <= HI (for dates use LO,HI)")
    p.add_argument("--sum", action="append", default=[], metavar="LO:HI",
                   help="releases with sums (--weights): the sum of the weights of the records with LO <= value <= HI")
    p.add_argument("--mean", action="append", default=[], metavar="LO:HI",
                   help="releases with sums (--weights): their mean weight")
    p.add_argument("--cdf", action="append", default=[], metavar="X", help="records with value <= X")
    p.add_argument("--quantile", action="append", default=[], type=float, metavar="Q")
    p.add_argument("--total", action="store_true", help="the estimated number of records")
    p.add_argument("--histogram", metavar="E0,E1,...",
                   help="counts of the bins [E0, E1), [E1, E2), ..., the last bin closed")
    p.add_argument("--bins", type=int, metavar="N", help="a histogram of about N bins with round edges")
    p.add_argument("--rect", action="append", default=[], metavar="X0:X1,Y0:Y1",
                   help="2-D releases: records with X0 <= x <= X1 and Y0 <= y <= Y1")
    p.add_argument("--node", action="append", default=[], metavar="PATH",
                   help="hierarchy releases: node path, e.g. US/CA")
    p.add_argument("--ci", type=float, default=None,
                   help="confidence level of the intervals (default 0.95; a quantiles release: its own level)")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=run_query)


def run_query(args: argparse.Namespace) -> int:
    from dptree import load  # every release kind registered (the package root imports them on load)

    release = load(args.release)
    answer = core.for_kind(_ANSWERS, release, "query")
    if args.ci is not None and answer is _point_rows:  # a point has no interval to change
        raise InvalidParameterError(f"--ci: a {core.release_kind(release)} release holds a value without an "
                                    "interval; drop --ci")
    args.ci = core.release_level(release, args.ci)
    rows = answer(release, args)
    header = release.summary()
    if args.format == "json":
        answers = [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
        print(json.dumps({"release": header, "ci_level": args.ci, "answers": answers}, indent=2))
    else:
        print_rows(rows, args.ci, header)
    return 0


# --------------------------------------------------------------------------- range trees


def _range_tree_rows(release: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Rows of :meth:`RangeTree.answer` (numbers stay numbers, quantiles get intervals), then the
    bins of ``--histogram``/``--bins``."""
    if args.rect:
        raise InvalidParameterError("--rect applies to 2-D releases; this is a 1-D range tree: use --count LO:HI")
    if args.node:
        raise InvalidParameterError("--node applies to hierarchy releases; this is a range tree")
    sums = core.release_kind(release) == "range_sums"
    if (args.sum or args.mean) and not sums:
        raise InvalidParameterError("--sum and --mean need a release with sums (dptree release --weights COLUMN "
                                    "--weight-bounds LO,HI); this one holds counts only")
    count = [_range(text, release, "--count") for text in args.count]
    cdf = [_query_value(text, release) for text in args.cdf]
    edges = _histogram_edges(release, args)
    if args.quantile:
        core.check_levels(args.quantile, "--quantile")
    asked = bool(count or cdf or args.quantile or args.total)
    other = edges is not None or args.sum or args.mean
    rows = [] if other and not asked else list(release.answer(count=count, cdf=cdf, quantile=args.quantile,
                                                              total=args.total, level=args.ci).rows)
    for flag, texts in (("sum", args.sum), ("mean", args.mean)):
        for text in texts:
            lo, hi = _range(text, release, f"--{flag}")
            low, high = getattr(release, f"{flag}_ci")(lo, hi, level=args.ci)
            rows.append({"query": f"{flag}[{release.json_value(lo)}, {release.json_value(hi)}]",
                         "estimate": float(getattr(release, flag)(lo, hi)),
                         "stderr": float(getattr(release, f"{flag}_stderr")(lo, hi)),
                         "ci_low": float(low), "ci_high": float(high)})
    if edges is not None:
        h = release.histogram(edges, level=args.ci)
        show = release.json_value
        last = len(edges) - 2
        for i in range(len(edges) - 1):
            rows.append({"query": f"bin[{show(edges[i])}, {show(edges[i + 1])}{']' if i == last else ')'}",
                         "estimate": float(h.counts[i]), "stderr": float(h.stderr[i]),
                         "ci_low": float(h.ci_low[i]), "ci_high": float(h.ci_high[i])})
            if sums:
                for name, est, se, ci in (("sum", h.sums, h.sum_stderr, h.sum_ci),
                                          ("mean", h.means, h.mean_stderr, h.mean_ci)):
                    rows.append({"query": f"  {name}", "estimate": float(est[i]), "stderr": float(se[i]),
                                 "ci_low": float(ci[0][i]), "ci_high": float(ci[1][i])})
    return rows


def _range(text: str, release: Any, flag: str) -> tuple[Any, Any]:
    """``LO:HI`` (or ``LO,HI``) of ``flag`` as query values of the release's domain."""
    lo_t, hi_t = _split_range(text, release.domain.kind)
    lo, hi = _query_value(lo_t, release), _query_value(hi_t, release)
    if lo > hi:
        raise InvalidParameterError(f"{flag} LO:HI needs LO <= HI, got {text!r}")
    return lo, hi


def _split_range(text: str, kind: str) -> tuple[str, str]:
    if "," in text:
        lo, _, hi = text.partition(",")
    elif kind != "datetime" and text.count(":") == 1:
        lo, _, hi = text.partition(":")
    else:
        if kind == "datetime":  # times of day hold ':' themselves
            raise InvalidParameterError(f"--count on a date release needs LO,HI (e.g. 2024-01-01,2024-06-30); "
                                        f"got {text!r}")
        raise InvalidParameterError(f"--count needs LO:HI (or LO,HI); got {text!r}")
    return lo.strip(), hi.strip()


def _query_value(text: str, release: Any) -> Any:
    if release.domain.kind == "datetime":
        # ISO dates only: numpy reads a bare number such as 20240101 as a year
        if not re.fullmatch(r"\s*[+-]?\d{4,}-\d{2}(-\d{2}([T ].*)?)?\s*", text):
            raise InvalidParameterError(f"{text!r} is not a date: this release's domain is dates; give ISO dates "
                                        "such as 2024-01-31 or 2024-01-31T12:00")
        try:
            return np.datetime64(text.strip())
        except ValueError as exc:
            raise InvalidParameterError(f"{text!r} is not a date") from exc
    try:
        return float(text) if release.domain.kind == "float" else int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError as exc:
            raise InvalidParameterError(f"{text!r} is not a number") from exc


def _histogram_edges(release: Any, args: argparse.Namespace) -> Any:
    """The edges of ``--histogram E0,E1,...`` or of ``--bins N`` (round edges over the domain)."""
    if args.histogram is not None and args.bins is not None:
        raise InvalidParameterError("give --histogram EDGES or --bins N, not both")
    if args.histogram is not None:
        parts = [t.strip() for t in args.histogram.split(",")]
        if len(parts) < 2 or any(not t for t in parts):
            raise InvalidParameterError("--histogram needs at least two comma-separated edges, e.g. 0,18,65,120")
        return np.asarray([_query_value(t, release) for t in parts])
    if args.bins is not None:
        from dptree.reporting.plot import nice_edges

        if core.release_kind(release) == "sparse_range_tree":
            raise InvalidParameterError("--bins spaces round edges over a bounded domain; a sparse range tree's may "
                                        "span 2^64 keys: give the edges with --histogram E0,E1,...")
        if args.bins < 1:
            raise InvalidParameterError(f"--bins must be at least 1, got {args.bins}")
        return nice_edges(release.domain, args.bins)
    return None


# --------------------------------------------------------------------------- 2-D releases


def _rect_rows(release: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Rows for ``--rect X0:X1,Y0:Y1`` and ``--total`` (the whole grid) of a 2-D release."""
    given = [flag for flag, v in (("--count", args.count), ("--cdf", args.cdf), ("--quantile", args.quantile),
                                  ("--node", args.node), ("--histogram", args.histogram), ("--bins", args.bins),
                                  ("--sum", args.sum), ("--mean", args.mean)) if v]
    if given:
        raise InvalidParameterError(f"{', '.join(given)}: a 2-D release answers rectangle counts: ask with "
                                    "--rect X0:X1,Y0:Y1 (or --total)")
    g = release.grid
    rects = [_rect(text) for text in args.rect]
    if args.total or not rects:
        rects.insert(0, ((g.x.lower, g.x.upper), (g.y.lower, g.y.upper)))
    rows = []
    for i, (x, y) in enumerate(rects):
        low, high = release.ci(x, y, level=args.ci)
        whole = i == 0 and (args.total or not args.rect)
        name = "total" if whole else f"rect[{x[0]:g}, {x[1]:g}] x [{y[0]:g}, {y[1]:g}]"
        rows.append({"query": name, "estimate": float(release.count(x, y)), "stderr": float(release.stderr(x, y)),
                     "ci_low": float(low), "ci_high": float(high)})
    return rows


def _rect(text: str) -> tuple[tuple[float, float], tuple[float, float]]:
    """``X0:X1,Y0:Y1`` as ((x0, x1), (y0, y1))."""
    sides = text.split(",")
    try:
        if len(sides) != 2 or any(side.count(":") != 1 for side in sides):
            raise ValueError
        (x0, x1), (y0, y1) = ((float(v) for v in side.split(":")) for side in sides)
    except ValueError:
        raise InvalidParameterError(f"--rect needs X0:X1,Y0:Y1 (numbers), e.g. --rect 0:10,5:20; got {text!r}") \
            from None
    if x0 > x1 or y0 > y1:
        raise InvalidParameterError(f"--rect X0:X1,Y0:Y1 needs X0 <= X1 and Y0 <= Y1, got {text!r}")
    return (x0, x1), (y0, y1)


# --------------------------------------------------------------------------- hierarchies


def _hierarchy_rows(release: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Rows for ``--node PATH`` (the root's total without any)."""
    given = [flag for flag, v in (("--count", args.count), ("--cdf", args.cdf), ("--quantile", args.quantile),
                                  ("--sum", args.sum), ("--mean", args.mean), ("--rect", args.rect)) if v]
    if given:
        raise InvalidParameterError(
            f"{', '.join(given)}: only range-tree releases answer these; this release is a {type(release).__name__}"
            "; ask for nodes with --node PATH (e.g. --node US/CA)"
        )
    if args.histogram is not None or args.bins is not None:
        raise InvalidParameterError("--histogram and --bins apply to range-tree releases; use --node PATH here")
    rows = []
    for node in args.node or [""]:
        lo, hi = release.ci(node, args.ci)
        se = release.stderr(node)
        rows.append({"query": node or "(total)", "estimate": release.count(node),
                     "stderr": None if math.isnan(se) else se, "ci_low": lo, "ci_high": hi})
    return rows


def query_hierarchy(release: Any, nodes: list[str], ci: float = 0.95) -> list[dict[str, Any]]:
    """Answer node queries on a hierarchy release: one dict per node with its path, count,
    stderr and a ``ci``-level interval (post-processing; no budget). ``release`` may be a
    :class:`~dptree.hierarchy.release.HierarchyRelease`, its ``to_dict()`` or a file path."""
    from dptree.hierarchy import HierarchyRelease, load_hierarchy_release

    if isinstance(release, str):
        release = load_hierarchy_release(release)
    elif isinstance(release, dict):
        release = HierarchyRelease.from_dict(release)
    out = []
    for node in nodes:
        lo, hi = release.ci(node, ci)
        out.append({"node": node, "count": release.count(node), "stderr": release.stderr(node), "ci_level": ci,
                    "ci_low": lo, "ci_high": hi, "method": release.method})
    return out


def _no_queries(args: argparse.Namespace, what: str) -> None:
    """Refuse query options on a release that holds only its own answers."""
    given = [flag for flag, v in (("--count", args.count), ("--cdf", args.cdf), ("--quantile", args.quantile),
                                  ("--node", args.node), ("--total", args.total), ("--histogram", args.histogram),
                                  ("--bins", args.bins), ("--sum", args.sum), ("--mean", args.mean),
                                  ("--rect", args.rect)) if v]
    if given:
        raise InvalidParameterError(f"{', '.join(given)}: {what}; query it without options (release a range tree "
                                    "to answer other queries)")


def _quantiles_rows(release: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """A quantiles release's own levels and intervals (it answers nothing else: its intervals are at
    the level it was released with)."""
    _no_queries(args, "a quantiles release holds only its own levels")
    return quantiles_rows(release)


def _point_rows(release: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The one value of an interior point, a single quantile (median) or a threshold release (no
    standard error, no interval)."""
    _no_queries(args, f"a {core.release_kind(release)} release holds only its own value")
    kind = core.release_kind(release)
    if kind == "threshold":  # a threshold point, or a constant classifier
        name, value = (("threshold", release.threshold) if release.threshold is not None
                       else ("constant classifier", release.constant))
    elif kind == "quantile":
        name, value = ("median" if release.q == 0.5 else f"quantile({release.q:g})"), release.value
    else:
        name, value = "interior_point" + (" (bottom: no answer)" if release.bottom else ""), release.value
    value = value.item() if hasattr(value, "item") and not isinstance(value, np.datetime64) else value
    return [{"query": name, "estimate": value if isinstance(value, (int, float)) else shown(value), "stderr": None,
             "ci_low": None, "ci_high": None}]


Rows = Callable[[Any, argparse.Namespace], list[dict[str, Any]]]


def _by_group(rows: Rows) -> Rows:
    """The rows of a group-by release: every group's answers to the same query, each row's query
    prefixed by its group."""
    def grouped(release: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
        return [{**row, "query": f"{group}: {row['query']}", "group": group}
                for group, one in release.items() for row in rows(one, args)]

    return grouped


def quantiles_rows(res: Any) -> list[dict[str, Any]]:
    """One table row per level of a quantiles release (no standard error: intervals only)."""
    return [{"query": f"quantile({q:g})", "estimate": v, "stderr": None, "ci_low": lo, "ci_high": hi}
            for q, v, lo, hi in zip(res.q, res.values, res.ci_low, res.ci_high)]


#: How ``dptree query`` answers each kind of release.
_ANSWERS: dict[str, Rows] = {
    "range_tree": _range_tree_rows,
    "range_sums": _range_tree_rows,
    "factorized_cdf": _range_tree_rows,
    "range_tree_groups": _by_group(_range_tree_rows),
    "range_tree_private_groups": _by_group(_range_tree_rows),
    "sparse_range_tree": _range_tree_rows,
    "hierarchy": _hierarchy_rows,
    "quantiles": _quantiles_rows,
    "quantiles_groups": _by_group(_quantiles_rows),
    "quantiles_private_groups": _by_group(_quantiles_rows),
    "interior_point": _point_rows,
    "quantile": _point_rows,
    "threshold": _point_rows,
    "range_tree_2d": _rect_rows,
    "range_tree_2d_privtree": _rect_rows,
}


# --------------------------------------------------------------------------- the table


def _number(v: Any) -> str:
    return f"{v:,.1f}" if isinstance(v, float) else str(v)


def _value(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else shown(v)


def print_rows(rows: list[dict[str, Any]], level: float, header: str) -> None:
    """The answers as a table under ``header``: query, estimate, stderr, the ``level`` interval."""
    print(header)
    cols = ["query", "estimate", "stderr", f"{level:.0%} CI"]
    body = []
    for r in rows:
        fmt = _number if r["stderr"] is not None else _value  # a quantile's values are domain values
        se = "" if r["stderr"] is None else f"{r['stderr']:,.1f}"
        ci = "" if r["ci_low"] is None else f"[{fmt(r['ci_low'])}, {fmt(r['ci_high'])}]"
        body.append([r["query"], fmt(r["estimate"]), se, ci])
    widths = [max(len(c), *(len(b[i]) for b in body)) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    print("  ".join("-" * w for w in widths))
    for b in body:
        print("  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(b, widths))))
