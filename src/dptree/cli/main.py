"""The ``dptree`` command line: release from CSV/Parquet files (through DuckDB), query, plot.

Errors are one line on stderr and a non-zero exit status (2 for bad input, 3 for an internal
error; set DPTREE_DEBUG=1 to see the traceback of the latter).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import sys
import time
from typing import Any, Sequence

import numpy as np

from dptree import __version__
from dptree.errors import DPTreeError, InvalidParameterError
from dptree.io.release_file import load
from dptree.rangetree.release import RangeTree, plan_range_tree

__all__ = ["main", "build_parser"]


class _Progress:
    """Stage messages on stderr when it is a terminal (or with --progress)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.t0 = time.perf_counter()

    def __call__(self, msg: str) -> None:
        if self.enabled:
            print(f"dptree: {msg} [{time.perf_counter() - self.t0:.1f}s]", file=sys.stderr, flush=True)


def _parse_bound(text: str) -> Any:
    """An int, a float, or a date/timestamp string (left for the domain to parse)."""
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(d|h|m|s|w)\s*$")


def _parse_width(text: str | None, lower: Any) -> Any:
    if text is None:
        return None
    if isinstance(lower, str):
        m = _DURATION.match(text)
        if not m:
            raise InvalidParameterError(f"date width must look like 1d, 12h, 30m, 10s or 1w; got {text!r}")
        unit = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds", "w": "weeks"}[m.group(2)]
        return _dt.timedelta(**{unit: float(m.group(1))})
    return _parse_bound(text)


def _add_release(sub: Any) -> None:
    p = sub.add_parser("release", help="release a private range tree of one column of a CSV/Parquet file")
    p.add_argument("file", help="CSV or Parquet file, or - for CSV on stdin")
    p.add_argument("--column", required=True)
    p.add_argument("--lower", required=True, help="public lower bound (number or date)")
    p.add_argument("--upper", required=True, help="public upper bound (number or date)")
    p.add_argument("--epsilon", type=float)
    p.add_argument("--delta", type=float, default=0.0)
    p.add_argument("--rho", type=float)
    p.add_argument("--width", help="public bucket width (number; for dates e.g. 1d, 6h)")
    p.add_argument("--branching", type=int)
    p.add_argument("--noise", choices=["laplace", "gaussian"], default="laplace")
    p.add_argument("--neighbors", choices=["add_remove", "replace"], default="add_remove")
    p.add_argument("--max-contributions", type=int, default=1)
    p.add_argument("--levels", choices=["uniform", "optimal"], default="uniform")
    p.add_argument("--missing", choices=["error", "drop"], default="error")
    p.add_argument(
        "--format", dest="input_format", choices=["csv", "parquet"], help="input format (default: from the name)"
    )
    p.add_argument("--seed", type=int, help="TESTS ONLY: seeded, NOT private release")
    p.add_argument("--allow-nonprivate", action="store_true", help="allow saving a seeded release")
    p.add_argument("--out", required=True, help="where to write the release (JSON)")
    add_force_option(p, "release")
    p.add_argument("--progress", action="store_true", help="print progress even when stderr is not a terminal")
    p.set_defaults(func=_cmd_release)


def _cmd_release(args: argparse.Namespace) -> int:
    """A release without --ledger/--user-id/--by (those go through ``_cli_scale``): every public
    check, the --out path included, comes before the data is read."""
    from dptree.cli.core import check_exact_total, check_input_path, check_output_path
    from dptree.data.engines.duckdb import file_leaf_histogram

    progress = _Progress(args.progress or sys.stderr.isatty())
    if args.seed is not None and not args.allow_nonprivate:
        raise InvalidParameterError("--seed makes a NOT private release; add --allow-nonprivate to save it")
    lower = _parse_bound(args.lower)
    upper = _parse_bound(args.upper)
    plan = plan_range_tree(
        lower=lower,
        upper=upper,
        epsilon=args.epsilon,
        delta=args.delta,
        rho=args.rho,
        width=_parse_width(args.width, lower),
        branching=args.branching,
        noise=args.noise,
        neighbors=args.neighbors,
        max_contributions=args.max_contributions,
        levels=args.levels,
    )
    check_exact_total(args)
    check_input_path(args.file)
    check_output_path(args.out, inputs=[args.file], force=args.force)
    progress(f"planned a {plan.layout.branching}-ary tree over {plan.domain.size} buckets")
    from dptree.io.release_file import _utc_now

    created = _utc_now()  # before the data is read: the file must not time the reading
    hist = file_leaf_histogram(
        args.file,
        args.column,
        plan.domain,
        plan.layout.padded_size,
        missing=args.missing,
        fmt=args.input_format,
        progress=progress if progress.enabled else None,
    )
    progress("histogram computed; adding noise and estimating")
    release = plan.release(hist, rng=args.seed, column=args.column, source=args.file, created=created)
    release.save(args.out, allow_nonprivate=args.allow_nonprivate, force=args.force)
    print(release.summary())
    print(f"wrote {args.out}")
    return 0


def add_force_option(p: Any, what: str) -> None:
    """--force: overwrite an existing --out that is not a dptree {what} (never an input, a link,
    a pipe or a device)."""
    p.add_argument(
        "--force", action="store_true", help=f"overwrite an existing --out file that is not a dptree {what}"
    )


def _add_query(sub: Any) -> None:
    p = sub.add_parser("query", help="answer queries from a saved release (no privacy cost)")
    p.add_argument("release")
    p.add_argument(
        "--count",
        action="append",
        default=[],
        metavar="LO:HI",
        help="records with LO <= value <= HI (for dates use LO,HI)",
    )
    p.add_argument("--cdf", action="append", default=[], metavar="X", help="records with value <= X")
    p.add_argument("--quantile", action="append", default=[], type=float, metavar="Q")
    p.add_argument("--total", action="store_true", help="the estimated number of records")
    p.add_argument("--histogram", metavar="E0,E1,...",
                   help="counts of the bins [E0, E1), [E1, E2), ..., the last bin closed")
    p.add_argument("--bins", type=int, metavar="N", help="a histogram of about N bins with round edges")
    p.add_argument(
        "--node", action="append", default=[], metavar="PATH", help="hierarchy releases: node path, e.g. US/CA"
    )
    p.add_argument("--ci", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=_cmd_query)


def _split_range(text: str, kind: str) -> tuple[str, str]:
    if "," in text:
        lo, _, hi = text.partition(",")
    elif kind != "datetime" and text.count(":") == 1:
        lo, _, hi = text.partition(":")
    else:
        raise InvalidParameterError(f"--count needs LO:HI (or LO,HI for dates); got {text!r}")
    return lo.strip(), hi.strip()


def _query_value(text: str, release: RangeTree) -> Any:
    if release.domain.kind == "datetime":
        try:
            return np.datetime64(text)
        except ValueError as exc:
            raise InvalidParameterError(f"{text!r} is not a date") from exc
    try:
        return float(text) if release.domain.kind == "float" else int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError as exc:
            raise InvalidParameterError(f"{text!r} is not a number") from exc


def _range_tree_answers(release: RangeTree, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Rows of ``dptree query`` (:meth:`RangeTree.answer`: numbers stay numbers, quantiles get
    intervals), then the bins of ``--histogram``/``--bins``."""
    count = []
    for text in args.count:
        lo_t, hi_t = _split_range(text, release.domain.kind)
        count.append((_query_value(lo_t, release), _query_value(hi_t, release)))
    cdf = [_query_value(text, release) for text in args.cdf]
    edges = _histogram_edges(release, args)
    asked = bool(count or cdf or args.quantile or args.total)
    rows = [] if edges is not None and not asked else release.answer(
        count=count, cdf=cdf, quantile=args.quantile, total=args.total, level=args.ci).rows
    if edges is not None:
        h = release.histogram(edges, level=args.ci)
        show = release._json_value
        last = len(edges) - 2
        for i in range(len(edges) - 1):
            rows.append({"query": f"bin[{show(edges[i])}, {show(edges[i + 1])}{']' if i == last else ')'}",
                         "estimate": float(h.counts[i]), "stderr": float(h.stderr[i]),
                         "ci_low": float(h.ci_low[i]), "ci_high": float(h.ci_high[i])})  # type: ignore[index]
    return rows


def _histogram_edges(release: RangeTree, args: argparse.Namespace) -> Any:
    """The edges of ``--histogram E0,E1,...`` or of ``--bins N`` (round edges over the domain)."""
    if args.histogram is not None and args.bins is not None:
        raise InvalidParameterError("give --histogram EDGES or --bins N, not both")
    if args.histogram is not None:
        parts = [t.strip() for t in args.histogram.split(",")]
        if len(parts) < 2 or any(not t for t in parts):
            raise InvalidParameterError("--histogram needs at least two comma-separated edges, e.g. 0,18,65,120")
        vals = [_query_value(t, release) for t in parts]
        return np.array(vals) if release.domain.kind == "datetime" else np.asarray(vals)
    if args.bins is not None:
        from dptree.reporting.plot import nice_edges

        if args.bins < 1:
            raise InvalidParameterError(f"--bins must be at least 1, got {args.bins}")
        return nice_edges(release.domain, args.bins)
    return None


def _number(v: Any) -> str:
    return f"{v:,.1f}" if isinstance(v, float) else str(v)


def _value(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _print_table(rows: list[dict[str, Any]], level: float, header: str) -> None:
    print(header)
    cols = ["query", "estimate", "stderr", f"{level:.0%} CI"]
    body = []
    for r in rows:
        fmt = _number if r["stderr"] is not None else _value  # a quantile's values are domain values
        se = "" if r["stderr"] is None else f"{r['stderr']:,.1f}"
        ci = "" if r["ci_low"] is None else f"[{fmt(r['ci_low'])}, {fmt(r['ci_high'])}]"
        est_s = fmt(r["estimate"])
        body.append([r["query"], est_s, se, ci])
    widths = [max(len(c), *(len(b[i]) for b in body)) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    print("  ".join("-" * w for w in widths))
    for b in body:
        print("  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(b, widths))))


def _cmd_query(args: argparse.Namespace) -> int:
    release = load(args.release)
    if not isinstance(release, RangeTree):
        # options that only a range tree answers are refused, never ignored
        given = [flag for flag, v in (("--count", args.count), ("--cdf", args.cdf), ("--quantile", args.quantile))
                 if v]
        if given:
            raise InvalidParameterError(
                f"{', '.join(given)}: only range-tree releases answer these; this release is a {type(release).__name__}"
                + ("; ask for nodes with --node PATH (e.g. --node US/CA)" if hasattr(release, "hierarchy") else "")
            )
    if isinstance(release, RangeTree):
        if args.node:
            raise InvalidParameterError("--node applies to hierarchy releases; this is a range tree")
        rows = _range_tree_answers(release, args)
        header = release.summary()
    else:
        if args.histogram is not None or args.bins is not None:
            raise InvalidParameterError("--histogram and --bins apply to range-tree releases; use --node PATH here")
        answer = getattr(release, "cli_answers", None)
        if answer is None:
            raise InvalidParameterError("this release kind cannot be queried from the command line")
        rows = answer(args)
        header = release.summary() if hasattr(release, "summary") else ""
    if args.format == "json":
        answers = [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
        print(json.dumps({"release": header, "ci_level": args.ci, "answers": answers}, indent=2))
    else:
        _print_table(rows, args.ci, header)
    return 0


def add_view_options(p: Any) -> None:
    """Options shared by ``plot`` and ``report``: log scale and the clipped view."""
    p.add_argument("--log", action="store_true", help="logarithmic value axis (symlog when the domain reaches 0)")
    p.add_argument("--clip-negative", action="store_true",
                   help="post-processed view: draw negative estimates as 0 (the plot says so)")


def _add_plot(sub: Any) -> None:
    p = sub.add_parser("plot", help="plot a release: a range tree's CDF or histogram, a hierarchy's counts")
    p.add_argument("release")
    p.add_argument("--out", required=True, help="PNG file to write")
    add_force_option(p, "plot")
    p.add_argument("--ci", type=float, default=0.95)
    p.add_argument("--kind", choices=["cdf", "histogram"], default="cdf", help="range trees: what to plot")
    p.add_argument("--bins", type=int, default=30, help="histogram: about this many bins with round edges")
    p.add_argument("--depth", type=int, default=1, help="hierarchies: the level to plot (1: children of the root)")
    add_view_options(p)
    p.set_defaults(func=_cmd_plot)


def _cmd_plot(args: argparse.Namespace) -> int:
    from dptree.cli.core import check_output_path
    from dptree.hierarchy.release import HierarchyRelease
    from dptree.reporting.plot import plot_cdf, plot_hierarchy, plot_histogram

    check_output_path(args.out, inputs=[args.release], kind="plot", force=args.force)
    release = load(args.release)
    view = {"level": args.ci, "clip_negative": args.clip_negative, "force": args.force}
    if isinstance(release, HierarchyRelease):
        if args.log:
            raise InvalidParameterError("--log applies to range trees (a value axis); hierarchies have none")
        plot_hierarchy(release, args.out, depth=args.depth, **view)
    elif not isinstance(release, RangeTree):
        raise InvalidParameterError("plot needs a range-tree or hierarchy release")
    elif args.kind == "histogram":
        plot_histogram(release, args.out, bins=args.bins, log=args.log, **view)
    else:
        plot_cdf(release, args.out, log=args.log, **view)
    print(f"wrote {args.out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dptree", description="Differential privacy on trees.")
    parser.add_argument("--version", action="version", version=f"dptree {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_release(sub)
    _add_query(sub)
    _add_plot(sub)
    from dptree.cli import core, hierarchy, interior

    hierarchy.register(sub)
    interior.register(sub)
    core.register(sub)
    return parser


_VALUE_OPTIONS = ("--count", "--cdf", "--lower", "--upper")
_NEGATIVE = re.compile(r"^-\d")


def _join_negative_values(argv: list[str]) -> list[str]:
    """Let ``--count -5:3`` and ``--lower -10`` work: argparse would read them as options."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok in _VALUE_OPTIONS and i + 1 < len(argv) and _NEGATIVE.match(argv[i + 1]):
            out.append(f"{tok}={argv[i + 1]}")
            i += 2
            continue
        out.append(tok)
        i += 1
    return out


# Library parameters whose CLI flag has another spelling; every other name maps to --name with
# underscores as dashes. Only names that are options of some command are translated.
_FLAG_OF = {"unknown": "--unknown", "allow_nonprivate": "--allow-nonprivate", "force": "--force"}
_PY_AND_FLAG = re.compile(r"\b[a-z_]+=[^\s()]+ \((--[a-z-]+(?: [^)\s]+)?)\)")
_PY_ARG = re.compile(r"\b([a-z_]+)=('[^']*'|[^\s,;)']+|(?=[\s,;)]|$))")


def cli_wording(message: str) -> str:
    """An error message in the CLI's terms: "pass delta=1e-6" becomes "pass --delta 1e-6",
    "missing='drop' (--missing drop)" becomes "--missing drop", "force=True" becomes "--force"."""
    from dptree.cli.core import known_flags

    flags = known_flags()
    message = _PY_AND_FLAG.sub(r"\1", message)

    def flag(m: re.Match[str]) -> str:
        name, value = m.group(1), m.group(2).strip("'")
        opt = _FLAG_OF.get(name, "--" + name.replace("_", "-"))
        if opt not in flags:
            return m.group(0)
        return opt if value in ("True", "") else f"{opt} {value}"

    return _PY_ARG.sub(flag, message)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(_join_negative_values(list(sys.argv[1:] if argv is None else argv)))
    try:
        return int(args.func(args))
    except DPTreeError as exc:
        print(f"dptree: error: {cli_wording(str(exc))}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(
            f"dptree: error: {exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}".rstrip(": "), file=sys.stderr
        )
        return 2
    except KeyboardInterrupt:
        print("dptree: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: say so in one line, traceback on request
        if os.environ.get("DPTREE_DEBUG"):
            raise
        print(
            f"dptree: internal error: {type(exc).__name__}: {exc} (set DPTREE_DEBUG=1 for a traceback)", file=sys.stderr
        )
        return 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
